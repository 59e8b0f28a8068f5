// Rate limits, chosen per route by its `rateLimit` field: job creation is limited per key and shared
// by every gateway through the `limits` bucket; other keyed requests per key and public ones per
// client address, in this gateway's memory; `none` (health, metrics) stays open for probes.
import type { KV } from '@nats-io/kv';
import type { Config } from '../../shared/config/index.ts';
import { ApiError } from '../../shared/errors.ts';
import { takeToken, LocalLimiter } from '../../shared/limits.ts';
import type { RateLimit, Route } from '../route.ts';

const HOUR = 3600_000;
const MINUTE = 60_000;

/** The route's declared limit; undeclared: per key with auth, per address without. */
export function rateLimitOf(route: Pick<Route, 'auth' | 'rateLimit' | 'method' | 'path'>): RateLimit {
  const kind = route.rateLimit ?? (route.auth ? 'key' : 'address');
  if ((kind === 'key' || kind === 'jobs') && !route.auth) throw new Error(`route ${route.method} ${route.path}: rateLimit '${kind}' needs auth`);
  return kind;
}

const refuse = (retryAfter: number) => new ApiError('rate_limited', `too many requests; retry in ${retryAfter} s`, { retryAfter }, { 'retry-after': String(retryAfter) });

/** Take one token of `kind` for this request, or throw rate_limited. Synchronous except for `jobs`. */
export type Limit = (kind: RateLimit, keyHash: string | undefined, ip: string) => void | Promise<void>;

export function createLimit(config: Config, limits: KV): Limit {
  const perKey = new LocalLimiter(config.server.keyRequestsPerMinute, MINUTE);
  const perAddress = new LocalLimiter(config.server.publicRequestsPerMinute, MINUTE);
  const local = (l: LocalLimiter, id: string) => {
    const d = l.take(id);
    if (!d.allowed) throw refuse(d.retryAfter);
  };
  return (kind, keyHash, ip) => {
    if (kind === 'none') return;
    if (kind === 'address') return local(perAddress, ip);
    if (kind === 'key') return local(perKey, keyHash!);
    return takeToken(limits, 'jobs', keyHash!, config.limits.jobsPerHour, HOUR).then((d) => {
      if (!d.allowed) throw refuse(d.retryAfter);
    });
  };
}
