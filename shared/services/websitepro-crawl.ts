// websitepro with `crawl` (issue 42): a page set whose pages are found as it goes. The quote is the
// cap (`limit` x the per-page price, one item per output with its quantity, as a batch); the job is
// charged the cap at creation and the slots never used come back as the one `_slots` entry when the
// crawl ends (actors/job-supervisor/pages.ts). Page 0 is the start URL; the supervisor admits the
// others from each page's links (actors/job-supervisor/crawl.ts). docs/websitepro.md "Crawl".
import { ApiError } from '../errors.ts';
import { hostOf } from '../outbound/index.ts';
import { compileScope, ScopeRuleError } from '../crawl/scope.ts';
import { CRAWL_LIMIT_DEFAULT, type CrawlRequest } from '../schemas/crawl.ts';
import type { Config } from '../config/index.ts';
import type { Plan } from './types.ts';
import { WEBSITEPRO_CONTROL_FIELDS } from './websitepro-controls.ts';

/** URLs a map lists when its `crawl.limit` is not given. */
export const MAP_LIMIT_DEFAULT = 5000;
/** A map is priced per block of this many URLs (config pricing.websitepro.map). */
export const MAP_BLOCK = 1000;
export const mapBlocks = (urls: number) => Math.ceil(urls / MAP_BLOCK);

/** The scope rules of a crawl's request (the same on every process). */
export const scopeRulesOf = (start: string, c: CrawlRequest | undefined) => ({
  start,
  ...(c?.allowSubdomains ? { allowSubdomains: true } : {}),
  ...(c?.includePaths ? { includePaths: c.includePaths } : {}),
  ...(c?.excludePaths ? { excludePaths: c.excludePaths } : {}),
  ...(c?.maxDepth !== undefined ? { maxDepth: c.maxDepth } : {}),
});

export function planCrawlJob(start: URL, outputs: string[], crawl: CrawlRequest, config: Config, now = Date.now()): Plan {
  try {
    compileScope(scopeRulesOf(start.href, crawl));
  } catch (e) {
    if (e instanceof ScopeRuleError) throw new ApiError('bad_request', `crawl: ${e.message}`);
    throw e;
  }
  const prices = config.pricing.websitepro as Record<string, number>;
  const slots = crawl.limit ?? CRAWL_LIMIT_DEFAULT;
  const unitPrices = Object.fromEntries(outputs.map((o) => [o, prices[o]!]));
  return {
    target: hostOf(start),
    items: outputs.map((o) => ({ key: o, price: unitPrices[o]! * slots, quantity: slots, unitPrice: unitPrices[o]! })),
    pageSet: {
      kind: 'crawl',
      outputs,
      unitPrices,
      slots,
      // the start URL; the others are appended as they are admitted
      pages: 1,
      window: Math.max(1, Math.min(config.crawl.concurrency, config.limits.walletTasks)),
      state: '-',
      resultCount: 0,
      done: 0,
      failed: 0,
      resultsRefunded: 0,
      crawl: { report: { skipped: {} }, taken: { seq: 0, n: 0 }, ...(crawl.timeout ? { deadline: now + crawl.timeout * 1000 } : {}) },
    },
  };
}

/**
 * websitepro `outputs: ["map"]` (issue 42): the site's URLs as one JSON result, found as a crawl finds
 * pages (sitemaps, then links; robots, scope, depth) with pages fetched only for their links. A page
 * set of kind `crawl` with `map` set: `slots` = URLs listed at most; the quote is ceil(limit/1000)
 * blocks at pricing.websitepro.map; the blocks not used come back in the one `_slots` entry
 * (actors/job-supervisor/map.ts). docs/websitepro.md "Map".
 */
export function planMapJob(
  body: { urls?: unknown; crawl?: CrawlRequest } & Record<string, unknown>,
  start: URL | null,
  outputs: string[],
  config: Config,
  now = Date.now(),
): Plan {
  if (outputs.length !== 1)
    throw new ApiError('bad_request', 'the `map` output is a job of its own: it cannot be combined with other outputs');
  if (body.urls !== undefined || !start) throw new ApiError('bad_request', 'a map starts from one `url`, not `urls`');
  const control = Object.keys(WEBSITEPRO_CONTROL_FIELDS).find((k) => body[k] !== undefined);
  if (control) throw new ApiError('bad_request', `\`${control}\` applies to a page that is converted; a map converts none`);
  const crawl: CrawlRequest = { ...(body.crawl ?? {}), limit: body.crawl?.limit ?? MAP_LIMIT_DEFAULT };
  const plan = planCrawlJob(start, outputs, crawl, config, now);
  const price = config.pricing.websitepro.map;
  const blocks = mapBlocks(crawl.limit!);
  return {
    ...plan,
    items: [{ key: 'map', price: price * blocks, quantity: blocks, unitPrice: price }],
    pageSet: { ...plan.pageSet!, unitPrices: { map: price }, map: {} },
  };
}
