// The gateway's shared long-poll watch (gateway/jobs/watch.ts) against a real bucket: one watch
// consumer for every poll, woken by the finishing write, and still answering by reads when the
// watch cannot be made or breaks.
import t from 'tap';
import { setTimeout as sleep } from 'node:timers/promises';
import { jetstreamManager } from '@nats-io/jetstream';
import type { KV } from '@nats-io/kv';
import { startTestNats } from '../helpers/nats.ts';
import { openJobsKv, createJobRecord, updateJob } from '../../shared/jobs/store.ts';
import { newJobRecord } from '../../gateway/jobs/create.ts';
import { JobWatch } from '../../gateway/jobs/watch.ts';
import { BUCKETS, subjects } from '../../shared/names.ts';
import type { JobRecord } from '../../shared/protocol/jobs.ts';

async function setup(t: { teardown(fn: () => unknown): void }) {
  const tn = await startTestNats(t);
  const nc = await tn.connect('watch-test');
  const kv = await openJobsKv(nc);
  const writer = await openJobsKv(await tn.connect('watch-writer'));
  const newJob = async () => {
    const job = newJobRecord(
      'websitepro',
      { target: '127.0.0.1', items: [{ key: 'text', price: 20, task: { subject: subjects.taskWebsitepro, params: {} } }] },
      'w_test',
      {},
      tn.config,
    );
    await createJobRecord(writer, job);
    return job;
  };
  const finish = (id: string) =>
    updateJob(writer, id, (j) => {
      j.status = 'completed';
      j.finishedAt = Date.now();
      for (const r of j.results) r.status = 'done';
      return true;
    });
  const consumers = async () => (await (await jetstreamManager(nc)).streams.info(`KV_${BUCKETS.jobs}`)).state.consumer_count;
  return { kv, newJob, finish, consumers };
}

t.test('many polls, one watch consumer; each woken by its own finishing write', async (t) => {
  const { kv, newJob, finish, consumers } = await setup(t);
  const watch = new JobWatch(kv);
  t.teardown(() => watch.stop());
  const jobs = await Promise.all(Array.from({ length: 5 }, () => newJob()));
  const t0 = Date.now();
  const polls = jobs.map((j) => watch.wait(j, 10_000));
  await sleep(300);
  // fails with a watch per poll (5 consumers)
  t.equal(await consumers(), 1, 'one consumer on the bucket for five polls');
  for (const j of jobs) await finish(j.id);
  const got = await Promise.all(polls);
  t.same(
    got.map((j) => j.status),
    jobs.map(() => 'completed'),
  );
  t.same(
    got.map((j) => j.id),
    jobs.map((j) => j.id),
    'each poll got its own job',
  );
  t.ok(Date.now() - t0 < 9000, 'answered on the writes, not at the end of the wait');
  t.equal(watch.started, 1);
});

t.test('nothing happens: the job as it is, once the time is over', async (t) => {
  const { kv, newJob } = await setup(t);
  const watch = new JobWatch(kv);
  t.teardown(() => watch.stop());
  const job = await newJob();
  const t0 = Date.now();
  const got = await watch.wait(job, 600);
  t.equal(got.status, 'queued');
  t.ok(Date.now() - t0 >= 550, 'held for the wait');
});

t.test('a finish that went by just before the poll registered is answered at once', async (t) => {
  const { kv, newJob, finish } = await setup(t);
  const watch = new JobWatch(kv);
  t.teardown(() => watch.stop());
  const other = await newJob();
  await watch.wait(other, 50); // the watch is running
  const job = await newJob();
  await finish(job.id);
  await sleep(300); // delivered to the watch with nobody waiting for it
  const t0 = Date.now();
  const got = await watch.wait(job, 5000); // the caller still holds the record before the finish
  t.equal(got.status, 'completed');
  t.ok(Date.now() - t0 < 4000, 'not held to the end of the wait');
});

