// Issue 28 item 4: job creation checks every kind of worker a job needs, per output: websitepro's
// pdf is printed by a browser-pool, so with no printing pool it is refused before any charge.
import t from 'tap';
import { startJobsApi } from './app.ts';

t.test('pdf with no browser-pool that prints: 503, nothing charged; the other outputs still go', async (t) => {
  const s = await startJobsApi(t, {}, { printer: false });
  const { key, walletId } = await s.newWallet(1000);
  const r = await s.request('POST', '/v1/websitepro/jobs', { key, body: { url: s.targetUrl, outputs: ['text', 'pdf'] } });
  t.equal(r.status, 503, r.text);
  t.equal(r.json.error.code, 'service_unavailable');
  t.match(r.json.error.message, /prints PDFs/);
  t.equal(await s.balance(walletId), 1000, 'nothing charged');
  const ok = await s.request('POST', '/v1/websitepro/jobs?wait=10', { key, body: { url: s.targetUrl, outputs: ['text'] } });
  t.equal(ok.status, 201, ok.text);
  t.equal(ok.json.job.status, 'completed');
  t.same(await s.violations(), []);
});

t.test('with a printing pool the pdf job is created', async (t) => {
  const s = await startJobsApi(t);
  const { key } = await s.newWallet(1000);
  const r = await s.request('POST', '/v1/websitepro/jobs?wait=10', { key, body: { url: s.targetUrl, outputs: ['text', 'pdf'] } });
  t.equal(r.status, 201, r.text);
});
