// The job lifecycle at the NATS level: real wallet, real supervisor, the test worker.
import t from 'tap';
import { startJobsSystem } from './lib.ts';
import { jetstream, jetstreamManager } from '@nats-io/jetstream';
import { OBJECT_STORES, STREAMS, subjects } from '../../shared/names.ts';
import { commitJob, newJobRecord } from '../../gateway/jobs/create.ts';
import { readLedger } from '../../shared/audit.ts';
import { objectName } from '../../shared/protocol/jobs.ts';

// Each test starts a system of its own and shares nothing with the others: four at a time (most of a
// test is waiting on nats-server: stream writes synced to disk, deliveries, the test worker).
t.jobs = 4;

t.test('every result delivered: completed, charged in full, files stored', async (t) => {
  const s = await startJobsSystem(t);
  await s.startWorker();
  const { walletId } = await s.newWallet(1000);
  const { job, balance } = await s.submit(walletId, [
    { key: 'markdown', price: 30 },
    { key: 'text', price: 20 },
  ]);
  t.equal(balance, 950, 'charged at creation');
  t.equal(job.status, 'processing', 'written once, already dispatched');
  t.ok(
    job.results.every((r) => r.taskSeq),
    "with each task's stream sequence",
  );
  const done = await s.finished(job.id);
  t.equal(done.status, 'completed');
  t.equal(done.refunded, 0);
  t.ok(done.finishedAt! >= done.createdAt);
  t.same(
    done.results.map((r) => [r.key, r.status, r.refunded]),
    [
      ['markdown', 'done', false],
      ['text', 'done', false],
    ],
  );
  t.equal(done.results[0]!.file!.name, objectName(job.id, 'markdown'));
  t.same(await s.objects(OBJECT_STORES.results), [objectName(job.id, 'markdown'), objectName(job.id, 'text')].sort());
  t.equal(await s.balance(walletId), 950);
  t.same(await s.violations(), []);
});

t.test('partial failure: completed, the failed result refunded once', async (t) => {
  const s = await startJobsSystem(t);
  await s.startWorker();
  const { walletId } = await s.newWallet(1000);
  const { job } = await s.submit(walletId, [
    { key: 'markdown', price: 30 },
    { key: 'pdf', price: 100, behave: 'fail', params: { error: 'timeout' } },
  ]);
  const done = await s.finished(job.id);
  t.equal(done.status, 'completed');
  t.equal(done.refunded, 100);
  const pdf = done.results.find((r) => r.key === 'pdf')!;
  t.equal(pdf.status, 'failed');
  t.equal(pdf.error, 'timeout');
  t.equal(pdf.refunded, true);
  t.notOk(done.error, 'a completed job carries no job error');
  t.equal(await s.balance(walletId), 1000 - 130 + 100);
  t.same(await s.violations(), []);
});

t.test('total failure: failed, everything refunded, nothing charged', async (t) => {
  const s = await startJobsSystem(t);
  await s.startWorker();
  const { walletId } = await s.newWallet(1000);
  const { job } = await s.submit(walletId, [
    { key: 'a', price: 30, behave: 'fail' },
    { key: 'b', price: 20, behave: 'fail' },
  ]);
  const done = await s.finished(job.id);
  t.equal(done.status, 'failed');
  t.equal(done.error, 'unreachable');
  t.equal(done.refunded, 50);
  t.ok(done.results.every((r) => r.status === 'failed' && r.refunded));
  t.equal(await s.balance(walletId), 1000);
  t.same(await s.violations(), []);
});

t.test('a result without work (dataset fee) is done at once and marks the wallet', async (t) => {
  const s = await startJobsSystem(t);
  await s.startWorker();
  const { walletId } = await s.newWallet(2000);
  const { job } = await s.submit(
    walletId,
    [
      { key: 'quick', price: 500 },
      { key: 'dataset', price: 300, task: false, oneTime: true },
    ],
    'labs',
  );
  const done = await s.finished(job.id);
  t.equal(done.status, 'completed');
  t.same(
    done.results.map((r) => [r.key, r.status, r.refunded]),
    [
      ['quick', 'done', false],
      ['dataset', 'done', false],
    ],
  );
  t.equal(done.results[1]!.oneTime, true);
  const mark = await s.deps.kv.datasets.get(walletId);
  t.equal(mark?.json<{ jobId: string }>().jobId, job.id);
  t.equal(await s.balance(walletId), 1200);
  t.same(await s.violations(), []);
});

