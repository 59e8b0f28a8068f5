// Auth: `Authorization: Bearer <key>` → the key's wallet. Lookups are cached per gateway for 30 s
// (a revoked key may work that long here), so a busy key costs no NATS round trip. The cache holds at
// most `maxEntries` keys (server.authCacheKeys), least recently used out first: a key pushed out
// costs one keys-bucket read on its next request, never a wrong answer. While the keys bucket
// cannot be read (a failover), an expired entry still answers (STALE_MS); a key not cached is
// looked up again for LOOKUP_RETRY_MS before the request is answered 503.
import type { KV } from '@nats-io/kv';
import { ApiError } from '../../shared/errors.ts';
import { lookupKey } from '../../shared/keys.ts';
import { hashKey } from '../../shared/ids.ts';
import { isTransientNatsError, retryTransient } from '../../shared/nats/transient.ts';

/** How long the key lookup is retried through a failover before the request is answered 503 (server.failoverRetryMs). */
const LOOKUP_RETRY_MS = 20_000;
/** How old an expired entry may be and still answer while the keys bucket cannot be read. */
const STALE_MS = 10 * 60_000;

export interface Authenticated {
  walletId: string;
  keyHash: string;
}

export type Authenticate = (header: string | undefined) => Promise<Authenticated>;

export function createAuth(keys: KV, { ttlMs = 30_000, maxEntries = 10_000, lookupRetryMs = LOOKUP_RETRY_MS } = {}): Authenticate {
  const cache = new Map<string, { walletId: string; until: number }>();
  return async (header) => {
    const m = /^Bearer\s+(\S+)\s*$/i.exec(header ?? '');
    if (!m) throw new ApiError('unauthorized', header ? 'Authorization must be `Bearer <key>`' : 'Authorization header missing');
    const keyHash = hashKey(m[1]!);
    const hit = cache.get(keyHash);
    if (hit && hit.until > Date.now()) {
      cache.delete(keyHash); // re-inserted last: the map stays in order of last use
      cache.set(keyHash, hit);
      return { walletId: hit.walletId, keyHash };
    }
    // Every request passes here: a failover must not turn it into a 503 (issue 45: an entry that
    // expired during a partition made every request of the key fail for 30 s). Retried, and while
    // NATS cannot answer, a key seen within STALE_MS keeps its wallet (a revoked key may work that
    // much longer during an outage: it was valid a moment ago).
    let rec: { walletId: string } | null;
    try {
      rec = await retryTransient(() => lookupKey(keys, m[1]!), hit ? 0 : lookupRetryMs);
    } catch (e) {
      if (!hit || !isTransientNatsError(e)) throw e;
      // served from the expired entry, which is not renewed: STALE_MS after it expired, it is looked up again
      if (Date.now() - hit.until < STALE_MS) return { walletId: hit.walletId, keyHash };
      rec = await retryTransient(() => lookupKey(keys, m[1]!), lookupRetryMs);
    }
    if (!rec) throw new ApiError('unauthorized', 'unknown API key');
    cache.delete(keyHash);
    cache.set(keyHash, { walletId: rec.walletId, until: Date.now() + ttlMs });
    while (cache.size > maxEntries) cache.delete(cache.keys().next().value!);
    return { walletId: rec.walletId, keyHash };
  };
}
