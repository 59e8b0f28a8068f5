import t from 'tap';
import type { Page } from 'puppeteer-core';
import { startFixtures, pixel } from './fixtures.ts';
import { sharedBrowsers } from './browsers.ts';
import { openPage, PageWatch } from '../../actors/browser-pool/settle.ts';
import { launcherFor } from '../../actors/browser-pool/launchers/registry.ts';

// The older Chromium majors (headless shells of @sparticuz/chromium) and the phone (Debian's
// Chromium emulating a Pixel 8): a beforeunload prompt, popups a frame of another site opens, and
// popups a click lets through that alert at once, as dialogs.test.ts, cross-origin-frames.test.ts
// and popup-dialog.test.ts check them in Chromium and Firefox. The page timeout is 30 s; a dialog
// left unanswered held the page's load event (asserted: not `loadCapped`), a popup left open froze
// its opener (asserted: the main-thread watch never failed it). One browser per major serves the
// file, each test its own fixture server; two tests run at once.
t.jobs = 2;
const shared = sharedBrowsers(t);

/** The phone's screen for a page driven by hand (a shot sets it in capture.ts), else 400x400. */
async function screen(page: Page, id: string): Promise<void> {
  const phone = launcherFor(id).mobile;
  if (phone)
    await page.setViewport({ width: phone.w, height: phone.h, deviceScaleFactor: phone.deviceScaleFactor, isMobile: true, hasTouch: true });
  else await page.setViewport({ width: 400, height: 400 });
}

for (const id of (process.env.ONLY_BROWSER ?? 'chromium-143,chromium-131,mobile').split(',')) {
  // the shells refuse every new window (--block-new-web-contents, launchers/sparticuz-chromium.ts),
  // even one a click lets through; Debian's Chromium opens it and the watch closes it
  const opensClickedPopups = !id.startsWith('chromium-');

  t.test(`${id}: a beforeunload prompt does not keep the page from leaving; popups of a frame of another site stay shut`, async (t) => {
    const fx = await startFixtures(t);
    const b = await shared(id);
    await b.managed().withContext(30000, async (ctx) => {
      const page = await ctx.newPage();
      await screen(page, id);
      const watch = new PageWatch(page);
      await page.goto(fx.url('/dialog/beforeunload'), { waitUntil: 'load' });
      // browsers only ask after a user gesture: give the page one, as a visitor's click would
      await page.click('p');
      // an unanswered prompt keeps the page: the navigation would end in its timeout, not in /plain's answer
      const resp = await watch.race(page.goto(fx.url('/plain'), { waitUntil: 'load', timeout: 20000 }));
      t.equal(resp?.status(), 200, "the navigation ended in the next page's answer");
      t.equal(new URL(page.url()).pathname, '/plain', 'left the page');
      t.same(
        watch.report.dialogs.map((d) => d.type),
        ['beforeunload'],
      );
    });
    const shot = await b.shoot(fx.url('/xframe?frame=/frame/popup'), { viewport: { w: 400, h: 400 } });
    t.notOk(shot.extra.loadCapped, 'frame opening popups: they did not hold the page, its load event came');
    t.same(await pixel(shot.png, 5, 390), [0, 0, 160], 'the page, not a popup');
    t.same(await pixel(shot.png, 5, 5), [0, 160, 0], 'its frame');
    t.equal(new URL(shot.extra.finalUrl!).pathname, '/xframe');
    t.notOk(shot.extra.dialogs?.length, 'no dialog from a popup');
    t.equal(fx.hits.get('/frame/popup'), 1, 'the frame ran');
    t.equal(fx.hits.get('/popup-alert'), undefined, 'window.open in the frame opened nothing');
    t.equal(fx.hits.get('/popup-target'), undefined, 'the target=_blank click in the frame opened nothing');
  });

  t.test(
    `${id}: a popup a click lets through, alerting at once (from the page and from a frame of another site), never holds the opener`,
    async (t) => {
      const fx = await startFixtures(t);
      const b = await shared(id);
      await b.managed().withPage(30000, async (page, ctx) => {
        await screen(page, id);
        const watch = new PageWatch(page);
        await openPage(page, watch, fx.url('/popup-click'), { deadline: Date.now() + 20000 });
        await page.click('#open');
        const png = Buffer.from(await page.screenshot({ type: 'png' }));
        t.notOk(watch.failure, `page: the opener was not held, its main thread answered every check (${watch.failure?.message})`);
        t.same(await pixel(png, 5, 390), [0, 160, 0], 'page: the opener ran on past window.open');
        t.equal(
          watch.report.popupsClosed ?? 0,
          opensClickedPopups ? 1 : 0,
          opensClickedPopups ? 'page: the popup was closed' : 'page: the shell opened no window',
        );
        t.same(watch.report.dialogs, [], "page: the popup's dialog is not the page's");
        t.equal((await ctx.pages()).length, 1, 'page: no window left open');
      });
      await b.managed().withPage(30000, async (page, ctx) => {
        await screen(page, id);
        const watch = new PageWatch(page);
        await openPage(page, watch, fx.url('/xframe?frame=/frame/popup-click'), { deadline: Date.now() + 20000 });
        const frame = page.frames().find((f) => f !== page.mainFrame() && new URL(f.url()).pathname === '/frame/popup-click');
        t.ok(frame, 'the frame is there');
        await frame!.click('#open');
        await page.screenshot({ type: 'png' });
        const background = await frame!.evaluate(() => document.body.style.background);
        t.notOk(watch.failure, `frame: the opener was not held, its main thread answered every check (${watch.failure?.message})`);
        t.equal(background, 'rgb(0, 160, 0)', 'frame: it ran on past window.open');
        t.equal(
          watch.report.popupsClosed ?? 0,
          opensClickedPopups ? 1 : 0,
          opensClickedPopups ? 'frame: the popup was closed' : 'frame: the shell opened no window',
        );
        t.same(watch.report.dialogs, [], "frame: the popup's dialog is not the page's");
        t.equal((await ctx.pages()).length, 1, 'frame: no window left open');
      });
    },
  );
}
