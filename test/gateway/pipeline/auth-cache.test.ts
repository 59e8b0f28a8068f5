// The gateway's key cache is bounded by design (issue 26): at most `maxEntries` keys, the least
// recently used pushed out first (it cost one keys-bucket read on its next request).
import t from 'tap';
import { Kvm } from '@nats-io/kv';
import { createAuth } from '../../../gateway/pipeline/auth.ts';
import { BUCKETS } from '../../../shared/names.ts';
import { createKey } from '../../../shared/keys.ts';
import { startTestNats } from '../../helpers/nats.ts';

const codeOf = async (f: () => unknown) => {
  try {
    await f();
    return 'none';
  } catch (e) {
    return (e as { code?: string }).code ?? String(e);
  }
};

t.test('the least recently used key leaves the cache first', async (t) => {
  const tn = await startTestNats(t);
  const keys = await new Kvm(tn.nc).open(BUCKETS.keys);
  const auth = createAuth(keys, { ttlMs: 60_000, maxEntries: 2 });
  const [a, b, c] = [await createKey(tn.nc, 'admin'), await createKey(tn.nc, 'admin'), await createKey(tn.nc, 'admin')];
  const hashes = [];
  for (const k of [a, b, a, c]) hashes.push((await auth(`Bearer ${k.key}`)).keyHash); // a used again after b: b is the oldest when c comes
  // gone from the bucket: only the cache can still answer
  for (const h of new Set(hashes)) await keys.purge(h);
  t.equal((await auth(`Bearer ${a.key}`)).walletId, a.walletId, 'a, used recently, is kept');
  t.equal((await auth(`Bearer ${c.key}`)).walletId, c.walletId, 'c, the newest, is kept');
  t.equal(await codeOf(() => auth(`Bearer ${b.key}`)), 'unauthorized', 'b was pushed out: read from the bucket again');
});
