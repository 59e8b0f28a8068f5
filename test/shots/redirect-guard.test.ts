import t from 'tap';
import { startFixtures, pixel } from './fixtures.ts';
import { failureOf, testBrowser, timed } from './browsers.ts';
import { startBrowserProxy } from '../../actors/browser-pool/proxy.ts';
import { testConfig, testLog } from '../helpers/nats.ts';

// Meta refresh and script redirects go through the guard proxy like the first document: each hop
// is checked. Only 127.0.0.1 is allowed here; 127.0.0.2 stands for a private address. The page
// timeout is 30 s; the bound asserted is generous for a loaded machine and well short of it.
const BOUND_MS = 15000;

for (const id of (process.env.ONLY_BROWSER ?? 'chromium,firefox').split(',')) {
  t.test(`${id}: meta refresh and script redirects through the guard proxy: allowed hops followed, a private one refused`, async (t) => {
    const fx = await startFixtures(t);
    const priv = await startFixtures(t, '127.0.0.2');
    const proxy = await startBrowserProxy(testConfig({ outbound: { allowCidrs: ['127.0.0.1/32'] } }), testLog());
    t.teardown(() => proxy.stop());
    const b = await testBrowser(t, id, { proxy: proxy.address });
    for (const kind of ['meta', 'js']) {
      const [shot, ms] = await timed(() => b.shoot(fx.url(`/redirect/${kind}-to?to=${encodeURIComponent(fx.url('/plain'))}`), { viewport: { w: 400, h: 400 } }));
      t.ok(ms < BOUND_MS, `${kind} to an allowed page: ${ms} ms`);
      t.equal(new URL(shot.extra.finalUrl!).pathname, '/plain', `${kind}: followed`);
      t.same(await pixel(shot.png, 5, 390), [0x33, 0x66, 0xcc], `${kind}: the destination captured`);

      const [err, bms] = await timed(() => failureOf(b.shoot(fx.url(`/redirect/${kind}-to?to=${encodeURIComponent(priv.url('/plain'))}`), { viewport: { w: 400, h: 400 } })));
      t.equal(err?.error, 'blocked_address', `${kind} to a private address: ${err?.message ?? 'delivered'}`);
      t.ok(bms < BOUND_MS, `${kind} to a private address: ${bms} ms`);
    }
    t.equal(priv.hits.get('/plain'), undefined, 'the private server never saw a request');
    t.equal(fx.hits.get('/plain'), 2, 'both allowed hops reached the page');
  });
}
