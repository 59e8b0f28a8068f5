// Gateway throughput and tail latency against two baselines, measured in the same run:
//   bare uWS  - a uWebSockets.js handler replaying the gateway's own bytes (the limit of the stack)
//   node:http - a plain node:http server doing the same work with the same code (bench/lib/baseline-server.ts)
// The gateway (main.ts gateway), the wallet actor, both baselines and the load generator
// (autocannon, bench/lib/load.ts) are separate processes; runs alternate between the three servers
// so drift on this shared machine spreads over all of them.
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { createKey } from '../shared/keys.ts';
import { advertise } from '../shared/catalogue.ts';
import { figure, quick, type BenchRow } from './figure.ts';
import type { Cluster } from './lib/cluster.ts';
import { createInterface } from 'node:readline';
import { spawnTs, waitReady, stderrOf, type Proc } from './lib/procs.ts';
import type { LoadResult, LoadSpec } from './lib/load.ts';
import type { Capture } from './lib/baseline-server.ts';
import type { NatsConnection } from '@nats-io/nats-core';
import { jetstreamManager } from '@nats-io/jetstream';
import { freshRead } from '../shared/nats/fresh.ts';
import { ledgerLastSeqDirect } from '../gateway/balances.ts';
import { STREAMS } from '../shared/names.ts';

export interface Endpoint {
  id: string;
  method: 'GET' | 'POST';
  path: string;
  auth: boolean;
  body?: unknown;
  /** Shown after the path in the figure's name. */
  label?: string;
  /** One client address per connection (X-Forwarded-For; the bench config trusts it). */
  manyClients?: boolean;
}

export const ENDPOINTS: Endpoint[] = [
  // all connections from one address: every request reads and writes the same rate-limit entry
  { id: 'pricing', method: 'GET', path: '/v1/pricing', auth: false, label: '(1 client address)' },
  // one address per connection, like many clients: the same entry is no longer contended
  { id: 'pricing-many', method: 'GET', path: '/v1/pricing', auth: false, label: '(1 address per connection)', manyClients: true },
  { id: 'index', method: 'GET', path: '/v1', auth: false, label: '(1 address per connection)', manyClients: true },
  { id: 'services', method: 'GET', path: '/v1/services', auth: false, label: '(1 address per connection)', manyClients: true },
  { id: 'balance', method: 'GET', path: '/v1/balance', auth: true },
  {
    id: 'quote',
    method: 'POST',
    path: '/v1/websitepro/quote',
    auth: true,
    body: { url: 'https://example.com/article', outputs: ['metadata', 'markdown'] },
  },
];

export const SERVERS = ['gateway', 'uws', 'node'] as const;
type ServerId = (typeof SERVERS)[number];

export interface GatewayBenchOptions {
  connections: number;
  duration: number;
  repeats: number;
  warmup: number;
}

/**
 * BENCH_GATEWAY_SECONDS: the length of one measured run (default 1 quick, 5 full). The smoke test
 * (test/bench/smoke.scenario.ts, `npm run test:scenarios`) runs every step with 0.25 s: the same rows, samples and checks, a
 * quarter of the load it puts on the machine that runs the suite.
 */
export const gatewayOptions = (): GatewayBenchOptions => {
  const seconds = Number(process.env.BENCH_GATEWAY_SECONDS) || undefined;
  return quick()
    ? { connections: 8, duration: seconds ?? 1, repeats: 2, warmup: 0 }
    : { connections: 16, duration: seconds ?? 5, repeats: 3, warmup: 2 };
};

/** The load generator: one child process for the whole benchmark, one autocannon run at a time. */
export async function startLoadGenerator(env: Record<string, string>) {
  const p = spawnTs('autocannon', 'bench/lib/load.ts', ['--serve'], env, true);
  await waitReady(p, /ready/);
  const lines = createInterface({ input: p.child.stdout! })[Symbol.asyncIterator]();
  return {
    proc: p,
    async run(spec: LoadSpec): Promise<LoadResult> {
      p.child.stdin!.write(JSON.stringify(spec) + '\n');
      const next = await lines.next();
      if (next.done) throw new Error(`the load generator exited: ${stderrOf(p)}`);
      const r = JSON.parse(next.value) as LoadResult | { error: string };
      if ('error' in r) throw new Error(`autocannon: ${r.error}`);
      return r;
    },
  };
}

export interface GatewayRaw {
  options: GatewayBenchOptions;
  runs: { endpoint: string; server: ServerId; repeat: number; result: LoadResult }[];
}

