// The orphan sweep's cursor is kept beside the projection's checkpoint (issue 26): after a restart
// the sweep goes on from it, reading the job documents of the charges made since, not of every
// charge ever made (counted: the job-document reads the sweep makes through the real bucket).
import t from 'tap';
import { Kvm, type KV } from '@nats-io/kv';
import { startTestNats, tempDir, testLog } from '../helpers/nats.ts';
import { Ledger } from '../../actors/wallet/ledger.ts';
import { Projection } from '../../actors/wallet/projection.ts';
import { startOrphanSweep } from '../../actors/wallet/orphans.ts';
import { writeLedgerHistory, historyWallet, CHARGE } from '../../bench/lib/ledger-history.ts';
import { BUCKETS } from '../../shared/names.ts';
import type { NatsConnection } from '@nats-io/nats-core';

/** The jobs bucket, counting the documents read and the most read at once; `failOn`: the read that throws. */
function counting(kv: KV, failOn?: number) {
  const c = { reads: 0, inFlight: 0, maxInFlight: 0, kv: Object.create(kv) as KV };
  c.kv.get = async (k: string) => {
    if (++c.reads === failOn) throw new Error('a read that fails (not an outage)');
    c.maxInFlight = Math.max(c.maxInFlight, ++c.inFlight);
    try {
      return await kv.get(k);
    } finally {
      c.inFlight--;
    }
  };
  return c;
}

async function sweepOnce(nc: NatsConnection, dir: string, jobs: KV, o: { failOn?: number; refundsOf?: [string, string][] } = {}) {
  const projection = new Projection(dir);
  const ledger = new Ledger(nc, projection, testLog());
  await ledger.start();
  for (let i = 0; i < 600 && ledger.stats.caughtUpMs === null; i++) await new Promise((r) => setTimeout(r, 50));
  const jobsCounted = counting(jobs, o.failOn);
  let cursorWrites = 0;
  const setOrphanCursor = projection.setOrphanCursor.bind(projection);
  projection.setOrphanCursor = (id: number) => {
    cursorWrites++;
    setOrphanCursor(id);
  };
  const sweep = startOrphanSweep({ ledger, projection, jobs: jobsCounted.kv, graceMs: 0, everyMs: 3600_000, log: testLog() });
  sweep.tick();
  await sweep.stop();
  const cursor = projection.orphanCursor();
  // what each job named was refunded, once the projection holds the sweep's own refunds
  await Promise.all((o.refundsOf ?? []).map(([w]) => ledger.synced(w)));
  const refunded = (o.refundsOf ?? []).map(([w, job]) =>
    projection
      .forJob(w, job)
      .filter((r) => r.type === 'refund')
      .map((r) => r.amount),
  );
  await ledger.stop();
  projection.close();
  return { reads: jobsCounted.reads, maxInFlight: jobsCounted.maxInFlight, cursorWrites, cursor, refunded };
}

t.test('a restarted orphan sweep reads only the charges made since its cursor', async (t) => {
  const tn = await startTestNats(t);
  const jobs = await new Kvm(tn.nc).open(BUCKETS.jobs);
  const writeWithDocs = async (entries: number, wallets: number, prefix: string) => {
    await writeLedgerHistory(tn.nc, { entries, wallets, prefix });
    // every charge has its job document: nothing to refund, only documents to read
    for (let i = wallets; i < entries; i++) await jobs.put(`${prefix}j${i}`, JSON.stringify({ id: `${prefix}j${i}` }));
  };
  const dir = tempDir('payloads-orphan-cursor-');
  await writeWithDocs(40, 4, 'a'); // 4 grants, 36 charges
  const first = await sweepOnce(tn.nc, dir, jobs);
  t.equal(first.reads, 36, "the first sweep reads each charge's job once");
  t.equal(first.cursor, 40, 'the cursor is the last charge');
  t.ok(first.maxInFlight > 1, `the documents are read several at once (${first.maxInFlight})`);
  t.equal(first.cursorWrites, 1, 'the cursor is written once for the batch, not once per charge');

  await writeWithDocs(10, 2, 'b'); // 2 grants, 8 charges
  const second = await sweepOnce(tn.nc, dir, jobs);
  t.equal(second.reads, 8, 'after a restart only the 8 new charges are read');
  t.equal(second.cursor, 50);
});

t.test(
  'charges without their job document in one batch are refunded once each; a failed read refunds nothing and keeps the cursor',
  async (t) => {
    const tn = await startTestNats(t);
    const jobs = await new Kvm(tn.nc).open(BUCKETS.jobs);
    await writeLedgerHistory(tn.nc, { entries: 30, wallets: 3, prefix: 'm' }); // 3 grants, 27 charges
    const orphans = new Set([5, 12, 29]); // charges whose job never came to be
    for (let i = 3; i < 30; i++) if (!orphans.has(i)) await jobs.put(`mj${i}`, JSON.stringify({ id: `mj${i}` }));
    const refundsOf = [...orphans].map((i) => [historyWallet('m', i % 3), `mj${i}`] as [string, string]);
    const dir = tempDir('payloads-orphan-batch-');
    const failed = await sweepOnce(tn.nc, dir, jobs, { failOn: 20, refundsOf });
    t.same(failed.refunded, [[], [], []], 'a read failed: the batch stopped before any refund');
    t.equal(failed.cursor, 0, 'and the cursor did not move');
    const swept = await sweepOnce(tn.nc, dir, jobs, { refundsOf });
    t.same(swept.refunded, [[CHARGE], [CHARGE], [CHARGE]], 'each orphaned charge refunded in full, once');
    t.equal(swept.cursor, 30, 'the cursor is the last charge');
    const again = await sweepOnce(tn.nc, dir, jobs, { refundsOf });
    t.equal(again.reads, 0, 'nothing left to read');
    t.same(again.refunded, [[CHARGE], [CHARGE], [CHARGE]], 'and nothing refunded twice');
  },
);
