// How often a job's document is written: a delivered job costs its creation (already dispatched:
// the gateway publishes the tasks first) and one write recording the last outcome and finishing the job; progress lines of a task that finishes
// at once are never written. Counted on the bucket's stream, with nothing else writing it.
import t from 'tap';
import { jetstreamManager } from '@nats-io/jetstream';
import { startJobsSystem, type JobsSystem } from './lib.ts';
import { BUCKETS, STREAMS } from '../../shared/names.ts';

// Each test starts a system of its own and shares nothing with the others: four at a time (most of a
// test is waiting on nats-server: stream writes synced to disk, deliveries, sweeps).
t.jobs = 4;

async function jobWrites(s: JobsSystem, run: () => Promise<string>) {
  const jsm = await jetstreamManager(s.nc);
  const seq = async (stream = `KV_${BUCKETS.jobs}`) => (await jsm.streams.info(stream)).state.last_seq;
  const before = await seq();
  const resultsBefore = await seq(STREAMS.results);
  const id = await run();
  const done = await s.finished(id);
  // anything the supervisor still writes after the job finished belongs to the count
  await new Promise((r) => setTimeout(r, 700));
  return { done, writes: (await seq()) - before, resultWrites: (await seq(STREAMS.results)) - resultsBefore };
}

t.test('a delivered job: created dispatched, then finished with its last outcome (2 writes)', async (t) => {
  const s = await startJobsSystem(t);
  await s.startWorker();
  const { walletId } = await s.newWallet(1000);
  const { done, writes } = await jobWrites(s, async () => (await s.submit(walletId, [{ key: 'markdown', price: 30 }])).job.id);
  t.equal(done.status, 'completed');
  t.equal(done.refunded, 0);
  t.ok(done.finishedAt);
  t.equal(writes, 2, 'creation and finish (fails with a separate dispatch write, 3, or a separate finishing write)');
  t.equal(done.status, 'completed');
  t.ok(done.results[0]!.taskSeq, "the task's stream sequence is in the document written at creation");
  t.same(await s.violations(), []);
});

t.test('a failed result still goes through settling: refunded once, then finished', async (t) => {
  const s = await startJobsSystem(t);
  await s.startWorker();
  const { walletId } = await s.newWallet(1000);
  const { done } = await jobWrites(
    s,
    async () =>
      (
        await s.submit(walletId, [
          { key: 'markdown', price: 30 },
          { key: 'pdf', price: 100, behave: 'fail', params: { error: 'timeout' } },
        ])
      ).job.id,
  );
  t.equal(done.status, 'completed');
  t.equal(done.refunded, 100);
  t.equal(await s.balance(walletId), 970);
  t.same(await s.violations(), []);
});

t.test('progress of a task that finishes at once is not written to the document', async (t) => {
  const s = await startJobsSystem(t);
  await s.startWorker();
  const { walletId } = await s.newWallet(1000);
  // three progress lines 1 ms apart, then done: each used to be a write of its own (2 + 3, and a dispatch)
  const { done, writes } = await jobWrites(
    s,
    async () => (await s.submit(walletId, [{ key: 'quick', price: 500, behave: 'progress', params: { ms: 1 } }], 'labs')).job.id,
  );
  t.equal(done.status, 'completed');
  t.notOk(done.results[0]!.progress);
  // a loaded machine may let one delayed line through before the outcome arrives
  t.ok(writes <= 3, `${writes} writes (fails when every progress line is written: 6)`);
  t.same(await s.violations(), []);
});

t.test('progress lines are core messages: RESULTS stores only the outcome, the document still shows a line', async (t) => {
  const s = await startJobsSystem(t);
  await s.startWorker();
  const { walletId } = await s.newWallet(1000);
  // lines 400 ms apart: each outlives the supervisor's delay and is written to the document
  const lines: string[] = [];
  const { done, resultWrites } = await jobWrites(s, async () => {
    const { job } = await s.submit(walletId, [{ key: 'quick', price: 500, behave: 'progress', params: { ms: 400 } }], 'labs');
    const seen = await s.finished(job.id, 600).catch(() => null);
    if (seen?.results[0]?.progress) lines.push(seen.results[0].progress);
    return job.id;
  });
  t.equal(done.status, 'completed');
  t.equal(resultWrites, 1, 'one stored message: the outcome (fails when progress lines are stored: 4)');
  t.ok(lines.length, `a progress line reached the document while the task ran: ${lines.join(', ')}`);
  t.same(await s.violations(), []);
});
