// A URL's uniqueKey: the one spelling the crawl's visited set compares (Crawlee's `uniqueKey`).
//
//   uniqueKey(url)              pure: the normalised URL, or null when it is not http(s)
//   canonicalOf(page, href)     pure: the page's rel=canonical, when it is on the same origin; else null
//   isTrackingParam(name)
//
// The WHATWG URL parser already lowercases the scheme and host, drops default ports (`:80` on http,
// `:443` on https), resolves `.`/`..` segments, punycodes unicode hosts and percent-encodes what must be.
// On top of it:
// - the fragment goes;
// - tracking parameters go: `utm_*`, `gclid`, `dclid`, `gbraid`, `wbraid`, `fbclid`, `msclkid`, `yclid`,
//   `twclid`, `ttclid`, `li_fat_id`, `mc_cid`, `mc_eid`, `_ga`, `_gl`, `_hsenc`, `_hsmi`, `mkt_tok`,
//   `igshid`, `si` is NOT dropped (some sites use it for content), and neither is `ref` (GitHub, shops and
//   docs sites use `ref` for a branch, a referral page or a version: dropping it could merge two pages);
// - the remaining parameters are sorted by name (stable: repeated names keep their order), and `?` alone goes;
// - percent-encoding is normalised: escapes of unreserved characters (`%41` → `A`, `%7E` → `~`) are
//   decoded, other escapes upper-cased (`%2f` → `%2F`), in the path and the query;
// - trailing slashes are folded: `/a/` and `/a` are one page (`/` stays `/`). Almost every site serves both
//   spellings as one page or redirects one to the other; a site that serves two different pages on them
//   says so with rel=canonical, and the caller keys the page by its canonical after the fetch
//   (canonicalOf). The fetch itself uses the URL as found, only the key folds.
// - the host's trailing dot goes (`example.com.` is `example.com`).

const TRACKING = new Set([
  'gclid',
  'dclid',
  'gbraid',
  'wbraid',
  'fbclid',
  'msclkid',
  'yclid',
  'twclid',
  'ttclid',
  'li_fat_id',
  'mc_cid',
  'mc_eid',
  '_ga',
  '_gl',
  '_hsenc',
  '_hsmi',
  'mkt_tok',
  'igshid',
]);

export function isTrackingParam(name: string): boolean {
  const n = name.toLowerCase();
  return n.startsWith('utm_') || TRACKING.has(n);
}

const UNRESERVED = /[A-Za-z0-9\-._~]/;

/** Decode escapes of unreserved characters and upper-case the others. */
function normaliseEscapes(s: string): string {
  return s.replace(/%([0-9a-fA-F]{2})/g, (_, h: string) => {
    const c = String.fromCharCode(Number.parseInt(h, 16));
    return UNRESERVED.test(c) ? c : `%${h.toUpperCase()}`;
  });
}

/** The normalised URL a crawl dedupes on; null for a URL that is not http(s) or does not parse. */
export function uniqueKey(input: string | URL, base?: string | URL): string | null {
  let u: URL;
  try {
    u = new URL(String(input), base);
  } catch {
    return null;
  }
  if (u.protocol !== 'http:' && u.protocol !== 'https:') return null;
  u.hash = '';
  u.username = '';
  u.password = '';
  if (u.hostname.endsWith('.')) u.hostname = u.hostname.slice(0, -1);
  let path = normaliseEscapes(u.pathname);
  if (path.length > 1) path = path.replace(/\/+$/, '') || '/';
  const params: [string, string][] = [];
  if (u.search.length > 1) {
    for (const part of u.search.slice(1).split('&')) {
      if (part === '') continue;
      const eq = part.indexOf('=');
      const rawName = eq < 0 ? part : part.slice(0, eq);
      let name: string;
      try {
        name = decodeURIComponent(rawName.replace(/\+/g, ' '));
      } catch {
        name = rawName;
      }
      if (isTrackingParam(name)) continue;
      params.push([normaliseEscapes(rawName), normaliseEscapes(part)]);
    }
  }
  params.sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0));
  const search = params.length ? `?${params.map((p) => p[1]).join('&')}` : '';
  return `${u.protocol}//${u.host}${path}${search}`;
}

/**
 * The page's canonical key when its rel=canonical names a page on the same origin (after redirects);
 * null when it has none, it does not parse, or it points elsewhere (a canonical on another origin is a
 * syndication hint, not the same page for this crawl).
 */
export function canonicalOf(pageUrl: string | URL, canonicalHref: string | null | undefined): string | null {
  if (!canonicalHref) return null;
  let page: URL;
  let canon: URL;
  try {
    page = new URL(String(pageUrl));
    canon = new URL(canonicalHref.trim(), page);
  } catch {
    return null;
  }
  if (canon.origin !== page.origin) return null;
  return uniqueKey(canon);
}
