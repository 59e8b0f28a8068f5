// One output that cannot be made never takes the others down.
import t from 'tap';
import { fixtureServer, html } from '../outbound/fixture-server.ts';
import { startConverter } from './harness.ts';
import { convert } from '../../actors/converter/convert.ts';

const long = (n: number) =>
  `<p>${'The harbour master wrote a long report about the tides, the boats and the weather of the season. '.repeat(n)}</p>`;
// Readability picks a table cell as the article and turns the rows around it into <div>s, leaving
// <td>s without a <table>: the GFM table plugin then threw "Invalid value used as weak map key"
// and the whole job failed, metadata included
const ORPHAN_CELLS = `<!doctype html><html lang="en"><head><title>Harbour report</title><meta name="description" content="The season in the harbour."></head><body><table><tbody><tr><td>${long(8)}${long(8)}</td></tr><tr><td>${long(3)}</td><td>A small cell</td></tr></tbody></table></body></html>`;

t.test('cells left without their table: every output is delivered', async (t) => {
  const c = await startConverter(t);
  const s = await fixtureServer(t, { '/report': html(ORPHAN_CELLS) });
  const out = await c.runJob(s.url('/report'), ['metadata', 'markdown', 'text', 'html']);
  for (const k of ['metadata', 'markdown', 'text', 'html']) t.equal(out[k]?.kind, 'done', `${k}: ${JSON.stringify(out[k])}`);
  const md = await c.read(out.markdown!);
  t.match(md, 'The harbour master wrote a long report');
  t.match(md, 'A small cell');
  t.notMatch(md, /<t[dr]/i, 'no raw cells');
  t.match(JSON.parse(await c.read(out.metadata!)), { title: 'Harbour report', description: 'The season in the harbour.' });
});

t.test('outputs a target cannot have fail alone, the others are delivered', async (t) => {
  const c = await startConverter(t);
  const scanned = Buffer.from(
    '%PDF-1.4\n1 0 obj\n<< /Type /Catalog /Pages 2 0 R >>\nendobj\n2 0 obj\n<< /Type /Pages /Kids [3 0 R] /Count 1 >>\nendobj\n3 0 obj\n<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] >>\nendobj\ntrailer\n<< /Root 1 0 R >>\n%%EOF\n',
    'latin1',
  );
  const s = await fixtureServer(t, {
    '/scan.pdf': (_q, r) => r.writeHead(200, { 'content-type': 'application/pdf' }).end(scanned),
    '/broken.pdf': (_q, r) => r.writeHead(200, { 'content-type': 'application/pdf' }).end('%PDF-1.7\nthis is not a PDF body'),
  });
  const scan = await c.runJob(s.url('/scan.pdf'), ['metadata', 'markdown', 'text']);
  t.equal(scan.metadata?.kind, 'done');
  t.match(scan.markdown, { kind: 'failed', error: 'unsupported_content', message: /no text layer/ });
  t.match(scan.text, { kind: 'failed', error: 'unsupported_content' });
  const broken = await c.runJob(s.url('/broken.pdf'), ['metadata', 'text']);
  t.equal(broken.metadata?.kind, 'done', 'metadata of a PDF that does not parse');
  t.match(JSON.parse(await c.read(broken.metadata!)), { contentType: 'application/pdf', warnings: [/could not be read/] });
  t.match(broken.text, { kind: 'failed', error: 'conversion_failed' });
});

t.test('metadata comes out of any HTML that parses', async (t) => {
  for (const page of [
    '<title>Only a title</title>',
    '<html><head><title>No body text</title><meta property="og:site_name" content="Site"></head><body></body></html>',
    '<<<>>> <title>Garbage around</title> </p></div></table>',
  ]) {
    const r = await convert({
      body: Buffer.from(page),
      contentType: 'text/html',
      status: 200,
      url: 'http://a.example/',
      finalUrl: 'http://a.example/',
      redirects: [],
      rendered: false,
      outputs: ['metadata', 'markdown', 'text', 'html'],
    });
    const m = 'outputs' in r ? r.outputs.metadata : undefined;
    t.ok(m?.ok, page);
    t.match(m?.ok ? JSON.parse(m.data) : {}, { title: /./ }, page);
  }
});
