// The gateway pipeline (gateway/server.ts) mounted with routes of a test's choosing, on a real
// uWebSockets.js app and a real NATS: exercises auth, limits, bodies and errors in isolation.
import { Kvm } from '@nats-io/kv';
import { jetstream } from '@nats-io/jetstream';
import { loadNativeUws } from '../../gateway/uws.ts';
import { mountRoutes } from '../../gateway/server.ts';
import { createMetrics } from '../../gateway/metrics.ts';
import type { GatewayContext, Route } from '../../gateway/route.ts';
import { BUCKETS } from '../../shared/names.ts';
import { startTestNats, testLog } from './nats.ts';
import { createKey } from '../../shared/keys.ts';

type Tap = { teardown(fn: () => unknown): void };

export async function startPipeline(t: Tap, routes: Route[], config: Record<string, unknown> = {}, log: GatewayContext['log'] = testLog()) {
  const tn = await startTestNats(t, config);
  const { uws } = loadNativeUws();
  const kvm = new Kvm(tn.nc);
  const open = (b: string) => kvm.open(b);
  const ctx: GatewayContext = {
    nc: tn.nc,
    js: jetstream(tn.nc),
    config: tn.config,
    log,
    baseUrl: 'http://localhost',
    accountUrl: 'http://localhost/account',
    docsUrl: 'http://localhost/docs/errors',
    kv: {
      keys: await open(BUCKETS.keys),
      jobs: await open(BUCKETS.jobs),
      catalogue: await open(BUCKETS.catalogue),
      limits: await open(BUCKETS.limits),
      datasets: await open(BUCKETS.datasets),
      topups: await open(BUCKETS.topups),
    },
  };
  const app = uws.App();
  const mounted = mountRoutes(app, { ctx, routes, metrics: createMetrics(), isReady: () => true });
  let sock: unknown;
  const port: number = await new Promise((res, rej) =>
    app.listen('127.0.0.1', 0, (s) => (s ? ((sock = s), res(uws.us_socket_local_port(s))) : rej(new Error('listen')))),
  );
  t.teardown(() => {
    mounted.stop();
    uws.us_listen_socket_close(sock as never);
  });
  const url = `http://127.0.0.1:${port}`;
  return { ...tn, ctx, url, port, newKey: () => createKey(tn.nc, 'admin') };
}
