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

/** The scope rules of a crawl's request (the same on every process). */
export const scopeRulesOf = (start: string, c: CrawlRequest | undefined) => ({
  start,
  ...(c?.allowSubdomains ? { allowSubdomains: true } : {}),
  ...(c?.includePaths ? { includePaths: c.includePaths } : {}),
  ...(c?.excludePaths ? { excludePaths: c.excludePaths } : {}),
  ...(c?.maxDepth !== undefined ? { maxDepth: c.maxDepth } : {}),
});

export function planCrawlJob(start: URL, outputs: string[], crawl: CrawlRequest, config: Config, now = Date.now()): Plan {
  if (crawl.sitemap === 'only') throw new ApiError('bad_request', '`crawl.sitemap: "only"` is not available on this server yet');
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
      crawl: { report: { skipped: {} }, ...(crawl.timeout ? { deadline: now + crawl.timeout * 1000 } : {}) },
    },
  };
}
