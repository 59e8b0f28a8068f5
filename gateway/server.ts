// The HTTP pipeline: match route → read bounded body → auth → rate limit → validate → handler →
// reply, with one error shape for everything and one log line per request.
import { randomUUID } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import type { HttpRequest, HttpResponse, TemplatedApp } from 'uWebSockets.js';
import { Ajv, type ValidateFunction, type ErrorObject } from 'ajv';
import addFormats from 'ajv-formats';
import { ApiError, errorDocUrl } from '../shared/errors.ts';
import { isTransientNatsError } from '../shared/nats/transient.ts';
import { COMPONENTS } from '../shared/schemas/api.ts';
import { lookupKey } from '../shared/keys.ts';
import { hashKey } from '../shared/ids.ts';
import { takeToken, LocalLimiter } from '../shared/limits.ts';
import { readBody, send, sendStream, BodyTooLarge, type ResState } from './http.ts';
import type { GatewayContext, Method, Reply, Route, RouteRequest } from './route.ts';
import type { Metrics } from './metrics.ts';

interface CompiledRoute {
  route: Route;
  pattern: RegExp;
  names: string[];
  body?: ValidateFunction;
  query?: ValidateFunction;
}

const HOUR = 3600_000;
const MINUTE = 60_000;

function compilePath(path: string): { pattern: RegExp; names: string[] } {
  const names: string[] = [];
  const re = path.replace(/[.+?^${}()|[\]\\]/g, '\\$&').replace(/:(\w+)/g, (_, n: string) => {
    names.push(n);
    return '([^/]+)';
  });
  return { pattern: new RegExp(`^${re}/?$`), names };
}

function makeAjv(coerce: boolean): Ajv {
  const ajv = new Ajv({ allErrors: false, coerceTypes: coerce, useDefaults: true, strict: false });
  (addFormats as unknown as (a: Ajv) => void)(ajv);
  for (const s of COMPONENTS) ajv.addSchema(s);
  return ajv;
}

function describe(err: ErrorObject): string {
  const where = err.instancePath ? err.instancePath.slice(1).replaceAll('/', '.') : 'body';
  if (err.keyword === 'required') return `${where === 'body' ? '' : where + '.'}${(err.params as { missingProperty: string }).missingProperty} is required`;
  if (err.keyword === 'additionalProperties') return `${where} has an unknown field ${(err.params as { additionalProperty: string }).additionalProperty}`;
  return `${where} ${err.message}`;
}

export interface ServerOptions {
  ctx: GatewayContext;
  routes: Route[];
  metrics: Metrics;
  isReady: () => boolean;
}

