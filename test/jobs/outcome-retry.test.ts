// A worker that finished its task while the RESULTS stream cannot take the outcome (a failover:
// no leader, "no responders") keeps trying to report it instead of giving the task back: the work
// is not done again and the task's deliveries are not used up.
import t from 'tap';
import { jetstream, jetstreamManager } from '@nats-io/jetstream';
import { startTestNats, testLog } from '../helpers/nats.ts';
import { runWorker } from '../../shared/worker.ts';
import { provision } from '../../shared/nats/provision.ts';
import { STREAMS, subjects, OBJECT_STORES } from '../../shared/names.ts';
import { taskMsgId, type Outcome, type Task } from '../../shared/protocol/jobs.ts';

t.test('the outcome is published once RESULTS is back; the task ran once', async (t) => {
  const tn = await startTestNats(t, { jobs: { ackWaitSeconds: 2, maxDeliver: 3 } });
  const jsm = await jetstreamManager(tn.nc);
  // RESULTS gone: a publish on result.* gets no answer, as while the stream elects a leader
  await jsm.streams.delete(STREAMS.results);
  const deliveries: number[] = [];
  // two instances on the task consumer: a redelivery (ack_wait passing without a heartbeat) would
  // find the idle one
  for (const name of ['worker-a', 'worker-b']) {
    const worker = await runWorker({
      nc: await tn.connect(name),
      config: tn.config,
      log: testLog(),
      consumer: 'outcome-retry-test',
      filterSubject: subjects.taskLabs,
      concurrency: 1,
      handle: async (ctx) => {
        deliveries.push(ctx.deliveryCount);
        return { extra: { ok: true } };
      },
    });
    t.teardown(() => worker.stop());
  }
  const task: Task = {
    v: 1,
    jobId: 'job_r',
    service: 'labs',
    resultKey: 'quick',
    walletId: 'w',
    store: OBJECT_STORES.reports,
    objectName: 'job_r/quick',
    expiresAt: Date.now() + 60000,
    params: {},
  };
  await jetstream(tn.nc).publish(subjects.taskLabs, JSON.stringify(task), { msgID: taskMsgId('job_r', 'quick') });
  for (let i = 0; i < 100 && deliveries.length === 0; i++) await new Promise((r) => setTimeout(r, 50));
  t.same(deliveries, [1], 'the worker did the task');
  // longer than ack_wait: without its heartbeat the task would be redelivered meanwhile
  await new Promise((r) => setTimeout(r, 3000));
  await provision(tn.nc, tn.config);
  let outcome: Outcome | undefined;
  for (let i = 0; i < 100 && !outcome; i++) {
    const sm = await jsm.streams.getMessage(STREAMS.results, { last_by_subj: subjects.result('job_r') }).catch(() => null);
    if (sm) outcome = sm.json<Outcome>();
    else await new Promise((r) => setTimeout(r, 100));
  }
  t.equal(outcome?.kind, 'done', 'the outcome arrived once the stream was back');
  t.equal(outcome?.jobId, 'job_r');
  await new Promise((r) => setTimeout(r, 2500));
  t.same(deliveries, [1], 'the task ran once: not redelivered');
  t.equal((await jsm.streams.info(STREAMS.tasks)).state.messages, 0, 'acked after the outcome');
});
