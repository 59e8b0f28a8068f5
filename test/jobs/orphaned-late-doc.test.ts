// Issue 28 item 3: a job document written after the wallet's orphan sweep refunded its whole charge
// (the write landed past the grace) ends at once as failed: its tasks are taken back (no work), it is
// not charged twice nor refunded twice, an error line tells operators, and the audit is clean.
// And `admin audit` reports a failed result that was not refunded.
import t from 'tap';
import { jetstreamManager } from '@nats-io/jetstream';
import { Kvm } from '@nats-io/kv';
import { startJobsSystem } from './lib.ts';
import { startTestNats } from '../helpers/nats.ts';
import { wallet } from '../../shared/protocol/wallet.ts';
import { newJobRecord } from '../../gateway/jobs/create.ts';
import { markDispatched, publishRootTasks } from '../../shared/jobs/dispatch.ts';
import { createJobRecord } from '../../shared/jobs/store.ts';
import { newId } from '../../shared/ids.ts';
import { BUCKETS, STREAMS, subjects } from '../../shared/names.ts';
import { audit } from '../../shared/audit.ts';

const until = async (f: () => Promise<boolean>, ms = 30_000) => {
  const end = Date.now() + ms;
  while (Date.now() < end) {
    if (await f()) return true;
    await new Promise((r) => setTimeout(r, 200));
  }
  return false;
};

t.test('a job written after its orphan refund ends failed, with no work and nothing charged twice', async (t) => {
  const s = await startJobsSystem(t, { wallet: { orphanChargeGraceSeconds: 1 }, retention: { sweepSeconds: 0.2 } });
  const { walletId } = await s.newWallet(1000);
  const items = [
    { key: 'metadata', price: 20, task: { subject: subjects.taskWebsitepro, params: { behave: 'succeed' } } },
    { key: 'text', price: 20, task: { subject: subjects.taskWebsitepro, params: { behave: 'succeed' } } },
  ];
  const job = newJobRecord('websitepro', { target: '127.0.0.1', items }, walletId, { test: true }, s.config, Date.now(), newId('job'));
  await wallet.charge(s.nc, { walletId, jobId: job.id, amount: job.cost });
  t.ok(
    await until(async () => (await wallet.chargeOf(s.nc, walletId, job.id)).orphaned),
    'the orphan sweep refunded the charge (no document yet)',
  );
  t.equal(await s.balance(walletId), 1000);

  // the gateway's write lands now, long after it timed out: tasks out, document processing
  const pub = await publishRootTasks(s.deps.js, await jetstreamManager(s.nc), s.deps.config, job);
  const seqs = new Map([...pub.taken, ...pub.held]);
  markDispatched(job, seqs);
  await createJobRecord(s.deps.kv.jobs, job);

  const ended = await s.finished(job.id, 30_000);
  t.match(ended, { status: 'failed', orphaned: true, refunded: 40, error: 'not_charged' });
  t.ok(
    ended.results.every((r) => r.status === 'failed' && r.refunded),
    'every result failed and refunded (by the orphan refund)',
  );
  const jsm = await jetstreamManager(s.nc);
  for (const seq of seqs.values())
    t.equal(await jsm.streams.getMessage(STREAMS.tasks, { seq }).catch(() => null), null, 'its tasks are taken back');
  const w = await s.startWorker();
  await new Promise((r) => setTimeout(r, 500));
  t.equal(w.seen.filter((x) => x.jobId === job.id).length, 0, 'no work done');
  t.equal(await s.balance(walletId), 1000, 'nothing charged');
  const entries = (await wallet.transactions(s.nc, walletId)).entries.filter((e) => e.jobId === job.id);
  t.same(
    entries.map((e) => [e.type, e.amount, e.resultKey ?? null]).sort(),
    [
      ['charge', -40, null],
      ['refund', 40, '_orphan'],
    ],
    'one charge, one refund',
  );
  t.same(await s.violations(), []);
});

t.test('admin audit reports a failed result not refunded', async (t) => {
  const tn = await startTestNats(t);
  const kv = await new Kvm(tn.nc).open(BUCKETS.jobs);
  const job = newJobRecord('websitepro', { target: 'x', items: [{ key: 'text', price: 0 }] }, 'w_audit', {}, tn.config);
  job.status = 'failed';
  job.results[0]!.status = 'failed';
  await kv.put(job.id, JSON.stringify(job));
  const { violations } = await audit(tn.nc);
  t.ok(
    violations.some((v) => v.includes(`job ${job.id}: result text failed and not refunded`)),
    violations.join('\n'),
  );
});
