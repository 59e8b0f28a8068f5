// Rate limits shared by every gateway instance. Job creation ("600 per hour and key") and relay
// tests ("30 per hour") are exact over any rolling window: each counter is the log of the times it
// accepted during the last period (at most `limit` numbers), kept in the `limits` bucket and
// updated with revision checks (shared/nats/cas.ts). A take is accepted only while fewer than
// `limit` accepted times lie in (now - period, now], so no window of that length ever holds more
// than `limit`. (GCRA, used before, allowed a burst of N and then one every period/N: nearly 2N in a
// rolling period.) A log of up to 600 numbers per key costs a few KB a write. Each process keeps
// what it last wrote per counter as a guess (below), so a take is usually one write, not a read and
// a write.
import type { KV } from '@nats-io/kv';
import { isCasConflict, kvCasPut, kvUpdate } from './nats/cas.ts';
import { ApiError } from './errors.ts';

export interface LimitDecision {
  allowed: boolean;
  /** Seconds until one more is allowed (when refused). */
  retryAfter: number;
  remaining: number;
}

const keyOf = (scope: string, id: string) => `rate.${scope}.${id.replace(/[^-\w=]/g, '_')}`;

/** The accepted times of a counter still inside the window, oldest first (anything unreadable counts as none). */
function readLog(raw: string, since: number): number[] {
  try {
    const v: unknown = JSON.parse(raw);
    if (!Array.isArray(v)) return []; // e.g. a GCRA value written by an older gateway
    return v.filter((x): x is number => typeof x === 'number' && Number.isFinite(x) && x > since).sort((a, b) => a - b);
  } catch {
    return [];
  }
}

/** The decision for one more take at `now` given the accepted times in the window (exported for tests). */
export function decide(log: number[], limit: number, periodMs: number, now: number): LimitDecision {
  if (log.length < limit) return { allowed: true, retryAfter: 0, remaining: limit - log.length - 1 };
  // a time t has left the window (then - period, then] once then >= t + period; one more take needs
  // the oldest log.length - limit + 1 times gone
  const leaving = log[log.length - limit]!;
  return { allowed: false, retryAfter: Math.max(1, Math.ceil((leaving + periodMs - now) / 1000)), remaining: 0 };
}

/**
 * What this process last wrote for a counter, with the revision of that write: a guess of the
 * counter's current state, so that a take usually costs one compare-and-set write instead of a read
 * and a write. The write is the check: it lands only if the guess was the current record; when
 * anybody else wrote meanwhile (another gateway, another process) it is refused, and the take is
 * decided again on a fresh read. A guess is used only to allow: a refusal is always decided on a
 * fresh read (a counter an operator reset must not keep refusing from memory).
 */
const guesses = new WeakMap<KV, Map<string, { log: number[]; revision: number }>>();
/** Counters guessed per bucket handle; past this the guesses are dropped (each costs a read again). */
const MAX_GUESSES = 10_000;

function guessesOf(kv: KV) {
  let known = guesses.get(kv);
  if (!known) guesses.set(kv, (known = new Map()));
  return known;
}

/**
 * One more take of counter `scope`/`id`, or a refusal with the seconds to wait. A counter that
 * cannot be updated (a failover's stream leader refusing every revision-checked write, or more
 * contention than `kvUpdate`'s tries) is not a decision about the customer's rate: it throws a
 * retryable 503 service_unavailable with Retry-After rather than answering "too many requests".
 */
