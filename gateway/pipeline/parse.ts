// Parsing what the client sent: the query string (first value of a name wins) and a JSON body
// (required where the route takes one; any JSON media type; never read past the size limit).
import { ApiError } from '../../shared/errors.ts';

/** The query's names and their first values, as strings (validation coerces them). */
export function parseQuery(rawQuery: string): Record<string, string> {
  const q: Record<string, string> = {};
  for (const [k, v] of new URLSearchParams(rawQuery)) if (!(k in q)) q[k] = v;
  return q;
}

/** The 413 message when a declared Content-Length is already over the limit, else undefined. */
export function declaredTooLarge(contentLength: string | undefined, limitBytes: number): string | undefined {
  const declared = Number(contentLength ?? NaN);
  return Number.isFinite(declared) && declared > limitBytes
    ? `the body is ${declared} bytes; at most ${limitBytes} are accepted`
    : undefined;
}

/** The body as JSON, or bad_request / unsupported_media_type. */
export function parseJsonBody(raw: Buffer | null, contentType: string | undefined): unknown {
  const ct = (contentType ?? '').toLowerCase();
  if (!raw || raw.length === 0) throw new ApiError('bad_request', 'a JSON body is required');
  if (ct && !ct.startsWith('application/json') && !/\+json\b/.test(ct))
    throw new ApiError('unsupported_media_type', `send the body as application/json, not ${ct.split(';')[0]}`);
  try {
    return JSON.parse(raw.toString('utf8'));
  } catch (e) {
    throw new ApiError('bad_request', `malformed JSON: ${(e as Error).message}`);
  }
}
