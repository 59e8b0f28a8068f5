// The HTTP pipeline, as ordered steps each in its own file (gateway/pipeline/): route (compiled once)
// → cors → read the bounded body → auth → limit → parse → validate → handle → reply, with one error
// shape for everything and one log line and metric per request.
import { randomUUID } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import type { HttpRequest, HttpResponse, TemplatedApp } from 'uWebSockets.js';
import { ApiError } from '../shared/errors.ts';
import { readBody, send, BodyTooLarge, type ResState } from './http.ts';
import type { GatewayContext, RateLimit, Route, RouteRequest } from './route.ts';
import type { Metrics } from './metrics.ts';
import { compileRouter } from './pipeline/router.ts';
import { commonHeaders, preflightHeaders } from './pipeline/cors.ts';
import { createAuth } from './pipeline/auth.ts';
import { setBalanceCopyLimit } from './balances.ts';
import { createLimit, rateLimitOf } from './pipeline/limit.ts';
import { declaredTooLarge, parseJsonBody, parseQuery } from './pipeline/parse.ts';
import { createValidatorCompiler, validateBody, validateQuery, type Validators } from './pipeline/validate.ts';
import { asApiError, handle } from './pipeline/handle.ts';
import { sendError, sendReply } from './pipeline/reply.ts';
import { buildFixedAnswer, writeFixedAnswer, type FixedAnswer } from './pipeline/fixed.ts';

export interface ServerOptions {
  ctx: GatewayContext;
  routes: Route[];
  metrics: Metrics;
  isReady: () => boolean;
}

interface CompiledRoute extends Validators {
  route: Route;
  rateLimit: RateLimit;
  /** The precomputed answer of a `fixedAnswer` route, once built, with its metric. */
  fixed?: { answer: FixedAnswer; observe: (seconds: number) => void };
}

/** A followed fixed answer whose rebuild failed is tried again after this long. */
const REBUILD_RETRY_MS = 1000;

const REQUEST_ID = /^[\w.-]{1,64}$/;
/** The path as logged and shown in messages; route parameters are decoded one by one (a key may hold %2F). */
const decodedPath = (raw: string) => { try { return decodeURI(raw); } catch { return raw; } };

