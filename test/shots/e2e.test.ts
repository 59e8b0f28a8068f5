// The whole shots path over HTTP: catalogue → quote → job (precheck, charge) → supervisor →
// browser-pool → object store → PNG and WebP thumbnail downloads; failures refunded.
import t from 'tap';
import sharp from 'sharp';
import { startTestApp } from '../helpers/app.ts';
import { wallet } from '../../shared/protocol/wallet.ts';
import { startFixtures } from './fixtures.ts';

t.test('shots end to end', async (t) => {
  const app = await startTestApp(t, {
    actors: ['wallet', 'job-supervisor', 'browser-pool'],
    config: { outbound: { allowCidrs: ['127.0.0.1/32'] }, shots: { browsers: ['chromium', 'mobile'] } },
  });
  const fx = await startFixtures(t);
  const k = await app.newKey();
  await wallet.grant(app.nc, k.walletId, 10_000, 'test');
  const balance = async () => (await wallet.balance(app.nc, k.walletId)).balance;

  const cat = await app.request('GET', '/v1/services/shots');
  t.equal(cat.status, 200, cat.text);
  const chromium = JSON.stringify(cat.json).match(/"id":"chromium"[^}]*"versions":\["(\d+)"/);
  t.ok(chromium, 'catalogue lists chromium with its real version');
  const v = chromium![1]!;

  const body = { url: fx.url('/scheme'), browsers: ['chromium', 'mobile'], viewports: ['800x600'], schemes: ['light', 'dark'] };
  const q = await app.request('POST', '/v1/shots/quote', { key: k.key, body });
  t.equal(q.status, 200, q.text);
  t.equal(q.json.items.length, 4);

  const r = await app.request('POST', '/v1/shots/jobs?wait=25', { key: k.key, body });
  t.equal(r.status, 201, r.text);
  let job = r.json.job;
  for (let i = 0; i < 10 && (job.status === 'queued' || job.status === 'processing'); i++)
    job = (await app.request('GET', `/v1/jobs/${job.id}?wait=25`, { key: k.key })).json.job;
  t.equal(job.status, 'completed');
  t.equal(job.charged, q.json.cost);
  const byKey = Object.fromEntries(job.results.map((x: { key: string }) => [x.key, x]));
  const dark = byKey[`chromium-${v}_800x600_dark.png`];
  t.match(dark, { status: 'done', contentType: 'image/png', refunded: false });
  t.ok(byKey[`mobile-${v}_412x915_light.png`], 'phone result under its own size');

  const png = await app.request('GET', new URL(dark.url).pathname, { key: k.key });
  t.equal(png.status, 200);
  t.match(png.headers.get('content-type'), 'image/png');
  const pngBuf = Buffer.from(
    await (await fetch(dark.url.replace(/^https?:\/\/[^/]+/, app.url), { headers: { authorization: `Bearer ${k.key}` } })).arrayBuffer(),
  );
  t.match(await sharp(pngBuf).metadata(), { format: 'png', width: 800, height: 600 });
  const { data } = await sharp(pngBuf).removeAlpha().raw().toBuffer({ resolveWithObject: true });
  t.same([...data.subarray(0, 3)], [0, 0, 0], 'dark scheme applied');
  const thumb = await fetch(dark.url.replace(/^https?:\/\/[^/]+/, app.url) + '?thumb=1', { headers: { authorization: `Bearer ${k.key}` } });
  t.equal(thumb.status, 200);
  t.match(await sharp(Buffer.from(await thumb.arrayBuffer())).metadata(), { format: 'webp', width: 400 });

  // a redirect to a private address fails in the browser (the precheck saw a public target) and is refunded
  const before = await balance();
  const red = await app.request('POST', '/v1/shots/jobs?wait=25', {
    key: k.key,
    body: { url: fx.url(`/redirect?to=${encodeURIComponent(`http://127.0.0.2:${fx.port}/plain`)}`), browsers: ['chromium'] },
  });
  t.equal(red.status, 201, red.text);
  let rj = red.json.job;
  for (let i = 0; i < 10 && (rj.status === 'queued' || rj.status === 'processing'); i++)
    rj = (await app.request('GET', `/v1/jobs/${rj.id}?wait=25`, { key: k.key })).json.job;
  t.match(rj, { status: 'failed', charged: 0 });
  t.match(rj.results[0], { error: 'blocked_address', refunded: true });
  t.equal(await balance(), before);

  const unknown = await app.request('POST', '/v1/shots/jobs', { key: k.key, body: { url: fx.url('/plain'), browsers: ['safari'] } });
  t.match(unknown, { status: 400, json: { error: { code: 'unknown_browser' } } });
  const blocked = await app.request('POST', '/v1/shots/jobs', { key: k.key, body: { url: 'http://10.0.0.1/', browsers: ['chromium'] } });
  t.match(blocked, { status: 400, json: { error: { code: 'blocked_address' } } });
  t.equal(await balance(), before, 'nothing charged for refused requests');
});
