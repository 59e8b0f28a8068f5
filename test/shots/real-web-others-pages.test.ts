import t from 'tap';
import sharp from 'sharp';
import { startFixtures, pixel } from './fixtures.ts';
import { sharedBrowsers } from './browsers.ts';
import { launcherFor } from '../../actors/browser-pool/launchers/registry.ts';

// The older Chromium majors and the phone: lazy images below the fold with fullPage (as
// fullpage.test.ts), a late web font and a page dark by itself (as redirects.test.ts). The page
// timeout is 30 s; each shot asserts that it settled by the page's own events, no cap
// (`loadCapped`, `networkCapped`). One browser per major serves the file, each test its own
// fixture server (hit counts); two tests run at once.
// /tall: 3000 px of blocks, two lazy images (200 px each) and a block that only grows to 700 px
// once scrolled into view: 3000 + 400 + 700 = 4100 CSS px when everything has loaded.
t.jobs = 2;
const shared = sharedBrowsers(t);

for (const id of (process.env.ONLY_BROWSER ?? 'chromium-143,chromium-131,mobile').split(',')) {
  const phone = launcherFor(id).mobile;
  const dpr = phone?.deviceScaleFactor ?? 1;
  const px = (css: number) => Math.round(css * dpr);

  t.test(`${id}: full page covers the whole document with lazy content loaded`, async (t) => {
    const fx = await startFixtures(t);
    const b = await shared(id);
    const shot = await b.shoot(fx.url('/tall'), { viewport: { w: 1000, h: 700 }, options: { fullPage: true } });
    t.notOk(shot.extra.loadCapped || shot.extra.networkCapped, "settled by the page's own events, no cap");
    // the phone lays out a page without a viewport meta tag 980 px wide, as a phone does
    if (phone) t.ok(shot.width >= px(980), `phone layout width: ${shot.width}`);
    else t.equal(shot.width, 1000);
    t.ok(Math.abs(shot.height - 4100 * dpr) <= 1, `height ${shot.height} is 4100 CSS px`);
    t.equal(fx.hits.get('/img/a.png'), 1, 'first lazy image fetched');
    t.equal(fx.hits.get('/img/b.png'), 1, 'second lazy image fetched');
    t.same(await pixel(shot.png, px(100), px(2100)), [0, 128, 0], 'first lazy image painted');
    t.same(await pixel(shot.png, px(100), px(3300)), [128, 0, 128], 'second lazy image painted');
  });

  t.test(`${id}: a late web font is waited for; a page that is dark by itself is captured dark`, async (t) => {
    const fx = await startFixtures(t);
    const b = await shared(id);
    const shot = await b.shoot(fx.url('/late-font'), { viewport: { w: 800, h: 300 } });
    t.notOk(shot.extra.loadCapped || shot.extra.networkCapped, "late font: settled by the page's own events, no cap");
    t.equal(fx.hits.get('/font.ttf'), 1, 'the font was fetched');
    // font-display: block hides the text until the font arrives (1.5 s after it is asked for); the
    // text is in the top band of the shot (the phone shows the 980 px layout scaled to its screen)
    const { data, info } = await sharp(shot.png).removeAlpha().raw().toBuffer({ resolveWithObject: true });
    let dark = 0;
    for (let y = 10; y < Math.min(info.height, px(160)); y += px(20)) {
      for (let x = 10; x < info.width - 10; x += 7) if (data[(y * info.width + x) * info.channels]! < 100) dark++;
    }
    t.ok(dark > 10, `text painted in the late font (${dark} dark samples)`);
    const self = await b.shoot(fx.url('/self-dark'), { viewport: { w: 400, h: 400 }, scheme: 'light' });
    t.notOk(self.extra.loadCapped || self.extra.networkCapped, "self-dark: settled by the page's own events, no cap");
    const [r, g, bl] = await pixel(self.png, 5, 390);
    t.ok(r < 60 && g < 60 && bl < 60, `dark canvas in a light browser: ${[r, g, bl]}`);
  });
}
