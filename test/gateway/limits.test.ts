import t from 'tap';
import { Kvm } from '@nats-io/kv';
import { startTestNats } from '../helpers/nats.ts';
import { takeToken } from '../../shared/limits.ts';
import { BUCKETS } from '../../shared/names.ts';

t.test('shared limit: N at once, then refused with Retry-After until the first leaves the window', async (t) => {
  const { nc } = await startTestNats(t);
  const kv = await new Kvm(nc).open(BUCKETS.limits);
  const now = 1_000_000;
  for (let i = 0; i < 10; i++) t.ok((await takeToken(kv, 's', 'k', 10, 3600_000, now)).allowed, `#${i + 1}`);
  const refused = await takeToken(kv, 's', 'k', 10, 3600_000, now);
  t.notOk(refused.allowed);
  t.equal(refused.retryAfter, 3600, 'one more once the burst is an hour old');
  t.notOk(
    (await takeToken(kv, 's', 'k', 10, 3600_000, now + 360_000)).allowed,
    'not after period/N (GCRA would allow it: 2N in a rolling hour)',
  );
  t.ok((await takeToken(kv, 's', 'k', 10, 3600_000, now + 3600_000)).allowed, 'allowed again after the period');
});

t.test('shared limit: concurrent takers from two connections never exceed the limit', async (t) => {
  const tn = await startTestNats(t);
  const kv1 = await new Kvm(tn.nc).open(BUCKETS.limits);
  const kv2 = await new Kvm(await tn.connect('second')).open(BUCKETS.limits);
  const results = await Promise.all(Array.from({ length: 40 }, (_, i) => takeToken(i % 2 ? kv1 : kv2, 'c', 'k', 15, 3600_000)));
  t.equal(results.filter((r) => r.allowed).length, 15);
});

t.test('local limiter (GCRA in memory, per id)', async (t) => {
  const { LocalLimiter } = await import('../../shared/limits.ts');
  const l = new LocalLimiter(3, 60_000);
  const now = 5_000_000;
  t.same(
    [1, 2, 3, 4].map(() => l.take('a', now).allowed),
    [true, true, true, false],
  );
  t.equal(l.take('a', now).retryAfter, 20);
  t.ok(l.take('b', now).allowed, 'another id has its own budget');
  t.ok(l.take('a', now + 20_000).allowed, 'one more after period/N');
});
