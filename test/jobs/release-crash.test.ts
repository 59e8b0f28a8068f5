// A supervisor that dies in the middle of releasing a held task (issue 44 item 1,
// actors/job-supervisor/release.ts): the task was published to workers, the held copy not yet
// deleted and the result still pointing at it. The next supervisor finishes it: the task runs once,
// the held copy is dropped once its result is final, the job completes and the money is right.
import t from 'tap';
import { jetstream, jetstreamManager } from '@nats-io/jetstream';
import { startJobsSystem } from './lib.ts';
import { STREAMS, subjects } from '../../shared/names.ts';
import { taskMsgId } from '../../shared/protocol/jobs.ts';
import { publishOutcome } from '../../shared/worker.ts';
import { walletTasks } from '../../shared/jobs/share.ts';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

t.test('a release cut short between the publish and the held delete is finished by the next supervisor', async (t) => {
  const s = await startJobsSystem(t, { limits: { walletTasks: 1 }, retention: { sweepSeconds: 1 } });
  const { walletId } = await s.newWallet(1000);
  const jsm = await jetstreamManager(s.nc);
  const { job } = await s.submit(walletId, [
    { key: 'a', price: 20 },
    { key: 'b', price: 20 },
  ]);
  const [a, b] = job.results;
  t.match(await walletTasks(jsm, walletId), { taken: 1, held: 1 }, 'one task within the share, one held');
  const heldSeq = b!.taskSeq!;
  const held = await jsm.streams.getMessage(STREAMS.tasks, { seq: heldSeq });
  t.match(held!.subject, /\.held\./, "b's result points at its held message");

  // the supervisor dies; what it had done of a's outcome and b's release before that:
  await s.supervisors[0]!.stop();
  // a's outcome reported and its task gone
  await publishOutcome(s.nc, { v: 1, kind: 'done', jobId: job.id, resultKey: 'a', at: Date.now(), taskSeq: a!.taskSeq });
  await jsm.streams.deleteMessage(STREAMS.tasks, a!.taskSeq!, false);
  // b published to workers with its own task id; the held copy and the pointer left as they were
  await jetstream(s.nc).publish(subjects.taskOfWallet(subjects.taskWebsitepro, walletId), held!.data, { msgID: taskMsgId(job.id, 'b') });
  t.match(await walletTasks(jsm, walletId), { taken: 1, held: 1 }, 'the state the crash left');

  // another supervisor (and its sweeps, every second), then a worker
  await s.startSupervisor();
  await sleep(2500);
  t.match(await walletTasks(jsm, walletId), { taken: 1, held: 1 }, 'the share is full: b is not published again');
  const w = await s.startWorker();
  const done = await s.finished(job.id, 20_000);
  t.equal(done.status, 'completed');
  t.same(
    done.results.map((r) => r.status),
    ['done', 'done'],
  );
  t.equal(w.seen.filter((x) => x.jobId === job.id && x.resultKey === 'b').length, 1, 'b was worked once');
  let left = await walletTasks(jsm, walletId);
  for (let i = 0; i < 50 && left.taken + left.held > 0; i++) {
    await sleep(100);
    left = await walletTasks(jsm, walletId);
  }
  t.match(left, { taken: 0, held: 0 }, 'the held copy was dropped: nothing of the wallet left in TASKS');
  t.equal(await s.balance(walletId), 960);
  t.same(await s.violations(), []);
});