/** Mount the pipeline; the returned stop ends what fixed answers follow (catalogue watches). */
export function mountRoutes(app: TemplatedApp, { ctx, routes, metrics }: ServerOptions): { stop(): void } {
  const { config, log } = ctx;
  const validators = createValidatorCompiler();
  const router = compileRouter(routes.map((route) => ({ method: route.method, path: route.path, target: { route, rateLimit: rateLimitOf(route), ...validators(route) } as CompiledRoute })));
  const authenticate = createAuth(ctx.kv.keys, { maxEntries: config.server.authCacheKeys });
  setBalanceCopyLimit(config.server.balanceCopyWallets);
  const limit = createLimit(config, ctx.kv.limits);
  const bodyBytes = config.limits.bodyBytes;
  const stops: (() => void)[] = [];
  let stopped = false;
  for (const r of routes) {
    if (!r.fixedAnswer) continue;
    const target = router.find(r.method, r.path)?.target;
    if (!target) continue;
    // until built (or while building failed) the route is served the ordinary way, by its handler
    let building = false;
    let again = false;
    const build = async () => {
      if (building) { again = true; return; }
      building = true;
      do {
        again = false;
        try {
          const answer = await buildFixedAnswer(r, ctx);
          target.fixed = { answer, observe: metrics.observer(r.path, r.method, answer.status) };
        } catch (err) {
          // never serve an answer older than a change we know of: the handler serves until a rebuild works
          target.fixed = undefined;
          log.warn({ err, route: r.path }, 'fixed answer not built; served by the handler');
          if (typeof r.fixedAnswer === 'object' && !stopped) setTimeout(() => void build(), REBUILD_RETRY_MS).unref();
        }
      } while (again && !stopped);
      building = false;
    };
    void build();
    if (typeof r.fixedAnswer === 'object') stops.push(r.fixedAnswer.follows(ctx, () => void build()));
  }
  const logsRequests = log.isLevelEnabled('info');

  /**
   * The hot path of a `fixedAnswer` GET: only the request id, the limit and the write. False when
   * the request is not one (or the limit refuses: the ordinary path then answers 429 in the one
   * error shape, taking no token a second time since a refusal takes none).
   */
  const fixedAnswerFor = (res: HttpResponse, req: HttpRequest, t0: number): boolean => {
    if (req.getMethod() !== 'get') return false;
    const rawUrl = req.getUrl();
    const match = router.find('GET', rawUrl);
    const fixed = match?.target.fixed;
    if (!fixed) return false;
    const xff = config.server.trustProxy ? req.getHeader('x-forwarded-for') : '';
    const ip = xff ? xff.split(',')[0]!.trim() : Buffer.from(res.getRemoteAddressAsText()).toString();
    try {
      limit(match.target.rateLimit, undefined, ip);
    } catch {
      return false;
    }
    const incomingId = req.getHeader('x-request-id');
    const requestId = incomingId && REQUEST_ID.test(incomingId) ? incomingId : randomUUID();
    writeFixedAnswer(res, fixed.answer, requestId);
    const ms = performance.now() - t0;
    fixed.observe(ms / 1000);
    if (logsRequests) log.info({ reqId: requestId, method: 'GET', path: decodedPath(rawUrl), route: match.target.route.path, status: fixed.answer.status, ms: Math.round(ms * 10) / 10, ip }, 'request');
    return true;
  };

  app.any('/*', (res: HttpResponse, req: HttpRequest) => {
    const t0 = performance.now();
    const fixed = fixedAnswerFor(res, req, t0);
    if (fixed) return;
    const state: ResState = { aborted: false, done: false };
    // made only for a handler that asks for the signal (long polls, events): most requests never do
    let ac: AbortController | undefined;
    const signalOf = () => {
      if (!ac) {
        ac = new AbortController();
        if (state.aborted) ac.abort();
      }
      return ac.signal;
    };
    res.onAborted(() => {
      state.aborted = true;
      ac?.abort();
      state.onAbort?.();
    });
    // HttpRequest is only valid synchronously: read everything now
    const method = req.getMethod().toUpperCase();
    const rawUrl = req.getUrl();
    const rawQuery = req.getQuery() ?? '';
    const headers: Record<string, string> = {};
    req.forEach((k, v) => { headers[k] = v; });
    const ip = config.server.trustProxy && headers['x-forwarded-for']
      ? headers['x-forwarded-for'].split(',')[0]!.trim()
      : Buffer.from(res.getRemoteAddressAsText()).toString();
    const incomingId = headers['x-request-id'];
    const requestId = incomingId && REQUEST_ID.test(incomingId) ? incomingId : randomUUID();
    const path = decodedPath(rawUrl);
    const match = router.find(method, rawUrl);
    const allowed = match ? undefined : router.allowed(rawUrl);
    const routeLabel = match?.target.route.path ?? (allowed!.length ? rawUrl : 'unmatched');
    const common = commonHeaders(requestId);
    const finish = (status: number) => {
      const ms = performance.now() - t0;
      metrics.observe(routeLabel, method, status, ms / 1000);
      if (logsRequests) log.info({ reqId: requestId, method, path, route: routeLabel, status, ms: Math.round(ms * 10) / 10, ip, aborted: state.aborted || undefined }, 'request');
    };
    const fail = (e: unknown, close = false) => finish(sendError(res, state, common, asApiError(e, log, requestId, path), ctx.baseUrl, close));

    if (method === 'OPTIONS' && (match || allowed!.length)) {
      send(res, state, 204, preflightHeaders(common, allowed ?? router.allowed(rawUrl)), '');
      return finish(204);
    }
    if (!match) {
      if (!allowed!.length) return fail(new ApiError('not_found', `no such path: ${path}`));
      return fail(new ApiError('method_not_allowed', `${method} is not allowed on ${path}; use ${allowed!.join(', ')}`, { allow: [...allowed!] }, { allow: [...allowed!, 'OPTIONS'].join(', ') }));
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
        else finish(499);
        return;
      }
      try {
        const rq: RouteRequest = { method: route.method, path, params: match.params, query: {}, body: undefined, headers, requestId, ip, get signal() { return signalOf(); } };
        if (route.auth) rq.auth = await authenticate(headers.authorization);
        // Only the shared job limit waits on NATS. Its write goes beside validation and the
        // handler's first reads (rq.limited; the handler awaits it before any effect); awaited here
        // too, so its refusal is answered before any other error, as if it had been awaited first.
        const limited = limit(rateLimit, rq.auth?.keyHash, ip);
        if (limited) {
          limited.catch(() => { /* awaited below */ });
          rq.limited = limited;
        }
        const outcome = await (async () => {
          if (query) rq.query = validateQuery(query, parseQuery(rawQuery));
          if (body) rq.body = validateBody(body, parseJsonBody(raw, headers['content-type']), route.bodyErrorCode);
          return handle(route, rq, ctx);
        })().then((reply) => ({ reply }), (error: unknown) => ({ error }));
        if (limited) await limited;
        if ('error' in outcome) throw outcome.error;
        const { reply } = outcome;
        if (state.aborted) return finish(499);
        finish(await sendReply(res, state, method === 'HEAD', common, reply));
      } catch (e) {
        if (!state.done) return fail(e);
        log.error({ err: e, reqId: requestId }, 'failed after the response started');
        finish(500);
      }
    })();
  });
  return {
    stop() {
      stopped = true;
      for (const stop of stops) stop();
    },
  };
}
