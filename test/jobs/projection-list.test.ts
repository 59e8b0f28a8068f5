// The job list is answered from the supervisor's projection, which keeps the documents of each
// wallet's newest LIST_MAX jobs: a list reads no document from the bucket (an old one sits in a
// message block nats-server must load first), and the projection never keeps more than LIST_MAX
// documents per wallet, however many jobs the wallet has.
import t from 'tap';
import Database from 'better-sqlite3';
import { Kvm } from '@nats-io/kv';
import { jetstreamManager } from '@nats-io/jetstream';
import { JobProjection } from '../../actors/job-supervisor/projection.ts';
import { start as startSupervisor } from '../../actors/job-supervisor/index.ts';
import { jobsService, LIST_MAX } from '../../shared/protocol/job-supervisor.ts';
import { startTestNats, tempDir, testLog } from '../helpers/nats.ts';
import { BUCKETS } from '../../shared/names.ts';
import type { JobRecord } from '../../shared/protocol/jobs.ts';

const jobOf = (id: string, createdAt: number, over: Partial<JobRecord> = {}): JobRecord =>
  ({
    id,
    walletId: 'w1',
    service: 'websitepro',
    status: 'completed',
    target: 'https://example.com/',
    request: {},
    createdAt,
    finishedAt: createdAt + 1,
    expiresAt: Date.now() + 3600_000,
    cost: 30,
    refunded: 0,
    results: [],
    ...over,
  }) as JobRecord;

t.test('each wallet keeps the documents of its newest LIST_MAX jobs, no more', async (t) => {
  const { nc } = await startTestNats(t);
  const p = new JobProjection({ dir: tempDir('payloads-proj-'), keepMs: 1000, log: testLog() });
  await p.start(await new Kvm(nc).open(BUCKETS.jobs), await jetstreamManager(nc));
  t.teardown(() => p.stop());
  let rev = 1;
  for (let i = 0; i < LIST_MAX + 5; i++) p.upsert(jobOf(`j${1000 + i}`, 1000 + i), rev++);
  p.upsert(jobOf('other', 5000, { walletId: 'w2' }), rev++);
  t.equal(p.docsKept('w1'), LIST_MAX, 'a wallet with more jobs keeps LIST_MAX documents');
  t.equal(p.docsKept('w2'), 1, 'another wallet has its own window');
  const listed = p.list('w1', LIST_MAX);
  t.equal(listed[0]!.id, `j${1000 + LIST_MAX + 4}`, 'newest first');
  t.ok(
    listed.every((r) => r.doc !== null),
    'every job a full list shows has its document',
  );
  t.equal(p.row('j1004')!.doc, null, 'the older ones keep their row without the document');
  t.equal(p.list('w1', LIST_MAX + 50).length, LIST_MAX, 'a list never asks for more than LIST_MAX');
  // a wallet's documents are one range of the docs table, read by its key: never a scan
  t.notMatch(p.plan('list'), /SCAN/, p.plan('list'));
  t.equal(
    new Database(p.file, { readonly: true }).pragma('page_size', { simple: true }),
    8192,
    '8 KB pages: a 1.5 KB document fits in its row',
  );

  p.upsert(jobOf('ancient', 1), rev++);
  t.equal(p.row('ancient')!.doc, null, 'a job older than the window is added without its document');
  p.upsert(jobOf('middle', 1050), rev++);
  t.type(p.row('middle')!.doc, 'string', 'a job inside the window has its document');
  t.equal(p.row('j1005')!.doc, null, "and the window's oldest gave its place up");
  t.equal(p.docsKept('w1'), LIST_MAX, 'still LIST_MAX');

  p.upsert(jobOf('j1004', 1004, { status: 'failed' }), rev++);
  t.equal(p.row('j1004')!.doc, null, 'an update outside the window does not bring a document back');
  t.equal(p.row('j1004')!.status, 'failed', 'but its row follows');
  const newest = `j${1000 + LIST_MAX + 4}`;
  p.upsert(jobOf(newest, 1000 + LIST_MAX + 4, { status: 'failed', error: 'changed' }), rev++);
  t.equal((JSON.parse(p.row(newest)!.doc!) as JobRecord).error, 'changed', 'an update inside the window replaces the document');

  p.forgotten(newest, rev);
  const after = p.list('w1', LIST_MAX);
  t.equal(after.length, LIST_MAX);
  t.equal(
    after.at(-1)!.doc,
    null,
    'a job that came back into the window after a deletion has no document: the list reads it from the bucket',
  );
});

t.test('the supervisor answers a list from its projection, reading the bucket only for a job it does not keep', async (t) => {
  const tn = await startTestNats(t);
  const kv = await new Kvm(tn.nc).open(BUCKETS.jobs);
  const n = LIST_MAX + 1;
  for (let i = 0; i < n; i++) await kv.put(`job${i}`, JSON.stringify(jobOf(`job${i}`, 1000 + i, { target: `https://example.com/${i}` })));
  const sup = await startSupervisor({ nc: await tn.connect('sup'), config: tn.config, log: testLog(), instanceId: 'supervisor-1' });
  t.teardown(() => sup.stop());
  for (let i = 0; i < 100 && !(await jobsService.stats(tn.nc, {})).projection.complete; i++) await new Promise((r) => setTimeout(r, 100));

  // every read of a job document from the bucket is a message get of its key's last value
  const spy = await tn.connect('spy');
  const gets: string[] = [];
  const sub = spy.subscribe('$JS.API.>', {
    callback: (_e, m) => {
      if (m.subject.includes(`GET.KV_${BUCKETS.jobs}`)) gets.push(`${m.subject} ${m.string()}`);
    },
  });
  t.teardown(() => sub.unsubscribe());
  const docReads = () => gets.filter((g) => g.includes(`$KV.${BUCKETS.jobs}.job`) && !g.includes('next_by_subj'));
  await spy.flush();

  const list = await jobsService.list(tn.nc, { walletId: 'w1', limit: LIST_MAX });
  t.equal(list.jobs.length, LIST_MAX);
  t.same(
    list.jobs.slice(0, 2).map((j) => [j.id, j.target]),
    [
      [`job${n - 1}`, `https://example.com/${n - 1}`],
      [`job${n - 2}`, `https://example.com/${n - 2}`],
    ],
    'whole documents, newest first',
  );
  await spy.flush();
  t.same(docReads(), [], 'no document was read from the bucket');

  // the newest job's document is deleted: the oldest one the list now shows is not kept, and is read
  await kv.delete(`job${n - 1}`);
  const again = await jobsService.list(tn.nc, { walletId: 'w1', limit: LIST_MAX });
  t.equal(again.jobs[0]!.id, `job${n - 2}`, 'the deleted job is no longer listed');
  t.same(again.jobs.at(-1)!.target, 'https://example.com/0', 'the job that came back into the window is listed whole');
  await spy.flush();
  t.equal(docReads().length, 1, 'one document read from the bucket');
  t.match(docReads()[0], /\.job0\b/, 'the one not kept');
});
