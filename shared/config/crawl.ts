// Settings of crawls (issue 42): robots.txt, sitemaps and the per-origin politeness. The runner reads
// them; shared/crawl/*.ts take them as options (their defaults are these).
import { Type as T } from '@sinclair/typebox';

export const CrawlConfig = T.Object(
  {
    concurrency: T.Integer({
      minimum: 1,
      default: 4,
      description:
        "Pages of one page-set job (a batch, a crawl) in the task queue at once, within the wallet's share of the converters (limits.walletTasks); the supervisor admits the next page when one is recorded.",
    }),
    maxCrawlDelayMs: T.Integer({
      minimum: 0,
      default: 10000,
      description: 'Longest robots.txt Crawl-delay honoured between two pages of one origin; a longer one is cut to this.',
    }),
    robotsUnavailableRetryMs: T.Integer({
      minimum: 1000,
      default: 60000,
      description:
        'After robots.txt answered 5xx (or could not be fetched) the origin is treated as disallowed for this long, then asked again.',
    }),
    robotsMaxBytes: T.Integer({ minimum: 1024, default: 512 * 1024, description: 'Largest robots.txt read (the rest is ignored).' }),
    maxRetryAfterMs: T.Integer({
      minimum: 0,
      default: 120000,
      description: 'Longest Retry-After (429/503) a crawl waits before asking an origin again; a longer one is cut to this.',
    }),
    originConcurrency: T.Integer({
      minimum: 1,
      default: 4,
      description:
        'Pages of one origin in flight at once in one crawl (an origin not the start one waits at 1 until its robots.txt is read).',
    }),
    delayMs: T.Integer({
      minimum: 0,
      default: 0,
      description:
        "Least time between two page starts on one origin in one crawl; the larger of this and robots.txt's Crawl-delay applies. 0: only the concurrency limits.",
    }),
    maxRetries: T.Integer({
      minimum: 0,
      default: 3,
      description:
        'Times a crawl page is asked again after a 429/503 (after the Retry-After, else a back-off) or after our browser-pool could not render it (busy, or no instance answered: a short back-off, its origin not held), the two counted together; after that its results fail (http_error, or busy / service_unavailable), refunded.',
    }),
    pageLostSeconds: T.Integer({
      minimum: 10,
      default: 300,
      description:
        'A crawl page whose task is gone from the task queue with no outcome this long after it was sent is sent again (at most crawl.maxRetries times, then worker_lost).',
    }),
    maxLinksPerPage: T.Integer({
      minimum: 1,
      default: 1000,
      description:
        "Links of one crawled page handed to the crawl's frontier (the first ones in document order); the rest are not followed.",
    }),
    sitemapMaxUrls: T.Integer({ minimum: 1, default: 50000, description: 'URLs read from the sitemaps of one crawl, all files together.' }),
    sitemapMaxFiles: T.Integer({ minimum: 1, default: 50, description: 'Sitemap files (indexes included) read for one crawl.' }),
    sitemapMaxBytes: T.Integer({
      minimum: 1024,
      default: 50 * 1024 * 1024,
      description: 'Largest sitemap file, after gunzip (the sitemaps.org limit is 50 MB).',
    }),
  },
  { default: {} },
);
