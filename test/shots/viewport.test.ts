import t from 'tap';
import sharp from 'sharp';
import { startFixtures } from './fixtures.ts';
import { testBrowser } from './browsers.ts';

for (const id of ['chromium', 'firefox']) {
  t.test(`${id}: the PNG has exactly the viewport size; retina doubles it`, async (t) => {
    const fx = await startFixtures(t);
    const b = await testBrowser(t, id);
    const one = await b.shoot(fx.url('/plain'), { viewport: { w: 1024, h: 640 } });
    const m1 = await sharp(one.png).metadata();
    t.equal(m1.format, 'png');
    t.same([m1.width, m1.height], [1024, 640]);
    const two = await b.shoot(fx.url('/plain'), { viewport: { w: 1024, h: 640 }, options: { retina: true } });
    const m2 = await sharp(two.png).metadata();
    t.same([m2.width, m2.height], [2048, 1280]);
    t.equal(one.extra.status, 200);
  });
}
