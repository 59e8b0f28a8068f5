// Starts a real nats-server with JetStream as a child process: the embedded default of `npm start`,
// the throwaway servers of the tests (port -1, temp store), and the nodes of `npm run cluster`.
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import net from 'node:net';
import { mkdirSync, writeFileSync, readFileSync, existsSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { within } from '../runtime.ts';
import { rotatingFile } from '../log.ts';

export interface NatsServerOptions {
  storeDir: string;
  port?: number; // -1 or 0: random
  host?: string;
  serverName?: string;
  cluster?: { name: string; port: number; routes: string[] };
  /** Extra lines for the generated config file. */
  extra?: string;
  bin?: string;
  /**
   * Run the server in its own process group, tied to this process's life: a terminal's Ctrl-C (or
   * `docker stop`'s SIGTERM to the group) then reaches only the service, which stops the server last
   * instead of finding it gone mid-shutdown; `setpriv --pdeathsig` still ends it if this process dies.
   */
  ownProcessGroup?: boolean;
  /**
   * JetStream `sync_interval`: 'always' (default) fsyncs every write before it is acknowledged;
   * a duration ('2m' is the server's own default) acknowledges writes that are not on disk yet, which
   * a power cut or kernel crash loses: unsafe for money (docs/reliability.md "Durability").
   */
  syncInterval?: string;
  /**
   * Also append the server's log to this file, from its first line (a restart's stream recovery
   * comes before it listens), at most LOG_FILE_MAX_BYTES (shared/log.ts), the previous one kept as `<file>.1`.
   * Without it the log is kept only in memory (its last 4 KB, for error messages).
   */
  logFile?: string;
  /**
   * How long the server may take to listen (default START_TIMEOUT_MS, 10 min) while its process is
   * alive. A server stopped uncleanly (a crash, SIGKILL, power loss) after writes rebuilds each
   * written stream's state from its blocks before it listens: 4-7 s for 1 M job documents here
   * (14 s on a loaded machine), linear in what the store holds.
   */
  startTimeoutMs?: number;
  /** Called every `slowEveryMs` (10 s) while the server has not yet listened, with its last log line. */
  onSlowStart?: (elapsedMs: number, lastLine: string) => void;
  slowEveryMs?: number;
  /** Also serve nats-server's HTTP monitoring (`/jsz`, `/varz`...) on a free port of the same host (`monitorUrl`). */
  monitor?: boolean;
}

/**
 * The default bound on a start. It was 15 s: an embedded default with a few million job documents
 * (fewer on a loaded machine) could then never come back after a crash, each try killed mid-rebuild
 * and the next one rebuilding again. A start is given up on when the process is stuck this long,
 * not when it is slow.
 */
export const START_TIMEOUT_MS = 10 * 60_000;

/** The oldest nats-server this project runs on: 2.9 cannot fsync before acknowledging. Keep in step with scripts/setup.sh. */
export const NATS_SERVER_MIN = '2.10.27';

const checkedBins = new Map<string, string>();

/** `nats-server --version` of `bin`, refused with a clear message when older than NATS_SERVER_MIN. */
export function checkNatsServerVersion(bin: string): string {
  const known = checkedBins.get(bin);
  if (known) return known;
  const r = spawnSync(bin, ['--version'], { encoding: 'utf8', timeout: 10000 });
  if (r.error) throw new Error(`nats-server could not be started (${bin}): ${r.error.message}; run \`npm run setup\``);
  const version = /v?(\d+\.\d+\.\d+)/.exec(`${r.stdout} ${r.stderr}`)?.[1];
  if (!version) throw new Error(`${bin} --version did not print a version: ${(r.stdout + r.stderr).trim().slice(0, 200)}`);
  if (compareVersions(version, NATS_SERVER_MIN) < 0) {
    throw new Error(
      `nats-server ${version} (${bin}) is older than ${NATS_SERVER_MIN}, the oldest this project runs on: it cannot fsync before acknowledging a write (sync_interval), so acknowledged money could be lost on a power cut. Run \`npm run setup\` (installs Debian trixie's nats-server) or set NATS_SERVER_BIN.`,
    );
  }
  checkedBins.set(bin, version);
  return version;
}

export function compareVersions(a: string, b: string): number {
  const pa = a.split('.').map(Number);
  const pb = b.split('.').map(Number);
  for (let i = 0; i < 3; i++) if ((pa[i] ?? 0) !== (pb[i] ?? 0)) return (pa[i] ?? 0) - (pb[i] ?? 0);
  return 0;
}

export interface NatsServerHandle {
  url: string;
  port: number;
  /** The HTTP monitoring endpoint (`http://127.0.0.1:<port>`), when started with `monitor`. */
  monitorUrl?: string;
  pid: number;
  storeDir: string;
  process: ChildProcess;
  /** `signal`, then SIGKILL after `graceMs` (default 10 s). */
  stop(signal?: NodeJS.Signals, graceMs?: number): Promise<void>;
  /** Stop and remove the store (tests). */
  destroy(): Promise<void>;
  /** The server's last 4000 characters of log (stderr): why it ended, when it did. */
  log(): string;
}

/** Something accepts TCP connections on this loopback port. */
function accepts(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const c = net.connect({ host: '127.0.0.1', port });
    c.once('connect', () => {
      c.destroy();
      resolve(true);
    });
    c.once('error', () => {
      c.destroy();
      resolve(false);
    });
  });
}

