// How often a job's document is written: a delivered job costs its creation (already dispatched:
// the gateway publishes the tasks first) and one write recording the last outcome and finishing the job; progress lines of a task that finishes
// at once are never written. Counted on the bucket's stream, with nothing else writing it.
import t from 'tap';
import { jetstreamManager } from '@nats-io/jetstream';
import { startJobsSystem, type JobsSystem } from './lib.ts';
import { BUCKETS } from '../../shared/names.ts';

async function jobWrites(s: JobsSystem, run: () => Promise<string>) {
  const jsm = await jetstreamManager(s.nc);
  const seq = async () => (await jsm.streams.info(`KV_${BUCKETS.jobs}`)).state.last_seq;
  const before = await seq();
  const id = await run();
  const done = await s.finished(id);
  // anything the supervisor still writes after the job finished belongs to the count
  await new Promise((r) => setTimeout(r, 700));
  return { done, writes: (await seq()) - before };
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
  t.ok(done.results[0]!.taskSeq, 'the task\'s stream sequence is in the document written at creation');
  t.same(await s.violations(), []);
});

t.test('a failed result still goes through settling: refunded once, then finished', async (t) => {
  const s = await startJobsSystem(t);
  await s.startWorker();
  const { walletId } = await s.newWallet(1000);
  const { done } = await jobWrites(s, async () => (await s.submit(walletId, [{ key: 'markdown', price: 30 }, { key: 'pdf', price: 100, behave: 'fail', params: { error: 'timeout' } }])).job.id);
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
  const { done, writes } = await jobWrites(s, async () => (await s.submit(walletId, [{ key: 'quick', price: 500, behave: 'progress', params: { ms: 1 } }], 'labs')).job.id);
  t.equal(done.status, 'completed');
  t.notOk(done.results[0]!.progress);
  // a loaded machine may let one delayed line through before the outcome arrives
  t.ok(writes <= 3, `${writes} writes (fails when every progress line is written: 6)`);
  t.same(await s.violations(), []);
});
