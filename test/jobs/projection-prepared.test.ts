// The supervisor's projection runs a statement for every job-document change its watch delivers
// (upsert, delete) and for every outcome (the copy read): they are prepared once, at construction,
// so none of them builds SQL or asks SQLite to prepare it again (that showed in the supervisor's
// profile between an outcome and its document write). The revision rule stays: the highest wins.
import t from 'tap';
import { JobProjection } from '../../actors/job-supervisor/projection.ts';
import type { JobRecord } from '../../shared/protocol/jobs.ts';

const log = { error() {}, warn() {}, info() {}, debug() {} } as never;
const jobOf = (id: string, over: Partial<JobRecord> = {}) =>
  ({ id, walletId: 'w1', service: 'websitepro', status: 'processing', createdAt: 1, expiresAt: 1000, cost: 30, refunded: 0, results: [], ...over }) as unknown as JobRecord;

t.test('no statement is prepared per upsert, delete or copy read', async (t) => {
  const p = new JobProjection(log);
  const sqlite = (p as unknown as { sqlite: { prepare: (s: string) => unknown } }).sqlite;
  const orig = sqlite.prepare.bind(sqlite);
  let prepared = 0;
  sqlite.prepare = (s: string) => { prepared++; return orig(s); };
  for (let i = 1; i <= 20; i++) {
    p.upsert(jobOf(`j${i % 4}`), i);
    p.getStored(`j${i % 4}`);
    p.get(`j${i % 4}`);
  }
  (p as unknown as { q: { remove: { run(a: { id: string }): void } } }).q.remove.run({ id: 'j1' });
  // fails against the projection that built each statement per call (60+ prepares)
  t.equal(prepared, 0, 'every per-change statement was prepared at construction');
  t.equal(p.get('j1'), null, 'deleted');
  await p.stop();
});

t.test('the upsert keeps the highest revision and every column', async (t) => {
  const p = new JobProjection(log);
  p.upsert(jobOf('a', { status: 'processing' }), 5);
  p.upsert(jobOf('a', { status: 'completed' }), 4); // older: ignored
  t.same(p.getStored('a')?.revision, 5);
  t.equal(p.get('a')?.status, 'processing');
  p.upsert(jobOf('a', { status: 'completed', purgedAt: 3, webhook: { state: 'pending', nextAt: 7 } } as Partial<JobRecord>), 6);
  t.same(p.getStored('a')?.revision, 6);
  t.equal(p.get('a')?.status, 'completed');
  t.same(p.webhooksDue(10), ['a'], 'webhook_due updated');
  t.same(p.expired(2000), [], 'purged_at updated');
  t.equal(p.countByStatus(['completed']), 1);
  t.equal(p.list('w1', 5).length, 1);
  await p.stop();
});
