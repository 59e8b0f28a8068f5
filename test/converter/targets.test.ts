// The fetch side through the real actor: redirects, blocked redirects, size cap, timeouts, HTTP
// errors, non-HTML targets, charsets, and a page with no article.
import t from 'tap';
import net from 'node:net';
import zlib from 'node:zlib';
import { fixtureServer, html, redirect } from '../outbound/fixture-server.ts';
import { startConverter } from './harness.ts';
import { HUB, latin1Page, LATIN1_TEXT, CYRILLIC } from './pages.ts';

const PAGE = `<!doctype html><html><head><title>Landing</title></head><body><article><h1>Landing</h1><p>${'Words that make an article long enough to be found. '.repeat(20)}</p></article></body></html>`;

t.test('converter against many targets', async (t) => {
  const c = await startConverter(t, {
    websitepro: { maxBytes: 64 * 1024, fetchTimeoutMs: 1500 },
    outbound: { allowCidrs: ['127.0.0.1/32'] },
  });
  const png = Buffer.from(
    '89504e470d0a1a0a0000000d49484452000000010000000108060000001f15c4890000000d4944415478da63f8cfc0f01f0005000201a5e6b4a70000000049454e44ae426082',
    'hex',
  );
  const s = await fixtureServer(t, {
    '/r1': redirect('/r2', 301),
    '/r2': redirect('/r3', 302),
    '/r3': redirect('/final', 307),
    '/final': html(PAGE),
    '/to-private': redirect('http://10.0.0.1/admin'),
    '/to-other-loopback': redirect('http://127.0.0.2/'),
    '/big': html(`<p>${'x'.repeat(100 * 1024)}</p>`),
    '/big-gzip': (_q, r) =>
      r.writeHead(200, { 'content-type': 'text/html', 'content-encoding': 'gzip' }).end(zlib.gzipSync(`<p>${'y'.repeat(200 * 1024)}</p>`)),
    '/br': (_q, r) =>
      r.writeHead(200, { 'content-type': 'text/html; charset=utf-8', 'content-encoding': 'br' }).end(zlib.brotliCompressSync(PAGE)),
    '/missing': (_q, r) => r.writeHead(404, { 'content-type': 'text/html' }).end('<h1>Not here</h1>'),
    '/data.json': (_q, r) => r.writeHead(200, { 'content-type': 'application/json' }).end('{"a":1,"b":[true,null]}'),
    '/notes.txt': (_q, r) => r.writeHead(200, { 'content-type': 'text/plain; charset=utf-8' }).end('line one\n\nline two\n'),
    '/pixel.png': (_q, r) => r.writeHead(200, { 'content-type': 'image/png' }).end(png),
    '/doc.pdf': (_q, r) => r.writeHead(200, { 'content-type': 'application/pdf' }).end('%PDF-1.4\n%%EOF\n'),
    '/latin1-says-utf8': (_q, r) => r.writeHead(200, { 'content-type': 'text/html; charset=utf-8' }).end(latin1Page()),
    '/latin1-no-header': (_q, r) => r.writeHead(200, { 'content-type': 'text/html' }).end(latin1Page()),
    '/cp1251-meta': (_q, r) =>
      r
        .writeHead(200, { 'content-type': 'text/html' })
        .end(
          Buffer.concat([
            Buffer.from('<html><head><meta charset="windows-1251"><title>t</title></head><body><article><p>'),
            Buffer.from(new Uint8Array([...CYRILLIC].map(cp1251))),
            Buffer.from('</p></article></body></html>'),
          ]),
        ),
    '/hub': html(HUB),
  });
  const silent = net.createServer((sock) => held.push(sock));
  const held: net.Socket[] = [];
  await new Promise<void>((r) => silent.listen(0, '127.0.0.1', () => r()));
  t.teardown(() => {
    held.forEach((x) => x.destroy());
    silent.close();
  });
  const silentUrl = `http://127.0.0.1:${(silent.address() as net.AddressInfo).port}/`;

  t.test('a chain of redirects: the final URL is reported', async (t) => {
    const o = await c.runJob(s.url('/r1'), ['metadata', 'markdown']);
    t.equal(o.markdown?.kind, 'done');
    const meta = JSON.parse(await c.read(o.metadata!));
    t.equal(meta.finalUrl, s.url('/final'));
    t.same(meta.redirects, [s.url('/r1'), s.url('/r2'), s.url('/r3')]);
    t.match(await c.read(o.markdown!), /^# Landing\n/);
  });

  t.test('a redirect to a private address fails every output as blocked_address', async (t) => {
    for (const p of ['/to-private', '/to-other-loopback']) {
      const o = await c.runJob(s.url(p), ['metadata', 'text']);
      t.match(o.metadata, { kind: 'failed', error: 'blocked_address' }, p);
      t.match(o.text, { kind: 'failed', error: 'blocked_address' }, p);
    }
  });

  t.test('a page larger than the cap', async (t) => {
    t.match((await c.runJob(s.url('/big'), ['markdown'])).markdown, { kind: 'failed', error: 'too_large' });
    t.match(
      (await c.runJob(s.url('/big-gzip'), ['markdown'])).markdown,
      { kind: 'failed', error: 'too_large' },
      'counted after decompression',
    );
    t.match((await c.runJob(s.url('/br'), ['markdown'])).markdown, { kind: 'done' }, 'brotli page within the cap');
  });

  t.test('a server that never answers: timeout', async (t) => {
    const t0 = Date.now();
    const o = await c.runJob(silentUrl, ['markdown', 'text']);
    t.match(o.markdown, { kind: 'failed', error: 'timeout' });
    t.match(o.text, { kind: 'failed', error: 'timeout' });
    t.ok(Date.now() - t0 < 15000, 'failed near fetchTimeoutMs');
  });

  t.test('HTTP errors are not converted', async (t) => {
    t.match((await c.runJob(s.url('/missing'), ['markdown'])).markdown, { kind: 'failed', error: 'http_error', message: /404/ });
  });

  t.test('non-HTML targets: decided per output', async (t) => {
    const j = await c.runJob(s.url('/data.json'), ['metadata', 'markdown', 'text', 'html']);
    t.equal(await c.read(j.markdown!), '```json\n{\n  "a": 1,\n  "b": [\n    true,\n    null\n  ]\n}\n```\n');
    t.match(await c.read(j.text!), '"a": 1');
    t.match(await c.read(j.html!), '<pre>{\n  &quot;a&quot;: 1');
    t.match(JSON.parse(await c.read(j.metadata!)), { contentType: 'application/json', title: null });
    const tx = await c.runJob(s.url('/notes.txt'), ['text', 'markdown']);
    t.equal(await c.read(tx.text!), 'line one\n\nline two\n');
    const img = await c.runJob(s.url('/pixel.png'), ['metadata', 'markdown', 'text', 'html']);
    t.match(JSON.parse(await c.read(img.metadata!)), { contentType: 'image/png', image: s.url('/pixel.png'), bytes: png.length });
    for (const k of ['markdown', 'text', 'html']) t.match(img[k], { kind: 'failed', error: 'unsupported_content' }, `image has no ${k}`);
    const pdf = await c.runJob(s.url('/doc.pdf'), ['metadata', 'text', 'pdf']);
    t.match(
      pdf.text,
      { kind: 'failed', error: 'conversion_failed', message: /PDF could not be read/ },
      'a PDF that does not parse has no text',
    );
    t.match(pdf.metadata, { kind: 'done' });
    t.match(pdf.pdf, { kind: 'done', file: { contentType: 'application/pdf' } }, 'a PDF target is its own pdf result');
    t.equal(await c.read(pdf.pdf!), '%PDF-1.4\n%%EOF\n');
  });

  t.test('charsets: wrong header, no header, meta', async (t) => {
    for (const p of ['/latin1-says-utf8', '/latin1-no-header']) {
      const o = await c.runJob(s.url(p), ['text', 'metadata']);
      const text = await c.read(o.text!);
      t.match(text, LATIN1_TEXT.trim().slice(0, 40), p);
      t.notMatch(text, '\uFFFD', `${p}: no replacement characters`);
      t.equal(JSON.parse(await c.read(o.metadata!)).charset, 'windows-1252', p);
    }
    const cy = await c.runJob(s.url('/cp1251-meta'), ['text']);
    t.match(await c.read(cy.text!), 'Привет, мир!');
  });

  t.test('no article: the body minus navigation, never empty', async (t) => {
    const o = await c.runJob(s.url('/hub'), ['markdown']);
    const md = await c.read(o.markdown!);
    t.match(md, `[One](${s.base}/one)`);
    t.match(md, 'Short text.');
    t.notMatch(md, 'NAVLINK');
    t.notMatch(md, 'FOOTERTEXT');
  });
});

/** Windows-1251 encoder for the Cyrillic test string. */
function cp1251(ch: string): number {
  const c = ch.codePointAt(0)!;
  if (c < 0x80) return c;
  if (c >= 0x410 && c <= 0x44f) return c - 0x410 + 0xc0;
  if (c === 0x401) return 0xa8;
  if (c === 0x451) return 0xb8;
  return 0x3f;
}
