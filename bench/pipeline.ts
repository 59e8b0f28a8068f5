// Job creation → `completed` for a websitepro `metadata` job on a local page, through the whole
// system (gateway → wallet charge → job.submitted → job-supervisor → task → converter → outcome →
// supervisor → jobs KV → the gateway's long poll), against the converter's own functions called
// directly in this process for the same page: the guarded fetch, then the converter's worker-thread
// pool (same size as the actor's). The ratio is the pipeline's overhead.
import http from 'node:http';
import os from 'node:os';
import { performance } from 'node:perf_hooks';
import { createKey } from '../shared/keys.ts';
import { wallet } from '../shared/protocol/wallet.ts';
import { guardedFetch } from '../shared/outbound/index.ts';
import { ConvertPool } from '../actors/converter/pool.ts';
import { figure, percentile, quick, type BenchFigure, type BenchRow } from './figure.ts';
import type { Cluster } from './lib/cluster.ts';
import { startPageServer } from './lib/page.ts';
import { countTraffic } from './lib/traffic.ts';
import { WireTrace, summarise, foldSubject, segmentsOf, median, type JobTrace } from './lib/timeline.ts';

export interface PipelineOptions {
  /** Jobs one after another, for latency. */
  sequential: number;
  /** Jobs per throughput round, `concurrency` in flight. */
  jobs: number;
  concurrency: number;
  rounds: number;
}

export const pipelineOptions = (): PipelineOptions =>
  quick() ? { sequential: 20, jobs: 16, concurrency: 4, rounds: 1 } : { sequential: 30, jobs: 40, concurrency: 8, rounds: 3 };

/** Jobs traced stage by stage (bench/lib/timeline.ts); BENCH_PIPELINE_TRACE=<n> to change, 0 for none. */
const tracedJobs = () => Number(process.env.BENCH_PIPELINE_TRACE ?? (quick() ? 20 : 50));

type One = () => Promise<void>;

async function latencies(n: number, one: One): Promise<number[]> {
  const out: number[] = [];
  for (let i = 0; i < n; i++) {
    const t0 = performance.now();
    await one();
    out.push(performance.now() - t0);
  }
  return out;
}

/** `jobs` runs with `concurrency` in flight; per second. */
async function throughput(jobs: number, concurrency: number, one: (worker: number) => Promise<void>): Promise<number> {
  let next = 0;
  const t0 = performance.now();
  await Promise.all(
    Array.from({ length: concurrency }, async (_, w) => {
      while (next < jobs) {
        next++;
        await one(w);
      }
    }),
  );
  return jobs / ((performance.now() - t0) / 1000);
}

