// The supervisor's projection is a file with a checkpoint (the bucket's store and the last revision
// applied): a restart applies only the tail written since; a file of another store, or one ahead of
// the stream, is rebuilt (and the list says so meanwhile instead of answering from a part); the due
// lists are index searches, never a scan of every job.
import t from 'tap';
import Database from 'better-sqlite3';
import { Kvm } from '@nats-io/kv';
import { jetstreamManager } from '@nats-io/jetstream';
import { JobProjection } from '../../actors/job-supervisor/projection.ts';
import { startTestNats, tempDir, testLog } from '../helpers/nats.ts';
import { BUCKETS } from '../../shared/names.ts';
import type { JobRecord } from '../../shared/protocol/jobs.ts';
import type { NatsConnection } from '@nats-io/nats-core';
import { start as startSupervisor } from '../../actors/job-supervisor/index.ts';
import { jobsService } from '../../shared/protocol/job-supervisor.ts';
import { archiveJob } from '../../shared/jobs/archive.ts';

const jobOf = (id: string, over: Partial<JobRecord> = {}): JobRecord =>
  ({
    id,
    walletId: 'w1',
    service: 'websitepro',
    status: 'completed',
    target: 'https://example.com/',
    request: {},
    createdAt: 1_000,
    finishedAt: 2_000,
    expiresAt: Date.now() + 3600_000,
    cost: 30,
    refunded: 0,
    results: [],
    ...over,
  }) as JobRecord;

async function fill(nc: NatsConnection, from: number, n: number) {
  const kv = await new Kvm(nc).open(BUCKETS.jobs);
  for (let i = from; i < from + n; i += 100) {
    const ps: Promise<unknown>[] = [];
    for (let j = i; j < Math.min(from + n, i + 100); j++)
      ps.push(kv.put(`job${j}`, JSON.stringify(jobOf(`job${j}`, { walletId: `w${j % 7}`, createdAt: 1_000 + j }))));
    await Promise.all(ps);
  }
  return kv;
}

async function open(nc: NatsConnection, dir: string, keepMs = 1000) {
  const p = new JobProjection({ dir, keepMs, log: testLog() });
  const kv = await new Kvm(nc).open(BUCKETS.jobs);
  await p.start(kv, await jetstreamManager(nc));
  return p;
}

t.test('a restart applies only what was written since the checkpoint', async (t) => {
  const { nc } = await startTestNats(t);
  const dir = tempDir('payloads-proj-');
  const kv = await fill(nc, 0, 2000);
  const first = await open(nc, dir);
  t.equal(first.startedAs.mode, 'rebuilt', 'no file: built from the bucket');
  t.equal(first.complete, false, 'the start did not wait for the build');
  await t.rejects(first.sync(), { code: 'service_unavailable' }, 'the list says it is being rebuilt, not a part of it');
  await first.caughtUp;
  await first.sync();
  t.equal(first.count(), 2000);
  t.same(
    first.list('w3', 3).map((r) => r.id),
    ['job1998', 'job1991', 'job1984'],
    "a wallet's newest first",
  );
  await first.stop();

  await fill(nc, 2000, 5);
  const doc = (await kv.get('job10'))!.json<JobRecord>();
  await kv.put('job10', JSON.stringify({ ...doc, status: 'failed' }));
  await kv.delete('job11');
  const second = await open(nc, dir);
  await second.caughtUp;
  t.equal(second.startedAs.mode, 'resumed');
  // fails against the projection that loaded every job at start (2007 changes)
  t.equal(second.appliedCount, 7, 'five new jobs, one update, one delete: nothing else replayed');
  await second.sync();
  t.equal(second.count(), 2004);
  t.equal(second.row('job10')?.status, 'failed');
  t.equal(second.row('job11'), null);
  await second.stop();
});

