// @mozilla/readability's internals, the only place they are touched: the metadata a Readability
// reader has read (JSON-LD, meta tags, the cleaned <title>) when parse() finds no article and
// returns null, so the page's metadata keeps Readability's order of preference on every page.
// Pinned by test/converter/internals.test.ts, which fails with the reason the day an upgrade
// renames them; until then nothing breaks here, the fallback's metadata just comes from the page
// facts alone.
interface ReadabilityInternals {
  _metadata?: { title?: string; byline?: string; excerpt?: string; siteName?: string; publishedTime?: string };
  _articleTitle?: string;
  _articleByline?: string;
}

export interface LeftOver {
  title?: string;
  byline?: string;
  excerpt?: string;
  siteName?: string;
  publishedTime?: string;
}

/** What the reader read of the page's metadata before it gave up (uncleaned; empty when it read nothing). */
export function metadataLeftOver(reader: object | null): LeftOver {
  const r = (reader ?? {}) as ReadabilityInternals;
  const m = r._metadata ?? {};
  return {
    byline: m.byline ?? r._articleByline,
    siteName: m.siteName,
    excerpt: m.excerpt,
    publishedTime: m.publishedTime,
    title: r._articleTitle ?? m.title,
  };
}
