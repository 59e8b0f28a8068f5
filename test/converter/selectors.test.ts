// The page steps read element lists from one walk instead of asking selector lists, and every page
// shares one selector engine per thread (docs/notes/performance-history.md, "Converter"). These check that both still mean
// what the selectors meant: the lists against jsdom's own querySelectorAll on every corpus page,
// the matching rules (ASCII case, quirks-mode classes, ancestors) on pages made for them, and the
// shared engine against a document of each compatibility mode in turn.
import t from 'tap';
import zlib from 'node:zlib';
import { createRequire } from 'node:module';
import { JSDOM } from 'jsdom';
import { convert, mediaType, parseHtml } from '../../actors/converter/convert.ts';
import { decodeBody } from '../../actors/converter/charset.ts';
import { loadCorpus, pageBytes } from './corpus.ts';

const URL_ = 'https://site.example/dir/page';
const run = async (html: string, outputs: ('metadata' | 'markdown' | 'text' | 'html')[] = ['metadata', 'markdown']) => {
  const r = await convert({
    body: Buffer.from(html),
    contentType: 'text/html; charset=utf-8',
    status: 200,
    url: URL_,
    finalUrl: URL_,
    redirects: [],
    rendered: false,
    outputs,
  });
  if (r.needsJavaScript) throw new Error('asked for JavaScript');
  const get = (o: string) => {
    const f = r.outputs[o as 'markdown'];
    if (!f?.ok) throw new Error(`${o}: ${JSON.stringify(f)}`);
    return f.data;
  };
  return {
    meta: outputs.includes('metadata') ? JSON.parse(get('metadata')) : null,
    md: outputs.includes('markdown') ? get('markdown') : '',
  };
};
const BODY = '<p>' + 'The river runs through the valley and the town grew along its banks over many centuries. '.repeat(6) + '</p>';

t.test('the walk lists the elements querySelectorAll finds, in the same order, on every corpus page', async (t) => {
  const names = ['a', 'img', 'meta', 'link', 'script', 'pre', 'input', 'time', 'source', 'h1', 'h3'];
  let pages = 0;
  for (const e of loadCorpus()) {
    if (!mediaType(e.headers['content-type'] ?? '').includes('html')) continue;
    let body = pageBytes(e);
    if (e.headers['content-encoding'] === 'gzip') body = zlib.gunzipSync(body);
    const page = parseHtml(decodeBody(body, e.headers['content-type']).text, URL_);
    for (const n of names) {
      const want = [...page.doc.querySelectorAll(n)];
      const got = page.byName.get(n) ?? [];
      if (!t.ok(got.length === want.length && got.every((el, i) => el === want[i]), `${e.id}: <${n}> ${got.length} vs ${want.length}`))
        break;
    }
    t.same(page.headings, [...page.doc.querySelectorAll('h1, h2, h3, h4, h5, h6')], `${e.id}: headings`);
    pages++;
  }
  t.ok(pages > 60, `${pages} HTML pages`);
});

t.test('meta, link and script attributes compare ignoring ASCII case only, as the selectors did', async (t) => {
  const { meta } = await run(`<!doctype html><html><head><title>T</title>
    <META NAME="DESCRIPTION" CONTENT="Said in capitals.">
    <meta name="\u212Aeywords" content="kelvin-sign">
    <meta name="Keywords" content="rivers, towns">
    <meta name="robots" content="">
    <meta name="ROBOTS" content="noindex">
    <link rel="Canonical" href="/canon">
    <link rel="Shortcut Icon" href="/fav.ico">
    <script type="Application/LD+JSON">{"@type":"Article","author":{"name":"Ann Author"},"dateModified":"2024-05-06"}</script>
    </head><body><article>${BODY}</article></body></html>`);
  t.equal(meta.description, 'Said in capitals.');
  t.same(meta.keywords, ['rivers', 'towns'], 'a Kelvin sign is not a K: the first ASCII match counts');
  t.equal(meta.robots, null, 'the first <meta name=robots> is taken even when its content is empty');
  t.equal(meta.canonical, 'https://site.example/canon');
  t.equal(meta.favicon, 'https://site.example/fav.ico');
  t.equal(meta.author, 'Ann Author', 'JSON-LD found under a type in other case');
  t.equal(meta.modifiedTime, '2024-05-06');
});

