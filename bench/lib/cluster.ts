// The system under test, one process per actor as in the Procfile: a throwaway nats-server started
// by the bench, then `node --import tsx main.ts <name>` for the gateway and each actor that
// exists in this tree, all pointed at it with NATS_URL and one bench config file.
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startNatsServer, type NatsServerHandle } from '../../shared/nats/server.ts';
import { connectNats, type NatsConnection } from '../../shared/nats/connect.ts';
import { provision } from '../../shared/nats/provision.ts';
import { loadConfig, ROOT, type Config } from '../../shared/config/index.ts';
import { ACTOR_NAMES } from '../../shared/actor.ts';
import { spawnTs, waitReady, rssMb, type Proc } from './procs.ts';

/**
 * What the bench changes from the defaults, and why:
 * - request rate limits so high they never refuse (a token is still taken on every request, in
 *   memory or, for job creation, in the `limits` bucket, as in production; only the refusal is out
 *   of the way of a load test);
 * - loopback allowed as a target (the pipeline's page lives on 127.0.0.1);
 * - log level warn (one info line per request would measure the terminal, not the gateway);
 * - X-Forwarded-For trusted, so a benchmark can stand for many client addresses from one machine
 *   (without the header the client address is the socket's, as by default).
 */
export const BENCH_OVERRIDES = {
  server: { port: 0, logLevel: 'warn', publicRequestsPerMinute: 1_000_000_000, keyRequestsPerMinute: 1_000_000_000, trustProxy: true },
  limits: { jobsPerHour: 1_000_000_000, jobRequestsPerMinute: 1_000_000_000, queueMax: 100_000 },
  outbound: { allowCidrs: ['127.0.0.0/8', '::1/128'], checksPerKeyPerMinute: 1_000_000_000, checksPerTargetPerMinute: 1_000_000_000 },
};

/** Actors the bench runs when their code exists (browser-pool and relay-prober are measured by their own benchmarks). */
export const CLUSTER_ACTORS = ['wallet', 'job-supervisor', 'converter'] as const;

export const actorExists = (name: string) => existsSync(join(ROOT, 'actors', name, 'index.ts'));

export interface Cluster {
  dir: string;
  nats: NatsServerHandle;
  nc: NatsConnection;
  config: Config;
  configFile: string;
  /** Env for any process that joins this cluster. */
  env(name: string): Record<string, string>;
  gatewayUrl: string;
  procs: Map<string, Proc>;
  /** The actors (and `gateway`) running, whatever the layout. */
  units: Set<string>;
  layout: ClusterLayout;
  /** Actors that could not be started, with the reason. */
  missing: Map<string, string>;
  /** Start polling RSS (MB) of every process; returns every reading per process name when stopped. */
  sampleRss(intervalMs?: number): { stop(): Record<string, number[]> };
  stop(): Promise<void>;
}

/**
 * `per-actor` (default): one process per actor and one for the gateway, as the Procfile and a
 * cluster run them. `one-process`: the actors and the gateway in one process (`main.ts <units...>`),
 * as `npm start`'s embedded default runs them (its nats-server is the bench's here, as with
 * NATS_URL set); `procs` then holds that one process as `one-process`.
 */
export type ClusterLayout = 'per-actor' | 'one-process';

