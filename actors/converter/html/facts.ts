// Page facts for metadata: JSON-LD, Open Graph, Twitter and <meta> tags, headings, links and
// images, read from the whole page before Readability changes it; merged with Readability's own.
import { attrIs, firstElement, hasAncestorNamed, named } from '../elements.ts';
import { clean, countWords, emptyMetadata, readingTime } from '../metadata.ts';
import type { ConvertInput } from '../types.ts';
import type { PageMetadataDoc } from '../../../shared/schemas/metadata.ts';
import type { ParsedPage } from './parse.ts';
import type { MainContent } from './content.ts';

export interface PageFacts {
  title: string | null;
  description: string | null;
  language: string | null;
  canonical: string | null;
  author: string | null;
  publishedTime: string | null;
  modifiedTime: string | null;
  siteName: string | null;
  keywords: string[];
  robots: string | null;
  favicon: string;
  image: string | null;
  openGraph: Record<string, string>;
  twitter: Record<string, string>;
  headings: { level: number; text: string }[];
  links: { total: number; internal: number; external: number };
  images: number;
}

function jsonLd(page: ParsedPage): Record<string, unknown>[] {
  const out: Record<string, unknown>[] = [];
  const visit = (v: unknown) => {
    if (Array.isArray(v)) v.forEach(visit);
    else if (v && typeof v === 'object') {
      out.push(v as Record<string, unknown>);
      if ('@graph' in v) visit((v as { '@graph': unknown })['@graph']);
    }
  };
  // `script[type="application/ld+json"]`: type is compared ignoring ASCII case in HTML
  for (const s of named(page, 'script')) {
    if (!attrIs(s, 'type', 'application/ld+json')) continue;
    try {
      visit(JSON.parse(s.textContent ?? ''));
    } catch {
      /* broken JSON-LD is common; ignore it */
    }
  }
  return out;
}

const nameOf = (v: unknown): string | null => {
  if (typeof v === 'string') return clean(v);
  if (Array.isArray(v)) return clean(v.map(nameOf).filter(Boolean).join(', '));
  if (v && typeof v === 'object' && 'name' in v) return nameOf((v as { name: unknown }).name);
  return null;
};

/** `u` made absolute against `base` when it is an http(s) URL; null otherwise. */
function absoluteHttp(u: string | null | undefined, base: string): string | null {
  if (!u) return null;
  try {
    const r = new URL(u, base);
    return r.protocol === 'http:' || r.protocol === 'https:' ? r.href : null;
  } catch {
    return null;
  }
}

/** The page's `<link rel=canonical href>`, absolute (metadata's `canonical`; a crawl folds copies by it). */
export const canonicalOf = (page: ParsedPage): string | null =>
  absoluteHttp(
    named(page, 'link')
      .find((l) => attrIs(l, 'rel', 'canonical'))
      ?.getAttribute('href'),
    page.doc.baseURI,
  );

