// A crawl page on another origin than the start's (allowSubdomains) reads that origin's own
// robots.txt before the page: a disallowed page is not fetched and answers `skipped: "robots"`, an
// unreadable robots.txt (5xx) answers `skipped: "robots_unavailable"`, an allowed page is converted
// and carries the origin's Crawl-delay; a 429/503 that is no wall answers `retry` with its
// Retry-After; a same-origin rel=canonical naming another page comes back as `canonical`. The real
// page task (actors/converter/page.ts) with the real conversion pool, NATS and a local HTTP server.
import t from 'tap';
import { startTestNats } from '../helpers/nats.ts';
import { fixtureServer, type Route } from '../outbound/fixture-server.ts';
import { handlePage } from '../../actors/converter/page.ts';
import { ConvertPool } from '../../actors/converter/pool.ts';
import { OBJECT_STORES } from '../../shared/names.ts';
import { Objm } from '@nats-io/obj';
import type { PageTaskParams } from '../../shared/jobs/pages.ts';

const html =
  (body: string, head = ''): Route =>
  (_q, r) =>
    r
      .writeHead(200, { 'content-type': 'text/html; charset=utf-8' })
      .end(`<html><head><title>T</title>${head}</head><body>${body}</body></html>`);
const text =
  (status: number, body: string, headers: Record<string, string> = {}): Route =>
  (_q, r) =>
    r.writeHead(status, { 'content-type': 'text/plain', ...headers }).end(body);

t.test('the page task: other origins’ robots.txt, 429 retry, canonical', async (t) => {
  const tn = await startTestNats(t, { outbound: { allowCidrs: ['127.0.0.1/32'] } });
  await new Objm(tn.nc).create(OBJECT_STORES.results);
  const pool = new ConvertPool({ size: 1 });
  t.teardown(() => pool.close());
  const site = await fixtureServer(t, {
    '/robots.txt': text(200, 'User-agent: *\nDisallow: /private/\nCrawl-delay: 2\n'),
    '/private/x': html('secret'),
    '/open': html('<p>open page</p><a href="/other">other</a>', '<link rel="canonical" href="/open-original?utm_source=x">'),
    '/busy': text(429, 'slow down', { 'retry-after': '7' }),
  });
  const broken = await fixtureServer(t, { '/robots.txt': text(500, 'oops'), '/page': html('x') });
  const run = async (url: string, crawl: PageTaskParams['crawl']) => {
    const params: PageTaskParams = { page: true, index: 1, url, source: url, pageKey: 'p', outputs: ['text'], crawl };
    const task = {
      v: 1 as const,
      jobId: 'job_robots',
      service: 'websitepro' as const,
      resultKey: 'page:1',
      walletId: 'w_x',
      store: OBJECT_STORES.results,
      objectName: 'job_robots/p',
      expiresAt: Date.now() + 60_000,
      params: params as unknown as Record<string, unknown>,
    };
    const r = await handlePage(
      { nc: tn.nc, config: tn.config, pool },
      { task, signal: new AbortController().signal, deliveryCount: 1, progress: async () => {} },
    );
    return r.extra as Record<string, any>;
  };

  const denied = await run(site.url('/private/x'), { robots: false, originRobots: true });
  t.same(denied, { page: site.url('/private/x'), outputs: {}, skipped: 'robots' }, 'a disallowed page is skipped');
  t.notOk(site.hits.includes('/private/x'), 'and never fetched (the server says so)');

  const open = await run(site.url('/open'), { robots: false, originRobots: true });
  t.ok(open.outputs.text?.file, 'an allowed page is converted');
  t.equal(open.crawlDelayMs, 2000, "with its origin's Crawl-delay");
  t.equal(open.canonical, site.url('/open-original?utm_source=x'), 'a canonical naming another page of the origin comes back');
  t.same(open.links, [site.url('/other')], 'with its links');
  t.equal(site.hits.filter((h) => h === '/robots.txt').length, 1, "the origin's robots.txt is read once");

  const busy = await run(site.url('/busy'), { robots: false });
  t.same(busy, { page: site.url('/busy'), outputs: {}, retry: { status: 429, retryAfterMs: 7000 } }, 'a 429 is asked again, not failed');

  const unreadable = await run(broken.url('/page'), { robots: false, originRobots: true });
  t.equal(unreadable.skipped, 'robots_unavailable', 'a robots.txt answering 500 keeps the origin unfetched');
  t.notOk(broken.hits.includes('/page'), 'its page was not fetched');
});
