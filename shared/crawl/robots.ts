// robots.txt on the crawl's fetch path (a middleware: the fetcher asks before it fetches).
//
//   fetchRobots(origin, opts)       → RobotsRules   one fetch through the outbound guard, parsed with robots-parser
//   parseRobots(origin, text, opts) → RobotsRules   pure
//   new RobotsCache(opts)           one crawl's rules, per origin (each origin fetched once; concurrent asks share it)
//     .check(url) → {ok: true, crawlDelayMs} | {ok: false, reason: 'robots' | 'robots_unavailable', retryAt?}
//
// The user agent token is ROBOTS_AGENT (`PayloadsFetcher`, shared/outbound/fetch.ts), the name in the
// User-Agent every fetch sends. The rules follow RFC 9309:
// - 2xx: the file's rules for our token, else for `*` (robots-parser: longest match wins, Allow on a tie);
// - 4xx (404, 401, 403, 410, ...): "unavailable", everything is allowed;
// - 5xx, 429, or no answer (unreachable, timeout): "unreachable", everything is disallowed for now: the
//   rules are asked again after `robotsUnavailableRetryMs` (config crawl.*, default 60 s); the check says
//   `robots_unavailable` with `retryAt`, so the scheduler can hold the origin's pages rather than skip them;
// - redirects are followed (up to outbound.maxRedirects, each hop checked by the guard);
// - only the first `robotsMaxBytes` (default 512 KiB; RFC 9309 asks for at least 500 KiB) are read;
// - `Crawl-delay` (seconds, for our token or `*`) is honoured up to `maxCrawlDelayMs` (default 10 s);
// - `Sitemap:` lines are returned for sitemap.ts.
import robotsParserModule from 'robots-parser';
import { OutboundError, ROBOTS_AGENT, guardedFetch, type GuardedFetchOptions } from '../outbound/index.ts';

// robots-parser's own .d.ts declares an ambient module that TypeScript (NodeNext) does not see as callable
interface ParsedRobots {
  isAllowed(url: string, ua?: string): boolean | undefined;
  getCrawlDelay(ua?: string): number | undefined;
  getSitemaps(): string[];
}
const robotsParser = robotsParserModule as unknown as (url: string, contents: string) => ParsedRobots;

export interface RobotsOptions {
  /** The outbound guard's options (allowCidrs, maxRedirects, connectTimeoutMs). */
  guard: GuardedFetchOptions;
  maxCrawlDelayMs?: number;
  robotsUnavailableRetryMs?: number;
  robotsMaxBytes?: number;
  /** One robots.txt fetch. Default 10 s. */
  timeoutMs?: number;
  agent?: string;
  now?: () => number;
}

export interface RobotsRules {
  origin: string;
  /** ok: a file was read; missing: 4xx, all allowed; unreachable: 5xx/429/no answer, all disallowed until retryAt. */
  state: 'ok' | 'missing' | 'unreachable';
  /** The HTTP status, or null when no answer came. */
  status: number | null;
  allows(url: string): boolean;
  crawlDelayMs: number;
  sitemaps: string[];
  fetchedAt: number;
  retryAt?: number;
  /** The file as read (a crawl's first page hands it to the supervisor, which admits the links). */
  text?: string;
}

export type RobotsVerdict = { ok: true; crawlDelayMs: number } | { ok: false; reason: 'robots' | 'robots_unavailable'; retryAt?: number };

const DEFAULTS = { maxCrawlDelayMs: 10000, robotsUnavailableRetryMs: 60000, robotsMaxBytes: 512 * 1024, timeoutMs: 10000 };

