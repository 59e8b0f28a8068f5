// Pages nested deeper than MAX_DEPTH are flattened before jsdom parses them: 5000 nested <div>s took
// about two minutes and overflowed the stack; real pages are never touched.
import t from 'tap';
import zlib from 'node:zlib';
import { JSDOM } from 'jsdom';
import { capNesting, nestingBound, MAX_DEPTH } from '../../actors/converter/depth.ts';
import { convert, mediaType } from '../../actors/converter/convert.ts';
import { decodeBody } from '../../actors/converter/charset.ts';
import { loadCorpus, pageBytes } from './corpus.ts';

const TOP = 'The opening paragraph sits near the top of this page and is long enough for an article. '.repeat(4);
const deepPage = (levels: number, wrapper = (i: number) => `<div class="w${i % 7}">`) =>
  `<!doctype html><html lang="en"><head><title>Deep page</title></head><body><article><h1>Deep page</h1><p>${TOP}</p>${Array.from({ length: levels }, (_, i) => wrapper(i)).join('\n')}<p>The innermost paragraph has <a href="/inner">a link</a> and is kept.</p>${'</div>'.repeat(levels)}<p>The closing paragraph comes after all the wrappers.</p></article></body></html>`;

/** Deepest element nesting of a document (html = 1), without recursion. */
function maxDepth(doc: Document): number {
  let max = 0;
  const stack: [Element, number][] = [[doc.documentElement, 1]];
  while (stack.length) {
    const [el, d] = stack.pop()!;
    max = Math.max(max, d);
    for (const c of el.children) stack.push([c, d + 1]);
  }
  return max;
}

t.test('the bound from the tags is never below the depth jsdom builds, on every corpus page', async (t) => {
  let pages = 0;
  for (const e of loadCorpus()) {
    if (!mediaType(e.headers['content-type'] ?? '').includes('html')) continue;
    let body = pageBytes(e);
    if (e.headers['content-encoding'] === 'gzip') body = zlib.gunzipSync(body);
    const html = decodeBody(body, e.headers['content-type']).text;
    const real = maxDepth(new JSDOM(html).window.document);
    const bound = nestingBound(html);
    t.ok(bound + 5 >= real, `${e.id}: bound ${bound} (+5 the parser adds), depth ${real}`);
    t.equal(capNesting(html).flattened, false, `${e.id}: a real page is not flattened`);
    pages++;
  }
  t.ok(pages >= 60, `${pages} corpus pages`);
});

t.test('the bound ignores what is no element and what closes itself', async (t) => {
  t.equal(
    nestingBound('<p>a<p>b<p>c<ul><li>x<li>y</ul>'),
    3,
    'unclosed paragraphs and list items are siblings (p, ul, li: the parser closes the p, the bound may not)',
  );
  t.equal(
    nestingBound(`<script>${'<div>'.repeat(500)}</script><!-- ${'<div>'.repeat(500)} --><div>x</div>`),
    1,
    'tags in scripts and comments are text',
  );
  t.equal(nestingBound(`<svg>${'<path d="M0 0"/>'.repeat(500)}</svg>`), 1, 'self-closing in SVG');
  t.ok(nestingBound(`${'<div/>'.repeat(300)}`) >= 300, '"/>" closes nothing in HTML');
  t.ok(nestingBound(`${'</b><div>'.repeat(300)}`) >= 300, 'a stray end tag does not hide the nesting');
});

t.test('a page of 5000 nested <div>s is flattened below the limit, keeping its text in order', async (t) => {
  const html = deepPage(5000);
  const capped = capNesting(html);
  t.ok(capped.flattened);
  const doc = new JSDOM(capped.html).window.document;
  t.ok(maxDepth(doc) <= MAX_DEPTH, `depth ${maxDepth(doc)} after the cap`);
  const text = doc.body.textContent ?? '';
  const at = (s: string) => text.indexOf(s);
  t.ok(
    at('The opening paragraph') >= 0 &&
      at('The opening paragraph') < at('The innermost paragraph') &&
      at('The innermost paragraph') < at('The closing paragraph'),
    'text kept, in order',
  );
  t.ok(doc.querySelector('a[href="/inner"]'), 'the link inside the deepest wrapper is kept');
  t.ok(
    doc.querySelectorAll('div').length < 200,
    `the empty wrappers beyond the limit are gone (${doc.querySelectorAll('div').length} left)`,
  );
});

t.test('the 5000-level page converts, every output, well within the page timeout', async (t) => {
  for (const [name, page] of [
    ['divs', deepPage(5000)],
    ['indented spans', deepPage(5000, (i) => `  <span data-i="${i}">`).replace(/<\/div>/g, '</span>')],
  ] as const) {
    const t0 = performance.now();
    const r = await convert({
      body: Buffer.from(page),
      contentType: 'text/html; charset=utf-8',
      status: 200,
      url: 'https://deep.example/',
      finalUrl: 'https://deep.example/',
      redirects: [],
      rendered: false,
      outputs: ['metadata', 'markdown', 'text', 'html'],
    });
    const ms = performance.now() - t0;
    t.comment(`${name}: ${ms.toFixed(0)} ms`);
    // before the cap: about two minutes, then a stack overflow
    t.ok(ms < 45000, `${name}: converted in ${ms.toFixed(0)} ms, under the 45 s page timeout`);
    if (!('outputs' in r)) throw new Error('asked for JavaScript');
    for (const o of ['metadata', 'markdown', 'text', 'html'] as const) t.equal(r.outputs[o]?.ok, true, `${name}: ${o}`);
    const md = r.outputs.markdown!.ok ? r.outputs.markdown!.data : '';
    t.match(md, 'The opening paragraph sits near the top');
    t.match(md, '[a link](https://deep.example/inner)');
    t.match(md, 'The closing paragraph comes after all the wrappers.');
    const meta = JSON.parse(r.outputs.metadata!.ok ? r.outputs.metadata!.data : '{}');
    t.equal(meta.title, 'Deep page');
    t.match(meta.warnings, [/deeper than 128 levels/]);
  }
});
