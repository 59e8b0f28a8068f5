import t from 'tap';
import { startFixtures, pixel } from './fixtures.ts';
import { testBrowser, timed } from './browsers.ts';
import { PageWatch } from '../../actors/browser-pool/settle.ts';

// The page timeout here is 30 s; an unanswered dialog used to hold a shot until it ran out. The
// bound asserted (15 s) is generous for a shared, loaded machine and still well short of it.
const BOUND_MS = 15000;

for (const id of ['chromium', 'firefox']) {
  t.test(`${id}: an alert while the page loads is dismissed, reported, and the page captured`, async (t) => {
    const fx = await startFixtures(t);
    const b = await testBrowser(t, id);
    const [shot, ms] = await timed(() => b.shoot(fx.url('/dialog/load'), { viewport: { w: 400, h: 400 } }));
    t.ok(ms < BOUND_MS, `took ${ms} ms`);
    t.same(await pixel(shot.png, 5, 390), [0, 160, 0], 'the page behind the alert');
    t.same(shot.extra.dialogs, [{ type: 'alert', message: 'hello from load' }]);
  });

  t.test(`${id}: alert, confirm, prompt while parsing and an alert after load are all answered`, async (t) => {
    const fx = await startFixtures(t);
    const b = await testBrowser(t, id);
    // the delay keeps the page open past the late alert, which turns the page green once answered
    const [shot, ms] = await timed(() => b.shoot(fx.url('/dialog/all'), { viewport: { w: 400, h: 400 }, options: { delay: 2 } }));
    t.ok(ms < BOUND_MS, `took ${ms} ms`);
    t.same(await pixel(shot.png, 5, 390), [0, 160, 0], 'the script after the late alert ran');
    t.same(shot.extra.dialogs?.map((d) => d.type), ['alert', 'confirm', 'prompt', 'alert']);
    t.same(shot.extra.dialogs?.map((d) => d.message), ['first', 'sure?', 'name?', 'later']);
  });

  t.test(`${id}: a beforeunload prompt does not keep the page from leaving`, async (t) => {
    const fx = await startFixtures(t);
    const b = await testBrowser(t, id);
    await b.managed().withContext(30000, async (ctx) => {
      const page = await ctx.newPage();
      const watch = new PageWatch(page);
      await page.goto(fx.url('/dialog/beforeunload'), { waitUntil: 'load' });
      // browsers only ask after a user gesture: give the page one, as a visitor's click would
      await page.click('p');
      const [, ms] = await timed(() => watch.race(page.goto(fx.url('/plain'), { waitUntil: 'load', timeout: 20000 })));
      t.ok(ms < BOUND_MS, `took ${ms} ms`);
      t.equal(new URL(page.url()).pathname, '/plain', 'left the page');
      t.same(watch.report.dialogs.map((d) => d.type), ['beforeunload']);
    });
  });
}
