// A supervisor that stops hands back what it pulled and did not handle: the next supervisor gets it
// at once (or after the step's own retry delay), not after the consumer's 30 s ack wait.
import t from 'tap';
import { startJobsSystem } from './lib.ts';
import { subjects } from '../../shared/names.ts';
import { newJobRecord } from '../../gateway/jobs/create.ts';
import { createJobRecord } from '../../shared/jobs/store.ts';
import { markDispatched } from '../../shared/jobs/dispatch.ts';
import { publishOutcome } from '../../shared/worker.ts';
import { wallet } from '../../shared/protocol/wallet.ts';
import { jetstreamManager } from '@nats-io/jetstream';
import { createHook } from 'node:async_hooks';
import { CONSUMERS, STREAMS } from '../../shared/names.ts';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
/** The supervisor's consumers wait this long for an ack before redelivering (actors/job-supervisor). */
const ACK_WAIT_MS = 30_000;

t.test('outcomes pulled by a stopping supervisor reach the next one well before the ack wait', async (t) => {
  const s = await startJobsSystem(t);
  const { walletId } = await s.newWallet(100_000);
  // Outcomes ahead of their documents: the supervisor looks for 200 ms, then asks for each again a
  // second later; with more of them than it works on at once, some wait pulled and unhandled.
  const jobs = [];
  for (let i = 0; i < 150; i++) {
    const job = newJobRecord(
      'websitepro',
      { target: '127.0.0.1', items: [{ key: 'text', price: 20, task: { subject: subjects.taskWebsitepro, params: {} } }] },
      walletId,
      {},
      s.config,
    );
    await wallet.charge(s.nc, { walletId, jobId: job.id, amount: job.cost });
    jobs.push(job);
  }
  for (const job of jobs) await publishOutcome(s.nc, { v: 1, kind: 'done', jobId: job.id, resultKey: 'text', at: Date.now() });
  // stopped while it is busy with them (first looks, retries coming back, messages buffered)
  await sleep(1100);
  await s.supervisors[0]!.stop();
  for (const job of jobs) {
    markDispatched(job, new Map());
    await createJobRecord(s.deps.kv.jobs, job);
  }
  const t0 = Date.now();
  await s.startSupervisor();
  // fails against a supervisor that drops what it pulled when it stops: those outcomes come back
  // only after the ack wait, and their jobs stay processing until then
  const bound = ACK_WAIT_MS / 2;
  const done = await Promise.all(jobs.map((j) => s.finished(j.id, bound).catch(() => null)));
  const late = jobs.filter((_, i) => done[i]?.status !== 'completed').map((j) => j.id);
  t.same(late, [], `every job completed within ${bound / 1000} s of the new supervisor (${Date.now() - t0} ms)`);
  t.same(await s.violations(), []);
});

t.test('a supervisor stopped while outcomes stream in leaves none of them waiting for the ack wait', async (t) => {
  const s = await startJobsSystem(t);
  const jsm = await jetstreamManager(s.nc);
  // outcomes of jobs that never existed, past the grace: each is dropped and acked at once, so the
  // supervisor pulls them as fast as it can while it is stopped
  const n = 3000;
  const sending = (async () => {
    for (let i = 0; i < n; i++) {
      await publishOutcome(s.nc, { v: 1, kind: 'done', jobId: `job_gone${i}`, resultKey: 'text', at: 1 });
    }
  })();
  await sleep(400);
  await s.supervisors[0]!.stop();
  await sending;
  await s.startSupervisor();
  const t0 = Date.now();
  let info = await jsm.consumers.info(STREAMS.results, CONSUMERS.supervisorResults);
  while ((info.num_pending > 0 || info.num_ack_pending > 0) && Date.now() - t0 < ACK_WAIT_MS / 2) {
    await sleep(200);
    info = await jsm.consumers.info(STREAMS.results, CONSUMERS.supervisorResults);
  }
  // fails when the stopped supervisor dropped messages it had pulled: they stay pending an ack until the ack wait
  t.same(
    { pending: info.num_pending, ackPending: info.num_ack_pending },
    { pending: 0, ackPending: 0 },
    `all handled ${Date.now() - t0} ms after the new supervisor started`,
  );
});

t.test('a supervisor stopped right after its start leaves no timer of its own keeping the process alive', async (t) => {
  const s = await startJobsSystem(t);
  // every timer made while the supervisor starts and stops, with where it was made
  const made = new Map<number, { where: string; timer: { hasRef?: () => boolean } }>();
  const hook = createHook({
    init(id, type, _trigger, resource) {
      if (type === 'Timeout') made.set(id, { where: new Error().stack ?? '', timer: resource as { hasRef?: () => boolean } });
    },
    destroy(id) {
      made.delete(id);
    },
  }).enable();
  const h = await s.startSupervisor();
  await h.stop();
  // a cleared timer's destroy hook runs after the current tick
  await new Promise((r) => setImmediate(r));
  hook.disable();
  // the supervisor's 15 s catch-up bound and its webhook sender's 5 s stop bound stayed behind
  // (a process stopped soon after a start lived on until they fired); the connection's own
  // heartbeats (nats-core) end with the connection, closed at teardown
  const ours = [...made.values()].filter(
    (m) => m.timer.hasRef?.() && /\/(actors|shared)\//.test(m.where) && !/node_modules/.test(m.where.split('\n').slice(1, 4).join('\n')),
  );
  t.same(
    ours.map((m) =>
      m.where
        .split('\n')
        .slice(2, 12)
        .map((l) => l.trim())
        .join(' | '),
    ),
    [],
    'no timer of the supervisor left running',
  );
});
