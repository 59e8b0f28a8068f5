// Page → outputs, pure and synchronous (runs inside a worker thread, see pool.ts). One jsdom parse
// serves every output of a job: metadata reads the whole page, markdown/text/html the main content.
import { createRequire } from 'node:module';
import { JSDOM, type DOMWindow } from 'jsdom';
import { Readability } from '@mozilla/readability';
import { markdownOf } from './markdown.ts';
import { flattenLayoutTables } from './tables.ts';
import { isPdf, readPdf, pdfMarkdown, pdfMetadata, pdfText, type PdfContent } from './pdf.ts';
import createDOMPurify from 'dompurify';
import { decodeBody } from './charset.ts';
import { capNesting, MAX_DEPTH } from './depth.ts';
import { asciiLower, attrIs, classPattern, firstDescendant, firstElement, hasAncestorNamed, hasDescendantNamed, indexPage, named, type PageIndex } from './elements.ts';
import type { PageMetadataDoc } from '../../shared/schemas/metadata.ts';

export type TextOutput = 'metadata' | 'markdown' | 'text' | 'html';

export interface ConvertInput {
  body: Uint8Array;
  /** Full Content-Type header of the final response. */
  contentType: string;
  contentLanguage?: string;
  status: number;
  url: string;
  finalUrl: string;
  redirects: string[];
  rendered: boolean;
  outputs: TextOutput[];
  warnings?: string[];
  /** Ask whether the page needs JavaScript before converting (first pass). */
  detectJs?: boolean;
}

export type OutputFile = { ok: true; data: string; contentType: string; ext: string };
export type OutputFailure = { ok: false; error: string; message: string };
export type ConvertResult =
  | { needsJavaScript: true; reason: string }
  | { needsJavaScript?: false; outputs: Partial<Record<TextOutput, OutputFile | OutputFailure>> };

export const CONTENT_TYPES: Record<TextOutput, { contentType: string; ext: string }> = {
  metadata: { contentType: 'application/json', ext: 'metadata.json' },
  markdown: { contentType: 'text/markdown; charset=utf-8', ext: 'md' },
  text: { contentType: 'text/plain; charset=utf-8', ext: 'txt' },
  html: { contentType: 'text/html; charset=utf-8', ext: 'html' },
};

const file = (o: TextOutput, data: string): OutputFile => ({ ok: true, data, ...CONTENT_TYPES[o] });
const unsupported = (what: string, o: TextOutput): OutputFailure => ({ ok: false, error: 'unsupported_content', message: `a ${what} target has no ${o}` });

export const mediaType = (ct: string) => (ct.split(';')[0] ?? '').trim().toLowerCase() || 'application/octet-stream';
const isHtmlType = (mt: string) => mt === 'text/html' || mt === 'application/xhtml+xml';
const isJsonType = (mt: string) => mt === 'application/json' || mt.endsWith('+json');
const isTextType = (mt: string) => mt === 'text/plain' || mt === 'text/markdown' || mt === 'text/csv';

/** When no Content-Type was sent, look at the bytes (what browsers call sniffing, kept small). */
export function sniffType(body: Uint8Array, declared: string): string {
  const mt = mediaType(declared);
  if (declared && mt !== 'application/octet-stream') return mt;
  const head = new TextDecoder('latin1').decode(body.subarray(0, 512)).trimStart().toLowerCase();
  if (head.startsWith('%pdf-')) return 'application/pdf';
  if (/^<(!doctype html|html|head|body|p|div|title)[\s>]/.test(head)) return 'text/html';
  if (head.startsWith('{') || head.startsWith('[')) return 'application/json';
  if (body[0] === 0x89 && body[1] === 0x50) return 'image/png';
  if (body[0] === 0xff && body[1] === 0xd8) return 'image/jpeg';
  return mt;
}

export async function convert(input: ConvertInput): Promise<ConvertResult> {
  const mt = sniffType(input.body, input.contentType);
  if (isHtmlType(mt)) return convertHtml(input, mt);
  if (isPdf(mt)) return { outputs: await convertPdf(input, mt) };
  return { outputs: convertOther(input, mt) };
}

// ---------------------------------------------------------------- PDF targets

