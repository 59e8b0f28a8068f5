// Page controls on page sets (issue 42 with issue 43's controls): a batch and a crawl apply the
// request's removeSelectors / targetSelectors / mainContent to every page and deliver rawHtml per
// page, with the real converter; credentials (headers, cookies: never stored, and a page set sends
// its pages long after the request) are a 400 that costs nothing. A render per page (waitFor,
// actions): test/jobs/page-set-render.test.ts.
import t from 'tap';
import { startTestApp } from '../helpers/app.ts';
import { wallet } from '../../shared/protocol/wallet.ts';
import { audit } from '../../shared/audit.ts';
import { fixtureServer, type Route } from '../outbound/fixture-server.ts';

const page =
  (n: string, links: string[] = []): Route =>
  (_q, r) =>
    r
      .writeHead(200, { 'content-type': 'text/html; charset=utf-8' })
      .end(
        `<html><head><title>Page ${n}</title></head><body><main><h1>Page ${n}</h1><p class="keep">Kept text of ${n}.</p>` +
          `<p class="ad">ADVERT ${n}</p>${links.map((l) => `<a href="${l}">${l}</a>`).join(' ')}</main></body></html>`,
      );

t.test('batch and crawl pages apply the HTML controls and deliver rawHtml', async (t) => {
  const app = await startTestApp(t, {
    actors: ['wallet', 'job-supervisor', 'converter'],
    config: { outbound: { allowCidrs: ['127.0.0.1/32'] } },
  });
  const site = await fixtureServer(t, { '/': page('home', ['/a']), '/a': page('a'), '/b': page('b') });
  const k = await app.newKey();
  await wallet.grant(app.nc, k.walletId, 100_000, 'test');
  const done = async (id: string) => {
    for (let i = 0; i < 60; i++) {
      const job = (await app.request('GET', `/v1/jobs/${id}?wait=25`, { key: k.key })).json.job;
      if (job.status === 'completed' || job.status === 'failed') return job;
    }
    throw new Error(`job ${id} did not finish`);
  };
  const read = async (r: { url: string }) => (await app.request('GET', new URL(r.url).pathname, { key: k.key })).text;

  // refused before any charge
  for (const [extra, why] of [
    [{ headers: { 'X-Token': 'v' } }, 'headers'],
    [{ cookies: [{ name: 'sid', value: 'v' }] }, 'cookies'],
  ] as const) {
    const r = await app.request('POST', '/v1/websitepro/jobs', {
      key: k.key,
      body: { urls: [site.url('/a')], outputs: ['markdown'], ...extra },
    });
    t.equal(r.status, 400, `${why} on a batch: ${r.text}`);
    t.equal(r.json?.error?.code, 'bad_request');
  }
  t.equal((await wallet.balance(app.nc, k.walletId)).balance, 100_000, 'nothing charged');

  const b = await app.request('POST', '/v1/websitepro/jobs', {
    key: k.key,
    body: { urls: [site.url('/a'), site.url('/b')], outputs: ['markdown', 'rawHtml'], removeSelectors: ['.ad'] },
  });
  t.equal(b.status, 201, b.text);
  const batch = await done(b.json.job.id);
  t.equal(batch.status, 'completed');
  for (const n of ['a', 'b']) {
    const md = batch.results.find((r: { key: string }) => r.key === `${n}/markdown`);
    const raw = batch.results.find((r: { key: string }) => r.key === `${n}/rawHtml`);
    t.equal(md?.status, 'done', `${n}/markdown delivered`);
    t.same(md.selectors, { '.ad': 1 }, `${n}/markdown says what its selector matched`);
    const text = await read(md);
    t.match(text, `Kept text of ${n}`);
    t.notMatch(text, 'ADVERT', `the removed element is not in page ${n}'s markdown`);
    t.equal(raw?.status, 'done', `${n}/rawHtml delivered`);
    t.match(await read(raw), `ADVERT ${n}`, 'rawHtml is the page as fetched');
  }

  const c = await app.request('POST', '/v1/websitepro/jobs', {
    key: k.key,
    body: { url: site.url('/'), outputs: ['text'], targetSelectors: ['.keep'], crawl: { limit: 5 } },
  });
  t.equal(c.status, 201, c.text);
  const crawl = await done(c.json.job.id);
  t.same(crawl.results.map((r: { page: string }) => r.page).sort(), [site.url('/'), site.url('/a')], 'the crawl followed its link');
  for (const r of crawl.results) {
    const text = await read(r);
    t.match(text, 'Kept text of', `${r.key}: the target is converted`);
    t.same(r.selectors, { '.keep': 1 }, `${r.key}: its target selector's matches`);
    t.notMatch(text, 'ADVERT', `${r.key}: nothing but the target (the other paragraph is not converted)`);
  }
  t.same((await audit(app.nc)).violations, [], 'the money adds up');
});
