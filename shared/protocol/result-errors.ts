// Result error codes: a failed result's `error` (not an HTTP error; the job was accepted and charged,
// and a failed result is refunded). The errors page lists them under "Result errors"; the full
// websitepro table with its limits is in docs/websitepro.md.
export interface ResultErrorDoc {
  code: string;
  services: string;
  meaning: string;
}

export const RESULT_ERRORS: ResultErrorDoc[] = [
  {
    code: 'blocked',
    services: 'websitepro',
    meaning:
      'the page answered with a bot challenge or a CAPTCHA instead of its content (Cloudflare, DataDome, PerimeterX, Akamai, hCaptcha, reCAPTCHA, Turnstile, ...); `evidence` on the result says `{status, title, signature}`. Refunded: a wall is not a delivery',
  },
  {
    code: 'login_required',
    services: 'websitepro',
    meaning:
      'the page asks for a login instead of its content (HTTP 401, or a sign-in form where the content should be); `evidence` on the result says `{status, title, signature}`. Refunded',
  },
  { code: 'http_error', services: 'websitepro', meaning: 'the target answered 4xx/5xx (the message has the status)' },
  {
    code: 'blocked_address',
    services: 'websitepro, shots',
    meaning: 'the page, or a redirect, leads to a non-public address (or a non-http scheme)',
  },
  {
    code: 'unreachable',
    services: 'websitepro, shots',
    meaning: 'does not resolve, refuses the connection, TLS fails, the connection breaks',
  },
  { code: 'timeout', services: 'websitepro, shots', meaning: 'the fetch or the render took longer than its limit' },
  { code: 'too_large', services: 'websitepro', meaning: 'the body is over the size limit (after decompression)' },
  { code: 'too_many_redirects', services: 'websitepro', meaning: 'more redirects than the limit' },
  { code: 'unsupported_content', services: 'websitepro', meaning: 'nothing sensible can be made of this content type for this output' },
  {
    code: 'conversion_failed',
    services: 'websitepro',
    meaning: 'that output could not be made; the other outputs of the job are delivered',
  },
  { code: 'conversion_timeout', services: 'websitepro', meaning: 'the conversion took longer than its limit' },
];
