// Process plumbing shared by the launcher (main.ts) and the admin CLI: config, the NATS address,
// signals.
import { existsSync, readFileSync, writeFileSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { hostname } from 'node:os';
import { randomBytes } from 'node:crypto';
import { setTimeout as timer } from 'node:timers/promises';
import { loadConfig, ConfigError, type Config } from './config/index.ts';

export function loadConfigOrExit(): Config {
  try {
    return loadConfig();
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

/** Run `stop` once on SIGINT/SIGTERM, then exit. A second signal exits at once. */
export function onShutdown(stop: () => Promise<void>) {
  let stopping = false;
  const handler = (sig: string) => {
    if (stopping) process.exit(130);
    stopping = true;
    console.error(`\n${sig}: stopping...`);
    stop().then(() => process.exit(0), (e) => {
      console.error(e);
      process.exit(1);
    });
  };
  process.on('SIGINT', () => handler('SIGINT'));
  process.on('SIGTERM', () => handler('SIGTERM'));
}

/** The one sleep: resolves after `ms`, or rejects with an AbortError when `signal` aborts first. */
export const sleep = (ms: number, signal?: AbortSignal): Promise<void> => timer(ms, undefined, signal ? { signal } : undefined);

/**
 * Retry a step with backoff (250 ms doubling to 5 s) for `timeoutMs`: right after a cluster restart
 * or in a failover JetStream answers "no responders" or times out until its streams have leaders
 * again. `retryIf` limits which errors are tried again (default: any, as at start-up).
 */
export async function withRetry<T>(what: string, f: () => Promise<T>, { timeoutMs = 60_000, log, retryIf }: { timeoutMs?: number; log?: { warn(o: object, m: string): void }; retryIf?: (e: unknown) => boolean } = {}): Promise<T> {
  const end = Date.now() + timeoutMs;
  for (let wait = 250; ; wait = Math.min(wait * 2, 5000)) {
    try {
      return await f();
    } catch (e) {
      if (Date.now() + wait > end || (retryIf && !retryIf(e))) throw e;
      log?.warn({ err: (e as Error).message, retryInMs: wait }, `${what} failed; retrying`);
      await sleep(wait);
    }
  }
}
