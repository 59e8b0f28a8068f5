// A page of a page-set job (websitepro `urls`; the crawl's pages too): one task per page, which
// fetches the page once and makes every output of the job from that one fetch (no leader and
// followers: the task is the page). Each output's file is stored as `<jobId>/<pageKey>/<output>`;
// the task's outcome carries what became of every output (`extra.outputs`) and the final URL
// (`extra.page`), which the supervisor records as the page's results (actors/job-supervisor/pages.ts).
import { objectName, type StoredFile } from '../../shared/protocol/jobs.ts';
import type { TaskContext, TaskResult } from '../../shared/worker.ts';
import { OutboundError } from '../../shared/outbound/index.ts';
import { cachedFetch, targetFetchOptions } from './cache.ts';
import { putObject } from '../../shared/nats/objects.ts';
import { ApiError } from '../../shared/errors.ts';
import { resultKey } from '../../shared/crawl/keys.ts';
import type { PageTaskParams } from '../../shared/jobs/pages.ts';
import { ROBOTS_TEXT_MAX, type RetryFact, type RobotsText } from '../../shared/jobs/crawl.ts';
import { fetchRobots, RobotsCache, type RobotsOptions } from '../../shared/crawl/robots.ts';
import { parseRetryAfter } from '../../shared/crawl/politeness.ts';
import { uniqueKey } from '../../shared/crawl/normalize.ts';
import { readSitemaps } from '../../shared/crawl/sitemap.ts';
import { sniffType } from './sniff.ts';
import { wallFailure } from './walls.ts';
import { ConversionError } from './pool.ts';
import { CONTENT_TYPES, type ConvertInput, type ConvertResult, type OutputFile, type OutputFailure, type TextOutput } from './types.ts';
import {
  browserFailure,
  browserHttpError,
  convertPage,
  ourCapacity,
  renderHtml,
  renderHtmlRetrying,
  renderPdf,
  taskControls,
  type RenderHtmlReply,
} from './browser.ts';
import { RENDER_KEY } from '../../shared/services/index.ts';
import { isHtmlType } from './sniff.ts';
import type { Deps } from './job-files.ts';
import { sleep } from '../../shared/runtime.ts';

/** What a page task needs of the converter. */
export type PageDeps = Pick<Deps, 'nc' | 'config' | 'pool'>;

/** What became of one output of the page. */
/** An output's file or failure; `done` without a file: the page's `render` (a result of its own, as in a one-page job). */
export type PageOutput = { file: StoredFile } | { done: true } | { error: string; message: string; extra?: Record<string, unknown> };
/** The page task's outcome facts (`extra`): the final URL and every output's file or failure. */
export type PageOutcomeExtra = {
  page: string;
  /** A page of a request with selector controls: each selector's match count (the results' `selectors`). */
  selectors?: Record<string, number>;
  outputs: Record<string, PageOutput>;
  /** A crawl's page: its links (absolute, in document order, at most crawl.maxLinksPerPage). */
  links?: string[];
  /** A crawl's first page: the start origin's robots.txt as read (the supervisor admits links by it). */
  robots?: RobotsText;
  /** A crawl's first page: the URLs of the origin's sitemaps (robots.txt's `Sitemap:` lines, else /sitemap.xml). */
  sitemap?: string[];
  /** The page's `<link rel=canonical>` when it is on the page's origin and another page (by uniqueKey). */
  canonical?: string;
  /**
   * A crawl page to ask again later, no result: it answered 429/503 (not a wall), or (`ours`, status
   * null) our browser-pool could not render it now, which the supervisor does not hold against its origin.
   */
  retry?: RetryFact;
  /** A crawl page on another origin whose own robots.txt forbids it or cannot be read: no result. */
  skipped?: 'robots' | 'robots_unavailable';
  /** With `crawl.originRobots`: that origin's Crawl-delay (bounded), for its politeness. */
  crawlDelayMs?: number;
  /** The page was served from the fetch cache: when it was fetched (ISO). */
  cachedAt?: string;
};

/**
 * robots.txt of the other origins a crawl reaches (allowSubdomains), read once per origin by this
 * converter (one cache per config) and kept 10 minutes (bounded: 256 origins); the start origin's is
 * the supervisor's.
 */
const originRobots = new WeakMap<PageDeps['config'], RobotsCache>();
function robotsOfOrigins(config: PageDeps['config'], guard: RobotsOptions['guard']): RobotsCache {
  let c = originRobots.get(config);
  if (!c) originRobots.set(config, (c = new RobotsCache({ guard, ...config.crawl }, 256, 10 * 60_000)));
  return c;
}

const failAll = (outputs: string[], f: { error: string; message: string; extra?: Record<string, unknown> }) =>
  Object.fromEntries(outputs.map((o) => [o, f]));

