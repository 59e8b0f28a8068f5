import t from 'tap';
import { startFixtures, pixel } from './fixtures.ts';
import { testBrowser } from './browsers.ts';

// /tall: 3000 px of blocks, two lazy images (200 px each) and a block that only grows to 700 px
// once scrolled into view: 3000 + 400 + 700 = 4100 px when everything has loaded
for (const id of ['chromium', 'firefox']) {
  t.test(`${id}: full page covers the whole document with lazy content loaded`, async (t) => {
    const fx = await startFixtures(t);
    const b = await testBrowser(t, id);
    const shot = await b.shoot(fx.url('/tall'), { viewport: { w: 1000, h: 700 }, options: { fullPage: true } });
    t.notOk(shot.extra.loadCapped || shot.extra.networkCapped, "settled by the page's own events, no cap");
    t.equal(shot.width, 1000);
    t.equal(shot.height, 4100);
    t.equal(fx.hits.get('/img/a.png'), 1, 'first lazy image fetched');
    t.equal(fx.hits.get('/img/b.png'), 1, 'second lazy image fetched');
    t.same(await pixel(shot.png, 100, 2100), [0, 128, 0], 'first lazy image painted');
    t.same(await pixel(shot.png, 100, 3300), [128, 0, 128], 'second lazy image painted');
  });
}

t.test('chromium: retina full page doubles both dimensions', async (t) => {
  const fx = await startFixtures(t);
  const b = await testBrowser(t, 'chromium');
  const shot = await b.shoot(fx.url('/tall'), { viewport: { w: 800, h: 600 }, options: { fullPage: true, retina: true } });
  t.same([shot.width, shot.height], [1600, 8200]);
});
