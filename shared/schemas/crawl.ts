// The websitepro body's fields for more than one page (issue 42, docs/notes/session-29-contract.md
// section 1): `urls` (a batch), `crawl` and `maxAge`. One definition each (TypeBox: validation,
// types, OpenAPI); shared/services/websitepro.ts spreads CRAWL_BODY_FIELDS into its body.
import { Type as T, type Static } from '@sinclair/typebox';

/** The longest URL of a body (the spec's), also each entry of `urls`. */
export const URL_MAX_LENGTH = 2048;
/**
 * Entries of `urls`: far more than the spec's 64 KB body can hold with real URLs (about 2,500 of
 * 25 characters); the body limit is the real bound, this one only keeps a body of tiny strings small.
 */
export const URLS_MAX = 10_000;
export const CRAWL_LIMIT_MAX = 10_000;
export const CRAWL_LIMIT_DEFAULT = 100;
/** The longest deadline a crawl may ask for (seconds). */
export const CRAWL_TIMEOUT_MAX_S = 6 * 3600;

export const UrlsField = T.Array(T.String({ minLength: 1, maxLength: URL_MAX_LENGTH }), {
  minItems: 1,
  maxItems: URLS_MAX,
  description:
    'A batch: public http(s) URLs to convert in one job, instead of `url` (exactly one of the two). As many as the 64 KB body holds; the same URL twice is converted once and its slot refunded. Results are keyed `<pageKey>/<output>` and read in pages (`resultsNext`).',
});

const PathGlobs = (description: string) => T.Array(T.String({ minLength: 1, maxLength: 256 }), { minItems: 1, maxItems: 50, description });

export const CrawlOptions = T.Object(
  {
    limit: T.Optional(
      T.Integer({
        minimum: 1,
        maximum: CRAWL_LIMIT_MAX,
        // no schema default: a map's default (MAP_LIMIT_DEFAULT) differs from a crawl's; the plan applies each
        description:
          'Most pages converted, default 100 (the quote is `limit` x the per-page price; slots not used are refunded). A map (`outputs: ["map"]`): most URLs listed, default 5,000.',
      }),
    ),
    maxDepth: T.Optional(
      T.Integer({ minimum: 0, maximum: 1000, description: 'Links followed from the start URL; default: no bound but the limit.' }),
    ),
    includePaths: T.Optional(PathGlobs('Globs on the path (e.g. `/docs/**`): only matching pages are converted.')),
    excludePaths: T.Optional(PathGlobs('Globs on the path: matching pages are skipped.')),
    sitemap: T.Optional(
      T.Union([T.Literal('include'), T.Literal('skip'), T.Literal('only')], {
        default: 'include',
        description: '`include`: sitemaps and links; `skip`: links only; `only`: sitemaps only.',
      }),
    ),
    allowSubdomains: T.Optional(T.Boolean({ default: false, description: 'Also crawl subdomains of the start host.' })),
    timeout: T.Optional(
      T.Integer({
        minimum: 10,
        maximum: CRAWL_TIMEOUT_MAX_S,
        description: 'Deadline of the whole crawl (seconds); slots not fetched by then are refunded.',
      }),
    ),
  },
  { additionalProperties: false, description: 'Crawl the start URL’s origin: one job, every page a result.' },
);
export type CrawlRequest = Static<typeof CrawlOptions>;

export const MaxAgeField = T.Integer({
  minimum: 0,
  maximum: 30 * 86400,
  // no schema default: a body without it stays as sent (Ajv would add `maxAge: 0` to every body)
  description:
    "Seconds (default 0: always fetch; at most the server's `websitepro.cacheMaxAgeSeconds`, 7 days by default): a page fetched this recently may be served from the fetch cache (the result then says `cachedAt`), at the same price. Only a request with no `headers`/`cookies` and no `waitFor`/`actions` reads or writes the cache.",
});

/**
 * The fields spread into WebsiteproBody. `crawl` is backed by the crawl's modules, `maxAge` by the
 * converter's fetch cache (actors/converter/cache.ts).
 */
export const CRAWL_BODY_FIELDS = {
  urls: T.Optional(UrlsField),
  crawl: T.Optional(CrawlOptions),
  maxAge: T.Optional(MaxAgeField),
};
