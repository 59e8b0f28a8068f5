// payloads-client: the typed API (openapi-fetch over the types generated from /openapi.json) plus
// what every user writes around it: create-and-wait, downloads, the event stream, webhook checks.
import createClient from 'openapi-fetch';
import { createParser } from 'eventsource-parser';
import { createHmac, createPublicKey, randomUUID, timingSafeEqual, verify } from 'node:crypto';
import { createWriteStream } from 'node:fs';
import { rename, rm } from 'node:fs/promises';
import { pipeline } from 'node:stream/promises';
import { Readable, Transform } from 'node:stream';
import type { components, paths } from './schema.ts';

export type { components, paths } from './schema.ts';
export type Job = components['schemas']['Job'];
export type Result = components['schemas']['Result'];
export type Quote = components['schemas']['Quote'];
export type Balance = components['schemas']['Balance'];
export type Topup = components['schemas']['Topup'];
export type ErrorCode = components['schemas']['Error']['error']['code'];
export type ServiceName = 'websitepro' | 'shots' | 'labs';
// biome-ignore lint/suspicious/noExplicitAny: the index, pricing and catalogues are not typed by the spec ("not shown"): plain JSON
export type PlainJson = Record<string, any>;
export type ServiceBody = {
  websitepro: components['schemas']['WebsiteproBody'];
  shots: components['schemas']['ShotsBody'];
  labs: components['schemas']['LabsBody'];
};

export const DEFAULT_BASE_URL = 'http://localhost:8080';

/** An error answer of the API (or of the network, code `network`), typed by its `code`. */
export class PayloadsError extends Error {
  readonly code: ErrorCode | 'network' | 'interrupted';
  readonly status: number | null;
  readonly details: Record<string, unknown>;
  readonly requestId?: string;
  readonly retryAfter?: number;
  constructor(
    code: ErrorCode | 'network' | 'interrupted',
    message: string,
    status: number | null = null,
    details: Record<string, unknown> = {},
    requestId?: string,
    retryAfter?: number,
  ) {
    super(message);
    this.code = code;
    this.status = status;
    this.details = details;
    this.requestId = requestId;
    this.retryAfter = retryAfter;
    this.name = 'PayloadsError';
  }
}

async function toError(res: Response, body?: unknown): Promise<PayloadsError> {
  let b = body as { error?: { code?: string; message?: string; requestId?: string } & Record<string, unknown> } | undefined;
  if (b === undefined) b = await res.json().catch(() => undefined);
  const e = b?.error;
  const retry = Number(res.headers.get('retry-after'));
  if (!e?.code) return new PayloadsError('internal', `HTTP ${res.status} without an error body`, res.status);
  const { code, message, requestId, ...details } = e;
  return new PayloadsError(
    code as ErrorCode,
    message ?? code,
    res.status,
    details,
    requestId,
    Number.isFinite(retry) && retry > 0 ? retry : undefined,
  );
}

const netError = (e: unknown) =>
  e instanceof PayloadsError ? e : new PayloadsError('network', `cannot reach the API: ${(e as Error).message}`);

export interface ClientOptions {
  /** API key (Authorization: Bearer). */
  key?: string;
  /** Default http://localhost:8080. */
  baseUrl?: string;
  fetch?: typeof fetch;
}

export interface JobEvent {
  event: 'status' | 'progress' | 'result' | 'job';
  id: string;
  // biome-ignore lint/suspicious/noExplicitAny: the error body of any operation: callers branch on data.error.code
  data: any;
}

export interface CreateOptions {
  /** Sent as Idempotency-Key (default: a new random UUID per call, reused by the call's own retries). */
  idempotencyKey?: string;
  /** Retries of an answer that says nothing may have happened (network, 503, 429, 409 in use); default 4. */
  retries?: number;
  signal?: AbortSignal;
}

/** Answers after which the same creation with the same key is sent again. */
const RETRIED_CREATION: string[] = ['network', 'service_unavailable', 'busy', 'rate_limited', 'idempotency_key_in_use'];

export interface WaitOptions {
  /** Give up after this long (the job keeps running); default: no limit. */
  timeoutMs?: number;
  signal?: AbortSignal;
  /** Called with each document seen while waiting. */
  onUpdate?: (job: Job) => void;
}

