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
  // The headless shell has no popup blocker: a popup that alerted froze the opener until the page
  // timeout, now and then (CI). With new windows refused (launchers/sparticuz-chromium.ts) no popup
  // page is even fetched, in every try; the phone is Chromium proper, whose blocker refuses them.
  t.test(`${id}: popups never open, the opener is captured`, async (t) => {
    const fx = await startFixtures(t);
    const b = await testBrowser(t, id);
    for (let i = 0; i < 5; i++) {
      const [popup, ms] = await timed(() => b.shoot(fx.url('/popup'), { viewport: { w: 400, h: 400 } }));
      t.ok(ms < 15000, `try ${i}: ${ms} ms`);
      t.same(await pixel(popup.png, 5, 300), [0, 0, 160], 'the opener captured');
      t.notOk(popup.extra.dialogs?.length, 'no dialog from a popup');
    }
    t.equal(fx.hits.get('/popup-alert'), undefined, 'window.open opened nothing');
    t.equal(fx.hits.get('/popup-target'), undefined, 'the target=_blank click opened nothing');
  });
}
