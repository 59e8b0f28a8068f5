// Faults: crashing and killed workers, exhausted deliveries, stuck tasks, restarted and doubled
// supervisors, a lost job.submitted. The money audit must stay clean through all of them.
import t from 'tap';
import { spawn } from 'node:child_process';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { jetstreamManager } from '@nats-io/jetstream';
import { startJobsSystem } from './lib.ts';
import { STREAMS, subjects } from '../../shared/names.ts';
import { newJobRecord } from '../../gateway/jobs/create.ts';
import { createJobRecord } from '../../shared/jobs/store.ts';
import { wallet } from '../../shared/protocol/wallet.ts';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

// Each test has a system of its own (nats-server, wallet, supervisor, workers) and spends most of
// its time waiting on the server's clocks (ack waits, max deliveries, sweeps): three at a time.
t.jobs = 3;

t.test('a crash is redelivered and the second delivery delivers', async (t) => {
  const s = await startJobsSystem(t);
  const w = await s.startWorker();
  const { walletId } = await s.newWallet(1000);
  const { job } = await s.submit(walletId, [{ key: 'text', price: 20, behave: 'crash-once' }]);
  const done = await s.finished(job.id);
  t.equal(done.status, 'completed');
  t.same(
    w.seen.filter((x) => x.jobId === job.id).map((x) => x.delivery),
    [1, 2],
  );
  t.equal(await s.balance(walletId), 980);
  t.same(await s.violations(), []);
});

t.test('deliveries exhausted: worker_lost, refunded, task removed from the queue', async (t) => {
  const s = await startJobsSystem(t);
  const w = await s.startWorker();
  const { walletId } = await s.newWallet(1000);
  const { job } = await s.submit(walletId, [
    { key: 'text', price: 20, behave: 'crash' },
    { key: 'markdown', price: 30 },
  ]);
  const done = await s.finished(job.id, 30_000);
  t.equal(done.status, 'completed');
  const lost = done.results.find((r) => r.key === 'text')!;
  t.equal(lost.status, 'failed');
  t.equal(lost.error, 'worker_lost');
  t.equal(lost.refunded, true);
  // The server counts max_deliver deliveries before it gives up. Usually the worker saw all of
  // them, but CI once saw 2 of 3. Likely cause (not proven): a delivery that crossed a pull's 1 s
  // expiry was dropped by the client and still counted. So: between two (retried) and max_deliver.
  const seen = w.seen.filter((x) => x.resultKey === 'text').map((x) => x.delivery);
  t.ok(
    seen.length >= 2 && seen.length <= s.config.jobs.maxDeliver,
    `retried, never past max_deliver (deliveries seen: ${seen.join(', ')})`,
  );
  t.ok(
    seen.every((d, i) => d >= 1 && d <= s.config.jobs.maxDeliver && (i === 0 || d > seen[i - 1]!)),
    'delivery counts rise within max_deliver',
  );
  t.equal(await s.balance(walletId), 1000 - 30);
  const jsm = await jetstreamManager(s.nc);
  // deleted right after the worker_lost outcome is published: poll rather than race it
  for (let i = 0; i < 50 && (await jsm.streams.info(STREAMS.tasks)).state.messages > 0; i++) await sleep(100);
  t.equal((await jsm.streams.info(STREAMS.tasks)).state.messages, 0, 'the exhausted task was deleted');
  t.same(await s.violations(), []);
});