export async function startCluster(
  opts: {
    actors?: readonly string[];
    layout?: ClusterLayout;
    /** A benchmark's own settings, merged over BENCH_OVERRIDES section by section. */
    config?: Record<string, Record<string, unknown>>;
  } = {},
): Promise<Cluster> {
  const dir = mkdtempSync(join(tmpdir(), 'payloads-bench-'));
  // NATS_SYNC_INTERVAL (e.g. 2m): what the fsync before every acknowledgement costs a bench (unsafe for money)
  const nats = await startNatsServer({ storeDir: join(dir, 'nats'), port: -1, syncInterval: process.env.NATS_SYNC_INTERVAL || undefined });
  const configFile = join(dir, 'bench-config.json');
  const overrides: Record<string, Record<string, unknown>> = { ...BENCH_OVERRIDES };
  for (const [k, v] of Object.entries(opts.config ?? {})) overrides[k] = { ...overrides[k], ...v };
  writeFileSync(configFile, JSON.stringify(overrides, null, 2));
  const env = (name: string): Record<string, string> => ({
    NATS_URL: nats.url,
    CONFIG_FILE: configFile,
    DATA_DIR: join(dir, 'data', name),
    PORT: '0',
    LOG_LEVEL: 'warn',
    MODE: 'development',
  });
  const config = loadConfig({ env: env('bench') });
  const nc = await connectNats(nats.url, 'bench');
  await provision(nc, config);

  const procs = new Map<string, Proc>();
  const missing = new Map<string, string>();
  const cluster: Cluster = {
    dir,
    nats,
    nc,
    config,
    configFile,
    env,
    gatewayUrl: '',
    procs,
    missing,
    units: new Set(),
    layout: opts.layout ?? 'per-actor',
    sampleRss(intervalMs = 250) {
      const readings: Record<string, number[]> = {};
      const tick = () => {
        for (const [name, p] of procs) {
          const v = rssMb(p.pid);
          if (Number.isFinite(v)) (readings[name] ??= []).push(v);
        }
      };
      tick();
      const t = setInterval(tick, intervalMs);
      return {
        stop: () => {
          clearInterval(t);
          tick();
          return readings;
        },
      };
    },
    async stop() {
      for (const p of [...procs.values()].reverse()) await p.stop();
      await nc.close().catch(() => {});
      await nats.destroy();
      rmSync(dir, { recursive: true, force: true });
    },
  };
  // BENCH_PROF=<dir>: a V8 CPU profile of every actor process and the gateway, each written when it
  // stops (`<dir>/<name>/`; BENCH_PROF_INTERVAL_US: the sampling interval, default 1000); BENCH_GATEWAY_PROF=<dir>: of the gateway only
  const profFlags = (name: string): string[] => {
    const dir = process.env.BENCH_PROF
      ? join(process.env.BENCH_PROF, name)
      : name === 'gateway'
        ? process.env.BENCH_GATEWAY_PROF
        : undefined;
    return dir
      ? [
          '--cpu-prof',
          `--cpu-prof-dir=${dir}`,
          ...(process.env.BENCH_PROF_INTERVAL_US ? [`--cpu-prof-interval=${process.env.BENCH_PROF_INTERVAL_US}`] : []),
        ]
      : [];
  };
  try {
    if (opts.layout === 'one-process') {
      const names = (opts.actors ?? CLUSTER_ACTORS).filter((n) => (ACTOR_NAMES as readonly string[]).includes(n) && actorExists(n));
      const p = spawnTs('one-process', 'main.ts', [...names, 'gateway'], env('one-process'), false, profFlags('one-process'));
      const m = await waitReady(p, /gateway: (http\S+)/);
      procs.set('one-process', p);
      for (const n of names) cluster.units.add(n);
      cluster.units.add('gateway');
      cluster.gatewayUrl = m![1]!.replace('localhost', '127.0.0.1');
      return cluster;
    }
    for (const name of opts.actors ?? CLUSTER_ACTORS) {
      if (!(ACTOR_NAMES as readonly string[]).includes(name) || !actorExists(name)) {
        missing.set(name, `actors/${name}/index.ts does not exist in this tree yet`);
        continue;
      }
      const p = spawnTs(name, 'main.ts', [name], env(name), false, profFlags(name));
      try {
        await waitReady(p, null);
        procs.set(name, p);
        cluster.units.add(name);
      } catch (e) {
        await p.stop();
        missing.set(name, `did not start: ${(e as Error).message.split('\n').slice(0, 3).join(' ')}`);
      }
    }
    const gw = spawnTs('gateway', 'main.ts', ['gateway'], env('gateway'), false, profFlags('gateway'));
    const m = await waitReady(gw, /gateway: (http\S+)/);
    procs.set('gateway', gw);
    cluster.units.add('gateway');
    cluster.gatewayUrl = m![1]!.replace('localhost', '127.0.0.1');
  } catch (e) {
    await cluster.stop();
    throw e;
  }
  return cluster;
}
