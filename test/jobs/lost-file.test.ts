// A delivered result whose stored file is gone is refunded once as worker_lost (issue 20 item 5):
// noticed at download, or by the supervisor's sweep without any download. Real HTTP, wallet,
// supervisor, test workers, object store.
import t from 'tap';
import { Objm } from '@nats-io/obj';
import { startJobsApi } from './app.ts';
import { OBJECT_STORES } from '../../shared/names.ts';
import { wallet } from '../../shared/protocol/wallet.ts';

const until = async (f: () => Promise<boolean>, ms = 15_000) => {
  const end = Date.now() + ms;
  while (Date.now() < end) {
    if (await f()) return true;
    await new Promise((r) => setTimeout(r, 150));
  }
  return false;
};

t.test('at download: 404, the result is failed as worker_lost and refunded once', async (t) => {
  // a sweep every 100 s: only the download can notice
  const s = await startJobsApi(t, { retention: { sweepSeconds: 100 } });
  const { key, walletId } = await s.newWallet(1000);
  const r = await s.request('POST', '/v1/websitepro/jobs?wait=10', { key, body: { url: s.targetUrl, outputs: ['metadata', 'text'] } });
  t.equal(r.json.job.status, 'completed', r.text);
  t.equal(await s.balance(walletId), 1000 - 40);
  const [meta, text] = r.json.job.results;
  const os = await new Objm(s.nc).open(OBJECT_STORES.results);
  await os.delete(`${r.json.job.id}/${meta.key}`); // the store loses one file
  const dl = await s.request('GET', new URL(meta.url).pathname, { key });
  t.equal(dl.status, 404);
  t.match(dl.json.error.message, /lost.*refunded/);
  t.ok(await until(async () => (await s.balance(walletId)) === 1000 - 20), 'the lost result is refunded');
  const job = (await s.request('GET', `/v1/jobs/${r.json.job.id}`, { key })).json.job;
  t.match(job.results[0], { key: meta.key, status: 'failed', error: 'worker_lost', refunded: true });
  t.notOk(job.results[0].url, 'no download link any more');
  t.match(job, { status: 'completed', refunded: 20, charged: 20 }, 'the other result is still delivered');
  t.equal((await s.request('GET', new URL(text.url).pathname, { key })).status, 200);
  for (let i = 0; i < 3; i++) t.equal((await s.request('GET', new URL(meta.url).pathname, { key })).status, 404);
  await new Promise((r) => setTimeout(r, 500));
  const refunds = (await wallet.transactions(s.nc, walletId)).entries.filter((e) => e.type === 'refund');
  t.equal(refunds.length, 1, 'refunded once, whatever the number of downloads');
  t.same(await s.violations(), []);
});

t.test('by the sweep: a job whose only file is lost becomes failed and costs nothing', async (t) => {
  const s = await startJobsApi(t, { retention: { sweepSeconds: 0.2 } });
  const { key, walletId } = await s.newWallet(1000);
  const r = await s.request('POST', '/v1/websitepro/jobs?wait=10', { key, body: { url: s.targetUrl, outputs: ['markdown'] } });
  t.equal(r.json.job.status, 'completed', r.text);
  const os = await new Objm(s.nc).open(OBJECT_STORES.results);
  await os.delete(`${r.json.job.id}/markdown`);
  t.ok(await until(async () => (await s.balance(walletId)) === 1000), 'refunded without any download');
  const job = (await s.request('GET', `/v1/jobs/${r.json.job.id}`, { key })).json.job;
  t.match(job, { status: 'failed', charged: 0, error: 'worker_lost' });
  t.same(await s.violations(), []);
});