export async function takeToken(
  kv: KV,
  scope: string,
  id: string,
  limit: number,
  periodMs: number,
  now = Date.now(),
): Promise<LimitDecision> {
  const key = keyOf(scope, id);
  const known = guessesOf(kv);
  const guess = known.get(key);
  if (guess) {
    known.delete(key);
    const log = guess.log.filter((x) => x > now - periodMs);
    const decision = decide(log, limit, periodMs, now);
    if (decision.allowed) {
      const value = withTake(log, now, limit);
      try {
        const revision = await kvCasPut(kv, key, JSON.stringify(value), guess.revision);
        remember(known, key, value, revision);
        return decision;
      } catch (err) {
        // anything but "somebody wrote since" is an answer about the server, as on the read path
        if (!isCasConflict(err)) throw err;
      }
    }
  }
  let decision: LimitDecision = { allowed: false, retryAfter: 1, remaining: 0 };
  let written: number[] = [];
  try {
    // another gateway winning the race makes kvUpdate read again and decide again
    const revision = await kvUpdate(
      kv,
      key,
      (e) => {
        const log = e && e.operation === 'PUT' && e.value.length ? readLog(e.string(), now - periodMs) : [];
        decision = decide(log, limit, periodMs, now);
        if (!decision.allowed) return undefined;
        written = withTake(log, now, limit);
        return JSON.stringify(written);
      },
      20,
    );
    if (revision !== undefined) remember(known, key, written, revision);
  } catch (err) {
    if (!(err instanceof ApiError && err.code === 'service_unavailable')) throw err;
    throw new ApiError(
      'service_unavailable',
      'the rate counter could not be updated (the message system is failing over or busy); nothing was charged; retry in a few seconds',
      {},
      { 'retry-after': '2' },
    );
  }
  return decision;
}

/**
 * Give back a take of `scope`/`id` made at `at` (one entry of that time leaves the log): what a job
 * creation that made no job does, so that only created jobs count. Best effort: a give-back that
 * fails leaves the token counted (the safe side) until it leaves the window.
 */
export async function giveTokenBack(kv: KV, scope: string, id: string, at: number, periodMs: number, now = Date.now()): Promise<void> {
  if (at <= now - periodMs) return;
  const key = keyOf(scope, id);
  const known = guessesOf(kv);
  known.delete(key);
  let written: number[] | undefined;
  const revision = await kvUpdate(
    kv,
    key,
    (e) => {
      const log = e && e.operation === 'PUT' && e.value.length ? readLog(e.string(), now - periodMs) : [];
      const i = log.indexOf(at);
      if (i < 0) return undefined; // already gone (an operator's reset, a give-back retried)
      log.splice(i, 1);
      written = log;
      return JSON.stringify(log);
    },
    20,
  );
  if (revision !== undefined && written) remember(known, key, written, revision);
}

/** The log after one more take at `now`: oldest first, at most `limit` times. */
function withTake(log: number[], now: number, limit: number): number[] {
  log.push(now);
  return log.sort((a, b) => a - b).slice(-limit);
}

function remember(known: Map<string, { log: number[]; revision: number }>, key: string, log: number[], revision: number) {
  if (known.size >= MAX_GUESSES) known.clear();
  known.set(key, { log, revision });
}

/**
 * GCRA (the generic cell rate algorithm: a burst of N, then one every period/N) in process memory,
 * for the per-minute limits that protect one gateway instance (public endpoints per address,
 * ordinary requests per key): no NATS round trip on every request. Job creation and relay tests
 * use the shared, exact takeToken() above.
 */
export class LocalLimiter {
  private readonly tat = new Map<string, number>();
  private lastSweep = 0;
  private readonly limit: number;
  private readonly periodMs: number;
  constructor(limit: number, periodMs: number) {
    this.limit = limit;
    this.periodMs = periodMs;
  }

  take(id: string, now = Date.now()): LimitDecision {
    const interval = this.periodMs / this.limit;
    if (now - this.lastSweep > this.periodMs) this.sweep(now);
    const tat = Math.max(this.tat.get(id) ?? 0, now);
    const next = tat + interval;
    if (next - now > this.periodMs + 1e-6) {
      return { allowed: false, retryAfter: Math.max(1, Math.ceil((next - this.periodMs - now) / 1000)), remaining: 0 };
    }
    this.tat.set(id, next);
    return { allowed: true, retryAfter: 0, remaining: Math.floor((this.periodMs - (next - now)) / interval) };
  }

  private sweep(now: number) {
    this.lastSweep = now;
    for (const [k, v] of this.tat) if (v <= now) this.tat.delete(k);
  }
}