export async function runPipelineBench(cluster: Cluster, opts = pipelineOptions()): Promise<{ rows: BenchRow[]; raw: unknown }> {
  const needed = ['wallet', 'job-supervisor', 'converter'].filter((a) => !cluster.units.has(a));
  if (needed.length)
    return {
      rows: [
        {
          name: 'pipeline',
          skipped: `actors not running: ${needed.map((a) => `${a} (${cluster.missing.get(a) ?? 'unknown'})`).join('; ')}`,
        },
      ],
      raw: null,
    };

  const page = await startPageServer();
  const { config } = cluster;
  const pool = new ConvertPool({
    size: Math.max(1, Math.min(config.websitepro.concurrency, os.availableParallelism())),
    taskTimeoutMs: 60000,
    recycleAfter: 200,
  });
  // node:http with keep-alive, not fetch(): undici's fetch adds 0.15-0.35 ms of client time per
  // call on this machine (measured against a bare node:http server), which is not the system's
  const agent = new http.Agent({ keepAlive: true, maxSockets: opts.concurrency });
  try {
    // one funded key per client in flight, as distinct customers
    const clients = await Promise.all(
      Array.from({ length: opts.concurrency }, async () => {
        const k = await createKey(cluster.nc, 'admin');
        await wallet.grant(cluster.nc, k.walletId, 100_000_000, 'bench');
        return k.key;
      }),
    );
    const failures: string[] = [];
    const post = (path: string, key: string, json: string) =>
      new Promise<{ status: number; body: unknown }>((resolve, reject) => {
        const rq = http.request(
          `${cluster.gatewayUrl}${path}`,
          {
            method: 'POST',
            agent,
            headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json', 'content-length': Buffer.byteLength(json) },
          },
          (res) => {
            const chunks: Buffer[] = [];
            res.on('data', (c: Buffer) => chunks.push(c));
            res.on('end', () => {
              try {
                resolve({ status: res.statusCode ?? 0, body: JSON.parse(Buffer.concat(chunks).toString('utf8')) });
              } catch (e) {
                reject(e);
              }
            });
            res.on('error', reject);
          },
        );
        rq.on('error', reject);
        rq.end(json);
      });
    const viaPipeline = async (client = 0) => {
      const res = await post('/v1/websitepro/jobs?wait=25', clients[client]!, JSON.stringify({ url: page.url, outputs: ['metadata'] }));
      const body = res.body as { job?: { status: string; results: { status: string; error?: string }[] }; error?: { code: string } };
      if (res.status !== 201 || body.job?.status !== 'completed') {
        failures.push(`${res.status} ${body.job?.status ?? body.error?.code} ${body.job?.results.map((r) => r.error).join(',') ?? ''}`);
      }
    };
    // the same fetch options as the converter's leader task
    /** fetch and conversion of the direct calls made beside the traced jobs */
    let directSplit: { fetch: number; convert: number }[] | null = null;
    const direct = async () => {
      const t0 = performance.now();
      const res = await guardedFetch(page.url, {
        allowCidrs: config.outbound.allowCidrs,
        maxRedirects: config.outbound.maxRedirects,
        connectTimeoutMs: config.outbound.connectTimeoutMs,
        timeoutMs: config.websitepro.fetchTimeoutMs,
        maxBytes: config.websitepro.maxBytes,
        headers: { accept: 'text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8', 'accept-language': 'en;q=0.9,*;q=0.5' },
      });
      const t1 = performance.now();
      const r = await pool.run({
        body: res.body,
        contentType: String(res.headers['content-type'] ?? ''),
        status: res.status,
        url: page.url,
        finalUrl: res.url,
        redirects: res.chain.slice(0, -1),
        rendered: false,
        outputs: ['metadata'],
        warnings: [],
        detectJs: true,
      });
      directSplit?.push({ fetch: t1 - t0, convert: performance.now() - t1 });
      if (r.needsJavaScript || !r.outputs.metadata?.ok) failures.push(`direct: ${JSON.stringify(r).slice(0, 200)}`);
    };

    // warm both paths (JIT, every worker thread of both pools, connections) before measuring
    for (let i = 0; i < (quick() ? 3 : 5); i++) {
      await viaPipeline();
      await direct();
    }
    if (failures.length) throw new Error(`pipeline warm-up failed: ${failures.join('; ')}`);

    // what one job costs in NATS traffic, jobs one after another with nothing else running
    const counted = quick() ? 4 : 10;
    const traffic = await countTraffic(cluster.nats.url, async () => {
      for (let i = 0; i < counted; i++) await viaPipeline();
    });
    const perJob = (n: number) => n / counted;

    // where one job's time goes, stage by stage, jobs one after another
    let timeline: ReturnType<typeof summarise> = [];
    let timelineNote = '';
    const traces: JobTrace[] = [];
    if (tracedJobs() > 0) {
      const wire = await WireTrace.start(cluster.nats.url);
      try {
        directSplit = [];
        // each traced job beside a direct call, so both meet the same moment of the machine
        for (let i = 0; i < tracedJobs(); i++) {
          traces.push(
            await wire.job(async () => {
              await viaPipeline();
              return page.lastRequestAt();
            }),
          );
          await direct();
        }
      } finally {
        await wire.close();
      }
      timeline = summarise(traces);
      if (process.env.BENCH_PIPELINE_TRACE_DUMP) {
        const tr = traces.reduce((a, b) => (b.answeredAt < a.answeredAt ? b : a)); // the fastest job: the least load in it
        process.stderr.write(
          tr.events
            .map(
              (e) => `${e.t.toFixed(2).padStart(8)}  ${foldSubject(e.subject)}${e.reply ? '  ← ' + foldSubject(e.reply).slice(0, 60) : ''}`,
            )
            .join('\n') + `\n fetched ${tr.fetchedAt?.toFixed(2)} answered ${tr.answeredAt.toFixed(2)}\n`,
        );
      }
      const segs = traces.map(segmentsOf).filter((x) => x !== null);
      const segNote = `before the fetch ${median(segs.map((x) => x.before)).toFixed(1)} ms (min ${Math.min(...segs.map((x) => x.before)).toFixed(1)}), fetch + conversion ${median(segs.map((x) => x.work)).toFixed(1)} (min ${Math.min(...segs.map((x) => x.work)).toFixed(1)}), after it ${median(segs.map((x) => x.after)).toFixed(1)} (min ${Math.min(...segs.map((x) => x.after)).toFixed(1)})`;
      const ds = directSplit;
      const paired = traces.map((t, i) => t.answeredAt - (ds[i] ? ds[i].fetch + ds[i].convert : NaN)).filter(Number.isFinite);
      timelineNote = `${segNote}; direct calls beside them: fetch ${median(ds.map((x) => x.fetch)).toFixed(1)} ms + conversion ${median(ds.map((x) => x.convert)).toFixed(1)} ms (min total ${Math.min(...ds.map((x) => x.fetch + x.convert)).toFixed(1)}); overhead per pair (job - its direct call) median ${median(paired).toFixed(1)} ms`;
      directSplit = null;
      process.stderr.write(`pipeline segments (${segs.length} jobs): ${timelineNote}\n`);
      process.stderr.write(
        `pipeline stages (median of ${traces.length} jobs; at = since the request, step = since the stage before, min = smallest step):\n${timeline.map((s) => `${s.at.toFixed(1).padStart(7)}  +${s.step.toFixed(1).padStart(6)} (min ${s.min.toFixed(1).padStart(5)})  ${s.stage}${s.jobs < traces.length ? ` [${s.jobs} jobs]` : ''}`).join('\n')}\n`,
      );
    }

    const seqPipe: number[] = [];
    const seqDirect: number[] = [];
    // alternate in halves so drift on the machine falls on both
    for (let half = 0; half < 2; half++) {
      seqPipe.push(...(await latencies(opts.sequential / 2, viaPipeline)));
      seqDirect.push(...(await latencies(opts.sequential / 2, direct)));
    }
    const rpsPipe: number[] = [];
    const rpsDirect: number[] = [];
    for (let r = 0; r < opts.rounds; r++) {
      rpsPipe.push(await throughput(opts.jobs, opts.concurrency, (w) => viaPipeline(w)));
      rpsDirect.push(await throughput(opts.jobs, opts.concurrency, () => direct()));
    }
    const note = `${page.requests()} page fetches; ${failures.length} jobs not completed${failures.length ? ': ' + [...new Set(failures)].slice(0, 3).join('; ') : ''}`;
    const pct = (name: string, p: number): BenchFigure => {
      const value = percentile(seqPipe, p);
      const baseline = percentile(seqDirect, p);
      return {
        name,
        unit: 'ms',
        value,
        baseline,
        ratio: value / baseline,
        samples: seqPipe,
        baselineSamples: seqDirect,
        note: `${opts.sequential} jobs one after another (samples are every job${opts.sequential < 100 ? '; with fewer than 100 jobs p99 is close to the slowest' : ''}); baseline: guarded fetch + converter pool in one process; ${note}`,
      };
    };
    const rows: BenchRow[] = [
      pct('websitepro metadata job → completed, p50', 50),
      pct('websitepro metadata job → completed, p99', 99),
      figure({
        name: `websitepro metadata jobs/s (${opts.concurrency} in flight)`,
        unit: 'jobs/s',
        samples: rpsPipe,
        baselineSamples: rpsDirect,
        note: `${opts.jobs} jobs per round x ${opts.rounds}; baseline: the same conversions in one process, ${opts.concurrency} in flight; ${note}`,
      }),
      // a count has no baseline: the direct call makes no NATS traffic at all
      {
        name: 'websitepro metadata job: JetStream writes per job',
        unit: 'writes',
        value: perJob(traffic.jetstreamWrites),
        baseline: NaN,
        ratio: NaN,
        samples: [perJob(traffic.jetstreamWrites)],
        note: `${counted} jobs one after another; every stream's (KV, object store) last sequence moved, summed (${Object.entries(
          traffic.writesByStream,
        )
          .map(([k, v]) => `${k} ${(v / counted).toFixed(1)}`)
          .join(', ')}); also ${perJob(traffic.jsApi).toFixed(1)} JetStream API calls (${Object.entries(traffic.jsApiByKind)
          .sort((a, b) => b[1] - a[1])
          .map(([k, v]) => `${k} ${(v / counted).toFixed(1)}`)
          .join(', ')}) and ${perJob(traffic.jsAcks).toFixed(1)} acks per job`,
      },
      {
        name: 'websitepro metadata job: core NATS requests per job',
        unit: 'requests',
        value: perJob(traffic.coreRequests),
        baseline: NaN,
        ratio: NaN,
        samples: [perJob(traffic.coreRequests)],
        note: `${counted} jobs; plus ${perJob(traffic.corePublishes).toFixed(1)} core publishes per job; by subject: ${Object.entries(
          traffic.bySubject,
        )
          .map(([k, v]) => `${k} ${(v / counted).toFixed(1)}`)
          .join(', ')}`,
      },
    ];
    if (timeline.length) {
      rows.push({
        name: 'websitepro metadata job: stage timeline, median ms',
        unit: 'ms',
        value: timeline[timeline.length - 1]!.at,
        baseline: NaN,
        ratio: NaN,
        samples: traces.map((t) => t.answeredAt),
        note: `${traces.length} jobs one after another, read off the wire (bench/lib/timeline.ts); ${timelineNote}; step since the stage before (median per job): ${timeline.map((s) => `${s.stage} +${s.step.toFixed(1)}`).join(', ')}`,
      });
    }
    // the same rows for the embedded default's layout carry its name (bench/run.ts runs both)
    const tag = cluster.layout === 'one-process' ? ', one process (npm start)' : '';
    return {
      rows: rows.map((r) => ({ ...r, name: r.name + tag })),
      raw: {
        layout: cluster.layout,
        options: opts,
        timeline,
        traffic: { jobs: counted, ...traffic },
        sequential: { pipeline: seqPipe, direct: seqDirect },
        throughput: { pipeline: rpsPipe, direct: rpsDirect },
        failures,
      },
    };
  } finally {
    agent.destroy();
    await pool.close();
    await page.close();
  }
}
