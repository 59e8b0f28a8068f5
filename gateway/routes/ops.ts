// Operator endpoints: health, readiness, Prometheus metrics, and the errors page.
import type { Route, RouteDeps } from '../route.ts';
import { ApiError, ERRORS_PATH } from '../../shared/errors.ts';
import { errorsPage } from '../pages/errors.ts';

export function opsRoutes({ metrics, isReady }: RouteDeps): Route[] {
  return [
    {
      method: 'GET',
      path: '/healthz',
      auth: false,
      rateLimit: 'none',
      hidden: true,
      tags: ['ops'],
      summary: 'Liveness',
      errors: [],
      responses: { 200: { description: 'The process is up' } },
      handler: async () => ({ json: { ok: true } }),
    },
    {
      method: 'GET',
      path: '/readyz',
      auth: false,
      rateLimit: 'none',
      hidden: true,
      tags: ['ops'],
      summary: 'Readiness: NATS connected and provisioned',
      errors: ['service_unavailable'],
      responses: { 200: { description: 'Ready' } },
      handler: async (_req, ctx) => {
        if (!isReady()) throw new ApiError('service_unavailable', 'not ready: NATS or provisioning is not up');
        try {
          await ctx.nc.flush();
        } catch {
          throw new ApiError('service_unavailable', 'not ready: NATS does not answer');
        }
        return { json: { ready: true, nats: ctx.nc.getServer() } };
      },
    },
    {
      method: 'GET',
      path: '/metrics',
      auth: false,
      rateLimit: 'none',
      hidden: true,
      tags: ['ops'],
      summary: 'Prometheus metrics',
      errors: [],
      responses: { 200: { description: 'Prometheus text format', contentType: 'text/plain' } },
      handler: async () => ({ body: await metrics.registry.metrics(), headers: { 'content-type': metrics.registry.contentType } }),
    },
    {
      method: 'GET',
      path: ERRORS_PATH,
      auth: false,
      hidden: true,
      tags: ['docs'],
      summary: 'Errors reference',
      errors: [],
      responses: { 200: { description: 'HTML page', contentType: 'text/html' } },
      handler: async (_req, ctx) => ({
        body: errorsPage(ctx.baseUrl),
        headers: { 'content-type': 'text/html; charset=utf-8', 'cache-control': 'public, max-age=300' },
      }),
    },
  ];
}