t.test('the dataset fee is refunded and the mark removed when nothing else was delivered', async (t) => {
  const s = await startJobsSystem(t);
  await s.startWorker();
  const { walletId } = await s.newWallet(2000);
  const { job } = await s.submit(
    walletId,
    [
      { key: 'quick', price: 500, behave: 'fail', params: { error: 'not_a_relay' } },
      { key: 'dataset', price: 300, task: false, oneTime: true },
    ],
    'labs',
  );
  const done = await s.finished(job.id);
  t.equal(done.status, 'failed');
  t.equal(done.error, 'not_a_relay');
  t.ok(done.results.every((r) => r.status === 'failed' && r.refunded));
  t.equal(await s.balance(walletId), 2000);
  const mark = await s.deps.kv.datasets.get(walletId);
  t.ok(!mark || mark.operation !== 'PUT', 'the wallet will pay the fee on its next dataset job');
  t.same(await s.violations(), []);
});

t.test('progress is recorded while the task runs and cleared when it is done', async (t) => {
  const s = await startJobsSystem(t);
  await s.startWorker();
  const { walletId } = await s.newWallet(1000);
  const { job } = await s.submit(walletId, [{ key: 'quick', price: 500, behave: 'progress', params: { ms: 400 } }], 'labs');
  const seen = new Set<string>();
  const w = await s.deps.kv.jobs.watch({ key: job.id });
  for await (const e of w) {
    const j = e.json<typeof job>();
    if (j.results[0]!.progress) seen.add(j.results[0]!.progress);
    if (j.status === 'completed' || j.status === 'failed') break;
  }
  t.ok(seen.size >= 2, `progress texts seen: ${[...seen].join(', ')}`);
  const done = await s.job(job.id);
  t.equal(done.status, 'completed');
  t.notOk(done.results[0]!.progress);
});

t.test('state changes are published on the EVENTS stream for operators', async (t) => {
  const s = await startJobsSystem(t);
  await s.startWorker();
  const { walletId } = await s.newWallet(1000);
  const { job } = await s.submit(walletId, [{ key: 'text', price: 20 }]);
  await s.finished(job.id);
  // an ordered consumer over the whole stream (2.9 has no multi-filter), filtered here
  const c = await jetstream(s.nc).consumers.get(STREAMS.events);
  const seen: string[] = [];
  for (;;) {
    const m = await c.next({ expires: 1000 });
    if (!m) break;
    if (m.subject === subjects.evtJob('websitepro', job.id)) seen.push(m.json<{ event: string }>().event);
  }
  // dispatched at creation: no separate `processing` event (the created one says processing)
  t.same(seen, ['created', 'completed']);
});

t.test('compensation: a charge whose job cannot be written is refunded before answering', async (t) => {
  const s = await startJobsSystem(t);
  const { walletId } = await s.newWallet(1000);
  // a job document larger than the server's max payload: the write after the charge fails
  const job = newJobRecord(
    'websitepro',
    { target: '127.0.0.1', items: [{ key: 'text', price: 20, task: { subject: subjects.taskWebsitepro, params: {} } }] },
    walletId,
    { blob: 'x'.repeat(2 * 1024 * 1024) },
    s.config,
  );
  await t.rejects(commitJob(s.deps, job), { code: 'internal' });
  t.equal(await s.balance(walletId), 1000, 'charged and refunded');
  const mine = (await readLedger(s.nc)).filter((e) => e.walletId === walletId).map((e) => [e.type, e.amount]);
  t.same(mine, [
    ['grant', 1000],
    ['charge', -20],
    ['refund', 20],
  ]);
  const jsm = await jetstreamManager(s.nc);
  t.equal((await jsm.streams.info(STREAMS.tasks)).state.messages, 0, 'the task published before the failed write was taken back');
  t.same(await s.violations(), []);
});
