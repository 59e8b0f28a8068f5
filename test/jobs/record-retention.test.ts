// Job records leave the `jobs` bucket retention.jobRecords after their results expired: the
// supervisor deletes the document's message by its sequence from its due list, GET /v1/jobs/{id}
// answers 404 not_found (the spec's code for "no such job"; 410 is for a deleted result), the list
// no longer shows it, and the money still adds up (the audit and the wallet's orphan sweep take a
// missing document of an old charge for an archived or deleted one, not a never-created one).
import t from 'tap';
import { Kvm } from '@nats-io/kv';
import { startJobsApi } from './app.ts';
import { BUCKETS } from '../../shared/names.ts';
import { audit } from '../../shared/audit.ts';
import { jobDocumentInBucketMs } from '../../shared/jobs/retention.ts';
import { startTestNats } from '../helpers/nats.ts';
import { startWallet, walletId, fund } from '../wallet/_helpers.ts';
import { wallet } from '../../shared/protocol/wallet.ts';

// Each test starts a system of its own and shares nothing with the others: four at a time (most of a
// test is waiting on nats-server: stream writes synced to disk, deliveries, sweeps).
t.jobs = 4;

t.test('a finished job past its record retention answers 404 and is gone from the bucket', async (t) => {
  const s = await startJobsApi(t, { retention: { websitepro: 1, shots: 1, sweepSeconds: 0.3, jobRecords: 1 } });
  const { key, walletId } = await s.newWallet(5000);
  const r = await s.request('POST', '/v1/shots/jobs?wait=10', { key, body: { url: s.targetUrl, browsers: ['testbrowser'] } });
  const job = r.json.job;
  t.equal(job.status, 'completed');
  t.equal((await s.request('GET', `/v1/jobs/${job.id}`, { key })).status, 200, 'readable before its retention');
  const kv = await new Kvm(s.nc).open(BUCKETS.jobs);
  let got = await s.request('GET', `/v1/jobs/${job.id}`, { key });
  // results expire after 1 s, the purge marks it, and 1 s later the record is due
  for (let i = 0; i < 100 && got.status === 200; i++) {
    await new Promise((r) => setTimeout(r, 200));
    got = await s.request('GET', `/v1/jobs/${job.id}`, { key });
  }
  t.equal(got.status, 404, 'the job answers 404 once its record is deleted');
  t.equal(got.json.error.code, 'not_found');
  t.match(got.json.error.message, /kept 0 days after its results expired/);
  t.equal(await kv.get(job.id), null, 'no document, and no delete marker left behind');
  const list = await s.request('GET', '/v1/jobs', { key });
  t.equal(list.status, 200);
  t.notOk(
    list.json.jobs.some((j: { id: string }) => j.id === job.id),
    'not listed',
  );
  t.equal(await s.balance(walletId), 5000 - job.cost + job.refunded, 'nothing refunded for a deleted record');
  t.same(
    (await audit(s.nc, { keptMs: jobDocumentInBucketMs(s.config) })).violations,
    [],
    'the audit takes the old charge without a document for a deleted record',
  );
});

t.test('an audit past its deadline says how far it got and judges nothing', async (t) => {
  const s = await startJobsApi(t, {}, { workers: false });
  await s.newWallet(5000);
  const r = await audit(s.nc, { deadline: Date.now() - 1 });
  t.equal(r.complete, false);
  t.match(r.progress, /read 0 of 1 ledger entries before the deadline/);
  t.same(r.violations, []);
});

t.test('the orphan sweep leaves a charge older than a job record is kept: its document was deleted, not never written', async (t) => {
  // documents in the bucket 1 s at least (results kept 1 s, then archived), half of it the margin: charges
  // older than 0.5 s are past it; the orphan grace (3 s) is longer, so the sweep first sees this charge
  // when its document could be archived or deleted
  const tn = await startTestNats(t, {
    wallet: { orphanChargeGraceSeconds: 3 },
    retention: { websitepro: 1, shots: 1, labs: 1, jobRecords: 1 },
  });
  await startWallet(t, tn);
  const w = walletId();
  await fund(tn.nc, w, 1000);
  await wallet.charge(tn.nc, { walletId: w, jobId: 'job_forgotten', amount: 300 });
  await new Promise((r) => setTimeout(r, 6000)); // past the grace, several sweeps
  // fails against the sweep that refunded every charge without a document (balance 1000)
  t.same(await wallet.balance(tn.nc, w), { balance: 700 }, 'not refunded');
});
