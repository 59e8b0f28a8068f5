// websitepro `pdf` printed by an older Chromium major (a pool whose only printer is a headless
// shell of @sparticuz/chromium; the phone cannot print), through the converter and the real
// browser-pool actor, as pdf.test.ts checks Debian's Chromium: dialogs answered, endless scripts
// `timeout`, downloads `render_failed`, dead targets `unreachable`, a reached page never.
import t from 'tap';
import { startConverter } from '../converter/harness.ts';
import { startFixtures, closedPort } from './fixtures.ts';
import { testLog } from '../helpers/nats.ts';
import { timed } from './browsers.ts';

const PAGE_TIMEOUT_MS = 20000;

for (const id of (process.env.ONLY_BROWSER ?? 'chromium-143,chromium-131').split(',')) {
  t.test(`${id}: pdf: an alert answered, an endless script timeout, a download render_failed, a dead target unreachable`, async (t) => {
    const c = await startConverter(t, { shots: { browsers: [id], concurrency: 2, pageTimeoutMs: PAGE_TIMEOUT_MS } });
    const { start } = await import('../../actors/browser-pool/index.ts');
    const pool = await start({ nc: c.nc, config: c.config, log: testLog(), instanceId: `bp-pdf-${id}` });
    t.teardown(() => pool.stop());
    const fx = await startFixtures(t);

    const [alert, ms] = await timed(() => c.runJob(fx.url('/dialog/load'), ['pdf'], 120000));
    t.equal(alert.pdf?.kind, 'done', JSON.stringify(alert.pdf));
    t.ok(ms < PAGE_TIMEOUT_MS - 5000, `printed in ${ms} ms, well before the ${PAGE_TIMEOUT_MS} ms page timeout`);
    const pdf = Buffer.from((await c.store.getBlob(alert.pdf!.kind === 'done' ? alert.pdf!.file!.name : ''))!);
    t.equal(pdf.subarray(0, 5).toString(), '%PDF-');
    // Chromium names its major in the PDF's producer: the shell printed it, not Debian's Chromium
    t.match(pdf.toString('latin1'), `Skia/PDF m${id.split('-')[1]}`, 'printed by this major');

    const loop = await c.runJob(fx.url('/loop/inline'), ['pdf'], 120000);
    t.match(loop.pdf, { kind: 'failed', error: 'timeout' }, 'reached but never finished: timeout, not unreachable');
    const download = await c.runJob(fx.url('/attachment'), ['pdf'], 120000);
    t.match(download.pdf, { kind: 'failed', error: 'render_failed' }, JSON.stringify(download.pdf));
    const dead = await c.runJob(`http://127.0.0.1:${await closedPort()}/`, ['pdf'], 120000);
    t.match(dead.pdf, { kind: 'failed', error: 'unreachable' }, JSON.stringify(dead.pdf));
  });
}
