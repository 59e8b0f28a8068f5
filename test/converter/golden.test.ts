// convert()'s outputs, byte for byte, against stored expectations (test/fixtures/converter-golden.json:
// a SHA-256 and length per output): every page of the websitepro corpus with and without the
// JavaScript question, and a few inputs made for the paths the corpus does not take (sniffed
// types, the no-article fallback, an unreadable PDF, a page nested past the depth cap). A change
// of the converter's code that is meant to change no output (a split, a refactor, a library
// upgrade) must leave this green; one that is meant to change them rewrites the file with
// `UPDATE_GOLDEN=1 npx tap test/converter/golden.test.ts` and says why in its commit.
import t from 'tap';
import fs from 'node:fs';
import path from 'node:path';
import zlib from 'node:zlib';
import { createHash } from 'node:crypto';
import { convert, type ConvertInput, type ConvertResult } from '../../actors/converter/convert.ts';
import { loadCorpus, pageBytes } from './corpus.ts';

const GOLDEN = path.join(path.dirname(new URL(import.meta.url).pathname), '../fixtures/converter-golden.json');
const ALL = ['metadata', 'markdown', 'text', 'html'] as const;
const para = (s: string) => `<p>${`${s} `.repeat(8)}</p>`;

function cases(): [string, Omit<ConvertInput, 'outputs'>][] {
  const out: [string, Omit<ConvertInput, 'outputs'>][] = [];
  for (const e of loadCorpus()) {
    let body = pageBytes(e);
    if (e.headers['content-encoding'] === 'gzip') body = zlib.gunzipSync(body);
    const url = `https://corpus.example/${e.id}`;
    const input = {
      body,
      contentType: e.headers['content-type'] ?? '',
      contentLanguage: e.headers['content-language'],
      status: 200,
      url,
      finalUrl: url,
      redirects: [],
      rendered: false,
    };
    out.push([e.id, input], [`${e.id} (detectJs)`, { ...input, detectJs: true }]);
  }
  const url = 'https://made.example/dir/page';
  const base = { status: 200, url, finalUrl: url, redirects: [], rendered: false };
  const html = (s: string) => Buffer.from(s);
  out.push(
    [
      'sniffed html',
      {
        ...base,
        contentType: '',
        body: html(`<!doctype html><title>Sniffed</title><body><article>${para('A page sent without a type is looked at.')}</article>`),
      },
    ],
    ['sniffed json', { ...base, contentType: 'application/octet-stream', body: html('{"a":[1,2,{"b":"c"}]}') }],
    ['sniffed png', { ...base, contentType: '', body: Buffer.from([0x89, 0x50, 0x4e, 0x47, 0, 0, 0, 0]) }],
    ['sniffed pdf, unreadable', { ...base, contentType: '', body: html('%PDF-1.4\nnot really a pdf') }],
    [
      'no article: the fallback',
      {
        ...base,
        contentType: 'text/html',
        body: html(
          '<html><head><title>Short | Site</title><meta name="author" content="Ann"><meta property="og:site_name" content="Site"><meta name="description" content="About little."></head><body><nav>Home About</nav><p>Only a line or two of text here.</p><footer>(c) Site</footer></body></html>',
        ),
      },
    ],
    [
      'deeper than the cap',
      {
        ...base,
        contentType: 'text/html; charset=utf-8',
        body: html(
          `<!doctype html><title>Deep</title><body><article>${para('Text before the deep part of the page.')}${'<div>'.repeat(600)}<p>deep down</p>${'</div>'.repeat(600)}</article>`,
        ),
      },
    ],
    [
      'an app shell',
      {
        ...base,
        contentType: 'text/html',
        detectJs: true,
        body: html(
          '<!doctype html><html><head><title>App</title><script src="/app.js"></script></head><body><div id="root"></div><noscript>You need to enable JavaScript to run this app.</noscript></body></html>',
        ),
      },
    ],
    [
      'base, tasks, code, data links',
      {
        ...base,
        contentType: 'text/html',
        body: html(
          `<!doctype html><html lang="en"><head><title>Lists</title><base href="/other/"></head><body><article><h1>Lists</h1>${para('Lists with boxes and code blocks in them.')}<ul><li><input type="checkbox" checked> done</li><li><input type="checkbox"> open</li></ul><pre class="lang-rust"><span>fn</span> main() {}</pre><p><a href="rel/link">relative</a> <a href="data:text/plain,x">data</a> <a href="javascript:alert(1)">js</a> <img src="/p.png" width="1"> <img data-src="lazy.png" src="data:x"></p><table><tr><td><p>layout cell</p></td><td>two</td></tr></table></article></body></html>`,
        ),
      },
    ],
  );
  return out;
}

const digest = (r: ConvertResult) => {
  if (r.needsJavaScript) return { needsJavaScript: r.reason };
  const o: Record<string, string> = {};
  for (const k of ALL) {
    const f = r.outputs[k];
    if (!f) continue;
    o[k] = f.ok ? `${f.contentType} ${f.data.length} ${createHash('sha256').update(f.data).digest('hex')}` : `${f.error}: ${f.message}`;
  }
  return o;
};

t.test('every output as stored, byte for byte', async (t) => {
  const got: Record<string, unknown> = {};
  for (const [name, input] of cases()) got[name] = digest(await convert({ ...input, outputs: [...ALL] }));
  if (process.env.UPDATE_GOLDEN) {
    fs.writeFileSync(GOLDEN, `${JSON.stringify(got, null, 1)}\n`);
    t.comment(`wrote ${GOLDEN}`);
  }
  const want = JSON.parse(fs.readFileSync(GOLDEN, 'utf8')) as Record<string, unknown>;
  t.same(Object.keys(got).sort(), Object.keys(want).sort(), 'the same inputs');
  for (const name of Object.keys(want)) t.same(got[name], want[name], name);
  t.ok(Object.keys(want).length > 140, `${Object.keys(want).length} inputs`);
});
