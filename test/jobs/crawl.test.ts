// websitepro `crawl` (issue 42): one job over a local site with a robots-disallowed folder, a
// query-string trap, duplicate spellings, a 404 link, a link to another origin and a login wall.
// The delivered set is exactly right, nothing disallowed or on the other origin is fetched (the
// servers' own logs), the wall is login_required and refunded, the report counts each skip, the
// unused slots come back as one `_slots` entry and the audit is clean. Real gateway, supervisor,
// wallet, converter, NATS.
import { readFileSync } from 'node:fs';
import t from 'tap';
import { startTestApp, type TestApp } from '../helpers/app.ts';
import { wallet } from '../../shared/protocol/wallet.ts';
import { audit } from '../../shared/audit.ts';
import { fixtureServer, html } from '../outbound/fixture-server.ts';

const wall = readFileSync(new URL('../fixtures/walls/login-form.html', import.meta.url), 'utf8');
const page = (title: string, links: string[]) =>
  html(
    `<html><head><title>${title}</title></head><body><main><h1>${title}</h1><p>${title} is a page of the test site with some words in it.</p>${links
      .map((l) => `<a href="${l}">${l}</a>`)
      .join(' ')}</main></body></html>`,
  );

async function finished(app: TestApp, key: string, id: string) {
  let job = (await app.request('GET', `/v1/jobs/${id}?wait=25`, { key })).json.job;
  for (let i = 0; i < 4 && (job.status === 'queued' || job.status === 'processing'); i++)
    job = (await app.request('GET', `/v1/jobs/${id}?wait=25`, { key })).json.job;
  return job;
}

