// A long document's PDF: printing keeps the page's main thread busy for seconds, which is our own
// work, not a script that does not end. The main-thread heartbeat started after the settle must not
// fail the print as `timeout` (it did: a ~100-page table failed within seconds).
import t from 'tap';
import { createServer } from 'node:http';
import { Objm } from '@nats-io/obj';
import { startTestNats } from '../helpers/nats.ts';
import { testBrowser } from './browsers.ts';
import { renderEndpoints } from '../../actors/browser-pool/render.ts';
import { Slots } from '../../actors/browser-pool/pool.ts';
import { Stores } from '../../actors/browser-pool/store.ts';
import { SETTLE } from '../../actors/browser-pool/settle.ts';
import { OBJECT_STORES } from '../../shared/names.ts';

const PAGE_TIMEOUT_MS = 90000;
// The heartbeat's wait for an answer, 3 s in production, is 1 s here: 5,000 rows hold the main
// thread several times that while they print (the test fails when the watch counts the print as a
// stuck page), and the file takes 10-15 s where 14,000 rows past 3 s took 75-100 s under the
// suite's load, once more than the page timeout (CI, session 21).
const SETTLE_HERE = { ...SETTLE, stuckMs: 1000 };
const ROWS = 5000;

t.test('pdf of a long document: printed, not failed as a stuck page', async (t) => {
  const tn = await startTestNats(t);
  const rows = Array.from(
    { length: ROWS },
    (_, i) => `<tr><td>${i}</td><td style="background:#eee">row ${i} ${'lorem ipsum '.repeat(5)}</td></tr>`,
  ).join('');
  const html = `<!doctype html><html><body><table>${rows}</table></body></html>`;
  const server = createServer((_req, res) => {
    res.writeHead(200, { 'content-type': 'text/html' });
    res.end(html);
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  t.teardown(() => new Promise((r) => server.close(r)));
  const url = `http://127.0.0.1:${(server.address() as { port: number }).port}/`;

  const b = await testBrowser(t, 'chromium', { timeoutMs: PAGE_TIMEOUT_MS });
  const render = renderEndpoints({
    browser: b.managed(),
    slots: new Slots(1),
    stores: new Stores(tn.nc),
    pageTimeoutMs: PAGE_TIMEOUT_MS,
    settle: SETTLE_HERE,
  });
  const reply = await render.renderPdf({ url, store: OBJECT_STORES.results, objectName: 'long/pdf' }).catch((e: Error) => e);
  t.notOk(reply instanceof Error, reply instanceof Error ? reply.message : 'printed');
  if (reply instanceof Error) return;
  const stored = await (await new Objm(tn.nc).open(OBJECT_STORES.results)).getBlob('long/pdf');
  t.equal(Buffer.from(stored!).subarray(0, 5).toString(), '%PDF-');
  t.equal(stored!.length, reply.bytes);
  t.ok(reply.bytes > 500_000, `a long PDF (${reply.bytes} bytes)`);
});
