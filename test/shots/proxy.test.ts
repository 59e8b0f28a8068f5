import t from 'tap';
import { startFixtures, pixel } from './fixtures.ts';
import { testBrowser } from './browsers.ts';
import { startBrowserProxy } from '../../actors/browser-pool/proxy.ts';
import { testConfig, testLog } from '../helpers/nats.ts';

// Only 127.0.0.1 is allowed here; 127.0.0.2 (also loopback, also served on Linux) stands for a
// private address the page tries to reach.
for (const id of ['chromium', 'firefox']) {
  t.test(`${id}: every request goes through the guard proxy; a redirect to a private address is blocked`, async (t) => {
    const fx = await startFixtures(t);
    const priv = await startFixtures(t, '127.0.0.2');
    const proxy = await startBrowserProxy(testConfig({ outbound: { allowCidrs: ['127.0.0.1/32'] } }), testLog());
    t.teardown(() => proxy.stop());
    const b = await testBrowser(t, id, { proxy: proxy.address });

    const ok = await b.shoot(fx.url('/plain'), { viewport: { w: 400, h: 400 } });
    t.same(await pixel(ok.png, 5, 390), [0x33, 0x66, 0xcc], 'allowed page rendered');

    const t0 = Date.now();
    const redirected = await b
      .shoot(fx.url(`/redirect?to=${encodeURIComponent(priv.url('/plain'))}`), { viewport: { w: 400, h: 400 } })
      .then(
        () => null,
        (e: unknown) => e as { error?: string },
      );
    t.equal(redirected?.error, 'blocked_address', 'redirect hop refused');
    t.ok(proxy.blockedSince(t0));
    const direct = await b.shoot(priv.url('/plain'), { viewport: { w: 400, h: 400 } }).then(
      () => null,
      (e: unknown) => e as { error?: string },
    );
    t.equal(direct?.error, 'blocked_address', 'loopback is not bypassed');
    t.equal(priv.hits.get('/plain'), undefined, 'the private server never saw a request');
  });
}
