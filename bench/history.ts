// What history costs the embedded default (issue 26): the same `node --import tsx main.ts` on an
// empty data folder and on one filled with history (scripts/history.ts: jobs, wallets and their
// keys, ledger entries in the project's own formats), in one run. Per store: seconds to `/readyz`
// 200 (a first start, then restarts), RSS of every process after start and after the traffic,
// p50/p99 of the API's reads, a quote and a job creation (both systems loaded in turn, request by
// request, so each meets the same moment of the shared machine), `admin status` and `admin audit`.
// Figures: value = the filled store, baseline = the empty store; ratio = filled / empty.
// Env (defaults: the issue's sizes, 10 minutes of traffic; BENCH_QUICK=1: 5,000 jobs, 15 s):
//   HISTORY_BENCH_JOBS, HISTORY_BENCH_WALLETS, HISTORY_BENCH_ENTRIES  the filled store's size
//   HISTORY_BENCH_MINUTES  traffic minutes;  HISTORY_BENCH_STARTS  restarts per store before the one kept for the traffic (default 2)
//   HISTORY_BENCH_WARMUP_S the traffic's first seconds, not counted in the latency figures (default 30;
//                          BENCH_QUICK=1: 0): a run's slowest 1 % fell in its first ~8 s on both
//                          stores (session 26), so a p99 measured the start's last work, not history
//   HISTORY_BENCH_CATCHUP_WAIT=0  the filled store's first start does not wait for its projections
//   HISTORY_BENCH_CATCHUP_TIMEOUT_S  how long a first start waits for them at most (default 3600)
//   HISTORY_BENCH_DIR      where stores live (default <tmp>/payloads-history); the filled store
//                          (store-<jobs>-<wallets>-<entries>) is kept and reused, the empty one deleted
//   HISTORY_BENCH_BASELINE=customers  the baseline is a store with the filled store's wallets and
//                          keys (a grant each) and no history (customers-<wallets>, kept and reused),
//                          instead of an empty one: every ratio then measures history alone, not the
//                          number of customers (nats-server's memory is per wallet: docs/performance.md)
//   HISTORY_BENCH_MODE=cluster  `npm run cluster` (its `node scripts/cluster.ts`: three nats-servers,
//                          R3, an actor per process) instead of the embedded default; the filled store
//                          (cluster-store-<jobs>-<wallets>-<entries>) is filled through an R3 cluster
//                          (bench/lib/cluster-command.ts says why); RSS is reported per process
import http from 'node:http';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { jetstreamManager } from '@nats-io/jetstream';
import { Kvm, type KV } from '@nats-io/kv';
import { connectNats, type NatsConnection } from '../shared/nats/connect.ts';
import { startNatsServer } from '../shared/nats/server.ts';
import { createKey } from '../shared/keys.ts';
import { wallet } from '../shared/protocol/wallet.ts';
import { BUCKETS, STREAMS } from '../shared/names.ts';
import { figure, median, percentile, quick, type BenchFigure, type BenchRow } from './figure.ts';
import { startEmbedded, treeCpu, treeRss } from './lib/embedded.ts';
import { clusterCpu, clusterRss, clusterStartFailures, fillClusterStore, startClusterCommand } from './lib/cluster-command.ts';
import { startPageServer } from './lib/page.ts';
import { spawnTs, stderrOf } from './lib/procs.ts';

export interface HistoryOptions {
  jobs: number;
  wallets: number;
  entries: number;
  minutes: number;
  /** The traffic's first seconds, whose answers are kept apart (`warmup`), not in the figures. */
  warmupS: number;
  starts: number;
  root: string;
  mode: 'embedded' | 'cluster';
  /** The baseline store: empty (a new key), or `customers` (the same wallets and keys, no history). */
  baseline: 'empty' | 'customers';
}

export const historyOptions = (env = process.env): HistoryOptions => ({
  jobs: Number(env.HISTORY_BENCH_JOBS ?? (quick() ? 5000 : 1_000_000)),
  wallets: Number(env.HISTORY_BENCH_WALLETS ?? (quick() ? 500 : 100_000)),
  entries: Number(env.HISTORY_BENCH_ENTRIES ?? (quick() ? 15_000 : 3_000_000)),
  minutes: Number(env.HISTORY_BENCH_MINUTES ?? (quick() ? 0.25 : 10)),
  warmupS: Number(env.HISTORY_BENCH_WARMUP_S ?? (quick() ? 0 : 30)),
  starts: Number(env.HISTORY_BENCH_STARTS ?? (quick() ? 1 : 2)),
  root: env.HISTORY_BENCH_DIR ?? join(tmpdir(), 'payloads-history'),
  mode: env.HISTORY_BENCH_MODE === 'cluster' ? 'cluster' : 'embedded',
  baseline: env.HISTORY_BENCH_BASELINE === 'customers' ? 'customers' : 'empty',
});

/** A running system under test, embedded (`node main.ts`) or cluster (`node scripts/cluster.ts`). */
interface Sys {
  dataDir: string;
  url: string;
  natsUrl: string;
  readyMs: number;
  unitStartedMs: Record<string, number>;
  logLine(re: RegExp): Promise<{ ms: number; line: string }>;
  stop(): Promise<void>;
  /** RSS (MB) by process group: embedded `node`, `nats-server`, `browsers`; cluster: per process (bench/lib/cluster-command.ts). */
  rss(): Record<string, number>;
  /** CPU seconds used so far, by the same groups. */
  cpu(): Record<string, number>;
}

