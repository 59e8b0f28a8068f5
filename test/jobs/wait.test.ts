// Long polling (gateway/jobs/wait.ts) against a real bucket: woken by the write that finishes the
// job, bounded by its time, and still answering when no watch can be made (a failover).
import t from 'tap';
import { setTimeout as sleep } from 'node:timers/promises';
import type { KV } from '@nats-io/kv';
import { startTestNats } from '../helpers/nats.ts';
import { openJobsKv, createJobRecord, updateJob } from '../../shared/jobs/store.ts';
import { newJobRecord } from '../../gateway/jobs/create.ts';
import { waitForJob } from '../../gateway/jobs/wait.ts';
import { subjects } from '../../shared/names.ts';
import type { JobRecord } from '../../shared/protocol/jobs.ts';

async function setup(t: { teardown(fn: () => unknown): void }) {
  const tn = await startTestNats(t);
  const kv = await openJobsKv(await tn.connect('wait-test'));
  const writer = await openJobsKv(await tn.connect('wait-writer'));
  const job = newJobRecord('websitepro', { target: '127.0.0.1', items: [{ key: 'text', price: 20, task: { subject: subjects.taskWebsitepro, params: {} } }] }, 'w_test', {}, tn.config);
  await createJobRecord(writer, job);
  const finish = () => updateJob(writer, job.id, (j) => {
    j.status = 'completed';
    j.finishedAt = Date.now();
    for (const r of j.results) r.status = 'done';
    return true;
  });
  return { kv, job, finish };
}

t.test('woken by the write that finishes the job', async (t) => {
  const { kv, job, finish } = await setup(t);
  const finished = sleep(300).then(finish);
  const t0 = Date.now();
  const got = await waitForJob(kv, job, 10_000);
  await finished; // the writer's call settles before its connection closes at teardown
  t.equal(got.status, 'completed');
  t.ok(Date.now() - t0 < 9000, 'answered on the write, not at the end of the wait');
});

t.test('nothing happens: the job as it is, once the time is over', async (t) => {
  const { kv, job } = await setup(t);
  const t0 = Date.now();
  const got = await waitForJob(kv, job, 600);
  t.equal(got.status, 'queued');
  t.ok(Date.now() - t0 >= 550, 'held for the wait');
});

t.test('no watch can be made (its consumer times out in a failover): the job is read until finished', async (t) => {
  const { kv, job, finish } = await setup(t);
  // the real bucket, except that making a watch fails as it does while a stream has no leader
  let watches = 0;
  const failing = new Proxy(kv, {
    get(target, prop, receiver) {
      if (prop === 'watch') return async () => { watches++; throw Object.assign(new Error('timeout'), { name: 'TimeoutError' }); };
      const v = Reflect.get(target, prop, receiver);
      return typeof v === 'function' ? v.bind(target) : v;
    },
  }) as KV;
  const finished = sleep(300).then(finish);
  const got: JobRecord = await waitForJob(failing, job, 10_000);
  await finished;
  t.equal(watches, 1, 'a watch was tried');
  t.equal(got.status, 'completed', 'the finished job, found by reading');
});

t.test('a watch that ends early (its consumer lost): the rest of the wait reads the job', async (t) => {
  const { kv, job, finish } = await setup(t);
  // the real watch, ended by the server side 100 ms in, as when its consumer goes with a node
  const ending = new Proxy(kv, {
    get(target, prop, receiver) {
      if (prop === 'watch') {
        return async (o: Parameters<KV['watch']>[0]) => {
          const w = await target.watch(o);
          setTimeout(() => w.stop(), 100);
          return w;
        };
      }
      const v = Reflect.get(target, prop, receiver);
      return typeof v === 'function' ? v.bind(target) : v;
    },
  }) as KV;
  const finished = sleep(600).then(finish);
  const got = await waitForJob(ending, job, 10_000);
  await finished;
  t.equal(got.status, 'completed', 'found by reading after the watch ended');
});

t.test('the client goes away: the wait ends at once', async (t) => {
  const { kv, job } = await setup(t);
  const ac = new AbortController();
  setTimeout(() => ac.abort(), 200);
  const t0 = Date.now();
  const got = await waitForJob(kv, job, 10_000, ac.signal);
  t.equal(got.status, 'queued');
  t.ok(Date.now() - t0 < 5000, 'ended by the abort');
});
