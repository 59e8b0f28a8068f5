// Start a throwaway system for a test: a real nats-server, chosen actors, and the gateway on a
// random port; everything is stopped at teardown. `request()` speaks real HTTP to it.
import { startTestNats, testLog, type TestNats } from './nats.ts';
import { startGateway, type GatewayHandle } from '../../gateway/index.ts';
import { ACTORS } from '../../actors/index.ts';
import type { ActorName, ActorHandle } from '../../shared/actor.ts';
import { createKey } from '../../shared/keys.ts';
import { wallet } from '../../shared/protocol/wallet.ts';

type Tap = { teardown(fn: () => unknown): void };

export interface TestApp extends TestNats {
  gateway: GatewayHandle;
  url: string;
  actors: Map<string, ActorHandle>;
  /** Start one more actor instance (its own connection). */
  startActor(name: ActorName, overrides?: Partial<TestNats['config']>): Promise<ActorHandle>;
  request(
    method: string,
    path: string,
    opts?: { key?: string; body?: unknown; raw?: string | Buffer; headers?: Record<string, string> },
  ): Promise<{ status: number; headers: Headers; json: any; text: string }>;
  newKey(): Promise<{ key: string; walletId: string }>;
}

export async function startTestApp(t: Tap, opts: { actors?: ActorName[]; config?: Record<string, unknown> } = {}): Promise<TestApp> {
  const base = await startTestNats(t, opts.config ?? {});
  const actors = new Map<string, ActorHandle>();
  let n = 0;
  const startActor = async (name: ActorName, overrides: Partial<TestNats['config']> = {}) => {
    const nc = await base.connect(name);
    const { start } = await ACTORS[name]();
    const h = await start({ nc, config: { ...base.config, ...overrides }, log: testLog(), instanceId: `${name}-test-${++n}` });
    actors.set(`${name}#${n}`, h);
    return h;
  };
  for (const a of opts.actors ?? []) await startActor(a);
  const gnc = await base.connect('gateway');
  const gateway = await startGateway({ nc: gnc, config: base.config, log: testLog(), instanceId: 'gateway-test' });
  t.teardown(async () => {
    await gateway.stop();
    for (const h of [...actors.values()].reverse()) await h.stop().catch(() => {});
  });
  const url = `http://127.0.0.1:${gateway.port}`;
  return {
    ...base,
    gateway,
    url,
    actors,
    startActor,
    newKey: () => createKey(base.nc, 'admin'),
    async request(method, path, o = {}) {
      const headers: Record<string, string> = { ...(o.headers ?? {}) };
      if (o.key) headers.authorization = `Bearer ${o.key}`;
      let body: string | Uint8Array | undefined = typeof o.raw === 'string' || o.raw === undefined ? o.raw : new Uint8Array(o.raw);
      if (o.body !== undefined) {
        body = JSON.stringify(o.body);
        headers['content-type'] ??= 'application/json';
      }
      const res = await fetch(url + path, { method, headers, body: body as BodyInit | undefined });
      const text = await res.text();
      let json: any;
      try {
        json = JSON.parse(text);
      } catch {
        json = undefined;
      }
      return { status: res.status, headers: res.headers, json, text };
    },
  };
}

/**
 * The websitepro actors on loopback targets (wallet, job-supervisor, converter) and, with `browser`,
 * browser-pool with Chromium; a key whose wallet holds `grant` Payloads.
 */
export async function startWebsiteproApp(t: Tap, browser: boolean, grant = 100_000) {
  const app = await startTestApp(t, {
    actors: ['wallet', 'job-supervisor', 'converter', ...(browser ? (['browser-pool'] as const) : [])],
    config: {
      outbound: { allowCidrs: ['127.0.0.1/32'] },
      ...(browser ? { shots: { browsers: ['chromium'], concurrency: 1, pageTimeoutMs: 30000 } } : {}),
    },
  });
  const k = await app.newKey();
  await wallet.grant(app.nc, k.walletId, grant, 'test');
  return { app, key: k.key, walletId: k.walletId };
}
