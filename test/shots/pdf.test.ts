// websitepro `pdf` through the converter and the real browser-pool actor (Chromium): the same
// settle rule as shots (dialogs answered, downloads refused) and the same error codes: a page that
// was reached is never `unreachable`.
import t from 'tap';
import { startConverter } from '../converter/harness.ts';
import { failingTargets, EXPECTED } from '../helpers/failing-targets.ts';
import { testLog } from '../helpers/nats.ts';
import { timed } from './browsers.ts';

const PAGE_TIMEOUT_MS = 20000;

t.test('pdf: dialogs answered, endless scripts time out, downloads fail as render_failed, dead targets are unreachable', async (t) => {
  const c = await startConverter(t, { shots: { browsers: ['chromium'], concurrency: 2, pageTimeoutMs: PAGE_TIMEOUT_MS } });
  const { start } = await import('../../actors/browser-pool/index.ts');
  const pool = await start({ nc: c.nc, config: c.config, log: testLog(), instanceId: 'bp-pdf' });
  t.teardown(() => pool.stop());
  const on = await failingTargets(t);

  // an alert used to hold the print until the page timeout, then fail it
  const [alert, ms] = await timed(() => c.runJob(on.dialog, ['pdf'], 120000));
  t.equal(alert.pdf?.kind, 'done', JSON.stringify(alert.pdf));
  t.ok(ms < PAGE_TIMEOUT_MS - 5000, `printed in ${ms} ms, well before the ${PAGE_TIMEOUT_MS} ms page timeout`);
  t.equal(
    Buffer.from((await c.store.getBlob(alert.pdf!.kind === 'done' ? alert.pdf!.file!.name : ''))!)
      .subarray(0, 5)
      .toString(),
    '%PDF-',
  );

  const loop = await c.runJob(on.endless, ['pdf'], 120000);
  t.match(loop.pdf, { kind: 'failed', error: EXPECTED.endless }, 'reached but never finished: timeout, not unreachable');

  const download = await c.runJob(on.download, ['pdf'], 120000);
  t.match(download.pdf, { kind: 'failed', error: EXPECTED.download }, JSON.stringify(download.pdf));

  const dead = await c.runJob(on.dead, ['pdf'], 120000);
  t.match(dead.pdf, { kind: 'failed', error: EXPECTED.dead }, JSON.stringify(dead.pdf));
});
