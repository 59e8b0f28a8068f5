// Writing the answer: a route's Reply (JSON, bytes, or a stream with backpressure), or an error in
// the one error shape `{error: {code, message, docs, requestId, ...}}`. Returns the status sent.
import type { HttpResponse } from 'uWebSockets.js';
import { errorDocUrl, type ApiError } from '../../shared/errors.ts';
import { send, sendStream, type ResState } from '../http.ts';
import type { Reply } from '../route.ts';
import { encodeParts } from '../../shared/raw-json.ts';

export async function sendReply(
  res: HttpResponse,
  state: ResState,
  head: boolean,
  common: Record<string, string>,
  reply: Reply,
): Promise<number> {
  const status = reply.status ?? 200;
  if ('json' in reply) {
    const headers = { ...common, 'content-type': 'application/json', ...reply.headers };
    const body = head ? '' : encodeParts(reply.json);
    // JSON text kept as bytes (a page set's inline results) goes out in parts, not copied into one string
    if (typeof body === 'string') send(res, state, status, headers, body);
    else await sendStream(res, state, status, headers, partsOf(body), totalBytes(body));
  } else if ('stream' in reply) await sendStream(res, state, status, { ...common, ...reply.headers }, reply.stream, reply.length);
  else send(res, state, status, { ...common, ...reply.headers }, head ? '' : reply.body);
  return status;
}

async function* partsOf(parts: Uint8Array[]): AsyncIterable<Uint8Array> {
  yield* parts;
}
const totalBytes = (parts: Uint8Array[]) => parts.reduce((n, p) => n + p.byteLength, 0);

/**
 * `close`: end the connection after it (a body too large, so the client stops sending). `head`: the
 * answer to a HEAD has no body (one sent anyway would be read as the next answer on the connection).
 */
export function sendError(
  res: HttpResponse,
  state: ResState,
  common: Record<string, string>,
  e: ApiError,
  baseUrl: string,
  close = false,
  head = false,
): number {
  const body = head
    ? ''
    : JSON.stringify({ error: { ...e.toJSON(), docs: errorDocUrl(baseUrl, e.code), requestId: common['x-request-id'] } });
  send(res, state, e.status, { ...common, 'content-type': 'application/json', ...e.headers }, body, close);
  return e.status;
}
