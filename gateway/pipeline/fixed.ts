// Fixed answers: a route whose answer is the same for every caller (`fixedAnswer`) has its status
// line, headers and body built at start, and again whenever what it follows changes (the live
// catalogue for GET /v1/services); a request then costs the limit, the request id and one corked
// write, near what a bare uWebSockets.js handler costs.
import { performance } from 'node:perf_hooks';
import type { HttpRequest, HttpResponse } from 'uWebSockets.js';
import { statusLine } from '../http.ts';
import type { GatewayContext, RateLimit, Route, RouteRequest } from '../route.ts';
import type { Metrics } from '../metrics.ts';
import type { Router } from './router.ts';
import type { Limit } from './limit.ts';
import type { ClientAddressOf } from './address.ts';
import { commonHeaders } from './cors.ts';
import { clientAddressOf, decodedPath, requestIdOf } from './request.ts';

export interface FixedAnswer {
  status: number;
  statusLine: string;
  /** Every header but the request id, in write order. */
  headers: [string, string][];
  body: Buffer;
}

/** Run the route's handler once, with no caller, and keep its answer as bytes. */
export async function buildFixedAnswer(route: Route, ctx: GatewayContext): Promise<FixedAnswer> {
  const rq: RouteRequest = {
    method: route.method,
    path: route.path,
    params: {},
    query: {},
    body: undefined,
    headers: {},
    requestId: '',
    ip: '',
    addressGroup: '',
    signal: new AbortController().signal,
  };
  const reply = await route.handler(rq, ctx);
  if (!('json' in reply)) throw new Error(`route ${route.method} ${route.path}: a fixed answer must be JSON`);
  const status = reply.status ?? 200;
  const { 'x-request-id': _id, ...common } = commonHeaders('');
  const headers = Object.entries({ ...common, 'content-type': 'application/json', ...reply.headers });
  return { status, statusLine: statusLine(status), headers, body: Buffer.from(JSON.stringify(reply.json)) };
}

/** Write a fixed answer with this request's id, synchronously (inside the uWS handler, no await before). */
export function writeFixedAnswer(res: HttpResponse, answer: FixedAnswer, requestId: string) {
  res.cork(() => {
    res.writeStatus(answer.statusLine);
    res.writeHeader('x-request-id', requestId);
    for (const [k, v] of answer.headers) res.writeHeader(k, v);
    res.end(answer.body);
  });
}

/** A followed fixed answer whose rebuild failed is tried again after this long. */
const REBUILD_RETRY_MS = 1000;

/** What a compiled route holds for its fixed answer, once built, with its metric. */
export interface FixedSlot {
  route: Route;
  rateLimit: RateLimit;
  fixed?: { answer: FixedAnswer; observe: (seconds: number) => void };
}

/**
 * Build every fixed answer and keep it current (rebuilt when what it follows changes). Until built,
 * or while a rebuild fails, the route is served the ordinary way, by its handler: never an answer
 * older than a change we know of. Returns the stop of what they follow.
 */
export function buildFixedAnswers(routes: Route[], router: Router<FixedSlot>, ctx: GatewayContext, metrics: Metrics): () => void {
  const stops: (() => void)[] = [];
  let stopped = false;
  for (const r of routes) {
    if (!r.fixedAnswer) continue;
    const target = router.find(r.method, r.path)?.target;
    if (!target) continue;
    let building = false;
    let again = false;
    const build = async () => {
      if (building) {
        again = true;
        return;
      }
      building = true;
      do {
        again = false;
        try {
          const answer = await buildFixedAnswer(r, ctx);
          target.fixed = { answer, observe: metrics.observer(r.path, r.method, answer.status) };
        } catch (err) {
          target.fixed = undefined;
          ctx.log.warn({ err, route: r.path }, 'fixed answer not built; served by the handler');
          if (typeof r.fixedAnswer === 'object' && !stopped) setTimeout(() => void build(), REBUILD_RETRY_MS).unref();
        }
      } while (again && !stopped);
      building = false;
    };
    void build();
    if (typeof r.fixedAnswer === 'object') stops.push(r.fixedAnswer.follows(ctx, () => void build()));
  }
  return () => {
    stopped = true;
    for (const stop of stops) stop();
  };
}

/**
 * The hot path of a fixed answer's GET: the limit, the request id and the write. False when the
 * request is not one (or the limit refuses: the ordinary path then answers 429 in the one error
 * shape, taking no token a second time since a refusal takes none).
 */
export function createFixedPath(router: Router<FixedSlot>, limit: Limit, addressOf: ClientAddressOf, ctx: GatewayContext) {
  const logsRequests = ctx.log.isLevelEnabled('info');
  return (res: HttpResponse, req: HttpRequest, t0: number): boolean => {
    if (req.getMethod() !== 'get') return false;
    const rawUrl = req.getUrl();
    const match = router.find('GET', rawUrl);
    const fixed = match?.target.fixed;
    if (!fixed) return false;
    const client = clientAddressOf(addressOf, res, req);
    try {
      // biome-ignore lint/nursery/noFloatingPromises: a fixed answer's limit is per address: synchronous, it returns nothing or throws
      limit(match.target.rateLimit, undefined, client.group);
    } catch {
      return false;
    }
    const requestId = requestIdOf(req.getHeader('x-request-id'));
    writeFixedAnswer(res, fixed.answer, requestId);
    const ms = performance.now() - t0;
    fixed.observe(ms / 1000);
    if (logsRequests)
      ctx.log.info(
        {
          reqId: requestId,
          method: 'GET',
          path: decodedPath(rawUrl),
          route: match.target.route.path,
          status: fixed.answer.status,
          ms: Math.round(ms * 10) / 10,
          ip: client.ip,
        },
        'request',
      );
    return true;
  };
}
