// The one link and image extractor (session 29 contract, section 6): the `links` and `images`
// outputs are its JSON, and a crawl's page outcome carries the same list for its frontier. Pure DOM
// reads, no selector engine: works on any parsed document (jsdom's, a browser's serialised page).

export interface PageLink {
  /** Absolute http(s) URL, fragment dropped. */
  url: string;
  /** The link's text, whitespace collapsed (its image's alt, aria-label or title when it has none). */
  text: string;
  /** Same origin as the page. */
  internal: boolean;
}
export interface PageImage {
  url: string;
  alt: string;
  internal: boolean;
}

/** Longest text or alt kept per entry: a link wrapped around a whole article is not its text. */
export const MAX_LABEL = 500;

const squash = (s: string | null | undefined) => (s ?? '').replace(/\s+/g, ' ').trim().slice(0, MAX_LABEL);

/** An absolute http(s) URL without its fragment, or null (javascript:, mailto:, data:, unparsable). */
export function absoluteUrl(raw: string | null, baseUrl: string): string | null {
  if (raw === null) return null;
  const href = raw.trim();
  if (!href || href.startsWith('#')) return null;
  let u: URL;
  try {
    u = new URL(href, baseUrl);
  } catch {
    return null;
  }
  if (u.protocol !== 'http:' && u.protocol !== 'https:') return null;
  u.hash = '';
  return u.href;
}

const originOf = (url: string) => {
  try {
    return new URL(url).origin;
  } catch {
    return null;
  }
};

function elements(document: Document, name: string): Element[] {
  return Array.from(document.getElementsByTagName(name));
}

/**
 * Every `<a href>` (and `<area href>`) of the document, absolute against `baseUrl`, in document
 * order, each URL once (its first non-empty text kept). `pageUrl` (default `baseUrl`) decides
 * `internal`: a `<base>` elsewhere changes how links resolve, not whose page it is.
 */
export function extractLinks(document: Document, baseUrl: string, pageUrl = baseUrl): PageLink[] {
  const origin = originOf(pageUrl);
  const byUrl = new Map<string, PageLink>();
  const areas = elements(document, 'area');
  // image-map areas are rare: the sort (a walk up both trees per comparison) only when there are some
  const anchors = areas.length ? [...elements(document, 'a'), ...areas].sort(documentOrder) : elements(document, 'a');
  for (const a of anchors) {
    const url = absoluteUrl(a.getAttribute('href'), baseUrl);
    if (!url) continue;
    let text = squash(a.textContent);
    if (!text) {
      const img = a.getElementsByTagName('img')[0];
      text = squash(img?.getAttribute('alt') ?? a.getAttribute('aria-label') ?? a.getAttribute('title') ?? a.getAttribute('alt'));
    }
    const known = byUrl.get(url);
    if (known) {
      if (!known.text && text) known.text = text;
      continue;
    }
    byUrl.set(url, { url, text, internal: originOf(url) === origin });
  }
  return [...byUrl.values()];
}

/** Every `<img>` of the document (a lazy one's real source when `src` is empty or a data URI), absolute, each URL once. */
export function extractImages(document: Document, baseUrl: string, pageUrl = baseUrl): PageImage[] {
  const origin = originOf(pageUrl);
  const byUrl = new Map<string, PageImage>();
  for (const img of elements(document, 'img')) {
    let src = img.getAttribute('src');
    if (!src || src.trim().startsWith('data:'))
      src = img.getAttribute('data-src') ?? img.getAttribute('data-lazy-src') ?? img.getAttribute('data-original') ?? src;
    const url = absoluteUrl(src, baseUrl);
    if (!url || byUrl.has(url)) continue;
    byUrl.set(url, { url, alt: squash(img.getAttribute('alt')), internal: originOf(url) === origin });
  }
  return [...byUrl.values()];
}

/** Sort comparator: document order (DOCUMENT_POSITION_FOLLOWING = 4). */
export function documentOrder(a: Node, b: Node): number {
  if (a === b) return 0;
  return a.compareDocumentPosition(b) & 4 ? -1 : 1;
}
