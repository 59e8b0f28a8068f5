// Process plumbing shared by the launcher (main.ts) and the admin CLI: config, the NATS address,
// signals.
import { disarmFailpointsIn } from './failpoints.ts';
import { existsSync, readFileSync, writeFileSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { hostname } from 'node:os';
import { randomBytes } from 'node:crypto';
import { setTimeout as timer } from 'node:timers/promises';
import { loadConfig, ConfigError, type Config } from './config/index.ts';

export function loadConfigOrExit(): Config {
  try {
    const config = loadConfig();
    disarmFailpointsIn(config.server.mode);
    return config;
  } catch (e) {
    if (e instanceof ConfigError) {
      console.error(e.message);
      process.exit(2);
    }
    throw e;
  }
}

/** The embedded server writes its URL here so other local processes (admin CLI) find it. */
export const natsUrlFile = (config: Config) => join(config.dataDir, 'nats.url');

export function rememberNatsUrl(config: Config, url: string) {
  mkdirSync(config.dataDir, { recursive: true });
  writeFileSync(natsUrlFile(config), url + '\n');
}

/** NATS_URL / config first, then the URL the embedded server of this data folder wrote. */
export function resolveNatsUrl(config: Config): string {
  if (config.nats.url) return config.nats.url;
  const f = natsUrlFile(config);
  if (existsSync(f)) return readFileSync(f, 'utf8').trim();
  throw new ConfigError(`config: no NATS address: set NATS_URL, or start the service (npm start) so ${f} exists`);
}

export const newInstanceId = (name: string) => `${name}-${hostname()}-${process.pid}-${randomBytes(3).toString('hex')}`;

/**
 * Hard bound of a whole stop: past it the process exits anyway (code 1), after the exit hooks ran.
 * Kept under the 10 s that `docker stop` and most supervisors give before their SIGKILL.
 */
export const STOP_DEADLINE_MS = 9000;

/** One step of a stop, bounded: a step still running at its deadline is reported and left behind. */
export interface StopStep {
  what: string;
  deadlineMs: number;
  run: () => Promise<unknown>;
}

/**
 * Run stop steps in order, each within its deadline: a NATS server that died first (a signal to the
 * whole group, a systemd stop) makes drains and consumer stops wait for ever, and a hung step must
 * not keep the next ones, or the process, from ending. Returns the steps that failed or overran.
 */
export async function runStopSteps(steps: StopStep[], log?: { warn(o: object, m: string): void }): Promise<string[]> {
  const missed: string[] = [];
  for (const step of steps) {
    let timer: NodeJS.Timeout | undefined;
    const outcome = await Promise.race([
      step.run().then(
        () => 'done',
        (e: unknown) => `failed: ${(e as Error)?.message ?? String(e)}`,
      ),
      new Promise<string>((r) => {
        timer = setTimeout(() => r(`did not finish within ${step.deadlineMs} ms`), step.deadlineMs);
      }),
    ]);
    clearTimeout(timer);
    if (outcome !== 'done') {
      missed.push(step.what);
      log?.warn({ step: step.what, outcome }, 'stop step left behind');
    }
  }
  return missed;
}

// Synchronous last words run on every exit, however it comes (a clean stop, the hard deadline, a
// second Ctrl-C): kill what must not outlive this process (the embedded nats-server, browsers).
const exitHooks = new Set<() => void>();
let exitHooked = false;
export function onProcessExit(hook: () => void): () => void {
  exitHooks.add(hook);
  if (!exitHooked) {
    exitHooked = true;
    process.once('exit', () => {
      for (const h of exitHooks)
        try {
          h();
        } catch {
          /* best effort: the process is ending */
        }
    });
  }
  return () => exitHooks.delete(hook);
}

/**
 * Run `stop` once on SIGINT/SIGTERM/SIGHUP, then exit: 0 when every step finished, 1 when `stop`
 * failed or overran `deadlineMs`. A second signal exits at once (the exit hooks still run).
 */
export function onShutdown(stop: () => Promise<unknown>, { deadlineMs = STOP_DEADLINE_MS }: { deadlineMs?: number } = {}) {
  let stopping = false;
  const handler = (sig: string) => {
    if (stopping) process.exit(130);
    stopping = true;
    console.error(`\n${sig}: stopping...`);
    setTimeout(() => {
      console.error(`stop did not finish within ${deadlineMs} ms; exiting anyway`);
      process.exit(1);
    }, deadlineMs).unref();
    stop().then(
      (r) => {
        const missed = Array.isArray(r) ? r.length : 0;
        console.error(missed ? `stopped; ${missed} step(s) left behind` : 'stopped');
        process.exit(missed ? 1 : 0);
      },
      (e) => {
        console.error(e);
        process.exit(1);
      },
    );
  };
  process.on('SIGINT', () => handler('SIGINT'));
  process.on('SIGTERM', () => handler('SIGTERM'));
  // a closed terminal: without a handler the process would die at once and skip every stop step
  process.on('SIGHUP', () => handler('SIGHUP'));
}

/** The one sleep: resolves after `ms`, or rejects with an AbortError when `signal` aborts first. */
export const sleep = (ms: number, signal?: AbortSignal): Promise<void> => timer(ms, undefined, signal ? { signal } : undefined);

/**
 * `p`'s value, or `fallback` once `ms` have passed, whichever comes first; the timer is cleared as
 * soon as `p` settles. `Promise.race([p, sleep(ms)])` leaves its timer running, and a running timer
 * keeps the process alive: a supervisor stopped right after its start lingered until its 15 s
 * catch-up bound fired (every test file with a supervisor ended ~12 s after its last test).
 */
export async function within<T, F>(p: Promise<T>, ms: number, fallback: F): Promise<T | F> {
  let t: ReturnType<typeof setTimeout> | undefined;
  try {
    return await Promise.race([
      p,
      new Promise<F>((resolve) => {
        t = setTimeout(() => resolve(fallback), ms);
      }),
    ]);
  } finally {
    clearTimeout(t);
  }
}

/**
 * Retry a step with backoff (250 ms doubling to 5 s) for `timeoutMs`: right after a cluster restart
 * or in a failover JetStream answers "no responders" or times out until its streams have leaders
 * again. `retryIf` limits which errors are tried again (default: any, as at start-up).
 */
export async function withRetry<T>(
  what: string,
  f: () => Promise<T>,
  {
    timeoutMs = 60_000,
    log,
    retryIf,
    maxPauseMs = 5000,
  }: { timeoutMs?: number; log?: { warn(o: object, m: string): void }; retryIf?: (e: unknown) => boolean; maxPauseMs?: number } = {},
): Promise<T> {
  const end = Date.now() + timeoutMs;
  for (let wait = Math.min(250, maxPauseMs); ; wait = Math.min(wait * 2, maxPauseMs)) {
    try {
      return await f();
    } catch (e) {
      if (Date.now() + wait > end || (retryIf && !retryIf(e))) throw e;
      log?.warn({ err: (e as Error).message, retryInMs: wait }, `${what} failed; retrying`);
      await sleep(wait);
    }
  }
}

/** Whether a process with this pid exists (one of another user's counts: EPERM). */
export function processAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === 'EPERM';
  }
}
