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
  return (await admitLinks(g, [link]))[0]!;
}

/**
 * A page's links through the filters, in their order; those that pass every filter but the frontier
 * are admitted together (Frontier.admitMany: a page's links cost a few round trips, not a few each).
 */
export async function admitLinks(g: LinkGate, links: { url: string; depth: number; from?: string }[]): Promise<LinkVerdict[]> {
  const out: LinkVerdict[] = new Array(links.length);
  const skip = (i: number, reason: Exclude<SkipReason, 'robots_unavailable' | 'deadline'>) => {
    g.report.skip(reason, links[i]!.url);
    out[i] = { ok: false, reason };
  };
  const passed: number[] = [];
  for (let i = 0; i < links.length; i++) {
    const link = links[i]!;
    const key = uniqueKey(link.url);
    if (!key) {
      skip(i, 'bad_url');
      continue;
    }
    const inScope = g.scope.check(key, link.depth);
    if (!inScope.ok) {
      skip(i, inScope.reason);
      continue;
    }
    const robots = await g.robots.check(key);
    if (robots.ok) passed.push(i);
    else if (robots.reason === 'robots_unavailable')
      out[i] = { ok: false, reason: 'robots_unavailable', ...(robots.retryAt ? { retryAt: robots.retryAt } : {}) };
    else skip(i, 'robots');
  }
  if (!passed.length) return out;
  const admitted = await g.frontier.admitMany(
    g.jobId,
    passed.map((i) => {
      const l = links[i]!;
      return { url: l.url, depth: l.depth, ...(l.from ? { from: l.from } : {}) };
    }),
    g.limit,
  );
  passed.forEach((i, k) => {
    const a = admitted[k]!;
    if (a.ok) out[i] = { ok: true, n: a.n };
    else skip(i, a.reason);
  });
  return out;
}
