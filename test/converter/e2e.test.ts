// The whole websitepro path over HTTP: gateway → precheck → charge → supervisor → converter →
// object store → download; undelivered results refunded; blocked targets refused before any charge.
import t from 'tap';
import net from 'node:net';
import { startTestApp } from '../helpers/app.ts';
import { wallet } from '../../shared/protocol/wallet.ts';
import { fixtureServer, html } from '../outbound/fixture-server.ts';
import { ARTICLE } from './pages.ts';

t.test('websitepro end to end', async (t) => {
  const app = await startTestApp(t, {
    actors: ['wallet', 'job-supervisor', 'converter'],
    config: { outbound: { allowCidrs: ['127.0.0.1/32'] }, websitepro: { fetchTimeoutMs: 2000 } },
  });
  const site = await fixtureServer(t, {
    '/post': html(ARTICLE),
    '/to-private': (_q, r) => r.writeHead(302, { location: 'http://127.0.0.2/' }).end(),
  });
  const k = await app.newKey();
  await wallet.grant(app.nc, k.walletId, 10_000, 'test');
  const balance = async () => (await wallet.balance(app.nc, k.walletId)).balance;

  // no browser-pool prints the pdf: refused before any charge (issue 28 item 4), not charged and refunded later
  const noPrinter = await app.request('POST', '/v1/websitepro/jobs?wait=25', {
    key: k.key,
    body: { url: site.url('/post'), outputs: ['text', 'pdf'] },
  });
  t.equal(noPrinter.status, 503, noPrinter.text);
  t.equal(noPrinter.json.error.code, 'service_unavailable');
  t.equal(await balance(), 10_000, 'nothing charged');

  const r = await app.request('POST', '/v1/websitepro/jobs?wait=25', {
    key: k.key,
    body: { url: site.url('/post'), outputs: ['markdown', 'metadata'] },
  });
  t.equal(r.status, 201, r.text);
  let job = r.json.job;
  for (let i = 0; i < 10 && (job.status === 'queued' || job.status === 'processing'); i++)
    job = (await app.request('GET', `/v1/jobs/${job.id}?wait=25`, { key: k.key })).json.job;
  t.equal(job.status, 'completed');
  const byKey = Object.fromEntries(job.results.map((x: { key: string }) => [x.key, x]));
  t.match(byKey.markdown, { status: 'done', contentType: 'text/markdown; charset=utf-8', refunded: false });
  t.match(byKey.metadata, { status: 'done', contentType: 'application/json' });
  t.equal(job.charged, job.cost);
  t.equal(await balance(), 10_000 - job.charged);

  const md = await app.request('GET', new URL(byKey.markdown.url).pathname, { key: k.key });
  t.equal(md.status, 200);
  t.match(md.headers.get('content-type'), 'text/markdown');
  t.match(md.text, /^# Tides of the North Sea\n/);
  const meta = await app.request('GET', new URL(byKey.metadata.url).pathname, { key: k.key });
  t.equal(meta.json.author, 'Ada Lovelace');

  const before = await balance();
  const blocked = await app.request('POST', '/v1/websitepro/jobs', { key: k.key, body: { url: 'http://10.0.0.1/', outputs: ['text'] } });
  t.equal(blocked.status, 400);
  t.equal(blocked.json.error.code, 'blocked_address');
  const meta2 = await app.request('POST', '/v1/websitepro/jobs', {
    key: k.key,
    body: { url: 'http://169.254.169.254/latest/meta-data/', outputs: ['text'] },
  });
  t.equal(meta2.json.error.code, 'blocked_address');
  t.equal(await balance(), before, 'nothing charged for refused targets');

  // a redirect to a private address is found only when fetching: the result fails and is refunded
  const red = await app.request('POST', '/v1/websitepro/jobs?wait=25', {
    key: k.key,
    body: { url: site.url('/to-private'), outputs: ['text'] },
  });
  let rj = red.json.job;
  for (let i = 0; i < 10 && (rj.status === 'queued' || rj.status === 'processing'); i++)
    rj = (await app.request('GET', `/v1/jobs/${rj.id}?wait=25`, { key: k.key })).json.job;
  t.match(rj, { status: 'failed', charged: 0 });
  t.match(rj.results[0], { error: 'blocked_address', refunded: true });
  t.equal(await balance(), before);

  // a server that accepts the connection (so the precheck passes) but never answers
  const held: net.Socket[] = [];
  const silent = net.createServer((s) => held.push(s));
  await new Promise<void>((r) => silent.listen(0, '127.0.0.1', () => r()));
  t.teardown(() => {
    held.forEach((s) => s.destroy());
    silent.close();
  });
  const hang = await app.request('POST', '/v1/websitepro/jobs?wait=25', {
    key: k.key,
    body: { url: `http://127.0.0.1:${(silent.address() as net.AddressInfo).port}/`, outputs: ['text', 'markdown'] },
  });
  t.equal(hang.status, 201);
  let hj = hang.json.job;
  for (let i = 0; i < 10 && (hj.status === 'queued' || hj.status === 'processing'); i++)
    hj = (await app.request('GET', `/v1/jobs/${hj.id}?wait=25`, { key: k.key })).json.job;
  t.match(hj, { status: 'failed', charged: 0, refunded: hj.cost });
  for (const res of hj.results) t.match(res, { status: 'failed', error: 'timeout', refunded: true });
  t.equal(await balance(), before, 'a target that never answers costs nothing');
});
