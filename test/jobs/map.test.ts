// websitepro `outputs: ["map"]` (issue 42): the URLs of a local site (sitemap, then links; robots.txt
// obeyed, another origin never fetched) as one JSON result, priced per block of 1,000 URLs, the cap's
// unused blocks refunded by the one `_slots` entry, the audit clean; a map that reaches its limit
// fetches no more pages; `sitemap: "only"` for a map (no page fetched) and for a crawl (the sitemap's
// URLs are the pages). Real gateway, supervisor, wallet, converter, NATS and HTTP servers.
import { inflateRawSync } from 'node:zlib';
import t from 'tap';
import { startTestApp, type TestApp } from '../helpers/app.ts';
import { wallet } from '../../shared/protocol/wallet.ts';
import { audit } from '../../shared/audit.ts';
import { fixtureServer, html } from '../outbound/fixture-server.ts';
import { readZip } from './app.ts';

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

t.test('a map lists exactly its site, charged per block used', async (t) => {
  const app = await startTestApp(t, {
    actors: ['wallet', 'job-supervisor', 'converter'],
    config: { outbound: { allowCidrs: ['127.0.0.1/32'] }, websitepro: { fetchTimeoutMs: 5000 } },
  });
  const other = await fixtureServer(t, { '/x': page('Elsewhere', []), '/y': page('Elsewhere too', []) });
  let base = '';
  const site = await fixtureServer(t, {
    '/robots.txt': (_q, r) => r.writeHead(200, { 'content-type': 'text/plain' }).end('User-agent: *\nDisallow: /private/\n'),
    '/sitemap.xml': (_q, r) =>
      r
        .writeHead(200, { 'content-type': 'application/xml' })
        .end(
          `<?xml version="1.0"?><urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">${[
            `${base}/s1`,
            `${base}/s2`,
            `${base}/private/p`,
            other.url('/y'),
          ]
            .map((u) => `<url><loc>${u}</loc></url>`)
            .join('')}</urlset>`,
        ),
    '/': page('Home', ['/a', '/a#top', '/a?utm_source=x', '/private/secret', other.url('/x'), '/s1']),
    '/a': page('About', ['/', '/b']),
    '/b': page('B', ['/c']),
    '/c': page('C', ['/a']),
    '/s1': page('S1', ['/s1/deep']),
    '/s2': page('S2', []),
    '/s1/deep': page('Deep', []),
    '/private/secret': page('Secret', []),
    '/private/p': page('Private', []),
  });
  base = site.base;
  const k = await app.newKey();
  await wallet.grant(app.nc, k.walletId, 100_000, 'test');
  const price = app.config.pricing.websitepro.map;

  // bad bodies: 400 before any charge
  const bad = async (b: unknown, why: string) => {
    const res = await app.request('POST', '/v1/websitepro/jobs', { key: k.key, body: b });
    t.equal(res.status, 400, `${why}: ${res.text}`);
    t.equal(res.json?.error?.code, 'bad_request', why);
  };
  await bad({ url: site.url('/'), outputs: ['map', 'markdown'] }, 'map with another output');
  await bad({ urls: [site.url('/')], outputs: ['map'] }, 'map with urls');
  await bad({ url: site.url('/'), outputs: ['map'], waitFor: 100 }, 'map with a page control');
  await bad({ url: site.url('/'), outputs: ['map'], crawl: { limit: 10_001 } }, 'a limit over 10,000');
  t.equal((await wallet.balance(app.nc, k.walletId)).balance, 100_000, 'nothing charged');

  // the quote: blocks of 1,000 URLs, the cap; default limit 5,000
  const dq = await app.request('POST', '/v1/websitepro/quote', { key: k.key, body: { url: site.url('/'), outputs: ['map'] } });
  t.same(dq.json.items, [{ key: 'map', price: 5 * price, quantity: 5, unitPrice: price }], 'default: 5,000 URLs, 5 blocks');
  const body = { url: site.url('/'), outputs: ['map'], crawl: { limit: 2500 } };
  const q = await app.request('POST', '/v1/websitepro/quote', { key: k.key, body });
  t.same(q.json.items, [{ key: 'map', price: 3 * price, quantity: 3, unitPrice: price }], '2,500 URLs: 3 blocks');

  const r = await app.request('POST', '/v1/websitepro/jobs', { key: k.key, body });
  t.equal(r.status, 201, r.text);
  t.equal(r.json.job.cost, 3 * price, 'charged the cap');
  const job = await finished(app, k.key, r.json.job.id);
  t.equal(job.status, 'completed', JSON.stringify(job.error));
  t.equal(job.results.length, 1, 'one result');
  const res = job.results[0];
  t.match(res, { key: 'map', status: 'done', page: site.url('/') });

  const file = await app.request('GET', new URL(res.url).pathname, { key: k.key });
  t.equal(file.status, 200);
  t.match(file.headers.get('content-type'), /application\/json/);
  t.match(file.headers.get('content-disposition'), /map\.json/);
  const map = file.json as { url: string; count: number; urls: { url: string; source: string; depth: number }[]; report: unknown };
  const got = map.urls.map((u) => `${u.url.slice(site.base.length)} ${u.source} ${u.depth}`).sort();
  t.same(
    got,
    ['/ link 0', '/a link 1', '/b link 2', '/c link 3', '/s1 sitemap 1', '/s1/deep link 2', '/s2 sitemap 1'].sort(),
    'every URL of the site, each once, with its source and depth',
  );
  t.equal(map.count, 7);
  t.equal(map.url, site.url('/'));
  t.equal(map.urls[0]!.url, site.url('/'), 'the start URL first');
  t.match(map.report, { skipped: { robots: { count: 2 }, other_origin: { count: 2 } } }, 'the report counts the skips');

  // the servers' logs: nothing disallowed or of another origin; each page fetched once at most
  t.same(other.hits, [], 'the other origin was never fetched');
  t.notOk(
    site.hits.some((h) => h.startsWith('/private')),
    'the disallowed folder was never fetched',
  );
  for (const p of ['/', '/a', '/b', '/c', '/s1', '/s2', '/s1/deep'])
    t.ok(site.hits.filter((h) => h === p).length <= 1, `${p} once at most`);
  t.notOk(
    site.hits.some((h) => h.includes('utm_')),
    'duplicate spellings not fetched',
  );

  // money: 1 block used of 3; the other 2 back in one `_slots` entry
  t.equal(job.charged, price, 'one block charged');
  t.equal((await wallet.balance(app.nc, k.walletId)).balance, 100_000 - price);

  // the zip holds map.json
  const z = await fetch(`${app.url}/v1/jobs/${job.id}/zip`, { headers: { authorization: `Bearer ${k.key}` } });
  t.equal(z.status, 200);
  const entries = readZip(Buffer.from(await z.arrayBuffer()));
  t.same(
    entries.map((e) => e.name),
    ['map.json'],
  );
  const e = entries[0]!;
  t.equal(JSON.parse((e.method === 8 ? inflateRawSync(e.data) : e.data).toString()).count, 7);

  // a map that reaches its limit fetches no more pages: the start URL, then the sitemap's URLs
  const before = site.hits.length;
  const full = await app.request('POST', '/v1/websitepro/jobs', {
    key: k.key,
    body: { url: site.url('/'), outputs: ['map'], crawl: { limit: 3 } },
  });
  t.equal(full.status, 201, full.text);
  const fj = await finished(app, k.key, full.json.job.id);
  t.equal(fj.status, 'completed');
  const fm = (await app.request('GET', new URL(fj.results[0].url).pathname, { key: k.key })).json;
  t.same(
    fm.urls.map((u: { url: string }) => u.url),
    [site.url('/'), site.url('/s1'), site.url('/s2')],
  );
  t.same(site.hits.slice(before).sort(), ['/', '/robots.txt', '/sitemap.xml'], 'only page 0 was fetched');
  t.equal(fj.charged, price, 'one block, nothing to refund');
  t.same((await audit(app.nc)).violations, [], 'the money adds up');
});

