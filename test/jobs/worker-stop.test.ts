// A worker that stops hands back the tasks it still holds: one whose handler ignores the abort goes
// to another instance when the stop gives up waiting for it, not after ack_wait (or never: its
// heartbeat would keep the task while the process lives on).
import t from 'tap';
import { jetstream } from '@nats-io/jetstream';
import { startTestNats, testLog } from '../helpers/nats.ts';
import { runWorker } from '../../shared/worker.ts';
import { subjects } from '../../shared/names.ts';
import type { Task } from '../../shared/protocol/jobs.ts';

t.test('a task whose handler ignores the stop goes to the next worker when the stop ends', async (t) => {
  // an ack wait far longer than the test waits: only a handed-back task can arrive in time
  const tn = await startTestNats(t, { jobs: { ackWaitSeconds: 120 } });
  const log = testLog();
  let release!: () => void;
  const stuck = new Promise<void>((r) => {
    release = r;
  });
  t.teardown(() => release());
  let started!: () => void;
  const startedP = new Promise<void>((r) => {
    started = r;
  });
  const first = await runWorker({
    nc: await tn.connect('w1'),
    config: tn.config,
    log,
    consumer: 'stop-test',
    filterSubject: subjects.taskWebsitepro,
    concurrency: 1,
    handle: async () => {
      started();
      await stuck; // deaf to ctx.signal
      return {};
    },
  });
  const task: Task = {
    v: 1,
    jobId: 'job_stoptest',
    service: 'websitepro',
    resultKey: 'text',
    walletId: 'w',
    store: 'results',
    objectName: 'job_stoptest/text',
    expiresAt: Date.now() + 60_000,
    params: {},
  };
  await jetstream(tn.nc).publish(subjects.taskWebsitepro, JSON.stringify(task));
  await startedP;
  await first.stop();

  let seenBySecond = 0;
  const second = await runWorker({
    nc: await tn.connect('w2'),
    config: tn.config,
    log,
    consumer: 'stop-test',
    filterSubject: subjects.taskWebsitepro,
    concurrency: 1,
    handle: async (ctx) => {
      seenBySecond = ctx.deliveryCount;
      return {};
    },
  });
  t.teardown(() => second.stop());
  // fails against a worker that leaves the task in the hung handler's hands: the heartbeat keeps it
  for (let i = 0; i < 100 && !seenBySecond; i++) await new Promise((r) => setTimeout(r, 100));
  t.equal(seenBySecond, 2, 'the second worker got the task as its second delivery, within 10 s of the stop');
});
