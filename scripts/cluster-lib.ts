// The distributed system on one machine: a 3-node NATS cluster (real nats-server processes with
// routes, JetStream replicated 3 times) and every actor in its own `node main.ts <name>`
// process. Used by `npm run cluster` (fixed ports 4222-4224 / 6222-6224, like config/cluster/) and
// by the reliability tests (free ports, temp folders), so both run the same code.
import { spawn, type ChildProcess } from 'node:child_process';
import { createServer } from 'node:net';
import { existsSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { startNatsServer, type NatsServerHandle } from '../shared/nats/server.ts';
import { connectNats, type NatsConnection } from '../shared/nats/connect.ts';
import { dropEphemeralConsumers } from '../shared/nats/ephemeral.ts';
import { within } from '../shared/runtime.ts';
import { rotatingFile } from '../shared/log.ts';
import { ROOT } from '../shared/config/index.ts';
import { waitForJetStream, waitForMetaGroup, waitForPlacement } from './cluster-ready.ts';

export { waitForJetStream, waitForPlacement };

export const CLUSTER_NAME = 'payloads';

// Every child this module started and has not seen exit: stopped by stopEverything() (Ctrl-C in the
// middle of a start) and SIGKILLed if this process exits without stopping them.
const live = new Set<ChildProcess>();
// NATS nodes among them, stopped last (told apart by role: a node runs under setpriv, not as nats-server)
const natsNodes = new WeakSet<ChildProcess>();
function track(child: ChildProcess, role: 'nats' | 'actor') {
  live.add(child);
  if (role === 'nats') natsNodes.add(child);
  watchdog().stdin!.write(`+${child.pid}\n`);
  child.once('exit', () => {
    live.delete(child);
    if (!wd?.stdin?.destroyed) wd?.stdin?.write(`-${child.pid}\n`);
  });
}

// A detached watchdog that SIGKILLs the tracked pids when this process dies without cleaning up
// (SIGKILL, a test runner's timeout): its stdin closes then. nats-server has no parent-death signal.
const WATCHDOG = `const pids = new Set(); let buf = '';
process.stdin.on('data', (d) => { buf += d; const lines = buf.split('\\n'); buf = lines.pop();
  for (const l of lines) { if (l[0] === '+') pids.add(Number(l.slice(1))); if (l[0] === '-') pids.delete(Number(l.slice(1))); } });
process.stdin.on('end', () => { for (const p of pids) { try { process.kill(p, 'SIGKILL'); } catch {} } process.exit(0); });`;
let wd: ChildProcess | undefined;
function watchdog(): ChildProcess {
  if (wd) return wd;
  wd = spawn(process.execPath, ['-e', WATCHDOG], { stdio: ['pipe', 'ignore', 'ignore'], detached: true });
  wd.unref();
  (wd.stdin as unknown as { unref(): void }).unref();
  return wd;
}
process.once('exit', () => {
  for (const c of live)
    try {
      c.kill('SIGKILL');
    } catch {
      /* gone */
    }
});

/**
 * SIGTERM every child started here (actors first, then NATS nodes), SIGKILL after `graceMs` (an
 * actor bounds its own stop to 9 s; a NATS node gets `natsGraceMs`).
 */
export async function stopEverything(graceMs = 10000, natsGraceMs = graceMs): Promise<void> {
  const kids = [...live];
  const nats = kids.filter((c) => natsNodes.has(c));
  const stopAll = async (list: ChildProcess[], graceMs: number) =>
    Promise.all(
      list.map(async (c) => {
        if (c.exitCode !== null || c.signalCode !== null) return;
        const gone = new Promise((r) => c.once('exit', r));
        c.kill('SIGTERM');
        const t = setTimeout(() => c.kill('SIGKILL'), graceMs);
        await gone;
        clearTimeout(t);
      }),
    );
  await stopAll(
    kids.filter((c) => !nats.includes(c)),
    graceMs,
  );
  // every actor is gone: what their watches and ordered reads left would be restored at the next start
  if (nats.some((c) => c.exitCode === null && c.signalCode === null)) {
    for (const url of systemUrls) {
      const dropped = await dropLeftConsumers(url, DROP_CONSUMERS_MS);
      if (dropped === null)
        console.error(
          `[cluster] the actors' ephemeral consumers were not all dropped within ${DROP_CONSUMERS_MS / 1000} s; the nodes stop anyway`,
        );
    }
  }
  systemUrls.clear();
  await stopAll(nats, natsGraceMs);
}

/** The clusters of the systems started here and not stopped yet (startSystem): their actors' ephemeral consumers are dropped at stop. */
const systemUrls = new Set<string>();
/** Bound of that clean-up (the launcher's hard stop allows the nodes' grace after it). */
const DROP_CONSUMERS_MS = 3000;

/** dropEphemeralConsumers over a connection of its own, given up (and the connection closed) after `ms`: the count, or null. */
async function dropLeftConsumers(url: string, ms: number): Promise<number | null> {
  let nc: NatsConnection | undefined;
  let late = false;
  const work = (async () => {
    const c = await connectNats(url, 'cluster-launcher-stop');
    if (late) {
      await c.close().catch(() => {});
      return null;
    }
    nc = c;
    return dropEphemeralConsumers(c);
  })();
  const dropped = await within(
    work.catch(() => null),
    ms,
    null,
  );
  late = true;
  await nc?.close().catch(() => {});
  return dropped;
}

/** Preloaded into every actor process: when the launcher's IPC channel closes (it died), stop cleanly. */
const ORPHAN_GUARD = 'data:text/javascript,process.once("disconnect",()=>process.kill(process.pid,"SIGTERM"))';
/** The ports of config/cluster/n1..n3.conf. */
export const DEFAULT_CLIENT_PORTS = [4222, 4223, 4224];
export const DEFAULT_CLUSTER_PORTS = [6222, 6223, 6224];

/** A free TCP port on loopback (bound, read, released). */
export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const port = (s.address() as { port: number }).port;
      s.close(() => resolve(port));
    });
  });
}

