import t from 'tap';
import { startFixtures, pixel } from './fixtures.ts';
import { testBrowser } from './browsers.ts';
import { openPage, PageWatch } from '../../actors/browser-pool/settle.ts';

// A window that raises a dialog before puppeteer has attached to it never became a 'popup' event
// in Chromium, and its dialog froze the opener (same renderer) until the page timeout. A click
// is a user gesture, so the popup blocker lets this one through (as it would a cookie-banner click
// that opens a window); the watch must still close it. A frozen opener fails the main-thread watch
// (asserted: it never did). The two browsers share nothing: run at once.
t.jobs = 2;
for (const id of (process.env.ONLY_BROWSER ?? 'chromium,firefox').split(',')) {
  t.test(`${id}: a popup that alerts at once is closed and the opener keeps running`, async (t) => {
    const fx = await startFixtures(t);
    const b = await testBrowser(t, id);
    await b.managed().withPage(30000, async (page, ctx) => {
      await page.setViewport({ width: 400, height: 400 });
      const watch = new PageWatch(page);
      await openPage(page, watch, fx.url('/popup-click'), { deadline: Date.now() + 20000 });
      await page.click('#open');
      const png = Buffer.from(await page.screenshot({ type: 'png' }));
      t.notOk(watch.failure, `the opener was not held: its main thread answered every check (${watch.failure?.message})`);
      t.same(await pixel(png, 5, 390), [0, 160, 0], 'the opener ran on past window.open');
      t.equal(watch.report.popupsClosed, 1, 'the popup was closed');
      t.same(watch.report.dialogs, [], "the popup's dialog is not the page's");
      t.equal((await ctx.pages()).length, 1, 'no window left open');
    });
  });
}
