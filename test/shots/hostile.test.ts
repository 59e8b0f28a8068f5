import t from 'tap';
import { startFixtures, pixel } from './fixtures.ts';
import { failureOf, testBrowser, timed } from './browsers.ts';

// Pages that attack the browser: the page is given up on, the browser stays, the next task works.
// The page timeout is 10 s here; the bound asserted is generous for a loaded machine.
const PAGE_TIMEOUT_MS = 10000;
const BOUND_MS = PAGE_TIMEOUT_MS + 12000;

for (const id of (process.env.ONLY_BROWSER ?? 'chromium,firefox').split(',')) {
  t.test(`${id}: an endless script fails as timeout; the same browser takes the next page`, async (t) => {
    const fx = await startFixtures(t);
    const b = await testBrowser(t, id, { timeoutMs: PAGE_TIMEOUT_MS });
    for (const path of ['/loop/inline', '/loop/later']) {
      const [err, ms] = await timed(() => failureOf(b.shoot(fx.url(path), { viewport: { w: 400, h: 400 } })));
      t.equal(err?.error, 'timeout', `${path}: ${err?.message}`);
      t.ok(ms < BOUND_MS, `${path}: took ${ms} ms`);
      const ok = await b.shoot(fx.url('/plain'), { viewport: { w: 400, h: 400 } });
      t.same(await pixel(ok.png, 5, 390), [0x33, 0x66, 0xcc], `after ${path}: the next page works`);
    }
    t.equal(b.managed().launches, 1, 'the browser survived');
  });

  t.test(`${id}: a script whose endless loop starts after the settle fails as timeout well before the page timeout`, async (t) => {
    const fx = await startFixtures(t);
    const b = await testBrowser(t, id); // the page timeout is 30 s
    const [err, ms] = await timed(() => failureOf(b.shoot(fx.url('/loop/settled'), { viewport: { w: 400, h: 400 }, options: { delay: 5 } })));
    t.equal(err?.error, 'timeout', err?.message ?? 'delivered');
    t.match(err?.message, /main thread stopped answering/, 'named as a stuck page, not the page timeout');
    t.ok(ms < 20000, `took ${ms} ms (the main thread is asked every 3 s)`);
    const ok = await b.shoot(fx.url('/plain'), { viewport: { w: 400, h: 400 } });
    t.same(await pixel(ok.png, 5, 390), [0x33, 0x66, 0xcc], 'the next page works');
    t.equal(b.managed().launches, 1, 'the browser survived');
  });

  t.test(`${id}: a page that allocates without end is stopped at its heap limit; the browser survives`, async (t) => {
    const fx = await startFixtures(t);
    const b = await testBrowser(t, id, { timeoutMs: PAGE_TIMEOUT_MS });
    const [result, ms] = await timed(() => b.shoot(fx.url('/memory'), { viewport: { w: 400, h: 400 } }).then((s) => ({ shot: s, err: null }), (e: unknown) => ({ shot: null, err: e as { error: string; message: string } })));
    t.ok(ms < BOUND_MS, `took ${ms} ms`);
    if (id === 'chromium') {
      // V8 past --max-old-space-size kills the renderer: the page crashed
      t.equal(result.err?.error, 'render_failed', result.err?.message ?? 'delivered');
    } else {
      // Gecko past javascript.options.mem.max throws "out of memory" into the script, which ends;
      // the page itself lives on and is captured
      t.ok(result.shot || result.err?.error === 'render_failed' || result.err?.error === 'timeout', JSON.stringify(result.err));
    }
    const ok = await b.shoot(fx.url('/plain'), { viewport: { w: 400, h: 400 } });
    t.same(await pixel(ok.png, 5, 390), [0x33, 0x66, 0xcc], 'the next page works');
    t.equal(b.managed().launches, 1, 'the browser survived');
  });
}
