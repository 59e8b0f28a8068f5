// Auth: `Authorization: Bearer <key>` → the key's wallet. Lookups are cached per gateway for 30 s
// (a revoked key may work that long here), so a busy key costs no NATS round trip. The cache holds at
// most `maxEntries` keys (server.authCacheKeys), least recently used out first: a key pushed out
// costs one keys-bucket read on its next request, never a wrong answer.
import type { KV } from '@nats-io/kv';
import { ApiError } from '../../shared/errors.ts';
import { lookupKey } from '../../shared/keys.ts';
import { hashKey } from '../../shared/ids.ts';

export interface Authenticated {
  walletId: string;
  keyHash: string;
}

export type Authenticate = (header: string | undefined) => Promise<Authenticated>;

export function createAuth(keys: KV, { ttlMs = 30_000, maxEntries = 10_000 } = {}): Authenticate {
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
    const rec = await lookupKey(keys, m[1]!);
    if (!rec) throw new ApiError('unauthorized', 'unknown API key');
    cache.delete(keyHash);
    cache.set(keyHash, { walletId: rec.walletId, until: Date.now() + ttlMs });
    while (cache.size > maxEntries) cache.delete(cache.keys().next().value!);
    return { walletId: rec.walletId, keyHash };
  };
}
