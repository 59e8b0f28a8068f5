// Expiry of results (real HTTP, wallet, supervisor, test workers).
import t from 'tap';
import { Objm } from '@nats-io/obj';
import { startJobsApi } from './app.ts';
import { OBJECT_STORES } from '../../shared/names.ts';

t.test('expiry: files really deleted, download 410, url gone', async (t) => {
  const s = await startJobsApi(t, { retention: { websitepro: 2, shots: 2, sweepSeconds: 0.3 } });
  const { key, walletId } = await s.newWallet(5000);
  const r = await s.request('POST', '/v1/shots/jobs?wait=10', { key, body: { url: s.targetUrl, browsers: ['testbrowser'] } });
  const job = r.json.job;
  t.equal(job.status, 'completed');
  const res = job.results[0];
  t.equal((await s.request('GET', new URL(res.url).pathname, { key })).status, 200);
  const os = await new Objm(s.nc).open(OBJECT_STORES.results);
  t.ok(await os.info(`${job.id}/${res.key}`), 'stored');
  await new Promise((r) => setTimeout(r, Math.max(0, job.expiresAt - Date.now()) + 1500));
  const after = await s.request('GET', `/v1/jobs/${job.id}`, { key });
  t.notOk(after.json.job.results[0].url, 'no url after expiresAt');
  t.notOk(after.json.job.results[0].thumbUrl);
  const dl = await s.request('GET', new URL(res.url).pathname, { key });
  t.equal(dl.status, 410);
  t.equal(dl.json.error.code, 'expired');
  t.equal((await s.request('GET', `/v1/jobs/${job.id}/zip`, { key })).status, 410);
  const present = async (name: string) => {
    const info = await os.info(name);
    return !!info && !info.deleted;
  };
  const gone = async () => [await present(`${job.id}/${res.key}`), await present(`${job.id}/${res.key}.thumb.webp`)];
  for (let i = 0; i < 30 && (await gone()).some(Boolean); i++) await new Promise((r) => setTimeout(r, 200));
  t.same(await gone(), [false, false], 'file and thumbnail deleted from the store');
  t.equal(await os.getBlob(`${job.id}/${res.key}`), null, 'nothing left to read');
  t.equal(await s.balance(walletId), 5000 - 50);
  t.same(await s.violations(), []);
});
