import t from 'tap';
import { startFixtures, pixel } from './fixtures.ts';
import { failureOf, testBrowser, timed } from './browsers.ts';

// The older Chromium majors and the phone: a script that never ends while the page is parsed, and a
// page that allocates without end, as hostile.test.ts checks them in Chromium and Firefox (an endless
// script after load is in real-web-others.test.ts). The page is given up on, the browser stays,
// the next task works. The page timeout is 10 s here; the bound asserted is generous for a loaded
// machine.
const PAGE_TIMEOUT_MS = 10000;
const BOUND_MS = PAGE_TIMEOUT_MS + 12000;

for (const id of (process.env.ONLY_BROWSER ?? 'chromium-143,chromium-131,mobile').split(',')) {
  t.test(`${id}: an endless script while parsing fails as timeout, a memory hog is stopped; the same browser takes the next page`, async (t) => {
    const fx = await startFixtures(t);
    const b = await testBrowser(t, id, { timeoutMs: PAGE_TIMEOUT_MS });
    const [err, ms] = await timed(() => failureOf(b.shoot(fx.url('/loop/inline'), { viewport: { w: 400, h: 400 } })));
    t.equal(err?.error, 'timeout', `endless script: ${err?.message ?? 'delivered'}`);
    t.ok(ms < BOUND_MS, `endless script: took ${ms} ms`);
    const ok = await b.shoot(fx.url('/plain'), { viewport: { w: 400, h: 400 } });
    t.same(await pixel(ok.png, 5, 390), [0x33, 0x66, 0xcc], 'after the endless script: the next page works');

    // V8 past --max-old-space-size (CHROMIUM_BASE_FLAGS, in every Chromium launcher) kills the
    // renderer: the page crashed
    const [hog, hms] = await timed(() => failureOf(b.shoot(fx.url('/memory'), { viewport: { w: 400, h: 400 } })));
    t.equal(hog?.error, 'render_failed', `memory hog: ${hog?.message ?? 'delivered'}`);
    t.ok(hms < BOUND_MS, `memory hog: took ${hms} ms`);
    const next = await b.shoot(fx.url('/plain'), { viewport: { w: 400, h: 400 } });
    t.same(await pixel(next.png, 5, 390), [0x33, 0x66, 0xcc], 'after the memory hog: the next page works');
    t.equal(b.managed().launches, 1, 'the browser survived');
  });
}