async function convertPdf(input: ConvertInput, mt: string): Promise<Partial<Record<TextOutput, OutputFile | OutputFailure>>> {
  const out: Partial<Record<TextOutput, OutputFile | OutputFailure>> = {};
  let pdf: PdfContent | null = null;
  let why = '';
  try {
    pdf = await readPdf(input.body);
  } catch (e) {
    why = (e as Error).message;
  }
  const text = pdf ? pdfText(pdf) : '';
  for (const o of input.outputs) {
    if (o === 'metadata') {
      const words = countWords(text);
      const meta = { ...emptyMetadata(input, mt, null), ...(pdf ? pdfMetadata(pdf) : {}), wordCount: words, readingTimeMinutes: readingTime(words), favicon: new URL('/favicon.ico', input.finalUrl).href };
      if (!pdf) meta.warnings.push(`the PDF could not be read: ${why}`);
      out.metadata = file('metadata', JSON.stringify(meta, null, 2));
    } else if (!pdf) {
      out[o] = { ok: false, error: 'conversion_failed', message: `the PDF could not be read: ${why}` };
    } else if (!text.trim()) {
      // a scanned PDF has pictures of text only; there is no OCR here
      out[o] = { ok: false, error: 'unsupported_content', message: 'the PDF has no text layer (scanned pages?)' };
    } else if (o === 'text') out.text = file('text', text);
    else if (o === 'markdown') out.markdown = file('markdown', pdfMarkdown(pdf));
    else if (o === 'html') out.html = file('html', htmlDocument(pdf.title, pdf.language, pdf.pages.filter(Boolean).map((pg) => pg.split(/\n{2,}/).map((para) => `<p>${escapeHtml(para).replace(/\n/g, '<br>')}</p>`).join('\n')).join('\n<hr>\n')));
  }
  return out;
}

// ---------------------------------------------------------------- non-HTML targets

function convertOther(input: ConvertInput, mt: string): Partial<Record<TextOutput, OutputFile | OutputFailure>> {
  const out: Partial<Record<TextOutput, OutputFile | OutputFailure>> = {};
  const textual = isJsonType(mt) || isTextType(mt);
  let text: string | null = null;
  let charset: string | null = null;
  if (textual) {
    const d = decodeBody(input.body, input.contentType, false);
    text = d.text;
    charset = d.charset;
    if (isJsonType(mt)) {
      try {
        text = JSON.stringify(JSON.parse(text), null, 2);
      } catch {
        /* not valid JSON: keep it as sent */
      }
    }
  }
  const words = text ? countWords(text) : 0;
  for (const o of input.outputs) {
    if (o === 'metadata') {
      const meta = emptyMetadata(input, mt, charset);
      meta.wordCount = words;
      meta.readingTimeMinutes = readingTime(words);
      meta.favicon = new URL('/favicon.ico', input.finalUrl).href;
      if (mt.startsWith('image/')) meta.image = input.finalUrl;
      out.metadata = file('metadata', JSON.stringify(meta, null, 2));
    } else if (text === null) {
      out[o] = unsupported(mt, o);
    } else if (o === 'text') {
      out.text = file('text', text.endsWith('\n') ? text : `${text}\n`);
    } else if (o === 'markdown') {
      const fence = '`'.repeat(Math.max(3, longestRun(text, '`') + 1));
      // JSON is code; plain text and Markdown pass through as they are; CSV stays a fenced block
      const body = isJsonType(mt) ? `${fence}json\n${text}\n${fence}\n` : mt === 'text/csv' ? `${fence}csv\n${text}\n${fence}\n` : text.endsWith('\n') ? text : `${text}\n`;
      out.markdown = file('markdown', body);
    } else if (o === 'html') {
      out.html = file('html', htmlDocument(null, null, `<pre>${escapeHtml(text)}</pre>`));
    }
  }
  return out;
}

function longestRun(s: string, ch: string): number {
  let best = 0, cur = 0;
  for (const c of s) { cur = c === ch ? cur + 1 : 0; best = Math.max(best, cur); }
  return best;
}

// ---------------------------------------------------------------- HTML

const failure = (e: unknown, what: string): OutputFailure => ({ ok: false, error: 'conversion_failed', message: `${what}: ${((e as Error)?.message ?? String(e)).split('\n')[0]}` });

/**
 * One parse, then every output on its own: a step that throws costs only the outputs that need it.
 * Metadata needs nothing but the parsed page (page facts, and Readability's metadata when it runs),
 * so it comes out of any HTML that parses.
 */
