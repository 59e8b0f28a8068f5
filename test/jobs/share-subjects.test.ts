// Task subjects carry their wallet (issue 44 item 1, shared/names.ts): a worker's durable consumer
// made before that (one filter, the kind subject) is brought in line at start, takes tasks of every
// wallet and still takes those on the old subject; a held task is taken by no worker; the counts
// of shared/jobs/share.ts come from the stream.
import t from 'tap';
import { jetstream, jetstreamManager, AckPolicy } from '@nats-io/jetstream';
import { startTestNats, testLog } from '../helpers/nats.ts';
import { runWorker } from '../../shared/worker.ts';
import { STREAMS, subjects, OBJECT_STORES } from '../../shared/names.ts';
import type { Task } from '../../shared/protocol/jobs.ts';
import { freeShare, publishShared, walletTasks, walletsWithHeld } from '../../shared/jobs/share.ts';

const task = (jobId: string, walletId: string): Task => ({
  v: 1,
  jobId,
  service: 'labs',
  resultKey: 'quick',
  walletId,
  store: OBJECT_STORES.reports,
  objectName: `${jobId}/quick`,
  expiresAt: Date.now() + 60000,
  params: {},
});

t.test("an old worker consumer takes every wallet's tasks after its start, and the old subject's; held ones wait", async (t) => {
  const tn = await startTestNats(t, { limits: { walletTasks: 1 } });
  const jsm = await jetstreamManager(tn.nc);
  // the consumer as a worker of the previous layout made it
  await jsm.consumers.add(STREAMS.tasks, { durable_name: 'old-labs', filter_subject: subjects.taskLabs, ack_policy: AckPolicy.Explicit });
  const js = jetstream(tn.nc);
  // published before the upgrade, on the kind subject
  await js.publish(subjects.taskLabs, JSON.stringify(task('job_old', 'w_a')));
  // wallet A: one within its share, one held; wallet B: one
  const a = await publishShared(js, jsm, tn.config, 'w_a', [
    { kind: subjects.taskLabs, task: task('job_a1', 'w_a') },
    { kind: subjects.taskLabs, task: { ...task('job_a2', 'w_a') } },
  ]);
  t.equal(a.taken.size, 1);
  t.equal(a.held.size, 1);
  t.match(await walletTasks(jsm, 'w_a'), { taken: 1, held: 1 });
  t.equal(await freeShare(jsm, tn.config, 'w_a', subjects.taskLabs), 0);
  t.same(await walletsWithHeld(jsm), ['w_a']);
  await publishShared(js, jsm, tn.config, 'w_b', [{ kind: subjects.taskLabs, task: task('job_b1', 'w_b') }]);

  const seen: string[] = [];
  const worker = await runWorker({
    nc: await tn.connect('worker'),
    config: tn.config,
    log: testLog(),
    consumer: 'old-labs',
    filterSubject: subjects.taskLabs,
    concurrency: 4,
    handle: async (ctx) => {
      seen.push(ctx.task.jobId);
      return {};
    },
  });
  t.teardown(() => worker.stop());
  const info = await jsm.consumers.info(STREAMS.tasks, 'old-labs');
  t.same(info.config.filter_subjects, subjects.taskFilters(subjects.taskLabs), 'the filters are the new ones');
  t.notOk(info.config.filter_subject, 'the single filter is gone');
  for (let i = 0; i < 100 && seen.length < 3; i++) await new Promise((r) => setTimeout(r, 50));
  await new Promise((r) => setTimeout(r, 300));
  t.same(seen.sort(), ['job_a1', 'job_b1', 'job_old'], 'every taken task and the old one; not the held one');
  t.match(await walletTasks(jsm, 'w_a'), { taken: 0, held: 1 }, 'the held task is still there');
});

t.test('each worker kind has its own share: a full converter share holds no labs or browser task', async (t) => {
  const tn = await startTestNats(t, { limits: { walletTasks: 1 } });
  const jsm = await jetstreamManager(tn.nc);
  const js = jetstream(tn.nc);
  const shots = (v: string) => `task.shots.chromium.${v}`;
  await publishShared(js, jsm, tn.config, 'w_a', [
    { kind: subjects.taskWebsitepro, task: task('job_1', 'w_a') },
    { kind: subjects.taskWebsitepro, task: task('job_2', 'w_a') },
    { kind: subjects.taskLabs, task: task('job_3', 'w_a') },
    { kind: shots('156'), task: task('job_4', 'w_a') },
    { kind: shots('143'), task: task('job_5', 'w_a') },
    { kind: shots('156'), task: task('job_6', 'w_a') },
  ]);
  const w = await walletTasks(jsm, 'w_a');
  t.match(w, { taken: 4, held: 2 }, 'one of each kind to workers; the second websitepro and the second chromium 156 held');
  t.same(w.byKind.get('websitepro'), { taken: 1, held: 1 });
  t.same(w.byKind.get('labs'), { taken: 1, held: 0 });
  t.same(w.byKind.get('shots.chromium.156'), { taken: 1, held: 1 });
  t.same(w.byKind.get('shots.chromium.143'), { taken: 1, held: 0 });
  t.equal(await freeShare(jsm, tn.config, 'w_a', subjects.taskWebsitepro), 0);
  t.equal(await freeShare(jsm, tn.config, 'w_a', shots('131')), 1, 'a pool the wallet does not use is all free');
});
