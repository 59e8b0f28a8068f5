// CORS: the API is public to browsers. Every answer carries the request id and the grant; a
// preflight on a path that exists is answered here, before auth and limits.
export const EXPOSED_HEADERS = 'x-request-id, retry-after, content-disposition, idempotent-replayed, server-timing';

/** The headers every answer carries. */
export function commonHeaders(requestId: string): Record<string, string> {
  return { 'x-request-id': requestId, 'access-control-allow-origin': '*', 'access-control-expose-headers': EXPOSED_HEADERS };
}

/** The headers of the 204 answer to OPTIONS on a path answering `allowed`. */
export function preflightHeaders(common: Record<string, string>, allowed: readonly string[]): Record<string, string> {
  const methods = [...allowed, 'OPTIONS'].join(', ');
  return {
    ...common,
    allow: methods,
    'access-control-allow-methods': methods,
    'access-control-allow-headers': 'authorization, content-type, x-request-id, idempotency-key',
    'access-control-max-age': '600',
  };
}
