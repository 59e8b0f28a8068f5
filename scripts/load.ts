// Bounded load: many clients create jobs of all three services against local targets (a node:http
// page server, a local Nostr relay) and long-poll them, for a fixed time. Reports jobs per second,
// p50/p99 creation latency, answers by status and code, lost jobs (created but never finished),
// 5xx other than `503 busy`, and the money audit.
//   node --import tsx scripts/load.ts            (starts its own 3-node system, 30 s, 16 clients)
//   LOAD_SECONDS=60 LOAD_CLIENTS=32 LOAD_DRAIN_SECONDS=120 node --import tsx scripts/load.ts
//   LOAD_ECHO=1 LOAD_LOG_LEVEL=info node --import tsx scripts/load.ts   (every actor's log, prefixed)
// Besides the report it lists every result that failed, with its error: under load on local
// targets none should.
import { pathToFileURL } from 'node:url';
import { setTimeout as sleep } from 'node:timers/promises';
import { Kvm } from '@nats-io/kv';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startSystem, stopEverything, type ProcessName, type System } from './cluster-lib.ts';
import { connectNats, type NatsConnection } from '../shared/nats/connect.ts';
import { createKey } from '../shared/keys.ts';
import { wallet } from '../shared/protocol/wallet.ts';
import { audit } from '../shared/audit.ts';
import { BUCKETS } from '../shared/names.ts';
import type { JobRecord } from '../shared/protocol/jobs.ts';

export interface LoadOptions {
  base: string;
  keys: string[];
  /** Bodies per service; each client cycles through them. */
  bodies: { service: string; body: unknown }[];
  clients: number;
  durationMs: number;
  /** Long-poll each created job until it is finished (bounded by `drainMs` after the end). */
  follow?: boolean;
  drainMs?: number;
}

export interface LoadReport {
  seconds: number;
  created: number;
  jobsPerSecond: number;
  latencyMs: { p50: number; p90: number; p99: number; max: number };
  answers: Record<string, number>;
  /** 5xx answers other than `503 busy` (must be 0). */
  unexpected5xx: number;
  /** The service, status, code and message of the first few answers that were neither 201 nor `503 busy`. */
  unexpected: string[];
  finished: Record<string, number>;
  /** Created (201) but not finished by the end of the drain. */
  unfinished: string[];
  byService: Record<string, number>;
}

const pct = (sorted: number[], p: number) =>
  sorted.length ? sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]! : 0;

export async function runLoad(o: LoadOptions): Promise<LoadReport> {
  const latencies: number[] = [];
  const answers: Record<string, number> = {};
  const byService: Record<string, number> = {};
  const created: { id: string; key: string }[] = [];
  const finished: Record<string, number> = {};
  const finishedIds = new Set<string>();
  let unexpected5xx = 0;
  const unexpected: string[] = [];
  const t0 = Date.now();
  const end = t0 + o.durationMs;
  const follows: Promise<void>[] = [];
  const drainUntil = () => end + (o.drainMs ?? 60000);

  const follow = async (id: string, key: string) => {
    while (Date.now() < drainUntil()) {
      try {
        const r = await fetch(`${o.base}/v1/jobs/${id}?wait=20`, {
          headers: { authorization: `Bearer ${key}` },
          signal: AbortSignal.timeout(30000),
        });
        const j = (await r.json()) as { job?: { status: string } };
        if (r.status === 200 && (j.job?.status === 'completed' || j.job?.status === 'failed')) {
          finished[j.job.status] = (finished[j.job.status] ?? 0) + 1;
          finishedIds.add(id);
          return;
        }
        if (r.status >= 500 && r.status !== 503) unexpected5xx++;
      } catch {
        await sleep(200);
      }
    }
  };

  const client = async (n: number) => {
    let i = n;
    while (Date.now() < end) {
      const { service, body } = o.bodies[i++ % o.bodies.length]!;
      const key = o.keys[n % o.keys.length]!;
      const s = performance.now();
      let status = 0;
      let code = '';
      try {
        const r = await fetch(`${o.base}/v1/${service}/jobs`, {
          method: 'POST',
          headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
          body: JSON.stringify(body),
          signal: AbortSignal.timeout(30000),
        });
        status = r.status;
        const j = (await r.json().catch(() => ({}))) as { job?: { id: string }; error?: { code: string; message?: string } };
        code = j.error?.code ?? '';
        if (status !== 201 && code !== 'busy' && unexpected.length < 10)
          unexpected.push(`${service} ${status} ${code}: ${j.error?.message ?? ''}`);
        if (status === 201 && j.job) {
          latencies.push(performance.now() - s);
          created.push({ id: j.job.id, key });
          byService[service] = (byService[service] ?? 0) + 1;
          if (o.follow !== false) follows.push(follow(j.job.id, key));
        }
      } catch (e) {
        code = (e as Error).name === 'TimeoutError' ? 'client_timeout' : 'connection_error';
        if (unexpected.length < 10) unexpected.push(`${service} ${code}: ${(e as Error).message}`);
      }
      const k = `${status} ${code}`.trim();
      answers[k] = (answers[k] ?? 0) + 1;
      if (status >= 500 && !(status === 503 && code === 'busy')) unexpected5xx++;
      if (status === 503 || status === 429) await sleep(500);
    }
  };
  await Promise.all(Array.from({ length: o.clients }, (_, n) => client(n)));
  const seconds = (Date.now() - t0) / 1000;
  await Promise.all(follows);
  const sorted = [...latencies].sort((a, b) => a - b);
  const round = (x: number) => Math.round(x * 10) / 10;
  return {
    seconds: round(seconds),
    created: created.length,
    jobsPerSecond: round(created.length / seconds),
    latencyMs: { p50: round(pct(sorted, 50)), p90: round(pct(sorted, 90)), p99: round(pct(sorted, 99)), max: round(sorted.at(-1) ?? 0) },
    answers,
    unexpected5xx,
    unexpected,
    finished,
    unfinished: o.follow === false ? [] : created.filter((c) => !finishedIds.has(c.id)).map((c) => c.id),
    byService,
  };
}