t.test('a crawl delivers exactly its site', async (t) => {
  const app = await startTestApp(t, {
    actors: ['wallet', 'job-supervisor', 'converter'],
    config: { outbound: { allowCidrs: ['127.0.0.1/32'] }, websitepro: { fetchTimeoutMs: 5000 } },
  });
  const other = await fixtureServer(t, { '/x': page('Elsewhere', []) });
  const site = await fixtureServer(t, {
    '/robots.txt': (_q, r) => r.writeHead(200, { 'content-type': 'text/plain' }).end('User-agent: *\nDisallow: /private/\n'),
    '/': page('Home', [
      '/a',
      '/a/',
      '/a#top',
      '/a?utm_source=news&utm_medium=mail',
      '/private/secret',
      '/cal?page=1',
      '/missing',
      other.url('/x'),
      '/members',
      'mailto:someone@example.com',
    ]),
    '/a': page('About', ['/', '/a']),
    '/cal': (q, r) => {
      const n = Number(new URL(q.url ?? '/', 'http://x').searchParams.get('page') ?? 1);
      page(`Calendar ${n}`, [`/cal?page=${n + 1}`])(q, r);
    },
    '/private/secret': page('Secret', []),
    '/members': html(wall),
  });
  const k = await app.newKey();
  await wallet.grant(app.nc, k.walletId, 100_000, 'test');
  const body = { url: site.url('/'), outputs: ['markdown'], crawl: { limit: 20, maxDepth: 3 } };

  // bad input: 400 before any charge
  const bad = async (b: unknown, code: string, why: string) => {
    const res = await app.request('POST', '/v1/websitepro/jobs', { key: k.key, body: b });
    t.equal(res.status, 400, `${why}: ${res.text}`);
    t.equal(res.json?.error?.code, code, why);
  };
  await bad({ ...body, crawl: { limit: 0 } }, 'bad_request', 'a limit below 1');
  await bad({ ...body, crawl: { limit: 10_001 } }, 'bad_request', 'a limit over 10,000');
  await bad({ ...body, crawl: { excludePaths: [`/${'x'.repeat(300)}`] } }, 'bad_request', 'a glob over 256 characters');
  await bad({ urls: [site.url('/')], outputs: ['markdown'], crawl: {} }, 'bad_request', 'crawl with urls');
  await bad({ ...body, headers: { 'X-Token': 'secret' } }, 'bad_request', 'credentials in a crawl (never stored)');
  await bad({ ...body, waitFor: 'div[' }, 'bad_request', 'a render per page whose waitFor is no selector');
  t.equal((await wallet.balance(app.nc, k.walletId)).balance, 100_000, 'nothing charged');

  const q = await app.request('POST', '/v1/websitepro/quote', { key: k.key, body });
  t.equal(q.status, 200, q.text);
  const r = await app.request('POST', '/v1/websitepro/jobs?wait=25', { key: k.key, body });
  t.equal(r.status, 201, r.text);
  const unit = r.json.job.cost / 20;
  t.equal(r.json.job.cost, q.json.cost, 'the quote is the cap');
  t.same(q.json.items, [{ key: 'markdown', price: 20 * unit, quantity: 20, unitPrice: unit }], 'one item with its quantity');
  const job = await finished(app, k.key, r.json.job.id);
  t.equal(job.status, 'completed', JSON.stringify(job.error));

  const results = job.results as { key: string; status: string; error?: string; refunded: boolean; page: string }[];
  const byKey = Object.fromEntries(results.map((x) => [x.key, x]));
  const done = results.filter((x) => x.status === 'done').map((x) => x.key);
  t.equal(done.length, 5, `delivered: ${done.join(', ')}`);
  t.ok(byKey['index/markdown'] && byKey['a/markdown'], 'home and about');
  t.equal(done.filter((k) => k.startsWith('cal-')).length, 3, 'the trap pages up to maxDepth 3');
  t.match(byKey['members/markdown'], { status: 'failed', error: 'login_required', refunded: true });
  t.match(byKey['missing/markdown'], { status: 'failed', error: 'http_error', refunded: true });
  t.equal(results.length, 7, 'seven pages: nothing else');
  t.equal(new Set(results.map((x) => x.key)).size, results.length, 'keys unique');

  // the servers' own logs
  t.same(other.hits, [], 'the other origin was never fetched');
  t.notOk(
    site.hits.some((h) => h.startsWith('/private')),
    'the disallowed folder was never fetched',
  );
  t.notOk(
    site.hits.some((h) => h === '/a/' || h.includes('utm_')),
    'duplicate spellings were not fetched',
  );
  t.equal(site.hits.filter((h) => h === '/a').length, 1, '/a fetched once');
  t.notOk(site.hits.includes('/cal?page=4'), 'the trap stops at the depth');

  // the report
  const sk = job.crawl.skipped;
  t.equal(sk.robots?.count, 1, 'robots');
  t.equal(sk.other_origin?.count, 1, 'other origin');
  t.ok(sk.duplicate?.count >= 4, `duplicates (${sk.duplicate?.count})`);
  t.equal(sk.depth?.count, 1, 'over the depth');
  t.same(sk.robots.sample, [site.url('/private/secret')]);

  // money: 5 delivered; 2 refunded on their own; 13 slots by one entry
  t.equal(job.pages.total, 7);
  t.equal(job.charged, 5 * unit, 'charged exactly the delivered pages');
  t.equal((await wallet.balance(app.nc, k.walletId)).balance, 100_000 - 5 * unit);
  const a = await audit(app.nc);
  t.same(a.violations, [], 'the money adds up');
});

