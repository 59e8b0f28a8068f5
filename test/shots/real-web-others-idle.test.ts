import t from 'tap';
import { startFixtures, pixel } from './fixtures.ts';
import { testBrowser } from './browsers.ts';

// The older Chromium majors and the phone: pages that never go network-idle (an open WebSocket, a
// fetch every 100 ms, an endless video) are captured after the capped settle time, as idle.test.ts
// checks in Chromium and Firefox (the long poll and the endless frame are in
// real-web-others.test.ts). The behaviour is "captured once the capped waits run out", not the
// caps' production values: the caps are shorter here (load 2 s, network 1 s) and the result says
// which cap ended the wait. The majors share nothing and mostly wait: run at once.
t.jobs = 3;
const settle = { loadCapMs: 2000, quietCapMs: 1000 };
// an open socket is no request in flight: that page goes quiet, the others end by the cap
const CAPPED: Record<string, boolean> = { '/idle/ws': false, '/idle/fetchloop': true, '/idle/video': true };
for (const id of (process.env.ONLY_BROWSER ?? 'chromium-143,chromium-131,mobile').split(',')) {
  t.test(`${id}: a WebSocket, a fetch loop and an endless video do not hold the shot`, async (t) => {
    const fx = await startFixtures(t);
    const b = await testBrowser(t, id, { settle });
    for (const path of ['/idle/ws', '/idle/fetchloop', '/idle/video']) {
      const shot = await b.shoot(fx.url(path), { viewport: { w: 400, h: 400 } });
      t.same(await pixel(shot.png, 5, 390), [0, 128, 128], `${path} captured`);
      t.equal(
        !!shot.extra.networkCapped,
        CAPPED[path],
        `${path}: the network wait ended ${CAPPED[path] ? 'by its cap' : 'quiet'} (${JSON.stringify(shot.extra)})`,
      );
    }
    t.ok((fx.hits.get('/tick') ?? 0) > 0, 'the fetch loop ran');
    t.ok((fx.hits.get('/ws') ?? 0) > 0, 'the socket opened');
    t.ok((fx.hits.get('/drip') ?? 0) > 0, 'the video was asked for');
  });
}
