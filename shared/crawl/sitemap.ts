// Sitemaps on the crawl's fetch path: sitemap.xml, sitemap indexes, gzip, and the plain-text form, read
// breadth-first from the starts the caller gives (`/sitemap.xml` and robots.txt's `Sitemap:` lines).
//
//   parseSitemap(text)                              pure → {kind, entries}
//   readSitemaps(starts, {allowFetch, ...limits})   fetch through the outbound guard → {urls, files, errors, truncated}
//
// Bounds (config crawl.*): `maxUrls` URLs in all (default 50,000), `maxFiles` files (50), `maxBytes` per
// file after gunzip (50 MB, the sitemaps.org limit), `maxDepth` index nesting (an index of indexes is 2;
// default 3). A file over a bound is an error of that file, not of the crawl.
// - `allowFetch(url)` decides which sitemap files may be fetched (the crawl's scope: another origin is
//   never fetched, even when robots.txt names it); page URLs are returned as found, the caller scopes them;
// - XML is parsed with fast-xml-parser with entity processing off (no DOCTYPE entities, so no expansion
//   bombs); the five XML entities and character references in `<loc>` are decoded here;
// - a body that starts with the gzip magic bytes is gunzipped (node:zlib, output bounded), whatever its
//   content type: `.xml.gz` files are often served as application/octet-stream.
import zlib from 'node:zlib';
import { promisify } from 'node:util';
import { XMLParser } from 'fast-xml-parser';
import { guardedFetch, type GuardedFetchOptions } from '../outbound/index.ts';

const gunzip = promisify(zlib.gunzip);

export interface SitemapEntry {
  loc: string;
  lastmod?: string;
}

export interface ParsedSitemap {
  kind: 'urlset' | 'sitemapindex' | 'text' | 'unknown';
  entries: SitemapEntry[];
}

export interface SitemapOptions {
  guard: GuardedFetchOptions;
  allowFetch(url: string): boolean;
  maxUrls?: number;
  maxFiles?: number;
  maxBytes?: number;
  maxDepth?: number;
  /** One file's fetch. Default 20 s. */
  timeoutMs?: number;
}

export interface SitemapResult {
  urls: SitemapEntry[];
  /** Sitemap files fetched. */
  files: number;
  errors: { url: string; error: string }[];
  /** A bound was reached: more URLs or files may exist. */
  truncated: boolean;
}

const parser = new XMLParser({
  ignoreAttributes: true,
  removeNSPrefix: true,
  processEntities: false,
  parseTagValue: false,
  isArray: (name) => name === 'url' || name === 'sitemap',
});

const XML_ENTITIES: Record<string, string> = { amp: '&', lt: '<', gt: '>', quot: '"', apos: "'" };
function decodeXml(s: string): string {
  return s.replace(/&(#x[0-9a-f]+|#\d+|amp|lt|gt|quot|apos);/gi, (m, e: string) => {
    if (e[0] === '#') {
      const n = e[1] === 'x' || e[1] === 'X' ? Number.parseInt(e.slice(2), 16) : Number.parseInt(e.slice(1), 10);
      return n > 0 && n <= 0x10ffff ? String.fromCodePoint(n) : m;
    }
    return XML_ENTITIES[e.toLowerCase()] ?? m;
  });
}

const text = (v: unknown): string | undefined => {
  if (typeof v === 'string') return decodeXml(v.trim());
  if (typeof v === 'number') return String(v);
  if (v && typeof v === 'object' && '#text' in v) return text((v as { '#text': unknown })['#text']);
  return undefined;
};

