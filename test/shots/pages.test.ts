import t from 'tap';
import { startFixtures, pixel } from './fixtures.ts';
import { failureOf, testBrowser, timed } from './browsers.ts';

// Popups and downloads: pages that used to hold a shot until the page timeout (30 s here). Bounds asserted
// generously for a loaded machine, each well short of that timeout.
for (const id of (process.env.ONLY_BROWSER ?? 'chromium,firefox').split(',')) {
  t.test(`${id}: window.open and target=_blank clicks: no window stays open, the original page is captured`, async (t) => {
    const fx = await startFixtures(t);
    const b = await testBrowser(t, id);
    const [shot, ms] = await timed(() => b.shoot(fx.url('/popup'), { viewport: { w: 400, h: 400 } }));
    t.ok(ms < 15000, `took ${ms} ms`);
    t.same(await pixel(shot.png, 5, 390), [0, 0, 160], 'the opener, not the popup');
    t.equal(new URL(shot.extra.finalUrl!).pathname, '/popup');
    // the popup's alert would block an opened window; blocked or closed, it never held the shot
    t.notOk(shot.extra.dialogs?.length, 'no dialog from a popup');
  });

  t.test(`${id}: a download or a type a browser does not show fails as render_failed at once`, async (t) => {
    const fx = await startFixtures(t);
    const b = await testBrowser(t, id);
    for (const [path, says] of [['/attachment', /download/], ['/octet', /application\/octet-stream/], ['/zip', /application\/zip/]] as const) {
      const [err, ms] = await timed(() => failureOf(b.shoot(fx.url(path), { viewport: { w: 400, h: 400 } })));
      t.equal(err?.error, 'render_failed', `${path}: ${err?.message}`);
      t.match(err?.message, says);
      t.ok(ms < 10000, `${path}: took ${ms} ms`);
    }
    const ok = await b.shoot(fx.url('/plain'), { viewport: { w: 400, h: 400 } });
    t.equal(ok.width, 400, 'the browser works afterwards');
  });
}
