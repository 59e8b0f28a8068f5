// Decisions inside the conversion, without NATS: when a page needs JavaScript, how a body is
// decoded, what a content type becomes.
import t from 'tap';
import { JSDOM } from 'jsdom';
import { needsJavaScript, convert, sniffType, countWords } from '../../actors/converter/convert.ts';
import { decodeBody } from '../../actors/converter/charset.ts';
import { SPA_SHELL, ARTICLE, HUB } from './pages.ts';

const doc = (h: string) => new JSDOM(h).window.document;

t.test('needsJavaScript', async (t) => {
  t.match(needsJavaScript(doc(SPA_SHELL)), /mount point/, 'React-style shell');
  t.match(
    needsJavaScript(doc('<html><body><div id="__next"></div><script src="/_next/main.js"></script></body></html>')),
    /mount point/,
    'Next shell',
  );
  t.match(
    needsJavaScript(doc('<html><body><app-root></app-root><script src="main.js"></script></body></html>')),
    /mount point/,
    'Angular shell',
  );
  t.match(
    needsJavaScript(doc('<html><body><script src="x.js"></script>Loading…</body></html>')),
    /characters of text/,
    'text-free page with scripts',
  );
  t.equal(needsJavaScript(doc(ARTICLE)), null, 'an article with a script is static');
  t.equal(needsJavaScript(doc(HUB)), null, 'no scripts: nothing to run');
  t.equal(
    needsJavaScript(
      doc(
        '<html><body><div id="root"><h1>Server rendered</h1><p>' +
          'Real text. '.repeat(30) +
          '</p></div><script src="/hydrate.js"></script></body></html>',
      ),
    ),
    null,
    'server-rendered then hydrated',
  );
  t.equal(needsJavaScript(doc('<html><body></body></html>')), null, 'empty page without scripts');
});

t.test('convert asks for JavaScript only on the first pass', async (t) => {
  const input = {
    body: Buffer.from(SPA_SHELL),
    contentType: 'text/html',
    status: 200,
    url: 'http://a.example/',
    finalUrl: 'http://a.example/',
    redirects: [],
    rendered: false,
    outputs: ['markdown' as const],
  };
  t.match(await convert({ ...input, detectJs: true }), { needsJavaScript: true });
  t.match(await convert({ ...input, detectJs: false }), { outputs: { markdown: { ok: true } } });
  t.match(await convert({ ...input, detectJs: true, rendered: true }), { outputs: { markdown: { ok: true } } });
});

t.test('decodeBody', async (t) => {
  const latin1 = Buffer.from('<p>Grüße</p>', 'latin1');
  t.same(decodeBody(latin1, 'text/html; charset=iso-8859-1'), { text: '<p>Grüße</p>', charset: 'windows-1252' });
  t.same(
    decodeBody(latin1, 'text/html; charset=utf-8'),
    { text: '<p>Grüße</p>', charset: 'windows-1252' },
    'declared UTF-8 that is not UTF-8',
  );
  t.same(
    decodeBody(Buffer.from('<p>Grüße</p>'), 'text/html; charset=bogus-label'),
    { text: '<p>Grüße</p>', charset: 'utf-8' },
    'unknown label',
  );
  t.same(
    decodeBody(Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), Buffer.from('<p>ü</p>')]), 'text/html; charset=windows-1252'),
    { text: '<p>ü</p>', charset: 'utf-8' },
    'BOM wins',
  );
  const sjis = Buffer.concat([Buffer.from('<meta charset="shift_jis"><p>'), Buffer.from([0x82, 0xa0]), Buffer.from('</p>')]);
  t.match(decodeBody(sjis, 'text/html').text, '<p>あ</p>', 'meta charset');
  t.same(decodeBody(Buffer.from('<p>ü</p>'), 'text/html'), { text: '<p>ü</p>', charset: 'utf-8' }, 'valid UTF-8 without any declaration');
  const utf16 = Buffer.concat([Buffer.from([0xff, 0xfe]), Buffer.from('<p>hi</p>', 'utf16le')]);
  t.equal(decodeBody(utf16, 'text/html').text, '<p>hi</p>');
});

