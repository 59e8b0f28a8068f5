// Result keys of a page-set job (batch or crawl), from one function: `<pageKey>/<output>`, and the
// zip's file names `<pageKey>.<ext>` (docs/notes/session-29-contract.md section 2). A page key is
// read from the page's path: `index` for `/`, `docs/intro` for `/docs/intro.html`; a query adds
// `-<6 hex of its hash>`; a batch over several hosts prefixes the host; a clash adds `~2`, `~3`
// in the order the pages were given (or found). Keys only use [A-Za-z0-9._~-] and `/`, never an
// empty, `.` or `..` segment: safe as zip paths and as object names.
import { createHash } from 'node:crypto';

/** Extensions that name a page, not its content: dropped from the key (`intro.html` → `intro`). */
const PAGE_EXTENSIONS = /\.(html?|xhtml|php\d?|aspx?|jsp|shtml|cgi)$/i;
/** The longest page key before its query hash and clash suffix; a longer one is cut and hashed. */
const MAX_KEY = 160;

const hex6 = (s: string) => createHash('sha256').update(s).digest('hex').slice(0, 6);

function cleanSegment(s: string): string {
  let d = s;
  try {
    d = decodeURIComponent(s);
  } catch {
    /* keep it encoded */
  }
  const c = d.replace(/[^A-Za-z0-9._-]+/g, '_').replace(/^\.+$/, '_');
  return c || '_';
}

/** The host part of a key: the host name, and the port when it is not the scheme's default. */
export function hostKey(u: URL): string {
  return cleanSegment(u.hostname.replace(/^\[|\]$/g, '')) + (u.port ? `_${u.port}` : '');
}

/** The page key of one URL, before clashes are resolved. */
export function basePageKey(u: URL, prefixHost: boolean): string {
  const segs = u.pathname.split('/').filter((s) => s.length > 0);
  if (segs.length) segs[segs.length - 1] = segs[segs.length - 1]!.replace(PAGE_EXTENSIONS, '');
  let key = segs
    .filter((s) => s.length > 0)
    .map(cleanSegment)
    .join('/');
  if (!key) key = 'index';
  if (key.length > MAX_KEY) key = `${key.slice(0, MAX_KEY - 7).replace(/\/+$/, '')}-${hex6(u.pathname)}`;
  if (u.search.length > 1) key += `-${hex6(u.search)}`;
  return prefixHost ? `${hostKey(u)}/${key}` : key;
}

/**
 * Keys for pages in order: unique in the set (a clash gets `~2`, `~3`, …). `taken` holds keys used
 * already (a crawl adds pages as it finds them) and is updated.
 */
export function pageKeys(urls: URL[], prefixHost: boolean, taken: Set<string> = new Set()): string[] {
  return urls.map((u) => {
    const base = basePageKey(u, prefixHost);
    let key = base;
    for (let i = 2; taken.has(key); i++) key = `${base}~${i}`;
    taken.add(key);
    return key;
  });
}

export const pageResultKey = (pageKey: string, output: string) => `${pageKey}/${output}`;
export const zipEntryName = (pageKey: string, ext: string) => `${pageKey}.${ext}`;

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