function convertHtml(input: ConvertInput, mt: string): ConvertResult {
  const { text: decoded, charset } = decodeBody(input.body, input.contentType);
  const want = new Set(input.outputs);
  const out: Partial<Record<TextOutput, OutputFile | OutputFailure>> = {};
  const failAll = (f: OutputFailure) => { for (const o of want) out[o] ??= f; };
  const warnings = [...(input.warnings ?? [])];
  let source = decoded;
  const parse = () => parseHtml(source, input.finalUrl);
  try {
    let doc: Document;
    let page: ParsedPage;
    try {
      const capped = capNesting(decoded);
      source = capped.html;
      if (capped.flattened) warnings.push(`the page nests elements deeper than ${MAX_DEPTH} levels; the deeper ones were flattened (kept in order at level ${MAX_DEPTH})`);
      page = parse();
      doc = page.doc;
    } catch (e) {
      failAll(failure(e, 'the page does not parse as HTML'));
      return { outputs: out };
    }
    if (input.detectJs && !input.rendered) {
      const why = guard(() => needsJavaScript(doc), null);
      if (why) return { needsJavaScript: true, reason: why };
    }
    const keep = guard(() => prepareDoc(page), [] as string[], (e) => warnings.push(`links and code blocks were not prepared: ${(e as Error).message}`));
    const facts = guard(() => collectPageFacts(page, input), null, (e) => warnings.push(`page facts failed: ${(e as Error).message}`)) ?? basicFacts(doc, input);
    guard(() => removeDebris(doc), undefined);
    // Readability changes the document it reads; the page facts are taken first, and the rare
    // fallback (no article found) parses the page again instead of every page paying for a copy
    let main: MainContent | null = null;
    let mainError: unknown = null;
    try {
      main = mainContent(doc, keep, () => {
        const d = parse();
        guard(() => prepareDoc(d), []);
        guard(() => removeDebris(d.doc), undefined);
        return d.doc;
      });
    } catch (e) {
      mainError = e;
    }
    const title = main?.title ?? facts.title;
    if (want.has('metadata')) {
      try {
        out.metadata = file('metadata', JSON.stringify(buildMetadata({ ...input, warnings }, mt, charset, facts, main), null, 2));
      } catch (e) {
        out.metadata = failure(e, 'metadata');
      }
    }
    if (!main) {
      failAll(failure(mainError, 'main content'));
      return { outputs: out };
    }
    let root: Element;
    try {
      root = prepare(main.root);
      dropTitleHeading(root, title);
    } catch (e) {
      failAll(failure(e, 'content clean-up'));
      return { outputs: out };
    }
    const each: [TextOutput, () => string][] = [
      ['markdown', () => toMarkdown(root, title)],
      ['text', () => toText(root, title)],
      ['html', () => sanitize(root, title, main.lang ?? facts.language)],
    ];
    for (const [o, make] of each) {
      if (!want.has(o)) continue;
      try {
        out[o] = file(o, make());
      } catch (e) {
        out[o] = failure(e, o);
      }
    }
    return { outputs: out };
  } finally {
    // nothing to close: documents of the shared window are garbage once unreferenced
  }
}

/**
 * One jsdom window per thread, and every page parsed into a new document of it with DOMParser:
 * making a window costs about as much as parsing a page (docs/performance.md). The document's own
 * URL is the window's, so the page's base URL is set with a <base>: the page's first <base href>
 * made absolute against the final URL (dropped when it is not http(s)), else the final URL.
 */
let sharedWindow: DOMWindow | null = null;
const WINDOW_URL = 'https://converter.invalid/';

/** A parsed page: the document, its elements sorted by name (one walk), and the <base> put in. */
export interface ParsedPage extends PageIndex {
  doc: Document;
  base: HTMLBaseElement;
}

export function parseHtml(source: string, url: string): ParsedPage {
  sharedWindow ??= new JSDOM('', { url: WINDOW_URL }).window;
  const doc = new sharedWindow.DOMParser().parseFromString(source, 'text/html') as unknown as Document;
  shareSelectorEngine(doc);
  const index = indexPage(doc);
  const allBases = named(index, 'base');
  const bases = allBases.filter((b) => b.hasAttribute('href'));
  let base: string = url;
  if (bases[0]) {
    try {
      const b = new URL(bases[0].getAttribute('href')!.trim(), url);
      if (b.protocol === 'http:' || b.protocol === 'https:') base = b.href;
    } catch {
      /* an unparsable <base> is ignored, as browsers do */
    }
  }
  for (const b of allBases) b.remove();
  const el = doc.createElement('base');
  el.setAttribute('href', base);
  (doc.head ?? doc.documentElement).prepend(el);
  return { ...index, doc, base: el };
}

/**
 * jsdom gives every document a selector engine (nwsapi) of its own on its first query, and the
 * engine compiles each selector again: Readability's queries and jsdom's own `<base>` lookup cost
 * an engine and their compiles on every page. nwsapi follows the document of the node it is asked
 * about, so one engine per thread serves every page; one per compatibility mode, since nwsapi
 * compiles quirks mode into class selectors. If jsdom stops keeping the engine where it is looked
 * for, every document simply makes its own again.
 */
const jsdomImpl = createRequire(import.meta.url)('jsdom/lib/jsdom/living/generated/utils.js') as { implForWrapper(w: object): { _nwsapi?: unknown } | null };
const selectorEngines = new Map<string, unknown>();
function shareSelectorEngine(doc: Document) {
  const impl = jsdomImpl.implForWrapper(doc);
  if (!impl) return;
  const mode = doc.compatMode;
  const engine = selectorEngines.get(mode);
  if (engine) {
    impl._nwsapi ??= engine;
    return;
  }
  doc.querySelector('base[href]'); // jsdom makes the document's engine on first use; it asks this selector anyway
  if (impl._nwsapi) selectorEngines.set(mode, impl._nwsapi);
}

