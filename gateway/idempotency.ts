// Idempotency-Key on job and top-up creation, with the semantics payment APIs made standard (Stripe):
// the same key with the same request within 24 h answers the first answer again (status and body) and
// charges nothing more; the same key with another request answers 422 idempotency_key_reused; a
// request still running under the key answers 409 idempotency_key_in_use with Retry-After.
//
// The records live in the `idempotency` bucket (24 h max age), shared by every gateway, one per wallet
// and key (`<walletId>.<sha256 of the key>`): one customer's key never meets another's. A wallet
// makes at most `limits.idempotencyKeysPerDay` records in 24 h (counted in `<walletId>.n`); a replayed
// answer made nothing and gives its job token back (gateway/server.ts). A record is
// created (revision 0) before anything with an effect, so of two requests racing on one key exactly
// one runs. It names the job id the creation will use before the charge: a retry after a gateway died
// mid-creation finds the job if it was written (and answers it), and otherwise, once the job can no
// longer appear (the orphan grace of its charge, gateway/jobs/create.ts), runs the creation again
// with a new id — the old charge, if any, is refunded by the wallet's orphan sweep.
//
// Only final answers are kept: 2xx and the 4xx that the same request would get again. A 5xx, 429 or
// 409 releases the key (nothing was charged, a retry must run), except an answer that names a job
// that may exist (the "may have been created" 503): the record then stays, and the retry answers
// the job once it is found.
import { createHash } from 'node:crypto';
import { Kvm, type KV } from '@nats-io/kv';
import type { NatsConnection } from '@nats-io/nats-core';
import { ApiError } from '../shared/errors.ts';
import { BUCKETS } from '../shared/names.ts';
import { isCasConflict, kvCasDelete, kvCasPut, kvUpdate } from '../shared/nats/cas.ts';
import type { Reply } from './route.ts';

export const IDEMPOTENCY_HEADER = 'idempotency-key';
/** Stripe's bound: longer keys are refused, so a record's key stays small whatever a client sends. */
export const IDEMPOTENCY_KEY_MAX = 255;
export const IDEMPOTENCY_DOC =
  `Optional, at most ${IDEMPOTENCY_KEY_MAX} visible ASCII characters (a UUID is a good choice). ` +
  'The same key with the same request within 24 hours answers the first answer again (status and body, header `Idempotent-Replayed: true`) and charges nothing more; ' +
  'with a different request it answers 422 `idempotency_key_reused`; while the first request runs, 409 `idempotency_key_in_use` with `Retry-After`. ' +
  'Keys are per wallet. Answers that say nothing happened (429, 5xx) are not kept: a retry with the same key runs again.';

interface Running {
  v: 1;
  state: 'running';
  fp: string;
  at: number;
  jobId?: string;
}
interface Done {
  v: 1;
  state: 'done';
  fp: string;
  at: number;
  status: number;
  json?: unknown;
  error?: Record<string, unknown>;
  headers?: Record<string, string>;
}
type IdemRecord = Running | Done;

/** The longest a live creation runs, its `wait` included: a record running longer was left by a gateway that died. */
const IN_FLIGHT_MS = 60_000;

const VISIBLE_ASCII = /^[\x20-\x7e]+$/;

/** The key as sent, or undefined; a malformed one is refused before anything happens. */
export function idempotencyKeyOf(headers: Record<string, string>): string | undefined {
  const k = headers[IDEMPOTENCY_HEADER];
  if (k === undefined) return undefined;
  if (!k.length || k.length > IDEMPOTENCY_KEY_MAX || !VISIBLE_ASCII.test(k)) {
    throw new ApiError('bad_request', `Idempotency-Key must be 1 to ${IDEMPOTENCY_KEY_MAX} visible ASCII characters`);
  }
  return k;
}

/** JSON with sorted object keys: the same body sent with other spacing or key order is the same request. */
function canonical(v: unknown): string {
  if (Array.isArray(v)) return `[${v.map(canonical).join(',')}]`;
  if (v && typeof v === 'object')
    return `{${Object.keys(v)
      .sort()
      .map((k) => `${JSON.stringify(k)}:${canonical((v as Record<string, unknown>)[k])}`)
      .join(',')}}`;
  return JSON.stringify(v) ?? 'null';
}

export const fingerprintOf = (method: string, path: string, body: unknown) =>
  createHash('sha256')
    .update(`${method} ${path}\n${canonical(body)}`)
    .digest('hex');
export const recordKey = (walletId: string, key: string) => `${walletId}.${createHash('sha256').update(key).digest('hex')}`;