async function startSys(mode: HistoryOptions['mode'], dir: string, o: { logLevel?: string; name?: string }): Promise<Sys> {
  if (mode === 'cluster') {
    const c = await startClusterCommand(dir, { ...o, log });
    return { ...c, rss: () => clusterRss(c.proc.pid, c.labels), cpu: () => clusterCpu(c.proc.pid, c.labels) };
  }
  const e = await startEmbedded(dir, o);
  return { ...e, rss: () => treeRss(e.proc.pid), cpu: () => treeCpu(e.proc.pid) };
}

/** Where a unit keeps its projection file: the embedded default's <dir>/<unit>, a cluster process's <dir>/procs/<unit>-1/<unit>. */
const unitDir = (mode: HistoryOptions['mode'], dir: string, unit: string) =>
  mode === 'cluster' ? join(dir, 'procs', `${unit}-1`, unit) : join(dir, unit);

/** The endpoints measured, in the order each traffic round calls them; job creation every JOB_EVERY rounds. */
export const HISTORY_ENDPOINTS = [
  'GET /v1/jobs',
  'GET /v1/jobs/{id}',
  'GET /v1/balance',
  'GET /v1/transactions',
  'POST /v1/websitepro/quote',
  'POST /v1/websitepro/jobs',
] as const;
type Ep = (typeof HISTORY_ENDPOINTS)[number];
/**
 * Not endpoints: where `GET /v1/jobs/{id}`'s time goes. The job's document read from the bench's own
 * NATS connection (the gateway's first read, without the gateway), and the system's event-loop delay
 * (prom-client's p99 and max per window, from the gateway's /metrics: the embedded default runs every
 * unit on that loop).
 */
const PROBES = ['nats: jobs get (bench connection)', 'event loop delay p99', 'event loop delay max'] as const;
type Probe = (typeof PROBES)[number];
const ROUND_MS = 200;
const JOB_EVERY = 5;
const STORES = ['empty', 'filled'] as const;
type Store = (typeof STORES)[number];
const log = (s: string) => process.stderr.write(`bench: history: ${s}\n`);
const round1 = (x: number) => Math.round(x * 10) / 10;

/** Fills `dir` with scripts/history.ts unless a complete fill is there; returns the generator's figures. */
async function filledStore(
  o: HistoryOptions,
  dir: string,
): Promise<{ seconds: number; messagesPerS: number; parts: string; reused: boolean }> {
  if (existsSync(join(dir, 'history-keys.json'))) return { seconds: NaN, messagesPerS: NaN, parts: '', reused: true };
  if (o.mode === 'cluster') return { ...(await fillClusterStore(dir, o, log)), reused: false };
  rmSync(dir, { recursive: true, force: true });
  log(`filling ${dir}: ${o.jobs} jobs, ${o.wallets} wallets, ${o.entries} ledger entries`);
  const p = spawnTs(
    'history-generator',
    'scripts/history.ts',
    ['--jobs', String(o.jobs), '--wallets', String(o.wallets), '--entries', String(o.entries), '--data-dir', dir],
    { NATS_URL: '' },
  );
  let out = '';
  p.child.stdout!.on('data', (d: Buffer) => {
    out += d.toString();
  });
  const code = await new Promise<number | null>((r) => p.child.once('exit', r));
  const m = /in ([\d.]+) s: (\d+) messages\/s \(([^)]*)\)/.exec(out);
  if (code !== 0 || !m) throw new Error(`scripts/history.ts failed (${code}): ${out}\n${stderrOf(p)}`);
  return { seconds: Number(m[1]), messagesPerS: Number(m[2]), parts: m[3]!, reused: false };
}

/**
 * Seconds after its start a nats-server alone is measured: at start it counts the pending messages
 * of each consumer it restores, loading message blocks (8.5 MB of block buffers on the filled store,
 * a cache that expires), which made a measurement 20 s after the start spread by ±6 MB between
 * starts of one store. Those were ephemeral consumers a stop left (main.ts now drops them), but a
 * store written by an older version still has them.
 */
