// Issue 28 items 1 and 2: a failed result is refunded when it fails, not when the job's last result
// is final, and a refund cut short (the wallet not answering) is found again and made, never lost.
// Real HTTP, wallet, supervisor, test workers, object store.
import t from 'tap';
import { Objm } from '@nats-io/obj';
import { startJobsApi } from './app.ts';
import { OBJECT_STORES } from '../../shared/names.ts';
import { wallet } from '../../shared/protocol/wallet.ts';
import { readJob } from '../../shared/jobs/store.ts';
import { Kvm } from '@nats-io/kv';
import { BUCKETS } from '../../shared/names.ts';
import { reportLostFile } from '../../shared/jobs/lost.ts';

const until = async (f: () => Promise<boolean>, ms = 20_000) => {
  const end = Date.now() + ms;
  while (Date.now() < end) {
    if (await f()) return true;
    await new Promise((r) => setTimeout(r, 150));
  }
  return false;
};

t.test('a failed result is refunded at once, while another result of the job is still running', async (t) => {
  const s = await startJobsApi(t, { retention: { sweepSeconds: 100 } });
  const { key, walletId } = await s.newWallet(1000);
  // metadata fails at once; text hangs (its worker keeps it alive) until the test ends
  const url = `${s.targetUrl}/?behave.metadata=fail&behave.text=hang`;
  const r = await s.request('POST', '/v1/websitepro/jobs', { key, body: { url, outputs: ['metadata', 'text'] } });
  t.equal(r.status, 201, r.text);
  t.equal(r.json.balance, 1000 - 40);
  const id = r.json.job.id;
  let seen: any;
  t.ok(
    await until(async () => {
      seen = (await s.request('GET', `/v1/jobs/${id}`, { key })).json;
      return seen.job.results[0].refunded === true;
    }),
    'the failed result is marked refunded while the job still runs',
  );
  t.match(seen.job, { status: 'processing', refunded: 20, charged: 20 });
  t.match(seen.job.results[1], { key: 'text', status: 'pending' });
  t.equal(seen.balance, 1000 - 20, "the job's answer carries the balance after the refund");
  t.equal((await s.request('GET', '/v1/balance', { key })).json.balance, 1000 - 20, 'GET /v1/balance shows it');
  const refunds = (await wallet.transactions(s.nc, walletId)).entries.filter((e) => e.type === 'refund');
  t.match(refunds, [{ jobId: id, resultKey: 'metadata', amount: 20 }]);
  for (const w of s.workers) await w.stop(); // the hanging task ends with its worker
});

t.test('a lost file whose refund met no wallet is refunded once the wallet is back (redelivery settles, not acks)', async (t) => {
  // a sweep every 100 s: only the redelivered report can bring the refund
  const s = await startJobsApi(t, { retention: { sweepSeconds: 100 } });
  const { key, walletId } = await s.newWallet(1000);
  const r = await s.request('POST', '/v1/websitepro/jobs?wait=10', { key, body: { url: s.targetUrl, outputs: ['metadata', 'text'] } });
  t.equal(r.json.job.status, 'completed', r.text);
  const id = r.json.job.id;
  const [walletName, walletHandle] = [...s.actors].find(([n]) => n.startsWith('wallet#'))!;
  await walletHandle.stop();
  s.actors.delete(walletName);

  const os = await new Objm(s.nc).open(OBJECT_STORES.results);
  await os.delete(`${id}/metadata`);
  await reportLostFile(s.nc, id, 'metadata', 'test: the file is gone');
  const jobs = await new Kvm(s.nc).open(BUCKETS.jobs);
  t.ok(await until(async () => (await readJob(jobs, id))?.job.results[0]?.status === 'failed'), 'the result is failed as lost');
  t.equal((await readJob(jobs, id))?.job.results[0]?.refunded, false, 'not refunded: no wallet answers');
  // the report's settle failed at least once against the missing wallet before it comes back
  await new Promise((r) => setTimeout(r, 1500));

  await s.startActor('wallet');
  t.ok(await until(async () => (await readJob(jobs, id))?.job.results[0]?.refunded === true), 'refunded once the wallet answers again');
  t.equal(await s.balance(walletId), 1000 - 20);
  const refunds = (await wallet.transactions(s.nc, walletId)).entries.filter((e) => e.type === 'refund');
  t.match(refunds, [{ jobId: id, resultKey: 'metadata', amount: 20 }]);
  t.match((await readJob(jobs, id))?.job, { status: 'completed', refunded: 20 });
  t.same(await s.violations(), []);
});