export async function startNatsServer(opts: NatsServerOptions): Promise<NatsServerHandle> {
  const bin = opts.bin ?? process.env.NATS_SERVER_BIN ?? 'nats-server';
  checkNatsServerVersion(bin);
  mkdirSync(opts.storeDir, { recursive: true });
  const portsDir = join(opts.storeDir, 'ports');
  rmSync(portsDir, { recursive: true, force: true });
  mkdirSync(portsDir, { recursive: true });
  const port = opts.port === undefined || opts.port === 0 ? -1 : opts.port;
  const name = opts.serverName ?? `payloads-${process.pid}-${Math.random().toString(36).slice(2, 8)}`;
  const lines = [
    `server_name: "${name}"`,
    `host: "${opts.host ?? '127.0.0.1'}"`,
    `port: ${port}`,
    `ports_file_dir: "${portsDir}"`,
    `jetstream { store_dir: "${join(opts.storeDir, 'jetstream')}", sync_interval: ${opts.syncInterval ?? 'always'} }`,
  ];
  if (opts.monitor) lines.push('http_port: -1');
  if (opts.cluster) {
    lines.push(
      // routes pinged every second, dropped after 4 unanswered (config/cluster/n*.conf says why)
      `cluster { name: "${opts.cluster.name}", host: "127.0.0.1", port: ${opts.cluster.port}, ping_interval: "1s", ping_max: 4, routes: [${opts.cluster.routes.map((r) => `"${r}"`).join(', ')}] }`,
    );
  }
  if (opts.extra) lines.push(opts.extra);
  const confFile = join(opts.storeDir, 'nats-server.conf');
  writeFileSync(confFile, lines.join('\n') + '\n');

  const pdeathsig = opts.ownProcessGroup && existsSync('/usr/bin/setpriv');
  const child = pdeathsig
    ? spawn('/usr/bin/setpriv', ['--pdeathsig', 'TERM', bin, '-c', confFile], { stdio: ['ignore', 'ignore', 'pipe'], detached: true })
    : spawn(bin, ['-c', confFile], { stdio: ['ignore', 'ignore', 'pipe'], detached: Boolean(opts.ownProcessGroup) });
  let stderr = '';
  const logFile = opts.logFile ? rotatingFile(opts.logFile) : undefined;
  child.stderr!.on('data', (d: Buffer) => {
    stderr = (stderr + d.toString()).slice(-4000);
    logFile?.write(d);
  });
  child.stderr!.once('close', () => logFile?.close());
  const exited = new Promise<number | null>((res) => child.once('exit', (code) => res(code)));
  const stderrDone = new Promise<void>((res) => child.stderr!.once('close', () => res()));
  // its last words (the reason) may still be in the pipe when the exit is seen: read them first
  const exitError = async () => {
    await within(stderrDone, 1000, undefined);
    return new Error(`nats-server exited with ${child.exitCode}: ${stderr}`);
  };
  let spawnError: Error | undefined;
  child.once('error', (e) => {
    spawnError = e;
  });

  // nats-server writes <name>_<pid>.ports once it listens.
  const portsFile = join(portsDir, `${bin.split('/').pop()}_${child.pid}.ports`);
  const started = Date.now();
  const timeoutMs = opts.startTimeoutMs ?? START_TIMEOUT_MS;
  const deadline = started + timeoutMs;
  const slowEveryMs = opts.slowEveryMs ?? 10_000;
  let nextSlow = started + slowEveryMs;
  let clientPort = 0;
  let monitorUrl: string | undefined;
  while (Date.now() < deadline) {
    if (spawnError) throw new Error(`nats-server could not be started (${bin}): ${spawnError.message}`);
    if (child.exitCode !== null) throw await exitError();
    if (existsSync(portsFile)) {
      try {
        const info = JSON.parse(readFileSync(portsFile, 'utf8')) as { nats: string[]; monitoring?: string[] };
        const port = Number(new URL(info.nats[0]!).port);
        monitorUrl = info.monitoring?.[0];
        // with monitoring asked for, the file is complete once it lists that port too
        if (port && (monitorUrl || !opts.monitor)) {
          clientPort = port;
          break;
        }
      } catch {
        /* partially written */
      }
    }
    if (opts.onSlowStart && Date.now() >= nextSlow) {
      nextSlow += slowEveryMs;
      opts.onSlowStart(Date.now() - started, stderr.trimEnd().split('\n').pop() ?? '');
    }
    await sleep(25);
  }
  if (!clientPort) {
    child.kill('SIGKILL');
    throw new Error(`nats-server did not start within ${Math.round(timeoutMs / 1000)} s: ${stderr}`);
  }
  // A cluster node listens for routes apart from clients: a route port taken by another process
  // (found free, then taken before this server bound it) ends the server after its client port is
  // up, and the cluster would then form without it (placement of replicated streams fails: "no
  // suitable peers"). Wait until the route port answers, or report the exit (with its reason).
  if (opts.cluster) {
    while (!(await accepts(opts.cluster.port))) {
      if (child.exitCode !== null || child.signalCode !== null) throw await exitError();
      if (Date.now() > deadline) {
        child.kill('SIGKILL');
        throw new Error(
          `nats-server did not listen for routes on ${opts.cluster.port} within ${Math.round(timeoutMs / 1000)} s: ${stderr}`,
        );
      }
      await sleep(25);
    }
    await sleep(50);
    if (child.exitCode !== null || child.signalCode !== null) throw await exitError();
  }

  const stop = async (signal: NodeJS.Signals = 'SIGTERM', graceMs = 10000) => {
    if (child.exitCode !== null || child.signalCode !== null) return;
    child.kill(signal);
    const t = setTimeout(() => child.kill('SIGKILL'), graceMs);
    await exited;
    clearTimeout(t);
  };
  return {
    url: `nats://127.0.0.1:${clientPort}`,
    port: clientPort,
    ...(monitorUrl ? { monitorUrl } : {}),
    pid: child.pid!,
    storeDir: opts.storeDir,
    process: child,
    stop,
    async destroy() {
      await stop('SIGKILL');
      rmSync(opts.storeDir, { recursive: true, force: true });
    },
    log: () => stderr,
  };
}