/** A pause the signal can end early; its abort listener is removed when it ends normally. */
const sleep = (ms: number, signal?: AbortSignal) =>
  new Promise<void>((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason ?? new Error('aborted'));
    const onAbort = () => {
      clearTimeout(t);
      reject(signal!.reason ?? new Error('aborted'));
    };
    const t = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    signal?.addEventListener('abort', onAbort, { once: true });
  });

export type PayloadsClient = ReturnType<typeof createPayloadsClient>;

/** A job being created: await it for `{job, balance}`, or call `.wait()` for the finished job. */
export interface CreatedJob extends PromiseLike<{ job: Job; balance: number }> {
  wait(opts?: WaitOptions): Promise<Job>;
}

export function createPayloadsClient(opts: ClientOptions = {}) {
  const baseUrl = (opts.baseUrl ?? DEFAULT_BASE_URL).replace(/\/+$/, '');
  const f = opts.fetch ?? globalThis.fetch;
  const auth: Record<string, string> = opts.key ? { authorization: `Bearer ${opts.key}` } : {};
  /** The typed API as generated: every path, body and answer of /openapi.json. */
  const api = createClient<paths>({ baseUrl, headers: auth, fetch: f });

  /** Unwrap an openapi-fetch answer: the data, or a PayloadsError with the API's code. */
  async function ok<T>(p: Promise<{ data?: T; error?: unknown; response: Response }>): Promise<T> {
    let r;
    try {
      r = await p;
    } catch (e) {
      throw netError(e);
    }
    if (r.error !== undefined || !r.response.ok) throw await toError(r.response, r.error);
    return r.data as T;
  }

  async function job(id: string, waitSeconds = 0, signal?: AbortSignal): Promise<{ job: Job; balance: number }> {
    return ok(api.GET('/v1/jobs/{id}', { params: { path: { id }, query: waitSeconds ? { wait: waitSeconds } : {} }, signal }));
  }

  /** Long poll until the job is finished; the server holds each call up to 25 s, errors back off. */
  async function wait(id: string, o: WaitOptions = {}): Promise<Job> {
    const deadline = o.timeoutMs === undefined ? Infinity : Date.now() + o.timeoutMs;
    let backoff = 500;
    for (;;) {
      const left = deadline - Date.now();
      if (left <= 0) throw new PayloadsError('not_ready', `job ${id} did not finish within ${o.timeoutMs} ms`);
      try {
        const { job: j } = await job(id, Math.max(1, Math.min(25, Math.floor(left / 1000))), o.signal);
        o.onUpdate?.(j);
        if (j.status === 'completed' || j.status === 'failed') return j;
        backoff = 500;
      } catch (e) {
        // retry what may pass (network, 429, 503); anything else is the caller's
        if (
          !(e instanceof PayloadsError) ||
          !['network', 'rate_limited', 'service_unavailable', 'busy'].includes(e.code) ||
          o.signal?.aborted
        )
          throw e;
        await sleep(Math.min(left, e.retryAfter ? e.retryAfter * 1000 : backoff), o.signal);
        backoff = Math.min(backoff * 2, 10_000);
      }
    }
  }

  /**
   * A creation (job or top-up) sent with an Idempotency-Key — the caller's, or a new random one —
   * and retried with that same key while the answer says nothing may have happened or the first try
   * still runs (no connection, 503, 429, 409 idempotency_key_in_use): a retry never pays twice, it
   * gets the first answer. Retry-After is honoured (at most 30 s a pause).
   */
  async function create<T>(
    send: (headers: Record<string, string>) => Promise<{ data?: T; error?: unknown; response: Response }>,
    o: CreateOptions,
  ): Promise<T> {
    const headers = { 'idempotency-key': o.idempotencyKey ?? randomUUID() };
    const tries = 1 + Math.max(0, o.retries ?? 4);
    let backoff = 500;
    for (let i = 1; ; i++) {
      try {
        return await ok(send(headers));
      } catch (e) {
        if (!(e instanceof PayloadsError) || !RETRIED_CREATION.includes(e.code) || i >= tries || o.signal?.aborted) throw e;
        await sleep(Math.min(30_000, e.retryAfter ? e.retryAfter * 1000 : backoff), o.signal);
        backoff = Math.min(backoff * 2, 10_000);
      }
    }
  }

  function createJob<S extends ServiceName>(service: S, body: ServiceBody[S], o: { wait?: number } & CreateOptions = {}): CreatedJob {
    const created = create(
      (headers) =>
        api.POST(`/v1/${service}/jobs` as '/v1/shots/jobs', {
          body: body as never,
          params: { query: o.wait ? { wait: o.wait } : {} },
          headers,
          signal: o.signal,
        }),
      o,
    ) as Promise<{ job: Job; balance: number }>;
    return {
      then: (a, b) => created.then(a, b),
      wait: async (w) => {
        const { job: j } = await created;
        return j.status === 'completed' || j.status === 'failed' ? j : wait(j.id, w);
      },
    };
  }

  /**
   * Follow a job's events (GET /v1/jobs/{id}/events) until the final `job` event. A dropped
   * connection is resumed with Last-Event-ID, so no event is missed or repeated.
   */
  async function* events(jobId: string, o: { signal?: AbortSignal; lastEventId?: string } = {}): AsyncGenerator<JobEvent> {
    let lastId = o.lastEventId;
    let failures = 0;
    for (;;) {
      let res: Response;
      try {
        res = await f(`${baseUrl}/v1/jobs/${encodeURIComponent(jobId)}/events`, {
          headers: { ...auth, accept: 'text/event-stream', ...(lastId ? { 'last-event-id': lastId } : {}) },
          signal: o.signal,
        });
      } catch (e) {
        if (o.signal?.aborted || ++failures > 5) throw netError(e);
        await sleep(500 * failures, o.signal);
        continue;
      }
      if (res.status === 204) return;
      if (!res.ok) throw await toError(res);
      const queue: JobEvent[] = [];
      const parser = createParser({
        onEvent: (m) => queue.push({ event: (m.event ?? 'message') as JobEvent['event'], id: m.id ?? '', data: JSON.parse(m.data) }),
      });
      const decoder = new TextDecoder();
      try {
        for await (const chunk of res.body as unknown as AsyncIterable<Uint8Array>) {
          parser.feed(decoder.decode(chunk, { stream: true }));
          while (queue.length) {
            const e = queue.shift()!;
            if (e.id) lastId = e.id;
            failures = 0;
            yield e;
            if (e.event === 'job') return;
          }
        }
      } catch (e) {
        if (o.signal?.aborted) throw e;
      }
      // the stream ended before the job event: resume where it stopped
      if (++failures > 5) throw new PayloadsError('network', 'the event stream keeps ending early');
      await sleep(300 * failures, o.signal);
    }
  }

  /**
   * Save a result (a Result with `url`, or its URL) to `path`. Written to `<path>.part` and renamed
   * when complete, so an interrupted download never leaves a file that looks whole.
   */
  async function download(
    result: Pick<Result, 'url'> | string,
    path: string,
    o: { signal?: AbortSignal; onProgress?: (bytes: number, total: number | null) => void } = {},
  ): Promise<{ bytes: number; contentType: string | null }> {
    const url = typeof result === 'string' ? result : result.url;
    if (!url) throw new PayloadsError('not_found', 'this result has no file to download (not done, or expired)');
    let res: Response;
    try {
      res = await f(url, { headers: auth, signal: o.signal });
    } catch (e) {
      throw netError(e);
    }
    if (!res.ok || !res.body) throw await toError(res);
    const total = Number(res.headers.get('content-length')) || null;
    let bytes = 0;
    const part = `${path}.part`;
    const count = new Transform({
      transform(chunk: Buffer, _enc, cb) {
        bytes += chunk.length;
        o.onProgress?.(bytes, total);
        cb(null, chunk);
      },
    });
    try {
      await pipeline(Readable.fromWeb(res.body as never), count, createWriteStream(part));
      if (total !== null && bytes !== total) throw new Error(`got ${bytes} of ${total} bytes`);
    } catch (e) {
      await rm(part, { force: true });
      throw new PayloadsError('interrupted', `download of ${url} interrupted: ${(e as Error).message}`);
    }
    await rename(part, path);
    return { bytes, contentType: res.headers.get('content-type') };
  }

  return {
    api,
    baseUrl,
    index: () => ok(api.GET('/v1')) as Promise<PlainJson>,
    pricing: () => ok(api.GET('/v1/pricing')) as Promise<PlainJson>,
    catalogue: (service: ServiceName) => ok(api.GET('/v1/services/{service}', { params: { path: { service } } })) as Promise<PlainJson>,
    balance: () => ok(api.GET('/v1/balance')) as Promise<Balance>,
    quote: <S extends ServiceName>(service: S, body: ServiceBody[S]) =>
      ok(api.POST(`/v1/${service}/quote` as '/v1/shots/quote', { body: body as never })) as Promise<Quote>,
    createJob,
    job,
    wait,
    events,
    download,
    topup: (eur: number, o: CreateOptions = {}) =>
      create((headers) => api.POST('/v1/topups', { body: { eur }, headers, signal: o.signal }), o) as Promise<{
        topup: Topup;
        balance: number;
      }>,
    topupStatus: (id: string) => ok(api.GET('/v1/topups/{id}', { params: { path: { id } } })) as Promise<{ topup: Topup; balance: number }>,
  };
}

