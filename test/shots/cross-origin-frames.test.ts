import t from 'tap';
import { startFixtures, pixel } from './fixtures.ts';
import { sharedBrowsers } from './browsers.ts';
import { openPage, PageWatch } from '../../actors/browser-pool/settle.ts';

// A frame of another site (the page on 127.0.0.1, its frame on localhost, see /xframe in
// hostile-fixtures.ts) runs in another renderer process: an out-of-process frame in Chromium, a
// Fission process in Firefox. Its dialogs and popups must be handled like the page's own. The page
// timeout is 30 s here; an unanswered dialog held the page's load event (asserted: not `loadCapped`)
// and a popup left open froze its opener (asserted: the main-thread watch never failed it).
// One browser per browser id serves the file (contexts are per shot), each test its own fixture
// server (hit counts); two tests run at once.
t.jobs = 2;
const shared = sharedBrowsers(t);

for (const id of (process.env.ONLY_BROWSER ?? 'chromium,firefox').split(',')) {
  t.test(`${id}: dialogs of a frame of another site, while loading and later, are answered and listed`, async (t) => {
    const fx = await startFixtures(t);
    const b = await shared(id);
    // the delay keeps the page open past the frame's later confirm, after which the frame turns green
    const shot = await b.shoot(fx.url('/xframe?frame=/frame/alert'), { viewport: { w: 400, h: 400 }, options: { delay: 2 } });
    t.notOk(shot.extra.loadCapped, "the frame's alert did not hold the page: its load event came");
    t.same(shot.extra.dialogs, [
      { type: 'alert', message: 'from the frame' },
      { type: 'confirm', message: 'frame later?' },
    ]);
    t.same(await pixel(shot.png, 5, 5), [0, 160, 0], 'the frame ran on after its later dialog');
    t.same(await pixel(shot.png, 5, 390), [0, 0, 160], 'the page around it');
    t.equal(fx.hits.get('/frame/alert'), 1, 'the frame was fetched from the other site');
    t.notOk(shot.extra.popupsClosed, 'the frame is not taken for a window (BiDi calls it a page target)');
  });

  t.test(`${id}: popups a frame of another site opens while loading: none stays open, the page is captured`, async (t) => {
    const fx = await startFixtures(t);
    const b = await shared(id);
    const shot = await b.shoot(fx.url('/xframe?frame=/frame/popup'), { viewport: { w: 400, h: 400 } });
    t.notOk(shot.extra.loadCapped, "the frame's popups did not hold the page: its load event came");
    t.same(await pixel(shot.png, 5, 390), [0, 0, 160], 'the page, not a popup');
    t.same(await pixel(shot.png, 5, 5), [0, 160, 0], 'its frame');
    t.equal(new URL(shot.extra.finalUrl!).pathname, '/xframe');
    t.notOk(shot.extra.dialogs?.length, 'no dialog from a popup');
    t.equal(fx.hits.get('/frame/popup'), 1, 'the frame ran');
  });

  t.test(`${id}: a popup that a click in a frame of another site opens, alerting at once, is closed`, async (t) => {
    const fx = await startFixtures(t);
    const b = await shared(id);
    await b.managed().withPage(30000, async (page, ctx) => {
      await page.setViewport({ width: 400, height: 400 });
      const watch = new PageWatch(page);
      await openPage(page, watch, fx.url('/xframe?frame=/frame/popup-click'), { deadline: Date.now() + 20000 });
      const frame = page.frames().find((f) => f !== page.mainFrame() && new URL(f.url()).pathname === '/frame/popup-click');
      t.ok(frame, 'the frame is there');
      // a click is a user gesture: the popup blocker lets this window through
      await frame!.click('#open');
      await page.screenshot({ type: 'png' });
      const background = await frame!.evaluate(() => document.body.style.background);
      t.notOk(watch.failure, `the opener was not held: its main thread answered every check (${watch.failure?.message})`);
      t.equal(background, 'rgb(0, 160, 0)', 'the frame ran on past window.open');
      t.equal(watch.report.popupsClosed, 1, 'the popup was closed');
      t.same(watch.report.dialogs, [], "the popup's dialog is not the page's");
      t.equal((await ctx.pages()).length, 1, 'no window left open');
    });
  });
}

t.test('chromium: the frame of another site is out of process (what this file is about)', async (t) => {
  const fx = await startFixtures(t);
  const b = await shared('chromium');
  await b.managed().withPage(30000, async (page) => {
    await page.goto(fx.url('/xframe?frame=/plain'), { waitUntil: 'load' });
    const cdp = await page.createCDPSession();
    const { targetInfos } = await cdp.send('Target.getTargets');
    t.ok(
      targetInfos.some((ti) => ti.type === 'iframe' && ti.url.startsWith(`http://localhost:${fx.port}/plain`)),
      'an iframe target of its own',
    );
  });
});