export async function runGatewayBench(cluster: Cluster, opts = gatewayOptions()): Promise<{ rows: BenchRow[]; raw: GatewayRaw }> {
  const rows: BenchRow[] = [];
  const raw: GatewayRaw = { options: opts, runs: [] };
  // one key (and wallet) per connection, like many clients; a shared key would measure contention on one rate-limit entry
  const keys = await Promise.all(Array.from({ length: opts.connections }, () => createKey(cluster.nc, 'admin')));
  const perConnection = keys.map((k) => ({ authorization: `Bearer ${k.key}` }));

  // a quote prices against the live catalogue and needs no worker: a stand-in converter entry lets it
  // answer when the bench runs no converter (the gateway bench starts only the wallet)
  const converter = !cluster.procs.has('converter')
    ? await advertise(cluster.nc, 'websitepro', 'bench-stand-in', () => ({
        outputs: ['metadata', 'markdown', 'text', 'html', 'pdf'].map((id) => ({ id })),
      }))
    : undefined;
  // what the gateway answers, byte for byte: the bare baseline replays it
  const captures: Capture[] = [];
  const live: Endpoint[] = [];
  const only = process.env.BENCH_GATEWAY_ENDPOINTS?.split(',');
  const perAddress = keys.map((_, i) => ({ 'x-forwarded-for': `198.51.100.${i + 1}` }));
  for (const ep of ENDPOINTS) {
    if (only && !only.includes(ep.id)) continue;
    if (captures.some((c) => c.method === ep.method && c.path === ep.path)) {
      live.push(ep);
      continue;
    }
    const res = await fetch(cluster.gatewayUrl + ep.path, {
      method: ep.method,
      headers: { ...(ep.auth ? perConnection[0] : {}), ...(ep.body ? { 'content-type': 'application/json' } : {}) },
      ...(ep.body ? { body: JSON.stringify(ep.body) } : {}),
    });
    const body = await res.text();
    const name = `${ep.method} ${ep.path}${ep.label ? ' ' + ep.label : ''}`;
    if (res.status === 404 && body.includes('no such path')) {
      rows.push({ name, skipped: 'route not in this tree yet (the gateway answers 404 no such path)' });
      continue;
    }
    if (res.status !== 200) {
      rows.push({ name, skipped: `the gateway answers ${res.status}: ${body.slice(0, 160)}` });
      continue;
    }
    captures.push({
      method: ep.method,
      path: ep.path,
      status: res.status,
      contentType: res.headers.get('content-type') ?? 'application/json',
      body,
    });
    live.push(ep);
  }
  if (!live.length) return { rows, raw };

  const capturesFile = join(cluster.dir, 'captures.json');
  writeFileSync(capturesFile, JSON.stringify(captures));
  const servers: Record<ServerId, { url: string; proc?: Proc }> = {
    gateway: { url: cluster.gatewayUrl },
    uws: { url: '' },
    node: { url: '' },
  };
  for (const kind of ['uws', 'node'] as const) {
    const p = spawnTs(
      `baseline-${kind}`,
      'bench/lib/baseline-server.ts',
      kind === 'uws' ? ['uws', capturesFile] : ['node'],
      cluster.env(`baseline-${kind}`),
    );
    const m = await waitReady(p, /listening (\d+)/);
    servers[kind] = { url: `http://127.0.0.1:${m![1]}`, proc: p };
  }
  const loader = await startLoadGenerator(cluster.env('autocannon'));
  const runLoad = (spec: LoadSpec) => loader.run(spec);

  try {
    for (const ep of live) {
      const spec = (server: ServerId, duration: number): LoadSpec => ({
        url: servers[server].url + ep.path,
        method: ep.method,
        headers: ep.body ? { 'content-type': 'application/json' } : {},
        ...(ep.auth ? { perConnection } : ep.manyClients ? { perConnection: perAddress } : {}),
        ...(ep.body ? { body: JSON.stringify(ep.body) } : {}),
        connections: opts.connections,
        duration,
      });
      // every server answers the same status on this endpoint before it is measured
      for (const s of SERVERS) {
        const r = await runLoad({ ...spec(s, opts.warmup || Math.min(0.3, opts.duration)) });
        if (r.ok === 0) throw new Error(`${s} answered no 2xx on ${ep.method} ${ep.path}: ${JSON.stringify(r.statusCodes)}`);
      }
      for (let rep = 0; rep < opts.repeats; rep++) {
        // rotate the order so no server always runs first (or right after the heaviest one)
        const order = SERVERS.map((_, i) => SERVERS[(i + rep) % SERVERS.length]!);
        for (const s of order) raw.runs.push({ endpoint: ep.id, server: s, repeat: rep, result: await runLoad(spec(s, opts.duration)) });
      }
      const pick = (s: ServerId, f: (r: LoadResult) => number) =>
        raw.runs.filter((r) => r.endpoint === ep.id && r.server === s).map((r) => f(r.result));
      const errs = (s: ServerId) => {
        const rs = raw.runs.filter((r) => r.endpoint === ep.id && r.server === s).map((r) => r.result);
        const non2xx = rs.reduce((a, r) => a + r.non2xx, 0);
        const bad = rs.reduce((a, r) => a + r.errors + r.timeouts, 0);
        return non2xx || bad ? ` ${s}: ${non2xx} non-2xx, ${bad} errors/timeouts.` : '';
      };
      const note = `${opts.connections} connections, ${opts.duration} s x ${opts.repeats}; req/s counts 2xx only.${errs('gateway')}${errs('uws')}${errs('node')}`;
      const name = `${ep.method} ${ep.path}${ep.label ? ' ' + ep.label : ''}`;
      for (const [base, label] of [
        ['uws', 'bare uWS'],
        ['node', 'node:http'],
      ] as const) {
        rows.push(
          figure({
            name: `${name} req/s vs ${label}`,
            unit: 'req/s',
            samples: pick('gateway', (r) => r.okRps),
            baselineSamples: pick(base, (r) => r.okRps),
            note,
          }),
        );
        rows.push(
          figure({
            name: `${name} p99 vs ${label}`,
            unit: 'ms',
            samples: pick('gateway', (r) => r.p99),
            baselineSamples: pick(base, (r) => r.p99),
            note,
          }),
        );
      }
    }
    // The two baselines against each other where both do (almost) nothing: the most that any work
    // both servers share can leave of uWS's lead. With a shared per-request cost H, uWS's own cost U
    // and node:http's N, a route's ratio is (N + H) / (U + H): at most N / U (this row), falling as
    // H grows. The authenticated rows' ratio vs node:http can only be below it.
    const ceiling = (s: ServerId) => raw.runs.filter((r) => r.endpoint === 'pricing-many' && r.server === s).map((r) => r.result.okRps);
    if (ceiling('uws').length && ceiling('node').length) {
      rows.push(
        figure({
          name: 'HTTP layer alone: bare uWS vs node:http, same precomputed bytes (GET /v1/pricing), req/s',
          unit: 'req/s',
          samples: ceiling('uws'),
          baselineSamples: ceiling('node'),
          note: 'both baselines of the /v1/pricing (1 address per connection) rows: node:http there does only the limiter, the request id and the write. The ceiling of any "vs node:http" ratio of a route whose work both servers share.',
        }),
      );
    }
    if (!only || only.includes('balance')) rows.push(await ledgerCheckRow(cluster.nc, opts));
  } finally {
    await converter?.stop();
    await loader.proc.stop();
    for (const s of ['uws', 'node'] as const) await servers[s].proc?.stop();
  }
  return { rows, raw };
}

