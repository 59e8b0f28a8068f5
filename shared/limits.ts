// Rate limits shared by every gateway instance: GCRA (the generic cell rate algorithm) with its one
// number per subject, the theoretical arrival time, kept in the `limits` bucket and updated with
// revision checks (shared/nats/cas.ts). N per period allows a burst of N, then one every period/N.
import type { KV } from '@nats-io/kv';
import { kvCasPut, isCasConflict } from './nats/cas.ts';

export interface LimitDecision {
  allowed: boolean;
  /** Seconds until one more is allowed (when refused). */
  retryAfter: number;
  remaining: number;
}

const keyOf = (scope: string, id: string) => `rate.${scope}.${id.replace(/[^-\w=]/g, '_')}`;

export async function takeToken(kv: KV, scope: string, id: string, limit: number, periodMs: number, now = Date.now()): Promise<LimitDecision> {
  const key = keyOf(scope, id);
  const interval = periodMs / limit;
  for (let attempt = 0; attempt < 20; attempt++) {
    const e = await kv.get(key);
    const exists = !!e && e.operation === 'PUT' && e.value.length > 0;
    const stored = exists ? Number(e!.string()) : 0;
    const tat = Math.max(stored, now);
    const next = tat + interval;
    if (next - now > periodMs + 1e-6) {
      return { allowed: false, retryAfter: Math.max(1, Math.ceil((next - periodMs - now) / 1000)), remaining: 0 };
    }
    try {
      // on the current revision, a deleted/purged marker's included; 0 when the key never existed
      await kvCasPut(kv, key, String(next), e?.revision ?? 0);
      return { allowed: true, retryAfter: 0, remaining: Math.floor((periodMs - (next - now)) / interval) };
    } catch (err) {
      if (!isCasConflict(err)) throw err;
      // another gateway won the race: read again
    }
  }
  return { allowed: false, retryAfter: 1, remaining: 0 };
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