export interface ClusterNode {
  name: string;
  clientPort: number;
  clusterPort: number;
  storeDir: string;
  url: string;
  handle: NatsServerHandle | null;
}

export interface NatsCluster {
  nodes: ClusterNode[];
  /** `nats://a,nats://b,nats://c`: the NATS_URL of every process. */
  url: string;
  /** SIGKILL one node (index 0..2). */
  kill(i: number): Promise<void>;
  /** Start a stopped node again on the same ports and store. */
  restart(i: number): Promise<void>;
  stop(): Promise<void>;
  /** Resolves once JetStream has a meta leader and answers account info (all nodes up or a quorum); a fresh start also waits for placement (waitForPlacement). */
  waitReady(timeoutMs?: number): Promise<void>;
}

export interface ClusterOptions {
  /** Node stores go under `<dataDir>/cluster/n1..n3` (`cluster-2/`... for a start tried again on fresh ports). */
  dataDir: string;
  size?: number;
  /** Fixed ports (the `npm run cluster` default); omitted: free ports (tests). */
  clientPorts?: number[];
  clusterPorts?: number[];
  bin?: string;
  /** JetStream sync_interval of every node (default 'always': fsync before acknowledging). */
  syncInterval?: string;
}

export async function startNatsCluster(opts: ClusterOptions): Promise<NatsCluster> {
  const size = opts.size ?? 3;
  const fixed = Boolean(opts.clientPorts && opts.clusterPorts);
  for (let attempt = 1; ; attempt++) {
    const dirName = fixed || attempt === 1 ? 'cluster' : `cluster-${attempt}`;
    const fresh = !existsSync(join(opts.dataDir, dirName));
    try {
      return await startNatsClusterOnce(opts, size, dirName, fresh);
    } catch (e) {
      // free ports are found, then bound by nats-server: another process may take one in between,
      // so with free ports a start that finds its port taken is tried again on fresh ports and
      // stores; a fresh cluster whose meta group formed without every node is formed again
      const portTaken = !fixed && /address already in use/i.test(String((e as Error).message));
      if (attempt >= 5 || !(portTaken || e instanceof MetaGroupIncomplete)) throw e;
      if (fixed) rmSync(join(opts.dataDir, dirName), { recursive: true, force: true });
    }
  }
}

/**
 * A fresh cluster whose JetStream meta group did not take in every node: nats-server 2.10 sometimes
 * elects the meta leader among two nodes before it has counted the third, and never adds that one
 * later (its /jsz says cluster_size 2 with three routes up; seen on 3 of 20 starts here), so no
 * stream with a replica on every node can ever be placed. Such a start is made again from scratch,
 * as soon as the nodes' /jsz show it (waitForMetaGroup; 80 starts under load: none took over 6 s).
 */