t.test('deliveries exhausted while no supervisor runs: the stored advisory is acted on when one starts', async (t) => {
  const s = await startJobsSystem(t);
  const w = await s.startWorker();
  const { walletId } = await s.newWallet(1000);
  const { job } = await s.submit(walletId, [
    { key: 'text', price: 20, behave: 'crash' },
    { key: 'markdown', price: 30 },
  ]);
  for (let i = 0; i < 100 && (await s.job(job.id)).status === 'queued'; i++) await sleep(50);
  await s.supervisors[0]!.stop();
  // the core advisory goes out now, with nobody subscribed; the LOST_TASKS stream keeps it
  const jsm = await jetstreamManager(s.nc);
  for (let i = 0; i < 300 && (await jsm.streams.info(STREAMS.lostTasks)).state.messages === 0; i++) await sleep(100);
  t.equal((await jsm.streams.info(STREAMS.lostTasks)).state.messages, 1, 'the advisory is stored');
  t.ok(w.seen.filter((x) => x.resultKey === 'text').length >= 2, 'the task was retried before it ran out');
  t.equal((await s.job(job.id)).status, 'processing', 'nothing moves without a supervisor');
  await s.startSupervisor();
  // jobs.stuckSeconds is hours: only the stored advisory can finish the job within the wait
  const done = await s.finished(job.id, 20_000);
  t.equal(done.status, 'completed');
  t.same(
    done.results.map((r) => [r.key, r.status, r.error ?? null, r.refunded]),
    [
      ['text', 'failed', 'worker_lost', true],
      ['markdown', 'done', null, false],
    ],
  );
  t.equal(await s.balance(walletId), 1000 - 30);
  // the task is deleted and the advisory acked after the outcome: poll rather than race them
  for (let i = 0; i < 50 && (await jsm.streams.info(STREAMS.tasks)).state.messages > 0; i++) await sleep(100);
  t.equal((await jsm.streams.info(STREAMS.tasks)).state.messages, 0, 'the exhausted task was deleted');
  for (let i = 0; i < 50 && (await jsm.streams.info(STREAMS.lostTasks)).state.messages > 0; i++) await sleep(100);
  t.equal((await jsm.streams.info(STREAMS.lostTasks)).state.messages, 0, 'the advisory was consumed');
  t.same(await s.violations(), []);
});

