import t from 'tap';
import { startFixtures, pixel } from './fixtures.ts';
import { sharedBrowsers } from './browsers.ts';

// Redirects after load, pushState loops, late fonts, self-dark pages: pages that used to hold a
// shot until the page timeout (30 s here). Each shot asserts that it settled by the page's own
// events (the load event, a quiet network), no cap (`loadCapped`, `networkCapped`). One browser
// per browser id serves the file, each test its own fixture server; two tests run at once.
t.jobs = 2;
const shared = sharedBrowsers(t);
for (const id of (process.env.ONLY_BROWSER ?? 'chromium,firefox').split(',')) {
  t.test(`${id}: meta refresh and script redirects are followed; pushState loops do not hold the shot`, async (t) => {
    const fx = await startFixtures(t);
    const b = await shared(id);
    for (const path of ['/redirect/meta', '/redirect/js']) {
      const shot = await b.shoot(fx.url(path), { viewport: { w: 400, h: 400 } });
      t.notOk(shot.extra.loadCapped || shot.extra.networkCapped, `${path}: settled by the page's own events, no cap`);
      t.equal(new URL(shot.extra.finalUrl!).pathname, '/plain', `${path} followed`);
      t.same(await pixel(shot.png, 5, 390), [0x33, 0x66, 0xcc], `${path}: the destination captured`);
      t.equal(shot.extra.hops, 1, `${path}: one document followed`);
    }
    // a server's redirect is part of the first document's answer, not a document followed
    const served = await b.shoot(fx.url('/redirect?to=/plain'), { viewport: { w: 400, h: 400 } });
    t.equal(new URL(served.extra.finalUrl!).pathname, '/plain', '302 followed');
    t.equal(served.extra.hops, undefined, 'a 302 is no hop');
    const shot = await b.shoot(fx.url('/pushstate'), { viewport: { w: 400, h: 400 } });
    t.notOk(shot.extra.loadCapped || shot.extra.networkCapped, `pushState loop: settled by the page's own events, no cap`);
    t.same(await pixel(shot.png, 5, 390), [0, 128, 128]);
    // a burst of 60 history changes: Firefox refuses past 50 in 10 s (SecurityError), Chromium past 200
    const burst = await b.shoot(fx.url('/pushstate-burst'), { viewport: { w: 400, h: 400 } });
    t.same(
      await pixel(burst.png, 5, 390),
      id === 'firefox' ? [200, 0, 0] : [0, 160, 0],
      `${id}: 60 history changes at once ${id === 'firefox' ? 'refused past the limit' : 'allowed'}`,
    );
    // 300 at once: past each browser's limit (puppeteer's default flags switch Chromium's off; the
    // launchers keep it on, CHROMIUM_IGNORED_DEFAULTS)
    const flood = await b.shoot(fx.url('/pushstate-flood'), { viewport: { w: 400, h: 400 } });
    t.same(
      await pixel(flood.png, 5, 390),
      id === 'firefox' ? [200, 0, 0] : [0, 160, 0],
      `${id}: 300 history changes at once: ${id === 'firefox' ? 'refused past 50' : 'ignored past 200'}`,
    );
  });

  t.test(`${id}: a late web font is waited for; a page that is dark by itself is captured dark`, async (t) => {
    const fx = await startFixtures(t);
    const b = await shared(id);
    const shot = await b.shoot(fx.url('/late-font'), { viewport: { w: 800, h: 300 } });
    t.notOk(shot.extra.loadCapped || shot.extra.networkCapped, `late font: settled by the page's own events, no cap`);
    t.equal(fx.hits.get('/font.ttf'), 1, 'the font was fetched');
    // font-display: block hides the text until the font arrives (1.5 s after it is asked for)
    let dark = 0;
    for (let x = 10; x < 780; x += 7) if ((await pixel(shot.png, x, 80))[0] < 100) dark++;
    t.ok(dark > 10, `text painted in the late font (${dark} dark samples)`);
    const self = await b.shoot(fx.url('/self-dark'), { viewport: { w: 400, h: 400 }, scheme: 'light' });
    t.notOk(self.extra.loadCapped || self.extra.networkCapped, `self-dark: settled by the page's own events, no cap`);
    const [r, g, bl] = await pixel(self.png, 5, 390);
    t.ok(r < 60 && g < 60 && bl < 60, `dark canvas in a light browser: ${[r, g, bl]}`);
  });
}
