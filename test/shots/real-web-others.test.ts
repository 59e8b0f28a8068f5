import t from 'tap';
import { startFixtures, pixel } from './fixtures.ts';
import { failureOf, testBrowser, timed } from './browsers.ts';

// The older Chromium majors (headless shell from @sparticuz/chromium) and the phone get the same
// page handling: a short pass over the pages that used to hold a shot until its timeout (30 s).
for (const id of ['chromium-143', 'chromium-131', 'mobile']) {
  t.test(`${id}: alert answered, download refused, endless frame capped`, async (t) => {
    const fx = await startFixtures(t);
    const b = await testBrowser(t, id);
    const [alert, ms] = await timed(() => b.shoot(fx.url('/dialog/load'), { viewport: { w: 400, h: 400 } }));
    t.ok(ms < 15000, `alert: ${ms} ms`);
    t.same(alert.extra.dialogs, [{ type: 'alert', message: 'hello from load' }]);
    t.same(await pixel(alert.png, 5, 5), [0, 160, 0]);
    t.equal((await failureOf(b.shoot(fx.url('/attachment'))))?.error, 'render_failed');
    const [frame, fms] = await timed(() => b.shoot(fx.url('/idle/frame'), { viewport: { w: 400, h: 400 } }));
    t.equal(frame.extra.loadCapped, true);
    t.ok(fms < 20000, `endless frame: ${fms} ms`);
  });
  // Known gap (issue 15, open): in CI a popup shot in chromium-143 once hung to the 30 s page limit.
  // Kept running and reported, not counted, until the headless-shell popup path is understood.
  t.test(`${id}: popup not captured, the opener is`, { todo: 'a popup shot in the older headless-shell majors hung once in CI (issue 15)' }, async (t) => {
    const fx = await startFixtures(t);
    const b = await testBrowser(t, id);
    const popup = await b.shoot(fx.url('/popup'), { viewport: { w: 400, h: 400 } });
    t.same(await pixel(popup.png, 5, 300), [0, 0, 160], 'the opener captured');
  });
}