/** Run a step that may fail without failing the outputs that do not need it. */
function guard<T>(fn: () => T, fallback: T, onError?: (e: unknown) => void): T {
  try {
    return fn();
  } catch (e) {
    onError?.(e);
    return fallback;
  }
}

/** Absolute URLs, code-block languages and task-list boxes made to survive Readability; returns the classes to keep. */
function prepareDoc(page: ParsedPage): string[] {
  const { doc } = page;
  absolutize(page);
  const keep = markCodeLanguages(page);
  // Readability drops <input>: keep task-list boxes as marker characters, restored per output
  // (`li input[type="checkbox" i]`)
  for (const box of named(page, 'input')) {
    if (attrIs(box, 'type', 'checkbox') && hasAncestorNamed(box, LI)) box.replaceWith(doc.createTextNode(box.hasAttribute('checked') ? `${TASK_DONE} ` : `${TASK_OPEN} `));
  }
  return keep;
}
const LI = new Set(['li']);

/**
 * A page needs JavaScript when its static HTML carries (almost) no readable text but does carry
 * scripts: the client-rendered shell of React, Vue, Angular, Next, Nuxt, Svelte and the like.
 * Returns the reason, or null. Documented in docs/websitepro.md.
 */
export function needsJavaScript(doc: Document): string | null {
  const body = doc.body;
  if (!body) return null;
  const text = visibleText(body, 200);
  // a page with text is converted as it is, whatever its scripts do later
  if (text.length >= 200) return null;
  const scripts = doc.querySelectorAll('script[src], script:not([type]), script[type="module"], script[type="text/javascript"]').length;
  if (!scripts) return null;
  const mount = body.querySelector('#root, #app, #__next, #__nuxt, #svelte, [data-reactroot], [ng-version], app-root, [data-server-rendered]');
  const mountEmpty = mount ? (mount.textContent ?? '').trim().length < 20 : false;
  const noscriptAsks = [...doc.querySelectorAll('noscript')].some((n) => /enable javascript|requires javascript|javascript (is )?(required|disabled)/i.test(n.textContent ?? ''));
  if (text.length < 200 && (mountEmpty || noscriptAsks)) return `static HTML has ${text.length} characters of text and an empty application mount point`;
  if (text.length < 40) return `static HTML has ${text.length} characters of text and ${scripts} scripts`;
  return null;
}

const INVISIBLE = new Set(['SCRIPT', 'STYLE', 'NOSCRIPT', 'TEMPLATE', 'SVG', 'svg']);
/** Whitespace-collapsed text outside scripts, styles and the like; stops once past `enough` characters. */
function visibleText(root: Element, enough: number): string {
  let text = '';
  const walk = (n: Node): boolean => {
    for (let c = n.firstChild; c; c = c.nextSibling) {
      if (c.nodeType === 3) {
        text += c.nodeValue;
        if (text.length > enough * 4 && text.replace(/\s+/g, ' ').trim().length > enough) return true;
      } else if (c.nodeType === 1 && !INVISIBLE.has((c as Element).tagName) && walk(c)) return true;
    }
    return false;
  };
  walk(root);
  return text.replace(/\s+/g, ' ').trim();
}

const TRACKER_HOSTS = /(^|\.)(google-analytics\.com|googletagmanager\.com|doubleclick\.net|facebook\.com\/tr|scorecardresearch\.com|quantserve\.com|pixel\.|analytics\.|matomo\.|hotjar\.com|bat\.bing\.com)/i;

/** Every link and image absolute against the document base (jsdom honours <base>); lazy images made real. */
function absolutize(page: ParsedPage) {
  const { doc, base } = page;
  // a <base> pointing anywhere but http(s) would turn every relative link into that scheme
  // (parseHtml left one <base> only; its href is read against the window's URL, as jsdom does)
  let ok = false;
  try {
    ok = /^https?:$/.test(new URL(base.getAttribute('href') ?? '', WINDOW_URL).protocol);
  } catch {
    ok = false;
  }
  if (!ok) base.remove();
  // what `a.href` gives, with Node's URL parser: jsdom's (whatwg-url, IDNA in JavaScript) cost
  // more than the rest of this step; an unparsable href stays as written, as jsdom returns it
  const baseUrl = doc.baseURI;
  for (const a of named(page, 'a')) {
    const raw = a.getAttribute('href');
    if (raw === null) continue;
    const href = raw.trim();
    if (/^javascript:/i.test(href)) a.removeAttribute('href');
    else if (!href.startsWith('#')) a.setAttribute('href', resolveHref(raw, baseUrl));
  }
  for (const img of named(page, 'img')) {
    const lazy = img.getAttribute('data-src') ?? img.getAttribute('data-lazy-src') ?? img.getAttribute('data-original');
    const src = img.getAttribute('src') ?? '';
    if (lazy && (!src || src.startsWith('data:'))) img.setAttribute('src', lazy);
    const s = img.getAttribute('src');
    if (s && !s.startsWith('data:')) {
      try {
        img.setAttribute('src', new URL(s, doc.baseURI).href);
      } catch {
        img.removeAttribute('src');
      }
    }
    img.removeAttribute('srcset');
  }
  for (const el of named(page, 'source')) if (el.hasAttribute('srcset')) el.removeAttribute('srcset');
}

