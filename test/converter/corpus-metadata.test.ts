// Metadata agrees with Mozilla Readability (the reference) on every HTML page of the corpus: where
// Readability reports a title, byline, excerpt, language, published time or site name, the
// converter's metadata has the same value; where it has none, the fallbacks fill in.
import t from 'tap';
import zlib from 'node:zlib';
import { JSDOM } from 'jsdom';
import { Readability } from '@mozilla/readability';
import { convert } from '../../actors/converter/convert.ts';
import { decodeBody } from '../../actors/converter/charset.ts';
import { loadCorpus, pageBytes } from './corpus.ts';

const clean = (s: unknown) => (typeof s === 'string' && s.replace(/\s+/g, ' ').trim()) || null;
const FIELDS = [
  ['title', 'title'],
  ['byline', 'author'],
  ['excerpt', 'description'],
  ['lang', 'language'],
  ['publishedTime', 'publishedTime'],
  ['siteName', 'siteName'],
] as const;

t.test('metadata agrees with Readability where Readability has a value', async (t) => {
  const pages = loadCorpus().filter((e) => /html/.test(e.headers['content-type'] ?? '') && !e.browser);
  let compared = 0;
  for (const e of pages) {
    let body = pageBytes(e);
    if (e.headers['content-encoding'] === 'gzip') body = zlib.gunzipSync(body);
    const url = `https://corpus.example/${e.id}`;
    const r = await convert({
      body,
      contentType: e.headers['content-type']!,
      status: 200,
      url,
      finalUrl: url,
      redirects: [],
      rendered: false,
      outputs: ['metadata'],
    });
    const m = 'outputs' in r && r.outputs.metadata?.ok ? JSON.parse(r.outputs.metadata.data) : null;
    if (!t.ok(m, `${e.id}: metadata`)) continue;
    const dom = new JSDOM(decodeBody(body, e.headers['content-type']).text, { url });
    const ref = new Readability(dom.window.document).parse();
    dom.window.close();
    for (const [from, to] of FIELDS) {
      const want = clean(ref?.[from]);
      if (want === null) continue;
      compared++;
      t.equal(m[to], want, `${e.id}: ${to} is Readability's ${from}`);
    }
  }
  t.ok(compared > pages.length * 3, `${compared} values compared`);
});

t.test('fallbacks where Readability has nothing: JSON-LD, Open Graph, Twitter, <meta>', async (t) => {
  const run = async (head: string) => {
    const page = `<html><head>${head}</head><body><nav><a href="/">x</a></nav></body></html>`;
    const r = await convert({
      body: Buffer.from(page),
      contentType: 'text/html',
      status: 200,
      url: 'https://a.example/',
      finalUrl: 'https://a.example/',
      redirects: [],
      rendered: false,
      outputs: ['metadata'],
    });
    return 'outputs' in r && r.outputs.metadata?.ok ? JSON.parse(r.outputs.metadata.data) : {};
  };
  const ld = `<script type="application/ld+json">{"@context":"https://schema.org","@type":"WebPage","name":"LD name","description":"LD description","author":{"name":"LD Author"},"datePublished":"2024-01-01","publisher":{"name":"LD Site"}}</script>`;
  const og =
    '<meta property="og:title" content="OG title"><meta property="og:description" content="OG description"><meta property="article:author" content="OG Author"><meta property="og:site_name" content="OG Site"><meta property="article:published_time" content="2024-02-02">';
  const tw =
    '<meta name="twitter:title" content="TW title"><meta name="twitter:description" content="TW description"><meta name="twitter:creator" content="@tw">';
  const meta =
    '<title>Meta title</title><meta name="description" content="Meta description"><meta name="author" content="Meta Author"><meta name="application-name" content="Meta Site"><meta name="date" content="2024-03-03">';
  // Readability reads article-type JSON-LD and og/dc/twitter/meta tags itself: its values win
  t.match(
    await run(ld + og + tw + meta),
    { title: 'OG title', description: 'OG description', author: 'Meta Author', siteName: 'OG Site', publishedTime: '2024-02-02' },
    'Readability first',
  );
  // what it does not read: other JSON-LD types, twitter:creator, application-name, <meta name=date>
  t.match(
    await run(ld),
    { title: 'LD name', description: 'LD description', author: 'LD Author', siteName: 'LD Site', publishedTime: '2024-01-01' },
    'then JSON-LD',
  );
  t.match(await run(tw.replace(/<meta name="twitter:(title|description)"[^>]*>/g, '')), { author: '@tw' }, 'then Twitter');
  t.match(
    await run('<meta name="application-name" content="Meta Site"><meta name="date" content="2024-03-03">'),
    { siteName: 'Meta Site', publishedTime: '2024-03-03' },
    'then <meta>',
  );
});