/** Jobs in the `jobs` bucket that are not finished (a lost job shows up here). */
export async function unfinishedJobs(nc: NatsConnection): Promise<string[]> {
  const kv = await new Kvm(nc).open(BUCKETS.jobs);
  const out: string[] = [];
  for await (const k of await kv.keys()) {
    const e = await kv.get(k);
    if (e?.operation === 'PUT') {
      const j = e.json<JobRecord>();
      if (j.status !== 'completed' && j.status !== 'failed') out.push(k);
    }
  }
  return out;
}

/** Every failed result in the `jobs` bucket, as `<jobId>/<key> <service>: <error> (<message>)`. */
export async function failedResults(nc: NatsConnection): Promise<string[]> {
  const kv = await new Kvm(nc).open(BUCKETS.jobs);
  const out: string[] = [];
  for await (const k of await kv.keys()) {
    const e = await kv.get(k);
    if (e?.operation !== 'PUT') continue;
    const j = e.json<JobRecord>();
    for (const r of j.results)
      if (r.status === 'failed') out.push(`${k}/${r.key} ${j.service}: ${r.error}${r.message ? ` (${r.message})` : ''}`);
  }
  return out;
}

/** Settings that keep the per-key and per-relay limits out of a load run (they are tested elsewhere). */
export const loadConfig = (relayPort: number) => ({
  outbound: { allowCidrs: ['127.0.0.0/8', '::1/128'], checksPerKeyPerMinute: 1_000_000, checksPerTargetPerMinute: 1_000_000 },
  limits: { jobsPerHour: 1_000_000, jobRequestsPerMinute: 1_000_000 },
  // Short redelivery; the backstops (jobs.stuckSeconds, jobs.taskTimeoutSeconds, labs.moduleTimeoutMs)
  // keep their defaults, far past a run: a job that does not finish on its own shows up as unfinished.
  jobs: { ackWaitSeconds: 5, maxDeliver: 4 },
  retention: { sweepSeconds: 10 },
  server: { keyRequestsPerMinute: 1_000_000 },
  labs: { quietMs: 150, replyTimeoutMs: 1500, idleMs: 200, latencySamples: 3, allowedPorts: [relayPort], relayTestsPerHour: 1_000_000 },
});

export const LOAD_PROCESSES: ProcessName[] = ['wallet', 'job-supervisor', 'converter', 'relay-prober', 'browser-pool', 'gateway'];

export function loadBodies(pagesUrl: string, relayUrl: string) {
  return [
    { service: 'websitepro', body: { url: `${pagesUrl}a`, outputs: ['metadata', 'text'] } },
    { service: 'websitepro', body: { url: `${pagesUrl}b`, outputs: ['markdown'] } },
    { service: 'labs', body: { relay: relayUrl, checks: ['nip11-served', 'req-eose'] } },
    { service: 'shots', body: { url: pagesUrl, browsers: ['chromium'], viewports: ['1024x768'] } },
  ];
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const { startPages } = await import('../test/reliability/fixtures/pages.ts');
  const { startMiniRelay } = await import('../test/labs/fixtures/mini-relay.ts');
  const pages = await startPages();
  const relay = await startMiniRelay({});
  let sys: System | undefined;
  process.on('SIGINT', () => void stopEverything().then(() => process.exit(130)));
  try {
    sys = await startSystem({
      dataDir: mkdtempSync(join(tmpdir(), 'payloads-load-')),
      processes: LOAD_PROCESSES,
      env: { BROWSERS: 'chromium' },
      config: loadConfig(relay.port),
      logLevel: process.env.LOAD_LOG_LEVEL ?? 'warn',
      echo: process.env.LOAD_ECHO === '1',
    });
    const nc = await connectNats(sys.cluster.url, 'load');
    const keys: string[] = [];
    for (let i = 0; i < 4; i++) {
      const k = await createKey(nc, 'admin');
      await wallet.grant(nc, k.walletId, 10_000_000, 'load test', `load-${i}`);
      keys.push(k.key);
    }
    const report = await runLoad({
      base: sys.gateway()!.url!,
      keys,
      bodies: loadBodies(pages.url, relay.url),
      clients: Number(process.env.LOAD_CLIENTS ?? 16),
      durationMs: Number(process.env.LOAD_SECONDS ?? 30) * 1000,
      drainMs: Number(process.env.LOAD_DRAIN_SECONDS ?? 120) * 1000,
    });
    const a = await audit(nc);
    // what the unfinished ones are doing: a backlog (queued, pending results) or something stuck
    const kv = await new Kvm(nc).open(BUCKETS.jobs);
    const unfinishedNow = await Promise.all(
      (await unfinishedJobs(nc)).map(async (id) => {
        const j = (await kv.get(id))!.json<JobRecord>();
        return `${id} ${j.service} ${j.status}, pending: ${j.results
          .filter((r) => r.status === 'pending')
          .map((r) => `${r.key}${r.progress ? ` (${r.progress})` : ''}`)
          .join(', ')}`;
      }),
    );
    console.log(
      JSON.stringify(
        {
          ...report,
          lostInBucket: unfinishedNow.length,
          unfinishedNow,
          failedResults: await failedResults(nc),
          audit: { violations: a.violations.length, entries: a.entries, jobs: a.jobs },
        },
        null,
        2,
      ),
    );
    await nc.close();
  } finally {
    await sys?.stop();
    await pages.close();
    await relay.close();
  }
}
