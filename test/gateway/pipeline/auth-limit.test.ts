// Auth and limits against a real NATS: keys from the real `keys` bucket (cached), job creations
// counted in the real `limits` bucket, the local per-key and per-address limits in memory.
import t from 'tap';
import { Kvm } from '@nats-io/kv';
import { createAuth } from '../../../gateway/pipeline/auth.ts';
import { createLimit } from '../../../gateway/pipeline/limit.ts';
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

t.test('auth', async (t) => {
  const tn = await startTestNats(t);
  const keys = await new Kvm(tn.nc).open(BUCKETS.keys);
  const auth = createAuth(keys, { ttlMs: 60_000 });
  const { key, walletId } = await createKey(tn.nc, 'admin');
  const a = await auth(`Bearer ${key}`);
  t.equal(a.walletId, walletId);
  t.match(a.keyHash, /^[0-9a-f]+$/);
  t.same(await auth(`bearer   ${key} `), a, 'scheme is case-insensitive, spaces tolerated');
  t.equal(await codeOf(() => auth(undefined)), 'unauthorized');
  t.equal(await codeOf(() => auth(`Basic ${key}`)), 'unauthorized');
  t.equal(await codeOf(() => auth('Bearer pk_unknown')), 'unauthorized');
  // a cached key answers without the bucket: delete it and it still works until the cache expires
  await keys.purge(a.keyHash);
  const direct = await keys.get(a.keyHash);
  t.notOk(direct?.string(), 'gone from the bucket');
  t.equal((await auth(`Bearer ${key}`)).walletId, walletId, 'served from the cache');
  const uncached = createAuth(keys, { ttlMs: 0 });
  t.equal(await codeOf(() => uncached(`Bearer ${key}`)), 'unauthorized', 'without the cache it is unknown');
});

t.test('limits', async (t) => {
  const tn = await startTestNats(t, { server: { keyRequestsPerMinute: 2, publicRequestsPerMinute: 3 }, limits: { jobsPerHour: 1 } });
  const limits = await new Kvm(tn.nc).open(BUCKETS.limits);
  const { limit } = createLimit(tn.config, limits);
  t.equal(limit('none', undefined, '1.2.3.4'), undefined, 'none is never refused and never waits');
  // biome-ignore lint/nursery/noFloatingPromises: 'none' returns nothing (asserted just above)
  for (let i = 0; i < 100; i++) limit('none', undefined, '1.2.3.4');
  t.equal(await codeOf(() => limit('key', 'k1', 'ip')), 'none');
  t.equal(await codeOf(() => limit('key', 'k1', 'ip')), 'none');
  t.equal(await codeOf(() => limit('key', 'k1', 'ip')), 'rate_limited', 'third keyed request in a minute');
  t.equal(await codeOf(() => limit('key', 'k2', 'ip')), 'none', 'per key');
  for (let i = 0; i < 3; i++) t.equal(await codeOf(() => limit('address', undefined, '10.0.0.1')), 'none');
  t.equal(await codeOf(() => limit('address', undefined, '10.0.0.1')), 'rate_limited', 'per address');
  t.ok(limit('jobs', 'k3', 'ip') instanceof Promise, 'the job limit asks the shared bucket');
  t.equal(await codeOf(() => limit('jobs', 'k4', 'ip')), 'none');
  const second = createLimit(tn.config, limits).limit; // another gateway: the job limit is shared
  const e = await (async () => {
    try {
      await second('jobs', 'k4', 'ip');
    } catch (e) {
      return e as { code: string; headers?: Record<string, string> };
    }
  })();
  t.equal(e?.code, 'rate_limited', 'shared by every gateway');
  t.match(e?.headers?.['retry-after'], /^\d+$/);
});