t.test('a finish written before the watch was made (after the caller read the job) is answered at once', async (t) => {
  const { kv, newJob, finish } = await setup(t);
  const watch = new JobWatch(kv);
  t.teardown(() => watch.stop());
  const job = await newJob(); // the caller's read: still queued
  await finish(job.id); // then finished, before any watch exists: the watch (updates only) never delivers it
  const t0 = Date.now();
  const got = await watch.wait(job, 5000);
  t.equal(got.status, 'completed');
  t.ok(Date.now() - t0 < 4000, 'not held to the end of the wait');
  t.equal(watch.started, 1);
});

t.test('no watch can be made (a failover): polls read the job until it is finished', async (t) => {
  const { kv, newJob, finish } = await setup(t);
  let watches = 0;
  const failing = new Proxy(kv, {
    get(target, prop, receiver) {
      if (prop === 'watch')
        return async () => {
          watches++;
          throw Object.assign(new Error('timeout'), { name: 'TimeoutError' });
        };
      const v = Reflect.get(target, prop, receiver);
      return typeof v === 'function' ? v.bind(target) : v;
    },
  }) as KV;
  const watch = new JobWatch(failing);
  const job = await newJob();
  const finished = sleep(300).then(() => finish(job.id));
  const got: JobRecord = await watch.wait(job, 10_000);
  await finished;
  t.equal(watches, 1, 'a watch was tried');
  t.equal(got.status, 'completed', 'the finished job, found by reading');
});

t.test('the watch breaks: waiting polls go on by reading, a later poll makes it again', async (t) => {
  const { kv, newJob, finish } = await setup(t);
  let made = 0;
  // the real watch, the first one ended 200 ms in, as when its consumer goes with a node
  const breaking = new Proxy(kv, {
    get(target, prop, receiver) {
      if (prop === 'watch') {
        return async (o: Parameters<KV['watch']>[0]) => {
          const w = await target.watch(o);
          if (made++ === 0) setTimeout(() => w.stop(), 200);
          return w;
        };
      }
      const v = Reflect.get(target, prop, receiver);
      return typeof v === 'function' ? v.bind(target) : v;
    },
  }) as KV;
  const watch = new JobWatch(breaking);
  t.teardown(() => watch.stop());
  const job = await newJob();
  const finished = sleep(700).then(() => finish(job.id));
  const got = await watch.wait(job, 10_000);
  await finished;
  t.equal(got.status, 'completed', 'found by reading after the watch ended');
  await sleep(1100); // past the pause between two attempts
  const second = await newJob();
  const again = watch.wait(second, 10_000);
  await sleep(200);
  await finish(second.id);
  t.equal((await again).status, 'completed');
  t.equal(watch.started, 2, 'the watch was made again');
});

t.test('the client goes away: the wait ends at once', async (t) => {
  const { kv, newJob } = await setup(t);
  const watch = new JobWatch(kv);
  t.teardown(() => watch.stop());
  const job = await newJob();
  const ac = new AbortController();
  setTimeout(() => ac.abort(), 200);
  const t0 = Date.now();
  const got = await watch.wait(job, 10_000, ac.signal);
  t.equal(got.status, 'queued');
  t.ok(Date.now() - t0 < 5000, 'ended by the abort');
});

t.test('the finish the watch brings while the first poll re-reads the job is not replaced by that older read', async (t) => {
  const { kv, newJob, finish } = await setup(t);
  const job = await newJob();
  // The bucket as the watch sees it, except that the first poll's re-read is answered late: its
  // record is read before the finish, and handed back only once the watch has delivered the finish.
  let held = false;
  const slowFirstGet = new Proxy(kv, {
    get(target, prop, receiver) {
      if (prop !== 'get' || held) return Reflect.get(target, prop, receiver);
      held = true;
      return async (key: string) => {
        const before = await target.get(key);
        await finish(job.id);
        await sleep(300); // the watch delivers the finish meanwhile
        return before;
      };
    },
  });
  const watch = new JobWatch(slowFirstGet as KV);
  t.teardown(() => watch.stop());
  const got = await watch.wait(job, 5000);
  t.ok(held, 'the re-read went out while the finish came in');
  t.equal(got.status, 'completed', 'the finish is the answer');
});
