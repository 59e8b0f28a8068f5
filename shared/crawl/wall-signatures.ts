// The signatures of walls: pages that answer with a bot challenge, a CAPTCHA or a login instead of
// their content. Data only: walls.ts reads it, test/crawl/walls.test.ts proves each entry on a saved
// example (test/fixtures/walls/). First match wins, so the most specific come first.
//
// A signature matches when one of its `headers`, `titles` (case-insensitive substring of <title>) or
// `markers` (case-sensitive substring of the first 512 KB of the body) is present, AND its `when` holds:
//   always   the thing matched is only ever on a wall (a vendor's challenge script or header);
//   status   the answer's status is a refusal (401, 403, 429, 503);
//   thin     the page has little text (< THIN_WORDS visible words): a challenge or a login, not an article
//            that happens to hold a CAPTCHA in its contact form;
//   either   status or thin.
// `login_required` also matches any 401 (HTTP authentication) and a password input on a thin page.

export type WallError = 'blocked' | 'login_required';
export type WallWhen = 'always' | 'status' | 'thin' | 'either';

export interface WallSignature {
  id: string;
  error: WallError;
  when: WallWhen;
  headers?: Record<string, string>;
  titles?: string[];
  markers?: string[];
}

/** Fewer visible words than this is a thin page. */
export const THIN_WORDS = 150;
/** Statuses that refuse. */
export const REFUSING_STATUSES = [401, 403, 429, 503];

export const WALL_SIGNATURES: WallSignature[] = [
  // Cloudflare's managed/JS challenge ("Just a moment..."): the cf-mitigated header and the challenge's options object
  {
    id: 'cloudflare-challenge',
    error: 'blocked',
    when: 'always',
    headers: { 'cf-mitigated': 'challenge' },
    markers: ['window._cf_chl_opt', 'cf-browser-verification', 'cf_chl_prog'],
  },
  { id: 'cloudflare-challenge', error: 'blocked', when: 'either', titles: ['Just a moment...', 'Just a moment…'] },
  // Cloudflare's block page (WAF rule, "Sorry, you have been blocked")
  {
    id: 'cloudflare-block',
    error: 'blocked',
    when: 'either',
    titles: ['Attention Required! | Cloudflare'],
    markers: ['cf-error-details', 'Sorry, you have been blocked'],
  },
  // DataDome: the challenge loads from captcha-delivery.com
  { id: 'datadome', error: 'blocked', when: 'always', headers: { 'x-datadome': 'protected' } },
  { id: 'datadome', error: 'blocked', when: 'either', markers: ['captcha-delivery.com', 'dd.datadome'] },
  // PerimeterX / HUMAN: "Press & Hold"
  {
    id: 'perimeterx',
    error: 'blocked',
    when: 'either',
    titles: ['Access to this page has been denied'],
    markers: ['px-captcha', '_pxCaptcha', 'captcha.px-cdn.net'],
  },
  // Akamai: the edge's "Access Denied" with a reference number, and Bot Manager's interstitial
  {
    id: 'akamai',
    error: 'blocked',
    when: 'either',
    markers: ['errors.edgesuite.net', 'errors&#46;edgesuite&#46;net', 'bm-verify', '_sec/cp_challenge'],
  },
  // Imperva / Incapsula and Distil ("Pardon Our Interruption")
  {
    id: 'imperva',
    error: 'blocked',
    when: 'either',
    titles: ['Pardon Our Interruption'],
    markers: ['_Incapsula_Resource', 'Incapsula incident ID'],
  },
  // AWS WAF CAPTCHA
  { id: 'aws-waf', error: 'blocked', when: 'either', markers: ['awswaf.com', 'AwsWafIntegration'] },
  // CAPTCHA widgets: a wall only on a refusal or a thin page (a contact form may carry one)
  {
    id: 'turnstile',
    error: 'blocked',
    when: 'either',
    markers: ['cf-turnstile', 'challenges.cloudflare.com/turnstile'],
  },
  { id: 'hcaptcha', error: 'blocked', when: 'either', markers: ['h-captcha', 'hcaptcha.com/1/api.js'] },
  {
    id: 'recaptcha',
    error: 'blocked',
    when: 'either',
    markers: ['g-recaptcha', 'www.google.com/recaptcha/api.js', 'recaptcha/enterprise.js', 'www.recaptcha.net/recaptcha'],
  },
  // generic wording of a bot check
  {
    id: 'bot-check',
    error: 'blocked',
    when: 'either',
    titles: [
      'Are you a robot',
      'Are you a human',
      'Verify you are human',
      'Human Verification',
      'Bot Verification',
      'Security Check',
      'Checking your browser',
      'DDoS-Guard',
    ],
  },
  // logins: HTTP authentication, and a sign-in page where the content should be (login-form, in walls.ts)
  { id: 'http-auth', error: 'login_required', when: 'always', headers: { 'www-authenticate': '' } },
];