class MetaGroupIncomplete extends Error {}

async function startNatsClusterOnce(opts: ClusterOptions, size: number, dirName: string, fresh: boolean): Promise<NatsCluster> {
  const clientPorts = opts.clientPorts ?? (await Promise.all(Array.from({ length: size }, freePort)));
  const clusterPorts = opts.clusterPorts ?? (await Promise.all(Array.from({ length: size }, freePort)));
  const nodes: ClusterNode[] = Array.from({ length: size }, (_, i) => ({
    name: `n${i + 1}`,
    clientPort: clientPorts[i]!,
    clusterPort: clusterPorts[i]!,
    storeDir: join(opts.dataDir, dirName, `n${i + 1}`),
    url: `nats://127.0.0.1:${clientPorts[i]}`,
    handle: null,
  }));
  const startNode = async (i: number) => {
    const n = nodes[i]!;
    n.handle = await startNatsServer({
      storeDir: n.storeDir,
      port: n.clientPort,
      serverName: `${CLUSTER_NAME}-${n.name}`,
      cluster: {
        name: CLUSTER_NAME,
        port: n.clusterPort,
        routes: nodes.filter((_, j) => j !== i).map((o) => `nats-route://127.0.0.1:${o.clusterPort}`),
      },
      ...(opts.bin ? { bin: opts.bin } : {}),
      // a terminal's Ctrl-C must not take the nodes down under the actors still stopping
      ownProcessGroup: true,
      ...(opts.syncInterval ? { syncInterval: opts.syncInterval } : {}),
      // kept on disk: why a restart did not come back is in the nodes' logs (issue 26, session 20)
      logFile: join(n.storeDir, 'nats-server.log'),
      // its /jsz tells a meta group formed without a node at once (waitForMetaGroup)
      monitor: true,
    });
    track(n.handle.process, 'nats');
  };
  // every start settles before a failure is acted on: a node still starting must not be left running
  const started = await Promise.allSettled(nodes.map((_, i) => startNode(i)));
  const failed = started.find((r): r is PromiseRejectedResult => r.status === 'rejected');
  if (failed) {
    await Promise.all(nodes.map((n) => n.handle?.stop('SIGKILL')));
    throw failed.reason;
  }
  const url = nodes.map((n) => n.url).join(',');
  const cluster: NatsCluster = {
    nodes,
    url,
    async kill(i) {
      await nodes[i]!.handle?.stop('SIGKILL');
      nodes[i]!.handle = null;
    },
    async restart(i) {
      if (nodes[i]!.handle) return;
      await startNode(i);
    },
    async stop() {
      await Promise.all(
        nodes.map(async (n) => {
          await n.handle?.stop('SIGTERM');
          n.handle = null;
        }),
      );
    },
    async waitReady(timeoutMs = 30000) {
      await waitForJetStream(url, timeoutMs);
    },
  };
  // a quorum answers without the third node: one that ended meanwhile (its route port taken just
  // after it was ready for clients) would leave every replicated stream without a place
  const checkNodes = () => {
    const gone = nodes.find((n) => n.handle && (n.handle.process.exitCode !== null || n.handle.process.signalCode !== null));
    if (gone) throw new Error(`nats node ${gone.name} ended while the cluster formed: ${gone.handle!.log()}`);
  };
  try {
    try {
      await cluster.waitReady();
      // a fresh meta group that counts fewer than every node never places a replica on each: seen
      // in the nodes' /jsz the moment JetStream answers, and formed again at once (it was found
      // only when the placement below gave up, 20 s later)
      if (
        fresh &&
        (await waitForMetaGroup(
          nodes.map((n) => n.handle!.monitorUrl!),
          size,
        )) === 'short'
      ) {
        throw new MetaGroupIncomplete(`the JetStream meta group formed with fewer than ${size} nodes`);
      }
      // a good start places within about a second of JetStream answering; a fresh one that cannot
      // after 20 s formed without a node (above) and is made again
      await waitForPlacement(
        url,
        size,
        fresh ? 20000 : 60000,
        nodes.map((n) => n.handle!.monitorUrl!),
      );
    } catch (e) {
      checkNodes();
      throw fresh ? new MetaGroupIncomplete((e as Error).message) : e;
    }
    checkNodes();
  } catch (e) {
    // what each node said: why the meta group did not form or could not place
    const logs = nodes.map((n) => `--- ${n.name} (${n.handle?.pid ?? 'stopped'}):\n${n.handle?.log().slice(-2500) ?? ''}`).join('\n');
    await cluster.stop();
    (e as Error).message += `\n${logs}`;
    throw e;
  }
  return cluster;
}

