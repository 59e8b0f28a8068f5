// The labs dataset fee: charged once per wallet under any concurrency (the mark is claimed with a
// compare-and-set at creation), given back when the charge fails, and refunded (mark released)
// whenever no result that needed the dataset was delivered.
import t from 'tap';
import { startJobsSystem } from './lib.ts';
import { ApiError } from '../../shared/errors.ts';
import { jobMayAppearMs } from '../../gateway/jobs/create.ts';

// Each test starts a system of its own and shares nothing with the others: four at a time (most of a
// test is waiting on nats-server: stream writes synced to disk, deliveries, sweeps).
t.jobs = 4;

const conformance = { key: 'conformance', price: 2000, needsDataset: true };
const fee = { key: 'dataset', price: 300, task: false, oneTime: true };

t.test('20 concurrent dataset jobs of a new wallet: exactly one carries the fee', async (t) => {
  const s = await startJobsSystem(t);
  await s.startWorker({ concurrency: 8 });
  const { walletId } = await s.newWallet(100_000);
  const created = await Promise.all(Array.from({ length: 20 }, () => s.submit(walletId, [conformance, fee], 'labs')));
  const finished = await Promise.all(created.map((c) => s.finished(c.job.id)));
  const withFee = finished.filter((j) => j.results.some((r) => r.key === 'dataset'));
  t.equal(withFee.length, 1, 'one job carries the dataset fee');
  t.ok(finished.every((j) => j.status === 'completed'));
  t.equal(await s.balance(walletId), 100_000 - 20 * 2000 - 300, 'charged 20 conformance results and one fee');
  const mark = await s.deps.kv.datasets.get(walletId);
  t.equal(mark?.json<{ jobId: string }>().jobId, withFee[0]!.id, 'the mark names the job that paid');
  t.same(await s.violations(), []);
});

t.test('a job whose charge fails gives the mark back; the next job carries the fee', async (t) => {
  const s = await startJobsSystem(t);
  await s.startWorker();
  const { walletId } = await s.newWallet(1000);
  const err = await s.submit(walletId, [conformance, fee], 'labs').then(
    () => null,
    (e: unknown) => e,
  );
  t.ok(err instanceof ApiError && err.code === 'insufficient_funds', 'refused: not enough money');
  const mark = await s.deps.kv.datasets.get(walletId);
  t.ok(!mark || mark.operation !== 'PUT', 'no mark left by a job that does not exist');
  await s.submit(walletId, [{ key: 'quick', price: 100, needsDataset: false }], 'labs'); // no fee item, nothing changes
  const { job } = await s.submit(walletId, [{ key: 'custom', price: 200, needsDataset: true }, fee], 'labs');
  t.same(
    job.results.map((r) => r.key),
    ['custom', 'dataset'],
    'the fee is carried by the next dataset job',
  );
  t.equal((await s.finished(job.id)).status, 'completed');
  t.same(await s.violations(), []);
});

t.test('the fee is refunded when only results without the dataset were delivered, and the mark released', async (t) => {
  const s = await startJobsSystem(t);
  await s.startWorker();
  const { walletId } = await s.newWallet(5000);
  const { job } = await s.submit(
    walletId,
    [{ key: 'quick', price: 500, needsDataset: false }, { ...conformance, behave: 'fail', params: { error: 'write_restricted' } }, fee],
    'labs',
  );
  const done = await s.finished(job.id);
  t.equal(done.status, 'completed', 'quick was delivered');
  const byKey = Object.fromEntries(done.results.map((r) => [r.key, r]));
  t.match(byKey.dataset, { status: 'failed', refunded: true, error: 'write_restricted' }, 'the fee is refunded');
  t.match(byKey.conformance, { status: 'failed', refunded: true });
  t.equal(await s.balance(walletId), 5000 - 500, 'only quick is paid');
  const mark = await s.deps.kv.datasets.get(walletId);
  t.ok(!mark || mark.operation !== 'PUT', 'the mark is given back');
  const next = await s.submit(walletId, [conformance, fee], 'labs');
  t.ok(
    next.job.results.some((r) => r.key === 'dataset'),
    'a later dataset job carries the fee again',
  );
  const nextDone = await s.finished(next.job.id);
  t.match(
    nextDone.results.find((r) => r.key === 'dataset'),
    { status: 'done', refunded: false },
    'and keeps it once the dataset was used',
  );
  t.same(await s.violations(), []);
});

t.test(
  'a mark left by a job that was never written is taken over once it is old; a recent one, or one whose job exists, is respected',
  async (t) => {
    const s = await startJobsSystem(t, { wallet: { orphanChargeGraceSeconds: 1 } });
    await s.startWorker();
    const { walletId } = await s.newWallet(10_000);
    // a gateway claimed the mark and died before charging: no job document exists
    await s.deps.kv.datasets.put(walletId, JSON.stringify({ jobId: 'job_neverwritten', at: Date.now(), pending: true }));
    const early = await s.submit(walletId, [conformance, fee], 'labs');
    t.same(
      early.job.results.map((r) => r.key),
      ['conformance'],
      'inside 2x the orphan grace the mark is respected',
    );
    // the mark as it stands once it is older than a job document can still appear (the grace, 1 s, and
    // twice the store's retries, 14 s): its age is read from its own `at`, so its clock is moved back
    // by that much instead of waited out
    const held = (await s.deps.kv.datasets.get(walletId))!.json<{ jobId: string; at: number }>();
    t.equal(held.jobId, 'job_neverwritten', 'the early job left the mark alone');
    await s.deps.kv.datasets.put(walletId, JSON.stringify({ ...held, at: held.at - jobMayAppearMs(s.config) - 200 }));
    const late = await s.submit(walletId, [conformance, fee], 'labs');
    t.same(
      late.job.results.map((r) => r.key),
      ['conformance', 'dataset'],
      'then taken over: the wallet pays the fee',
    );
    const mark = await s.deps.kv.datasets.get(walletId);
    t.equal(mark?.json<{ jobId: string }>().jobId, late.job.id);
    await s.finished(early.job.id);
    await s.finished(late.job.id);
    // a mark whose job exists is never taken over, however old
    await s.deps.kv.datasets.put(walletId, JSON.stringify({ jobId: late.job.id, at: Date.now() - 3600_000 }));
    const third = await s.submit(walletId, [conformance, fee], 'labs');
    t.same(
      third.job.results.map((r) => r.key),
      ['conformance'],
      'a live holder keeps it',
    );
    await s.finished(third.job.id);
    t.same(await s.violations(), []);
    // a mark written before claims were confirmed (no `pending`) counts as paid: never taken over
    await s.deps.kv.datasets.put(walletId, JSON.stringify({ jobId: 'job_before_flags', at: Date.now() - 3600_000 }));
    const fourth = await s.submit(walletId, [conformance, fee], 'labs');
    t.same(
      fourth.job.results.map((r) => r.key),
      ['conformance'],
      'an unflagged mark is held',
    );
    await s.finished(fourth.job.id);
  },
);
