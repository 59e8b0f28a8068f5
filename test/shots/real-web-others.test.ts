import t from 'tap';
import { startFixtures, pixel } from './fixtures.ts';
import { failureOf, sharedBrowsers } from './browsers.ts';

// The older Chromium majors (headless shell from @sparticuz/chromium) and the phone get the same
// page handling: a short pass over the pages that used to hold a shot until its timeout (30 s).
// One fixture server for the file and one browser per major for its three tests (a launch was most
// of a short test's time); the last test of each checks that the browser survived all three.
// The majors share nothing and mostly wait: they run at once (the tests are declared test by test,
// so the first three to run are one per major), each major's three in order. Each shot asserts
// what ended its wait: the load event (not `loadCapped`), a cap (`loadCapped`, `networkCapped`,
// shorter caps where the cap is the behaviour), or the main-thread watch.
t.jobs = 3;
const fx = await startFixtures(t);
const MAJORS = ['chromium-143', 'chromium-131', 'mobile'];
const CAPS = { loadCapMs: 2000, quietCapMs: 1000 };
const shared = sharedBrowsers(t);
/** Each major's tests in their order, whatever else runs beside them. */
const chains = new Map<string, Promise<unknown>>();
const inOrder = (id: string, fn: () => Promise<void>) => {
  const run = (chains.get(id) ?? Promise.resolve()).then(fn);
  chains.set(
    id,
    run.catch(() => {}),
  );
  return run;
};

for (const id of MAJORS) {
  t.test(`${id}: alert answered, download refused, endless frame capped`, (t) =>
    inOrder(id, async () => {
      const b = await shared(id);
      const alert = await b.shoot(fx.url('/dialog/load'), { viewport: { w: 400, h: 400 } });
      t.notOk(alert.extra.loadCapped, 'alert: answered, the load event came');
      t.same(alert.extra.dialogs, [{ type: 'alert', message: 'hello from load' }]);
      t.same(await pixel(alert.png, 5, 5), [0, 160, 0]);
      t.equal((await failureOf(b.shoot(fx.url('/attachment'))))?.error, 'render_failed');
      const frame = await b.shoot(fx.url('/idle/frame'), { viewport: { w: 400, h: 400 }, settle: CAPS });
      t.equal(frame.extra.loadCapped, true);
      t.equal(frame.extra.networkCapped, true, 'endless frame: captured when the network cap ran out');
    }),
  );
}
for (const id of MAJORS) {
  t.test(`${id}: dialogs (also of a frame of another site), a long poll, pushState, redirects, an endless script`, (t) =>
    inOrder(id, async () => {
      const b = await shared(id);
      const framed = await b.shoot(fx.url('/xframe?frame=/frame/alert'), { viewport: { w: 400, h: 400 }, options: { delay: 2 } });
      t.notOk(framed.extra.loadCapped, 'frame of another site: its alert answered, the load event came');
      t.same(
        framed.extra.dialogs?.map((d) => d.type),
        ['alert', 'confirm'],
        "the frame's dialogs answered and listed",
      );
      const all = await b.shoot(fx.url('/dialog/all'), { viewport: { w: 400, h: 400 }, options: { delay: 2 } });
      t.notOk(all.extra.loadCapped, 'alert, confirm, prompt and a later alert: the load event came');
      t.same(
        all.extra.dialogs?.map((d) => d.type),
        ['alert', 'confirm', 'prompt', 'alert'],
      );
      for (const [path, capped] of [
        ['/idle/longpoll', true],
        ['/pushstate', false],
      ] as const) {
        const shot = await b.shoot(fx.url(path), { viewport: { w: 400, h: 400 }, settle: CAPS });
        t.equal(!!shot.extra.networkCapped, capped, `${path}: ${capped ? 'captured when the network cap ran out' : 'no request held it'}`);
        t.same(await pixel(shot.png, 5, 390), [0, 128, 128], `${path} captured`);
      }
      // Chromium's own limit on history floods is on in every build (off, a 5 ms pushState loop held
      // the phone's answers past the stuck limit under load)
      const flood = await b.shoot(fx.url('/pushstate-flood'), { viewport: { w: 400, h: 400 } });
      t.same(await pixel(flood.png, 5, 390), [0, 160, 0], '300 history changes at once: ignored past 200');
      for (const path of ['/redirect/meta', '/redirect/js']) {
        const shot = await b.shoot(fx.url(path), { viewport: { w: 400, h: 400 } });
        t.equal(shot.extra.hops, 1, `${path}: followed as one document`);
        t.same(await pixel(shot.png, 5, 390), [0x33, 0x66, 0xcc], `${path}: the destination captured`);
      }
      const err = await failureOf(b.shoot(fx.url('/loop/later'), { viewport: { w: 400, h: 400 } }));
      t.equal(err?.error, 'timeout', err?.message ?? 'delivered');
      t.equal(err?.by, 'stuck main thread', 'endless script: ended by the stuck-thread check, not the 30 s page timeout');
      const ok = await b.shoot(fx.url('/plain'), { viewport: { w: 400, h: 400 } });
      t.same(await pixel(ok.png, 5, 390), [0x33, 0x66, 0xcc], 'the next page works');
      t.equal(b.managed().launches, 1, 'the browser survived');
    }),
  );
}
// The headless shell has no popup blocker: a popup that alerted froze the opener until the page
// timeout, now and then (CI). With new windows refused (launchers/sparticuz-chromium.ts) no popup
// page is even fetched, in every try; the phone is Chromium proper, whose blocker refuses them.
for (const id of MAJORS) {
  t.test(`${id}: popups never open, the opener is captured`, (t) =>
    inOrder(id, async () => {
      const b = await shared(id);
      for (let i = 0; i < 5; i++) {
        const popup = await b.shoot(fx.url('/popup'), { viewport: { w: 400, h: 400 } });
        t.notOk(popup.extra.loadCapped, `try ${i}: the opener was not held`);
        t.same(await pixel(popup.png, 5, 300), [0, 0, 160], 'the opener captured');
        t.notOk(popup.extra.dialogs?.length, 'no dialog from a popup');
      }
      // our questions during the settle (readyState, the load, the address) are no user gesture: when
      // they were, one now and then let this page's window.open past the phone's popup blocker
      const quiet = await b.shoot(fx.url('/activation'), { viewport: { w: 400, h: 400 } });
      t.same(await pixel(quiet.png, 5, 300), [0, 160, 0], 'the page was never activated by our questions');
      // the fixture server is the file's: a popup fetched by any major fails here
      t.equal(fx.hits.get('/popup-alert'), undefined, 'window.open opened nothing');
      t.equal(fx.hits.get('/popup-target'), undefined, 'the target=_blank click opened nothing');
      t.equal(b.managed().launches, 1, 'one browser served the three tests');
      await b.managed().close(); // its tests are done: not kept open beside the others
    }),
  );
}
