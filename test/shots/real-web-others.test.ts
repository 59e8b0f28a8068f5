import t from 'tap';
import { startFixtures, pixel } from './fixtures.ts';
import { failureOf, testBrowser, timed } from './browsers.ts';
import { SETTLE } from '../../actors/browser-pool/settle.ts';

// The older Chromium majors (headless shell from @sparticuz/chromium) and the phone get the same
// page handling: a short pass over the pages that used to hold a shot until its timeout (30 s).
// One fixture server for the file and one browser per major for its three tests (a launch was most
// of a short test's time); the last test of each checks that the browser survived all three.
const fx = await startFixtures(t);
for (const id of ['chromium-143', 'chromium-131', 'mobile']) {
  let browser: ReturnType<typeof testBrowser> | undefined;
  const shared = () => (browser ??= testBrowser(t, id));
  t.test(`${id}: alert answered, download refused, endless frame capped`, async (t) => {
    const b = await shared();
    const [alert, ms] = await timed(() => b.shoot(fx.url('/dialog/load'), { viewport: { w: 400, h: 400 } }));
    t.ok(ms < 15000, `alert: ${ms} ms`);
    t.same(alert.extra.dialogs, [{ type: 'alert', message: 'hello from load' }]);
    t.same(await pixel(alert.png, 5, 5), [0, 160, 0]);
    t.equal((await failureOf(b.shoot(fx.url('/attachment'))))?.error, 'render_failed');
    const [frame, fms] = await timed(() => b.shoot(fx.url('/idle/frame'), { viewport: { w: 400, h: 400 } }));
    t.equal(frame.extra.loadCapped, true);
    t.ok(fms < 20000, `endless frame: ${fms} ms`);
  });
  t.test(`${id}: dialogs (also of a frame of another site), a long poll, pushState, redirects, an endless script`, async (t) => {
    const b = await shared();
    const [framed, ms] = await timed(() => b.shoot(fx.url('/xframe?frame=/frame/alert'), { viewport: { w: 400, h: 400 }, options: { delay: 2 } }));
    t.ok(ms < 15000, `frame of another site: ${ms} ms`);
    t.same(framed.extra.dialogs?.map((d) => d.type), ['alert', 'confirm'], 'the frame\'s dialogs answered and listed');
    const [all, ams] = await timed(() => b.shoot(fx.url('/dialog/all'), { viewport: { w: 400, h: 400 }, options: { delay: 2 } }));
    t.ok(ams < 15000, `alert, confirm, prompt and a later alert: ${ams} ms`);
    t.same(all.extra.dialogs?.map((d) => d.type), ['alert', 'confirm', 'prompt', 'alert']);
    for (const path of ['/idle/longpoll', '/pushstate']) {
      const [shot, ims] = await timed(() => b.shoot(fx.url(path), { viewport: { w: 400, h: 400 } }));
      t.ok(ims < 15000, `${path}: ${ims} ms`);
      t.same(await pixel(shot.png, 5, 390), [0, 128, 128], `${path} captured`);
    }
    for (const path of ['/redirect/meta', '/redirect/js']) {
      const [shot, rms] = await timed(() => b.shoot(fx.url(path), { viewport: { w: 400, h: 400 } }));
      t.ok(rms < 15000, `${path}: ${rms} ms`);
      t.same(await pixel(shot.png, 5, 390), [0x33, 0x66, 0xcc], `${path}: the destination captured`);
    }
    const [err, lms] = await timed(() => failureOf(b.shoot(fx.url('/loop/later'), { viewport: { w: 400, h: 400 } })));
    t.equal(err?.error, 'timeout', err?.message ?? 'delivered');
    const bound = SETTLE.loadCapMs + SETTLE.fontsCapMs + SETTLE.stuckMs + 10000;
    t.ok(lms < bound, `endless script: ${lms} ms (bound ${bound}, page timeout 30 s)`);
    const ok = await b.shoot(fx.url('/plain'), { viewport: { w: 400, h: 400 } });
    t.same(await pixel(ok.png, 5, 390), [0x33, 0x66, 0xcc], 'the next page works');
    t.equal(b.managed().launches, 1, 'the browser survived');
  });
  // The headless shell has no popup blocker: a popup that alerted froze the opener until the page
  // timeout, now and then (CI). With new windows refused (launchers/sparticuz-chromium.ts) no popup
  // page is even fetched, in every try; the phone is Chromium proper, whose blocker refuses them.
  t.test(`${id}: popups never open, the opener is captured`, async (t) => {
    const b = await shared();
    for (let i = 0; i < 5; i++) {
      const [popup, ms] = await timed(() => b.shoot(fx.url('/popup'), { viewport: { w: 400, h: 400 } }));
      t.ok(ms < 15000, `try ${i}: ${ms} ms`);
      t.same(await pixel(popup.png, 5, 300), [0, 0, 160], 'the opener captured');
      t.notOk(popup.extra.dialogs?.length, 'no dialog from a popup');
    }
    t.equal(fx.hits.get('/popup-alert'), undefined, 'window.open opened nothing');
    t.equal(fx.hits.get('/popup-target'), undefined, 'the target=_blank click opened nothing');
    t.equal(b.managed().launches, 1, 'one browser served the three tests');
    await b.managed().close(); // its tests are done: not kept open beside the next major's
  });
}