const ALONE_S = 90;
/** RSS (MB) of a nats-server started alone on an embedded store (`<dir>/nats`), ALONE_S seconds after it answers. */
async function natsAlone(storeDir: string): Promise<number> {
  const s = await startNatsServer({ storeDir, port: -1, serverName: 'payloads-embedded', startTimeoutMs: 600_000 });
  try {
    await new Promise((r) => setTimeout(r, ALONE_S * 1000));
    return round1(Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${s.pid}/status`, 'utf8'))![1]) / 1024);
  } finally {
    await s.stop();
  }
}

interface Start {
  readyMs: number;
  rss: Record<string, number>;
  units: Record<string, number>;
}

/** A start of the system; RSS read 5 s after /readyz 200. Left running when `keep`. */
async function measuredStart(
  mode: HistoryOptions['mode'],
  dir: string,
  name: string,
  keep: boolean,
  logLevel = 'warn',
): Promise<{ start: Start; sys: Sys }> {
  const sys = await startSys(mode, dir, { logLevel, name });
  await new Promise((r) => setTimeout(r, 5000));
  const start = { readyMs: sys.readyMs, rss: sys.rss(), units: sys.unitStartedMs };
  if (!keep) await sys.stop();
  return { start, sys };
}

/** Sizes on disk of the filled store: bytes per stored message of each stream, per projection row. */
async function diskPerItem(nc: NatsConnection, dir: string, o: HistoryOptions) {
  const jsm = await jetstreamManager(nc);
  const out: Record<string, number> = {};
  for (const s of [STREAMS.ledger, STREAMS.jobsArchive, `KV_${BUCKETS.jobs}`, `KV_${BUCKETS.keys}`]) {
    const st = (await jsm.streams.info(s)).state;
    out[`${s} bytes per message`] = Math.round(st.bytes / Math.max(1, st.messages));
    out[`${s} messages`] = st.messages;
  }
  const size = (d: string) =>
    existsSync(d)
      ? readdirSync(d)
          .filter((f) => f.includes('.sqlite'))
          .reduce((s, f) => s + statSync(join(d, f)).size, 0)
      : 0;
  out['wallet projection bytes per ledger entry'] = Math.round(size(unitDir(o.mode, dir, 'wallet')) / Math.max(1, o.entries));
  out['job-supervisor projection bytes per job'] = Math.round(size(unitDir(o.mode, dir, 'job-supervisor')) / Math.max(1, o.jobs));
  const du = (d: string): number =>
    readdirSync(d, { withFileTypes: true }).reduce(
      (s, e) => s + (e.isDirectory() ? du(join(d, e.name)) : statSync(join(d, e.name)).size),
      0,
    );
  const stores = o.mode === 'cluster' ? ['n1', 'n2', 'n3'].map((n) => join(dir, 'cluster', n)) : [join(dir, 'nats')];
  out[`nats store bytes per job, ${stores.length === 3 ? 'three nodes together' : 'one server'} (every stream)`] = Math.round(
    stores.filter(existsSync).reduce((s, d) => s + du(d), 0) / Math.max(1, o.jobs),
  );
  return out;
}

/** `npm run admin -- <args>` against a running system (its data folder, or the cluster's NATS_URL): seconds (process start included), exit code, answer. */
async function admin(
  mode: HistoryOptions['mode'],
  sys: Sys,
  args: string[],
): Promise<{ seconds: number; code: number | null; answer: string }> {
  const t0 = performance.now();
  const p = spawnTs(
    'admin',
    'admin/main.ts',
    args,
    mode === 'cluster'
      ? { DATA_DIR: join(sys.dataDir, 'procs', 'admin'), NATS_URL: sys.natsUrl, NATS_REPLICAS: '3', LOG_LEVEL: 'warn' }
      : { DATA_DIR: sys.dataDir, NATS_URL: '', LOG_LEVEL: 'warn' },
  );
  let out = '';
  p.child.stdout!.on('data', (d: Buffer) => {
    out += d.toString();
  });
  const code = await new Promise<number | null>((r) => p.child.once('exit', r));
  await p.stop();
  // a command that failed (not 0, nor 4: "did not finish in time") says why on stderr
  const why = code === 0 || code === 4 ? '' : ` [stderr: ${(stderrOf(p) ?? '').trim().split('\n').slice(-3).join(' / ').slice(0, 300)}]`;
  return {
    seconds: (performance.now() - t0) / 1000,
    code,
    answer: `${out.trim().split('\n').filter(Boolean).slice(-3).join(' / ').slice(0, 300)}${why}`,
  };
}

interface Client {
  store: Store;
  sys: Sys;
  nc: NatsConnection;
  jobs: KV;
  key: string;
  walletId: string;
  jobId: string;
  agent: http.Agent;
}

function call(c: Client, method: 'GET' | 'POST', path: string, body?: unknown): Promise<{ status: number; json: unknown }> {
  const data = body === undefined ? undefined : JSON.stringify(body);
  return new Promise((resolve, reject) => {
    const rq = http.request(
      `${c.sys.url}${path}`,
      {
        method,
        agent: c.agent,
        headers: {
          authorization: `Bearer ${c.key}`,
          ...(data ? { 'content-type': 'application/json', 'content-length': Buffer.byteLength(data) } : {}),
        },
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (x: Buffer) => chunks.push(x));
        res.on('end', () => {
          try {
            resolve({ status: res.statusCode ?? 0, json: JSON.parse(Buffer.concat(chunks).toString('utf8') || 'null') });
          } catch (e) {
            reject(e);
          }
        });
        res.on('error', reject);
      },
    );
    rq.on('error', reject);
    rq.end(data);
  });
}

/** A client of one system: a generated store's wallet is one of its own (a sample key), the empty store's a new key; both granted the same credit. */
async function client(store: Store, sys: Sys, pageUrl: string): Promise<Client> {
  const nc = await connectNats(sys.natsUrl, `bench-history-${store}`);
  const samples = join(sys.dataDir, 'history-keys.json');
  const sample = existsSync(samples)
    ? (JSON.parse(readFileSync(samples, 'utf8')) as { key: string; walletId: string }[])[0]!
    : await createKey(nc, 'admin');
  await wallet.grant(nc, sample.walletId, 100_000_000, 'bench history');
  const c: Client = {
    store,
    sys,
    nc,
    jobs: await new Kvm(nc).open(BUCKETS.jobs),
    key: sample.key,
    walletId: sample.walletId,
    jobId: '',
    agent: new http.Agent({ keepAlive: true, maxSockets: 1 }),
  };
  const r = await call(c, 'POST', '/v1/websitepro/jobs', { url: pageUrl, outputs: ['metadata'] });
  if (r.status !== 201) throw new Error(`${store}: job creation answered ${r.status}: ${JSON.stringify(r.json).slice(0, 300)}`);
  c.jobId = (r.json as { job: { id: string } }).job.id;
  return c;
}

/**
 * Traffic for `minutes`: rounds every ROUND_MS, each endpoint called on both systems in turn. Per
 * endpoint: p50 and p99 of every answer of the run (`pooled`), the same per window (a window holds
 * ~150 answers, so its p99 is its second-slowest: the spread of those is the noise sessions 23-25
 * saw), and the slowest 1 % with the second of the run they came at (`slowest`, to line up stalls
 * across endpoints and stores). The first `warmupS` seconds run the same traffic but count apart
 * (`warmup`), and the windows start after them.
 */
async function traffic(clients: Record<Store, Client>, minutes: number, pageUrl: string, warmupS: number) {
  const windowMs = Math.max(5000, (minutes * 60_000) / 10);
  const windows: Record<Store, Record<Ep | Probe, { p50: number; p99: number; n: number }[]>> = { empty: {} as never, filled: {} as never };
  const errors: Record<string, number> = {};
  let cur: Record<Store, Record<string, number[]>> = { empty: {}, filled: {} };
  const all: Record<Store, Record<string, [number, number][]>> = { empty: {}, filled: {} };
  const warm: Record<Store, Record<string, number[]>> = { empty: {}, filled: {} };
  const t00 = Date.now() + warmupS * 1000;
  const keep = (s: Store, ep: string, ms: number) => {
    if (Date.now() < t00) {
      (warm[s][ep] ??= []).push(ms);
      return;
    }
    (cur[s][ep] ??= []).push(ms);
    (all[s][ep] ??= []).push([Math.round((Date.now() - t00) / 100) / 10, ms]);
  };
  const close = async () => {
    for (const s of STORES) {
      // prom-client resets its loop-delay histogram at each scrape: this window's delays (its 10 ms timer's interval, less 10 ms)
      const text = await fetch(`${clients[s].sys.url}/metrics`)
        .then((r) => r.text())
        .catch(() => '');
      for (const [probe, name] of [
        ['event loop delay p99', 'p99'],
        ['event loop delay max', 'max'],
      ] as const) {
        const v = Number(new RegExp(`^\\w*nodejs_eventloop_lag_${name}_seconds ([0-9.e+-]+)$`, 'm').exec(text)?.[1]);
        if (Number.isFinite(v)) cur[s][probe] = [Math.max(0, v * 1000 - 10)];
      }
      for (const [ep, xs] of Object.entries(cur[s]))
        (windows[s][ep as Ep] ??= []).push({ p50: percentile(xs, 50), p99: percentile(xs, 99), n: xs.length });
    }
    cur = { empty: {}, filled: {} };
  };
  const paths: Record<Ep, (c: Client) => ['GET' | 'POST', string, unknown?]> = {
    'GET /v1/jobs': () => ['GET', '/v1/jobs'],
    'GET /v1/jobs/{id}': (c) => ['GET', `/v1/jobs/${c.jobId}`],
    'GET /v1/balance': () => ['GET', '/v1/balance'],
    'GET /v1/transactions': () => ['GET', '/v1/transactions'],
    'POST /v1/websitepro/quote': () => ['POST', '/v1/websitepro/quote', { url: pageUrl, outputs: ['metadata', 'markdown'] }],
    'POST /v1/websitepro/jobs': () => ['POST', '/v1/websitepro/jobs', { url: pageUrl, outputs: ['metadata'] }],
  };
  let scraped = false;
  const end = t00 + minutes * 60_000;
  let windowEnd = t00 + windowMs;
  let round = 0;
  while (Date.now() < end) {
    const t = Date.now();
    for (const ep of HISTORY_ENDPOINTS) {
      if (ep === 'POST /v1/websitepro/jobs' && round % JOB_EVERY) continue;
      for (const s of round % 2 ? (['filled', 'empty'] as const) : STORES) {
        const [method, path, body] = paths[ep](clients[s]);
        const t0 = performance.now();
        const r = await call(clients[s], method, path, body).catch((e: Error) => ({ status: 0, json: e.message }));
        const ms = performance.now() - t0;
        if (r.status === 200 || r.status === 201) keep(s, ep, ms);
        else errors[`${s} ${ep} ${r.status}`] = (errors[`${s} ${ep} ${r.status}`] ?? 0) + 1;
      }
    }
    for (const s of round % 2 ? (['filled', 'empty'] as const) : STORES) {
      const t0 = performance.now();
      if (await clients[s].jobs.get(clients[s].jobId).catch(() => null))
        keep(s, 'nats: jobs get (bench connection)', performance.now() - t0);
    }
    round++;
    // a first scrape at the warm-up's end resets the loop-delay histograms: the windows hold the traffic's delays, not the start's
    if (!scraped && Date.now() >= t00) {
      scraped = true;
      for (const s of STORES)
        await fetch(`${clients[s].sys.url}/metrics`)
          .then((r) => r.text())
          .catch(() => '');
    }
    if (Date.now() >= windowEnd) {
      await close();
      windowEnd += windowMs;
    }
    await new Promise((r) => setTimeout(r, Math.max(0, ROUND_MS - (Date.now() - t))));
  }
  await close();
  const pooled: Record<Store, Record<string, { p50: number; p99: number; n: number }>> = { empty: {}, filled: {} };
  const warmup: Record<Store, Record<string, { p50: number; p99: number; n: number }>> = { empty: {}, filled: {} };
  for (const s of STORES)
    for (const [ep, ms] of Object.entries(warm[s])) warmup[s][ep] = { p50: percentile(ms, 50), p99: percentile(ms, 99), n: ms.length };
  const slowest: Record<Store, Record<string, [number, number][]>> = { empty: {}, filled: {} };
  for (const s of STORES) {
    for (const [ep, xs] of Object.entries(all[s])) {
      const ms = xs.map((x) => x[1]);
      pooled[s][ep] = { p50: percentile(ms, 50), p99: percentile(ms, 99), n: ms.length };
      slowest[s][ep] = [...xs]
        .sort((a, b) => b[1] - a[1])
        .slice(0, Math.ceil(xs.length / 100))
        .map(([t, m]) => [t, Math.round(m * 10) / 10]);
    }
  }
  return { windows, pooled, slowest, warmup, warmupS, errors, rounds: round, windowMs };
}

export async function runHistoryBench(o = historyOptions()): Promise<{ rows: BenchRow[]; raw: Record<string, unknown> }> {
  mkdirSync(o.root, { recursive: true });
  const prefix = o.mode === 'cluster' ? 'cluster-' : '';
  // the same wallets with their keys and a grant each, no jobs: what customers cost without history
  const customers = { ...o, jobs: 0, entries: o.wallets };
  const customersDir = join(o.root, `${prefix}customers-${o.wallets}`);
  const dirs: Record<Store, string> = {
    empty: o.baseline === 'customers' ? customersDir : mkdtempSync(join(o.root, 'empty-')),
    filled: join(o.root, `${prefix}store-${o.jobs}-${o.wallets}-${o.entries}`),
  };
  const raw: Record<string, unknown> = { options: o, dirs };
  const rows: BenchRow[] = [];
  const vs = `${o.mode === 'cluster' ? 'npm run cluster (R3), ' : ''}filled store (${o.jobs} jobs, ${o.wallets} wallets, ${o.entries} ledger entries) vs ${o.baseline === 'customers' ? `a store with the same ${o.wallets} wallets and keys and no history` : 'empty store'}`;
  const gen = await filledStore(o, dirs.filled);
  raw.generator = gen;
  if (o.baseline === 'customers' || o.mode === 'embedded') raw.customersGenerator = await filledStore(customers, customersDir);
  if (!gen.reused)
    rows.push(
      figure({
        name: 'history generator, messages/s',
        unit: 'msg/s',
        samples: [gen.messagesPerS],
        baselineSamples: [],
        note: `scripts/history.ts: ${o.jobs + o.wallets + o.entries} messages in ${gen.seconds} s (${gen.parts})`,
      }),
    );
  const page = await startPageServer();
  const live: Partial<Record<Store, Sys>> = {};
  const clients: Partial<Record<Store, Client>> = {};
  try {
    // a first start of each: the filled store's projections are rebuilt from its streams (or kept
    // from an earlier run), and the start's end waits until they have caught up
    const first: Partial<Record<Store, Start & { caughtUpMs?: number; projections?: string }>> = {};
    for (const s of STORES) {
      log(`first start, ${s} store`);
      const sys = await startSys(o.mode, dirs[s], { logLevel: 'info', name: `history-${s}` });
      const wal = sys.logLine(/ledger projection caught up/);
      const opened = await sys.logLine(/job projection opened/);
      const sup = /"mode":"rebuilt"/.test(opened.line) ? sys.logLine(/job projection: rebuilt/) : Promise.resolve(opened);
      // HISTORY_BENCH_CATCHUP_WAIT=0: go on once ready (a rebuild then runs on during what follows)
      const waiting = process.env.HISTORY_BENCH_CATCHUP_WAIT === '0' && s === 'filled';
      const notYet = { ms: NaN, line: '' };
      // bounded (HISTORY_BENCH_CATCHUP_TIMEOUT_S, default 3600): a projection whose rebuild stalled
      // (seen: the supervisor's watch on the cluster after missed heartbeats) must not hang the bench
      const bound = Number(process.env.HISTORY_BENCH_CATCHUP_TIMEOUT_S ?? 3600) * 1000;
      let timer: NodeJS.Timeout | undefined;
      const late = new Promise<typeof notYet>((r) => {
        timer = setTimeout(() => r(notYet), bound);
      });
      const [w, j] = waiting
        ? [await Promise.race([wal, Promise.resolve(notYet)]), notYet]
        : await Promise.all([Promise.race([wal, late]), Promise.race([sup, late])]);
      clearTimeout(timer);
      if (!waiting && (!w.line || !j.line))
        log(`${s}: ${!w.line ? 'wallet' : 'job'} projection not caught up within ${bound / 1000} s; going on`);
      first[s] = {
        readyMs: sys.readyMs,
        rss: sys.rss(),
        units: sys.unitStartedMs,
        caughtUpMs: Math.max(w.ms, j.ms),
        projections: `job projection ${/"mode":"(\w+)"/.exec(opened.line)?.[1]}${j.line || waiting ? '' : ' (not caught up when the start was left)'}; wallet ${!w.line ? 'not caught up when the start was left' : /"rebuilt":(\w+)/.exec(w.line)?.[1] === 'true' ? 'rebuilt' : 'resumed'}`,
      };
      log(
        `${s}: ready in ${Math.round(sys.readyMs)} ms, projections caught up at ${Math.round(first[s]!.caughtUpMs!)} ms (${first[s]!.projections})`,
      );
      await sys.stop();
    }
    raw.first = first;
    // restarts, alternating stores; then one more of each, kept up for the traffic (a restart too:
    // its ready time counts with the others, so HISTORY_BENCH_STARTS=0 still measures one restart)
    const restarts: Record<Store, Start[]> = { empty: [], filled: [] };
    for (let i = 0; i < o.starts; i++) {
      for (const s of STORES) {
        log(`restart ${i + 1}, ${s} store`);
        restarts[s].push((await measuredStart(o.mode, dirs[s], `history-${s}`, false)).start);
      }
    }
    raw.restarts = restarts;
    raw.clusterStartFailures = clusterStartFailures;
    const kept: Partial<Record<Store, Start>> = {};
    for (const s of STORES) ({ sys: live[s], start: kept[s] } = await measuredStart(o.mode, dirs[s], `history-${s}`, true));
    for (const s of STORES) clients[s] = await client(s, live[s]!, page.url);
    const cl = clients as Record<Store, Client>;
    const rssStart = Object.fromEntries(STORES.map((s) => [s, live[s]!.rss()])) as Record<Store, Record<string, number>>;
    const walletFileMb = () => {
      const d = unitDir(o.mode, dirs.filled, 'wallet');
      return existsSync(d)
        ? Math.round(
            readdirSync(d)
              .filter((f) => f.includes('.sqlite'))
              .reduce((a, f) => a + statSync(join(d, f)).size, 0) /
              2 ** 20,
          )
        : 0;
    };
    raw.walletProjectionMb = { trafficStart: walletFileMb() };
    log(`traffic for ${o.minutes} min (filled store's wallet projection: ${walletFileMb()} MB)`);
    const cpuBefore = Object.fromEntries(STORES.map((s) => [s, live[s]!.cpu()])) as Record<Store, Record<string, number>>;
    const t = await traffic(cl, o.minutes, page.url, o.warmupS);
    const cpuUsed = Object.fromEntries(
      STORES.map((s) => {
        const after = live[s]!.cpu();
        return [s, Object.fromEntries(Object.entries(after).map(([g, v]) => [g, Math.round((v - (cpuBefore[s][g] ?? 0)) * 10) / 10]))];
      }),
    ) as Record<Store, Record<string, number>>;
    raw.traffic = t;
    // which node leads the streams the reads go to (a cluster's requests for a stream info or a
    // direct get go to its leader): two systems placed differently differ in latency, history aside
    if (o.mode === 'cluster') {
      const placement: Record<string, Record<string, string>> = {};
      for (const s of STORES) {
        const jsm = await jetstreamManager(cl[s].nc);
        placement[s] = {};
        for (const name of [`KV_${BUCKETS.jobs}`, `KV_${BUCKETS.keys}`, STREAMS.ledger, STREAMS.jobsArchive])
          placement[s][name] = (await jsm.streams.info(name).catch(() => null))?.cluster?.leader ?? '?';
      }
      raw.placement = placement;
      log(
        `stream leaders: ${STORES.map(
          (s) =>
            `${s} ${Object.entries(placement[s]!)
              .map(([k, v]) => `${k} ${v}`)
              .join(', ')}`,
        ).join('; ')}`,
      );
    }
    raw.cpuDuringTraffic = cpuUsed;
    (raw.walletProjectionMb as Record<string, number>).trafficEnd = walletFileMb();
    const rssAfter = Object.fromEntries(STORES.map((s) => [s, live[s]!.rss()])) as Record<Store, Record<string, number>>;
    raw.rss = { afterStart: rssStart, afterTraffic: rssAfter };
    const adminRuns: Record<string, Record<Store, Awaited<ReturnType<typeof admin>>>> = {};
    for (const cmd of [['status'], ['audit']]) {
      adminRuns[cmd.join(' ')] = { empty: await admin(o.mode, live.empty!, cmd), filled: await admin(o.mode, live.filled!, cmd) };
    }
    raw.admin = adminRuns;
    const disk = await diskPerItem(cl.filled.nc, dirs.filled, o);
    raw.disk = disk;
    // nats-server alone on each store (embedded only: a cluster's store is three servers'), the
    // systems stopped: what the server holds for the store's contents, apart from traffic
    const alone: Record<string, number> = {};
    if (o.mode === 'embedded') {
      for (const s of STORES) {
        await clients[s]?.nc.close().catch(() => {});
        await live[s]?.stop();
        live[s] = undefined;
      }
      const storesAlone = { empty: o.baseline === 'customers' ? '' : dirs.empty, customers: customersDir, filled: dirs.filled };
      for (const [k, d] of Object.entries(storesAlone)) if (d) alone[k] = await natsAlone(join(d, 'nats'));
      raw.natsAlone = alone;
    }

    // the figures
    const startNote = (xs: Start[]) =>
      xs
        .map((x) =>
          Object.entries(x.units)
            .map(([u, ms]) => `${u} ${(ms / 1000).toFixed(1)}`)
            .join(', '),
        )
        .join('; ');
    rows.push(
      figure({
        name: 'history: ready (/readyz 200), first start',
        unit: 's',
        samples: [first.filled!.readyMs / 1000],
        baselineSamples: [first.empty!.readyMs / 1000],
        note: `${vs}; filled: ${first.filled!.projections}; seconds to each unit started: ${startNote([first.filled!])} (empty: ${startNote([first.empty!])})`,
      }),
    );
    rows.push(
      figure({
        name: 'history: projections caught up after a first start',
        unit: 's',
        samples: [first.filled!.caughtUpMs! / 1000],
        baselineSamples: [first.empty!.caughtUpMs! / 1000],
        note: `${first.filled!.projections}; the start does not wait for it (reads answer meanwhile)`,
      }),
    );
    rows.push(
      figure({
        name: 'history: ready (/readyz 200), restart',
        unit: 's',
        samples: [...restarts.filled, kept.filled!].map((x) => x.readyMs / 1000),
        baselineSamples: [...restarts.empty, kept.empty!].map((x) => x.readyMs / 1000),
        note: `${vs}; ${o.starts + 1} restart(s) each, alternating (the last one kept for the traffic); projections kept${clusterStartFailures.length ? `; ${clusterStartFailures.length} start(s) failed and were made again (the figure is the start that came up): ${clusterStartFailures.join(' | ')}` : ''}`,
      }),
    );
    const groups = [...new Set([...Object.keys(rssStart.empty), ...Object.keys(rssStart.filled)])];
    for (const g of groups) {
      rows.push(
        figure({
          name: `history: RSS ${g} after start`,
          unit: 'MB',
          samples: [...restarts.filled.map((x) => x.rss[g]!), rssStart.filled[g]!].filter(Number.isFinite).map(round1),
          baselineSamples: [...restarts.empty.map((x) => x.rss[g]!), rssStart.empty[g]!].filter(Number.isFinite).map(round1),
          note: '5 s after /readyz 200 (restarts, and the start kept for the traffic, before its first request)',
        }),
      );
      rows.push(
        figure({
          name: `history: RSS ${g} after ${o.minutes} min of traffic`,
          unit: 'MB',
          samples: [rssAfter.filled[g]!],
          baselineSamples: [rssAfter.empty[g]!],
        }),
      );
    }
    const errs = Object.entries(t.errors)
      .map(([k, n]) => `${k}: ${n}`)
      .join(', ');
    const warmNote = (ep: string, q: 'p50' | 'p99') => {
      const wf = t.warmup.filled[ep];
      const we = t.warmup.empty[ep];
      return wf && we ? `; the first ${t.warmupS} s (not counted): ${wf[q].toFixed(2)} vs ${we[q].toFixed(2)}` : '';
    };
    for (const ep of HISTORY_ENDPOINTS) {
      for (const q of ['p50', 'p99'] as const) {
        const f = t.windows.filled[ep] ?? [];
        const e = t.windows.empty[ep] ?? [];
        if (!f.length || !e.length) {
          rows.push({ name: `history: ${ep} ${q}`, skipped: `no 2xx answers (${errs})` });
          continue;
        }
        const pf = t.pooled.filled[ep]!;
        const pe = t.pooled.empty[ep]!;
        const [wf, we] = [median(f.map((w) => w[q])), median(e.map((w) => w[q]))];
        rows.push(
          figure({
            name: `history: ${ep} ${q}`,
            unit: 'ms',
            samples: [pf[q]],
            baselineSamples: [pe[q]],
            note: `every answer after the warm-up (${pf.n} vs ${pe.n}); per ${Math.round(t.windowMs / 1000)} s window: median ${wf.toFixed(2)} vs ${we.toFixed(2)} (${(wf / we).toFixed(2)}x), windows ${Math.min(...f.map((w) => w[q])).toFixed(1)}-${Math.max(...f.map((w) => w[q])).toFixed(1)} vs ${Math.min(...e.map((w) => w[q])).toFixed(1)}-${Math.max(...e.map((w) => w[q])).toFixed(1)}; ${t.rounds} rounds of ${ROUND_MS} ms with the warm-up's, a job every ${JOB_EVERY}${warmNote(ep, q)}${errs ? `; not 2xx: ${errs}` : ''}`,
          }),
        );
      }
    }
    for (const probe of PROBES) {
      const f = t.windows.filled[probe] ?? [];
      const e = t.windows.empty[probe] ?? [];
      if (!f.length || !e.length) continue;
      const loop = probe.startsWith('event loop');
      for (const q of loop ? (['p50'] as const) : (['p50', 'p99'] as const)) {
        const samples = loop ? f.map((w) => w[q]) : [t.pooled.filled[probe]![q]];
        const baselineSamples = loop ? e.map((w) => w[q]) : [t.pooled.empty[probe]![q]];
        rows.push(
          figure({
            name: `history (diagnostic): ${probe}${loop ? '' : ` ${q}`}`,
            unit: 'ms',
            samples,
            baselineSamples,
            note: loop
              ? `median of the ${Math.round(t.windowMs / 1000)} s windows (min-max), from the gateway's /metrics (prom-client, 10 ms resolution): the whole process's loop`
              : `the document GET /v1/jobs/{id} reads, read once a round from the bench's own connection (every read of the run)`,
          }),
        );
      }
    }
    // what each system spent while the traffic ran (the two share the machine's cores: a system that
    // works more in the background costs the other's requests, and its own, their tail)
    for (const g of Object.keys(cpuUsed.filled).filter((g) => g in cpuUsed.empty)) {
      rows.push(
        figure({
          name: `history (diagnostic): CPU seconds during the traffic, ${g}`,
          unit: 's',
          samples: [cpuUsed.filled[g]!],
          baselineSamples: [cpuUsed.empty[g]!],
          note: `user + system, ${o.minutes} min and the ${o.warmupS} s warm-up; the same requests on both`,
        }),
      );
    }
    for (const [cmd, r] of Object.entries(adminRuns)) {
      rows.push(
        figure({
          name: `history: admin ${cmd}, seconds`,
          unit: 's',
          samples: [round1(r.filled.seconds)],
          baselineSamples: [round1(r.empty.seconds)],
          note: `exit ${r.filled.code} vs ${r.empty.code}; filled: "${r.filled.answer}"; empty: "${r.empty.answer}"`,
        }),
      );
    }
    // a cluster node holds every subject (R3): its mean over the three nodes
    const natsMb = (r: Record<string, number>) => {
      const xs = Object.entries(r)
        .filter(([k]) => k.startsWith('nats-server'))
        .map(([, v]) => v);
      return xs.reduce((a, x) => a + x, 0) / Math.max(1, xs.length);
    };
    const extra = (natsMb(rssStart.filled) - natsMb(rssStart.empty)) * 2 ** 20;
    // finished jobs are in the archive (one subject), so the subjects are a key and a ledger subject per wallet
    if (o.baseline === 'empty')
      rows.push(
        figure({
          name: 'history: nats-server RSS per wallet (after start)',
          unit: 'B',
          samples: [Math.round(extra / o.wallets)],
          baselineSamples: [],
          note: `(filled - empty) / ${o.wallets} wallets (two subjects each: its key in \`keys\`, its ledger subject)${o.mode === 'cluster' ? '; per node, mean of the three' : ''}`,
        }),
      );
    else
      rows.push(
        figure({
          name: 'history: nats-server RSS per job in history (after start)',
          unit: 'B',
          samples: [Math.round((extra / o.jobs) * 10) / 10],
          baselineSamples: [],
          note: `(filled - the same wallets without history) / ${o.jobs} jobs${o.mode === 'cluster' ? '; per node, mean of the three' : ''}`,
        }),
      );
    if (alone.customers !== undefined && alone.filled !== undefined) {
      const note = `nats-server alone (systems stopped), RSS ${ALONE_S} s after its start: filled ${alone.filled} MB, ${o.wallets} wallets without history ${alone.customers} MB${alone.empty !== undefined ? `, empty ${alone.empty} MB` : ''}`;
      rows.push(
        figure({
          name: 'history: nats-server alone, RSS, filled vs the same wallets without history',
          unit: 'MB',
          samples: [alone.filled],
          baselineSamples: [alone.customers],
          note,
        }),
      );
      if (alone.empty !== undefined) {
        rows.push(
          figure({
            name: 'history: nats-server alone, RSS, the wallets without history vs empty',
            unit: 'MB',
            samples: [alone.customers],
            baselineSamples: [alone.empty],
            note,
          }),
        );
        rows.push(
          figure({
            name: 'history: nats-server alone, memory per wallet',
            unit: 'B',
            samples: [Math.round(((alone.customers - alone.empty) * 2 ** 20) / o.wallets)],
            baselineSamples: [],
            note: `(wallets without history - empty) / ${o.wallets}: its key and its ledger subject in the server's per-subject index`,
          }),
        );
      }
      rows.push(
        figure({
          name: 'history: nats-server alone, memory per job in history',
          unit: 'B',
          samples: [Math.round((((alone.filled - alone.customers) * 2 ** 20) / o.jobs) * 10) / 10],
          baselineSamples: [],
          note: `(filled - wallets without history) / ${o.jobs} jobs (with ${o.entries - o.wallets} more ledger entries)`,
        }),
      );
    }
    for (const [k, v] of Object.entries(disk))
      if (/bytes/.test(k)) rows.push(figure({ name: `history: disk, ${k}`, unit: 'B', samples: [v], baselineSamples: [] }));
  } finally {
    for (const s of STORES) {
      await clients[s]?.nc.close().catch(() => {});
      clients[s]?.agent.destroy();
      await live[s]?.stop();
    }
    await page.close();
    if (o.baseline === 'empty') rmSync(dirs.empty, { recursive: true, force: true });
  }
  return { rows, raw };
}

export type { BenchFigure };
