// Rate limits shared by every gateway instance. Job creation ("600 per hour and key") and relay
// tests ("30 per hour") are exact over any rolling window: each counter is the log of the times it
// accepted during the last period (at most `limit` numbers), kept in the `limits` bucket and
// updated with revision checks (shared/nats/cas.ts). A take is accepted only while fewer than
// `limit` accepted times lie in (now - period, now], so no window of that length ever holds more
// than `limit`. (GCRA, used before, allowed a burst of N and then one every period/N: nearly 2N in a
// rolling period.) A log of up to 600 numbers per key costs a few KB a write; job creation is not
// a hot path.
import type { KV } from '@nats-io/kv';
import { kvUpdate } from './nats/cas.ts';
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
 * One more take of counter `scope`/`id`, or a refusal with the seconds to wait. A counter that
 * cannot be updated (a failover's stream leader refusing every revision-checked write, or more
 * contention than `kvUpdate`'s tries) is not a decision about the customer's rate: it throws a
 * retryable 503 service_unavailable with Retry-After rather than answering "too many requests".
 */
export async function takeToken(kv: KV, scope: string, id: string, limit: number, periodMs: number, now = Date.now()): Promise<LimitDecision> {
  let decision: LimitDecision = { allowed: false, retryAfter: 1, remaining: 0 };
  try {
    // another gateway winning the race makes kvUpdate read again and decide again
    await kvUpdate(kv, keyOf(scope, id), (e) => {
      const log = e && e.operation === 'PUT' && e.value.length ? readLog(e.string(), now - periodMs) : [];
      decision = decide(log, limit, periodMs, now);
      if (!decision.allowed) return undefined;
      log.push(now);
      return JSON.stringify(log.sort((a, b) => a - b).slice(-limit));
    }, 20);
  } catch (err) {
    if (!(err instanceof ApiError && err.code === 'service_unavailable')) throw err;
    throw new ApiError('service_unavailable', 'the rate counter could not be updated (the message system is failing over or busy); nothing was charged; retry in a few seconds', {}, { 'retry-after': '2' });
  }
  return decision;
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
  constructor(private readonly limit: number, private readonly periodMs: number) {}

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