// ---- actor processes --------------------------------------------------------------------------

export type ProcessName = 'gateway' | 'wallet' | 'job-supervisor' | 'converter' | 'browser-pool' | 'relay-prober';
/** Start order of `npm run cluster`: the wallet and supervisor before the gateway takes requests. */
export const ALL_PROCESSES: ProcessName[] = [
  'wallet',
  'job-supervisor',
  'converter',
  'browser-pool',
  'browser-pool',
  'relay-prober',
  'gateway',
];

export interface ActorProcess {
  name: ProcessName;
  /** `wallet#1`, `browser-pool#2` */
  label: string;
  pid: number;
  child: ChildProcess;
  instanceId?: string;
  /** Gateway only: its base URL. */
  url?: string;
  /** Resolves with the exit code or signal name. */
  exited: Promise<string>;
  /** Last lines of its output (stdout and stderr). */
  output(): string;
  kill(signal?: NodeJS.Signals): Promise<string>;
  /** SIGTERM (clean stop), SIGKILL after `graceMs`. */
  stop(graceMs?: number): Promise<string>;
}

export interface SpawnOptions {
  natsUrl: string;
  dataDir: string;
  replicas?: number;
  /** A JSON config file (CONFIG_FILE) for settings without an environment variable. */
  configFile?: string;
  env?: Record<string, string>;
  /** Fixed gateway port; default 0 (free). */
  port?: number;
  logLevel?: string;
  /** Echo the child's output with a `[label]` prefix (the `npm run cluster` console). */
  echo?: boolean;
  readyTimeoutMs?: number;
}

const counters = new Map<string, number>();

/** Start `node --import tsx main.ts <name>` and wait until it reports ready over IPC. */
export async function spawnActor(name: ProcessName, o: SpawnOptions): Promise<ActorProcess> {
  const n = (counters.get(name) ?? 0) + 1;
  counters.set(name, n);
  const label = `${name}#${n}`;
  const dataDir = join(o.dataDir, 'procs', `${name}-${n}`);
  mkdirSync(dataDir, { recursive: true });
  const env: Record<string, string> = {
    ...(process.env as Record<string, string>),
    NATS_URL: o.natsUrl,
    NATS_REPLICAS: String(o.replicas ?? 3),
    DATA_DIR: dataDir,
    LOG_LEVEL: o.logLevel ?? 'warn',
    ...(name === 'gateway' ? { PORT: String(o.port ?? 0) } : {}),
    ...(o.configFile ? { CONFIG_FILE: o.configFile } : {}),
    ...(o.env ?? {}),
  };
  if (name === 'gateway' && !o.env?.BASE_URL && !process.env.BASE_URL) delete env.BASE_URL;
  // its own process group: a terminal's Ctrl-C reaches only the launcher, which stops the actors
  // first and the NATS nodes last (ORPHAN_GUARD and the watchdog cover the launcher's death)
  const child = spawn(process.execPath, ['--import', ORPHAN_GUARD, join(ROOT, 'main.ts'), name], {
    cwd: ROOT,
    env,
    stdio: ['ignore', 'pipe', 'pipe', 'ipc'],
    detached: true,
  });
  track(child, 'actor');
  let out = '';
  let url: string | undefined;
  // everything it prints is kept beside its data, for reading after a failed test or a crash:
  // rotated at LOG_FILE_MAX_BYTES (one previous file kept), a full disk never takes the caller down
  const logFile = rotatingFile(join(dataDir, 'output.log'));
  const onData = (d: Buffer) => {
    logFile.write(d);
    const s = d.toString();
    out = (out + s).slice(-8000);
    const m = /gateway: (http\S+)/.exec(s);
    if (m) url = m[1];
    if (o.echo) for (const line of s.split('\n')) if (line.trim()) process.stdout.write(`[${label}] ${line}\n`);
  };
  child.stdout!.on('data', onData);
  child.stderr!.on('data', onData);
  const exited = new Promise<string>((res) => child.once('exit', (code, sig) => res(sig ?? String(code))));
  child.once('close', () => logFile.close()); // after its output streams closed: nothing is written after it
  const proc: ActorProcess = {
    name,
    label,
    pid: child.pid!,
    child,
    exited,
    output: () => out,
    async kill(signal = 'SIGKILL') {
      if (child.exitCode === null && child.signalCode === null) child.kill(signal);
      return exited;
    },
    async stop(graceMs = 10000) {
      if (child.exitCode !== null || child.signalCode !== null) return exited;
      child.kill('SIGTERM');
      const t = setTimeout(() => child.kill('SIGKILL'), graceMs);
      const r = await exited;
      clearTimeout(t);
      return r;
    },
  };
  const ready = new Promise<void>((resolve, reject) => {
    child.on('message', (m: { ready?: string; instanceId?: string }) => {
      if (m?.ready) {
        proc.instanceId = m.instanceId;
        resolve();
      }
    });
    void exited.then((code) => reject(new Error(`${label} exited (${code}) before it was ready:\n${out}`)));
  });
  const timeout = o.readyTimeoutMs ?? 60000;
  let timer: NodeJS.Timeout | undefined;
  try {
    await Promise.race([
      ready,
      new Promise((_, rej) => {
        timer = setTimeout(() => rej(new Error(`${label} not ready within ${timeout} ms:\n${out}`)), timeout);
      }),
    ]);
  } catch (e) {
    await proc.kill('SIGKILL');
    throw e;
  } finally {
    clearTimeout(timer);
  }
  // the gateway prints its URL right before it reports ready; give stdout a moment
  if (name === 'gateway') {
    for (let i = 0; i < 40 && !url; i++) await sleep(25);
    if (!url) throw new Error(`${label} did not print its URL:\n${out}`);
    proc.url = url.replace('localhost', '127.0.0.1');
  }
  return proc;
}