const buckets = new WeakMap<NatsConnection, Promise<KV>>();
function bucketOf(nc: NatsConnection): Promise<KV> {
  let kv = buckets.get(nc);
  if (!kv) {
    kv = new Kvm(nc).open(BUCKETS.idempotency);
    kv.catch(() => buckets.delete(nc));
    buckets.set(nc, kv);
  }
  return kv;
}

function replay(rec: Done): Reply {
  const headers = { ...(rec.headers ?? {}), 'idempotent-replayed': 'true' };
  if (rec.error) {
    const e = ApiError.fromJSON(rec.error);
    throw new ApiError(e.code, e.message, { ...(e.details ?? {}) }, headers);
  }
  return { status: rec.status, json: rec.json, headers };
}

const inUse = (retryAfter: number) =>
  new ApiError(
    'idempotency_key_in_use',
    'a request with this Idempotency-Key is still running; retry with the same key',
    { retryAfter },
    { 'retry-after': String(retryAfter) },
  );
const reused = () => new ApiError('idempotency_key_reused', 'this Idempotency-Key was used with a different request in the last 24 hours');

/** Errors a retry of the same request may answer differently: the key is released. */
const transient = (e: ApiError) => e.status >= 500 || e.status === 429 || e.status === 409;

export interface IdempotentCall {
  nc: NatsConnection;
  walletId: string;
  key: string | undefined;
  fingerprint: string;
  /** The job id the creation will use (job routes), so a retry after a crash can find the job. */
  jobId?: string;
  /** A record older than this whose job is not found is taken over (the job can no longer appear). */
  staleMs: number;
  /** The current answer for a job found under a record left running (a retry after a crash). */
  answerJob?: (jobId: string) => Promise<Reply | null>;
  /** New records this wallet may make in 24 h (`limits.idempotencyKeysPerDay`). */
  maxRecords: number;
}

/** Whether an answer is a replay of a kept one (its header): it made nothing, so it spends no job token. */
export const wasReplayed = (outcome: { reply: Reply } | { error: unknown }): boolean => {
  const headers = 'reply' in outcome ? outcome.reply.headers : outcome.error instanceof ApiError ? outcome.error.headers : undefined;
  return headers?.['idempotent-replayed'] === 'true';
};

// The bound per wallet (issue 44 item 5): a count of the records each wallet made, per hour, in one
// small document beside its records (`<walletId>.n`; a record's name ends in 64 hex digits, so no
// clash). A record lives 24 h (the bucket's max age), so the hours of the last 25 count.
const HOUR_MS = 3600_000;
const WINDOW_HOURS = 25;
const countKey = (walletId: string) => `${walletId}.n`;
type Counts = Record<string, number>;
const readCounts = (e: { operation: string; value: Uint8Array; json<T>(): T } | null, nowHour: number): Counts => {
  if (!e || e.operation !== 'PUT' || !e.value.length) return {};
  const out: Counts = {};
  try {
    for (const [h, n] of Object.entries(e.json<Counts>()))
      if (Number(h) > nowHour - WINDOW_HOURS && typeof n === 'number' && n > 0) out[h] = n;
  } catch {
    /* unreadable: counts as none */
  }
  return out;
};

/** Count one more record for the wallet, or refuse with 429 (`limit: "idempotencyKeys"`). Returns the hour counted. */
async function countRecord(kv: KV, walletId: string, max: number): Promise<number> {
  const hour = Math.floor(Date.now() / HOUR_MS);
  let retryAfter = 0;
  await kvUpdate(
    kv,
    countKey(walletId),
    (e) => {
      const counts = readCounts(e, hour);
      const total = Object.values(counts).reduce((a, b) => a + b, 0);
      if (total >= max) {
        const oldest = Math.min(...Object.keys(counts).map(Number));
        retryAfter = Math.max(1, Math.ceil(((oldest + WINDOW_HOURS) * HOUR_MS - Date.now()) / 1000));
        return undefined;
      }
      retryAfter = 0;
      counts[hour] = (counts[hour] ?? 0) + 1;
      return JSON.stringify(counts);
    },
    20,
  );
  if (retryAfter)
    throw new ApiError(
      'rate_limited',
      `this wallet made ${max} Idempotency-Key records in the last 24 hours (limits.idempotencyKeysPerDay); retry in ${retryAfter} s or send the request without a new key`,
      { retryAfter, limit: 'idempotencyKeys' },
      { 'retry-after': String(retryAfter) },
    );
  return hour;
}

