// A found link's way into the crawl, one filter after another (each a separate part with a small
// interface, STYLE.md's Crawlee/Scrapy section):
//   uniqueKey (normalize.ts) → scope (scope.ts) → robots.txt (robots.ts) → visited set and limit (frontier.ts)
// The first that refuses says why, and the report (report.ts) counts it. `robots_unavailable` is not
// counted: the origin's robots.txt answered 5xx, so the caller holds the link until `retryAt` (or the
// crawl's deadline, then it counts as `robots_unavailable`).
//
// Counts are of links as found (a disallowed URL linked from 50 pages counts 50); samples are distinct URLs.
// Robots comes before the frontier so a disallowed URL never takes one of the crawl's slots.
import type { Frontier } from './frontier.ts';
import { uniqueKey } from './normalize.ts';
import type { CrawlReport, SkipReason } from './report.ts';
import type { RobotsCache } from './robots.ts';
import type { Scope } from './scope.ts';

export interface LinkGate {
  jobId: string;
  limit: number;
  scope: Scope;
  robots: Pick<RobotsCache, 'check'>;
  frontier: Frontier;
  report: CrawlReport;
}

export type LinkVerdict =
  | { ok: true; n: number }
  | { ok: false; reason: Exclude<SkipReason, 'robots_unavailable' | 'deadline'> }
  | { ok: false; reason: 'robots_unavailable'; retryAt?: number };

export async function admitLink(g: LinkGate, link: { url: string; depth: number; from?: string }): Promise<LinkVerdict> {
  const skip = (reason: Exclude<SkipReason, 'robots_unavailable' | 'deadline'>): LinkVerdict => {
    g.report.skip(reason, link.url);
    return { ok: false, reason };
  };
  const key = uniqueKey(link.url);
  if (!key) return skip('bad_url');
  const inScope = g.scope.check(key, link.depth);
  if (!inScope.ok) return skip(inScope.reason);
  const robots = await g.robots.check(key);
  if (!robots.ok) {
    if (robots.reason === 'robots_unavailable')
      return { ok: false, reason: 'robots_unavailable', ...(robots.retryAt ? { retryAt: robots.retryAt } : {}) };
    return skip('robots');
  }
  const admitted = await g.frontier.admit(
    g.jobId,
    { url: link.url, depth: link.depth, ...(link.from ? { from: link.from } : {}) },
    g.limit,
  );
  if (!admitted.ok) return skip(admitted.reason);
  return { ok: true, n: admitted.n };
}
