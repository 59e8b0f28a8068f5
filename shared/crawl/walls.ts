// Walls are not deliveries: a page that answers with a bot challenge, a CAPTCHA or a login wall is a
// failed, refunded result (`blocked` / `login_required`) with its evidence, in every websitepro job.
//
//   detectWall({status, headers, body, contentType}) → Wall | null     pure, no DOM: string scans of the
//                                                                       first 512 KB (it runs on the
//                                                                       converter's main thread)
// The signatures are data (wall-signatures.ts); this file only applies them, then looks for a login form
// where the content should be: a password input on a thin page (few visible words).
import { REFUSING_STATUSES, THIN_WORDS, WALL_SIGNATURES, type WallError, type WallSignature } from './wall-signatures.ts';

export interface WallEvidence {
  status: number;
  title: string;
  signature: string;
}

export interface Wall {
  error: WallError;
  message: string;
  evidence: WallEvidence;
}

export interface WallInput {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: Uint8Array | string;
  contentType?: string;
}

/** How much of a body is read: challenge and login pages are small. */
export const SCAN_BYTES = 512 * 1024;
const TITLE_MAX = 200;

const ENTITIES: Record<string, string> = { amp: '&', lt: '<', gt: '>', quot: '"', apos: "'", nbsp: ' ', hellip: '…', '#39': "'" };
function decodeEntities(s: string): string {
  return s.replace(/&(#x[0-9a-f]+|#\d+|[a-z]+\d*);/gi, (m, e: string) => {
    const k = e.toLowerCase();
    if (k.startsWith('#x')) return String.fromCodePoint(Number.parseInt(k.slice(2), 16) || 32);
    if (k.startsWith('#')) return String.fromCodePoint(Number.parseInt(k.slice(1), 10) || 32);
    return ENTITIES[k] ?? m;
  });
}

export function titleOf(html: string): string {
  const m = /<title[^>]*>([\s\S]*?)<\/title\s*>/i.exec(html);
  return m
    ? decodeEntities(m[1] ?? '')
        .replace(/\s+/g, ' ')
        .trim()
        .slice(0, TITLE_MAX)
    : '';
}

/** Visible words: scripts, styles, templates, comments and tags removed. */
export function visibleWords(html: string): number {
  const text = html
    .replace(/<!--[\s\S]*?-->/g, ' ')
    .replace(/<(script|style|noscript|template|svg)\b[\s\S]*?<\/\1\s*>/gi, ' ')
    .replace(/<[^>]*>/g, ' ');
  const words = decodeEntities(text).match(/[\p{L}\p{N}][\p{L}\p{N}'’-]*/gu);
  return words ? words.length : 0;
}

const PASSWORD_INPUT = /<input\b[^>]*\btype\s*=\s*["']?password\b/i;

function header(h: WallInput['headers'], name: string): string | undefined {
  const v = h[name] ?? h[name.toLowerCase()];
  return Array.isArray(v) ? v.join(', ') : v;
}

function looksLikeMarkup(contentType: string | undefined, text: string): boolean {
  if (!contentType) return /<(html|head|body|title|div|form|script)\b/i.test(text.slice(0, 4096));
  return /html|xml|text\/plain/i.test(contentType);
}

function matches(sig: WallSignature, input: WallInput, html: string, title: string): boolean {
  for (const [name, want] of Object.entries(sig.headers ?? {})) {
    const got = header(input.headers, name);
    if (got !== undefined && got.toLowerCase().includes(want.toLowerCase())) return true;
  }
  const t = title.toLowerCase();
  if (t && sig.titles?.some((x) => t.includes(x.toLowerCase()))) return true;
  return !!sig.markers?.some((m) => html.includes(m));
}

export function detectWall(input: WallInput): Wall | null {
  const raw = typeof input.body === 'string' ? input.body.slice(0, SCAN_BYTES) : input.body.subarray(0, SCAN_BYTES);
  const html = typeof raw === 'string' ? raw : new TextDecoder('utf-8', { fatal: false }).decode(raw);
  const markup = looksLikeMarkup(input.contentType, html);
  const title = markup ? titleOf(html) : '';
  const refusing = REFUSING_STATUSES.includes(input.status);
  let thinCache: boolean | undefined;
  const thin = () => {
    thinCache ??= markup && visibleWords(html) < THIN_WORDS;
    return thinCache;
  };
  const wall = (error: WallError, signature: string): Wall => ({
    error,
    message:
      error === 'login_required'
        ? `the page asks for a login instead of its content (${signature}); the result is refunded`
        : `the page answered with a bot challenge or CAPTCHA instead of its content (${signature}); the result is refunded`,
    evidence: { status: input.status, title, signature },
  });

  for (const sig of WALL_SIGNATURES) {
    const body = sig.markers?.length || sig.titles?.length;
    if (body && !markup && !sig.headers) continue;
    if (!matches(sig, input, markup ? html : '', title)) continue;
    const holds =
      sig.when === 'always' ||
      (sig.when === 'status' && refusing) ||
      (sig.when === 'thin' && thin()) ||
      (sig.when === 'either' && (refusing || thin()));
    if (holds) return wall(sig.error, sig.id);
  }
  if (input.status === 401) return wall('login_required', 'http-auth');
  if (markup && PASSWORD_INPUT.test(html) && thin()) return wall('login_required', 'login-form');
  return null;
}
