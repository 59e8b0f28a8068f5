import t from 'tap';
import { startFixtures, pixel } from './fixtures.ts';
import { failureOf, sharedBrowsers } from './browsers.ts';
import { PageTimeout } from '../../actors/browser-pool/pool.ts';

// One browser per browser id serves every test of the file (contexts are per shot; a launch was
// most of a short test's time); each test keeps its own fixture server (hit counts). The tests
// share nothing else and mostly wait on the browser: two run at once.
t.jobs = 2;
const shared = sharedBrowsers(t);

t.test('chromium: delay waits before the capture', async (t) => {
  const fx = await startFixtures(t);
  const b = await shared('chromium');
  // /delayed turns from red to green 1.8 s after load
  const now = await b.shoot(fx.url('/delayed'), { viewport: { w: 640, h: 480 } });
  t.same(await pixel(now.png, 10, 10), [255, 0, 0], 'no delay: still red');
  const t1 = Date.now();
  const later = await b.shoot(fx.url('/delayed'), { viewport: { w: 640, h: 480 }, options: { delay: 2 } });
  const slow = Date.now() - t1;
  t.same(await pixel(later.png, 10, 10), [0, 255, 0], 'delay 2: green');
  t.ok(slow >= 2000, `took ${slow} ms`);
});

t.test('chromium: a page that runs out of time names the step it was at', async (t) => {
  const fx = await startFixtures(t);
  const b = await shared('chromium');
  const late = await b
    .managed()
    .withPage(1500, async (_page, _ctx, _browser, hooks) => {
      hooks.step('a wait that never ends');
      await new Promise(() => {});
    })
    .then(
      () => null,
      (e: unknown) => e,
    );
  t.type(late, PageTimeout);
  t.equal((late as PageTimeout).step, 'a wait that never ends');
  t.equal((late as PageTimeout).message, 'page did not finish within 1500 ms (it was at: a wait that never ends)');
  // a shot names its own steps: a 5 s delay under a 4 s page timeout runs out in the delay (or,
  // on a machine so loaded that the page took the 4 s to settle, in an earlier step it names)
  const err = await failureOf(b.shoot(fx.url('/plain'), { viewport: { w: 400, h: 400 }, options: { delay: 5 }, timeoutMs: 4000 }));
  t.equal(err?.by, 'page timeout', err?.message ?? 'delivered');
  t.match(
    err?.message,
    /^page did not finish within 4000 ms \(it was at: (the 5 s delay|navigation|the load event|a quiet network|the main thread)/,
    'the step named',
  );
  t.comment(err?.message);
});

for (const id of ['chromium', 'firefox']) {
  t.test(`${id}: a cookie banner is hidden and reported`, async (t) => {
    const fx = await startFixtures(t);
    const b = await shared(id);
    const shown = await b.shoot(fx.url('/cookies'), { viewport: { w: 800, h: 600 } });
    t.same(await pixel(shown.png, 400, 550), [200, 0, 0], 'without the option the banner is on the shot');
    t.equal(shown.extra.cookieBanner, undefined);
    const hidden = await b.shoot(fx.url('/cookies'), { viewport: { w: 800, h: 600 }, options: { hideCookieBanner: true } });
    t.same(await pixel(hidden.png, 400, 550), [255, 255, 255], 'banner gone');
    t.match(hidden.extra.cookieBanner, { found: true, hidden: true }, JSON.stringify(hidden.extra.cookieBanner));
    const none = await b.shoot(fx.url('/plain'), { viewport: { w: 800, h: 600 }, options: { hideCookieBanner: true } });
    t.match(none.extra.cookieBanner, { found: false, hidden: false }, 'a page without a banner reports none');
  });
}

for (const id of ['chromium', 'firefox']) {
  t.test(`${id}: a consent manager known to autoconsent is answered with "reject"`, async (t) => {
    const fx = await startFixtures(t);
    const b = await shared(id);
    const shown = await b.shoot(fx.url('/cmp'), { viewport: { w: 800, h: 600 } });
    t.same(await pixel(shown.png, 400, 200), [0, 0, 200], 'without the option the banner is on the shot');
    const hidden = await b.shoot(fx.url('/cmp'), { viewport: { w: 800, h: 600 }, options: { hideCookieBanner: true } });
    t.same(await pixel(hidden.png, 400, 200), [255, 255, 255], 'banner gone');
    t.match(
      hidden.extra.cookieBanner,
      { found: true, hidden: true, method: 'autoconsent:Adroll' },
      JSON.stringify(hidden.extra.cookieBanner),
    );
    t.equal(fx.hits.get('/rejected'), 1, 'the reject button was clicked');
  });
}

for (const id of ['chromium', 'firefox']) {
  t.test(`${id}: a target that accepts but never answers is a timeout (not unreachable); the browser works afterwards`, async (t) => {
    const fx = await startFixtures(t);
    const b = await shared(id);
    // this shot's page timeout is 5 s (the behaviour is "gives up at the timeout"); the next page has the default
    const err = await failureOf(b.shoot(fx.url('/slow?ms=20000'), { timeoutMs: 5000 }));
    t.equal(err?.error, 'timeout', err?.message ?? 'delivered');
    t.ok(
      ['navigation deadline', 'page timeout'].includes(err?.by ?? ''),
      `given up by the page's time limit (${err?.by}), the target never answered`,
    );
    // the browser still works afterwards
    const ok = await b.shoot(fx.url('/plain'), { viewport: { w: 400, h: 400 } });
    t.equal(ok.width, 400);
  });
}
