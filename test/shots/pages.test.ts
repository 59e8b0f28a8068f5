import t from 'tap';
import { startFixtures, pixel } from './fixtures.ts';
import { failureOf, testBrowser, timed } from './browsers.ts';
import { SETTLE } from '../../actors/browser-pool/settle.ts';

// Real-web pages that used to hold a shot until the page timeout (30 s here). Bounds asserted
// generously for a loaded machine, each well short of that timeout.
for (const id of (process.env.ONLY_BROWSER ?? 'chromium,firefox').split(',')) {
  t.test(`${id}: window.open and target=_blank clicks: no window stays open, the original page is captured`, async (t) => {
    const fx = await startFixtures(t);
    const b = await testBrowser(t, id);
    const [shot, ms] = await timed(() => b.shoot(fx.url('/popup'), { viewport: { w: 400, h: 400 } }));
    t.ok(ms < 15000, `took ${ms} ms`);
    t.same(await pixel(shot.png, 5, 390), [0, 0, 160], 'the opener, not the popup');
    t.equal(new URL(shot.extra.finalUrl!).pathname, '/popup');
    // the popup's alert would block an opened window; blocked or closed, it never held the shot
    t.notOk(shot.extra.dialogs?.length, 'no dialog from a popup');
  });

  t.test(`${id}: a download or a type a browser does not show fails as render_failed at once`, async (t) => {
    const fx = await startFixtures(t);
    const b = await testBrowser(t, id);
    for (const [path, says] of [['/attachment', /download/], ['/octet', /application\/octet-stream/], ['/zip', /application\/zip/]] as const) {
      const [err, ms] = await timed(() => failureOf(b.shoot(fx.url(path), { viewport: { w: 400, h: 400 } })));
      t.equal(err?.error, 'render_failed', `${path}: ${err?.message}`);
      t.match(err?.message, says);
      t.ok(ms < 10000, `${path}: took ${ms} ms`);
    }
    const ok = await b.shoot(fx.url('/plain'), { viewport: { w: 400, h: 400 } });
    t.equal(ok.width, 400, 'the browser works afterwards');
  });

  t.test(`${id}: pages that never go network-idle are captured after the capped settle time`, async (t) => {
    const fx = await startFixtures(t);
    const b = await testBrowser(t, id);
    for (const path of ['/idle/longpoll', '/idle/ws', '/idle/fetchloop', '/idle/video', '/idle/frame']) {
      const [shot, ms] = await timed(() => b.shoot(fx.url(path), { viewport: { w: 400, h: 400 } }));
      t.same(await pixel(shot.png, 5, 390), [0, 128, 128], `${path} captured`);
      // load cap + fonts cap + network cap is the most the rule waits after DOMContentLoaded
      const bound = SETTLE.loadCapMs + SETTLE.fontsCapMs + SETTLE.quietCapMs + 8000;
      t.ok(ms < bound, `${path}: took ${ms} ms (bound ${bound})`);
    }
    t.ok((fx.hits.get('/tick') ?? 0) > 0, 'the fetch loop ran');
    t.ok((fx.hits.get('/ws') ?? 0) > 0, 'the socket opened');
    const frame = await b.shoot(fx.url('/idle/frame'), { viewport: { w: 400, h: 400 } });
    t.equal(frame.extra.loadCapped, true, 'a frame that never ends: captured without its load event');
  });

  t.test(`${id}: meta refresh and script redirects are followed; pushState loops do not hold the shot`, async (t) => {
    const fx = await startFixtures(t);
    const b = await testBrowser(t, id);
    for (const path of ['/redirect/meta', '/redirect/js']) {
      const shot = await b.shoot(fx.url(path), { viewport: { w: 400, h: 400 } });
      t.equal(new URL(shot.extra.finalUrl!).pathname, '/plain', `${path} followed`);
      t.same(await pixel(shot.png, 5, 390), [0x33, 0x66, 0xcc], `${path}: the destination captured`);
    }
    const [shot, ms] = await timed(() => b.shoot(fx.url('/pushstate'), { viewport: { w: 400, h: 400 } }));
    t.ok(ms < 15000, `pushState loop: took ${ms} ms`);
    t.same(await pixel(shot.png, 5, 390), [0, 128, 128]);
  });

  t.test(`${id}: a late web font is waited for; a page that is dark by itself is captured dark`, async (t) => {
    const fx = await startFixtures(t);
    const b = await testBrowser(t, id);
    const shot = await b.shoot(fx.url('/late-font'), { viewport: { w: 800, h: 300 } });
    t.equal(fx.hits.get('/font.ttf'), 1, 'the font was fetched');
    // font-display: block hides the text until the font arrives (1.5 s after it is asked for)
    let dark = 0;
    for (let x = 10; x < 780; x += 7) if ((await pixel(shot.png, x, 80))[0] < 100) dark++;
    t.ok(dark > 10, `text painted in the late font (${dark} dark samples)`);
    const self = await b.shoot(fx.url('/self-dark'), { viewport: { w: 400, h: 400 }, scheme: 'light' });
    const [r, g, bl] = await pixel(self.png, 5, 390);
    t.ok(r < 60 && g < 60 && bl < 60, `dark canvas in a light browser: ${[r, g, bl]}`);
  });
}
