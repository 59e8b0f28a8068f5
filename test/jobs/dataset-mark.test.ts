// Issue 44 item 9: a gateway that dies after claiming a wallet's dataset mark (before its job is
// written) must not leave the fee unpaid for ever. The plan quotes the fee again once the claim is
// stale and its job never appeared, the next creation takes the mark over, and `admin audit`
// reports a held mark whose job does not exist. A confirmed mark (its job was stored) is never
// taken over, even once its job is archived and gone.
import t from 'tap';
import { startJobsSystem } from './lib.ts';
import { advertise } from '../../shared/catalogue.ts';
import { labsCatalogue } from '../../actors/relay-prober/index.ts';
import { keyFromSeed } from '../../shared/webhook.ts';
import { labs } from '../../shared/services/labs.ts';
import { claimDatasetMark, type DatasetMark } from '../../shared/services/dataset.ts';
import { commitJob, jobMayAppearMs, newJobRecord, quoteJob } from '../../gateway/jobs/create.ts';
import { audit } from '../../shared/audit.ts';
import type { PlanContext } from '../../shared/services/types.ts';

t.test('a claim whose job never appeared is quoted again, taken over, and reported by the audit', async (t) => {
  const s = await startJobsSystem(t, { wallet: { orphanChargeGraceSeconds: 1 } });
  const ad = await advertise(s.nc, 'labs', 'mark-test', () => labsCatalogue(s.config, keyFromSeed('c3'.repeat(32))));
  t.teardown(() => ad.stop());
  const { walletId } = await s.newWallet(100_000);
  const body = { relay: 'wss://relay.example.com/', modules: ['conformance' as const] };
  const ctx: PlanContext = {
    config: s.config,
    nc: s.nc,
    walletId,
    catalogueKv: s.deps.kv.catalogue,
    datasetsKv: s.deps.kv.datasets,
    datasetStale: { jobs: s.deps.kv.jobs, staleMs: jobMayAppearMs(s.config) },
  };
  const keys = async () => (await quoteJob(s.deps, 'labs', body, walletId)).items.map((i) => i.key);
  t.same(await keys(), ['conformance', 'dataset'], 'a new wallet is quoted the fee');

  // a gateway claims the mark for its job, then dies before the charge (gateway.after-dataset-claim)
  t.not(await claimDatasetMark(s.deps.kv.datasets, walletId, 'job_crashed'), null, 'claimed');
  t.same(await keys(), ['conformance'], 'while its job may still appear the claim holds');
  t.same(
    (await s.violations()).filter((v) => v.includes('dataset mark')),
    [`wallet ${walletId}: dataset mark held by job job_crashed, which does not exist (claimed, never confirmed)`],
    'the audit reports the held mark with no job',
  );
  // its age is read from its own `at`: moved back past the time its job could still appear
  const held = (await s.deps.kv.datasets.get(walletId))!.json<DatasetMark>();
  await s.deps.kv.datasets.put(walletId, JSON.stringify({ ...held, at: held.at - jobMayAppearMs(s.config) - 200 }));
  t.same(await keys(), ['conformance', 'dataset'], 'once stale the fee is quoted again');

  // the next creation, planned as the gateway plans it, takes the mark over and pays the fee
  const plan = await labs.plan(body, ctx);
  const { job } = await commitJob(s.deps, newJobRecord('labs', plan, walletId, body, s.config));
  t.same(
    job.results.map((r) => r.key),
    ['conformance', 'dataset'],
    'the job carries the fee',
  );
  t.equal(await s.balance(walletId), 100_000 - s.config.pricing.labs.conformance - s.config.pricing.labs.dataset, 'the fee is charged');
  const mark = (await s.deps.kv.datasets.get(walletId))!.json<DatasetMark>();
  t.equal(mark.jobId, job.id, 'the mark names the new job');
  t.notOk(mark.pending, 'confirmed once the job was stored');
  t.same(
    (await s.violations()).filter((v) => v.includes('dataset mark')),
    [],
    'nothing left to report',
  );

  // a confirmed mark outlives its job (archived, then deleted with its record retention): never taken over
  await s.deps.kv.datasets.put(walletId, JSON.stringify({ jobId: 'job_long_gone', at: Date.now() - 90 * 86400_000 }));
  t.same(await keys(), ['conformance'], 'a confirmed mark is never charged again');
  t.same(
    (await audit(s.nc, { keptMs: 30 * 86400_000 })).violations.filter((v) => v.includes('dataset mark')),
    [],
    'an old confirmed mark without its job is not reported once its job may have been deleted (keptMs)',
  );
});

t.test('a stale pending mark whose job exists is confirmed by the next plan', async (t) => {
  const s = await startJobsSystem(t, { wallet: { orphanChargeGraceSeconds: 1 } });
  const ad = await advertise(s.nc, 'labs', 'mark-test', () => labsCatalogue(s.config, keyFromSeed('c4'.repeat(32))));
  t.teardown(() => ad.stop());
  const { walletId } = await s.newWallet(100_000);
  const body = { relay: 'wss://relay.example.com/', modules: ['conformance' as const] };
  // a creation that stored its job and died before confirming the mark
  const { job } = await s.submit(walletId, [{ key: 'quick', price: 100, needsDataset: false }], 'labs');
  await s.deps.kv.datasets.put(walletId, JSON.stringify({ jobId: job.id, at: Date.now() - 3600_000, pending: true }));
  t.same(
    (await quoteJob(s.deps, 'labs', body, walletId)).items.map((i) => i.key),
    ['conformance'],
    'held by a job that exists',
  );
  const mark = (await s.deps.kv.datasets.get(walletId))!.json<DatasetMark>();
  t.same(mark, { jobId: job.id, at: mark.at }, 'and confirmed on the way');
});
