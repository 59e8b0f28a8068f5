import t from 'tap';
import { startFixtures, pixel } from './fixtures.ts';
import { testBrowser } from './browsers.ts';
import { stripeColour } from './hostile-fixtures.ts';
import { FULL_PAGE_MAX_DEVICE_PX } from '../../actors/browser-pool/capture.ts';

for (const id of (process.env.ONLY_BROWSER ?? 'chromium,firefox').split(',')) {
  t.test(`${id}: a 30 000 px page with fullPage is cut at the documented height, painted to the end`, async (t) => {
    const fx = await startFixtures(t);
    const b = await testBrowser(t, id, { timeoutMs: 60000 });
    // the page timeout is 60 s here (a 16384 px PNG is slow to encode on a loaded machine); how long
    // the shot takes is bench/'s question, not this test's
    const shot = await b.shoot(fx.url('/very-tall'), { viewport: { w: 400, h: 700 }, options: { fullPage: true } });
    t.notOk(shot.extra.loadCapped || shot.extra.networkCapped, 'the load event ended the wait, no cap');
    t.same([shot.width, shot.height], [400, FULL_PAGE_MAX_DEVICE_PX]);
    t.equal(shot.extra.heightCapped, true);
    // every 1000 px stripe has its own colour: a repeated tile past a texture limit would show
    for (const k of [0, 8, 15, 16]) t.same(await pixel(shot.png, 200, k * 1000 + 300), stripeColour(k), `stripe ${k}`);
    const retina = await b.shoot(fx.url('/very-tall'), { viewport: { w: 400, h: 700 }, options: { fullPage: true, retina: true } });
    t.same([retina.width, retina.height], [800, FULL_PAGE_MAX_DEVICE_PX], 'the cap is in device pixels');
    t.same(await pixel(retina.png, 200, 2 * 8000 + 100), stripeColour(8));
  });
}