export function collectPageFacts(page: ParsedPage, input: ConvertInput): PageFacts {
  const { doc } = page;
  const metas = named(page, 'meta');
  // `meta[attr="value" i]`: the first such <meta>, even when its content is empty
  const meta = (attr: string, value: string) => clean(metas.find((m) => attrIs(m, attr, value))?.getAttribute('content'));
  const openGraph: Record<string, string> = {};
  const twitter: Record<string, string> = {};
  for (const m of metas) {
    if (!m.hasAttribute('property') && !m.hasAttribute('name')) continue;
    const key = (m.getAttribute('property') ?? m.getAttribute('name') ?? '').trim().toLowerCase();
    const val = clean(m.getAttribute('content'));
    if (!val) continue;
    if (key.startsWith('og:')) openGraph[key.slice(3)] ??= val;
    else if (key.startsWith('article:')) openGraph[key] ??= val;
    else if (key.startsWith('twitter:')) twitter[key.slice(8)] ??= val;
  }
  const ld = jsonLd(page);
  const ldFirst = (k: string) => ld.map((o) => o[k]).find((v) => v !== undefined && v !== null);
  const abs = (u: string | null | undefined) => absoluteHttp(u, doc.baseURI);
  const links = named(page, 'link');
  const icons = links.filter(
    (l) =>
      l.hasAttribute('rel') &&
      l.hasAttribute('href') &&
      /(^|\s)(icon|shortcut icon|apple-touch-icon)(\s|$)/i.test(l.getAttribute('rel') ?? ''),
  );
  const icon = icons.find((l) => /(^|\s)icon(\s|$)/i.test(l.getAttribute('rel')!)) ?? icons[0];
  const headings = page.headings
    .map((h) => ({ level: Number(h.tagName[1]), text: clean(h.textContent) ?? '' }))
    .filter((h) => h.text)
    .slice(0, 200);
  const host = new URL(input.finalUrl).host;
  let internal = 0,
    external = 0;
  const baseUrl = doc.baseURI;
  for (const a of named(page, 'a')) {
    const href = a.getAttribute('href');
    if (href === null) continue;
    try {
      const u = new URL(href, baseUrl);
      if (u.protocol !== 'http:' && u.protocol !== 'https:') continue;
      if (u.host === host) internal++;
      else external++;
    } catch {
      /* unparsable href: not a link */
    }
  }
  // `article img[src], main img[src], img[src]`: the last group holds the others
  const firstImg = named(page, 'img')
    .map((i) => i.getAttribute('src'))
    .find((s) => s !== null && !s.startsWith('data:'));
  // `article time[datetime], time[datetime][pubdate], time[itemprop="datePublished"]`
  const timeEl = named(page, 'time').find(
    (t) =>
      (t.hasAttribute('datetime') && (t.hasAttribute('pubdate') || hasAncestorNamed(t, ARTICLE))) ||
      t.getAttribute('itemprop') === 'datePublished',
  );
  const publisher = ldFirst('publisher');
  const ldString = (...keys: string[]) => {
    for (const o of ld) for (const k of keys) if (typeof o[k] === 'string' && clean(o[k] as string)) return clean(o[k] as string);
    return null;
  };
  // fallbacks after Readability, in this order: JSON-LD, Open Graph, Twitter, <meta> (docs/websitepro.md)
  return {
    title:
      ldString('headline', 'name') ??
      clean(openGraph.title) ??
      clean(twitter.title) ??
      clean(doc.title) ??
      clean(page.headings.find((h) => h.localName === 'h1')?.textContent),
    description: ldString('description') ?? clean(openGraph.description) ?? clean(twitter.description) ?? meta('name', 'description'),
    language:
      clean(doc.documentElement.getAttribute('lang')) ??
      clean(ldString('inLanguage')) ??
      clean(openGraph.locale?.replace('_', '-')) ??
      meta('http-equiv', 'content-language') ??
      clean(input.contentLanguage?.split(',')[0]),
    canonical: canonicalOf(page),
    // `[rel="author"], [itemprop="author"]` (rel ignores ASCII case in HTML), walked only when needed
    author:
      nameOf(ldFirst('author')) ??
      clean(openGraph['article:author']) ??
      clean(twitter.creator) ??
      meta('name', 'author') ??
      clean(firstElement(doc.documentElement, (e) => attrIs(e, 'rel', 'author') || e.getAttribute('itemprop') === 'author')?.textContent),
    publishedTime:
      clean(String(ldFirst('datePublished') ?? '')) ??
      clean(openGraph['article:published_time']) ??
      meta('name', 'date') ??
      clean(timeEl?.getAttribute('datetime')),
    modifiedTime:
      clean(String(ldFirst('dateModified') ?? '')) ?? clean(openGraph['article:modified_time']) ?? clean(openGraph.updated_time),
    siteName: nameOf(publisher) ?? clean(openGraph.site_name) ?? meta('name', 'application-name'),
    keywords: (meta('name', 'keywords') ?? '')
      .split(',')
      .map((k) => k.trim())
      .filter(Boolean),
    robots: meta('name', 'robots'),
    favicon: abs(icon?.getAttribute('href')) ?? new URL('/favicon.ico', input.finalUrl).href,
    image: abs(openGraph.image ?? openGraph['image:url']) ?? abs(twitter.image ?? twitter['image:src']) ?? abs(firstImg),
    openGraph,
    twitter,
    headings,
    links: { total: internal + external, internal, external },
    images: named(page, 'img').length,
  };
}

const ARTICLE = new Set(['article']);

/** Facts that need nothing but <title> and <html lang>, for when collectPageFacts itself failed. */
export function basicFacts(doc: Document, input: ConvertInput): PageFacts {
  const {
    title,
    description,
    canonical,
    author,
    publishedTime,
    modifiedTime,
    siteName,
    keywords,
    robots,
    image,
    openGraph,
    twitter,
    headings,
    links,
    images,
  } = emptyMetadata(input, 'text/html', null);
  return {
    title,
    description,
    canonical,
    author,
    publishedTime,
    modifiedTime,
    siteName,
    keywords,
    robots,
    image,
    openGraph,
    twitter,
    headings,
    links,
    images,
    language: clean(doc.documentElement?.getAttribute('lang')),
    favicon: new URL('/favicon.ico', input.finalUrl).href,
  };
}

/**
 * Readability is the reference for title, byline, excerpt, language, published time and site
 * name (it reads JSON-LD and meta tags itself); where it has nothing, the page facts' own chain
 * (JSON-LD, Open Graph, Twitter, <meta>) fills in.
 */
export function buildMetadata(input: ConvertInput, mt: string, charset: string, f: PageFacts, main: MainContent | null): PageMetadataDoc {
  const words = main ? countWords(main.root.textContent ?? '') : 0;
  return {
    ...emptyMetadata(input, mt, charset),
    ...f,
    title: main?.title ?? f.title,
    description: main?.excerpt ?? f.description,
    language: main?.lang ?? f.language,
    author: main?.byline ?? f.author,
    publishedTime: main?.publishedTime ?? f.publishedTime,
    siteName: main?.siteName ?? f.siteName,
    wordCount: words,
    readingTimeMinutes: readingTime(words),
  };
}
