import t from 'tap';
import { startFixtures, pixel } from './fixtures.ts';
import { failureOf, testBrowser } from './browsers.ts';
import { startBrowserProxy } from '../../actors/browser-pool/proxy.ts';
import { testConfig, testLog } from '../helpers/nats.ts';

// Meta refresh and script redirects go through the guard proxy like the first document: each hop
// is checked. Only 127.0.0.1 is allowed here; 127.0.0.2 stands for a private address. An allowed
// hop settles by the page's own events, no cap (`loadCapped`, `networkCapped`); a refused one is
// refused as it happens, so it fails as blocked_address even under a page timeout of 10 s. The
// two browsers share nothing: run at once.
t.jobs = 2;

for (const id of (process.env.ONLY_BROWSER ?? 'chromium,firefox').split(',')) {
  t.test(`${id}: meta refresh and script redirects through the guard proxy: allowed hops followed, a private one refused`, async (t) => {
    const fx = await startFixtures(t);
    const priv = await startFixtures(t, '127.0.0.2');
    const proxy = await startBrowserProxy(testConfig({ outbound: { allowCidrs: ['127.0.0.1/32'] } }), testLog());
    t.teardown(() => proxy.stop());
    const b = await testBrowser(t, id, { proxy: proxy.address });
    for (const kind of ['meta', 'js']) {
      const shot = await b.shoot(fx.url(`/redirect/${kind}-to?to=${encodeURIComponent(fx.url('/plain'))}`), {
        viewport: { w: 400, h: 400 },
      });
      t.notOk(shot.extra.loadCapped || shot.extra.networkCapped, `${kind} to an allowed page: settled by the page's own events, no cap`);
      t.equal(new URL(shot.extra.finalUrl!).pathname, '/plain', `${kind}: followed`);
      t.same(await pixel(shot.png, 5, 390), [0x33, 0x66, 0xcc], `${kind}: the destination captured`);

      const err = await failureOf(
        b.shoot(fx.url(`/redirect/${kind}-to?to=${encodeURIComponent(priv.url('/plain'))}`), {
          viewport: { w: 400, h: 400 },
          timeoutMs: 10000,
        }),
      );
      t.equal(err?.error, 'blocked_address', `${kind} to a private address: ${err?.message ?? 'delivered'}`);
      t.equal(err?.by, 'other', `${kind} to a private address: refused as it happened, not given up at a time limit`);
    }
    t.equal(priv.hits.get('/plain'), undefined, 'the private server never saw a request');
    t.equal(fx.hits.get('/plain'), 2, 'both allowed hops reached the page');
  });
}