t.test("robots.txt's Crawl-delay spaces a crawl's pages", async (t) => {
  const app = await startTestApp(t, {
    actors: ['wallet', 'job-supervisor', 'converter'],
    config: { outbound: { allowCidrs: ['127.0.0.1/32'] }, websitepro: { fetchTimeoutMs: 5000 } },
  });
  const at: Record<string, number> = {};
  const timed = (path: string, links: string[]) => {
    const route = page(path, links);
    return (q: Parameters<typeof route>[0], r: Parameters<typeof route>[1]) => {
      at[path] = Date.now();
      route(q, r);
    };
  };
  const site = await fixtureServer(t, {
    '/robots.txt': (_q, r) => r.writeHead(200, { 'content-type': 'text/plain' }).end('User-agent: *\nCrawl-delay: 1\n'),
    '/': timed('/', ['/1', '/2', '/3']),
    '/1': timed('/1', []),
    '/2': timed('/2', []),
    '/3': timed('/3', []),
  });
  const k = await app.newKey();
  await wallet.grant(app.nc, k.walletId, 100_000, 'test');
  const r = await app.request('POST', '/v1/websitepro/jobs', {
    key: k.key,
    body: { url: site.url('/'), outputs: ['text'], crawl: { limit: 10 } },
  });
  t.equal(r.status, 201, r.text);
  const job = await finished(app, k.key, r.json.job.id);
  t.equal(job.status, 'completed');
  t.equal(job.pages.total, 4);
  const starts = ['/1', '/2', '/3'].map((p) => at[p]!).sort((a, b) => a - b);
  t.ok(
    // spaced when published; the arrival at the server adds the task queue's jitter (tens of ms, more on a busy machine)
    starts[1]! - starts[0]! >= 750 && starts[2]! - starts[1]! >= 750,
    `a second apart: ${starts.map((s) => s - starts[0]!).join(', ')} ms`,
  );
  t.same((await audit(app.nc)).violations, []);
});

t.test('sitemaps: their URLs are pages too, by the same rules; `skip` reads none', async (t) => {
  const app = await startTestApp(t, {
    actors: ['wallet', 'job-supervisor', 'converter'],
    config: { outbound: { allowCidrs: ['127.0.0.1/32'] }, websitepro: { fetchTimeoutMs: 5000 } },
  });
  const other = await fixtureServer(t, { '/elsewhere': page('Elsewhere', []) });
  let base = '';
  const site = await fixtureServer(t, {
    '/robots.txt': (_q, r) => r.writeHead(200, { 'content-type': 'text/plain' }).end('User-agent: *\nDisallow: /private/\n'),
    '/': page('Home', []),
    '/sitemap.xml': (_q, r) =>
      r
        .writeHead(200, { 'content-type': 'application/xml' })
        .end(
          `<?xml version="1.0"?><urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">${[
            `${base}/hidden`,
            `${base}/private/x`,
            other.url('/elsewhere'),
          ]
            .map((u) => `<url><loc>${u}</loc></url>`)
            .join('')}</urlset>`,
        ),
    '/hidden': page('Hidden', []),
    '/private/x': page('Private', []),
  });
  base = site.base;
  const k = await app.newKey();
  await wallet.grant(app.nc, k.walletId, 100_000, 'test');
  const run = async (sitemap?: string) => {
    const body = { url: site.url('/'), outputs: ['text'], crawl: { limit: 10, ...(sitemap ? { sitemap } : {}) } };
    const r = await app.request('POST', '/v1/websitepro/jobs', { key: k.key, body });
    t.equal(r.status, 201, r.text);
    return finished(app, k.key, r.json.job.id);
  };
  const job = await run();
  t.same(job.results.map((x: { key: string }) => x.key).sort(), ['hidden/text', 'index/text'], 'the sitemap URL in scope is a page');
  t.equal(job.crawl.skipped.robots?.count, 1, 'a disallowed sitemap URL is skipped');
  t.equal(job.crawl.skipped.other_origin?.count, 1, 'another origin in the sitemap is skipped');
  t.notOk(site.hits.includes('/private/x'));
  t.same(other.hits, []);
  const skip = await run('skip');
  t.same(
    skip.results.map((x: { key: string }) => x.key),
    ['index/text'],
    '`skip`: links only',
  );
  t.equal(site.hits.filter((h) => h === '/sitemap.xml').length, 1, 'the sitemap read by the first crawl only');
  t.same((await audit(app.nc)).violations, []);
});
