// The main content: Readability's article, or the page's body without its furniture when it
// finds none; then the clean-up every content output shares.
import { Readability } from '@mozilla/readability';
import { flattenLayoutTables } from '../tables.ts';
import { asciiLower, firstDescendant } from '../elements.ts';
import { clean } from '../metadata.ts';
import { metadataLeftOver } from './internals/readability.ts';

export interface MainContent {
  /** Element holding the main content (in the page's own document). */
  root: Element;
  fromReadability: boolean;
  byline: string | null;
  siteName: string | null;
  excerpt: string | null;
  publishedTime: string | null;
  title: string | null;
  lang: string | null;
}

export function mainContent(doc: Document, keep: string[], fresh: () => Document): MainContent {
  let article: ReturnType<Readability<Element>['parse']> = null;
  let reader: Readability<Element> | null = null;
  try {
    reader = new Readability<Element>(doc, { classesToPreserve: keep, serializer: (n) => n as Element, charThreshold: 300 });
    article = reader.parse();
  } catch {
    article = null;
  }
  const text = clean(article?.textContent) ?? '';
  if (article?.content && text.length >= 80) {
    return {
      root: article.content,
      fromReadability: true,
      byline: clean(article.byline),
      siteName: clean(article.siteName),
      excerpt: clean(article.excerpt),
      publishedTime: clean(article.publishedTime),
      title: clean(article.title),
      lang: clean(article.lang),
    };
  }
  // No article: Readability still read the page's metadata before it gave up (JSON-LD, meta
  // tags, the cleaned <title>); keep that, so the reference order holds on every page
  const m = metadataLeftOver(reader);
  const d = fresh();
  const body = d.body ?? d.createElement('body');
  body
    .querySelectorAll(
      'script, style, noscript, template, nav, header, footer, aside, form, iframe, dialog, [role="navigation"], [role="banner"], [role="contentinfo"], [aria-hidden="true"], [hidden]',
    )
    .forEach((n) => n.remove());
  return {
    root: body,
    fromReadability: false,
    byline: clean(m.byline),
    siteName: clean(m.siteName),
    excerpt: clean(m.excerpt),
    publishedTime: clean(m.publishedTime),
    title: clean(m.title),
    lang: null,
  };
}

const TRACKER_HOSTS =
  /(^|\.)(google-analytics\.com|googletagmanager\.com|doubleclick\.net|facebook\.com\/tr|scorecardresearch\.com|quantserve\.com|pixel\.|analytics\.|matomo\.|hotjar\.com|bat\.bing\.com)/i;

export function isTrackingPixel(img: Element): boolean {
  const w = img.getAttribute('width'),
    h = img.getAttribute('height');
  if ((w !== null && Number(w) <= 1) || (h !== null && Number(h) <= 1)) return true;
  const src = img.getAttribute('src') ?? '';
  return TRACKER_HOSTS.test(src.replace(/^https?:\/\//, ''));
}

/** Shared clean-up for every content output: no base64 blobs, no pixels, no scripts. */
export function prepare(root: Element): Element {
  // in place: the main content is a tree of its own by now (metadata has counted its words)
  const r = root;
  // one walk for `script, style, noscript, template, link, meta`, `img`, `a[href^="data:" i]`
  // and the tables: nothing inside a removed element is looked at again
  const strip: Element[] = [];
  const imgs: Element[] = [];
  const dataLinks: Element[] = [];
  const tables: Element[] = [];
  const walk = (parent: Element) => {
    for (let el = parent.firstElementChild; el; el = el.nextElementSibling) {
      const tag = el.localName;
      if (NOT_CONTENT.has(tag)) {
        strip.push(el);
        continue;
      }
      if (tag === 'img') imgs.push(el);
      else if (tag === 'a' && asciiLower(el.getAttribute('href')?.slice(0, 5) ?? '') === 'data:') dataLinks.push(el);
      else if (tag === 'table') tables.push(el);
      walk(el);
    }
  };
  walk(r);
  for (const n of strip) n.remove();
  for (const img of imgs) {
    const src = img.getAttribute('src') ?? '';
    if (!src || src.startsWith('data:') || isTrackingPixel(img)) {
      const alt = clean(img.getAttribute('alt'));
      if (alt && !isTrackingPixel(img)) img.replaceWith(img.ownerDocument.createTextNode(alt));
      else img.remove();
    }
  }
  for (const a of dataLinks) a.removeAttribute('href');
  flattenLayoutTables(r, tables);
  return r;
}
const NOT_CONTENT = new Set(['script', 'style', 'noscript', 'template', 'link', 'meta']);

/** The title becomes the first heading of every output; drop a leading heading that only repeats it. */
export function dropTitleHeading(root: Element, title: string | null) {
  if (!title) return;
  const first = firstDescendant(root, (e) => e.localName === 'h1' || e.localName === 'h2');
  if (first && clean(first.textContent) === title) first.remove();
}
