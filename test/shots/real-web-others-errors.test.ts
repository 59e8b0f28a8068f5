import t from 'tap';
import { startFixtures, pixel, closedPort } from './fixtures.ts';
import { failureOf, testBrowser } from './browsers.ts';
import { startBrowserProxy } from '../../actors/browser-pool/proxy.ts';
import { testConfig, testLog } from '../helpers/nats.ts';

// The older Chromium majors and the phone, as redirect-guard.test.ts, errors.test.ts and
// options.test.ts check Chromium and Firefox: every meta refresh / script redirect hop goes through
// the guard proxy (only 127.0.0.1 is allowed here; 127.0.0.2 stands for a private address);
// `unreachable` only for a dead target, with and without the proxy; `timeout` for a target that
// accepts but never answers. An allowed hop settles by the page's own events, no cap; a refused hop
// and a dead target are refused as they happen, so they keep their code even under a page timeout
// of 10 s / 8 s; the target that never answers is given up at a page timeout of 5 s (the behaviour
// is "ends at its timeout", not the value). The majors share nothing: two tests run at once.
t.jobs = 2;
for (const id of (process.env.ONLY_BROWSER ?? 'chromium-143,chromium-131,mobile').split(',')) {
  t.test(`${id}: through the guard proxy: redirect hops checked, a dead target unreachable, reached pages never`, async (t) => {
    const fx = await startFixtures(t);
    const priv = await startFixtures(t, '127.0.0.2');
    const proxy = await startBrowserProxy(testConfig({ outbound: { allowCidrs: ['127.0.0.1/32'] } }), testLog());
    t.teardown(() => proxy.stop());
    const b = await testBrowser(t, id, { proxy: proxy.address }); // the page timeout is 30 s
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

    const deadUrl = `http://127.0.0.1:${await closedPort()}/`;
    const dead = await failureOf(b.shoot(deadUrl, { timeoutMs: 8000 }));
    t.equal(dead?.error, 'unreachable', dead?.message ?? 'delivered');
    t.equal(dead?.by, 'other', 'dead target: refused at once, not given up at a time limit');
    t.equal((await failureOf(b.shoot(fx.url('/attachment'))))?.error, 'render_failed', 'a download is reached: render_failed');
    const alert = await b.shoot(fx.url('/dialog/load'), { viewport: { w: 400, h: 400 } });
    t.equal(alert.extra.dialogs?.length, 1, 'an alerting page through the proxy is delivered');
  });

  t.test(
    `${id}: without the proxy: a dead target is unreachable, a target that never answers is a timeout; the browser works afterwards`,
    async (t) => {
      const fx = await startFixtures(t);
      const b = await testBrowser(t, id);
      const dead = await failureOf(b.shoot(`http://127.0.0.1:${await closedPort()}/`));
      t.equal(dead?.error, 'unreachable', dead?.message ?? 'delivered');
      const err = await failureOf(b.shoot(fx.url('/slow?ms=20000'), { timeoutMs: 5000 }));
      t.equal(err?.error, 'timeout', err?.message ?? 'delivered');
      t.ok(
        ['navigation deadline', 'page timeout'].includes(err?.by ?? ''),
        `given up by the page's time limit (${err?.by}), the target never answered`,
      );
      t.equal(fx.hits.get('/slow'), 1, 'the target was reached');
      const ok = await b.shoot(fx.url('/plain'), { viewport: { w: 400, h: 400 } });
      t.same(await pixel(ok.png, 5, 390), [0x33, 0x66, 0xcc], 'the next page works');
    },
  );
}
