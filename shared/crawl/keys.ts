// The page key of a page-set job (session-29 contract, section 2): one readable, unique name per page,
// derived from the page's path. Result keys are `<pageKey>/<output>`, zip file names `<pageKey>.<ext>`.
//
//   pageKeyOf(url, {hostPrefix})   pure: the key a URL asks for (before clashes)
//   clashKey(base, n)              pure: the n-th spelling of a taken key (`base~2`, `base~3`, ...)
//   new PageKeys({hostPrefix})     hands out keys unique within one job (in memory; bounded by the job's limit)
//   resultKey(pageKey, output), zipName(pageKey, ext)
//
// The rules (each one a test in test/crawl/keys.test.ts):
// - `/` is `index`; a trailing slash is folded (`/docs/` is `docs`); empty segments and `.` are dropped;
// - the last segment loses a page extension (`.html`, `.htm`, `.php`, ...): `/docs/intro.html` is `docs/intro`;
// - segments are percent-decoded (kept raw when not valid UTF-8) and NFC-normalised: unicode stays readable;
// - characters a file name cannot hold on Linux, macOS or Windows (`\ : * ? " < > |`, control characters, a
//   decoded `/`) become `_`, whitespace runs become `-`, a segment of dots only becomes `_` (no `..` in a
//   zip), Windows device names (`con`, `nul`, `com1`, ...) get a trailing `_`, trailing dots/spaces go;
// - a directory segment (not the last) has its dots made `_`, so no directory is ever spelled like a file
//   of the zip (`a.md/` beside `a.md`);
// - a query adds `-<6 hex of sha256(query)>` to the last segment (`/search?q=x` is `search-1a2b3c`);
// - bounded: a segment keeps 60 characters, a key 160; a shortened key ends in `-<6 hex of the full path>`
//   so two long paths with one prefix stay apart;
// - with `hostPrefix` (a batch over several hosts), the key starts with the host (`example.com/docs`,
//   `example.com_8080/docs` for a port, `bücher.de/x` for an IDN);
// - clashes are found without regard to case (a zip unpacked on macOS or Windows would merge `About` and
//   `about`) and resolved with `~2`, `~3`, ...
import { createHash } from 'node:crypto';
import { domainToUnicode } from 'node:url';

export const MAX_SEGMENT = 60;
export const MAX_KEY = 160;