/**
 * The round trip every batch of balance reads waits for (gateway/balances.ts): the ledger's last
 * sequence by a direct get (one replica) against a stream-info request, each shared by as many
 * readers as the bench has connections (freshRead), against the bench's own nats-server.
 */
async function ledgerCheckRow(nc: NatsConnection, opts: GatewayBenchOptions): Promise<BenchRow> {
  const jsm = await jetstreamManager(nc);
  const ways = {
    direct: () => ledgerLastSeqDirect(nc),
    info: async () => (await jsm.streams.info(STREAMS.ledger)).state.last_seq,
  };
  const samples: Record<keyof typeof ways, number[]> = { direct: [], info: [] };
  for (let rep = 0; rep < opts.repeats * 2; rep++) {
    for (const way of (rep % 2 ? ['info', 'direct'] : ['direct', 'info']) as (keyof typeof ways)[]) {
      const read = freshRead(ways[way]);
      const end = Date.now() + opts.duration * 500;
      let n = 0;
      await Promise.all(
        Array.from({ length: opts.connections }, async () => {
          while (Date.now() < end) {
            await read();
            n++;
          }
        }),
      );
      samples[way].push(n / (opts.duration / 2));
    }
  }
  return figure({
    name: 'ledger last sequence as of now: direct get vs stream info',
    unit: 'reads/s',
    samples: samples.direct,
    baselineSamples: samples.info,
    note: `${opts.connections} readers sharing the requests (freshRead), ${opts.duration / 2} s x ${opts.repeats * 2} each, alternating; the bench's nats-server, one replica.`,
  });
}
