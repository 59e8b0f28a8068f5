// The one runner of page actions (shared/schemas/page-controls.ts Actions), used by shots and by
// websitepro's render endpoints: click, type, press, scroll and wait, in order, inside the page
// (the browser's own network namespace, behind the guard), at most ACTIONS_TOTAL_MS in all. A
// selector that matches nothing fails the result as `selector_not_found`, naming it; every
// selector's match count is kept for the result's `selectors`.
import type { ElementHandle, Page } from 'puppeteer-core';
import type { KeyInput } from 'puppeteer-core';
import { TaskFailure } from '../../shared/protocol/jobs.ts';
import { ACTIONS_TOTAL_MS, type PageAction, type SelectorCounts } from '../../shared/schemas/page-controls.ts';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

export function selectorNotFound(selector: string, counts?: SelectorCounts): TaskFailure {
  return new TaskFailure('selector_not_found', `no element matches the selector ${JSON.stringify(selector)}`, {
    selector,
    ...(counts ? { selectors: { ...counts, [selector]: 0 } } : {}),
  });
}

/** How many elements match `selector` now (a selector the browser refuses is the caller's mistake). */
export async function countMatches(page: Page, selector: string): Promise<number> {
  try {
    return await page.evaluate((s: string) => document.querySelectorAll(s).length, selector);
  } catch (e) {
    if (/not a valid selector|SyntaxError|is not valid/i.test(String((e as Error)?.message)))
      throw new TaskFailure('selector_not_found', `the browser does not accept the selector ${JSON.stringify(selector)}`, { selector });
    throw e;
  }
}

/** Counts and requires at least one match; the count is recorded in `counts`. */
export async function requireMatch(page: Page, selector: string, counts: SelectorCounts): Promise<void> {
  const n = await countMatches(page, selector);
  counts[selector] = n;
  if (!n) throw selectorNotFound(selector, counts);
}

/**
 * Waits until `selector` matches, `ms` at most; then its count is recorded. Polled from here (not
 * page.waitForSelector) so that it behaves the same over CDP and WebDriver BiDi.
 */
export async function waitForMatch(page: Page, selector: string, ms: number, counts: SelectorCounts): Promise<void> {
  const until = Date.now() + Math.max(0, ms);
  for (;;) {
    const n = await countMatches(page, selector);
    if (n) {
      counts[selector] = n;
      return;
    }
    if (Date.now() >= until) {
      counts[selector] = 0;
      throw selectorNotFound(selector, counts);
    }
    await sleep(Math.min(100, Math.max(10, until - Date.now())));
  }
}

/** Aims at most this many times at an element that moved away from under the press, then clicks it in the DOM. */
const CLICK_AIMS = 3;

/**
 * Clicks the first element `selector` matches (scrolled into view; a DOM click if it has no box to
 * aim at, or if it kept moving away from under the press).
 */
export async function clickOn(page: Page, selector: string, counts: SelectorCounts): Promise<void> {
  await requireMatch(page, selector, counts);
  const el = await page.$(selector);
  if (!el) throw selectorNotFound(selector, counts);
  try {
    for (let aim = 1; ; aim++) {
      await untilStill(el);
      // The box is read, then the press goes out: a page that inserts content above the element in
      // between (a timer of its own) moves it, and the press lands on what took its place. So the
      // press is let through only when it reaches the element (as Playwright's hit target check);
      // one that lands elsewhere is stopped before the page sees it, with its release and click,
      // and the click is aimed again. What follows a press that reached the element goes through
      // as it comes (a label's click on its input included). Session 31: waiting for a still box
      // alone missed 1 in 8 under load.
      const guard = await el.evaluateHandle((e) => {
        const g = { missed: false, remove: () => {} };
        const check = (ev: Event) => {
          if ((ev.type === 'pointerdown' || ev.type === 'mousedown') && !ev.composedPath().includes(e)) g.missed = true;
          if (!g.missed) return;
          ev.preventDefault();
          ev.stopImmediatePropagation();
        };
        const types = ['pointerdown', 'mousedown', 'pointerup', 'mouseup', 'click'];
        for (const type of types) window.addEventListener(type, check, true);
        g.remove = () => {
          for (const type of types) window.removeEventListener(type, check, true);
        };
        return g;
      });
      let missed = false;
      try {
        await el.click();
      } finally {
        // a click that navigated leaves no page to ask: it landed
        missed = await guard.evaluate((g) => (g.remove(), g.missed)).catch(() => false);
        await guard.dispose().catch(() => {});
      }
      if (!missed) return;
      if (aim >= CLICK_AIMS) throw new Error('the element kept moving away from under the press');
    }
  } catch {
    await el.evaluate((e) => (e as HTMLElement).click());
  } finally {
    await el.dispose().catch(() => {});
  }
}

/** Resolves once the element's box is the same over two animation frames (Playwright's "stable"), 1 s at most. */
function untilStill(el: ElementHandle): Promise<void> {
  return el
    .evaluate(
      (e) =>
        new Promise<void>((done) => {
          let last = '';
          let frames = 0;
          const look = () => {
            const r = e.getBoundingClientRect();
            const now = `${r.x},${r.y},${r.width},${r.height}`;
            if ((now === last && frames > 0) || ++frames > 30) return done();
            last = now;
            requestAnimationFrame(look);
          };
          requestAnimationFrame(look);
          setTimeout(done, 1000);
        }),
    )
    .catch(() => {});
}

/**
 * Runs `actions` in order; the page's own deadline and ACTIONS_TOTAL_MS bound them. Returns when
 * the last is done; throws TaskFailure (`selector_not_found`, `timeout`, `render_failed`).
 */
export async function runActions(
  page: Page,
  actions: PageAction[],
  opts: { deadline: number; counts: SelectorCounts; step?(s: string): void },
) {
  const { counts } = opts;
  const until = Math.min(opts.deadline, Date.now() + ACTIONS_TOTAL_MS);
  const left = () => until - Date.now();
  for (const [i, a] of actions.entries()) {
    if (left() <= 0) throw new TaskFailure('timeout', `the actions ran out of time at step ${i + 1} (${a.type})`);
    opts.step?.(`action ${i + 1} (${a.type})`);
    switch (a.type) {
      case 'click':
        await clickOn(page, a.selector, counts);
        break;
      case 'type': {
        await requireMatch(page, a.selector, counts);
        const el = await page.$(a.selector);
        if (!el) throw selectorNotFound(a.selector, counts);
        try {
          await el.focus();
          await page.keyboard.type(a.text);
        } finally {
          await el.dispose().catch(() => {});
        }
        break;
      }
      case 'press':
        try {
          await page.keyboard.press(a.key as KeyInput);
        } catch (e) {
          throw new TaskFailure(
            'render_failed',
            `action ${i + 1}: the key ${JSON.stringify(a.key)} could not be pressed (${String((e as Error).message).slice(0, 120)})`,
          );
        }
        break;
      case 'scroll':
        if (a.to === 'bottom')
          await page.evaluate(() => window.scrollTo(0, document.scrollingElement?.scrollHeight ?? document.body.scrollHeight));
        else {
          await requireMatch(page, a.to, counts);
          await page.evaluate((s: string) => document.querySelector(s)?.scrollIntoView({ block: 'start' }), a.to);
        }
        break;
      case 'wait':
        if ('selector' in a) await waitForMatch(page, a.selector, left(), counts);
        else await sleep(Math.min(a.ms, Math.max(0, left())));
        break;
    }
  }
}
