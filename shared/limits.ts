// Rate limits shared by every gateway instance: GCRA (the generic cell rate algorithm) with its one
// number per subject, the theoretical arrival time, kept in the `limits` bucket and updated with
// revision checks (shared/nats/cas.ts). N per period allows a burst of N, then one every period/N.
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

export async function takeToken(kv: KV, scope: string, id: string, limit: number, periodMs: number, now = Date.now()): Promise<LimitDecision> {
  const interval = periodMs / limit;
  let decision: LimitDecision = { allowed: false, retryAfter: 1, remaining: 0 };
  try {
    // another gateway winning the race makes kvUpdate read again and decide again
    await kvUpdate(kv, keyOf(scope, id), (e) => {
      const stored = e && e.operation === 'PUT' && e.value.length ? Number(e.string()) : 0;
      const next = Math.max(stored, now) + interval;
      if (next - now > periodMs + 1e-6) {
        decision = { allowed: false, retryAfter: Math.max(1, Math.ceil((next - periodMs - now) / 1000)), remaining: 0 };
        return undefined;
      }
      decision = { allowed: true, retryAfter: 0, remaining: Math.floor((periodMs - (next - now)) / interval) };
      return String(next);
    }, 20);
  } catch (err) {
    // too much contention on one counter: refuse for a second rather than fail the request
    if (!(err instanceof ApiError && err.code === 'service_unavailable')) throw err;
    decision = { allowed: false, retryAfter: 1, remaining: 0 };
  }
  return decision;
}

/**
 * The same algorithm in process memory, for limits that protect one gateway instance (public
 * endpoints per address, ordinary requests per key): no NATS round trip on every request.
 * Job creation and relay tests use the shared takeToken() above.
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
