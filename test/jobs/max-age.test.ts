// Fresh or cached (websitepro `maxAge`, actors/converter/cache.ts): maxAge 0 fetches every time;
// a later job with maxAge serves the page from the cache (the target sees no new request, the result
// says `cachedAt`); a request with headers neither reads nor writes it; a batch reads it too; a bad
// maxAge is a 400 that costs nothing. Real gateway, supervisor, wallet, converter, NATS; the target is
// a local HTTP server that counts its hits.
import t from 'tap';
import { cacheWritesSettled } from '../../actors/converter/cache.ts';
import { startTestApp } from '../helpers/app.ts';
import { wallet } from '../../shared/protocol/wallet.ts';
import { audit } from '../../shared/audit.ts';
import { fixtureServer, html } from '../outbound/fixture-server.ts';
import { ARTICLE } from '../converter/pages.ts';

type Res = { key: string; status: string; cachedAt?: string; page?: string; source?: string };

t.test('maxAge: fetched, cached, bypassed, batched, refused', async (t) => {
  const app = await startTestApp(t, {
    actors: ['wallet', 'job-supervisor', 'converter'],
    config: {
      outbound: { allowCidrs: ['127.0.0.1/32'] },
      websitepro: { fetchTimeoutMs: 5000, cacheMaxAgeSeconds: 3600, cacheEntryMaxBytes: 20_000 },
    },
  });
  const BIG = ARTICLE.replace('</body>', `<p>${'More text for a page over the cache entry cap. '.repeat(600)}</p></body>`);
  const site = await fixtureServer(t, { '/post': html(ARTICLE), '/other': html(ARTICLE), '/third': html(ARTICLE), '/big': html(BIG) });
  const hits = (path: string) => site.hits.filter((h) => h === path).length;
  const k = await app.newKey();
  await wallet.grant(app.nc, k.walletId, 100_000, 'test');
  const balance = async () => (await wallet.balance(app.nc, k.walletId)).balance;

  const run = async (body: Record<string, unknown>) => {
    const r = await app.request('POST', '/v1/websitepro/jobs?wait=25', { key: k.key, body });
    t.equal(r.status, 201, r.text);
    let job = r.json.job;
    for (let i = 0; i < 10 && (job.status === 'queued' || job.status === 'processing'); i++)
      job = (await app.request('GET', `/v1/jobs/${job.id}?wait=25`, { key: k.key })).json.job;
    t.equal(job.status, 'completed', JSON.stringify(job.results));
    // the converter (in this process) writes the cache beside the conversion: done before the next job
    await cacheWritesSettled();
    return job as { results: Res[]; charged: number; cost: number };
  };

  // maxAge 0 (and no maxAge) fetches every time, and each fetch is written to the cache
  const first = await run({ url: site.url('/post'), outputs: ['markdown', 'text'] });
  t.equal(hits('/post'), 1, 'the first job fetched the page');
  for (const r of first.results) t.notOk(r.cachedAt, `${r.key}: fetched, not cached`);
  const zero = await run({ url: site.url('/post'), outputs: ['markdown'], maxAge: 0 });
  t.equal(hits('/post'), 2, 'maxAge 0 fetches again');
  t.notOk(zero.results[0]!.cachedAt);

  // maxAge 600: served from the cache, the same price
  const before = await balance();
  const cached = await run({ url: site.url('/post'), outputs: ['markdown', 'text'], maxAge: 600 });
  t.equal(hits('/post'), 2, 'no new request reached the target');
  for (const r of cached.results) {
    t.match(r, { status: 'done', page: site.url('/post') }, r.key);
    t.ok(r.cachedAt && !Number.isNaN(Date.parse(r.cachedAt)), `${r.key}: cachedAt ${r.cachedAt}`);
  }
  t.equal(cached.charged, first.charged, 'a cached page costs what a fetched one does');
  t.equal(await balance(), before - cached.charged);
  const file = cached.results.find((r) => r.key === 'markdown') as Res & { url: string };
  const md = await app.request('GET', new URL(file.url, 'http://x').pathname, { key: k.key });
  t.equal(md.status, 200, 'the cached page was converted and stored');
  t.match(md.text, /quick brown fox/);

  // a request with headers neither reads the cache nor writes it
  await run({ url: site.url('/post'), outputs: ['markdown'], maxAge: 600, headers: { 'X-Token': 'abc' } });
  t.equal(hits('/post'), 3, 'headers: fetched although a fresh entry exists');
  await run({ url: site.url('/other'), outputs: ['markdown'], headers: { 'X-Token': 'abc' } });
  t.equal(hits('/other'), 1);
  const other = await run({ url: site.url('/other'), outputs: ['markdown'], maxAge: 600 });
  t.equal(hits('/other'), 2, 'a fetch with headers was not written to the cache');
  t.notOk(other.results[0]!.cachedAt);

  // a batch reads it (and writes what it fetches)
  const batch = await run({ urls: [site.url('/post'), site.url('/third')], outputs: ['markdown'], maxAge: 600 });
  t.equal(hits('/post'), 3, 'the batch took /post from the cache');
  t.equal(hits('/third'), 1, 'and fetched /third');
  const byKey = Object.fromEntries(batch.results.map((r) => [r.key, r]));
  t.match(byKey['post/markdown'], { status: 'done', source: site.url('/post') });
  t.ok(byKey['post/markdown']!.cachedAt, 'the cached page says cachedAt');
  t.notOk(byKey['third/markdown']!.cachedAt, 'the fetched one does not');
  const again = await run({ urls: [site.url('/third')], outputs: ['markdown'], maxAge: 600 });
  t.equal(hits('/third'), 1, "the batch's own fetch was cached");
  t.ok(again.results[0]!.cachedAt);

  // a page over the entry cap (websitepro.cacheEntryMaxBytes) is not kept: fetched every time
  t.ok(BIG.length > 20_000 && ARTICLE.length < 20_000, 'the fixtures straddle the cap');
  await run({ url: site.url('/big'), outputs: ['text'], maxAge: 600 });
  const big = await run({ url: site.url('/big'), outputs: ['text'], maxAge: 600 });
  t.equal(hits('/big'), 2, 'a page over the cap is fetched again');
  t.notOk(big.results[0]!.cachedAt);

  // a crawl's pages read it too (robots.txt is read each time: it is not a page)
  const crawlSite = await fixtureServer(t, {
    '/': html('<html><head><title>Home</title></head><body><h1>Home</h1><a href="/a">a</a></body></html>'),
    '/a': html(ARTICLE),
  });
  const crawlHits = () => crawlSite.hits.filter((h) => h === '/' || h === '/a').length;
  const crawl = { limit: 5, sitemap: 'skip' };
  const c1 = await run({ url: crawlSite.url('/'), outputs: ['markdown'], crawl });
  t.equal(crawlHits(), 2, 'the first crawl fetched both pages');
  t.equal(c1.results.filter((r) => r.status === 'done').length, 2);
  const c2 = await run({ url: crawlSite.url('/'), outputs: ['markdown'], crawl, maxAge: 600 });
  t.equal(crawlHits(), 2, 'the second crawl took both pages from the cache');
  t.equal(c2.results.filter((r) => r.status === 'done' && r.cachedAt).length, 2, 'each says cachedAt');

  // a bad maxAge is a 400 before anything is charged or fetched
  const spent = await balance();
  const seen = site.hits.length;
  for (const maxAge of [-1, 3601, 1.5, 'soon']) {
    const r = await app.request('POST', '/v1/websitepro/jobs', {
      key: k.key,
      body: { url: site.url('/post'), outputs: ['markdown'], maxAge },
    });
    t.equal(r.status, 400, `maxAge ${maxAge}: ${r.text}`);
    t.equal(r.json.error.code, 'bad_request');
  }
  t.equal(await balance(), spent, 'a refused maxAge cost nothing');
  t.equal(site.hits.length, seen, 'and fetched nothing');

  t.same((await audit(app.nc)).violations, [], 'the money adds up');
});