t.test('a file of another store, or ahead of the stream, is rebuilt', async (t) => {
  const dir = tempDir('payloads-proj-');
  {
    const a = await startTestNats(t);
    await fill(a.nc, 0, 50);
    const p = await open(a.nc, dir);
    await p.caughtUp;
    t.equal(p.count(), 50);
    await p.stop();
  }
  const b = await startTestNats(t);
  await fill(b.nc, 100, 3);
  const p = await open(b.nc, dir);
  t.equal(p.startedAs.mode, 'rebuilt');
  t.match(p.startedAs.reason, /another store/);
  await p.caughtUp;
  t.equal(p.count(), 3, 'nothing of the other store kept');
  t.equal(p.row('job0'), null);
  await p.stop();

  // a checkpoint past the stream's end (the store was restored from an older backup)
  const db = new Database(p.file);
  db.prepare(`UPDATE meta SET v = '999999' WHERE k = 'applied'`).run();
  db.close();
  const q = await open(b.nc, dir);
  t.equal(q.startedAs.mode, 'rebuilt');
  t.match(q.startedAs.reason, /ahead of the stream/);
  await q.caughtUp;
  t.equal(q.count(), 3);
  await q.stop();

  // a file of an older layout, left by a version before (without a column and a table this one reads)
  const old = new Database(q.file);
  old.exec(
    `DROP TABLE docs; DROP INDEX jobs_unrefunded; ALTER TABLE jobs DROP COLUMN unrefunded; UPDATE meta SET v = '3' WHERE k = 'layout'`,
  );
  old.close();
  const r = await open(b.nc, dir);
  t.equal(r.startedAs.mode, 'rebuilt', 'rebuilt, not a start that fails on its table');
  t.match(r.startedAs.reason, /another layout \(3;/);
  await r.caughtUp;
  t.equal(r.count(), 3);
  t.same(
    r.list('w2', 3).map((x) => [x.id, typeof x.doc]),
    [['job100', 'string']],
    'with the documents this layout keeps',
  );
  await r.stop();
});

t.test('a rebuild whose watch stops delivering is started again from its checkpoint and completes', async (t) => {
  const { nc } = await startTestNats(t);
  const real = await fill(nc, 0, 3000);
  // the first watch is the real one cut off after 1,200 values until it is stopped: an ordered
  // consumer that missed its heartbeats and never came back (seen on a 3-node cluster under load)
  let watches = 0;
  const kv = Object.create(real) as typeof real;
  kv.watch = async (opts) => {
    const w = await real.watch(opts);
    if (watches++ > 0) return w;
    let release!: () => void;
    const stopped = new Promise<void>((r) => {
      release = r;
    });
    return Object.assign(Object.create(w) as typeof w, {
      stop() {
        w.stop();
        release();
      },
      async *[Symbol.asyncIterator]() {
        let n = 0;
        for await (const e of w) {
          if (++n > 1200) {
            await stopped;
            return;
          }
          yield e;
        }
      },
    });
  };
  const p = new JobProjection({ dir: tempDir('payloads-proj-'), keepMs: 1000, log: testLog(), rebuildStallMs: 500 });
  await p.start(kv, await jetstreamManager(nc));
  t.equal(p.startedAs.mode, 'rebuilt');
  await p.caughtUp;
  t.equal(watches, 2, 'the silent watch was started again, once');
  t.equal(p.count(), 3000, 'every job in the list');
  t.equal(p.complete, true);
  await p.sync();
  t.same(
    p.list('w3', 2).map((r) => r.id),
    ['job2999', 'job2992'],
    'the list answers',
  );
  await p.stop();
});

t.test('the due lists are index searches; a finished, purged job is due for deletion after its retention', async (t) => {
  const { nc } = await startTestNats(t);
  const p = await open(nc, tempDir('payloads-proj-'), 1000);
  await p.caughtUp;
  for (const which of ['purgeDue', 'webhookDue', 'forgetDue', 'unfinished', 'list', 'unrefunded', 'archiveDue'] as const) {
    const plan = p.plan(which);
    t.match(plan, /SEARCH .* USING (COVERING )?INDEX/, `${which}: ${plan}`);
    t.notMatch(plan, /SCAN jobs/, `${which} reads no job it does not return`);
  }
  const now = Date.now();
  p.upsert(jobOf('old', { expiresAt: now - 5000, finishedAt: now - 6000, purgedAt: now - 4000 }), 10);
  p.upsert(jobOf('unpurged', { expiresAt: now - 5000, finishedAt: now - 6000 }), 11);
  p.upsert(jobOf('running', { status: 'processing', expiresAt: now - 5000, purgedAt: now - 4000 }), 12);
  p.upsert(jobOf('fresh', { expiresAt: now - 500, purgedAt: now - 400 }), 13);
  t.same(
    p.forgetDue(now).map((r) => r.id),
    ['old'],
    'only finished, purged jobs past expiresAt + keep',
  );
  t.same(p.expired(now), ['unpurged'], 'the purge list has the job whose files are not deleted yet');
  t.same(
    p.archiveDue(now),
    ['old', 'fresh'],
    'finished and purged jobs are due for the archive from their purge, oldest first; a running one is not',
  );
  p.upsert(jobOf('old', { status: 'completed', expiresAt: now - 5000, purgedAt: now - 4000 }), 9);
  t.same(p.forgetDue(now)[0], { id: 'old', revision: 10 }, 'an older revision changes nothing');
  p.forgotten('old', 10);
  t.equal(p.row('old'), null);
  // a finished job with a failed result not refunded is listed until a later revision refunds it
  const failed = (refunded: boolean) => [{ key: 'r1', status: 'failed', refunded } as JobRecord['results'][number]];
  p.upsert(jobOf('unpaid', { status: 'failed', results: failed(false) }), 20);
  p.upsert(jobOf('running-unpaid', { status: 'processing', results: failed(false) }), 21);
  t.same(p.unrefunded(), ['unpaid'], 'only finished jobs: a running one is settled by its own steps');
  p.upsert(jobOf('unpaid', { status: 'failed', results: failed(true) }), 22);
  t.same(p.unrefunded(), [], 'refunded: no longer listed');
  await p.stop();
});

t.test('the supervisor restarted on a store with history catches up from its file', async (t) => {
  const tn = await startTestNats(t);
  await fill(tn.nc, 0, 1500);
  const startOne = async (n: number) =>
    startSupervisor({ nc: await tn.connect(`sup${n}`), config: tn.config, log: testLog(), instanceId: `supervisor-${n}` });
  const a = await startOne(1);
  let st = await jobsService.stats(tn.nc, {});
  t.equal(st.projection.mode, 'rebuilt', 'first start: no file yet');
  for (let i = 0; i < 100 && !(st.projection.complete && st.total === 1500); i++) {
    await new Promise((r) => setTimeout(r, 100));
    st = await jobsService.stats(tn.nc, {});
  }
  t.equal(st.total, 1500);
  await a.stop();
  await fill(tn.nc, 1500, 3);
  const b = await startOne(2);
  t.teardown(() => b.stop());
  st = await jobsService.stats(tn.nc, {});
  t.equal(st.projection.mode, 'resumed');
  t.ok(st.projection.complete, 'answers lists at once');
  // fails against the supervisor that loaded all 1503 documents at start
  t.equal(st.projection.appliedSinceStart, 3, 'only the three jobs written while it was down');
  t.equal(st.total, 1503);
  const list = await jobsService.list(tn.nc, { walletId: 'w2', limit: 2 });
  t.same(
    list.jobs.map((j) => j.id),
    ['job1500', 'job1493'],
    'the list has the job written while it was down, newest first',
  );
});

// Issue 44 item 11: a supervisor that comes back behind (its checkpoint is old: it was down while
// others worked) answers at once and catches up in the background; until the tail of both streams
// is applied the list answers 503 with Retry-After, never a list that misses what was written meanwhile.
t.test('a copy resumed behind answers 503 with Retry-After until the tail of both streams is applied', async (t) => {
  const { nc } = await startTestNats(t);
  const dir = tempDir('payloads-proj-');
  const kv = await fill(nc, 0, 10);
  const jsm = await jetstreamManager(nc);
  const first = await open(nc, dir);
  await first.caughtUp;
  await first.stop();
  // while it is stopped: 5,000 jobs of one wallet reach the archive, and one bucket write
  const ids = Array.from({ length: 5000 }, (_, i) => `arch${i}`);
  for (let i = 0; i < ids.length; i += 250)
    await Promise.all(
      ids
        .slice(i, i + 250)
        .map((id, j) =>
          archiveJob(jsm.jetstream(), jobOf(id, { walletId: 'wA', createdAt: 10_000 + i + j, expiresAt: 3_000, purgedAt: 4_000 }), 0),
        ),
    );
  await kv.put('job0', JSON.stringify(jobOf('job0', { status: 'failed' })));
  const second = await open(nc, dir);
  t.teardown(() => second.stop());
  t.equal(second.startedAs.mode, 'resumed');
  t.ok(second.catchingUp, 'behind its streams');
  // fails against the projection that answered the list as soon as the bucket's tail was applied
  await t.rejects(
    second.sync(),
    { code: 'service_unavailable', headers: { 'retry-after': '5' }, details: { retryAfter: 5 } },
    'the list is not answered from a part',
  );
  await second.caughtUp;
  t.notOk(second.catchingUp);
  await second.sync();
  t.same(
    second.list('wA', 2).map((r) => r.id),
    ['arch4999', 'arch4998'],
    'once caught up, the list has what was archived while it was down',
  );
});
