// Low-level uWebSockets.js plumbing: bounded body reading, corked writes after awaits, streamed
// bodies with backpressure. Nothing here knows about routes.
import type { HttpResponse } from 'uWebSockets.js';

export const STATUS_TEXT: Record<number, string> = {
  200: 'OK',
  201: 'Created',
  204: 'No Content',
  304: 'Not Modified',
  400: 'Bad Request',
  401: 'Unauthorized',
  402: 'Payment Required',
  403: 'Forbidden',
  404: 'Not Found',
  405: 'Method Not Allowed',
  409: 'Conflict',
  410: 'Gone',
  413: 'Payload Too Large',
  415: 'Unsupported Media Type',
  429: 'Too Many Requests',
  500: 'Internal Server Error',
  502: 'Bad Gateway',
  503: 'Service Unavailable',
};
export const statusLine = (s: number) => `${s} ${STATUS_TEXT[s] ?? ''}`.trim();

export interface ResState {
  aborted: boolean;
  done: boolean;
  /** Called once by the owner's `onAborted` after it sets `aborted` (a body read waiting for more). */
  onAbort?: () => void;
}

export class BodyTooLarge extends Error {}

/**
 * Read the whole body, refusing as soon as it passes `limit` bytes (never buffering past it).
 * Chunks are copied: uWS neuters them after the callback returns.
 */
export function readBody(res: HttpResponse, state: ResState, limit: number): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const parts: Buffer[] = [];
    let size = 0;
    let settled = false;
    const settle = () => {
      settled = true;
      if (state.onAbort === onAbort) state.onAbort = undefined;
    };
    // an abort never delivers a last chunk: the owner's onAborted calls this (no timer per request)
    const onAbort = () => {
      if (settled) return;
      settle();
      reject(new Error('aborted'));
    };
    if (state.aborted) return onAbort();
    state.onAbort = onAbort;
    res.onData((chunk, isLast) => {
      if (settled) return;
      size += chunk.byteLength;
      if (size > limit) {
        settle();
        reject(new BodyTooLarge());
        return;
      }
      parts.push(Buffer.from(chunk.slice(0)));
      if (isLast) {
        settle();
        resolve(parts.length === 1 ? parts[0]! : Buffer.concat(parts, size));
      }
    });
  });
}

export function writeHead(res: HttpResponse, status: number, headers: Record<string, string>) {
  res.writeStatus(statusLine(status));
  for (const [k, v] of Object.entries(headers)) res.writeHeader(k, v);
}

/** Send a complete response (corked; safe after awaits). */
export function send(
  res: HttpResponse,
  state: ResState,
  status: number,
  headers: Record<string, string>,
  body: string | Uint8Array,
  close = false,
) {
  if (state.aborted || state.done) return;
  state.done = true;
  res.cork(() => {
    writeHead(res, status, headers);
    res.end(body, close);
  });
}

/** Stream a body with backpressure: tryEnd when the length is known, chunked writes otherwise. */
export async function sendStream(
  res: HttpResponse,
  state: ResState,
  status: number,
  headers: Record<string, string>,
  body: AsyncIterable<Uint8Array>,
  length?: number,
): Promise<void> {
  if (state.aborted || state.done) return;
  state.done = true;
  res.cork(() => writeHead(res, status, headers));
  let wake: (() => void) | null = null;
  // tryEnd may take part of a chunk; the rest is offered again from onWritable.
  let pending: { buf: Uint8Array; offset: number } | null = null;
  res.onWritable((offset) => {
    if (length !== undefined && pending) {
      const [ok, finished] = res.tryEnd(pending.buf.subarray(offset - pending.offset), length);
      if (!(ok || finished)) return false;
      pending = null;
    }
    wake?.();
    wake = null;
    return true;
  });
  const drained = () =>
    new Promise<void>((r) => {
      wake = r;
      const poll = setInterval(() => {
        if (state.aborted || wake !== r) {
          clearInterval(poll);
          r();
        }
      }, 250);
    });
  let total = 0;
  try {
    for await (const chunk of body) {
      if (state.aborted) return;
      total += chunk.byteLength;
      let ok = true;
      res.cork(() => {
        if (length !== undefined) {
          const offset = res.getWriteOffset();
          const [accepted, finished] = res.tryEnd(chunk, length);
          ok = accepted || finished;
          if (!ok) pending = { buf: chunk, offset };
        } else {
          // write() keeps the whole chunk; false only says "slow down"
          ok = res.write(chunk);
        }
      });
      if (!ok) await drained();
    }
    if (state.aborted) return;
    if (length === undefined) res.cork(() => res.end());
    else if (total < length) res.cork(() => res.close());
  } catch (e) {
    // the source failed mid-body: the status is already sent, so cut the connection
    if (!state.aborted) res.cork(() => res.close());
    throw e;
  }
}
