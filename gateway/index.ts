// The gateway actor: uWebSockets.js (native only) serving the routes of gateway/routes/.
import { jetstream } from '@nats-io/jetstream';
import { Kvm } from '@nats-io/kv';
import type { ActorContext } from '../shared/actor.ts';
import { BUCKETS, subjects } from '../shared/names.ts';
import { jobsReads, provision } from '../shared/nats/provision.ts';
import { withRetry } from '../shared/runtime.ts';
import { ERRORS_PATH } from '../shared/errors.ts';
import { loadNativeUws } from './uws.ts';
import { devTopupGuard, modeSummary } from './dev-guard.ts';
import { mountRoutes } from './server.ts';
import { createMetrics } from './metrics.ts';
import { allRoutes } from './routes/index.ts';
import type { GatewayContext } from './route.ts';
import { jobWatchOf } from './jobs/index.ts';

export interface GatewayHandle {
  port: number;
  url: string;
  accountUrl: string;
  docsUrl: string;
  /** The mode and what it means, as `npm start` prints it (dev-guard.ts modeSummary). */
  mode: string[];
  stop(): Promise<void>;
}

export async function startGateway(actx: ActorContext): Promise<GatewayHandle> {
  const { uws, from } = loadNativeUws();
  const { nc, config, log } = actx;
  const dev = devTopupGuard(config);
  if (dev.refuse) throw new Error(`gateway: ${dev.refuse}`);
  if (dev.warn) log.warn(`gateway: ${dev.warn}`);
  let ready = false;
  await withRetry('provisioning', () => provision(nc, config), { log });
  const kvm = new Kvm(nc);
  const [keys, jobs, catalogue, limits, datasets, topups] = await withRetry(
    'buckets',
    () =>
      Promise.all([
        kvm.open(BUCKETS.keys),
        // direct gets where the bucket allows them (one replica: shared/nats/provision.ts)
        kvm.open(BUCKETS.jobs, jobsReads(config)),
        kvm.open(BUCKETS.catalogue),
        kvm.open(BUCKETS.limits),
        kvm.open(BUCKETS.datasets),
        kvm.open(BUCKETS.topups),
      ]),
    { log },
  );
  const metrics = createMetrics();
  const app = uws.App();

  let listenSocket: unknown = null;
  // a gateway restarted in place may find its port held for a moment (connections of the one before)
  const port: number = await withRetry(
    'listen',
    () =>
      new Promise<number>((resolve, reject) => {
        app.listen(config.server.host, config.server.port, (s) => {
          if (!s) return reject(new Error(`gateway: cannot listen on ${config.server.host}:${config.server.port}`));
          listenSocket = s;
          resolve(uws.us_socket_local_port(s));
        });
      }),
    { timeoutMs: 15_000, log },
  );
  // port 0 picks a free port; the default base URL then names the real one
  const baseUrl = config.server.baseUrl.replace(/:0$/, `:${port}`);
  const ctx: GatewayContext = {
    nc,
    js: jetstream(nc),
    config,
    log,
    baseUrl,
    accountUrl: `${baseUrl}/account`,
    docsUrl: `${baseUrl}${ERRORS_PATH}`,
    kv: { keys, jobs, catalogue, limits, datasets, topups },
  };
  const mounted = mountRoutes(app, {
    ctx,
    routes: allRoutes({ metrics, isReady: () => ready && !nc.isClosed() }),
    metrics,
    isReady: () => ready,
  });

  // job transitions for the metrics
  const evtSub = nc.subscribe(subjects.evtJobAll, {
    callback: (err, msg) => {
      if (err) return;
      try {
        const e = msg.json<{ service?: string; status?: string }>();
        if (e.service && e.status) metrics.job(e.service, e.status);
      } catch {
        /* not ours */
      }
    },
  });
  ready = true;
  log.info({ port, uws: from }, 'gateway listening');
  return {
    port,
    url: baseUrl,
    accountUrl: ctx.accountUrl,
    docsUrl: ctx.docsUrl,
    mode: modeSummary(config),
    async stop() {
      ready = false;
      evtSub.unsubscribe();
      jobWatchOf(jobs).stop();
      mounted.stop();
      if (listenSocket) uws.us_listen_socket_close(listenSocket as never);
      listenSocket = null;
    },
  };
}
