// Fixed answers: a route whose answer is the same for every caller (`fixedAnswer`) has its status
// line, headers and body built at start, and again whenever what it follows changes (the live
// catalogue for GET /v1/services); a request then costs the limit, the request id and one corked
// write, near what a bare uWebSockets.js handler costs.
import type { HttpResponse } from 'uWebSockets.js';
import { statusLine } from '../http.ts';
import type { GatewayContext, Route, RouteRequest } from '../route.ts';
import { commonHeaders } from './cors.ts';

export interface FixedAnswer {
  status: number;
  statusLine: string;
  /** Every header but the request id, in write order. */
  headers: [string, string][];
  body: Buffer;
}

/** Run the route's handler once, with no caller, and keep its answer as bytes. */
export async function buildFixedAnswer(route: Route, ctx: GatewayContext): Promise<FixedAnswer> {
  const rq: RouteRequest = { method: route.method, path: route.path, params: {}, query: {}, body: undefined, headers: {}, requestId: '', ip: '', signal: new AbortController().signal };
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
