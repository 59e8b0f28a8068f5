import t from 'tap';
import { startFixtures, pixel } from './fixtures.ts';
import { testBrowser } from './browsers.ts';

// the page is white in light mode and black under prefers-color-scheme: dark
for (const id of ['chromium', 'firefox']) {
  t.test(`${id}: prefers-color-scheme follows the requested scheme`, async (t) => {
    const fx = await startFixtures(t);
    const b = await testBrowser(t, id);
    const dark = await b.shoot(fx.url('/scheme'), { scheme: 'dark', viewport: { w: 800, h: 600 } });
    t.same(await pixel(dark.png, 400, 300), [0, 0, 0], 'dark page');
    const light = await b.shoot(fx.url('/scheme'), { scheme: 'light', viewport: { w: 800, h: 600 } });
    t.same(await pixel(light.png, 400, 300), [255, 255, 255], 'light page');
    // both all one colour: flagged, delivered
    t.equal(dark.extra.blank, true);
  });
}

t.test('mobile: phone viewport, DPR and user agent, whatever the request viewport', async (t) => {
  const fx = await startFixtures(t);
  const b = await testBrowser(t, 'mobile');
  const shot = await b.shoot(fx.url('/plain'), { viewport: { w: 1920, h: 1080 }, scheme: 'dark' });
  t.same([shot.width, shot.height], [Math.round(412 * 2.625), Math.round(915 * 2.625)]);
  const ua = fx.agents.get('/plain') ?? '';
  t.match(ua, /Android .* Chrome\/\d+.* Mobile/);
  t.match(ua, `Chrome/${b.version}.`);
});