/** Give back a count (the record was deleted: a transient answer). Best effort. */
async function uncountRecord(kv: KV, walletId: string, hour: number): Promise<void> {
  await kvUpdate(
    kv,
    countKey(walletId),
    (e) => {
      const counts = readCounts(e, Math.floor(Date.now() / HOUR_MS));
      if (!counts[hour]) return undefined;
      counts[hour] -= 1;
      return JSON.stringify(counts);
    },
    20,
  ).catch(() => {});
}

/**
 * Run `create` at most once per (wallet, key) within 24 h. Without a key it just runs. `create`
 * receives the job id to use (the record's, which may be a new one after a take-over).
 */
export async function idempotent(c: IdempotentCall, create: (jobId?: string) => Promise<Reply>): Promise<Reply> {
  if (c.key === undefined) return create(c.jobId);
  const kv = await bucketOf(c.nc);
  const k = recordKey(c.walletId, c.key);
  let mine: Running = { v: 1, state: 'running', fp: c.fingerprint, at: Date.now(), ...(c.jobId ? { jobId: c.jobId } : {}) };
  let revision: number | undefined;
  /** The hour this request's new record was counted in (given back if the record is deleted). */
  let counted: number | undefined;
  for (let attempt = 0; revision === undefined; attempt++) {
    if (attempt > 5) {
      if (counted !== undefined) await uncountRecord(kv, c.walletId, counted);
      throw inUse(1);
    }
    const e = await kv.get(k);
    if (!e || e.operation !== 'PUT' || !e.value.length) {
      counted ??= await countRecord(kv, c.walletId, c.maxRecords);
      try {
        revision = await kvCasPut(kv, k, JSON.stringify(mine), e?.revision ?? 0);
      } catch (err) {
        if (!isCasConflict(err)) {
          await uncountRecord(kv, c.walletId, counted);
          throw err;
        }
      }
      continue;
    }
    if (counted !== undefined) {
      // another request made the record first: this one's count is not a record
      await uncountRecord(kv, c.walletId, counted);
      counted = undefined;
    }
    const rec = e.json<IdemRecord>();
    if (rec.fp !== c.fingerprint) throw reused();
    if (rec.state === 'done') return replay(rec);
    // left running: by a request still in flight (409), or by a gateway that died in the middle
    const age = Date.now() - rec.at;
    if (age < IN_FLIGHT_MS) throw inUse(2);
    if (rec.jobId && c.answerJob) {
      const found = await c.answerJob(rec.jobId);
      if (found) return { ...found, headers: { ...('headers' in found ? found.headers : {}), 'idempotent-replayed': 'true' } };
    }
    if (age < c.staleMs) throw inUse(Math.max(1, Math.min(30, Math.ceil((c.staleMs - age) / 1000 / 4))));
    // the first creation can no longer produce a job: run it again under a new job id
    mine = { ...mine, at: Date.now() };
    try {
      revision = await kvCasPut(kv, k, JSON.stringify(mine), e.revision);
    } catch (err) {
      if (!isCasConflict(err)) throw err;
    }
  }

  const finish = async (rec: Done | null, keepRunning = false) => {
    try {
      if (keepRunning) return;
      if (rec) await kvCasPut(kv, k, JSON.stringify(rec), revision!);
      else {
        await kvCasDelete(kv, k, revision!);
        if (counted !== undefined) await uncountRecord(kv, c.walletId, counted);
      }
    } catch {
      // left as it is: a retry sees it running and, once stale, runs again (or answers the job it names)
    }
  };
  let reply: Reply;
  try {
    reply = await create(mine.jobId);
  } catch (e) {
    if (e instanceof ApiError && !transient(e)) {
      await finish({
        v: 1,
        state: 'done',
        fp: c.fingerprint,
        at: Date.now(),
        status: e.status,
        error: e.toJSON(),
        ...(e.headers ? { headers: e.headers } : {}),
      });
    } else {
      // an answer naming a job that may exist keeps the record: the retry finds the job or, once it
      // cannot appear any more, creates anew
      const maybeJob = e instanceof ApiError && typeof e.details?.jobId === 'string';
      await finish(null, maybeJob);
    }
    throw e;
  }
  if ('json' in reply)
    await finish({
      v: 1,
      state: 'done',
      fp: c.fingerprint,
      at: Date.now(),
      status: reply.status ?? 200,
      json: reply.json,
      ...(reply.headers ? { headers: reply.headers } : {}),
    });
  else await finish(null);
  return reply;
}