function resolveHref(raw: string, base: string): string {
  try {
    return new URL(raw, base).href;
  } catch {
    return raw;
  }
}

interface PageFacts {
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

const clean = (s: string | null | undefined) => {
  const v = (s ?? '').replace(/\s+/g, ' ').trim();
  return v ? v : null;
};

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

function collectPageFacts(page: ParsedPage, input: ConvertInput): PageFacts {
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
  const abs = (u: string | null | undefined) => {
    if (!u) return null;
    try {
      const r = new URL(u, doc.baseURI);
      return r.protocol === 'http:' || r.protocol === 'https:' ? r.href : null;
    } catch {
      return null;
    }
  };
  const links = named(page, 'link');
  const icons = links.filter((l) => l.hasAttribute('rel') && l.hasAttribute('href') && /(^|\s)(icon|shortcut icon|apple-touch-icon)(\s|$)/i.test(l.getAttribute('rel') ?? ''));
  const icon = icons.find((l) => /(^|\s)icon(\s|$)/i.test(l.getAttribute('rel')!)) ?? icons[0];
  const headings = page.headings
    .map((h) => ({ level: Number(h.tagName[1]), text: clean(h.textContent) ?? '' }))
    .filter((h) => h.text)
    .slice(0, 200);
  const host = new URL(input.finalUrl).host;
  let internal = 0, external = 0;
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
  const firstImg = named(page, 'img').map((i) => i.getAttribute('src')).find((s) => s !== null && !s.startsWith('data:'));
  // `article time[datetime], time[datetime][pubdate], time[itemprop="datePublished"]`
  const timeEl = named(page, 'time').find((t) => (t.hasAttribute('datetime') && (t.hasAttribute('pubdate') || hasAncestorNamed(t, ARTICLE))) || t.getAttribute('itemprop') === 'datePublished');
  const publisher = ldFirst('publisher');
  const ldString = (...keys: string[]) => {
    for (const o of ld) for (const k of keys) if (typeof o[k] === 'string' && clean(o[k] as string)) return clean(o[k] as string);
    return null;
  };
  // fallbacks after Readability, in this order: JSON-LD, Open Graph, Twitter, <meta> (docs/websitepro.md)
  return {
    title: ldString('headline', 'name') ?? clean(openGraph.title) ?? clean(twitter.title) ?? clean(doc.title) ?? clean(page.headings.find((h) => h.localName === 'h1')?.textContent),
    description: ldString('description') ?? clean(openGraph.description) ?? clean(twitter.description) ?? meta('name', 'description'),
    language: clean(doc.documentElement.getAttribute('lang')) ?? clean(ldString('inLanguage')) ?? clean(openGraph.locale?.replace('_', '-')) ?? meta('http-equiv', 'content-language') ?? clean(input.contentLanguage?.split(',')[0]),
    canonical: abs(links.find((l) => attrIs(l, 'rel', 'canonical'))?.getAttribute('href')),
    // `[rel="author"], [itemprop="author"]` (rel ignores ASCII case in HTML), walked only when needed
    author: nameOf(ldFirst('author')) ?? clean(openGraph['article:author']) ?? clean(twitter.creator) ?? meta('name', 'author') ?? clean(firstElement(doc.documentElement, (e) => attrIs(e, 'rel', 'author') || e.getAttribute('itemprop') === 'author')?.textContent),
    publishedTime: clean(String(ldFirst('datePublished') ?? '')) ?? clean(openGraph['article:published_time']) ?? meta('name', 'date') ?? clean(timeEl?.getAttribute('datetime')),
    modifiedTime: clean(String(ldFirst('dateModified') ?? '')) ?? clean(openGraph['article:modified_time']) ?? clean(openGraph.updated_time),
    siteName: nameOf(publisher) ?? clean(openGraph.site_name) ?? meta('name', 'application-name'),
    keywords: (meta('name', 'keywords') ?? '').split(',').map((k) => k.trim()).filter(Boolean),
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

interface MainContent {
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

const TASK_DONE = '\uE000';
const TASK_OPEN = '\uE001';
const tasks = (s: string, done: string, open: string) => s.replaceAll(TASK_DONE, done).replaceAll(TASK_OPEN, open);

const CODE_LANG = /(?:^|\s)(?:language|lang|highlight-source|brush:?)-?([a-z0-9+#_-]+)/i;

/** Put a code block's language on its <code> as `language-x`, the one class Readability is told to keep. */
function markCodeLanguages(page: ParsedPage): string[] {
  const { doc } = page;
  const classes = new Set<string>();
  for (const pre of named(page, 'pre')) {
    const code = firstDescendant(pre, (e) => e.localName === 'code');
    const from = [code?.getAttribute('class'), pre.getAttribute('class'), pre.parentElement?.getAttribute('class'), code?.getAttribute('data-lang'), pre.getAttribute('data-lang'), pre.getAttribute('data-language')];
    let lang: string | null = null;
    for (const c of from) {
      if (!c) continue;
      const m = CODE_LANG.exec(c);
      if (m) { lang = m[1]!.toLowerCase(); break; }
      if (c === code?.getAttribute('data-lang') || c === pre.getAttribute('data-lang') || c === pre.getAttribute('data-language')) { lang = c.toLowerCase(); break; }
    }
    if (!lang) continue;
    let target = code;
    if (!target) {
      // turndown fences only <pre><code>: give a bare <pre> its <code>
      target = doc.createElement('code');
      while (pre.firstChild) target.appendChild(pre.firstChild);
      pre.appendChild(target);
    }
    const cls = `language-${lang}`;
    target.setAttribute('class', cls);
    classes.add(cls);
  }
  return [...classes];
}

interface ReadabilityInternals {
  _metadata?: { title?: string; byline?: string; excerpt?: string; siteName?: string; publishedTime?: string };
  _articleTitle?: string;
  _articleByline?: string;
  _articleLang?: string;
}

function mainContent(doc: Document, keep: string[], fresh: () => Document): MainContent {
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
    return { root: article.content, fromReadability: true, byline: clean(article.byline), siteName: clean(article.siteName), excerpt: clean(article.excerpt), publishedTime: clean(article.publishedTime), title: clean(article.title), lang: clean(article.lang) };
  }
  // No article: Readability still read the page's metadata before it gave up (JSON-LD, meta
  // tags, the cleaned <title>); keep that, so the reference order holds on every page
  const r = (reader ?? {}) as ReadabilityInternals;
  const m = r._metadata ?? {};
  const d = fresh();
  const body = d.body ?? d.createElement('body');
  body.querySelectorAll('script, style, noscript, template, nav, header, footer, aside, form, iframe, dialog, [role="navigation"], [role="banner"], [role="contentinfo"], [aria-hidden="true"], [hidden]').forEach((n) => n.remove());
  return { root: body, fromReadability: false, byline: clean(m.byline ?? r._articleByline), siteName: clean(m.siteName), excerpt: clean(m.excerpt), publishedTime: clean(m.publishedTime), title: clean(r._articleTitle ?? m.title), lang: null };
}

// Furniture told by id or class: cookie and consent boxes, advertising slots, paywall and meter
// messages, "was this helpful" / "report a problem" boxes
const FURNITURE_NAME = /cookie|consent|gdpr|advert|ad-slot|ad-container|ad-unit|adsbygoogle|google_ads|paywall|meter-|feedback/i;
const SKIP_LINKS = new Set(['#content', '#main', '#main-content']);

/** Cookie banners, consent walls, ads, "[edit]" links, heading permalinks: page furniture, never content. */
function removeDebris(doc: Document) {
  // one walk over the elements for every rule: a selector list of case-insensitive substring
  // matches cost nwsapi ten times as much, and each list is a walk of its own (docs/performance.md)
  const doomed: Element[] = [];
  // `.mw-editsection, .editsection, .edit-link, .post-edit-link, a.headerlink, a.anchor,
  // a.anchorjs-link, a.heading-anchor, a.hash-link, a[href*="action=edit"]`
  const editLinks: Element[] = [];
  // `h1 a[href^="#"]` … `h6 a[href^="#"]`
  const permalinks: Element[] = [];
  // `:is(h1, h2, h3, h4, h5, h6) :is(a, span, button)`
  const inHeading: Element[] = [];
  const editClass = classPattern(doc, ['mw-editsection', 'editsection', 'edit-link', 'post-edit-link']);
  const anchorClass = classPattern(doc, ['headerlink', 'anchor', 'anchorjs-link', 'heading-anchor', 'hash-link']);
  const walk = (parent: Element, heading: boolean) => {
    for (let el = parent.firstElementChild; el; el = el.nextElementSibling) {
      const cls = el.getAttribute('class');
      const name = `${el.id} ${cls ?? ''}`;
      const role = el.getAttribute('role');
      const tag = el.localName;
      const furniture = FURNITURE_NAME.test(name) || el.hasAttribute('data-ad-slot') || role === 'dialog' || role === 'alertdialog' || el.getAttribute('aria-modal') === 'true' || (el.tagName === 'A' && (/(^|\s)skip-link(\s|$)/.test(name) || SKIP_LINKS.has(el.getAttribute('href') ?? '')));
      // a class name is a weak signal: only small boxes go, so an article about cookies stays
      if (furniture && el.tagName !== 'BODY' && el.tagName !== 'HEAD' && (el.textContent ?? '').length < 1500 && !hasDescendantNamed(el, HOLDS_CONTENT)) {
        doomed.push(el);
        continue;
      }
      if (cls !== null && editClass.test(cls)) editLinks.push(el);
      else if (tag === 'a' && ((cls !== null && anchorClass.test(cls)) || (el.getAttribute('href') ?? '').includes('action=edit'))) editLinks.push(el);
      if (heading) {
        if (tag === 'a' && el.getAttribute('href')?.startsWith('#')) permalinks.push(el);
        if (tag === 'a' || tag === 'span' || tag === 'button') inHeading.push(el);
      }
      walk(el, heading || HEADING_NAMES.has(tag));
    }
  };
  if (doc.documentElement) walk(doc.documentElement, false);
  for (const el of doomed) el.remove();
  // in the order the selector lists ran: what an earlier rule removed is gone for the later ones
  for (const el of editLinks) el.remove();
  for (const a of permalinks) {
    if (a.isConnected && /^[\s#¶§🔗]*$/u.test(a.textContent ?? '')) a.remove();
  }
  for (const el of inHeading) {
    if (el.isConnected && /^\s*\[?\s*(edit|edit source|bearbeiten|modifier|править)\s*\]?\s*$/i.test(el.textContent ?? '')) el.remove();
  }
}
const HOLDS_CONTENT = new Set(['article', 'main', 'h1']);
const HEADING_NAMES = new Set(['h1', 'h2', 'h3', 'h4', 'h5', 'h6']);

function isTrackingPixel(img: Element): boolean {
  const w = img.getAttribute('width'), h = img.getAttribute('height');
  if ((w !== null && Number(w) <= 1) || (h !== null && Number(h) <= 1)) return true;
  const src = img.getAttribute('src') ?? '';
  return TRACKER_HOSTS.test(src.replace(/^https?:\/\//, ''));
}

/** Shared clean-up for every content output: no base64 blobs, no pixels, no scripts. */
function prepare(root: Element): Element {
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
function dropTitleHeading(root: Element, title: string | null) {
  if (!title) return;
  const first = firstDescendant(root, (e) => e.localName === 'h1' || e.localName === 'h2');
  if (first && clean(first.textContent) === title) first.remove();
}

function toMarkdown(root: Element, title: string | null): string {
  let md = markdownOf(root).trim();
  md = tasks(md.replace(/\n{3,}/g, '\n\n'), '[x]', '[ ]');
  return `${title ? `# ${title.replace(/\n/g, ' ')}\n\n` : ''}${md}\n`;
}

const BLOCK = new Set(['ADDRESS', 'ARTICLE', 'ASIDE', 'BLOCKQUOTE', 'DETAILS', 'DIV', 'DL', 'DD', 'DT', 'FIELDSET', 'FIGCAPTION', 'FIGURE', 'FOOTER', 'H1', 'H2', 'H3', 'H4', 'H5', 'H6', 'HEADER', 'HR', 'LI', 'MAIN', 'NAV', 'OL', 'P', 'PRE', 'SECTION', 'TABLE', 'TR', 'UL', 'BODY']);

/** Plain text with paragraphs kept: blocks are separated by a blank line, list items start with "- ". */
export function toText(root: Element, title: string | null): string {
  const parts: string[] = [];
  let cur = '';
  const flush = () => {
    const v = cur.replace(/[ \t]+\n/g, '\n').replace(/[ \t]{2,}/g, ' ').trim();
    if (v) parts.push(v);
    cur = '';
  };
  const walk = (n: Node, pre: boolean) => {
    if (n.nodeType === 3) {
      cur += pre ? n.textContent : (n.textContent ?? '').replace(/\s+/g, ' ');
      return;
    }
    if (n.nodeType !== 1) return;
    const el = n as Element;
    const tag = el.tagName;
    if (tag === 'BR') { cur += '\n'; return; }
    if (tag === 'IMG') return;
    if (tag === 'PRE') {
      flush();
      const code = (el.textContent ?? '').replace(/\s+$/, '');
      if (code) parts.push(code);
      return;
    }
    if (tag === 'TABLE') {
      flush();
      const rows = [...el.querySelectorAll('tr')].map((tr) => [...tr.querySelectorAll('th, td')].map((c) => (c.textContent ?? '').replace(/\s+/g, ' ').trim()).join('\t')).filter(Boolean);
      if (rows.length) parts.push(rows.join('\n'));
      return;
    }
    const block = BLOCK.has(tag);
    if (block) flush();
    if (tag === 'LI') cur += '- ';
    if (tag === 'TD' || tag === 'TH') cur += cur && !cur.endsWith('\t') ? '\t' : '';
    for (const c of el.childNodes) walk(c, pre || tag === 'PRE');
    if (block) flush();
  };
  walk(root, false);
  flush();
  if (title && parts[0] !== title) parts.unshift(title);
  return tasks(`${parts.join('\n\n')}\n`, '[x]', '[ ]');
}

let purifier: ReturnType<typeof createDOMPurify> | null = null;
function getPurifier() {
  if (purifier) return purifier;
  const purify = createDOMPurify(sharedWindow as never);
  purify.addHook('uponSanitizeElement', (node, data) => {
    if (data.tagName === 'img' && isTrackingPixel(node as Element)) node.parentNode?.removeChild(node);
  });
  // the only class kept is a code block's language
  purify.addHook('uponSanitizeAttribute', (_node, data) => {
    if (data.attrName === 'class' && !/^language-[a-z0-9+#_-]+$/i.test(data.attrValue)) data.keepAttr = false;
  });
  purify.addHook('afterSanitizeAttributes', (node) => {
    const el = node as Element;
    for (const attr of ['href', 'src']) {
      const v = el.getAttribute?.(attr);
      if (v && !/^(https?:|mailto:|#)/i.test(v)) el.removeAttribute(attr);
    }
    if (el.tagName === 'A' && el.getAttribute('href')) el.setAttribute('rel', 'noopener noreferrer nofollow');
  });
  purifier = purify;
  return purify;
}

function sanitize(root: Element, title: string | null, lang: string | null): string {
  const purify = getPurifier();
  const clean = purify.sanitize(tasks(root.innerHTML, '☑ ', '☐ '), {
    FORBID_TAGS: ['iframe', 'frame', 'frameset', 'object', 'embed', 'form', 'input', 'button', 'select', 'textarea', 'option', 'style', 'link', 'meta', 'base', 'script', 'noscript', 'template', 'svg', 'math', 'dialog', 'portal'],
    FORBID_ATTR: ['style', 'srcset', 'ping', 'action', 'formaction', 'background', 'poster', 'id'],
    ALLOW_DATA_ATTR: false,
    ALLOWED_URI_REGEXP: /^(?:https?:|mailto:|#)/i,
  }) as string;
  return htmlDocument(title, lang, clean);
}

const escapeHtml = (s: string) => s.replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]!);

function htmlDocument(title: string | null, lang: string | null, body: string): string {
  return `<!doctype html>\n<html${lang ? ` lang="${escapeHtml(lang)}"` : ''}>\n<head>\n<meta charset="utf-8">\n<meta name="referrer" content="no-referrer">\n<title>${escapeHtml(title ?? '')}</title>\n</head>\n<body>\n<article>\n${title ? `<h1>${escapeHtml(title)}</h1>\n` : ''}${body.trim()}\n</article>\n</body>\n</html>\n`;
}

export function countWords(s: string): number {
  const m = s.match(/[\p{L}\p{N}]+(?:['’-][\p{L}\p{N}]+)*/gu);
  return m ? m.length : 0;
}
export const readingTime = (words: number) => (words ? Math.ceil(words / 230) : 0);

function emptyMetadata(input: ConvertInput, mt: string, charset: string | null): PageMetadataDoc {
  return {
    schema: 'websitepro.metadata/1', url: input.url, finalUrl: input.finalUrl, redirects: input.redirects, status: input.status,
    contentType: mt, charset, bytes: input.body.length, rendered: input.rendered, title: null, description: null, language: null,
    canonical: null, author: null, publishedTime: null, modifiedTime: null, siteName: null, keywords: [], robots: null,
    favicon: null, image: null, openGraph: {}, twitter: {}, headings: [], links: { total: 0, internal: 0, external: 0 },
    images: 0, wordCount: 0, readingTimeMinutes: 0, warnings: [...(input.warnings ?? [])],
  };
}

/** Facts that need nothing but <title> and <html lang>, for when collectPageFacts itself failed. */
function basicFacts(doc: Document, input: ConvertInput): PageFacts {
  const { title, description, canonical, author, publishedTime, modifiedTime, siteName, keywords, robots, image, openGraph, twitter, headings, links, images } = emptyMetadata(input, 'text/html', null);
  return { title, description, canonical, author, publishedTime, modifiedTime, siteName, keywords, robots, image, openGraph, twitter, headings, links, images, language: clean(doc.documentElement?.getAttribute('lang')), favicon: new URL('/favicon.ico', input.finalUrl).href };
}

/**
 * Readability is the reference for title, byline, excerpt, language, published time and site
 * name (it reads JSON-LD and meta tags itself); where it has nothing, the page facts' own chain
 * (JSON-LD, Open Graph, Twitter, <meta>) fills in.
 */
function buildMetadata(input: ConvertInput, mt: string, charset: string, f: PageFacts, main: MainContent | null): PageMetadataDoc {
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
