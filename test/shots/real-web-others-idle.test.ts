import t from 'tap';
import { startFixtures, pixel } from './fixtures.ts';
import { testBrowser, timed } from './browsers.ts';
import { SETTLE } from '../../actors/browser-pool/settle.ts';

// The older Chromium majors and the phone: pages that never go network-idle (an open WebSocket, a
// fetch every 100 ms, an endless video) are captured after the capped settle time, as idle.test.ts
// checks in Chromium and Firefox (the long poll and the endless frame are in
// real-web-others.test.ts). The page timeout is 30 s; the bound is generous and well short of it.
for (const id of (process.env.ONLY_BROWSER ?? 'chromium-143,chromium-131,mobile').split(',')) {
  t.test(`${id}: a WebSocket, a fetch loop and an endless video do not hold the shot`, async (t) => {
    const fx = await startFixtures(t);
    const b = await testBrowser(t, id);
    for (const path of ['/idle/ws', '/idle/fetchloop', '/idle/video']) {
      const [shot, ms] = await timed(() => b.shoot(fx.url(path), { viewport: { w: 400, h: 400 } }));
      t.same(await pixel(shot.png, 5, 390), [0, 128, 128], `${path} captured`);
      // load cap + fonts cap + network cap is the most the rule waits after DOMContentLoaded
      const bound = SETTLE.loadCapMs + SETTLE.fontsCapMs + SETTLE.quietCapMs + 8000;
      t.ok(ms < bound, `${path}: took ${ms} ms (bound ${bound})`);
    }
    t.ok((fx.hits.get('/tick') ?? 0) > 0, 'the fetch loop ran');
    t.ok((fx.hits.get('/ws') ?? 0) > 0, 'the socket opened');
    t.ok((fx.hits.get('/drip') ?? 0) > 0, 'the video was asked for');
  });
}
