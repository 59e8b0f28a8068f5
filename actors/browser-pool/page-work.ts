// The caller's work on a settled page before it is captured, printed or read (issue 43), in this
// order: wait for `waitFor`, run `actions`, click `click`, remove or hide elements, add `css`, run
// `js`. All of it runs inside the page, in the browser's own network namespace behind the guard.
// Every selector's match count is kept (the result's `selectors`); one that matches nothing fails
// the result as `selector_not_found`, except a selector to hide or remove (nothing to hide is fine).
import type { Page } from 'puppeteer-core';
import { TaskFailure } from '../../shared/protocol/jobs.ts';
import type { PageAction, SelectorCounts } from '../../shared/schemas/page-controls.ts';
import { clickOn, countMatches, requireMatch, runActions, waitForMatch } from './actions.ts';

export interface PageWork {
  waitFor?: string;
  actions?: PageAction[];
  click?: string;
  /** Elements hidden with display: none (shots' hideSelectors). */
  hideSelectors?: string[];
  /** Elements taken out of the document (websitepro's removeSelectors). */
  removeSelectors?: string[];
  css?: string;
  js?: string;
}

/** The longest a `waitFor` waits when the page's own deadline is further off. */
export const WAIT_FOR_MAX_MS = 30_000;

/** True when any work is asked for. */
export const hasPageWork = (w: PageWork) =>
  !!(w.waitFor || w.actions?.length || w.click || w.hideSelectors?.length || w.removeSelectors?.length || w.css || w.js);

export async function doPageWork(page: Page, w: PageWork, opts: { deadline: number; counts: SelectorCounts; step?(s: string): void }) {
  const { counts, deadline } = opts;
  const step = (s: string) => opts.step?.(s);
  // the capture itself needs some of the page's time
  const left = () => Math.max(0, deadline - Date.now() - 2000);
  if (w.waitFor) {
    step(`waiting for ${w.waitFor}`);
    await waitForMatch(page, w.waitFor, Math.min(WAIT_FOR_MAX_MS, left()), counts);
  }
  if (w.actions?.length) await runActions(page, w.actions, { deadline: deadline - 2000, counts, step });
  if (w.click) {
    step(`clicking ${w.click}`);
    await clickOn(page, w.click, counts);
  }
  for (const s of w.removeSelectors ?? []) {
    counts[s] = await countMatches(page, s);
    await page.evaluate((sel: string) => {
      for (const e of document.querySelectorAll(sel)) e.remove();
    }, s);
  }
  for (const s of w.hideSelectors ?? []) counts[s] = await countMatches(page, s);
  const sheet = [w.hideSelectors?.length ? `${w.hideSelectors.join(',\n')} { display: none !important; }` : '', w.css ?? '']
    .filter(Boolean)
    .join('\n');
  if (sheet) {
    step('adding the style sheet');
    // a <style> element added by script: page CSP may refuse addStyleTag's element, not this sheet
    await page.evaluate((css: string) => {
      const s = document.createElement('style');
      s.setAttribute('data-payloads', '');
      s.textContent = css;
      (document.head ?? document.documentElement).appendChild(s);
    }, sheet);
  }
  if (w.js) {
    step('running the script');
    const ms = Math.min(10_000, left());
    const outcome = await Promise.race([
      page.evaluate(`(async () => {\n${w.js}\n})()`).then(
        () => 'ok' as const,
        (e: unknown) => e as Error,
      ),
      new Promise<'late'>((r) => setTimeout(() => r('late'), ms).unref()),
    ]);
    if (outcome === 'late') throw new TaskFailure('timeout', `options.js did not finish within ${ms} ms`);
    if (outcome !== 'ok')
      throw new TaskFailure(
        'render_failed',
        `options.js threw: ${String(outcome?.message ?? outcome)
          .split('\n')[0]!
          .slice(0, 300)}`,
      );
  }
  // fonts or layout the work changed: one frame before the capture
  await page.evaluate(() => new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(() => r(null))))).catch(() => {});
}

/**
 * The first element `selector` matches, as a clip in document coordinates: its border box rounded
 * to whole CSS pixels (x and y down, the far edges up), at least 1 x 1.
 */
export async function elementClip(page: Page, selector: string, counts: SelectorCounts) {
  await requireMatch(page, selector, counts);
  const r = await page.evaluate((s: string) => {
    const e = document.querySelector(s);
    if (!e) return null;
    e.scrollIntoView({ block: 'nearest', inline: 'nearest' });
    const b = e.getBoundingClientRect();
    return {
      left: b.left + window.scrollX,
      top: b.top + window.scrollY,
      right: b.right + window.scrollX,
      bottom: b.bottom + window.scrollY,
    };
  }, selector);
  if (!r) throw new TaskFailure('selector_not_found', `no element matches the selector ${JSON.stringify(selector)}`, { selector });
  const x = Math.max(0, Math.round(r.left));
  const y = Math.max(0, Math.round(r.top));
  const width = Math.max(1, Math.round(r.right) - x);
  const height = Math.max(1, Math.round(r.bottom) - y);
  return { x, y, width, height };
}
