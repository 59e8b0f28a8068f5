import t from 'tap';
import { failingTargets, EXPECTED } from '../helpers/failing-targets.ts';
import { closedPort } from '../helpers/ports.ts';
import { failureOf, testBrowser } from './browsers.ts';
import { startBrowserProxy } from '../../actors/browser-pool/proxy.ts';
import { testConfig, testLog } from '../helpers/nats.ts';

// `unreachable` only when the target could not be reached, in both browsers, directly and (as in
// production) through the guard proxy; a reached page that fails is never `unreachable`. A dead
// target is refused at once: unreachable even under a page timeout of 8 s. The endless script's
// page timeout is 4 s (the behaviour is its code, not the timeout's value). Tests share nothing:
// two run at once.
t.jobs = 2;
for (const id of ['chromium', 'firefox']) {
  t.test(`${id}: error codes through the guard proxy: dead target unreachable, reached pages never`, async (t) => {
    const on = await failingTargets(t);
    const proxy = await startBrowserProxy(testConfig(), testLog());
    t.teardown(() => proxy.stop());
    const b = await testBrowser(t, id, { proxy: proxy.address, timeoutMs: 10000 });
    const err = await failureOf(b.shoot(on.dead, { timeoutMs: 8000 }));
    t.equal(err?.error, EXPECTED.dead, err?.message ?? 'delivered');
    t.equal(err?.by, 'other', 'refused at once, not given up at a time limit');
    t.equal((await failureOf(b.shoot(on.download)))?.error, EXPECTED.download, 'download');
    t.equal((await failureOf(b.shoot(on.endless, { timeoutMs: 4000 })))?.error, EXPECTED.endless, 'endless script');
    const ok = await b.shoot(on.dialog, { viewport: { w: 400, h: 400 } });
    t.equal(ok.extra.dialogs?.length, 1, 'an alerting page through the proxy is delivered');
  });

  t.test(`${id}: a dead target without the proxy is unreachable too`, async (t) => {
    const b = await testBrowser(t, id, { timeoutMs: 10000 });
    const err = await failureOf(b.shoot(`http://127.0.0.1:${await closedPort()}/`));
    t.equal(err?.error, EXPECTED.dead, err?.message ?? 'delivered');
  });
}
