// A question to the page that does not count as the user's gesture. puppeteer's evaluate marks every
// call as one (CDP `userGesture: true`), and a page that has had a gesture may open windows past
// Chromium's popup blocker (and go full screen, play sound, write the clipboard) for the next few
// seconds: the settle's readyState poll landing just before a DOMContentLoaded handler let the
// phone's `window.open` through (CI, session 22). Over CDP the question goes as `Runtime.evaluate`
// with no gesture, in the main frame's page world; over WebDriver BiDi (Firefox) puppeteer's own
// evaluate is used, which still activates the page (`userActivation: true`).
import type { CDPSession, Page } from 'puppeteer-core';

/** The page's CDP session, or null where the page is not driven over CDP. */
function cdpSession(page: Page): CDPSession | null {
  // `protocol` ('cdp' or 'webDriverBiDi') is on every puppeteer Browser, not in its public types
  if ((page.browser() as unknown as { protocol?: string }).protocol !== 'cdp') return null;
  const client = (page as unknown as { _client?: () => CDPSession })._client;
  return typeof client === 'function' ? client.call(page) : null;
}

/** The value of `expression` (awaited when it is a promise), evaluated without a user gesture. */
export async function quietEval<T>(page: Page, expression: string): Promise<T> {
  const client = cdpSession(page);
  if (!client) return page.evaluate(expression) as Promise<T>;
  const r = await client.send('Runtime.evaluate', { expression, returnByValue: true, awaitPromise: true, userGesture: false });
  if (r.exceptionDetails) throw new Error(r.exceptionDetails.exception?.description ?? r.exceptionDetails.text);
  return r.result.value as T;
}
