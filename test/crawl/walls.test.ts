// Walls on saved example pages (test/fixtures/walls/): every signature proven on a page that looks like
// the real one, and the pages that merely mention a CAPTCHA or a login box are NOT walls.
import { readFileSync } from 'node:fs';
import t from 'tap';
import { SCAN_BYTES, detectWall, titleOf, visibleWords } from '../../shared/crawl/walls.ts';
import { WALL_SIGNATURES } from '../../shared/crawl/wall-signatures.ts';

const fixture = (name: string) => readFileSync(new URL(`../fixtures/walls/${name}`, import.meta.url));
const HTML = 'text/html; charset=utf-8';

interface Case {
  file: string;
  status: number;
  headers?: Record<string, string>;
  want: null | { error: string; signature: string; title?: string };
}

const CASES: Case[] = [
  {
    file: 'cloudflare-just-a-moment.html',
    status: 403,
    headers: { 'cf-mitigated': 'challenge', server: 'cloudflare' },
    want: { error: 'blocked', signature: 'cloudflare-challenge', title: 'Just a moment...' },
  },
  {
    file: 'cloudflare-attention-required.html',
    status: 403,
    want: { error: 'blocked', signature: 'cloudflare-block', title: 'Attention Required! | Cloudflare' },
  },
  { file: 'hcaptcha-challenge.html', status: 200, want: { error: 'blocked', signature: 'hcaptcha', title: 'One more step' } },
  { file: 'recaptcha-interstitial.html', status: 429, want: { error: 'blocked', signature: 'recaptcha' } },
  { file: 'turnstile.html', status: 200, want: { error: 'blocked', signature: 'turnstile' } },
  { file: 'datadome.html', status: 403, headers: { 'x-datadome': 'protected' }, want: { error: 'blocked', signature: 'datadome' } },
  { file: 'datadome.html', status: 403, want: { error: 'blocked', signature: 'datadome' } },
  { file: 'perimeterx.html', status: 403, want: { error: 'blocked', signature: 'perimeterx' } },
  { file: 'akamai-access-denied.html', status: 403, want: { error: 'blocked', signature: 'akamai', title: 'Access Denied' } },
  { file: 'login-form.html', status: 200, want: { error: 'login_required', signature: 'login-form', title: 'Sign in · Example Wiki' } },
  {
    file: 'http-auth-401.html',
    status: 401,
    headers: { 'www-authenticate': 'Basic realm="staff"' },
    want: { error: 'login_required', signature: 'http-auth' },
  },
  { file: 'http-auth-401.html', status: 401, want: { error: 'login_required', signature: 'http-auth' } },
  // not walls
  { file: 'plain-403.html', status: 403, want: null },
  { file: 'article-with-recaptcha-contact.html', status: 200, want: null },
  { file: 'article-with-login-box.html', status: 200, want: null },
];

for (const c of CASES) {
  t.test(`${c.file} (${c.status})`, async (t) => {
    const w = detectWall({ status: c.status, headers: c.headers ?? {}, body: fixture(c.file), contentType: HTML });
    if (!c.want) return t.equal(w, null, 'not a wall');
    t.ok(w, 'a wall');
    t.equal(w?.error, c.want.error);
    t.equal(w?.evidence.signature, c.want.signature);
    t.equal(w?.evidence.status, c.status);
    if (c.want.title) t.equal(w?.evidence.title, c.want.title);
    t.match(w?.message, /refunded/);
  });
}

t.test('every signature id has a saved example', async (t) => {
  const proven = new Set(CASES.filter((c) => c.want).map((c) => c.want!.signature));
  for (const s of WALL_SIGNATURES) t.ok(proven.has(s.id) || s.id === 'bot-check' || s.id === 'imperva' || s.id === 'aws-waf', s.id);
});

t.test('CAPTCHA markers on a refusal, thin pages, and the generic wording', async (t) => {
  const page = (title: string, extra = '') => `<html><head><title>${title}</title></head><body><p>Hello</p>${extra}</body></html>`;
  t.equal(detectWall({ status: 200, headers: {}, body: page('Verify you are human'), contentType: HTML })?.evidence.signature, 'bot-check');
  t.equal(
    detectWall({ status: 403, headers: {}, body: page('Pardon Our Interruption'), contentType: HTML })?.evidence.signature,
    'imperva',
  );
  t.equal(
    detectWall({
      status: 405,
      headers: {},
      body: page('x', '<script src="https://x.awswaf.com/x/challenge.js"></script>'),
      contentType: HTML,
    })?.evidence.signature,
    'aws-waf',
    'thin page',
  );
  t.equal(detectWall({ status: 200, headers: {}, body: page('Home'), contentType: HTML }), null);
  t.equal(detectWall({ status: 404, headers: {}, body: page('Not found'), contentType: HTML }), null, 'a 404 is not a wall');
});

t.test('non-HTML bodies are not scanned for markers', async (t) => {
  const pdfish = Buffer.from('%PDF-1.7\n g-recaptcha h-captcha <input type="password">');
  t.equal(detectWall({ status: 200, headers: {}, body: pdfish, contentType: 'application/pdf' }), null);
  t.equal(
    detectWall({ status: 403, headers: { 'cf-mitigated': 'challenge' }, body: pdfish, contentType: 'application/pdf' })?.error,
    'blocked',
  );
  t.equal(detectWall({ status: 401, headers: {}, body: Buffer.alloc(0), contentType: 'application/json' })?.error, 'login_required');
});

t.test('bounded scan', async (t) => {
  const big = `<html><head><title>Big</title></head><body>${'<p>word </p>'.repeat(SCAN_BYTES / 10)}<div class="h-captcha"></div></body></html>`;
  t.equal(detectWall({ status: 403, headers: {}, body: big, contentType: HTML }), null, 'a marker past the scanned bytes is not seen');
  const t0 = performance.now();
  detectWall({ status: 200, headers: {}, body: Buffer.alloc(10 * 1024 * 1024, 'a'), contentType: HTML });
  t.ok(performance.now() - t0 < 1000, 'a 10 MB body costs little');
});

t.test('helpers', async (t) => {
  t.equal(titleOf('<title>\n A &amp; B &#8212; C </title>'), 'A & B — C');
  t.equal(titleOf('<p>none</p>'), '');
  t.equal(visibleWords('<script>var a = "many words here"</script><style>p{}</style><p>two words</p><!-- three more words -->'), 2);
});

t.test('no page of the websitepro corpus is a wall (74 real-shaped pages: news, docs, forums, shops, ...)', async (t) => {
  const { gunzipSync } = await import('node:zlib');
  const dir = new URL('../fixtures/websitepro/', import.meta.url);
  const manifest = JSON.parse(readFileSync(new URL('manifest.json', dir), 'utf8')) as { file: string; headers?: Record<string, string> }[];
  let n = 0;
  for (const p of manifest) {
    let body = readFileSync(new URL(`pages/${p.file}`, dir));
    if (p.file.endsWith('.gz')) body = gunzipSync(body);
    const headers = p.headers ?? {};
    const w = detectWall({ status: 200, headers, body, contentType: headers['content-type'] ?? '' });
    t.equal(w, null, `${p.file} is not a wall${w ? ` (matched ${w.evidence.signature})` : ''}`);
    n++;
  }
  t.ok(n >= 50, `${n} pages checked`);
});
