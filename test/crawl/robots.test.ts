// robots.txt through the outbound guard, against real HTTP servers on 127.0.0.1.
import t from 'tap';
import { RobotsCache, fetchRobots, parseRobots } from '../../shared/crawl/robots.ts';
import { DEFAULT_USER_AGENT, ROBOTS_AGENT } from '../../shared/outbound/index.ts';
import { fixtureServer } from '../outbound/fixture-server.ts';

const guard = { allowCidrs: ['127.0.0.1/32'], maxRedirects: 5, connectTimeoutMs: 2000 };
const text =
  (body: string, status = 200, headers: Record<string, string> = {}) =>
  (_q: unknown, r: import('node:http').ServerResponse) =>
    r.writeHead(status, { 'content-type': 'text/plain', ...headers }).end(body);

const ROBOTS = `# a shop
User-agent: *
Disallow: /private/
Disallow: /*?sessionid=
Crawl-delay: 1

User-agent: PayloadsFetcher
Disallow: /private/
Disallow: /drafts/
Allow: /private/open-house
Crawl-delay: 2.5

User-agent: OtherBot
Disallow: /

Sitemap: https://shop.example/sitemap.xml
Sitemap: /relative-is-ignored.xml
`;

t.test('the user agent token is the one the fetch sends', async (t) => {
  t.equal(ROBOTS_AGENT, 'PayloadsFetcher');
  t.match(DEFAULT_USER_AGENT, ROBOTS_AGENT);
});

t.test('parse: our group, longest match, crawl delay bounded, sitemaps', async (t) => {
  const r = parseRobots('https://shop.example', ROBOTS, { maxCrawlDelayMs: 10000 });
  t.equal(r.state, 'ok');
  t.notOk(r.allows('https://shop.example/private/x'));
  t.ok(r.allows('https://shop.example/private/open-house'), 'Allow, longer match');
  t.notOk(r.allows('https://shop.example/drafts/a'), 'our own group applies, not *');
  t.ok(r.allows('https://shop.example/a?sessionid=1'), '* rules do not apply when our group exists');
  t.ok(r.allows('https://shop.example/'));
  t.notOk(r.allows('https://other.example/'), 'another origin is never allowed by this file');
  t.equal(r.crawlDelayMs, 2500);
  t.same(r.sitemaps, ['https://shop.example/sitemap.xml']);
  t.equal(parseRobots('https://e', 'User-agent: *\nCrawl-delay: 3600\n', { maxCrawlDelayMs: 5000 }).crawlDelayMs, 5000, 'bounded');
  t.equal(parseRobots('https://e', 'User-agent: *\nCrawl-delay: nonsense\n').crawlDelayMs, 0);
  const star = parseRobots('https://e', 'User-agent: *\nDisallow: /*?sessionid=\n');
  t.notOk(star.allows('https://e/a?sessionid=1'), 'wildcards');
  t.ok(parseRobots('https://e', '').allows('https://e/anything'), 'an empty file allows all');
});

t.test('fetched through the guard: 200, 404, 5xx, redirects, unreachable', async (t) => {
  let down = 0;
  const site = await fixtureServer(t, {
    '/robots.txt': text(ROBOTS.replace('https://shop.example', 'http://127.0.0.1')),
  });
  const r = await fetchRobots(site.base, { guard });
  t.equal(r.state, 'ok');
  t.notOk(r.allows(site.url('/drafts/x')));
  t.equal(r.crawlDelayMs, 2500);

  const none = await fixtureServer(t, {});
  const m = await fetchRobots(none.base, { guard });
  t.match(m, { state: 'missing', status: 404 });
  t.ok(m.allows(none.url('/anything')), 'a missing robots.txt allows all');

  const forbidden = await fixtureServer(t, { '/robots.txt': text('no', 403) });
  t.ok((await fetchRobots(forbidden.base, { guard })).allows(forbidden.url('/x')), '4xx allows all (RFC 9309)');

  const broken = await fixtureServer(t, {
    '/robots.txt': (_q, res) => {
      down++;
      res.writeHead(503).end('down');
    },
  });
  const u = await fetchRobots(broken.base, { guard, robotsUnavailableRetryMs: 5000 });
  t.match(u, { state: 'unreachable', status: 503 });
  t.notOk(u.allows(broken.url('/')), '5xx disallows all');
  t.ok(u.retryAt && u.retryAt > Date.now(), 'for a while');
  t.equal(down, 1);

  const moved = await fixtureServer(t, {
    '/robots.txt': (_q, res) => res.writeHead(301, { location: '/real-robots.txt' }).end(),
    '/real-robots.txt': text('User-agent: *\nDisallow: /x\n'),
  });
  t.notOk((await fetchRobots(moved.base, { guard })).allows(moved.url('/x')), 'redirects followed');

  const closed = await fetchRobots('http://127.0.0.1:1', { guard });
  t.equal(closed.state, 'unreachable', 'no answer disallows too');

  const refused = await fetchRobots('http://10.0.0.1', { guard, timeoutMs: 1000 });
  t.equal(refused.state, 'unreachable', 'a private address is never fetched');
});

t.test('RobotsCache: one fetch per origin, concurrent asks shared, 5xx asked again later', async (t) => {
  let hits = 0;
  let status = 503;
  const site = await fixtureServer(t, {
    '/robots.txt': (_q, res) => {
      hits++;
      res.writeHead(status, { 'content-type': 'text/plain' }).end('User-agent: *\nDisallow: /no\nCrawl-delay: 1\n');
    },
  });
  let clock = Date.now();
  const cache = new RobotsCache({ guard, robotsUnavailableRetryMs: 1000, now: () => clock });
  const first = await Promise.all([cache.check(site.url('/a')), cache.check(site.url('/b')), cache.check(site.url('/no'))]);
  t.equal(hits, 1, 'one fetch for three concurrent asks');
  for (const v of first) t.match(v, { ok: false, reason: 'robots_unavailable' });
  t.match(await cache.check(site.url('/a')), { ok: false, reason: 'robots_unavailable' });
  t.equal(hits, 1, 'not asked again before retryAt');
  status = 200;
  clock += 1500;
  t.same(await cache.check(site.url('/a')), { ok: true, crawlDelayMs: 1000 });
  t.same(await cache.check(site.url('/no')), { ok: false, reason: 'robots' });
  t.equal(hits, 2, 'asked again once after retryAt, then cached');
  clock += 3_600_000;
  await cache.check(site.url('/a'));
  t.equal(hits, 2, 'good rules are kept for the crawl');
  t.equal(cache.fetches, 2);
});