t.test('a worker process killed mid-task: the task is redelivered to another worker', async (t) => {
  const s = await startJobsSystem(t, { jobs: { ackWaitSeconds: 2, maxDeliver: 3 } });
  const script = fileURLToPath(new URL('../helpers/test-worker.ts', import.meta.url));
  const child = spawn(process.execPath, [script, s.server.url, 'test-worker', subjects.taskWebsitepro, '2', '3'], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  t.teardown(() => {
    if (child.exitCode === null) child.kill('SIGKILL');
  });
  const lines = createInterface({ input: child.stdout! });
  const next = (re: RegExp) =>
    new Promise<string>((resolve) => {
      const on = (l: string) => {
        if (re.test(l)) {
          lines.off('line', on);
          resolve(l);
        }
      };
      lines.on('line', on);
    });
  await next(/^ready$/);
  const { walletId } = await s.newWallet(1000);
  // listened for before the creation: its task goes out with it and may start before submit returns
  const started = next(/^working /);
  const { job } = await s.submit(walletId, [{ key: 'pdf', price: 100, behave: 'hang-once' }]);
  const working = await started;
  t.match(working, `working ${job.id} pdf 1`);
  child.kill('SIGKILL');
  await new Promise((r) => child.once('exit', r));
  const w = await s.startWorker();
  const done = await s.finished(job.id, 20_000);
  t.equal(done.status, 'completed');
  t.same(
    w.seen.map((x) => x.delivery),
    [2],
    'the other worker got the second delivery',
  );
  t.equal(await s.balance(walletId), 900);
  t.same(await s.violations(), []);
});

t.test('a supervisor restarted mid-job carries on', async (t) => {
  const s = await startJobsSystem(t);
  await s.startWorker();
  const { walletId } = await s.newWallet(1000);
  const { job } = await s.submit(walletId, [
    { key: 'a', price: 10, behave: 'slow', params: { ms: 1500 } },
    { key: 'b', price: 20, behave: 'fail' },
  ]);
  // wait until dispatched and the fast failure recorded, then stop the only supervisor while the
  // slow task runs. The tasks go out with the creation, so b's outcome can reach the supervisor
  // before the document does and be retried a second later; stopped in that second, the retry
  // would wait out the consumer's 30 s ack wait (delayed, not lost), longer than this test waits.
  for (let i = 0; i < 100; i++) {
    const cur = await s.job(job.id);
    if (cur.status !== 'queued' && cur.results.find((r) => r.key === 'b')?.status !== 'pending') break;
    await sleep(50);
  }
  t.equal((await s.job(job.id)).status, 'processing');
  t.equal((await s.job(job.id)).results.find((r) => r.key === 'a')?.status, 'pending', 'the slow task still runs');
  await s.supervisors[0]!.stop();
  await sleep(2000);
  t.equal((await s.job(job.id)).status, 'processing', 'nothing moves without a supervisor');
  // and a job submitted while no supervisor runs waits in the JOBS stream
  const { job: second } = await s.submit(walletId, [{ key: 'c', price: 5 }]);
  await s.startSupervisor();
  const done = await s.finished(job.id);
  t.equal(done.status, 'completed');
  t.same(
    done.results.map((r) => [r.key, r.status, r.refunded]),
    [
      ['a', 'done', false],
      ['b', 'failed', true],
    ],
  );
  t.equal((await s.finished(second.id)).status, 'completed');
  t.equal(await s.balance(walletId), 1000 - 10 - 5);
  t.same(await s.violations(), []);
});

t.test('two supervisors share the work without stepping on each other', async (t) => {
  const s = await startJobsSystem(t);
  await s.startSupervisor();
  await s.startWorker({ concurrency: 8 });
  const { walletId } = await s.newWallet(100_000);
  const jobs = await Promise.all(
    Array.from({ length: 12 }, (_, i) =>
      s.submit(walletId, [
        { key: 'ok', price: 10, behave: i % 3 === 0 ? 'crash-once' : 'succeed' },
        { key: 'bad', price: 7, behave: 'fail' },
        { key: 'p', price: 3, behave: i % 2 ? 'progress' : 'succeed', params: { ms: 50 } },
      ]),
    ),
  );
  const done = await Promise.all(jobs.map(({ job }) => s.finished(job.id, 30_000)));
  const odd = done.filter((j) => j.status !== 'completed' || j.refunded !== 7);
  t.same(
    odd.map((j) => ({ status: j.status, refunded: j.refunded, results: j.results.map((r) => [r.key, r.status, r.refunded]) })),
    [],
    'every job completed with exactly the failed result refunded',
  );
  t.equal(await s.balance(walletId), 100_000 - 12 * 13);
  t.same(await s.violations(), []);
});

t.test('a job whose job.submitted was lost is dispatched by the sweep', async (t) => {
  const s = await startJobsSystem(t, { retention: { sweepSeconds: 0.3 } });
  await s.startWorker();
  const { walletId } = await s.newWallet(1000);
  const job = newJobRecord(
    'websitepro',
    { target: '127.0.0.1', items: [{ key: 'text', price: 20, task: { subject: subjects.taskWebsitepro, params: { behave: 'succeed' } } }] },
    walletId,
    {},
    s.config,
  );
  await wallet.charge(s.nc, { walletId, jobId: job.id, amount: job.cost });
  await createJobRecord(s.deps.kv.jobs, job); // and never published
  const done = await s.finished(job.id, 20_000);
  t.equal(done.status, 'completed');
  t.same(await s.violations(), []);
});

t.test('a task stuck beyond jobs.stuckSeconds fails as worker_lost and is refunded', async (t) => {
  const s = await startJobsSystem(t, { retention: { sweepSeconds: 0.3 }, jobs: { stuckSeconds: 2 } });
  await s.startWorker();
  const { walletId } = await s.newWallet(1000);
  const { job } = await s.submit(walletId, [{ key: 'quick', price: 500, behave: 'hang' }], 'labs');
  const done = await s.finished(job.id, 20_000);
  t.equal(done.status, 'failed');
  t.equal(done.error, 'worker_lost');
  t.equal(done.results[0]!.refunded, true);
  t.equal(await s.balance(walletId), 1000);
  const jsm = await jetstreamManager(s.nc);
  t.equal((await jsm.streams.info(STREAMS.tasks)).state.messages, 0, 'the stuck task was removed');
  t.same(await s.violations(), []);
});

t.test('a job left half-settled by a crash (failed, not yet refunded) is settled by the sweep', async (t) => {
  const s = await startJobsSystem(t, { retention: { sweepSeconds: 0.3 } });
  const { walletId } = await s.newWallet(1000);
  const job = newJobRecord(
    'websitepro',
    { target: '127.0.0.1', items: [{ key: 'text', price: 20, task: { subject: subjects.taskWebsitepro, params: {} } }] },
    walletId,
    {},
    s.config,
  );
  // the state a supervisor leaves when it dies right after recording the failure
  job.status = 'processing';
  job.startedAt = Date.now();
  job.results[0]!.status = 'failed';
  job.results[0]!.error = 'timeout';
  await wallet.charge(s.nc, { walletId, jobId: job.id, amount: job.cost });
  await createJobRecord(s.deps.kv.jobs, job);
  const done = await s.finished(job.id, 20_000);
  t.equal(done.status, 'failed');
  t.equal(done.results[0]!.refunded, true);
  t.equal(done.refunded, 20);
  t.equal(await s.balance(walletId), 1000);
  t.same(await s.violations(), []);
});