t.test('`sitemap: "only"`: a map fetches no page, a crawl converts only the sitemap URLs', async (t) => {
  const app = await startTestApp(t, {
    actors: ['wallet', 'job-supervisor', 'converter'],
    config: { outbound: { allowCidrs: ['127.0.0.1/32'] }, websitepro: { fetchTimeoutMs: 5000 } },
  });
  let base = '';
  const site = await fixtureServer(t, {
    '/robots.txt': (_q, r) => r.writeHead(200, { 'content-type': 'text/plain' }).end('User-agent: *\nDisallow: /private/\n'),
    '/sitemap.xml': (_q, r) =>
      r
        .writeHead(200, { 'content-type': 'application/xml' })
        .end(
          `<?xml version="1.0"?><urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">${[
            `${base}/s1`,
            `${base}/s2`,
            `${base}/private/p`,
          ]
            .map((u) => `<url><loc>${u}</loc></url>`)
            .join('')}</urlset>`,
        ),
    '/': page('Home', ['/a']),
    '/a': page('About', []),
    '/s1': page('S1', ['/s1/deep']),
    '/s2': page('S2', []),
    '/s1/deep': page('Deep', []),
  });
  base = site.base;
  const k = await app.newKey();
  await wallet.grant(app.nc, k.walletId, 100_000, 'test');
  const price = app.config.pricing.websitepro.map;

  const m = await app.request('POST', '/v1/websitepro/jobs', {
    key: k.key,
    body: { url: site.url('/'), outputs: ['map'], crawl: { sitemap: 'only', limit: 1500 } },
  });
  t.equal(m.status, 201, m.text);
  const mj = await finished(app, k.key, m.json.job.id);
  t.equal(mj.status, 'completed');
  const mf = (await app.request('GET', new URL(mj.results[0].url).pathname, { key: k.key })).json;
  t.same(
    mf.urls.map((u: { url: string; source: string }) => `${u.url.slice(base.length)} ${u.source}`),
    ['/ link', '/s1 sitemap', '/s2 sitemap'],
  );
  t.same(site.hits.sort(), ['/robots.txt', '/sitemap.xml'], 'no page fetched');
  t.equal(mj.charged, price, 'one block of two');

  const before = site.hits.length;
  const c = await app.request('POST', '/v1/websitepro/jobs', {
    key: k.key,
    body: { url: site.url('/'), outputs: ['text'], crawl: { sitemap: 'only', limit: 10 } },
  });
  t.equal(c.status, 201, c.text);
  const cj = await finished(app, k.key, c.json.job.id);
  t.equal(cj.status, 'completed');
  t.same(cj.results.map((x: { key: string }) => x.key).sort(), ['index/text', 's1/text', 's2/text'], 'the start URL and the sitemap URLs');
  const hits = site.hits.slice(before);
  t.notOk(hits.includes('/a') || hits.includes('/s1/deep'), `no link followed (${hits.join(' ')})`);

  // a start URL robots.txt forbids: nothing listed, a failed result, nothing charged
  const shut = await fixtureServer(t, {
    '/robots.txt': (_q, r) => r.writeHead(200, { 'content-type': 'text/plain' }).end('User-agent: *\nDisallow: /\n'),
    '/': page('Home', []),
  });
  const s = await app.request('POST', '/v1/websitepro/jobs', { key: k.key, body: { url: shut.url('/'), outputs: ['map'] } });
  t.equal(s.status, 201, s.text);
  const sj = await finished(app, k.key, s.json.job.id);
  t.equal(sj.status, 'failed');
  t.match(sj.results, [{ key: 'map', status: 'failed', error: 'robots_disallowed' }]);
  t.equal(sj.charged, 0, 'all five blocks back');
  t.same(shut.hits, ['/robots.txt'], 'the page itself not fetched');
  t.same((await audit(app.nc)).violations, [], 'the money adds up');
});