export function mountRoutes(app: TemplatedApp, opts: ServerOptions) {
  const { ctx, metrics } = opts;
  const { config, log } = ctx;
  const bodyAjv = makeAjv(false);
  const queryAjv = makeAjv(true);
  const compiled: CompiledRoute[] = opts.routes.map((route) => ({
    route,
    ...compilePath(route.path),
    ...(route.body ? { body: bodyAjv.compile(route.body) } : {}),
    ...(route.query ? { query: queryAjv.compile(route.query) } : {}),
  }));
  const authCache = new Map<string, { walletId: string; until: number }>();

  const errorReply = (e: ApiError, requestId: string) => ({
    status: e.status,
    headers: { 'content-type': 'application/json', ...(e.headers ?? {}) },
    body: JSON.stringify({ error: { ...e.toJSON(), docs: errorDocUrl(ctx.baseUrl, e.code), requestId } }),
  });

  async function authenticate(header: string | undefined): Promise<{ walletId: string; keyHash: string }> {
    const m = /^Bearer\s+(\S+)\s*$/i.exec(header ?? '');
    if (!m) throw new ApiError('unauthorized', header ? 'Authorization must be `Bearer <key>`' : 'Authorization header missing');
    const keyHash = hashKey(m[1]!);
    const hit = authCache.get(keyHash);
    if (hit && hit.until > Date.now()) return { walletId: hit.walletId, keyHash };
    const rec = await lookupKey(ctx.kv.keys, m[1]!);
    if (!rec) throw new ApiError('unauthorized', 'unknown API key');
    if (authCache.size > 10000) authCache.clear();
    authCache.set(keyHash, { walletId: rec.walletId, until: Date.now() + 30_000 });
    return { walletId: rec.walletId, keyHash };
  }

  const refuse = (retryAfter: number) => new ApiError('rate_limited', `too many requests; retry in ${retryAfter} s`, { retryAfter }, { 'retry-after': String(retryAfter) });
  // job creation: shared by every gateway through NATS; the rest: per instance, in memory
  async function limitJobs(keyHash: string) {
    const d = await takeToken(ctx.kv.limits, 'jobs', keyHash, config.limits.jobsPerHour, HOUR);
    if (!d.allowed) throw refuse(d.retryAfter);
  }
  const perKey = new LocalLimiter(config.server.keyRequestsPerMinute, MINUTE);
  const perIp = new LocalLimiter(config.server.publicRequestsPerMinute, MINUTE);
  const limitLocal = (l: LocalLimiter, id: string) => {
    const d = l.take(id);
    if (!d.allowed) throw refuse(d.retryAfter);
  };

  app.any('/*', (res: HttpResponse, req: HttpRequest) => {
    const t0 = performance.now();
    const state: ResState = { aborted: false, done: false };
    const ac = new AbortController();
    res.onAborted(() => {
      state.aborted = true;
      ac.abort();
    });
    // HttpRequest is only valid synchronously: read everything now.
    const method = req.getMethod().toUpperCase();
    const rawUrl = req.getUrl();
    const rawQuery = req.getQuery() ?? '';
    const headers: Record<string, string> = {};
    req.forEach((k, v) => { headers[k] = v; });
    const ip = config.server.trustProxy && headers['x-forwarded-for']
      ? headers['x-forwarded-for'].split(',')[0]!.trim()
      : Buffer.from(res.getRemoteAddressAsText()).toString();
    const incomingId = headers['x-request-id'];
    const requestId = incomingId && /^[\w.-]{1,64}$/.test(incomingId) ? incomingId : randomUUID();

    let path: string;
    try {
      path = decodeURI(rawUrl);
    } catch {
      path = rawUrl;
    }
    const segments = rawUrl; // params are decoded one by one (keys may hold %2F)
    let match: CompiledRoute | undefined;
    let params: Record<string, string> = {};
    const allowed = new Set<string>();
    const lookupMethod = method === 'HEAD' ? 'GET' : method;
    for (const c of compiled) {
      const m = c.pattern.exec(segments);
      if (!m) continue;
      allowed.add(c.route.method);
      if (c.route.method !== lookupMethod || match) continue;
      match = c;
      try {
        params = Object.fromEntries(c.names.map((n, i) => [n, decodeURIComponent(m[i + 1]!)]));
      } catch {
        params = Object.fromEntries(c.names.map((n, i) => [n, m[i + 1]!]));
      }
    }
    const routeLabel = match?.route.path ?? (allowed.size ? rawUrl : 'unmatched');
    const common: Record<string, string> = { 'x-request-id': requestId, 'access-control-allow-origin': '*', 'access-control-expose-headers': 'x-request-id, retry-after, content-disposition' };

    const finish = (status: number) => {
      const ms = performance.now() - t0;
      metrics.observe(routeLabel, method, status, ms / 1000);
      log.info({ reqId: requestId, method, path, route: routeLabel, status, ms: Math.round(ms * 10) / 10, ip, aborted: state.aborted || undefined }, 'request');
    };
    const fail = (e: unknown) => {
      let err: ApiError;
      if (e instanceof ApiError) err = e;
      else if (isTransientNatsError(e)) {
        // a failover window: NATS did not answer. Every step after a charge handles its own errors
        // (gateway/jobs/create.ts), so nothing was charged by this request.
        log.warn({ err: e, reqId: requestId, path }, 'NATS did not answer; 503');
        err = new ApiError('service_unavailable', 'the message system did not answer (failing over); nothing was charged; retry in a few seconds', {}, { 'retry-after': '2' });
      } else {
        log.error({ err: e, reqId: requestId, path }, 'handler failed');
        err = new ApiError('internal', 'internal error');
      }
      const r = errorReply(err, requestId);
      send(res, state, r.status, { ...common, ...r.headers }, r.body);
      finish(r.status);
    };

    /** 413, then close the connection so the client stops sending. */
    const tooLarge = (message: string) => {
      const r = errorReply(new ApiError('payload_too_large', message), requestId);
      send(res, state, r.status, { ...common, ...r.headers }, r.body, true);
      finish(413);
    };

    if (method === 'OPTIONS' && allowed.size) {
      send(res, state, 204, { ...common, allow: [...allowed, 'OPTIONS'].join(', '), 'access-control-allow-methods': [...allowed, 'OPTIONS'].join(', '), 'access-control-allow-headers': 'authorization, content-type, x-request-id', 'access-control-max-age': '600' }, '');
      finish(204);
      return;
    }
    if (!match) {
      if (allowed.size) {
        const e = new ApiError('method_not_allowed', `${method} is not allowed on ${path}; use ${[...allowed].join(', ')}`, { allow: [...allowed] }, { allow: [...allowed, 'OPTIONS'].join(', ') });
        fail(e);
      } else {
        fail(new ApiError('not_found', `no such path: ${path}`));
      }
      return;
    }
    const route = match.route;

    // Body: only routes that take one read it, and never past the limit.
    let bodyPromise: Promise<Buffer | null> = Promise.resolve(null);
    if (route.body) {
      const limitBytes = config.limits.bodyBytes;
      const declared = Number(headers['content-length'] ?? NaN);
      if (Number.isFinite(declared) && declared > limitBytes) {
        // answer now: reading on would only waste the limit
        tooLarge(`the body is ${declared} bytes; at most ${limitBytes} are accepted`);
        return;
      }
      bodyPromise = readBody(res, state, limitBytes);
    }

    void (async () => {
      let raw: Buffer | null;
      try {
        raw = await bodyPromise;
      } catch (e) {
        if (e instanceof BodyTooLarge) tooLarge(`the body is larger than ${config.limits.bodyBytes} bytes`);
        else finish(499);
        return;
      }
      try {
        const rq: RouteRequest = { method: route.method as Method, path, params, query: {}, body: undefined, headers, requestId, ip, signal: ac.signal };
        if (route.auth) {
          rq.auth = await authenticate(headers.authorization);
          if (route.limit === 'jobs') await limitJobs(rq.auth.keyHash);
          else limitLocal(perKey, rq.auth.keyHash);
        } else if (!route.tags.includes('ops')) {
          // health and metrics stay unlimited for probes and scrapers
          limitLocal(perIp, ip);
        }
        if (match!.query) {
          const q: Record<string, string> = {};
          for (const [k, v] of new URLSearchParams(rawQuery)) if (!(k in q)) q[k] = v;
          if (!match!.query(q)) throw new ApiError('bad_request', `query: ${describe(match!.query.errors![0]!).replace(/^body/, 'query')}`);
          // coercion turns "Infinity" and "1e400" into Infinity, which JSON Schema calls a number
          for (const [k, v] of Object.entries(q as Record<string, unknown>)) {
            if (typeof v === 'number' && !Number.isFinite(v)) throw new ApiError('bad_request', `query: ${k} must be a finite number`);
          }
          rq.query = q;
        }
        if (route.body) {
          const ct = (headers['content-type'] ?? '').toLowerCase();
          if (!raw || raw.length === 0) throw new ApiError('bad_request', 'a JSON body is required');
          if (ct && !ct.startsWith('application/json') && !/\+json\b/.test(ct)) throw new ApiError('unsupported_media_type', `send the body as application/json, not ${ct.split(';')[0]}`);
          let parsed: unknown;
          try {
            parsed = JSON.parse(raw.toString('utf8'));
          } catch (e) {
            throw new ApiError('bad_request', `malformed JSON: ${(e as Error).message}`);
          }
          if (!match!.body!(parsed)) {
            const first = match!.body!.errors![0]!;
            const code = route.bodyErrorCode?.(first) ?? 'bad_request';
            throw new ApiError(code, describe(first), { field: first.instancePath || undefined });
          }
          rq.body = parsed;
        }
        const reply: Reply = await route.handler(rq, ctx);
        if (state.aborted) {
          finish(499);
          return;
        }
        const status = reply.status ?? 200;
        if ('json' in reply) {
          send(res, state, status, { ...common, 'content-type': 'application/json', ...(reply.headers ?? {}) }, JSON.stringify(reply.json));
        } else if ('stream' in reply) {
          await sendStream(res, state, status, { ...common, ...reply.headers }, reply.stream, reply.length);
        } else {
          send(res, state, status, { ...common, ...reply.headers }, method === 'HEAD' ? '' : reply.body);
        }
        finish(status);
      } catch (e) {
        if (state.done) {
          log.error({ err: e, reqId: requestId }, 'failed after the response started');
          finish(500);
          return;
        }
        fail(e);
      }
    })();
  });
}