export interface System {
  cluster: NatsCluster;
  procs: ActorProcess[];
  gateway(): ActorProcess | undefined;
  /** Start one more process (another browser-pool, a replacement gateway), with extra environment. */
  add(name: ProcessName, env?: Record<string, string>): Promise<ActorProcess>;
  stop(): Promise<void>;
}

export interface SystemOptions extends ClusterOptions, Omit<SpawnOptions, 'natsUrl' | 'dataDir'> {
  processes?: ProcessName[];
  /** Settings without an environment variable: written to `<dataDir>/cluster-config.json` (CONFIG_FILE). */
  config?: Record<string, unknown>;
}

/** The whole distributed system: cluster plus processes. On failure everything started is stopped. */
export async function startSystem(o: SystemOptions): Promise<System> {
  mkdirSync(o.dataDir, { recursive: true });
  let configFile = o.configFile;
  if (o.config) {
    configFile = join(o.dataDir, 'cluster-config.json');
    writeFileSync(configFile, JSON.stringify(o.config, null, 2));
  }
  const cluster = await startNatsCluster(o);
  systemUrls.add(cluster.url);
  const procs: ActorProcess[] = [];
  const spawnOpts: SpawnOptions = { ...o, natsUrl: cluster.url, dataDir: o.dataDir, ...(configFile ? { configFile } : {}) };
  const sys: System = {
    cluster,
    procs,
    gateway: () => procs.filter((p) => p.name === 'gateway' && p.child.exitCode === null && p.child.signalCode === null).at(-1),
    async add(name, env) {
      const p = await spawnActor(name, env ? { ...spawnOpts, env: { ...(spawnOpts.env ?? {}), ...env } } : spawnOpts);
      procs.push(p);
      return p;
    },
    async stop() {
      await Promise.all(procs.map((p) => p.stop()));
      await dropLeftConsumers(cluster.url, DROP_CONSUMERS_MS);
      systemUrls.delete(cluster.url);
      await cluster.stop();
    },
  };
  try {
    // one at a time: the first provisions the replicated streams, the others find them
    for (const name of o.processes ?? ALL_PROCESSES) await sys.add(name);
  } catch (e) {
    await sys.stop();
    throw e;
  }
  return sys;
}
