// A finished task's context is closed a moment later, not at once (its close would queue the next
// task's first browser calls behind it): when the next page of the browser is parsed, or after a
// second with no next page. Either way it is closed: nothing is left open.
import t from 'tap';
import type { BrowserContext } from 'puppeteer-core';
import { testBrowser } from './browsers.ts';
import { startFixtures } from './fixtures.ts';

const until = async (ok: () => boolean, ms: number) => {
  const end = Date.now() + ms;
  while (!ok() && Date.now() < end) await new Promise((r) => setTimeout(r, 50));
  return ok();
};

for (const id of ['chromium', 'firefox']) {
  t.test(`${id}: a task's context is closed after the task, with or without a next one`, async (t) => {
    const fx = await startFixtures(t);
    const b = await testBrowser(t, id);
    const mb = b.managed();
    // alone: the fallback closes it
    let first: BrowserContext | undefined;
    await mb.withPage(30000, async (page, ctx) => {
      first = ctx;
      await page.goto(fx.url('/plain'), { waitUntil: 'load' });
    });
    t.ok(await until(() => first!.closed, 10000), 'closed with no next task');
    // followed by a task: closed once the next page is parsed (makeNext), while that task runs
    let second: BrowserContext | undefined;
    await mb.withPage(30000, async (page, ctx) => {
      second = ctx;
      await page.goto(fx.url('/plain'), { waitUntil: 'load' });
    });
    let closedWhileNextRan = false;
    await mb.withPage(30000, async (page, ctx, _browser, ahead) => {
      t.not(ctx, second, 'the next task has a context of its own');
      await page.goto(fx.url('/plain'), { waitUntil: 'load' });
      ahead.makeNext(); // what openPage does once the page is parsed
      closedWhileNextRan = await until(() => second!.closed, 10000);
    });
    t.ok(closedWhileNextRan, 'the previous context closed while the next task ran');
  });
}
