import t from 'tap';
import { startFixtures, pixel } from './fixtures.ts';
import { failureOf, testBrowser } from './browsers.ts';

// The older Chromium majors and the phone: a script that never ends while the page is parsed, and a
// page that allocates without end, as hostile.test.ts checks them in Chromium and Firefox (an endless
// script after load is in real-web-others.test.ts). The page is given up on, the browser stays,
// the next task works. Each failure names what ended it. The endless script's page timeout is 4 s
// (the behaviour is "ends at its timeout", not the timeout's value), the memory hog's 20 s (it ends
// when the renderer reaches its heap limit, under load later than 8 s), the next pages' the default
// 30 s. Not run at once: the endless script keeps a core busy.
const ENDLESS_TIMEOUT_MS = 4000;
const HOG_TIMEOUT_MS = 20000;

for (const id of (process.env.ONLY_BROWSER ?? 'chromium-143,chromium-131,mobile').split(',')) {
  t.test(
    `${id}: an endless script while parsing fails as timeout, a memory hog is stopped; the same browser takes the next page`,
    async (t) => {
      const fx = await startFixtures(t);
      const b = await testBrowser(t, id, { pageHeapMb: 256 }); // config.shots.pageHeapMb: a 1024 MB default takes 33-60 s to fill under load
      const err = await failureOf(b.shoot(fx.url('/loop/inline'), { viewport: { w: 400, h: 400 }, timeoutMs: ENDLESS_TIMEOUT_MS }));
      t.equal(err?.error, 'timeout', `endless script: ${err?.message ?? 'delivered'}`);
      t.ok(['navigation deadline', 'page timeout'].includes(err?.by ?? ''), `endless script: ended by the page's time limit (${err?.by})`);
      const ok = await b.shoot(fx.url('/plain'), { viewport: { w: 400, h: 400 } });
      t.same(await pixel(ok.png, 5, 390), [0x33, 0x66, 0xcc], 'after the endless script: the next page works');

      // V8 past --max-old-space-size (chromiumHeapFlag, in every Chromium launcher) kills the
      // renderer: the page crashed
      const hog = await failureOf(b.shoot(fx.url('/memory'), { viewport: { w: 400, h: 400 }, timeoutMs: HOG_TIMEOUT_MS }));
      t.equal(hog?.error, 'render_failed', `memory hog: ${hog?.message ?? 'delivered'}`);
      t.match(hog?.message, /crashed/, "memory hog: ended by the renderer's heap limit, not by the page timeout");
      const next = await b.shoot(fx.url('/plain'), { viewport: { w: 400, h: 400 } });
      t.same(await pixel(next.png, 5, 390), [0x33, 0x66, 0xcc], 'after the memory hog: the next page works');
      t.equal(b.managed().launches, 1, 'the browser survived');
    },
  );
}