export function parseRobots(
  origin: string,
  text: string,
  opts: Pick<RobotsOptions, 'maxCrawlDelayMs' | 'agent' | 'now'> = {},
  status = 200,
): RobotsRules {
  const agent = opts.agent ?? ROBOTS_AGENT;
  const robots = robotsParser(`${origin}/robots.txt`, text);
  const delayS = Number(robots.getCrawlDelay(agent) ?? 0);
  const max = opts.maxCrawlDelayMs ?? DEFAULTS.maxCrawlDelayMs;
  const crawlDelayMs = Number.isFinite(delayS) && delayS > 0 ? Math.min(Math.round(delayS * 1000), max) : 0;
  const sitemaps = robots
    .getSitemaps()
    .filter((s) => /^https?:\/\//i.test(s))
    .slice(0, 100);
  return {
    origin,
    state: 'ok',
    status,
    // robots-parser answers undefined for a URL of another origin: never allowed by this file
    allows: (url) => robots.isAllowed(url, agent) === true,
    crawlDelayMs,
    sitemaps,
    fetchedAt: (opts.now ?? Date.now)(),
    text,
  };
}

export async function fetchRobots(origin: string, opts: RobotsOptions): Promise<RobotsRules> {
  const now = opts.now ?? Date.now;
  const retryMs = opts.robotsUnavailableRetryMs ?? DEFAULTS.robotsUnavailableRetryMs;
  const unreachable = (status: number | null): RobotsRules => ({
    origin,
    state: 'unreachable',
    status,
    allows: () => false,
    crawlDelayMs: 0,
    sitemaps: [],
    fetchedAt: now(),
    retryAt: now() + retryMs,
  });
  const maxBytes = opts.robotsMaxBytes ?? DEFAULTS.robotsMaxBytes;
  let res: Awaited<ReturnType<typeof guardedFetch>>;
  try {
    res = await guardedFetch(`${origin}/robots.txt`, {
      ...opts.guard,
      timeoutMs: opts.timeoutMs ?? DEFAULTS.timeoutMs,
      // read past the cap and cut, rather than fail on a big file: its first part still holds rules
      maxBytes: maxBytes * 4,
      headers: { accept: 'text/plain,*/*;q=0.5' },
    });
  } catch (e) {
    // a file over even the generous read cap: treat as no rules we can read (RFC 9309 2.5 allows a limit)
    if (e instanceof OutboundError && e.code === 'too_large') return missing(origin, 200, now());
    return unreachable(null);
  }
  if (res.status >= 200 && res.status < 300) {
    const text = res.body.subarray(0, maxBytes).toString('utf8');
    return parseRobots(origin, text, opts, res.status);
  }
  if (res.status === 429 || res.status >= 500) return unreachable(res.status);
  return missing(origin, res.status, now());
}

function missing(origin: string, status: number | null, at: number): RobotsRules {
  return { origin, state: 'missing', status, allows: () => true, crawlDelayMs: 0, sitemaps: [], fetchedAt: at };
}

/** One crawl's robots rules, per origin. Bounded: at most `maxOrigins` kept (the oldest dropped first). */
export class RobotsCache {
  private readonly rules = new Map<string, Promise<RobotsRules>>();
  private readonly opts: RobotsOptions;
  private readonly maxOrigins: number;
  /** robots.txt fetches made (tests and the crawl report read it). */
  fetches = 0;

  private readonly ttlMs: number;

  /** `ttlMs`: how long a file read (or a 4xx) is kept before it is read again (RFC 9309: at most a day). */
  constructor(opts: RobotsOptions, maxOrigins = 1000, ttlMs = 24 * 3600_000) {
    this.opts = opts;
    this.maxOrigins = maxOrigins;
    this.ttlMs = ttlMs;
  }

  /** The rules of the URL's origin, fetched once (again only after an unreachable answer's retryAt). */
  async rulesFor(url: string | URL): Promise<RobotsRules> {
    const origin = new URL(String(url)).origin;
    const now = (this.opts.now ?? Date.now)();
    const cached = this.rules.get(origin);
    if (cached) {
      const r = await cached;
      if (r.state !== 'unreachable' ? now - r.fetchedAt < this.ttlMs : (r.retryAt ?? 0) > now) return r;
      if (this.rules.get(origin) !== cached) return this.rulesFor(url); // another caller refreshed it
    }
    this.fetches++;
    const p = fetchRobots(origin, this.opts);
    this.rules.delete(origin);
    this.rules.set(origin, p);
    while (this.rules.size > this.maxOrigins) this.rules.delete(this.rules.keys().next().value as string);
    return p;
  }

  async check(url: string | URL): Promise<RobotsVerdict> {
    const r = await this.rulesFor(url);
    if (r.state === 'unreachable') return { ok: false, reason: 'robots_unavailable', ...(r.retryAt ? { retryAt: r.retryAt } : {}) };
    return r.allows(String(url)) ? { ok: true, crawlDelayMs: r.crawlDelayMs } : { ok: false, reason: 'robots' };
  }
}