export function parseSitemap(body: string): ParsedSitemap {
  const start = body.trimStart();
  if (!start.startsWith('<')) {
    // the plain-text form: one absolute URL per line
    const entries = start
      .split(/\r?\n/)
      .map((l) => l.trim())
      .filter((l) => /^https?:\/\//i.test(l))
      .map((loc) => ({ loc }));
    return { kind: 'text', entries };
  }
  const doc = parser.parse(body) as Record<string, unknown>;
  const pick = (items: unknown): SitemapEntry[] =>
    (Array.isArray(items) ? items : []).flatMap((it) => {
      const o = (it ?? {}) as Record<string, unknown>;
      const loc = text(o.loc);
      if (!loc) return [];
      const lastmod = text(o.lastmod);
      return [lastmod ? { loc, lastmod } : { loc }];
    });
  const urlset = doc.urlset as Record<string, unknown> | undefined;
  if (urlset && typeof urlset === 'object') return { kind: 'urlset', entries: pick(urlset.url) };
  const index = doc.sitemapindex as Record<string, unknown> | undefined;
  if (index && typeof index === 'object') return { kind: 'sitemapindex', entries: pick(index.sitemap) };
  return { kind: 'unknown', entries: [] };
}

const GZIP_MAGIC = (b: Buffer) => b.length > 2 && b[0] === 0x1f && b[1] === 0x8b;

async function fetchFile(url: string, opts: SitemapOptions, maxBytes: number): Promise<string> {
  const res = await guardedFetch(url, {
    ...opts.guard,
    timeoutMs: opts.timeoutMs ?? 20000,
    maxBytes,
    headers: { accept: 'application/xml,text/xml,text/plain,application/gzip;q=0.9,*/*;q=0.5' },
  });
  if (res.status < 200 || res.status >= 300) throw new Error(`HTTP ${res.status}`);
  let body = res.body;
  if (GZIP_MAGIC(body)) {
    try {
      body = await gunzip(body, { maxOutputLength: maxBytes });
    } catch (e) {
      throw new Error(/maxOutputLength|too large|buffer/i.test((e as Error).message) ? `more than ${maxBytes} bytes unzipped` : 'bad gzip');
    }
  }
  return body.toString('utf8');
}

export async function readSitemaps(starts: string[], opts: SitemapOptions): Promise<SitemapResult> {
  const maxUrls = opts.maxUrls ?? 50000;
  const maxFiles = opts.maxFiles ?? 50;
  const maxBytes = opts.maxBytes ?? 50 * 1024 * 1024;
  const maxDepth = opts.maxDepth ?? 3;
  const out: SitemapResult = { urls: [], files: 0, errors: [], truncated: false };
  const seenFiles = new Set<string>();
  const seenUrls = new Set<string>();
  const queue: { url: string; depth: number }[] = [];
  const enqueue = (url: string, depth: number) => {
    if (seenFiles.has(url)) return;
    seenFiles.add(url);
    if (!opts.allowFetch(url)) {
      out.errors.push({ url, error: 'out_of_scope' });
      return;
    }
    if (depth > maxDepth) {
      out.errors.push({ url, error: 'too_deep' });
      return;
    }
    queue.push({ url, depth });
  };
  for (const s of starts) enqueue(s, 1);
  while (queue.length) {
    if (out.files >= maxFiles) {
      out.truncated = true;
      break;
    }
    if (out.urls.length >= maxUrls) break;
    const { url, depth } = queue.shift()!;
    out.files++;
    let parsed: ParsedSitemap;
    try {
      parsed = parseSitemap(await fetchFile(url, opts, maxBytes));
    } catch (e) {
      out.errors.push({ url, error: (e as Error).message.slice(0, 200) });
      continue;
    }
    if (parsed.kind === 'unknown') {
      out.errors.push({ url, error: 'not a sitemap' });
      continue;
    }
    if (parsed.kind === 'sitemapindex') {
      for (const e of parsed.entries) if (/^https?:\/\//i.test(e.loc)) enqueue(e.loc, depth + 1);
      continue;
    }
    for (const e of parsed.entries) {
      if (!/^https?:\/\//i.test(e.loc) || seenUrls.has(e.loc)) continue;
      if (out.urls.length >= maxUrls) {
        out.truncated = true;
        break;
      }
      seenUrls.add(e.loc);
      out.urls.push(e);
    }
  }
  return out;
}
