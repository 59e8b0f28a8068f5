// A throwaway real nats-server per test file: random port, temp store, removed at teardown.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startNatsServer, type NatsServerHandle } from '../../shared/nats/server.ts';
import { connectNats, type NatsConnection } from '../../shared/nats/connect.ts';
import { provision } from '../../shared/nats/provision.ts';
import { loadConfig, type Config } from '../../shared/config/index.ts';
import { createLogger } from '../../shared/log.ts';

export interface TestNats {
  server: NatsServerHandle;
  nc: NatsConnection;
  config: Config;
  /** Another connection (e.g. for a second actor instance). */
  connect(name?: string): Promise<NatsConnection>;
}

type Tap = { teardown(fn: () => unknown): void };

/** Folders made by tempDir in this process: removed when it exits (a test run left ~1,000 behind, 14,000 after a few). */
const made: string[] = [];
process.once('exit', () => {
  for (const d of made) {
    try {
      rmSync(d, { recursive: true, force: true });
    } catch {
      /* a process of the test may still write in it */
    }
  }
});

/** A new folder under the system's temp folder, removed when this process exits. */
export function tempDir(prefix = 'payloads-test-'): string {
  const d = mkdtempSync(join(tmpdir(), prefix));
  made.push(d);
  return d;
}

/** Test configuration: built-in defaults, loopback allowed for local fixtures, small timeouts. */
export function testConfig(overrides: Record<string, unknown> = {}, natsUrl = ''): Config {
  return loadConfig({
    env: {},
    noDefaultFile: true,
    overrides: deepMerge(
      {
        dataDir: tempDir('payloads-data-'),
        // a failure is answered at once (a test asserting a 503 does not wait out the retries);
        // the reliability scenarios' processes keep the default (test/reliability/partition.scenario.ts)
        server: { port: 0, logLevel: 'warn', failoverRetryMs: 0 },
        nats: { url: natsUrl },
        outbound: { allowCidrs: ['127.0.0.0/8', '::1/128'] },
        jobs: { ackWaitSeconds: 5, maxDeliver: 3 },
      },
      overrides,
    ),
  });
}

function deepMerge(a: Record<string, any>, b: Record<string, any>): Record<string, any> {
  const out = { ...a };
  for (const [k, v] of Object.entries(b)) {
    out[k] = v && typeof v === 'object' && !Array.isArray(v) && a[k] && typeof a[k] === 'object' ? deepMerge(a[k], v) : v;
  }
  return out;
}

export async function startTestNats(t: Tap, overrides: Record<string, unknown> = {}): Promise<TestNats> {
  // the server honours nats.syncInterval as main.ts does (default always: fsync before every ack)
  const syncInterval = (overrides.nats as { syncInterval?: string } | undefined)?.syncInterval;
  // a test's server that cannot start fails the test within a minute, not the 10 min a store may need
  const server = await startNatsServer({
    storeDir: tempDir('payloads-nats-'),
    port: -1,
    startTimeoutMs: 60_000,
    ...(syncInterval ? { syncInterval } : {}),
  });
  const config = testConfig(overrides, server.url);
  const conns: NatsConnection[] = [];
  const connect = async (name = 'test') => {
    const c = await connectNats(server.url, name);
    conns.push(c);
    return c;
  };
  const nc = await connect();
  await provision(nc, config);
  t.teardown(async () => {
    for (const c of conns) await c.close().catch(() => {});
    await server.destroy();
  });
  return { server, nc, config, connect };
}

export const testLog = () => createLogger('test', process.env.TEST_LOG_LEVEL ?? 'silent');
