// A render per page in a page set (waitFor, actions, timeout with `urls` or `crawl`): each page is
// rendered in browser-pool with the request's controls before it is converted, and charged a
// `render` result of its own, as a one-page job is charged one. A page whose selector never appears
// fails every output with selector_not_found, refunded; with no browser-pool running, every page
// fails service_unavailable, refunded. Real gateway, supervisor, wallet, converter, browser-pool
// (Chromium), NATS and HTTP servers.
import t, { type Test } from 'tap';
import { existsSync } from 'node:fs';
import { fixtureServer, html } from '../outbound/fixture-server.ts';
import { SPA_SHELL, SPA_SCRIPT, ARTICLE } from '../converter/pages.ts';
import { startWebsiteproApp } from '../helpers/app.ts';
import { wallet } from '../../shared/protocol/wallet.ts';
import { audit } from '../../shared/audit.ts';

const routes = {
  '/spa': html(SPA_SHELL),
  '/app.js': (_q: unknown, r: import('node:http').ServerResponse) =>
    r.writeHead(200, { 'content-type': 'text/javascript' }).end(SPA_SCRIPT),
  '/article': html(ARTICLE),
};
const BODY = { outputs: ['markdown'], waitFor: '#root article', timeout: 3 };
const GRANT = 100_000;

async function run(t: Test, withBrowser: boolean, body: Record<string, unknown>) {
  const { app, key, walletId } = await startWebsiteproApp(t, withBrowser, GRANT);
  const s = await fixtureServer(t, routes);
  const full = {
    ...BODY,
    ...body,
    ...(body.urls ? { urls: (body.urls as string[]).map((p) => s.url(p)) } : {}),
    ...(body.url ? { url: s.url(body.url as string) } : {}),
  };
  const quote = await app.request('POST', '/v1/websitepro/quote', { key, body: full });
  t.equal(quote.status, 200, quote.text);
  const r = await app.request('POST', '/v1/websitepro/jobs', { key, body: full });
  t.equal(r.status, 201, r.text);
  let job = r.json.job;
  for (let i = 0; i < 600 && job.status !== 'completed' && job.status !== 'failed'; i++) {
    await new Promise((res) => setTimeout(res, 200));
    job = (await app.request('GET', `/v1/jobs/${job.id}`, { key })).json.job;
  }
  const results = job.results as { key: string; status: string; error?: string; page: string; price: number }[];
  const of = (path: string) =>
    Object.fromEntries(
      results.filter((x) => x.page === s.url(path)).map((x) => [x.key.split('/').pop()!, x.status === 'done' ? 'done' : x.error]),
    );
  t.same((await audit(app.nc)).violations, [], 'the money adds up (admin audit)');
  t.equal((await wallet.balance(app.nc, walletId)).balance, GRANT - job.charged, 'the wallet paid what the job says it charged');
  const delivered = results.filter((x) => x.status === 'done').reduce((n, x) => n + x.price, 0);
  t.equal(job.charged, delivered, 'charged exactly the delivered results');
  return { quote: quote.json, job, of, app, key, hits: s.hits };
}

t.test('the quote: a render per page beside each output', async (t) => {
  const { quote } = await run(t, false, { urls: ['/spa', '/article'] });
  t.match(quote.items, [
    { key: 'markdown', quantity: 2 },
    { key: 'render', quantity: 2, unitPrice: 40 },
  ]);
});

t.test('no browser-pool: every page fails service_unavailable, refunded', async (t) => {
  const { job, of } = await run(t, false, { urls: ['/spa', '/article'] });
  t.equal(job.charged, 0);
  t.same(of('/spa'), { markdown: 'service_unavailable', render: 'service_unavailable' });
});

t.test(
  'with browser-pool (Chromium): rendered pages delivered, a page without the selector refunded',
  { skip: existsSync('/usr/bin/chromium') ? false : 'no chromium' },
  async (t) => {
    const { job, of, app, key } = await run(t, true, { urls: ['/spa', '/article'] });
    t.equal(job.status, 'completed');
    t.same(of('/spa'), { markdown: 'done', render: 'done' }, 'the SPA: its selector appeared');
    t.same(of('/article'), { markdown: 'selector_not_found', render: 'selector_not_found' }, 'the article: it never did');
    const md = job.results.find((x: { key: string }) => x.key.endsWith('spa/markdown'));
    const text = (await app.request('GET', `/v1/jobs/${job.id}/results/${encodeURIComponent(md.key)}`, { key })).text;
    t.match(text, 'only after JavaScript ran in a browser', 'converted from the rendered page');
    t.ok(md.selectors?.['#root article'] >= 1, `its results say what waitFor matched: ${JSON.stringify(md.selectors)}`);
  },
);

t.test('a crawl renders each page too', { skip: existsSync('/usr/bin/chromium') ? false : 'no chromium' }, async (t) => {
  const { quote, job, of } = await run(t, true, { url: '/spa', crawl: { limit: 3 } });
  t.match(quote.items, [
    { key: 'markdown', quantity: 3 },
    { key: 'render', quantity: 3 },
  ]);
  t.equal(job.status, 'completed');
  t.same(of('/spa'), { markdown: 'done', render: 'done' });
});

t.test(
  'a crawl page the browser is told 429: asked again, delivered once',
  { skip: existsSync('/usr/bin/chromium') ? false : 'no chromium' },
  async (t) => {
    const { app, key } = await startWebsiteproApp(t, true);
    let asked = 0;
    // the converter's fetch (1), the browser (2: 429), the fetch again (3), the browser again (4)
    const s = await fixtureServer(t, {
      '/': (_q, r) => {
        if (++asked === 2) r.writeHead(429, { 'retry-after': '1', 'content-type': 'text/plain' }).end('slow down');
        else
          html(
            '<html><head><title>Home</title></head><body><main><article><h1>Home</h1><p>Words of the home page.</p></article></main></body></html>',
          )(_q, r);
      },
    });
    const r = await app.request('POST', '/v1/websitepro/jobs', {
      key,
      // waitFor, whose selector the 429 page lacks: browser-pool returns the status at once instead of
      // waiting it out (that was selector_not_found, refunded, never asked again)
      body: { url: s.url('/'), outputs: ['markdown'], waitFor: 'article h1', timeout: 8, crawl: { limit: 2 } },
    });
    t.equal(r.status, 201, r.text);
    let job = r.json.job;
    for (let i = 0; i < 300 && job.status !== 'completed' && job.status !== 'failed'; i++) {
      await new Promise((res) => setTimeout(res, 200));
      job = (await app.request('GET', `/v1/jobs/${job.id}`, { key })).json.job;
    }
    t.same(
      job.results.map((x: { key: string; status: string }) => [x.key, x.status]).sort(),
      [
        ['index/markdown', 'done'],
        ['index/render', 'done'],
      ],
      `delivered once, after the 429: ${JSON.stringify(job.results)}`,
    );
    t.ok(asked >= 4, `the browser's 429 was asked again (${asked} requests)`);
    t.same((await audit(app.nc)).violations, [], 'the money adds up');
  },
);
