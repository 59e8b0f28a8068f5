import t from 'tap';
import { startFixtures, pixel } from './fixtures.ts';
import { testBrowser } from './browsers.ts';
import { stripeColour } from './hostile-fixtures.ts';
import { FULL_PAGE_MAX_DEVICE_PX } from '../../actors/browser-pool/capture.ts';
import { launcherFor } from '../../actors/browser-pool/launchers/registry.ts';

// The older Chromium majors and the phone: a 30 000 px page with fullPage, as tall.test.ts checks it
// in Chromium and Firefox. The cap is in device pixels: the phone's 2.625 device pixels per CSS
// pixel leave it 6241 CSS px (16383 device px, the largest whole number of CSS px under the cap).
for (const id of (process.env.ONLY_BROWSER ?? 'chromium-143,chromium-131,mobile').split(',')) {
  t.test(`${id}: a 30 000 px page with fullPage is cut at the documented height, painted to the end`, async (t) => {
    const fx = await startFixtures(t);
    const dpr = launcherFor(id).mobile?.deviceScaleFactor ?? 1;
    // the page timeout is 60 s here (a 16384 px PNG is slow to encode on a loaded machine); how long
    // the shot takes is bench/'s question, not this test's
    const b = await testBrowser(t, id, { timeoutMs: 60000 });
    const shot = await b.shoot(fx.url('/very-tall'), { viewport: { w: 400, h: 700 }, options: { fullPage: true } });
    t.notOk(shot.extra.loadCapped || shot.extra.networkCapped, 'the load event ended the wait, no cap');
    t.equal(shot.extra.heightCapped, true);
    t.equal(shot.height, Math.round(Math.floor(FULL_PAGE_MAX_DEVICE_PX / dpr) * dpr), 'cut at the cap');
    t.ok(shot.height <= FULL_PAGE_MAX_DEVICE_PX);
    // every 1000 px stripe has its own colour: a repeated tile past a texture limit would show
    const last = Math.floor(FULL_PAGE_MAX_DEVICE_PX / dpr / 1000);
    for (const k of [0, Math.floor(last / 2), last - 1, last]) {
      t.same(await pixel(shot.png, 10, Math.round((k * 1000 + 200) * dpr)), stripeColour(k), `stripe ${k}`);
    }
    if (!launcherFor(id).mobile) {
      // retina doubles the device pixels per CSS px (the phone has its own ratio instead)
      t.same([shot.width, shot.height], [400, FULL_PAGE_MAX_DEVICE_PX]);
      const retina = await b.shoot(fx.url('/very-tall'), { viewport: { w: 400, h: 700 }, options: { fullPage: true, retina: true } });
      t.same([retina.width, retina.height], [800, FULL_PAGE_MAX_DEVICE_PX], 'the cap is in device pixels');
      t.same(await pixel(retina.png, 200, 2 * 8000 + 100), stripeColour(8));
    }
  });
}
