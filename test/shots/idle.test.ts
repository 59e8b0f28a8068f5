import t from 'tap';
import { startFixtures, pixel } from './fixtures.ts';
import { testBrowser } from './browsers.ts';

// Pages that never go network-idle used to hold a shot until the page timeout (30 s here). The
// behaviour is "captured once the capped settle waits run out", not the caps' production values:
// the caps are shorter here (load 2 s, network 1 s) and the result says which cap ended the wait
// (`loadCapped`, `networkCapped`). The two browsers share nothing and mostly wait: run at once.
t.jobs = 2;
const settle = { loadCapMs: 2000, quietCapMs: 1000 };

for (const id of (process.env.ONLY_BROWSER ?? 'chromium,firefox').split(',')) {
  t.test(`${id}: pages that never go network-idle are captured after the capped settle time`, async (t) => {
    const fx = await startFixtures(t);
    const b = await testBrowser(t, id, { settle });
    // an open socket is no request in flight: that page goes quiet, the others end by the cap; in
    // Firefox the fetch loop's ticks come far enough apart for a quiet moment (seen: quiet), so
    // there the test asserts that the loop ran by the time the page was captured
    const capped: Record<string, boolean | undefined> = {
      '/idle/longpoll': true,
      '/idle/ws': false,
      '/idle/fetchloop': id === 'firefox' ? undefined : true,
      '/idle/video': true,
      '/idle/frame': true,
    };
    const shots = new Map<string, Awaited<ReturnType<typeof b.shoot>>>();
    for (const path of ['/idle/longpoll', '/idle/ws', '/idle/fetchloop', '/idle/video', '/idle/frame']) {
      const shot = await b.shoot(fx.url(path), { viewport: { w: 400, h: 400 } });
      shots.set(path, shot);
      t.same(await pixel(shot.png, 5, 390), [0, 128, 128], `${path} captured`);
      if (capped[path] === undefined)
        t.ok((fx.hits.get('/tick') ?? 0) > 0, `${path}: the loop ran while the page settled (${JSON.stringify(shot.extra)})`);
      else
        t.equal(
          !!shot.extra.networkCapped,
          capped[path],
          `${path}: the network wait ended ${capped[path] ? 'by its cap' : 'quiet'} (${JSON.stringify(shot.extra)})`,
        );
    }
    t.ok((fx.hits.get('/tick') ?? 0) > 0, 'the fetch loop ran');
    t.ok((fx.hits.get('/ws') ?? 0) > 0, 'the socket opened');
    t.equal(shots.get('/idle/frame')!.extra.loadCapped, true, 'a frame that never ends: captured without its load event');
  });
}