/** A download's file name: the page key with its folders joined (`docs_intro.md`); the zip keeps the folders. */
const downloadName = (pageKey: string, ext: string) => `${pageKey.replace(/\//g, '_')}.${ext}`;

export const isPageTask = (params: Record<string, unknown>) => params.page === true;

export async function handlePage(deps: PageDeps, ctx: TaskContext): Promise<TaskResult> {
  const { task } = ctx;
  const began = Date.now();
  const p = task.params as unknown as PageTaskParams;
  const outputs = p.outputs as (TextOutput | 'pdf' | 'rawHtml' | typeof RENDER_KEY)[];
  // a map's page (linksOnly) makes no output: only its links, for the supervisor
  const text = p.linksOnly ? [] : outputs.filter((o): o is TextOutput => o !== 'pdf' && o !== 'rawHtml' && o !== RENDER_KEY);
  const { config } = deps;
  const put = async (o: string, data: Uint8Array, contentType: string, ext: string): Promise<StoredFile> => {
    const name = objectName(task.jobId, resultKey(p.pageKey, o));
    const filename = downloadName(p.pageKey, ext);
    await putObject(deps.nc, task.store, { name, description: contentType, metadata: { filename } }, data);
    return { store: task.store, name, contentType, bytes: data.length, filename };
  };

  const guard = {
    allowCidrs: config.outbound.allowCidrs,
    maxRedirects: config.outbound.maxRedirects,
    connectTimeoutMs: config.outbound.connectTimeoutMs,
  };
  // a crawl's first page reads robots.txt before anything else (outbound fetches happen in workers);
  // a start URL it disallows, or an origin whose robots.txt cannot be read (5xx), is not fetched
  let robots: RobotsText | undefined;
  let sitemap: string[] | undefined;
  if (p.crawl?.robots) {
    const rules = await fetchRobots(new URL(p.url).origin, { guard, ...config.crawl });
    if (rules.state === 'unreachable')
      return {
        extra: {
          page: p.url,
          outputs: failAll(outputs, {
            error: 'robots_unavailable',
            message: `robots.txt of ${new URL(p.url).origin} could not be read (${rules.status ?? 'no answer'}); the crawl fetches nothing of it`,
          }),
        } satisfies PageOutcomeExtra,
      };
    if (!rules.allows(p.url))
      return {
        extra: {
          page: p.url,
          outputs: failAll(outputs, { error: 'robots_disallowed', message: 'robots.txt disallows the start URL' }),
        } satisfies PageOutcomeExtra,
      };
    robots = { status: rules.status, text: (rules.text ?? '').slice(0, ROBOTS_TEXT_MAX) };
    if (p.crawl.sitemaps) sitemap = await sitemapUrls(deps, p.url, rules.sitemaps, p.crawl.sitemaps, guard);
  }
  // a page on another origin than the start's reads that origin's robots.txt first
  let crawlDelayMs: number | undefined;
  if (p.crawl?.originRobots) {
    const v = await robotsOfOrigins(config, guard).check(p.url);
    if (!v.ok) return { extra: { page: p.url, outputs: {}, skipped: v.reason } satisfies PageOutcomeExtra };
    crawlDelayMs = v.crawlDelayMs;
  }
  const crawled = (extra: PageOutcomeExtra): PageOutcomeExtra => ({
    ...extra,
    ...(robots ? { robots } : {}),
    ...(sitemap?.length ? { sitemap } : {}),
    ...(crawlDelayMs !== undefined ? { crawlDelayMs } : {}),
  });
  // a map's page 0 with `sitemap: "only"` reads robots.txt and the sitemaps, nothing else
  if (p.linksOnly && p.sitemapOnly) return { extra: crawled({ page: p.url, outputs: {} }) };

  let res;
  let cachedAt: string | undefined;
  try {
    // a page set sends no headers or cookies: the cache is read and written unless waitFor / actions
    // render the page (as a one-page job's)
    ({ res, cachedAt } = await cachedFetch(deps.nc, config, p.url, targetFetchOptions(config, ctx.signal), {
      maxAge: p.maxAge ?? 0,
      eligible: !(p.controls?.waitFor || p.controls?.actions?.length),
    }));
  } catch (e) {
    if (ctx.signal.aborted) throw e;
    const f = e instanceof OutboundError ? { error: e.code, message: e.message } : { error: 'unreachable', message: (e as Error).message };
    return { extra: crawled({ page: p.url, outputs: failAll(outputs, f) }) };
  }
  // a wall (bot challenge, CAPTCHA, login) is not a delivery: every output of the page fails with
  // its evidence (shared/crawl/walls.ts), as in a one-page job
  const wall = wallFailure(res);
  if (wall) return { extra: crawled({ page: res.url, outputs: failAll(outputs, wall) }) };
  // a crawl's page that says "not now" is asked again later (the supervisor holds its origin), not failed
  if (p.crawl && (res.status === 429 || res.status === 503))
    return {
      extra: crawled({
        page: res.url,
        outputs: {},
        retry: { status: res.status, retryAfterMs: parseRetryAfter(res.headers['retry-after'], Date.now()) },
      }),
    };
  if (res.status >= 400)
    return {
      extra: crawled({
        page: res.url,
        outputs: failAll(outputs, { error: 'http_error', message: `the target answered HTTP ${res.status}` }),
      }),
    };

  const out: Record<string, PageOutput> = {};
  // each selector's matches (the most any pass saw), as a one-page job's results give them
  const selectors: Record<string, number> = {};
  const counted = (more: Record<string, number> | undefined) => {
    for (const [k, n] of Object.entries(more ?? {})) selectors[k] = Math.max(selectors[k] ?? 0, n);
  };
  let links: string[] | undefined;
  let canonical: string | undefined;
  // the page as converted: as fetched, or as rendered for the request's waitFor / actions (its
  // `render` result, one per page), as a one-page job's render (actors/converter/index.ts)
  const page = { body: res.body, contentType: String(res.headers['content-type'] ?? ''), finalUrl: res.url, rendered: false };
  if (outputs.includes(RENDER_KEY)) {
    const failed = (f: { error: string; message: string; extra?: Record<string, unknown> }) => ({
      extra: crawled({ page: res.url, outputs: failAll(outputs, f) }),
    });
    if (!isHtmlType(sniffType(res.body, page.contentType)))
      return failed({
        error: 'selector_not_found',
        message: `the target is ${page.contentType || 'not HTML'}, which has no elements to wait for or act on`,
      });
    let r: RenderHtmlReply;
    const controls = taskControls(p as unknown as Record<string, unknown>);
    try {
      // our own capacity is not the page's failure: a crawl's page is sent again later by the
      // supervisor (its origin not held); a batch page, which has no later send, is rendered again here
      r = p.crawl
        ? await renderHtml(deps.nc, config, res.url, controls)
        : await renderHtmlRetrying(deps.nc, config, res.url, controls, { began, signal: ctx.signal, sleep });
    } catch (e) {
      if (ctx.signal.aborted) throw e;
      const f = browserFailure(e, 'renders pages');
      if (p.crawl && ourCapacity(f.error))
        return { extra: crawled({ page: res.url, outputs: {}, retry: { status: null, ours: f.error, retryAfterMs: null } }) };
      return failed({ error: f.error, message: f.message, ...(f.extra ? { extra: f.extra } : {}) });
    }
    // the browser's own answer counts as the fetch's did: a crawl asks again after a 429/503, an error page is no delivery
    if (p.crawl && (r.status === 429 || r.status === 503))
      return { extra: crawled({ page: res.url, outputs: {}, retry: { status: r.status, retryAfterMs: null } }) };
    const httpError = browserHttpError(r);
    if (httpError) return failed(httpError);
    counted(r.selectors);
    Object.assign(page, {
      body: Buffer.from(r.html, 'utf8'),
      contentType: 'text/html; charset=utf-8',
      finalUrl: r.finalUrl || res.url,
      rendered: true,
    });
    out[RENDER_KEY] = { done: true };
  }
  const { removeSelectors, targetSelectors, mainContent } = p.controls ?? {};
  const htmlControls =
    removeSelectors || targetSelectors || mainContent === false ? { removeSelectors, targetSelectors, mainContent } : undefined;
  // a crawl's page also gives its links (the links output's one extractor), stored only when asked for
  const made: TextOutput[] = p.crawl && !text.includes('links') ? [...text, 'links'] : text;
  if (made.length) {
    const base: ConvertInput = {
      body: page.body,
      contentType: page.contentType,
      contentLanguage: res.headers['content-language'] as string | undefined,
      status: res.status,
      url: p.url,
      finalUrl: page.finalUrl,
      redirects: res.chain.slice(0, -1),
      rendered: page.rendered,
      outputs: made,
      warnings: [],
      ...(htmlControls ? { controls: htmlControls } : {}),
    };
    let result: ConvertResult;
    try {
      // a page rendered already is converted as it is; else a page that needs JavaScript is rendered
      ({ result } = page.rendered
        ? { result: await deps.pool.run(base) }
        : await convertPage(
            (input) => deps.pool.run(input),
            base,
            () => renderHtml(deps.nc, config, res.url, taskControls(p as unknown as Record<string, unknown>)),
          ));
    } catch (e) {
      const f =
        e instanceof ConversionError
          ? { error: e.code, message: e.message }
          : { error: 'conversion_failed', message: (e as Error).message };
      result = { outputs: Object.fromEntries(made.map((o) => [o, { ok: false, ...f }])) };
    }
    if (result.needsJavaScript) throw new Error('unreachable: the page was converted');
    counted(result.selectors);
    const found = result.outputs.links as OutputFile | OutputFailure | undefined;
    if (p.crawl && !p.sitemapOnly && found?.ok) links = linkUrls(found.data, config.crawl.maxLinksPerPage);
    if (p.crawl && result.canonical) canonical = sameOriginCopy(result.canonical, res.url);
    for (const o of text) {
      const r = result.outputs[o] as OutputFile | OutputFailure | undefined;
      if (!r) out[o] = { error: 'conversion_failed', message: `no ${o} was produced` };
      else if (!r.ok) out[o] = { error: r.error, message: r.message };
      else out[o] = { file: await put(o, Buffer.from(r.data, 'utf8'), r.contentType, r.ext || CONTENT_TYPES[o].ext) };
    }
  }
  if (outputs.includes('rawHtml'))
    // the page as fetched (its own bytes and content type) or as rendered (UTF-8)
    out.rawHtml = isHtmlType(sniffType(page.body, page.contentType))
      ? { file: await put('rawHtml', page.body, page.contentType || 'text/html', 'raw.html') }
      : { error: 'unsupported_content', message: `a ${page.contentType || 'non-HTML'} target has no rawHtml` };
  if (outputs.includes('pdf')) {
    // a PDF target is its own PDF; everything else is printed by a browser
    if (sniffType(res.body, String(res.headers['content-type'] ?? '')) === 'application/pdf')
      out.pdf = { file: await put('pdf', res.body, 'application/pdf', 'pdf') };
    else
      out.pdf = await printPage(
        deps,
        task.store,
        objectName(task.jobId, resultKey(p.pageKey, 'pdf')),
        res.url,
        downloadName(p.pageKey, 'pdf'),
        p,
      );
  }
  return {
    extra: crawled({
      page: res.url,
      outputs: out,
      ...(p.controls ? { selectors } : {}),
      ...(links ? { links } : {}),
      ...(canonical ? { canonical } : {}),
      ...(cachedAt ? { cachedAt } : {}),
    }),
  };
}

