import t from 'tap';
import { startFixtures } from './fixtures.ts';
import { testBrowser } from './browsers.ts';

// The pool makes the next task's context and page ahead of time: each task must still start with
// nothing of the one before it (cookies, storage), on a blank page.
for (const id of ['chromium', 'firefox']) {
  t.test(`${id}: a context made ahead is as fresh as one made on demand`, async (t) => {
    const fx = await startFixtures(t);
    const b = await testBrowser(t, id);
    const mb = b.managed();
    await mb.withPage(20000, async (page) => {
      t.equal(page.url(), 'about:blank');
      await page.goto(fx.url('/plain'));
      await page.evaluate(() => {
        document.cookie = 'seen=1; max-age=3600';
        localStorage.setItem('seen', '1');
      });
      t.equal(await page.evaluate(() => document.cookie), 'seen=1');
    });
    for (let i = 0; i < 2; i++) {
      await mb.withPage(20000, async (page, ctx) => {
        t.equal(page.url(), 'about:blank', 'a blank page');
        t.same(ctx.pages ? (await ctx.pages()).length : 1, 1, 'one page in its context');
        await page.goto(fx.url('/plain'));
        t.same(
          await page.evaluate(() => [document.cookie, localStorage.getItem('seen')]),
          ['', null],
          `task ${i + 2} sees nothing of task 1`,
        );
      });
    }
  });
}
