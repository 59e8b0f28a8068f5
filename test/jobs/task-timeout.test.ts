import t from 'tap';
import { jetstream } from '@nats-io/jetstream';
import { startTestNats, testLog } from '../helpers/nats.ts';
import { runWorker } from '../../shared/worker.ts';
import { subjects, OBJECT_STORES } from '../../shared/names.ts';
import { taskMsgId, type Outcome, type Task } from '../../shared/protocol/jobs.ts';

t.test('a task whose handler hangs while heartbeating fails as timeout at its bound', async (t) => {
  const tn = await startTestNats(t, { jobs: { ackWaitSeconds: 1 } });
  let aborted = false;
  const worker = await runWorker({
    nc: await tn.connect('worker'),
    config: tn.config,
    log: testLog(),
    consumer: 'timeout-test',
    filterSubject: subjects.taskLabs,
    concurrency: 1,
    taskTimeoutMs: 1500,
    handle: (ctx) =>
      new Promise(() => {
        ctx.signal.addEventListener('abort', () => {
          aborted = true;
        });
      }),
  });
  t.teardown(() => worker.stop());
  const outcomes: Outcome[] = [];
  const sub = tn.nc.subscribe(subjects.result('job_t'), {
    callback: (_e, m) => {
      outcomes.push(m.json<Outcome>());
    },
  });
  t.teardown(() => sub.unsubscribe());
  const task: Task = {
    v: 1,
    jobId: 'job_t',
    service: 'labs',
    resultKey: 'quick',
    walletId: 'w',
    store: OBJECT_STORES.reports,
    objectName: 'job_t/quick',
    expiresAt: Date.now() + 60000,
    params: {},
  };
  const t0 = Date.now();
  await jetstream(tn.nc).publish(subjects.taskLabs, JSON.stringify(task), { msgID: taskMsgId('job_t', 'quick') });
  while (!outcomes.some((o) => o.kind === 'failed') && Date.now() - t0 < 15000) await new Promise((r) => setTimeout(r, 100));
  const failed = outcomes.find((o) => o.kind === 'failed');
  t.ok(failed, 'a failed outcome was reported');
  t.equal(failed && 'error' in failed ? failed.error : undefined, 'timeout');
  t.ok(Date.now() - t0 >= 1400, 'not before the bound (the heartbeat kept it alive past ack_wait)');
  t.ok(aborted, 'the handler was told to give up');
  await new Promise((r) => setTimeout(r, 2500));
  t.equal(outcomes.filter((o) => o.kind === 'failed').length, 1, 'acked: not redelivered');
});
