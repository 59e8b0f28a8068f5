// Error codes a failed result may carry (a result's `error`, not an HTTP answer), listed on the errors
// page beside the HTTP codes (anchors `#result-<code>`). Every failed result is
// refunded. The service pages (docs/websitepro.md, docs/shots.md) list every code of their service.
export interface ResultErrorDoc {
  services: string[];
  meaning: string;
  action: string;
}

export const RESULT_ERRORS: Record<string, ResultErrorDoc> = {
  blocked: {
    services: ['websitepro'],
    meaning:
      'The page answered with a bot challenge or a CAPTCHA instead of its content (Cloudflare, DataDome, PerimeterX, Akamai, hCaptcha, reCAPTCHA, Turnstile, ...); `evidence` on the result says `{status, title, signature}`. A wall is not a delivery.',
    action: 'Nothing to retry on our side soon; the result was refunded.',
  },
  login_required: {
    services: ['websitepro'],
    meaning:
      'The page asks for a login instead of its content (HTTP 401, or a sign-in form where the content should be); `evidence` on the result says `{status, title, signature}`.',
    action: 'Send the session with `cookies` or `headers` if you have one; the result was refunded.',
  },
  http_error: {
    services: ['websitepro'],
    meaning: 'The target answered 4xx/5xx (the message has the status).',
    action: 'Check the URL; the result was refunded.',
  },
  blocked_address: {
    services: ['websitepro', 'shots'],
    meaning: 'The page, or a redirect, leads to a non-public address (or a non-http scheme).',
    action: 'Only public targets are served; the result was refunded.',
  },
  unreachable: {
    services: ['websitepro', 'shots'],
    meaning: 'The target does not resolve, refuses the connection, fails TLS, or the connection breaks.',
    action: 'Retry later; the result was refunded.',
  },
  timeout: {
    services: ['websitepro', 'shots'],
    meaning: 'The fetch or the render took longer than its limit.',
    action: 'Retry later, or raise `timeout`; the result was refunded.',
  },
  too_large: {
    services: ['websitepro'],
    meaning: 'The body is over the size limit (after decompression).',
    action: 'The result was refunded.',
  },
  too_many_redirects: {
    services: ['websitepro'],
    meaning: 'More redirects than the limit.',
    action: 'Ask for the final URL; the result was refunded.',
  },
  unsupported_content: {
    services: ['websitepro'],
    meaning: 'Nothing sensible can be made of this content type for this output.',
    action: 'Ask for another output; the result was refunded.',
  },
  conversion_failed: {
    services: ['websitepro'],
    meaning: 'That output could not be made; the other outputs of the job are delivered.',
    action: 'The result was refunded.',
  },
  conversion_timeout: {
    services: ['websitepro'],
    meaning: 'The conversion took longer than its limit.',
    action: 'The result was refunded.',
  },
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
