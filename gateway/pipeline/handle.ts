// Running the route's handler, and turning whatever it throws into the API's error: an ApiError as
// it is; NATS not answering (a failover window) into 503 with Retry-After; anything else into a
// 500 that shows no internals (the log has them).
import { ApiError } from '../../shared/errors.ts';
import { isTransientNatsError, retryTransient } from '../../shared/nats/transient.ts';
import type { Logger } from '../../shared/log.ts';
import type { GatewayContext, Reply, Route, RouteRequest } from '../route.ts';

/**
 * Whether a read is asked again: NATS unanswered or timed out (no responders, JetStream 10008, a
 * timeout), or a service's 503 that says only that (micro.ts's `did not answer (failing over)`).
 * Not a 503 that carries Retry-After: the service answered and named its wait itself (the
 * supervisor catching up: `retry-after: 5`); asking again at once for 20 s only holds the client.
 */
export const readAgain = (e: unknown): boolean =>
  isTransientNatsError(e) || (e instanceof ApiError && e.code === 'service_unavailable' && !e.headers?.['retry-after']);

/**
 * A customer's GET reads only: asked again while NATS fails over (server.failoverRetryMs; issue
 * 45: a balance read answered 503 where the same read a second later, on the server the connection
 * moved to, was served). Not the routes without a key (/readyz must say "not ready" at once). Other
 * methods retry inside their handler, where it is known what is safe to repeat (gateway/jobs/retry.ts).
 */
export const handle = (route: Route, rq: RouteRequest, ctx: GatewayContext): Promise<Reply> =>
  route.method === 'GET' && route.auth
    ? retryTransient(() => route.handler(rq, ctx), ctx.config.server.failoverRetryMs, readAgain)
    : route.handler(rq, ctx);

export function asApiError(e: unknown, log: Logger, requestId: string, path: string): ApiError {
  if (e instanceof ApiError) return e;
  if (isTransientNatsError(e)) {
    // every step after a charge handles its own errors (gateway/jobs/create.ts), so nothing was
    // charged by this request
    log.warn({ err: e, reqId: requestId, path }, 'NATS did not answer; 503');
    return new ApiError(
      'service_unavailable',
      'the message system did not answer (failing over); nothing was charged; retry in a few seconds',
      {},
      { 'retry-after': '2' },
    );
  }
  log.error({ err: e, reqId: requestId, path }, 'handler failed');
  return new ApiError('internal', 'internal error');
}
