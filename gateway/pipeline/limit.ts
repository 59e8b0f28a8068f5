// Rate limits, chosen per route by its `rateLimit` field: job creation is limited per key and shared
// by every gateway through the `limits` bucket; other keyed requests per key and public ones per
// client address group (gateway/pipeline/address.ts), in this gateway's memory; `none` (health,
// metrics) stays open for probes. Answers given before a route's own limit is taken (404, 405,
// OPTIONS, 401, 413) take a token per address group too (`unrouted`), so nothing is unlimited.
import type { KV } from '@nats-io/kv';
import type { Config } from '../../shared/config/index.ts';
import { ApiError } from '../../shared/errors.ts';
import { takeToken, giveTokenBack, LocalLimiter } from '../../shared/limits.ts';
import { retryTransient } from '../../shared/nats/transient.ts';
import type { RateLimit, Route } from '../route.ts';

const HOUR = 3600_000;
const MINUTE = 60_000;

/** The route's declared limit; undeclared: per key with auth, per address without. */
export function rateLimitOf(route: Pick<Route, 'auth' | 'rateLimit' | 'method' | 'path'>): RateLimit {
  const kind = route.rateLimit ?? (route.auth ? 'key' : 'address');
  if ((kind === 'key' || kind === 'jobs') && !route.auth)
    throw new Error(`route ${route.method} ${route.path}: rateLimit '${kind}' needs auth`);
  return kind;
}

export const refuse = (retryAfter: number) =>
  new ApiError('rate_limited', `too many requests; retry in ${retryAfter} s`, { retryAfter }, { 'retry-after': String(retryAfter) });

/**
 * A job token taken from the shared limit: `giveBack` returns it when the request made no job
 * (only created jobs count against `limits.jobsPerHour`).
 */
export interface JobToken {
  giveBack(): Promise<void>;
}

/**
 * Take one token of `kind` for this request, or throw rate_limited. Synchronous except for `jobs`,
 * whose promise is the shared token. `group`: the client's address group.
 */
export type Limit = (kind: RateLimit, keyHash: string | undefined, group: string) => void | Promise<JobToken>;

export interface Limits {
  limit: Limit;
  /** A token of the per-address limit for an answer given before the route's own limit (throws rate_limited). */
  unrouted(group: string): void;
}

export function createLimit(config: Config, limits: KV): Limits {
  const perKey = new LocalLimiter(config.server.keyRequestsPerMinute, MINUTE);
  const perAddress = new LocalLimiter(config.server.publicRequestsPerMinute, MINUTE);
  const jobRequests = new LocalLimiter(config.limits.jobRequestsPerMinute, MINUTE);
  const local = (l: LocalLimiter, id: string) => {
    const d = l.take(id);
    if (!d.allowed) throw refuse(d.retryAfter);
  };
  const limit: Limit = (kind, keyHash, group) => {
    if (kind === 'none') return;
    if (kind === 'address') return local(perAddress, group);
    if (kind === 'key') return local(perKey, keyHash!);
    // every creation request, whatever its answer, against the looser per-minute bound; then the
    // shared hourly bound, whose token is held while the request runs (so concurrent creations can
    // never pass it) and given back by the caller when no job came of it
    local(jobRequests, keyHash!);
    const at = Date.now();
    // retried through a failover (issue 45); a take written by a try that timed out counts one token
    // more for the hour (the safe side)
    return retryTransient(
      () => takeToken(limits, 'jobs', keyHash!, config.limits.jobsPerHour, HOUR, at),
      config.server.failoverRetryMs,
    ).then((d) => {
      if (!d.allowed) throw refuse(d.retryAfter);
      return { giveBack: () => giveTokenBack(limits, 'jobs', keyHash!, at, HOUR) };
    });
  };
  return { limit, unrouted: (group) => local(perAddress, group) };
}

/**
 * Whether a job creation's answer means a job exists or may exist (its token is kept): any answer
 * that is not an error, and an error naming a job id (a charge was made: the job may exist, or its
 * refund is still to come). Everything else made no job and gives the token back.
 */
export const madeJob = (error: unknown): boolean =>
  error === undefined || (error instanceof ApiError && typeof (error.details as { jobId?: unknown } | undefined)?.jobId === 'string');