/** The canonical URL when it names another page of the same origin (a crawl folds the copy), else undefined. */
function sameOriginCopy(canonical: string, page: string): string | undefined {
  try {
    if (new URL(canonical).origin !== new URL(page).origin) return undefined;
    return uniqueKey(canonical) !== uniqueKey(page) ? canonical : undefined;
  } catch {
    return undefined;
  }
}

/** The origin's sitemap URLs (files of another origin are never fetched); none when they cannot be read. */
async function sitemapUrls(
  deps: PageDeps,
  start: string,
  named: string[],
  max: number,
  guard: { allowCidrs: string[]; maxRedirects: number; connectTimeoutMs: number },
): Promise<string[]> {
  const origin = new URL(start).origin;
  const c = deps.config.crawl;
  try {
    const r = await readSitemaps(named.length ? named : [`${origin}/sitemap.xml`], {
      guard,
      allowFetch: (u) => new URL(u).origin === origin,
      maxUrls: max,
      maxFiles: c.sitemapMaxFiles,
      maxBytes: c.sitemapMaxBytes,
    });
    return r.urls.map((u) => u.loc).slice(0, max);
  } catch {
    return [];
  }
}

/** The URLs of the links output's JSON, distinct, at most `max`. */
function linkUrls(json: string, max: number): string[] {
  const urls = new Set<string>();
  for (const l of JSON.parse(json) as { url: string }[]) {
    if (urls.size >= max) break;
    urls.add(l.url);
  }
  return [...urls];
}

async function printPage(
  deps: PageDeps,
  store: string,
  name: string,
  url: string,
  filename: string,
  p: PageTaskParams,
): Promise<PageOutput> {
  try {
    // the page's controls and pdf options, as a one-page job's print (no credentials: a page set has none)
    const reply = await renderPdf(
      deps.nc,
      deps.config,
      { url, store, objectName: name },
      taskControls(p as unknown as Record<string, unknown>),
    );
    return { file: { store, name, contentType: 'application/pdf', bytes: reply.bytes, filename } };
  } catch (e) {
    if (e instanceof ApiError)
      return {
        error: e.code === 'internal' ? String(e.details?.reason ?? 'render_failed') : e.code,
        message: e.message,
      };
    return { error: 'render_failed', message: (e as Error).message };
  }
}
