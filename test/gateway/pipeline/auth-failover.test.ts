// While the keys bucket cannot be read (NATS failing over), a key seen recently keeps its wallet,
// and a lookup is asked again before it fails (issue 45: an entry that expired during a partition
// made every request of the key a 503 for 30 s).
import t from 'tap';
import { Kvm, type KV } from '@nats-io/kv';
import { createAuth } from '../../../gateway/pipeline/auth.ts';
import { BUCKETS } from '../../../shared/names.ts';
import { createKey } from '../../../shared/keys.ts';
import { startTestNats } from '../../helpers/nats.ts';

/** What nats.js throws when a request is not answered in time: a passing unavailability. */
const timeout = () => Object.assign(new Error('timeout'), { name: 'TimeoutError' });

t.test('a failing keys bucket: the expired entry answers, a new key is asked again', async (t) => {
  const tn = await startTestNats(t);
  const keys = await new Kvm(tn.nc).open(BUCKETS.keys);
  let failures = 0;
  // fails `failures` more reads, then reads the bucket
  const flaky: KV = Object.create(keys, {
    get: {
      value: async (k: string) => {
        if (failures > 0) {
          failures--;
          throw timeout();
        }
        return keys.get(k);
      },
    },
  });
  const auth = createAuth(flaky, { ttlMs: 1, lookupRetryMs: 3000 });
  const a = await createKey(tn.nc, 'admin');
  t.equal((await auth(`Bearer ${a.key}`)).walletId, a.walletId, 'looked up');
  await new Promise((r) => setTimeout(r, 5)); // expired
  failures = 1_000;
  t.equal((await auth(`Bearer ${a.key}`)).walletId, a.walletId, 'the bucket unreadable: the expired entry still answers');
  const b = await createKey(tn.nc, 'admin');
  failures = 3;
  t.equal((await auth(`Bearer ${b.key}`)).walletId, b.walletId, 'a key not cached: asked again until the bucket answers');
  failures = 1_000;
  const c = await createKey(tn.nc, 'admin');
  const err = await auth(`Bearer ${c.key}`).then(
    () => null,
    (e: Error) => e,
  );
  t.equal(err?.name, 'TimeoutError', 'a key not cached and a bucket that never answers: the failure, after the retries');
});