const SPKI_ED25519_PREFIX = Buffer.from('302a300506032b6570032100', 'hex');

/**
 * Check a webhook POST (docs/webhooks.md) as Standard Webhooks (standardwebhooks.com) verifiers do:
 * `webhook-signature` over `<webhook-id>.<webhook-timestamp>.<raw body>`, a timestamp within
 * `maxAgeSeconds`. `secretOrPublicKey`: your `whsec_...` secret (GET /v1/webhooks/secret; checks the
 * `v1,` HMAC, which only deliveries for your key carry), or the deployment's Ed25519 public key in hex
 * (`webhooks.publicKey` of GET /v1; checks `v1a,`, or the deprecated X-Payloads-Signature when the
 * delivery has no `webhook-signature`).
 */
export function verifyWebhook(
  body: string | Uint8Array,
  headers: Record<string, string | string[] | undefined> | Headers,
  secretOrPublicKey: string,
  maxAgeSeconds = 300,
): boolean {
  const get = (n: string) => {
    if (headers instanceof Headers) return headers.get(n) ?? undefined;
    const v = Object.entries(headers).find(([k]) => k.toLowerCase() === n)?.[1];
    return Array.isArray(v) ? v[0] : v;
  };
  const fresh = (ts: string | undefined): ts is string =>
    !!ts && /^\d+$/.test(ts) && Math.abs(Date.now() / 1000 - Number(ts)) <= maxAgeSeconds;
  const [id, ts, sigs] = [get('webhook-id'), get('webhook-timestamp'), get('webhook-signature')];
  try {
    if (id && sigs) {
      if (!fresh(ts)) return false;
      const content = Buffer.concat([Buffer.from(`${id}.${ts}.`), Buffer.from(body)]);
      const list = sigs.split(' ').map((x) => x.split(','));
      if (secretOrPublicKey.startsWith('whsec_')) {
        const want = createHmac('sha256', Buffer.from(secretOrPublicKey.slice(6), 'base64'))
          .update(content)
          .digest();
        return list.some(
          ([v, sig]) => v === 'v1' && !!sig && ((b) => b.length === want.length && timingSafeEqual(b, want))(Buffer.from(sig, 'base64')),
        );
      }
      const key = createPublicKey({
        key: Buffer.concat([SPKI_ED25519_PREFIX, Buffer.from(secretOrPublicKey, 'hex')]),
        format: 'der',
        type: 'spki',
      });
      return list.some(([v, sig]) => v === 'v1a' && !!sig && verify(null, content, key, Buffer.from(sig, 'base64')));
    }
    // deprecated: X-Payloads-Signature, Ed25519 over `<timestamp>.<body>` (public key only)
    const [lts, lsig] = [get('x-payloads-timestamp'), get('x-payloads-signature')];
    if (!fresh(lts) || !lsig || !/^[0-9a-f]+$/i.test(secretOrPublicKey)) return false;
    const key = createPublicKey({
      key: Buffer.concat([SPKI_ED25519_PREFIX, Buffer.from(secretOrPublicKey, 'hex')]),
      format: 'der',
      type: 'spki',
    });
    return verify(null, Buffer.concat([Buffer.from(`${lts}.`), Buffer.from(body)]), key, Buffer.from(lsig, 'hex'));
  } catch {
    return false;
  }
}
