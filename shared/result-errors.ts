// Error codes a failed result may carry (a result's `error`, not an HTTP answer): the ones a caller's
// own options can cause, listed on the errors page beside the HTTP codes. Every failed result is
// refunded. The service pages (docs/websitepro.md, docs/shots.md) list every code of their service.
export interface ResultErrorDoc {
  services: string[];
  meaning: string;
  action: string;
}

export const RESULT_ERRORS: Record<string, ResultErrorDoc> = {
  selector_not_found: {
    services: ['websitepro', 'shots'],
    meaning:
      "A selector of the request (`targetSelectors`, `waitFor`, an action, `selector`, `click`) matched nothing on the page; the message names it, and the result's `selectors` says how many elements each selector matched.",
    action: 'Check the selector against the page as a browser renders it (or wait for it with `waitFor`); the result was refunded.',
  },
  credentials_unavailable: {
    services: ['websitepro'],
    meaning:
      "The request's `headers` or `cookies` were no longer available when the page was fetched (they are never stored; a task published again after a failure has none), so the page was not fetched without them.",
    action: 'Create the job again; the result was refunded.',
  },
};
