// Helpers of the reliability tests: the distributed system (scripts/cluster-lib.ts, the same code as
// `npm run cluster`) with test settings, HTTP against its gateway, and bounded waiting.
import { setTimeout as sleep } from 'node:timers/promises';
import {
  startSystem,
  startNatsCluster,
  type NatsCluster,
  type System,
  type ProcessName,
  type SystemOptions,
} from '../../scripts/cluster-lib.ts';
import { connectNats, type NatsConnection } from '../../shared/nats/connect.ts';
import { provision } from '../../shared/nats/provision.ts';
import type { Config } from '../../shared/config/index.ts';
import { tempDir, testConfig } from './nats.ts';

type Tap = { teardown(fn: () => unknown): void };

/** Retry `fn` until it resolves or `ms` pass (failover windows answer "no responders" for a moment). */
export async function retry<T>(fn: () => Promise<T>, ms = 20000, pauseMs = 200): Promise<T> {
  const deadline = Date.now() + ms;
  for (;;) {
    try {
      return await fn();
    } catch (e) {
      if (Date.now() > deadline) throw e;
      await sleep(pauseMs);
    }
  }
}

/** Poll `fn` until it returns a truthy value, or throw after `ms`. */
export async function until<T>(what: string, fn: () => Promise<T | undefined | null | false>, ms = 30000, pauseMs = 200): Promise<T> {
  const deadline = Date.now() + ms;
  let last: unknown;
  while (Date.now() < deadline) {
    try {
      const v = await fn();
      if (v) return v;
    } catch (e) {
      last = e;
    }
    await sleep(pauseMs);
  }
  throw new Error(`timed out after ${ms} ms waiting for ${what}${last ? `: ${String((last as Error).message ?? last)}` : ''}`);
}

/** Settings of the test system that have no environment variable: loopback targets, short redelivery. */
export function testSystemConfig(extra: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    outbound: { allowCidrs: ['127.0.0.0/8', '::1/128'] },
    jobs: { ackWaitSeconds: 5, maxDeliver: 4 },
    ...extra,
  };
}

export async function startTestSystem(t: Tap, o: Partial<SystemOptions> & { processes: ProcessName[] }): Promise<System> {
  const sys = await startSystem({
    dataDir: tempDir('payloads-sys-'),
    logLevel: process.env.TEST_LOG_LEVEL ?? 'warn',
    ...o,
    config: testSystemConfig(o.config ?? {}),
  });
  t.teardown(() => sys.stop());
  return sys;
}

export interface TestCluster {
  cluster: NatsCluster;
  /** Test settings with `nats.replicas` 3 and the cluster's URL; everything provisioned. */
  config: Config;
  /** A connection to node `i` only (0..2), or to any node; closed at teardown. */
  connect(i?: number, name?: string): Promise<NatsConnection>;
}

/** A throwaway 3-node nats-server cluster (no actors), provisioned with 3 replicas. */
export async function startTestCluster(t: Tap, overrides: Record<string, unknown> = {}): Promise<TestCluster> {
  const cluster = await startNatsCluster({ dataDir: tempDir('payloads-cluster-') });
  const conns: NatsConnection[] = [];
  t.teardown(async () => {
    for (const c of conns) await c.close().catch(() => {});
    await cluster.stop();
  });
  const config = testConfig({ ...overrides, nats: { url: cluster.url, replicas: 3 } }, cluster.url);
  const connect = async (i?: number, name = 'test') => {
    const c = await connectNats(i === undefined ? cluster.url : cluster.nodes[i]!.url, name);
    conns.push(c);
    return c;
  };
  // a fresh cluster elects its meta leader and learns its peers in a few seconds, much longer on a
  // loaded 2-core machine (a 20 s budget ran out once in CI); the service's own start-up waits 60 s
  const provisioner = await retry(() => connect(0, 'provision'));
  await retry(() => provision(provisioner, config), 60_000, 500);
  return { cluster, config, connect };
}

export interface HttpAnswer {
  status: number;
  headers: Headers;
  json: any;
  text: string;
}

export async function http(
  base: string,
  method: string,
  path: string,
  o: { key?: string; body?: unknown; raw?: string | Uint8Array; headers?: Record<string, string>; timeoutMs?: number } = {},
): Promise<HttpAnswer> {
  const headers: Record<string, string> = { ...(o.headers ?? {}) };
  if (o.key) headers.authorization = `Bearer ${o.key}`;
  let body: string | Buffer | undefined = o.raw === undefined || typeof o.raw === 'string' ? o.raw : Buffer.from(o.raw);
  if (o.body !== undefined) {
    body = JSON.stringify(o.body);
    headers['content-type'] ??= 'application/json';
  }
  const res = await fetch(base + path, {
    method,
    headers,
    body: body as RequestInit['body'],
    signal: AbortSignal.timeout(o.timeoutMs ?? 40000),
  });
  const text = await res.text();
  let json: any;
  try {
    json = JSON.parse(text);
  } catch {
    json = undefined;
  }
  return { status: res.status, headers: res.headers, json, text };
}