t.test("time, author and first image fallbacks follow the selectors' rules", async (t) => {
  const { meta } = await run(`<!doctype html><html><head><title>T</title></head><body>
    <time datetime="2020-01-01">outside any article</time>
    <img src="data:image/png;base64,AAAA"><img src="/pics/first.jpg">
    <div><span itemprop="Author">Wrong Case</span><a rel="AUTHOR" href="/me">Rel Author</a></div>
    <article><time datetime="2021-02-03">in the article</time>${BODY}</article></body></html>`);
  t.equal(meta.publishedTime, '2021-02-03', '`article time[datetime]` wins over a bare time earlier in the page');
  t.equal(meta.image, 'https://site.example/pics/first.jpg', 'data: images are skipped');
  t.equal(meta.images, 2);
  const { meta: m2 } = await run(`<!doctype html><html><head><title>T</title></head><body>
    <time datetime="2019-09-09" pubdate>a pubdate</time><time itemprop="datePublished" datetime="2018-08-08">x</time>
    <p><span itemprop="author">Item Author</span></p><article>${BODY}</article></body></html>`);
  t.equal(m2.publishedTime, '2019-09-09', 'the first matching time in document order');
});

t.test('edit links, permalinks and "[edit]" go by the selectors\' rules; classes ignore case only in quirks mode', async (t) => {
  const page = (doctype: string) => `${doctype}<html><head><title>Rivers</title></head><body><article>
    <h2>Source<span class="MW-EDITSECTION">[change]</span> <a class="Headerlink" href="/about-sources">about sources</a></h2>${BODY}
    <h2>Mouth <a href="#mouth">§</a> <button>[edit]</button> <a href="/w?title=x&amp;action=edit">[change it]</a></h2>${BODY}
    <p>Keep <a href="#mouth">this anchor link</a> and <span>[edit]</span> outside headings.</p></article></body></html>`;
  const standards = (await run(page('<!doctype html>'))).md;
  t.match(standards, '\\[change\\]', 'an edit section class in other case stays in standards mode');
  t.match(standards, 'about sources', 'so does an anchor class in other case');
  t.notMatch(standards, '§', 'a heading permalink of symbols goes');
  t.notMatch(standards, '[change it]', 'a link to action=edit goes');
  t.notMatch(standards, /Mouth[^\n]*edit/, '"[edit]" in a heading goes');
  t.match(standards, 'this anchor link');
  t.match(standards, '\\[edit\\]', '"[edit]" outside headings stays');
  const quirks = (await run(page(''))).md;
  t.notMatch(quirks, 'change]', 'in quirks mode the class matches in any case');
  t.notMatch(quirks, 'about sources');
  t.match(quirks, 'this anchor link');
  // a class list splits on ASCII whitespace only: "note\u00A0mw-editsection" is one class, which
  // `.mw-editsection` does not match
  const nbsp = (
    await run(`<!doctype html><html><head><title>Rivers</title></head><body><article>
    <h2>Source<span class="note\u00A0mw-editsection">[kept]</span></h2>${BODY}</article></body></html>`)
  ).md;
  t.match(nbsp, '\\[kept\\]', 'a no-break space does not separate classes');
});