const PAGE_EXT = /\.(html?|xhtml|shtml|php\d?|aspx?|jsp|cfm|cgi)$/i;
const UNSAFE = /[\u0000-\u001f\u007f\\/:*?"<>|]/g;
const WINDOWS_DEVICE = /^(con|prn|aux|nul|com\d|lpt\d)(\..*)?$/i;

const hex6 = (s: string) => createHash('sha256').update(s).digest('hex').slice(0, 6);

function decodeSegment(raw: string): string {
  try {
    return decodeURIComponent(raw);
  } catch {
    return raw; // not valid percent-encoded UTF-8: keep the spelling (its `%` is a safe character)
  }
}

/** Cut a string to n code points (never in the middle of a surrogate pair). */
function cut(s: string, n: number): string {
  const cps = Array.from(s);
  return cps.length <= n ? s : cps.slice(0, n).join('');
}

function cleanSegment(raw: string, last: boolean): string {
  let s = decodeSegment(raw).normalize('NFC');
  s = s.replace(/\s+/g, '-').replace(UNSAFE, '_');
  if (!last) s = s.replace(/\./g, '_');
  if (/^\.+$/.test(s)) s = '_';
  s = s.replace(/[. ]+$/, '');
  if (s === '') s = '_';
  if (WINDOWS_DEVICE.test(s)) s = `${s}_`;
  return s;
}

export interface PageKeyOptions {
  /** Start the key with the host (a batch over several hosts). */
  hostPrefix?: boolean;
}

/** The key a URL asks for, before clashes are resolved. */
export function pageKeyOf(input: string | URL, opts: PageKeyOptions = {}): string {
  const url = typeof input === 'string' ? new URL(input) : input;
  const raw = url.pathname.split('/').filter((s) => s !== '' && s !== '.');
  if (raw.length) raw[raw.length - 1] = (raw[raw.length - 1] as string).replace(PAGE_EXT, '');
  const parts = raw.filter((s) => s !== '').map((s, i, a) => cut(cleanSegment(s, i === a.length - 1), MAX_SEGMENT));
  if (parts.length === 0) parts.push('index');
  const query = url.search.length > 1 ? url.search.slice(1) : '';
  if (query) parts[parts.length - 1] = `${parts[parts.length - 1]}-${hex6(query)}`;
  if (opts.hostPrefix) {
    // an IDN host reads as its unicode spelling (`bücher.de`, not `xn--bcher-kva.de`)
    const host = (domainToUnicode(url.hostname) || url.hostname).replace(/^\[|\]$/g, '').replace(/:/g, '_');
    parts.unshift(url.port ? `${host}_${url.port}` : host);
  }
  let key = parts.join('/');
  if (Array.from(key).length > MAX_KEY) {
    // keep a readable prefix, then the hash of the whole path and query so long neighbours stay apart
    key = `${cut(key, MAX_KEY - 7).replace(/[/. ]+$/, '')}-${hex6(`${url.host}${url.pathname}${url.search}`)}`;
  }
  return key;
}

/** The n-th spelling of a key (n >= 2). */
export function clashKey(base: string, n: number): string {
  return n < 2 ? base : `${base}~${n}`;
}

export const resultKey = (pageKey: string, output: string): string => `${pageKey}/${output}`;
export const zipName = (pageKey: string, ext: string): string => `${pageKey}.${ext.replace(/^\./, '')}`;

/** Hands out page keys unique within one job. Memory: one short string per page (the job's limit bounds it). */
export class PageKeys {
  private readonly taken = new Set<string>();
  private readonly opts: PageKeyOptions;
  constructor(opts: PageKeyOptions = {}) {
    this.opts = opts;
  }

  /** Mark a key as used (a key handed out before, e.g. when a coordinator resumes). */
  reserve(key: string): void {
    this.taken.add(key.toLowerCase());
  }

  has(key: string): boolean {
    return this.taken.has(key.toLowerCase());
  }

  /** The key for this URL: its own, or the first free `~n` spelling. */
  take(url: string | URL): string {
    const base = pageKeyOf(url, this.opts);
    for (let n = 1; ; n++) {
      const k = clashKey(base, n);
      if (!this.has(k)) {
        this.reserve(k);
        return k;
      }
    }
  }

  get size(): number {
    return this.taken.size;
  }
}

/**
 * Keys for pages in order, unique in the set (a clash gets `~2`, `~3`, …). `keys` holds the keys a
 * crawl handed out already and is added to.
 */
export function pageKeys(urls: URL[], hostPrefix: boolean, keys: PageKeys = new PageKeys({ hostPrefix })): string[] {
  return urls.map((u) => keys.take(u));
}

export interface PlannedPage {
  /** The URL fetched (parsed, fragment dropped). */
  url: string;
  /** The URL as the caller wrote it. */
  source: string;
  key: string;
}

/**
 * A batch's pages: the URLs parsed (by `parse`, which throws on a bad one), the same URL given
 * twice (after parsing, without its fragment) folded into the first, keys derived; several hosts
 * prefix the host. Deterministic: the supervisor derives the same pages from the stored request.
 */
export function planBatch(
  urls: string[],
  parse: (raw: string, index: number) => URL,
): { pages: PlannedPage[]; duplicates: number; hosts: string[] } {
  const seen = new Set<string>();
  const kept: { u: URL; source: string }[] = [];
  const hosts: string[] = [];
  const hostSeen = new Set<string>();
  urls.forEach((raw, i) => {
    const u = parse(raw, i);
    u.hash = '';
    if (seen.has(u.href)) return;
    seen.add(u.href);
    kept.push({ u, source: raw });
    if (!hostSeen.has(u.host)) {
      hostSeen.add(u.host);
      hosts.push(u.host);
    }
  });
  const keys = pageKeys(
    kept.map((k) => k.u),
    hosts.length > 1,
  );
  return { pages: kept.map((k, i) => ({ url: k.u.href, source: k.source, key: keys[i]! })), duplicates: urls.length - kept.length, hosts };
}
