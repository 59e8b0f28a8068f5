// Issue 43, browser-pool's render endpoints called directly (Chromium): renderPdf's `pdf` options
// (a Letter landscape page is 792 x 612 pt; pageRanges; header and footer templates) and both
// endpoints' `controls` (headers to the target origin only, removeSelectors, waitFor, actions, the
// selector counts in the reply, selector_not_found as ApiError('internal') with its reason).
import t from 'tap';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Objm } from '@nats-io/obj';
import { startTestNats } from '../helpers/nats.ts';
import { testBrowser } from './browsers.ts';
import { pdfOptionsOf, renderEndpoints } from '../../actors/browser-pool/render.ts';
import { Slots } from '../../actors/browser-pool/pool.ts';
import { Stores } from '../../actors/browser-pool/store.ts';
import { OBJECT_STORES } from '../../shared/names.ts';
import { ApiError } from '../../shared/errors.ts';

t.test('renderPdf and renderHtml with pdf options and page controls', async (t) => {
  const tn = await startTestNats(t);
  const seen: { port: number; path: string; secret?: string }[] = [];
  const ports: number[] = [];
  const make = (i: number) =>
    createServer((req, res) => {
      seen.push({ port: ports[i]!, path: req.url ?? '/', secret: req.headers['x-secret'] as string | undefined });
      if (req.url !== '/') return void res.writeHead(404).end();
      res
        .writeHead(200, { 'content-type': 'text/html' })
        .end(
          `<!doctype html><html><body><p class="ad">advert</p><p class="ad">advert</p><main id="m">${'<p>content</p>'.repeat(200)}</main>` +
            `<button id="more" onclick="document.getElementById('m').insertAdjacentHTML('beforeend','<p id=added>added</p>')">more</button>` +
            `<img src="http://127.0.0.1:${ports[1]}/other.png"><script>setTimeout(() => document.body.insertAdjacentHTML('beforeend', '<div id=late>late</div>'), 500)</script></body></html>`,
        );
    });
  for (const i of [0, 1]) {
    const s = make(i);
    await new Promise<void>((r) => s.listen(0, '127.0.0.1', r));
    ports[i] = (s.address() as AddressInfo).port;
    t.teardown(() => s.close());
  }
  const url = `http://127.0.0.1:${ports[0]}/`;
  const b = await testBrowser(t, 'chromium');
  const render = renderEndpoints({ browser: b.managed(), slots: new Slots(1), stores: new Stores(tn.nc), pageTimeoutMs: 30000 });
  const store = await new Objm(tn.nc).open(OBJECT_STORES.results);
  const pdfOf = async (name: string) => Buffer.from((await store.getBlob(name))!).toString('latin1');
  const pages = (pdf: string) => [...pdf.matchAll(/\/Type\s*\/Page\b/g)].length;
  const boxes = (pdf: string) => [
    ...new Set([...pdf.matchAll(/\/MediaBox\s*\[\s*([\d.\s]+)\]/g)].map((m) => m[1]!.trim().split(/\s+/).map(Number).join(' '))),
  ];

  await render.renderPdf({ url, store: OBJECT_STORES.results, objectName: 'a4' });
  const a4 = await pdfOf('a4');
  t.same(boxes(a4), ['0 0 595.91998 841.91998'], 'default: A4 portrait');

  const reply = await render.renderPdf({
    url,
    store: OBJECT_STORES.results,
    objectName: 'letter',
    pdf: {
      format: 'Letter',
      landscape: true,
      margin: { top: '1in', bottom: '1in' },
      pageRanges: '1-2',
      footerTemplate: '<span class="pageNumber"></span>/<span class="totalPages"></span>',
    },
    controls: { headers: { 'X-Secret': 'v' }, removeSelectors: ['.ad'], waitFor: '#late' },
  });
  const letter = await pdfOf('letter');
  t.same(boxes(letter), ['0 0 792 612'], 'Letter landscape: 792 x 612 pt');
  t.equal(pages(letter), 2, 'pageRanges 1-2');
  t.same(reply.selectors, { '#late': 1, '.ad': 2 }, 'the reply counts the selectors');
  t.match(
    pdfOptionsOf({ footerTemplate: 'x' }, 1000),
    { displayHeaderFooter: true, footerTemplate: 'x', headerTemplate: '<span></span>' },
    'a template turns on displayHeaderFooter',
  );
  t.notOk(pdfOptionsOf({}, 1000).displayHeaderFooter, 'no template: no header or footer');

  const html = await render.renderHtml({
    url,
    controls: {
      headers: { 'X-Secret': 'v' },
      removeSelectors: ['.ad'],
      actions: [
        { type: 'click', selector: '#more' },
        { type: 'wait', selector: '#added' },
      ],
    },
  });
  t.notMatch(html.html, /advert/, 'removed before the HTML is read');
  t.match(html.html, /id="added"/, 'the actions ran');
  t.same(html.selectors, { '#more': 1, '#added': 1, '.ad': 2 });
  const target = seen.filter((s) => s.port === ports[0] && s.path === '/');
  t.same(
    target.map((s) => s.secret),
    [undefined, 'v', 'v'],
    'the target got the header when asked (the A4 print had none)',
  );
  const other = seen.filter((s) => s.port === ports[1]);
  t.ok(other.length >= 1, 'the other origin was asked for its image');
  t.ok(
    other.every((s) => s.secret === undefined),
    'and never got the header',
  );

  const missing = await render.renderHtml({ url, controls: { actions: [{ type: 'click', selector: '#nope' }] } }).catch((e: unknown) => e);
  t.type(missing, ApiError);
  t.match(missing, { code: 'internal', details: { reason: 'selector_not_found', selector: '#nope' } });
  const forbidden = await render.renderHtml({ url, controls: { headers: { Host: 'x' } } }).catch((e: unknown) => e);
  t.match(forbidden, { code: 'bad_request' });
});
