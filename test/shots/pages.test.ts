import t from 'tap';
import { startFixtures, pixel } from './fixtures.ts';
import { failureOf, sharedBrowsers } from './browsers.ts';

// Popups and downloads: pages that used to hold a shot until the page timeout (30 s). A popup left
// open held the opener's load event (asserted: not `loadCapped`); a download is refused from its
// answer, so it fails as render_failed even under a page timeout of 8 s (`timeout` if it waited).
// One browser per browser id serves the file, each test its own fixture server; two run at once.
t.jobs = 2;
const shared = sharedBrowsers(t);
for (const id of (process.env.ONLY_BROWSER ?? 'chromium,firefox').split(',')) {
  t.test(`${id}: window.open and target=_blank clicks: no window stays open, the original page is captured`, async (t) => {
    const fx = await startFixtures(t);
    const b = await shared(id);
    const shot = await b.shoot(fx.url('/popup'), { viewport: { w: 400, h: 400 } });
    t.notOk(shot.extra.loadCapped, 'the popups did not hold the page: its load event came');
    t.same(await pixel(shot.png, 5, 390), [0, 0, 160], 'the opener, not the popup');
    t.equal(new URL(shot.extra.finalUrl!).pathname, '/popup');
    // the popup's alert would block an opened window; blocked or closed, it never held the shot
    t.notOk(shot.extra.dialogs?.length, 'no dialog from a popup');
    if (id !== 'firefox') {
      // the settle's questions to the page are no user gesture (quiet-eval.ts; puppeteer's evaluate
      // over WebDriver BiDi still is one, so Firefox is not asked this)
      const quiet = await b.shoot(fx.url('/activation'), { viewport: { w: 400, h: 400 } });
      t.same(await pixel(quiet.png, 5, 390), [0, 160, 0], 'the page was never activated by our questions');
    }
  });

  t.test(`${id}: a download or a type a browser does not show fails as render_failed at once`, async (t) => {
    const fx = await startFixtures(t);
    const b = await shared(id);
    for (const [path, says] of [
      ['/attachment', /download/],
      ['/octet', /application\/octet-stream/],
      ['/zip', /application\/zip/],
    ] as const) {
      const err = await failureOf(b.shoot(fx.url(path), { viewport: { w: 400, h: 400 }, timeoutMs: 8000 }));
      t.equal(err?.error, 'render_failed', `${path}: ${err?.message}`);
      t.match(err?.message, says);
      t.equal(err?.by, 'other', `${path}: refused from its answer, not given up at a time limit`);
    }
    const ok = await b.shoot(fx.url('/plain'), { viewport: { w: 400, h: 400 } });
    t.equal(ok.width, 400, 'the browser works afterwards');
  });
}
