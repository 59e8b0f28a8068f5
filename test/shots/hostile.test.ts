import t from 'tap';
import { startFixtures, pixel } from './fixtures.ts';
import { failureOf, testBrowser, type TestBrowser } from './browsers.ts';
import type { ManagedBrowser } from '../../actors/browser-pool/pool.ts';

// Pages that attack the browser: the page is given up on, the browser stays, the next task works.
// One browser per browser id serves its three tests (the last asserts it survived all three); each
// failure names what ended it. An endless script's page is given a 4 s page timeout (the behaviour
// is "ends at its timeout", not the timeout's value); the memory hog keeps 10 s in Firefox (where
// it ends at the timeout) and has 20 s in Chromium, where it ends when the renderer reaches its
// heap limit (under a load of 18, later than 8 s); every other page has the default 30 s. Not run
// at once: the endless scripts keep a core busy each. The browsers run with a page heap of 256 MB
// (`config.shots.pageHeapMb`, 1024 by default): filling 1024 MB took a Chromium renderer 33-60 s
// under a load of 25 (40 MB/s on a quarter of a core); the behaviour tested is the same.
const PAGE_HEAP_MB = 256;
const ENDLESS_TIMEOUT_MS = 4000;
const HOG_TIMEOUT_MS: Record<string, number> = { chromium: 20000, firefox: 10000 };

for (const id of (process.env.ONLY_BROWSER ?? 'chromium,firefox').split(',')) {
  let browser: Promise<TestBrowser & { managed(): ManagedBrowser }> | undefined;
  const shared = () => (browser ??= testBrowser(t, id, { pageHeapMb: PAGE_HEAP_MB }));

  t.test(`${id}: an endless script fails as timeout; the same browser takes the next page`, async (t) => {
    const fx = await startFixtures(t);
    const b = await shared();
    for (const path of ['/loop/inline', '/loop/later']) {
      const err = await failureOf(b.shoot(fx.url(path), { viewport: { w: 400, h: 400 }, timeoutMs: ENDLESS_TIMEOUT_MS }));
      t.equal(err?.error, 'timeout', `${path}: ${err?.message}`);
      // while parsing: the navigation's deadline or the page timeout; after load also the watch
      t.ok(
        path === '/loop/inline' ? ['navigation deadline', 'page timeout'].includes(err?.by ?? '') : err?.by !== 'other',
        `${path}: ended by the page's limits (${err?.by})`,
      );
      const ok = await b.shoot(fx.url('/plain'), { viewport: { w: 400, h: 400 } });
      t.same(await pixel(ok.png, 5, 390), [0x33, 0x66, 0xcc], `after ${path}: the next page works`);
    }
    t.equal(b.managed().launches, 1, 'the browser survived');
  });

  t.test(`${id}: a script whose endless loop starts after the settle fails as timeout well before the page timeout`, async (t) => {
    const fx = await startFixtures(t);
    const b = await shared(); // the page timeout is 30 s
    const err = await failureOf(b.shoot(fx.url('/loop/settled'), { viewport: { w: 400, h: 400 }, options: { delay: 5 } }));
    t.equal(err?.error, 'timeout', err?.message ?? 'delivered');
    t.match(err?.message, /main thread stopped answering/, 'named as a stuck page, not the page timeout');
    t.equal(err?.by, 'stuck main thread', 'ended by the main-thread watch (asked every 3 s), not by the 30 s page timeout');
    const ok = await b.shoot(fx.url('/plain'), { viewport: { w: 400, h: 400 } });
    t.same(await pixel(ok.png, 5, 390), [0x33, 0x66, 0xcc], 'the next page works');
    t.equal(b.managed().launches, 1, 'the browser survived');
  });

  t.test(`${id}: a page that allocates without end is stopped at its heap limit; the browser survives`, async (t) => {
    const fx = await startFixtures(t);
    const b = await shared();
    const result = await b.shoot(fx.url('/memory'), { viewport: { w: 400, h: 400 }, timeoutMs: HOG_TIMEOUT_MS[id] ?? 10000 }).then(
      (s) => ({ shot: s, err: null }),
      async (e: unknown) => ({ shot: null, err: await failureOf(Promise.reject(e)) }),
    );
    if (id === 'chromium') {
      // V8 past --max-old-space-size kills the renderer: the page crashed
      t.equal(result.err?.error, 'render_failed', result.err?.message ?? 'delivered');
      t.match(result.err?.message, /crashed/, "ended by the renderer's heap limit, not by the page timeout");
    } else {
      // Gecko past javascript.options.mem.max throws "out of memory" into the script, which ends;
      // the page itself lives on and is captured
      t.ok(result.shot || result.err?.error === 'render_failed' || result.err?.error === 'timeout', JSON.stringify(result.err));
      t.ok(
        result.shot || result.err?.error === 'render_failed' || result.err?.by !== 'other',
        `given up by the page's limits if not captured: ${JSON.stringify(result.err)}`,
      );
    }
    const ok = await b.shoot(fx.url('/plain'), { viewport: { w: 400, h: 400 } });
    t.same(await pixel(ok.png, 5, 390), [0x33, 0x66, 0xcc], 'the next page works');
    t.equal(b.managed().launches, 1, 'one browser served the three tests and survived them');
    await b.managed().close(); // its tests are done: not kept open beside the next browser's
  });
}
