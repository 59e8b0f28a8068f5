// Issue 43 over HTTP: bad options are a 400 bad_request before any charge; the quote prices the
// options; a JPEG of one element is delivered as image/jpeg with the selector counts on the result;
// a selector that matches nothing fails the result as selector_not_found and refunds it.
import t from 'tap';
import sharp from 'sharp';
import { Kvm } from '@nats-io/kv';
import { BUCKETS } from '../../shared/names.ts';
import { startTestApp } from '../helpers/app.ts';
import { wallet } from '../../shared/protocol/wallet.ts';
import { startFixtures } from './fixtures.ts';

t.test('shots options end to end', async (t) => {
  const app = await startTestApp(t, {
    actors: ['wallet', 'job-supervisor', 'browser-pool'],
    config: { outbound: { allowCidrs: ['127.0.0.1/32'] }, shots: { browsers: ['chromium', 'firefox'] } },
  });
  const fx = await startFixtures(t);
  const k = await app.newKey();
  await wallet.grant(app.nc, k.walletId, 10_000, 'test');
  const balance = async () => (await wallet.balance(app.nc, k.walletId)).balance;
  const prices = app.config.pricing.shots;
  const url = fx.url('/plain');
  const before = await balance();

  const bad: [string, Record<string, unknown>, string[]?][] = [
    ['selector with fullPage', { selector: 'h1', fullPage: true }],
    ['a script over 16 KB', { js: `/*${'x'.repeat(16 * 1024)}*/` }],
    ['too many actions', { actions: Array.from({ length: 21 }, () => ({ type: 'wait', ms: 1 })) }],
    ['a forbidden header', { headers: { Host: 'example.com' } }],
    ['a hop-by-hop header', { headers: { 'Transfer-Encoding': 'chunked' } }],
    ['an invalid selector', { click: 'a[' }],
    ['locale in Firefox', { locale: 'de-DE' }, ['chromium', 'firefox']],
  ];
  for (const [what, options, browsers] of bad) {
    const r = await app.request('POST', '/v1/shots/jobs', { key: k.key, body: { url, browsers: browsers ?? ['chromium'], options } });
    t.match(r, { status: 400, json: { error: { code: 'bad_request' } } }, `${what}: ${r.text}`);
  }
  t.equal(await balance(), before, 'nothing charged for refused requests');

  const q = await app.request('POST', '/v1/shots/quote', {
    key: k.key,
    body: { url, browsers: ['chromium'], options: { js: '1', blockAds: true } },
  });
  t.equal(q.json.cost, prices.screenshot + prices.scripted + prices.blockAds, 'the quote prices the options');

  const run = async (body: Record<string, unknown>) => {
    const r = await app.request('POST', '/v1/shots/jobs?wait=25', { key: k.key, body });
    t.equal(r.status, 201, r.text);
    let job = r.json.job;
    for (let i = 0; i < 10 && (job.status === 'queued' || job.status === 'processing'); i++)
      job = (await app.request('GET', `/v1/jobs/${job.id}?wait=25`, { key: k.key })).json.job;
    return job;
  };
  const job = await run({
    url,
    browsers: ['chromium', 'firefox'],
    viewports: ['800x600'],
    options: { selector: 'h1', format: 'jpeg', quality: 60, thumbWidth: 120 },
  });
  t.equal(job.status, 'completed', JSON.stringify(job.results));
  for (const r of job.results) {
    t.match(r, { status: 'done', contentType: 'image/jpeg', selectors: { h1: 1 } }, r.key);
    t.match(r.key, /\.jpg$/);
    const file = Buffer.from(
      await (await fetch(r.url.replace(/^https?:\/\/[^/]+/, app.url), { headers: { authorization: `Bearer ${k.key}` } })).arrayBuffer(),
    );
    t.same([...file.subarray(0, 2)], [0xff, 0xd8], 'a JPEG');
    const meta = await sharp(file).metadata();
    t.ok(meta.width! <= 800 && meta.height! < 100, `the h1 only, a block as wide as the window (${meta.width}x${meta.height})`);
    const thumb = await fetch(r.url.replace(/^https?:\/\/[^/]+/, app.url) + '?thumb=1', { headers: { authorization: `Bearer ${k.key}` } });
    t.match(await sharp(Buffer.from(await thumb.arrayBuffer())).metadata(), { format: 'webp', width: 120 }, 'thumbWidth');
  }

  // the secret values are in no view of the job and not in its stored document: they ride in the
  // task messages only (shared/services/task-secret.ts)
  const secretJob = await run({
    url,
    browsers: ['chromium', 'firefox'],
    options: { headers: { 'X-Secret': 'hdr-sekrit-1' }, cookies: [{ name: 'sid', value: 'ck-sekrit-2' }] },
  });
  t.equal(secretJob.status, 'completed', 'interception behind the guard proxy, both engines');
  const one = await app.request('GET', `/v1/jobs/${secretJob.id}`, { key: k.key });
  const list = await app.request('GET', '/v1/jobs', { key: k.key });
  const stored = await (await new Kvm(app.nc).open(BUCKETS.jobs)).get(secretJob.id);
  const doc = new TextDecoder().decode(stored?.value);
  t.match(doc, /X-Secret/, 'the stored document names the header');
  for (const [what, text] of [
    ['job', one.text],
    ['list', list.text],
    ['stored document', doc],
  ])
    t.notMatch(text, /sekrit/, `the ${what} holds neither value`);

  const mid = await balance();
  const missing = await run({ url, browsers: ['chromium'], options: { waitFor: '#nope', selector: 'h1' } });
  t.match(missing, { status: 'failed', charged: 0 });
  t.match(missing.results[0], { status: 'failed', error: 'selector_not_found', refunded: true });
  t.match(JSON.stringify(missing.results[0]), /#nope/, 'the result names the selector');
  t.equal(await balance(), mid, 'refunded');
});
