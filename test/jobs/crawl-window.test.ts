// A crawl's window (min(crawl.concurrency, limits.walletTasks)) at 4: the crawl completes (a bench
// run saw one stall at this window, session 30), every page is fetched once, and never more than the
// window's pages are in flight at the site (the server counts). Real gateway, supervisor, wallet,
// converter (4 threads), NATS and a local site of 200 pages.
import t from 'tap';
import { startTestApp } from '../helpers/app.ts';
import { wallet } from '../../shared/protocol/wallet.ts';
import { audit } from '../../shared/audit.ts';
import { fixtureServer, type Route } from '../outbound/fixture-server.ts';

const N = 200;

t.test('a crawl with a window of 4 completes, fetching each page once, at most 4 at a time', async (t) => {
  const app = await startTestApp(t, {
    actors: ['wallet', 'job-supervisor', 'converter'],
    config: {
      outbound: { allowCidrs: ['127.0.0.1/32'] },
      crawl: { concurrency: 4 },
      limits: { walletTasks: 4 },
      websitepro: { concurrency: 4 },
    },
  });
  let now = 0;
  let most = 0;
  const routes: Record<string, Route> = {};
  for (let i = 0; i < N; i++) {
    const links = [3 * i + 1, 3 * i + 2, 3 * i + 3].filter((x) => x < N).map((x) => `<a href="/p/${x}">page ${x}</a>`);
    routes[i === 0 ? '/' : `/p/${i}`] = (_q, r) => {
      most = Math.max(most, ++now);
      setTimeout(() => {
        now--;
        r.writeHead(200, { 'content-type': 'text/html; charset=utf-8' }).end(
          `<html><head><title>Page ${i}</title></head><body><main><h1>Page ${i}</h1><p>Text of page ${i}.</p>${links.join(' ')} <a href="/">home</a></main></body></html>`,
        );
      }, 20);
    };
  }
  const site = await fixtureServer(t, routes);
  const k = await app.newKey();
  await wallet.grant(app.nc, k.walletId, 100_000, 'test');
  const r = await app.request('POST', '/v1/websitepro/jobs', {
    key: k.key,
    body: { url: site.url('/'), outputs: ['text'], crawl: { limit: N, sitemap: 'skip' } },
  });
  t.equal(r.status, 201, r.text);
  let job = r.json.job;
  for (let i = 0; i < 60 && job.status !== 'completed' && job.status !== 'failed'; i++)
    job = (await app.request('GET', `/v1/jobs/${job.id}?wait=5`, { key: k.key })).json.job;
  t.equal(job.status, 'completed', JSON.stringify(job.pages));
  t.same(job.pages, { total: N, recorded: N, slots: N, done: N, failed: 0 });
  const pages = site.hits.filter((h) => h === '/' || h.startsWith('/p/'));
  t.equal(pages.length, N, 'each page fetched once');
  t.equal(new Set(pages).size, N);
  t.ok(most <= 4 && most >= 2, `at most the window in flight at the site (${most})`);
  t.same((await audit(app.nc)).violations, [], 'the money adds up');
});
