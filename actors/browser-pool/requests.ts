// What a caller asks of a page's requests (issue 43): headers and cookies sent only to the target's
// origin, ads and trackers blocked, and who the browser says it is (User-Agent, locale, time zone).
// Headers and cookies are added per request by request interception in the page, never with
// setExtraHTTPHeaders (which sends them everywhere): a redirect to another origin and a subresource
// of another origin go without them, a redirect back to the target's origin gets them again. They
// live only in the task and in this page; nothing here logs them.
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import type { HTTPRequest, Page } from 'puppeteer-core';
import type { PageCookie } from '../../shared/schemas/page-controls.ts';

export interface RequestControls {
  headers?: Record<string, string>;
  cookies?: PageCookie[];
  blockAds?: boolean;
  userAgent?: string;
  locale?: string;
  timezone?: string;
}

/** What the page's requests met (the result's extra). */
export interface RequestReport {
  /** Requests refused by the ad and tracker filter. */
  adsBlocked?: number;
}

type Engine = { match(r: unknown): { match: boolean } };
type Adblocker = {
  FiltersEngine: { parse(text: string, opts: Record<string, unknown>): Engine };
  Request: { fromRawDetails(d: { url: string; sourceUrl?: string; type?: string }): unknown };
};

const require = createRequire(import.meta.url);
let engine: { engine: Engine; lib: Adblocker } | undefined;

/** The filter engine over the lists kept in filters/ (parsed once per process, ~0.4 s). */
export function adblockEngine(): { engine: Engine; lib: Adblocker } {
  if (!engine) {
    // required, not imported: as autoconsent, the package's ESM/CJS entry points differ between loaders
    const lib = require('@ghostery/adblocker') as Adblocker;
    const text = readFileSync(new URL('./filters/easylist-hosts.txt', import.meta.url), 'utf8');
    engine = { lib, engine: lib.FiltersEngine.parse(text, { loadCosmeticFilters: false, loadNetworkFilters: true }) };
  }
  return engine;
}

/** True when the filter lists block `url` loaded by a page at `pageUrl`. */
export function isAd(url: string, pageUrl: string, type = 'other'): boolean {
  const { engine: e, lib } = adblockEngine();
  return e.match(lib.Request.fromRawDetails({ url, sourceUrl: pageUrl, type })).match;
}

/** The request's kind for the filters; WebDriver BiDi does not say it (every request is then `other`). */
function resourceTypeOf(r: HTTPRequest): string {
  try {
    return r.resourceType();
  } catch {
    return 'other';
  }
}

const originOf = (u: string) => {
  try {
    return new URL(u).origin;
  } catch {
    return null;
  }
};

/** The Cookie header value for the caller's cookies, after any the browser already sends. */
function cookieHeader(existing: string | undefined, cookies: PageCookie[]): string {
  const own = cookies.map((c) => `${c.name}=${c.value}`).join('; ');
  return existing ? `${existing}; ${own}` : own;
}

/**
 * Before navigation: who the browser says it is, and the interception that adds headers and
 * cookies to requests of `targetUrl`'s origin and refuses ads. Returns the report it fills in.
 */
export async function applyRequestControls(
  page: Page,
  targetUrl: string,
  c: RequestControls,
  engine: 'chromium' | 'gecko',
): Promise<RequestReport> {
  const report: RequestReport = {};
  const steps: Promise<unknown>[] = [];
  if (c.timezone) steps.push(page.emulateTimezone(c.timezone));
  if (c.locale) {
    if (engine !== 'chromium') throw new Error('locale is not offered by this browser'); // the plan refuses it first
    // Intl from the locale override; navigator.language(s) and Accept-Language from the user-agent
    // override's acceptLanguage (the language is no secret: every origin sees it, as from a browser
    // set to it). The user agent is kept: the caller's, or the page's own (a phone's, set before).
    const locale = c.locale;
    steps.push(
      (async () => {
        const userAgent = c.userAgent ?? (await page.evaluate(() => navigator.userAgent));
        const s = await page.createCDPSession();
        await s.send('Emulation.setLocaleOverride', { locale });
        await s.send('Network.setUserAgentOverride', { userAgent, acceptLanguage: `${locale},${locale.split('-')[0]};q=0.9` });
      })(),
    );
  } else if (c.userAgent) steps.push(page.setUserAgent(c.userAgent));
  await Promise.all(steps);
  // one spelling per name: the caller's replaces the browser's own (user-agent and User-Agent are one header)
  const headers =
    c.headers && Object.keys(c.headers).length
      ? Object.fromEntries(Object.entries(c.headers).map(([k, v]) => [k.toLowerCase(), v]))
      : undefined;
  const cookies = c.cookies?.length ? c.cookies : undefined;
  if (!headers && !cookies && !c.blockAds) return report;
  if (c.blockAds) adblockEngine();
  const target = originOf(targetUrl);
  await page.setRequestInterception(true);
  page.on('request', (r: HTTPRequest) => {
    if (r.isInterceptResolutionHandled()) return;
    const url = r.url();
    if (c.blockAds && !/^(data|blob):/.test(url) && isAd(url, page.url() || targetUrl, resourceTypeOf(r))) {
      report.adsBlocked = (report.adsBlocked ?? 0) + 1;
      void r.abort('blockedbyclient').catch(() => {});
      return;
    }
    if ((headers || cookies) && originOf(url) === target) {
      const h: Record<string, string> = { ...r.headers(), ...(headers ?? {}) };
      if (cookies) h.cookie = cookieHeader(r.headers().cookie, cookies);
      void r.continue({ headers: h }).catch(() => {});
      return;
    }
    void r.continue().catch(() => {});
  });
  return report;
}
