// websitepro `pdf` through the converter and the real browser-pool actor (Chromium): the same
// settle rule as shots (dialogs answered, downloads refused) and the same error codes: a page that
// was reached is never `unreachable`.
import t from 'tap';
import { startConverter } from '../converter/harness.ts';
import { startFixtures, closedPort } from './fixtures.ts';
import { testLog } from '../helpers/nats.ts';
import { timed } from './browsers.ts';

const PAGE_TIMEOUT_MS = 20000;

t.test('pdf: dialogs answered, endless scripts time out, downloads fail as render_failed, dead targets are unreachable', async (t) => {
  const c = await startConverter(t, { shots: { browsers: ['chromium'], concurrency: 2, pageTimeoutMs: PAGE_TIMEOUT_MS } });
  const { start } = await import('../../actors/browser-pool/index.ts');
  const pool = await start({ nc: c.nc, config: c.config, log: testLog(), instanceId: 'bp-pdf' });
  t.teardown(() => pool.stop());
  const fx = await startFixtures(t);

  // an alert used to hold the print until the page timeout, then fail it
  const [alert, ms] = await timed(() => c.runJob(fx.url('/dialog/load'), ['pdf'], 120000));
  t.equal(alert.pdf?.kind, 'done', JSON.stringify(alert.pdf));
  t.ok(ms < PAGE_TIMEOUT_MS - 5000, `printed in ${ms} ms, well before the ${PAGE_TIMEOUT_MS} ms page timeout`);
  t.equal(Buffer.from((await c.store.getBlob(alert.pdf!.kind === 'done' ? alert.pdf!.file!.name : ''))!).subarray(0, 5).toString(), '%PDF-');

  const loop = await c.runJob(fx.url('/loop/inline'), ['pdf'], 120000);
  t.match(loop.pdf, { kind: 'failed', error: 'timeout' }, 'reached but never finished: timeout, not unreachable');

  const download = await c.runJob(fx.url('/attachment'), ['pdf'], 120000);
  t.match(download.pdf, { kind: 'failed', error: 'render_failed' }, JSON.stringify(download.pdf));

  const dead = await c.runJob(`http://127.0.0.1:${await closedPort()}/`, ['pdf'], 120000);
  t.match(dead.pdf, { kind: 'failed', error: 'unreachable' }, JSON.stringify(dead.pdf));
});
