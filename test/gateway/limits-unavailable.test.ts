import t from 'tap';
import { Kvm, type KV } from '@nats-io/kv';
import { startTestNats } from '../helpers/nats.ts';
import { takeToken } from '../../shared/limits.ts';
import { ApiError } from '../../shared/errors.ts';
import { BUCKETS } from '../../shared/names.ts';

// A counter whose every revision-checked write the server refuses (as a stream leader does during a
// failover) says nothing about the customer's rate: the answer is 503, not 429.
t.test('shared limit: a counter the server never lets us update answers 503 service_unavailable, not 429', async (t) => {
  const { nc } = await startTestNats(t);
  const kv = await new Kvm(nc).open(BUCKETS.limits);
  t.ok((await takeToken(kv, 'jobs', 'k', 10, 3600_000)).allowed, 'first take written');
  const key = 'rate.jobs.k';
  const stale = (await kv.get(key))!;
  t.ok((await takeToken(kv, 'jobs', 'k', 10, 3600_000)).allowed, 'second take moves the counter past the stale revision');
  // every read answers the old revision, so the real server rejects every write (wrong last sequence)
  const staleKv: KV = Object.create(kv, { get: { value: async () => stale } });
  const err = await takeToken(staleKv, 'jobs', 'k', 10, 3600_000).then(
    () => null,
    (e: unknown) => e,
  );
  t.ok(err instanceof ApiError, 'an ApiError');
  t.equal((err as ApiError).code, 'service_unavailable');
  t.equal((err as ApiError).status, 503);
  t.equal((err as ApiError).headers?.['retry-after'], '2', 'says when to retry');
  const log = JSON.parse((await kv.get(key))!.string()) as number[];
  t.equal(log.length, 2, 'nothing was taken by the refused attempt');
});
