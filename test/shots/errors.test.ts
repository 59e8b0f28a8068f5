import t from 'tap';
import { failingTargets, EXPECTED } from '../helpers/failing-targets.ts';
import { closedPort } from '../helpers/ports.ts';
import { failureOf, testBrowser, timed } from './browsers.ts';
import { startBrowserProxy } from '../../actors/browser-pool/proxy.ts';
import { testConfig, testLog } from '../helpers/nats.ts';

// `unreachable` only when the target could not be reached, in both browsers, directly and (as in
// production) through the guard proxy; a reached page that fails is never `unreachable`.
for (const id of ['chromium', 'firefox']) {
  t.test(`${id}: error codes through the guard proxy: dead target unreachable, reached pages never`, async (t) => {
    const on = await failingTargets(t);
    const proxy = await startBrowserProxy(testConfig(), testLog());
    t.teardown(() => proxy.stop());
    const b = await testBrowser(t, id, { proxy: proxy.address, timeoutMs: 10000 });
    const [err, ms] = await timed(() => failureOf(b.shoot(on.dead)));
    t.equal(err?.error, EXPECTED.dead, err?.message ?? 'delivered');
    t.ok(ms < 8000, `at once: ${ms} ms`);
    t.equal((await failureOf(b.shoot(on.download)))?.error, EXPECTED.download, 'download');
    t.equal((await failureOf(b.shoot(on.endless)))?.error, EXPECTED.endless, 'endless script');
    const ok = await b.shoot(on.dialog, { viewport: { w: 400, h: 400 } });
    t.equal(ok.extra.dialogs?.length, 1, 'an alerting page through the proxy is delivered');
  });

  t.test(`${id}: a dead target without the proxy is unreachable too`, async (t) => {
    const b = await testBrowser(t, id, { timeoutMs: 10000 });
    const err = await failureOf(b.shoot(`http://127.0.0.1:${await closedPort()}/`));
    t.equal(err?.error, EXPECTED.dead, err?.message ?? 'delivered');
  });
}
