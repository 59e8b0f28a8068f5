// Run by selector-engine-memory.test.ts in a process of its own (tap's own async tracking keeps
// objects alive): whether a page asked by the shared selector engine is still alive after later
// conversions. Prints one JSON line.
import v8 from 'node:v8';
import vm from 'node:vm';
import { convert, parseHtml } from '../../actors/converter/convert.ts';

v8.setFlagsFromString('--expose-gc');
const gc = vm.runInNewContext('gc') as () => void;
const URL_ = 'https://site.example/dir/page';
const smallPage = (doctype: string) =>
  `${doctype}<html><head><title>small</title></head><body><article><h1>Small</h1><p>${'A few words of text. '.repeat(40)}</p></article></body></html>`;
const asked = (doctype: string, selector: string) => {
  const page = parseHtml(`${doctype}<html><body><div class="only-here"><p>once</p></div></body></html>`, URL_);
  if (page.doc.querySelectorAll(selector).length !== 1) throw new Error('the selector did not match');
  return new WeakRef(page.doc);
};
const convertSmall = (doctype: string) =>
  convert({
    body: Buffer.from(smallPage(doctype)),
    contentType: 'text/html; charset=utf-8',
    status: 200,
    url: URL_,
    finalUrl: URL_,
    redirects: [],
    rendered: false,
    outputs: ['metadata', 'markdown'],
  });

async function main() {
  const out: Record<string, boolean> = {};
  for (const [mode, doctype] of [
    ['standards', '<!doctype html>'],
    ['quirks', ''],
  ] as const) {
    // a selector no later page asks, then conversions of both modes
    const earlier = asked(doctype, 'div.only-here > p');
    for (const d of ['<!doctype html>', '', doctype]) await convertSmall(d);
    // the last page asked before a conversion of its own mode
    const last = asked(doctype, 'p');
    await convertSmall(doctype);
    for (let i = 0; i < 5; i++) {
      gc();
      await new Promise((r) => setTimeout(r, 20));
    }
    out[`${mode}: earlier page collected`] = earlier.deref() === undefined;
    out[`${mode}: last page collected`] = last.deref() === undefined;
  }
  console.log(JSON.stringify(out));
}
void main();
