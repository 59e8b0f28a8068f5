// `npm run cluster` as an operator starts it, for bench/history.ts's cluster mode (issue 26): the
// underlying `node scripts/cluster.ts` on a data folder (three nats-servers, every stream R3, every
// actor in its own process, two browser-pools), on free ports and the bench's config overrides.
// And the fill of such a folder with history: the generator written against a running R3 cluster.
import { appendFileSync, existsSync, readFileSync, readdirSync, renameSync, rmSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { spawnTs, stderrOf, type Proc } from './procs.ts';
import { benchConfigFile, followLines, processes, stopGracefully, type ProcStat } from './embedded.ts';
import { startNatsCluster } from '../../scripts/cluster-lib.ts';

export interface ClusterCommand {
  dataDir: string;
  proc: Proc;
  /** The gateway: http://127.0.0.1:<port> */
  url: string;
  /** The three nodes' client URLs, comma-separated. */
  natsUrl: string;
  /** ms from spawn to the gateway's first `/readyz` 200 (every process started before it). */
  readyMs: number;
  /** ms from spawn to each process reported started (the launcher's summary: all at once). */
  unitStartedMs: Record<string, number>;
  /** Process label (`wallet#1`, `nats n1`) by pid. */
  labels: Map<number, string>;
  logLine(re: RegExp): Promise<{ ms: number; line: string }>;
  stop(): Promise<void>;
}

/** Every start of scripts/cluster.ts that failed and was made again, with its reason. */
export const clusterStartFailures: string[] = [];

/**
 * After nodes on free ports were stopped: the store they used becomes <dataDir>/cluster. Why:
 * scripts/cluster-lib.ts forms a cluster again in a fresh `cluster-<n>` folder when a free port was
 * taken meanwhile or the meta group formed without a node (seen under load), and the next start
 * looks in `cluster` first; without this it would start on the failed attempt's folder. The nodes'
 * config is written at every start and their Raft state names peers, not paths: a folder can move.
 */
export function settleStore(dataDir: string, used: string): void {
  const want = join(dataDir, 'cluster');
  if (used !== want) {
    rmSync(want, { recursive: true, force: true });
    renameSync(used, want);
  }
  for (const d of readdirSync(dataDir)) if (/^cluster-\d+$/.test(d)) rmSync(join(dataDir, d), { recursive: true, force: true });
}

/**
 * Starts `node scripts/cluster.ts` on `dataDir` (stores in <dataDir>/cluster/n1..n3, actors' folders
 * in <dataDir>/procs). A start on a folder that has a store and that formed in another folder
 * instead (settleStore) would measure an empty cluster: it is stopped and made again (4 tries).
 */
export async function startClusterCommand(
  dataDir: string,
  o: { logLevel?: string; timeoutMs?: number; name?: string; log?: (s: string) => void } = {},
): Promise<ClusterCommand> {
  const had = existsSync(join(dataDir, 'cluster', 'n1', 'jetstream'));
  for (let attempt = 1; ; attempt++) {
    let c: ClusterCommand & { storeDir: string };
    try {
      c = await startClusterOnce(dataDir, o);
    } catch (e) {
      // a process that failed its start (seen: the wallet's "top-ups" step timing out on a cluster
      // just restarted under load 23 on 2 cores) ends the launcher, as `npm run cluster` does; an
      // operator's supervisor starts it again: so does the bench, counted (clusterStartFailures)
      const msg = (e as Error).message;
      const why =
        /start failed: (.*)/.exec(msg)?.[1] ??
        msg
          .split('\n')
          .filter((l) => l.trim() && !l.startsWith('['))
          .slice(-2)
          .join(' / ');
      clusterStartFailures.push(`${dataDir}: ${why.slice(0, 300)}`);
      o.log?.(
        `scripts/cluster.ts on ${dataDir} failed to start (try ${attempt}): ${why.slice(0, 300)} (whole message: ${join(dataDir, 'start-failures.log')})`,
      );
      appendFileSync(join(dataDir, 'start-failures.log'), `=== ${new Date().toISOString()} try ${attempt}\n${msg}\n`);
      if (attempt >= 3 || !/exited \(/.test((e as Error).message)) throw e;
      continue;
    }
    if (c.storeDir === join(dataDir, 'cluster')) return c;
    if (!had)
      return {
        ...c,
        stop: async () => {
          await c.stop();
          settleStore(dataDir, c.storeDir);
        },
      };
    await c.stop();
    settleStore(dataDir, join(dataDir, 'cluster'));
    if (attempt >= 4)
      throw new Error(
        `scripts/cluster.ts on ${dataDir}: the nodes formed in ${c.storeDir}, not on the store in ${join(dataDir, 'cluster')} (${attempt} tries)`,
      );
  }
}

async function startClusterOnce(
  dataDir: string,
  o: { logLevel?: string; timeoutMs?: number; name?: string },
): Promise<ClusterCommand & { storeDir: string }> {
  const t0 = performance.now();
  const p = spawnTs(o.name ?? 'cluster', 'scripts/cluster.ts', [], {
    DATA_DIR: dataDir,
    CONFIG_FILE: benchConfigFile(dataDir),
    CLUSTER_RANDOM_PORTS: '1',
    CLUSTER_READY_TIMEOUT_MS: '300000',
    NATS_URL: '',
    PORT: '0',
    LOG_LEVEL: o.logLevel ?? 'warn',
    MODE: 'development',
  });
  const labels = new Map<number, string>();
  let url = '';
  let natsUrl = '';
  let storeDir = '';
  let summaryMs = NaN;
  let tail = '';
  p.child.stdout!.on('data', (d: Buffer) => {
    tail = (tail + d.toString()).slice(-6000);
  });
  const logLine = followLines(p, t0, (line, ms) => {
    const api = /^\s+API:\s+(http\S+)\/v1/.exec(line);
    if (api) url = api[1]!.replace('localhost', '127.0.0.1');
    const nats = /^\s+NATS_URL: (\S+)/.exec(line);
    if (nats) natsUrl = nats[1]!;
    const node = /^\s+node (n\d): .* pid (\d+), store (\S+)/.exec(line);
    if (node) labels.set(Number(node[2]), `nats-server ${node[1]}`);
    if (node) storeDir = dirname(node[3]!);
    const proc = /^\s+([\w-]+#\d+)\s+pid (\d+)$/.exec(line);
    if (proc) labels.set(Number(proc[2]), proc[1]!);
    if (/Payloads is running as a cluster/.test(line)) summaryMs = ms;
  });
  // the launcher stops the actors (9.5 s each at most), then the nodes; it exits itself after 12 s
  const stop = stopGracefully(p, 30_000);
  const limit = o.timeoutMs ?? 900_000;
  const deadline = Date.now() + limit;
  let readyMs = NaN;
  try {
    while (Date.now() < deadline) {
      // its last words (the reason, on stderr) may still be in the pipe when the exit is seen
      if (p.child.exitCode !== null) await new Promise((r) => setTimeout(r, 500));
      if (p.child.exitCode !== null)
        throw new Error(`scripts/cluster.ts exited (${p.child.exitCode}) before it was ready:\n${tail}\n${stderrOf(p)}`);
      if (url) {
        const ok = await fetch(`${url}/readyz`).then(
          (r) => r.status === 200,
          () => false,
        );
        if (ok) {
          readyMs = performance.now() - t0;
          break;
        }
      }
      await new Promise((r) => setTimeout(r, 50));
    }
    if (!Number.isFinite(readyMs))
      throw new Error(`scripts/cluster.ts on ${dataDir}: /readyz not 200 within ${limit} ms\n${tail}\n${stderrOf(p)}`);
  } catch (e) {
    await stop();
    throw e;
  }
  return {
    dataDir,
    proc: p,
    url,
    natsUrl,
    readyMs,
    labels,
    stop,
    storeDir,
    unitStartedMs: Number.isFinite(summaryMs) ? { 'every process': summaryMs } : {},
    logLine,
  };
}

/**
 * RSS (MB) of each process of a `scripts/cluster.ts` tree: `launcher`, its `watchdog`, each nats-server
 * by node (`nats-server n1`), each actor process by label (`wallet#1`, `gateway#1`), and `browsers`: every
 * process below an actor (Chromium, Firefox and their helpers of both browser-pools), summed.
 */
export function clusterRss(root: number, labels: Map<number, string>): Record<string, number> {
  return clusterSum(root, labels, (p) => p.rssMb);
}

/** CPU seconds used so far, per process as clusterRss groups them. */
export function clusterCpu(root: number, labels: Map<number, string>): Record<string, number> {
  return clusterSum(root, labels, (p) => p.cpuS);
}

function clusterSum(root: number, labels: Map<number, string>, pick: (p: ProcStat) => number): Record<string, number> {
  const all = processes();
  const kids = new Map<number, number[]>();
  for (const [pid, p] of all) kids.set(p.ppid, [...(kids.get(p.ppid) ?? []), pid]);
  const root0 = all.get(root);
  const out: Record<string, number> = { launcher: root0 ? pick(root0) : 0, browsers: 0 };
  const below = (pid: number): number => (kids.get(pid) ?? []).reduce((s, k) => s + (all.has(k) ? pick(all.get(k)!) : 0) + below(k), 0);
  for (const k of kids.get(root) ?? []) {
    const p = all.get(k)!;
    const cmd = (() => {
      try {
        return readFileSync(`/proc/${k}/cmdline`, 'utf8');
      } catch {
        return '';
      }
    })();
    // scripts/cluster-lib.ts's watchdog (`node -e`, kills the children if the launcher dies)
    const label =
      labels.get(k) ?? (p.comm === 'nats-server' ? `nats-server ?${k}` : /process\.stdin\.on/.test(cmd) ? 'watchdog' : `${p.comm} ${k}`);
    out[label] = (out[label] ?? 0) + pick(p);
    out.browsers! += below(k);
  }
  for (const g of Object.keys(out)) out[g] = Math.round(out[g]! * 10) / 10;
  return out;
}

/**
 * Fills `dir` with history for an R3 cluster: the three nodes started on it (sync_interval 2m for
 * the fill only), the generator (scripts/history.ts) run against them with NATS_REPLICAS=3, so every
 * message is replicated by each stream's Raft group as the service's own writes are; the nodes
 * stopped cleanly. A single-server store copied into three nodes would not do: its streams are R1,
 * with no Raft group and no assignment in the cluster's meta group (nats-server's checkForOrphans,
 * server/jetstream_cluster.go, deletes such restored streams 30 s after the meta group recovers), and
 * raising them to R3 copies every message to the peers anyway.
 */
/**
 * The generator's pace against the cluster: an acknowledged publish every 20 messages per stream and
 * 10 in flight (~200 messages unconfirmed, against ~4,000 on one server). With its default pace a
 * part's acknowledged publish got no answer for 60 s on a 3-node cluster under load 23 (the fill
 * failed): an R3 message is stored only once its stream's Raft group commits it.
 */
const FILL_PACE = ['--ack-every', '20', '--window', '10'];

export async function fillClusterStore(
  dir: string,
  o: { jobs: number; wallets: number; entries: number },
  log: (s: string) => void,
): Promise<{ seconds: number; messagesPerS: number; parts: string }> {
  rmSync(dir, { recursive: true, force: true });
  const nodes = await startNatsCluster({ dataDir: dir, syncInterval: '2m' });
  log(`filling ${dir} through an R3 cluster (${nodes.url}): ${o.jobs} jobs, ${o.wallets} wallets, ${o.entries} ledger entries`);
  let out = '';
  let code: number | null = null;
  try {
    const p = spawnTs(
      'history-generator',
      'scripts/history.ts',
      [
        '--jobs',
        String(o.jobs),
        '--wallets',
        String(o.wallets),
        '--entries',
        String(o.entries),
        '--keys-file',
        join(dir, 'history-keys.json'),
        ...FILL_PACE,
      ],
      { NATS_URL: nodes.url, NATS_REPLICAS: '3', DATA_DIR: dir },
    );
    p.child.stdout!.on('data', (d: Buffer) => {
      out += d.toString();
    });
    code = await new Promise<number | null>((r) => p.child.once('exit', r));
    out += stderrOf(p);
  } finally {
    await nodes.stop();
    settleStore(dir, dirname(nodes.nodes[0]!.storeDir));
  }
  const m = /in ([\d.]+) s: (\d+) messages\/s \(([^)]*)\)/.exec(out);
  if (code !== 0 || !m) {
    rmSync(dir, { recursive: true, force: true });
    throw new Error(`scripts/history.ts against the cluster failed (${code}): ${out}`);
  }
  return { seconds: Number(m[1]), messagesPerS: Number(m[2]), parts: m[3]! };
}
