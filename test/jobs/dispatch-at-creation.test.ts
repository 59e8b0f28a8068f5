// A job's tasks are published by the gateway at creation, before its document is written once as
// `processing`. The two edges of that order: an outcome that arrives before the document, and tasks
// that cannot be published at all (the job is then written `queued` and the supervisor dispatches it).
import t from 'tap';
import { DiscardPolicy, jetstream, jetstreamManager } from '@nats-io/jetstream';
import { startJobsSystem } from './lib.ts';
import { STREAMS, subjects } from '../../shared/names.ts';
import { commitJob, newJobRecord, publishSubmitted } from '../../gateway/jobs/create.ts';
import { createJobRecord, readJob } from '../../shared/jobs/store.ts';
import { markDispatched, publishRootTasks } from '../../shared/jobs/dispatch.ts';
import { publishOutcome } from '../../shared/worker.ts';
import { wallet } from '../../shared/protocol/wallet.ts';
import type { Config } from '../../shared/config/index.ts';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** A one-result websitepro job (`text`, 20 Payloads) of this wallet. */
const textJob = (config: Config, walletId: string, params: Record<string, unknown> = {}) =>
  newJobRecord(
    'websitepro',
    { target: '127.0.0.1', items: [{ key: 'text', price: 20, task: { subject: subjects.taskWebsitepro, params } }] },
    walletId,
    {},
    config,
  );

t.test('an outcome that arrives before its job document is recorded once the document is written', async (t) => {
  const s = await startJobsSystem(t);
  const { walletId } = await s.newWallet(1000);
  const job = textJob(s.config, walletId);
  await wallet.charge(s.nc, { walletId, jobId: job.id, amount: job.cost });
  // the worker was faster than the gateway's write (or the write waited out a failover)
  await publishOutcome(s.nc, { v: 1, kind: 'done', jobId: job.id, resultKey: 'text', at: Date.now() });
  // past the supervisor's quick second look: the outcome waits for its redelivery
  await sleep(1500);
  markDispatched(job, new Map());
  await createJobRecord(s.deps.kv.jobs, job);
  // fails against a supervisor that drops an outcome for a job it cannot find (stays processing)
  const done = await s.finished(job.id, 15_000);
  t.equal(done.status, 'completed');
  t.equal(done.results[0]!.status, 'done');
  t.equal(await s.balance(walletId), 980);
  t.same(await s.violations(), []);
});

t.test('tasks that cannot be published at creation: written queued, dispatched by the supervisor', async (t) => {
  const s = await startJobsSystem(t);
  await s.startWorker();
  const { walletId } = await s.newWallet(1000);
  const jsm = await jetstreamManager(s.nc);
  // TASKS full (one message, new ones refused): a real refusal of the task's publish
  const cfg = (await jsm.streams.info(STREAMS.tasks)).config;
  await jsm.streams.update(STREAMS.tasks, { ...cfg, max_msgs: 1, discard: DiscardPolicy.New });
  const filler = await jetstream(s.nc).publish(subjects.taskLabs, JSON.stringify({ filler: true }));

  const { job, balance } = await s.submit(walletId, [{ key: 'text', price: 20 }]);
  t.equal(balance, 980, 'charged');
  t.equal(job.status, 'queued', 'written queued: its task did not go out');
  t.notOk(job.results[0]!.taskSeq);
  await sleep(500);
  t.equal((await s.job(job.id)).status, 'queued', 'the supervisor cannot dispatch it either while TASKS refuses');

  await jsm.streams.deleteMessage(STREAMS.tasks, filler.seq, false);
  await jsm.streams.update(STREAMS.tasks, { ...cfg });
  // job.submitted is redelivered after the failed dispatch
  const done = await s.finished(job.id, 20_000);
  t.equal(done.status, 'completed');
  t.ok(done.results[0]!.taskSeq, 'the supervisor recorded the task it published');
  t.equal(await s.balance(walletId), 980);
  t.same(await s.violations(), []);
});

t.test('a job created through commitJob publishes no job.submitted when its tasks went out', async (t) => {
  const s = await startJobsSystem(t);
  await s.startWorker();
  const { walletId } = await s.newWallet(1000);
  const jsm = await jetstreamManager(s.nc);
  const before = (await jsm.streams.info(STREAMS.jobs)).state.last_seq;
  const job = textJob(s.config, walletId, { behave: 'succeed' });
  await commitJob(s.deps, job);
  t.equal((await s.finished(job.id)).status, 'completed');
  t.equal((await jsm.streams.info(STREAMS.jobs)).state.last_seq, before, 'nothing written to JOBS');
  t.same(await s.violations(), []);
});

t.test('a queued job dispatched again after its tasks went out (the supervisor died in between) points at its task', async (t) => {
  const s = await startJobsSystem(t); // no worker: the task stays in TASKS
  const { walletId } = await s.newWallet(1000);
  const job = textJob(s.config, walletId);
  await wallet.charge(s.nc, { walletId, jobId: job.id, amount: job.cost });
  await createJobRecord(s.deps.kv.jobs, job);
  // the first dispatch's publish, whose mark was never written (supervisor.after-dispatch-tasks)
  const first = await publishRootTasks(jetstream(s.nc), await jetstreamManager(s.nc), s.config, job);
  const seq = first.taken.get('text');
  t.ok(seq, 'the task is in TASKS');
  await publishSubmitted(jetstream(s.nc), job);
  const read = async () => (await readJob(s.deps.kv.jobs, job.id))!.job;
  let cur = await read();
  // up to 30 s: the supervisor may still be starting its consumers on a busy machine
  for (let i = 0; i < 300 && cur.status === 'queued'; i++) {
    await sleep(100);
    cur = await read();
  }
  t.equal(cur.status, 'processing', 'dispatched again');
  // fails when the repeat's sequence is dropped: the backstops that remove a result's task by it
  // (failStuckJob, failWorkerlessJob, endIfOrphaned) would leave this one for a worker
  t.equal(cur.results[0]!.taskSeq, seq, "the result points at the first publish's task");
  t.same(await s.violations(), []);
});
