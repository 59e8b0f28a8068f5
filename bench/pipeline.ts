// Job creation → `completed` for a websitepro `metadata` job on a local page, through the whole
// system (gateway → wallet charge → job.submitted → job-supervisor → task → converter → outcome →
// supervisor → jobs KV → the gateway's long poll), against the converter's own functions called
// directly in this process for the same page: the guarded fetch, then the converter's worker-thread
// pool (same size as the actor's). The ratio is the pipeline's overhead.
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

export interface PipelineOptions {
  /** Jobs one after another, for latency. */
  sequential: number;
  /** Jobs per throughput round, `concurrency` in flight. */
  jobs: number;
  concurrency: number;
  rounds: number;
}

export const pipelineOptions = (): PipelineOptions => quick()
  ? { sequential: 8, jobs: 16, concurrency: 4, rounds: 1 }
  : { sequential: 30, jobs: 40, concurrency: 8, rounds: 3 };

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
  await Promise.all(Array.from({ length: concurrency }, async (_, w) => {
    while (next < jobs) {
      next++;
      await one(w);
    }
  }));
  return jobs / ((performance.now() - t0) / 1000);
}

export async function runPipelineBench(cluster: Cluster, opts = pipelineOptions()): Promise<{ rows: BenchRow[]; raw: unknown }> {
  const needed = ['wallet', 'job-supervisor', 'converter'].filter((a) => !cluster.procs.has(a));
  if (needed.length) return { rows: [{ name: 'pipeline', skipped: `actors not running: ${needed.map((a) => `${a} (${cluster.missing.get(a) ?? 'unknown'})`).join('; ')}` }], raw: null };

  const page = await startPageServer();
  const { config } = cluster;
  const pool = new ConvertPool({ size: Math.max(1, Math.min(config.websitepro.concurrency, os.availableParallelism())), taskTimeoutMs: 60000, recycleAfter: 200 });
  try {
    // one funded key per client in flight, as distinct customers
    const clients = await Promise.all(Array.from({ length: opts.concurrency }, async () => {
      const k = await createKey(cluster.nc, 'admin');
      await wallet.grant(cluster.nc, k.walletId, 100_000_000, 'bench');
      return k.key;
    }));
    const failures: string[] = [];
    const viaPipeline = async (client = 0) => {
      const res = await fetch(`${cluster.gatewayUrl}/v1/websitepro/jobs?wait=25`, {
        method: 'POST',
        headers: { authorization: `Bearer ${clients[client]}`, 'content-type': 'application/json' },
        body: JSON.stringify({ url: page.url, outputs: ['metadata'] }),
      });
      const body = (await res.json()) as { job?: { status: string; results: { status: string; error?: string }[] }; error?: { code: string } };
      if (res.status !== 201 || body.job?.status !== 'completed') {
        failures.push(`${res.status} ${body.job?.status ?? body.error?.code} ${body.job?.results.map((r) => r.error).join(',') ?? ''}`);
      }
    };
    // the same fetch options as the converter's leader task
    const direct = async () => {
      const res = await guardedFetch(page.url, {
        allowCidrs: config.outbound.allowCidrs, maxRedirects: config.outbound.maxRedirects, connectTimeoutMs: config.outbound.connectTimeoutMs,
        timeoutMs: config.websitepro.fetchTimeoutMs, maxBytes: config.websitepro.maxBytes,
        headers: { accept: 'text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8', 'accept-language': 'en;q=0.9,*;q=0.5' },
      });
      const r = await pool.run({
        body: res.body, contentType: String(res.headers['content-type'] ?? ''), status: res.status, url: page.url, finalUrl: res.url,
        redirects: res.chain.slice(0, -1), rendered: false, outputs: ['metadata'], warnings: [], detectJs: true,
      });
      if (r.needsJavaScript || !r.outputs.metadata?.ok) failures.push(`direct: ${JSON.stringify(r).slice(0, 200)}`);
    };

    // warm both paths (JIT, worker threads, connections) before measuring
    for (let i = 0; i < (quick() ? 1 : 3); i++) {
      await viaPipeline();
      await direct();
    }
    if (failures.length) throw new Error(`pipeline warm-up failed: ${failures.join('; ')}`);

    // what one job costs in NATS traffic, jobs one after another with nothing else running
    const counted = quick() ? 4 : 10;
    const traffic = await countTraffic(cluster.nats.url, async () => { for (let i = 0; i < counted; i++) await viaPipeline(); });
    const perJob = (n: number) => n / counted;

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
        name, unit: 'ms', value, baseline, ratio: value / baseline, samples: seqPipe, baselineSamples: seqDirect,
        note: `${opts.sequential} jobs one after another (samples are every job${opts.sequential < 100 ? '; with fewer than 100 jobs p99 is close to the slowest' : ''}); baseline: guarded fetch + converter pool in one process; ${note}`,
      };
    };
    const rows: BenchRow[] = [
      pct('websitepro metadata job → completed, p50', 50),
      pct('websitepro metadata job → completed, p99', 99),
      figure({
        name: `websitepro metadata jobs/s (${opts.concurrency} in flight)`, unit: 'jobs/s', samples: rpsPipe, baselineSamples: rpsDirect,
        note: `${opts.jobs} jobs per round x ${opts.rounds}; baseline: the same conversions in one process, ${opts.concurrency} in flight; ${note}`,
      }),
      // a count has no baseline: the direct call makes no NATS traffic at all
      {
        name: 'websitepro metadata job: JetStream writes per job', unit: 'writes', value: perJob(traffic.jetstreamWrites), baseline: NaN, ratio: NaN, samples: [perJob(traffic.jetstreamWrites)],
        note: `${counted} jobs one after another; every stream's (KV, object store) last sequence moved, summed (${Object.entries(traffic.writesByStream).map(([k, v]) => `${k} ${(v / counted).toFixed(1)}`).join(', ')}); also ${perJob(traffic.jsApi).toFixed(1)} JetStream API calls (${Object.entries(traffic.jsApiByKind).sort((a, b) => b[1] - a[1]).map(([k, v]) => `${k} ${(v / counted).toFixed(1)}`).join(', ')}) and ${perJob(traffic.jsAcks).toFixed(1)} acks per job`,
      },
      {
        name: 'websitepro metadata job: core NATS requests per job', unit: 'requests', value: perJob(traffic.coreRequests), baseline: NaN, ratio: NaN, samples: [perJob(traffic.coreRequests)],
        note: `${counted} jobs; plus ${perJob(traffic.corePublishes).toFixed(1)} core publishes per job; by subject: ${Object.entries(traffic.bySubject).map(([k, v]) => `${k} ${(v / counted).toFixed(1)}`).join(', ')}`,
      },
    ];
    return { rows, raw: { options: opts, traffic: { jobs: counted, ...traffic }, sequential: { pipeline: seqPipe, direct: seqDirect }, throughput: { pipeline: rpsPipe, direct: rpsDirect }, failures } };
  } finally {
    await pool.close();
    await page.close();
  }
}
