// Sitemaps through the outbound guard, against real HTTP servers on 127.0.0.1: indexes, gzip, text,
// bounds, and files on another origin never fetched.
import zlib from 'node:zlib';
import t from 'tap';
import { parseSitemap, readSitemaps } from '../../shared/crawl/sitemap.ts';
import { fixtureServer } from '../outbound/fixture-server.ts';

const guard = { allowCidrs: ['127.0.0.1/32'], maxRedirects: 5, connectTimeoutMs: 2000 };
const xml =
  (body: string | Buffer, type = 'application/xml') =>
  (_q: unknown, r: import('node:http').ServerResponse) =>
    r.writeHead(200, { 'content-type': type }).end(body);
const urlset = (locs: string[]) =>
  `<?xml version="1.0" encoding="UTF-8"?>\n<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">${locs
    .map((l) => `<url><loc>${l}</loc><lastmod>2026-11-01</lastmod></url>`)
    .join('')}</urlset>`;
const index = (locs: string[]) =>
  `<?xml version="1.0" encoding="UTF-8"?>\n<sitemapindex xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">${locs
    .map((l) => `<sitemap><loc>${l}</loc></sitemap>`)
    .join('')}</sitemapindex>`;

t.test('parse', async (t) => {
  t.same(parseSitemap(urlset(['https://e.com/a?x=1&amp;y=2'])), {
    kind: 'urlset',
    entries: [{ loc: 'https://e.com/a?x=1&y=2', lastmod: '2026-11-01' }],
  });
  t.same(parseSitemap(index(['https://e.com/s1.xml'])), { kind: 'sitemapindex', entries: [{ loc: 'https://e.com/s1.xml' }] });
  t.same(parseSitemap('https://e.com/a\n# nope\nhttps://e.com/b\r\n').entries, [{ loc: 'https://e.com/a' }, { loc: 'https://e.com/b' }]);
  t.equal(parseSitemap('<html><body>hi</body></html>').kind, 'unknown');
  t.same(
    parseSitemap('<urlset><url><loc> https://e.com/caf&#xE9; </loc></url><url><lastmod>x</lastmod></url></urlset>').entries,
    [{ loc: 'https://e.com/café' }],
    'character references, no loc skipped',
  );
  const bomb = `<?xml version="1.0"?><!DOCTYPE lolz [<!ENTITY lol "lol"><!ENTITY lol2 "&lol;&lol;&lol;&lol;&lol;">]><urlset><url><loc>https://e.com/&lol2;</loc></url></urlset>`;
  t.same(parseSitemap(bomb).entries, [{ loc: 'https://e.com/&lol2;' }], 'DOCTYPE entities are not expanded');
});

t.test('indexes, gzip, text, dedupe; another origin never fetched', async (t) => {
  const other = await fixtureServer(t, { '/sitemap.xml': xml(urlset(['http://elsewhere/x'])) });
  let base = '';
  const site = await fixtureServer(t, {
    '/sitemap.xml': (q, r) =>
      xml(index([`${base}/pages.xml`, `${base}/posts.xml.gz`, `${base}/nested.xml`, `${other.base}/sitemap.xml`]))(q, r),
    '/pages.xml': (q, r) => xml(urlset([`${base}/`, `${base}/about`, `${base}/about`]))(q, r),
    '/posts.xml.gz': (q, r) => xml(zlib.gzipSync(urlset([`${base}/post/1`, `${base}/post/2`])), 'application/octet-stream')(q, r),
    '/nested.xml': (q, r) => xml(index([`${base}/deeper.xml`]))(q, r),
    '/deeper.xml': (q, r) => xml(index([`${base}/deepest.xml`]))(q, r),
    '/deepest.xml': (q, r) => xml(urlset([`${base}/too-deep`]))(q, r),
    '/list.txt': (q, r) => xml(`${base}/from-text\n`, 'text/plain')(q, r),
  });
  base = site.base;
  const inScope = (u: string) => new URL(u).origin === site.base;
  const res = await readSitemaps([`${base}/sitemap.xml`, `${base}/list.txt`, `${base}/missing.xml`], {
    guard,
    allowFetch: inScope,
    maxDepth: 3,
  });
  t.same(res.urls.map((u) => u.loc).sort(), [`${base}/`, `${base}/about`, `${base}/from-text`, `${base}/post/1`, `${base}/post/2`].sort());
  t.same(other.hits, [], 'the sitemap on another origin was not fetched');
  const errors = Object.fromEntries(res.errors.map((e) => [e.url, e.error]));
  t.equal(errors[`${other.base}/sitemap.xml`], 'out_of_scope');
  t.equal(errors[`${base}/missing.xml`], 'HTTP 404');
  t.equal(errors[`${base}/deepest.xml`], 'too_deep', 'nesting bounded');
  t.notOk(site.hits.includes('/deepest.xml'));
  t.equal(res.truncated, false);
});

t.test('bounded by URLs, files and bytes', async (t) => {
  let base = '';
  const many = (n: number, p: string) => Array.from({ length: n }, (_, i) => `${base}/${p}/${i}`);
  const site = await fixtureServer(t, {
    '/sitemap.xml': (q, r) => xml(index(Array.from({ length: 10 }, (_, i) => `${base}/s${i}.xml`)))(q, r),
    ...Object.fromEntries(
      Array.from({ length: 10 }, (_, i) => [`/s${i}.xml`, (q: unknown, r: never) => xml(urlset(many(30, `s${i}`)))(q, r)]),
    ),
    '/huge.xml.gz': (q, r) => xml(zlib.gzipSync(Buffer.from(urlset(many(20000, 'h')))))(q, r),
  });
  base = site.base;
  const all = () => true;
  const byUrls = await readSitemaps([`${base}/sitemap.xml`], { guard, allowFetch: all, maxUrls: 75 });
  t.equal(byUrls.urls.length, 75);
  t.equal(byUrls.truncated, true);
  t.ok(site.hits.filter((h) => /^\/s\d\.xml$/.test(h)).length <= 3, 'stops fetching once the URLs are enough');
  const byFiles = await readSitemaps([`${base}/sitemap.xml`], { guard, allowFetch: all, maxFiles: 4 });
  t.equal(byFiles.files, 4);
  t.equal(byFiles.urls.length, 90);
  t.equal(byFiles.truncated, true);
  const byBytes = await readSitemaps([`${base}/huge.xml.gz`], { guard, allowFetch: all, maxBytes: 100_000 });
  t.equal(byBytes.urls.length, 0);
  t.match(byBytes.errors, [{ error: /more than 100000 bytes unzipped/ }], 'a gzip bomb is cut at maxBytes');
});
