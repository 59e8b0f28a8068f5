// The converter's two uses of other libraries' internals, each in a file of its own under
// actors/converter/html/internals/, pinned against the installed versions: the day an upgrade of
// jsdom (or nwsapi under it) or @mozilla/readability moves them, this fails and says what stopped
// working, instead of the converter quietly getting slower, holding pages alive, or losing metadata.
import t from 'tap';
import { createRequire } from 'node:module';
import { JSDOM } from 'jsdom';
import { Readability } from '@mozilla/readability';
import { engineSlot, clearResolvers, JSDOM_UTILS } from '../../actors/converter/html/internals/jsdom.ts';
import { metadataLeftOver } from '../../actors/converter/html/internals/readability.ts';
import { parseHtml } from '../../actors/converter/convert.ts';

const require_ = createRequire(import.meta.url);
const version = (pkg: string) => (require_(`${pkg}/package.json`) as { version: string }).version;
const JSDOM_FILE = 'actors/converter/html/internals/jsdom.ts';
const READABILITY_FILE = 'actors/converter/html/internals/readability.ts';

t.test(`jsdom ${version('jsdom')} (nwsapi ${version('nwsapi')}): the selector engine's place and caches`, async (t) => {
  let loads = true;
  try {
    require_(JSDOM_UTILS);
  } catch {
    loads = false;
  }
  t.ok(
    loads,
    `jsdom no longer has ${JSDOM_UTILS} (implForWrapper): the selector engine is no longer shared between pages; update ${JSDOM_FILE}`,
  );
  const dom = new JSDOM('<!doctype html><p class="a">x</p>');
  const doc = dom.window.document;
  const slot = engineSlot(doc);
  if (!t.ok(slot, `jsdom's implForWrapper no longer maps a document to its implementation; update ${JSDOM_FILE}`)) return;
  doc.querySelectorAll('p.a');
  const engine = slot!.engine();
  if (
    !t.ok(
      engine,
      `jsdom no longer keeps a document's selector engine at _nwsapi after its first query: every page makes its own engine again (slower, docs/notes/performance-history.md "Converter"); update ${JSDOM_FILE}`,
    )
  )
    return;
  for (const cache of ['selectResolvers', 'matchResolvers'] as const) {
    t.equal(
      typeof engine![cache]?.clear,
      'function',
      `nwsapi no longer keeps its resolvers at ${cache}.clear(): a shared engine would keep the last page each selector ran on alive (test/converter/selector-engine-memory.test.ts); update ${JSDOM_FILE}`,
    );
  }
  // an engine given to a fresh document is the one its queries use
  const other = new JSDOM('<!doctype html><p class="a">y</p><p>z</p>').window.document;
  engineSlot(other)!.adopt(engine!);
  t.equal(other.querySelectorAll('p').length, 2, 'a document answers from its own elements through an adopted engine');
  t.equal(engineSlot(other)!.engine(), engine, `jsdom made its own engine over the one given: sharing is off; update ${JSDOM_FILE}`);
  clearResolvers(engine!);
  t.equal(doc.querySelectorAll('p.a').length, 1, 'queries still answer after the resolvers were cleared');
  // and the converter's own use: documents of one compatibility mode share one engine
  const a = parseHtml('<!doctype html><p>a</p>', 'https://a.example/').doc;
  const b = parseHtml('<!doctype html><p>b</p>', 'https://b.example/').doc;
  t.equal(engineSlot(a)!.engine(), engineSlot(b)!.engine(), "two parsed pages share the thread's engine");
  dom.window.close();
});

t.test(`@mozilla/readability ${version('@mozilla/readability')}: the metadata a reader keeps when it finds no article`, async (t) => {
  const page = `<!doctype html><html><head><title>A short note about rivers | The Site</title>
    <meta name="description" content="A page about little."><meta property="og:site_name" content="The Site">
    <meta property="article:published_time" content="2024-01-02T03:04:05Z"><meta name="author" content="Ann Author">
    </head><body><p>Only a line.</p></body></html>`;
  const reader = new Readability(new JSDOM(page, { url: 'https://a.example/' }).window.document);
  // the page is too short for an article: the converter then reads what the reader kept
  const article = reader.parse();
  t.ok(!article || (article.textContent ?? '').trim().length < 80, 'no article the converter would take');
  const left = metadataLeftOver(reader);
  const why = (what: string) =>
    `Readability no longer keeps the ${what} it read where ${READABILITY_FILE} looks (_metadata, _articleTitle, _articleByline): metadata of pages without an article loses Readability's reading; update that file`;
  t.equal(left.title, 'A short note about rivers', why('cleaned title'));
  t.equal(left.byline, 'Ann Author', why('byline'));
  t.equal(left.excerpt, 'A page about little.', why('excerpt'));
  t.equal(left.siteName, 'The Site', why('site name'));
  t.equal(left.publishedTime, '2024-01-02T03:04:05Z', why('published time'));
  t.same(
    metadataLeftOver(null),
    { byline: undefined, siteName: undefined, excerpt: undefined, publishedTime: undefined, title: undefined },
    'a reader that could not be made leaves nothing',
  );
});
