import t from 'tap';
import { startFixtures, pixel } from './fixtures.ts';
import { testBrowser, timed } from './browsers.ts';
import { SETTLE } from '../../actors/browser-pool/settle.ts';

// Pages that never go network-idle used to hold a shot until the page timeout (30 s here). Bounds asserted
// generously for a loaded machine, each well short of that timeout.
for (const id of (process.env.ONLY_BROWSER ?? 'chromium,firefox').split(',')) {
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
}