t.test('task boxes, code languages, data: links and layout tables', async (t) => {
  const { md } = await run(
    `<!doctype html><html><head><title>Lists</title></head><body><article>${BODY}
    <ul><li><input type="CHECKBOX" checked> done thing</li><li><label><input type="checkbox"> open thing</label></li></ul>
    <p><input type="checkbox"> a box outside a list</p>
    <pre class="lang-rust"><span>fn</span> main() {}</pre>
    <p>See <a href="DATA:text/plain,hi">inline data</a> here.</p>
    <table><tr><td><p>Only a layout cell with a paragraph of its own.</p></td><td><img src="/x.png" alt="pic"></td></tr></table>
    </article></body></html>`,
    ['markdown'],
  );
  t.match(md, '- [x] done thing', 'type compared ignoring ASCII case');
  t.match(md, '- [ ] open thing', 'a box nested deeper inside the item');
  t.notMatch(md, '[ ] a box outside', 'a box outside a list item is not a task');
  t.match(md, '```rust\nfn main() {}\n```');
  t.match(md, 'See inline data here.', 'a data: link in capitals loses its link');
  t.notMatch(md, '|', 'the layout table is flattened');
  t.match(md, 'Only a layout cell');
});

t.test('one selector engine per thread and compatibility mode, each document queried on its own', async (t) => {
  const impl = createRequire(import.meta.url)('jsdom/lib/jsdom/living/generated/utils.js') as {
    implForWrapper(w: object): { _nwsapi?: unknown };
  };
  const quirks = () => parseHtml('<html><body><p class="Note">a</p><p class="note">b</p><p>c</p></body></html>', URL_).doc;
  const standards = () => parseHtml('<!doctype html><html><body><p class="Note">a</p><p>b</p></body></html>', URL_).doc;
  const docs = [quirks(), standards(), quirks(), standards(), quirks()];
  t.same(
    docs.map((d) => d.compatMode),
    ['BackCompat', 'CSS1Compat', 'BackCompat', 'CSS1Compat', 'BackCompat'],
  );
  // asked in turn, a class compiled for one mode must not answer for the other
  for (let round = 0; round < 2; round++) {
    t.same(
      docs.map((d) => d.querySelectorAll('.note').length),
      [2, 0, 2, 0, 2],
      'quirks: class in any case; standards: exact',
    );
    // selectors nwsapi compiles with the class test inside (a lone class is looked up at run time)
    t.same(
      docs.map((d) => d.querySelectorAll('p:is(.note)').length),
      [2, 0, 2, 0, 2],
      'the same for a compiled class test',
    );
    t.same(
      docs.map((d) => d.querySelectorAll('.note ~ p').length),
      [2, 0, 2, 0, 2],
      'the same for a compiled sibling test',
    );
    t.same(
      docs.map((d) => d.querySelectorAll('p').length),
      [3, 2, 3, 2, 3],
      'each document answers with its own elements',
    );
    t.same(
      docs.map((d) => d.querySelector('p')!.ownerDocument === d),
      [true, true, true, true, true],
    );
  }
  const engines = docs.map((d) => impl.implForWrapper(d)._nwsapi);
  t.ok(engines.every(Boolean), 'jsdom keeps the engine where it is looked for');
  t.equal(engines[0], engines[2], 'quirks documents share one engine');
  t.equal(engines[1], engines[3], 'standards documents share one engine');
  t.not(engines[0], engines[1], 'the modes do not share');
});

t.test('pages converted in turn give the outputs they give alone', async (t) => {
  const a = `<html><head><title>Quirky</title></head><body><article><h1>Quirky</h1>${BODY}<p><a href="/one">one</a></p></article></body></html>`;
  const b = `<!doctype html><html><head><title>Strict</title></head><body><main>${BODY}${BODY}<p><a href="https://elsewhere.example/">two</a> <a href="/three">three</a></p></main></body></html>`;
  const aloneA = await run(a);
  const aloneB = await run(b);
  for (let i = 0; i < 3; i++) {
    t.same(await run(a), aloneA);
    t.same(await run(b), aloneB);
  }
  t.same(aloneB.meta.links, { total: 2, internal: 1, external: 1 });
  t.same(aloneA.meta.links, { total: 1, internal: 1, external: 0 });
  // a JSDOM of its own (the fallback of nothing) still answers from its own document
  const dom = new JSDOM('<p class="x">own</p>');
  t.equal(dom.window.document.querySelectorAll('.x').length, 1);
  dom.window.close();
});
