// The job document cannot be written after the charge, as in a NATS failover (gateway/jobs/create.ts):
// - nobody takes the write ("no responders": the bucket's stream has no leader): it was not
//   stored, so the charge is refunded at once and the answer is 503;
// - the write times out (it went out, no answer): it may still be stored, so the charge is left to
//   the wallet's orphan sweep, which refunds it once no document exists after its grace; the
//   answer is 503 with the job id.
// Both on a real server: the bucket's stream is removed for the write (and a silent subscriber
// stands in for a leader that takes the write and never answers), then provisioned again.
import t from 'tap';
import { jetstreamManager } from '@nats-io/jetstream';
import { startJobsSystem } from './lib.ts';
import { BUCKETS, subjects } from '../../shared/names.ts';
import { commitJob, newJobRecord } from '../../gateway/jobs/create.ts';
import { readJob } from '../../shared/jobs/store.ts';
import { provision } from '../../shared/nats/provision.ts';
import { readLedger } from '../../shared/audit.ts';

const GRACE_S = 2;

async function setup(t: Parameters<typeof startJobsSystem>[0]) {
  const s = await startJobsSystem(t, { wallet: { orphanChargeGraceSeconds: GRACE_S } });
  const { walletId } = await s.newWallet(1000);
  const job = newJobRecord(
    'websitepro',
    { target: '127.0.0.1', items: [{ key: 'text', price: 20, task: { subject: subjects.taskWebsitepro, params: {} } }] },
    walletId,
    {},
    s.config,
  );
  const jsm = await jetstreamManager(s.nc);
  await jsm.streams.delete(`KV_${BUCKETS.jobs}`);
  const ledger = async () => (await readLedger(s.nc)).filter((e) => e.walletId === walletId).map((e) => [e.type, e.amount]);
  return { s, walletId, job, ledger };
}

t.test('nobody takes the write: refunded at once, 503', async (t) => {
  const { s, walletId, job, ledger } = await setup(t);
  const t0 = Date.now();
  await t.rejects(commitJob(s.deps, job), { code: 'service_unavailable', message: /charge was refunded/ });
  t.ok(Date.now() - t0 >= 4000, 'the write was tried again through the failover window (5 s) first');
  t.equal(await s.balance(walletId), 1000, 'charged and refunded');
  t.same(await ledger(), [
    ['grant', 1000],
    ['charge', -20],
    ['refund', 20],
  ]);
  await provision(s.nc, s.config);
  t.equal(await readJob(s.deps.kv.jobs, job.id), null, 'no document');
  t.same(await s.violations(), []);
});

t.test('the write times out: not refunded while it may still appear; the orphan sweep refunds it', async (t) => {
  const { s, walletId, job, ledger } = await setup(t);
  // takes every write to the bucket and never answers, like a leader that died mid-write
  const silent = s.nc.subscribe(`$KV.${BUCKETS.jobs}.>`);
  await s.nc.flush();
  const e = await commitJob(s.deps, job).then(
    () => null,
    (err) => err,
  );
  silent.unsubscribe();
  t.equal(e?.code, 'service_unavailable');
  t.equal(e?.details?.jobId, job.id, 'the answer names the job to look for');
  t.match(e?.message, /may not have been created/);
  t.same(
    await ledger(),
    [
      ['grant', 1000],
      ['charge', -20],
    ],
    'the charge stands for now',
  );
  await provision(s.nc, s.config);
  // no document appeared: after its grace the orphan sweep refunds the charge in full, once
  let balance = 0;
  for (let i = 0; i < 100 && (balance = await s.balance(walletId)) !== 1000; i++) await new Promise((r) => setTimeout(r, 100));
  t.equal(balance, 1000, 'refunded by the orphan sweep');
  t.same(await ledger(), [
    ['grant', 1000],
    ['charge', -20],
    ['refund', 20],
  ]);
  t.same(await s.violations(), []);
});
