// What a crawl may fetch: the start URL's origin (scheme, host, port), its subdomains with
// `allowSubdomains`, narrowed by `includePaths` / `excludePaths` (globs on the path, picomatch) and
// `maxDepth`. No customer regular expressions: a glob compiles to a linear-time pattern.
//
//   compileScope(rules)        → Scope (throws ScopeRuleError on a bad glob: the gateway's 400 bad_request)
//   scope.check(url, depth)    → {ok: true, url} | {ok: false, reason}
//
// Rules:
// - the origin is compared after URL parsing (so `HTTP://Example.com:80` is `http://example.com`);
//   another scheme or port is `other_origin`, as is another host;
// - `allowSubdomains`: a host ending in `.<start host>` is in scope (the start host's leading `www.` is
//   dropped first, so a crawl from `www.example.com` covers `docs.example.com`), same scheme and port;
// - globs are matched against the decoded path (`/blog/café/x`), with `dot: true`; a glob without a
//   leading `/` gets one; `/docs/**` matches `/docs` too;
// - `excludePaths` wins over `includePaths`; with `includePaths`, a path that matches none is `excluded`;
// - the start URL (depth 0) is never excluded by a path rule, only by origin: a crawl from `/` with
//   `includePaths: ['/blog/**']` must read `/` to find the blog;
// - `depth` > `maxDepth` is `depth`.
import picomatch from 'picomatch';

export type ScopeReason = 'bad_url' | 'other_origin' | 'excluded' | 'depth';

export interface ScopeRules {
  start: string | URL;
  allowSubdomains?: boolean;
  includePaths?: string[];
  excludePaths?: string[];
  maxDepth?: number;
}

export type ScopeVerdict = { ok: true; url: URL } | { ok: false; reason: ScopeReason };

export interface Scope {
  readonly origin: string;
  check(url: string | URL, depth: number): ScopeVerdict;
}

export class ScopeRuleError extends Error {
  readonly glob: string;
  constructor(glob: string, why: string) {
    super(`bad path glob ${JSON.stringify(glob.slice(0, 100))}: ${why}`);
    this.glob = glob;
    this.name = 'ScopeRuleError';
  }
}

/** Bounds on what a customer's globs may be (the schema bounds them too). */
export const GLOB_MAX_LENGTH = 256;
export const GLOBS_MAX = 100;

function compileGlobs(globs: string[] | undefined): ((path: string) => boolean) | null {
  if (!globs?.length) return null;
  if (globs.length > GLOBS_MAX) throw new ScopeRuleError(globs[0] ?? '', `more than ${GLOBS_MAX} globs`);
  const matchers = globs.map((g) => {
    if (g.length === 0 || g.length > GLOB_MAX_LENGTH) throw new ScopeRuleError(g, `a glob is 1 to ${GLOB_MAX_LENGTH} characters`);
    const glob = g.startsWith('/') ? g : `/${g}`;
    try {
      return picomatch(glob, { dot: true, maxLength: GLOB_MAX_LENGTH + 1 });
    } catch (e) {
      throw new ScopeRuleError(g, (e as Error).message);
    }
  });
  return (path) => matchers.some((m) => m(path));
}

function decodedPath(u: URL): string {
  try {
    return decodeURIComponent(u.pathname);
  } catch {
    return u.pathname;
  }
}

export function compileScope(rules: ScopeRules): Scope {
  const start = new URL(String(rules.start));
  const include = compileGlobs(rules.includePaths);
  const exclude = compileGlobs(rules.excludePaths);
  const base = start.hostname.replace(/^www\./, '');
  const port = start.port;
  const inOrigin = (u: URL) =>
    u.origin === start.origin ||
    (!!rules.allowSubdomains && u.protocol === start.protocol && u.port === port && u.hostname.endsWith(`.${base}`)) ||
    (!!rules.allowSubdomains && u.protocol === start.protocol && u.port === port && u.hostname === base);
  return {
    origin: start.origin,
    check(raw, depth) {
      let u: URL;
      try {
        u = new URL(String(raw));
      } catch {
        return { ok: false, reason: 'bad_url' };
      }
      if (u.protocol !== 'http:' && u.protocol !== 'https:') return { ok: false, reason: 'bad_url' };
      if (!inOrigin(u)) return { ok: false, reason: 'other_origin' };
      if (rules.maxDepth !== undefined && depth > rules.maxDepth) return { ok: false, reason: 'depth' };
      if (depth > 0) {
        const path = decodedPath(u);
        if (exclude?.(path)) return { ok: false, reason: 'excluded' };
        if (include && !include(path)) return { ok: false, reason: 'excluded' };
      }
      return { ok: true, url: u };
    },
  };
}
