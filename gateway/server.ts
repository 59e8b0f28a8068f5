// The HTTP pipeline, as ordered steps each in its own file (gateway/pipeline/): fixed answers →
// request context (client address) → route → cors → bounded body → auth → limit → parse → validate →
// handle → reply, with one error shape for everything and one log line and metric per request.
import type { HttpRequest, HttpResponse, TemplatedApp } from 'uWebSockets.js';
import { ApiError } from '../shared/errors.ts';
import { readBody, send, BodyTooLarge } from './http.ts';
import type { GatewayContext, Route, RouteRequest } from './route.ts';
import type { Metrics } from './metrics.ts';
import { compileRouter } from './pipeline/router.ts';
import { preflightHeaders } from './pipeline/cors.ts';
import { createAuth } from './pipeline/auth.ts';
import { setBalanceCopyLimit } from './balances.ts';
import { createLimit, madeJob, rateLimitOf, type JobToken } from './pipeline/limit.ts';
import { declaredTooLarge, parseJsonBody, parseQuery } from './pipeline/parse.ts';
import { createValidatorCompiler, validateBody, validateQuery, type Validators } from './pipeline/validate.ts';
import { asApiError, handle } from './pipeline/handle.ts';
import { sendError, sendReply } from './pipeline/reply.ts';
import { buildFixedAnswers, createFixedPath, type FixedSlot } from './pipeline/fixed.ts';
import { createClientAddress } from './pipeline/address.ts';
import { cameThroughProxy } from './dev-guard.ts';
import { wasReplayed } from './idempotency.ts';
import { createFinish, readRequest, UNROUTED, withTiming } from './pipeline/request.ts';

export interface ServerOptions {
  ctx: GatewayContext;
  routes: Route[];
  metrics: Metrics;
  isReady: () => boolean;
}

type CompiledRoute = FixedSlot & Validators;

/** Mount the pipeline; the returned stop ends what fixed answers follow (catalogue watches). */
export function mountRoutes(app: TemplatedApp, { ctx, routes, metrics }: ServerOptions): { stop(): void } {
  const { config, log } = ctx;
  const validators = createValidatorCompiler();
  const router = compileRouter(
    routes.map((route) => ({
      method: route.method,
      path: route.path,
      target: { route, rateLimit: rateLimitOf(route), ...validators(route) } as CompiledRoute,
    })),
  );
  const authenticate = createAuth(ctx.kv.keys, { maxEntries: config.server.authCacheKeys, lookupRetryMs: config.server.failoverRetryMs });
  setBalanceCopyLimit(config.server.balanceCopyWallets);
  const { limit, unrouted } = createLimit(config, ctx.kv.limits);
  const addressOf = createClientAddress(config.server);
  const stopFixed = buildFixedAnswers(routes, router, ctx, metrics);
  const fixedPath = createFixedPath(router, limit, addressOf, ctx);
  const finish = createFinish(metrics, log);
  const bodyBytes = config.limits.bodyBytes;

  app.any('/*', (res: HttpResponse, req: HttpRequest) => {
    const t0 = performance.now();
    if (fixedPath(res, req, t0)) return;
    const c = readRequest(res, req, addressOf, t0);
    const { method, rawUrl, path, headers, state } = c;
    const match = router.find(method, rawUrl);
    const allowed = match ? undefined : router.allowed(rawUrl);
    const label = match?.target.route.path ?? (allowed!.length ? UNROUTED.wrongMethod : UNROUTED.notFound);
    // an answer given before the route's own limit costs the client address a token too
    let limited = false;
    const fail = (e: unknown, close = false) => {
      let err = asApiError(e, log, c.requestId, path);
      if (!limited) {
        limited = true;
        try {
          unrouted(c.client.group);
        } catch (refusal) {
          err = refusal as ApiError;
        }
      }
      finish(c, label, sendError(res, state, withTiming(c), err, ctx.baseUrl, close, method === 'HEAD'));
    };

    if (method === 'OPTIONS' && (match || allowed!.length)) {
      try {
        limited = true;
        unrouted(c.client.group);
      } catch (refusal) {
        return fail(refusal);
      }
      send(res, state, 204, preflightHeaders(c.common, allowed ?? router.allowed(rawUrl)), '');
      return finish(c, label, 204);
    }
    if (!match) {
      if (!allowed!.length) return fail(new ApiError('not_found', `no such path: ${path}`));
      return fail(
        new ApiError(
          'method_not_allowed',
          `${method} is not allowed on ${path}; use ${allowed!.join(', ')}`,
          { allow: [...allowed!] },
          { allow: [...allowed!, 'OPTIONS'].join(', ') },
        ),
      );
    }
    const { route, rateLimit, query, body } = match.target;
    let bodyRead: Promise<Buffer | null> | null = null;
    if (body) {
      // only routes that take a body read one, never past the limit; a declared size over it is answered at once
      const over = declaredTooLarge(headers['content-length'], bodyBytes);
      if (over) return fail(new ApiError('payload_too_large', over), true);
      bodyRead = readBody(res, state, bodyBytes);
    }

    void (async () => {
      let raw: Buffer | null = null;
      try {
        if (bodyRead) raw = await bodyRead;
      } catch (e) {
        if (e instanceof BodyTooLarge) fail(new ApiError('payload_too_large', `the body is larger than ${bodyBytes} bytes`), true);
        else finish(c, label, 499);
        return;
      }
      let token: Promise<JobToken> | undefined;
      try {
        const rq: RouteRequest = {
          method: route.method,
          path,
          params: match.params,
          query: {},
          body: undefined,
          headers,
          requestId: c.requestId,
          ip: c.client.ip,
          addressGroup: c.client.group,
          throughProxy: cameThroughProxy(headers, c.client.viaTrustedProxy),
          get signal() {
            return c.signal();
          },
        };
        if (route.auth) rq.auth = await authenticate(headers.authorization);
        // Only the shared job limit waits on NATS. Its write goes beside validation and the
        // handler's first reads (rq.limited; the handler awaits it before any effect); awaited here
        // too, so its refusal is answered before any other error, as if it had been awaited first.
        limited = true;
        const taken = limit(rateLimit, rq.auth?.keyHash, c.client.group);
        if (taken) {
          (token = taken).catch(() => {
            /* awaited below */
          });
          (rq.limited = token.then(() => undefined)).catch(() => {
            /* awaited below */
          });
        }
        const outcome = await (async () => {
          if (query) rq.query = validateQuery(query, parseQuery(c.rawQuery));
          if (body) rq.body = validateBody(body, parseJsonBody(raw, headers['content-type']), route.bodyErrorCode);
          return handle(route, rq, ctx);
        })().then(
          (reply) => ({ reply }),
          (error: unknown) => ({ error }),
        );
        const held = token && (await token);
        // only created jobs count: a creation that made none gives its token back before it answers,
        // and so does a replayed answer (Idempotency-Key): the job it names was counted when made
        if (held && (wasReplayed(outcome) || !madeJob('error' in outcome ? outcome.error : undefined)))
          await held.giveBack().catch((err) => log.warn({ err, reqId: c.requestId }, 'job token not given back'));
        if ('error' in outcome) throw outcome.error;
        if (state.aborted) return finish(c, label, 499);
        finish(c, label, await sendReply(res, state, method === 'HEAD', withTiming(c), outcome.reply));
      } catch (e) {
        if (!state.done) return fail(e);
        log.error({ err: e, reqId: c.requestId }, 'failed after the response started');
        finish(c, label, 500);
      }
    })();
  });
  return { stop: stopFixed };
}
