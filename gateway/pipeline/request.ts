// One request's context: everything read from uWS's HttpRequest while it is valid (it is only
// valid synchronously), the client address (address.ts, the one place that computes it), the
// request id, the abort state, and the one `finish` that records the request's metric and log line.
// Metric labels are only ever a route template, a fixed word or a method from a fixed list:
// nothing a client writes becomes a label (each label value is a series kept for ever).
import { randomUUID } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import type { HttpRequest, HttpResponse } from 'uWebSockets.js';
import type { Logger } from '../../shared/log.ts';
import type { ResState } from '../http.ts';
import type { Metrics } from '../metrics.ts';
import type { ClientAddress, ClientAddressOf } from './address.ts';
import { commonHeaders } from './cors.ts';

const REQUEST_ID = /^[\w.-]{1,64}$/;
/** The request id: the client's when it is a plain token, else a new one. */
export const requestIdOf = (incoming: string | undefined) => (incoming && REQUEST_ID.test(incoming) ? incoming : randomUUID());

/** The path as logged and shown in messages; route parameters are decoded one by one (a key may hold %2F). */
export const decodedPath = (raw: string) => {
  try {
    return decodeURI(raw);
  } catch {
    return raw;
  }
};

/** The route label of a request no route answers: a fixed word, never the path. */
export const UNROUTED = { notFound: 'unmatched', wrongMethod: 'method_not_allowed' } as const;

const METHODS = new Set(['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS']);
/** The method as a metric label: one of the HTTP methods, anything else `OTHER`. */
export const methodLabel = (m: string) => (METHODS.has(m) ? m : 'OTHER');

/**
 * Every X-Forwarded-For header of a request, in order, as one list (a header sent twice is one
 * comma-separated list, RFC 9110 5.3): the one reader of it, for the fixed-answer path and the
 * ordinary one alike. uWS's getHeader gives only the first of a repeated header and a map keeps
 * only the last: a client could then pick which one a path believed.
 */
export function forwardedForOf(req: HttpRequest): string | undefined {
  let all: string | undefined;
  req.forEach((k, v) => {
    if (k === 'x-forwarded-for') all = all === undefined ? v : `${all}, ${v}`;
  });
  return all;
}

/** The client address of a uWS request: the peer, and X-Forwarded-For only as address.ts allows. */
export const clientAddress = (of: ClientAddressOf, res: HttpResponse, forwardedFor: string | undefined): ClientAddress =>
  of(Buffer.from(res.getRemoteAddressAsText()).toString(), forwardedFor);

/** The client address, read the one way (forwardedForOf) on every path. */
export const clientAddressOf = (of: ClientAddressOf, res: HttpResponse, req: HttpRequest): ClientAddress =>
  clientAddress(of, res, forwardedForOf(req));

export interface RequestContext {
  t0: number;
  method: string;
  rawUrl: string;
  rawQuery: string;
  path: string;
  headers: Record<string, string>;
  requestId: string;
  client: ClientAddress;
  common: Record<string, string>;
  state: ResState;
  /** Aborted when the client goes away; made only for a handler that asks (long polls, events). */
  signal(): AbortSignal;
}

export function readRequest(res: HttpResponse, req: HttpRequest, addressOf: ClientAddressOf, t0: number): RequestContext {
  const state: ResState = { aborted: false, done: false };
  let ac: AbortController | undefined;
  res.onAborted(() => {
    state.aborted = true;
    ac?.abort();
    state.onAbort?.();
  });
  const headers: Record<string, string> = {};
  req.forEach((k, v) => {
    headers[k] = v;
  });
  const rawUrl = req.getUrl();
  const requestId = requestIdOf(headers['x-request-id']);
  return {
    t0,
    method: req.getMethod().toUpperCase(),
    rawUrl,
    rawQuery: req.getQuery() ?? '',
    path: decodedPath(rawUrl),
    headers,
    requestId,
    client: clientAddressOf(addressOf, res, req),
    common: commonHeaders(requestId),
    state,
    signal() {
      if (!ac) {
        ac = new AbortController();
        if (state.aborted) ac.abort();
      }
      return ac.signal;
    },
  };
}

/**
 * The answer's common headers with `Server-Timing: app;dur=<ms>`: this gateway's time from the
 * request's arrival to its answer being ready (W3C Server Timing; browsers' developer tools show it),
 * so a client can tell the service's time from the network's and its own.
 */
export function withTiming(c: RequestContext): Record<string, string> {
  c.common['server-timing'] = `app;dur=${(performance.now() - c.t0).toFixed(2)}`;
  return c.common;
}

/** The request's end: one metric observation and, when info is on, one log line. */
export function createFinish(metrics: Metrics, log: Logger) {
  const logsRequests = log.isLevelEnabled('info');
  return (c: RequestContext, route: string, status: number) => {
    const ms = performance.now() - c.t0;
    metrics.observe(route, methodLabel(c.method), status, ms / 1000);
    if (logsRequests)
      log.info(
        {
          reqId: c.requestId,
          method: c.method,
          path: c.path,
          route,
          status,
          ms: Math.round(ms * 10) / 10,
          ip: c.client.ip,
          aborted: c.state.aborted || undefined,
        },
        'request',
      );
  };
}