t.test('sniffType and countWords', async (t) => {
  t.equal(sniffType(Buffer.from('%PDF-1.7'), ''), 'application/pdf');
  t.equal(sniffType(Buffer.from('<!DOCTYPE html><html>'), 'application/octet-stream'), 'text/html');
  t.equal(sniffType(Buffer.from('{"a":1}'), ''), 'application/json');
  t.equal(sniffType(Buffer.from('anything'), 'text/plain; charset=utf-8'), 'text/plain', 'a declared type is kept');
  t.equal(countWords("It's a well-known fact: 42 Grüße, 東京"), 7);
});

t.test('sanitised html keeps no active content', async (t) => {
  const nasty = `<html><head><title>X</title></head><body><article><h1>X</h1><p>${'Plenty of text for the article detector to accept this block. '.repeat(10)}</p>
    <p><a href="javascript:alert(1)">js</a> <a href="JaVaScRiPt&colon;alert(1)">js2</a> <a href="data:text/html,<script>alert(1)</script>">data</a> <a href="vbscript:x">vb</a></p>
    <img src="x.png" onerror="alert(1)"><svg onload="alert(1)"><script>alert(1)</script></svg><math><mi xlink:href="javascript:alert(1)">m</mi></math>
    <object data="x.swf"></object><embed src="x.swf"><iframe srcdoc="<script>alert(1)</script>"></iframe><form><input></form>
    <div style="background:url(javascript:alert(1))">styled</div><a href="/ok" onmouseover="alert(1)">ok</a><img src="https://www.google-analytics.com/collect?x=1" alt="">
    <meta http-equiv="refresh" content="0;url=javascript:alert(1)"><base href="javascript:alert(1)//"><details open ontoggle="alert(1)">d</details></p></article></body></html>`;
  const r = await convert({
    body: Buffer.from(nasty),
    contentType: 'text/html',
    status: 200,
    url: 'http://a.example/p',
    finalUrl: 'http://a.example/p',
    redirects: [],
    rendered: false,
    outputs: ['html'],
  });
  const h = 'outputs' in r && r.outputs.html?.ok ? r.outputs.html.data : '';
  t.ok(h.length > 100);
  for (const bad of [
    /javascript/i,
    /vbscript/i,
    /data:text/i,
    /\son[a-z]+=/i,
    /<script/i,
    /<svg/i,
    /<math/i,
    /<object/i,
    /<embed/i,
    /<iframe/i,
    /<form/i,
    /<input/i,
    /style=/i,
    /google-analytics/,
    /http-equiv/i,
    /<base/i,
  ])
    t.notMatch(h, bad, String(bad));
  t.match(h, '<a href="http://a.example/ok" rel="noopener noreferrer nofollow">ok</a>');
  t.match(h, '<img src="http://a.example/x.png">');
});

t.test('html keeps a code block language and no other class', async (t) => {
  const page = `<html><head><title>C</title></head><body><div class="wrap"><p class="lead">${'Some text long enough to count as content for the detector here. '.repeat(8)}</p><pre><code class="language-ts hljs">const x: number = 1;</code></pre></div></body></html>`;
  const r = await convert({
    body: Buffer.from(page),
    contentType: 'text/html',
    status: 200,
    url: 'http://a.example/',
    finalUrl: 'http://a.example/',
    redirects: [],
    rendered: false,
    outputs: ['html', 'markdown'],
  });
  const out = 'outputs' in r ? r.outputs : {};
  const h = out.html?.ok ? out.html.data : '';
  t.match(h, '<code class="language-ts">');
  t.notMatch(h, /class="(wrap|lead|hljs)/);
  t.match(out.markdown?.ok ? out.markdown.data : '', '```ts\nconst x: number = 1;\n```');
});
