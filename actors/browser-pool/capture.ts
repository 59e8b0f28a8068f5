// One screenshot: a fresh page in a fresh context, the viewport (or the phone), the colour
// scheme, navigation, the cookie banner, lazy content for full-page shots, the delay, the PNG,
// and a retry when the capture came out all one colour.
import type { BrowserContext, HTTPResponse, Page } from 'puppeteer-core';
import sharp from 'sharp';
import { TaskFailure } from '../../shared/protocol/jobs.ts';
import type { Launcher, Scheme } from './launchers/types.ts';
import { hideCookieBanner, prepareCookieBanner, type CookieBannerReport } from './cookies.ts';

export interface ShotParams {
  url: string;
  browser: string;
  version: string;
  viewport: { w: number; h: number };
  scheme: Scheme;
  options: { fullPage: boolean; retina: boolean; hideCookieBanner: boolean; delay: number };
}

/** A task's params as the shots plan wrote them; anything else is refused, not retried. */
export function checkShotParams(p: unknown): ShotParams {
  const x = p as Partial<ShotParams> | undefined;
  const ok = !!x && typeof x.url === 'string' && /^https?:\/\//i.test(x.url)
    && !!x.viewport && Number.isInteger(x.viewport.w) && Number.isInteger(x.viewport.h)
    && (x.scheme === 'light' || x.scheme === 'dark') && !!x.options && typeof x.options === 'object';
  if (!ok) throw new TaskFailure('render_failed', 'malformed shots task');
  return { ...x, options: { fullPage: !!x.options!.fullPage, retina: !!x.options!.retina, hideCookieBanner: !!x.options!.hideCookieBanner, delay: [0, 2, 5].includes(Number(x.options!.delay)) ? Number(x.options!.delay) : 0 } } as ShotParams;
}

export interface Shot {
  png: Buffer;
  /** The decoded pixels of `png`. */
  raw: RawImage;
  width: number;
  height: number;
  extra: { status?: number; finalUrl?: string; blank?: boolean; cookieBanner?: CookieBannerReport };
}

export interface CaptureEnv {
  launcher: Launcher;
  version: string;
  navTimeoutMs: number;
  progress(text: string): Promise<void>;
  /** From the guard proxy: whether it refused a non-public address since `t`. */
  blockedSince?(t: number): boolean;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

const BLOCKED = new TaskFailure('blocked_address', 'the page or one of its redirects points at a non-public address');

/**
 * Browser error text → the result's error code. The guard proxy answers a refused CONNECT with
 * 403 (blocked) or 502 (unreachable); Firefox tells them apart, Chromium does not, so for a failed
 * tunnel `blocked` says whether the proxy refused an address meanwhile.
 */
export function navigationFailure(e: unknown, blocked = false): TaskFailure {
  const m = String((e as Error)?.message ?? e);
  if (/NS_ERROR_PROXY_FORBIDDEN|blocked_address/i.test(m)) return BLOCKED;
  if (/ERR_TUNNEL_CONNECTION_FAILED|ERR_PROXY_CONNECTION_FAILED|NS_ERROR_PROXY/i.test(m)) return blocked ? BLOCKED : new TaskFailure('unreachable', m.split('\n')[0]!.slice(0, 300));
  if (/ERR_NAME_NOT_RESOLVED|ERR_CONNECTION|ERR_ADDRESS|NS_ERROR_UNKNOWN_HOST|NS_ERROR_CONNECTION_REFUSED|NS_ERROR_NET|ERR_EMPTY_RESPONSE|ERR_SSL|SEC_ERROR|SSL_ERROR|NS_ERROR_ABORT|ERR_INTERNET_DISCONNECTED|ERR_TOO_MANY_REDIRECTS|NS_ERROR_REDIRECT_LOOP|ERR_UNSAFE_PORT|NS_ERROR_PORT_ACCESS_NOT_ALLOWED/i.test(m)) return new TaskFailure('unreachable', m.split('\n')[0]!.slice(0, 300));
  if (/timeout|timed out/i.test(m)) return new TaskFailure('timeout', m.split('\n')[0]!.slice(0, 300));
  return new TaskFailure('render_failed', m.split('\n')[0]!.slice(0, 300));
}

export interface RawImage { data: Buffer; info: { width: number; height: number; channels: 1 | 2 | 3 | 4 } }

/** Decode once: the blank check and the thumbnail both work from these pixels. */
export async function decode(png: Buffer): Promise<RawImage> {
  const { data, info } = await sharp(png).raw().toBuffer({ resolveWithObject: true });
  return { data, info: { width: info.width, height: info.height, channels: info.channels } };
}

/** True when every pixel has the same colour (compared as whole rows: memcmp speed). */
export function isBlankRaw(img: RawImage): boolean {
  const { data, info } = img;
  const px = info.channels;
  const rowBytes = info.width * px;
  if (!rowBytes || data.length < px) return true;
  const row = Buffer.alloc(rowBytes);
  for (let i = 0; i < rowBytes; i += px) data.copy(row, i, 0, px);
  for (let off = 0; off < data.length; off += rowBytes) {
    if (row.compare(data, off, off + rowBytes) !== 0) return false;
  }
  return true;
}

export async function isBlank(png: Buffer): Promise<boolean> {
  return isBlankRaw(await decode(png));
}

/** Scroll the whole document in viewport steps so lazy content loads, wait for images, back to top. */
async function loadLazyContent(page: Page, deadline: number) {
  for (let i = 0; i < 60 && Date.now() < deadline; i++) {
    const more = await page.evaluate(() => {
      const before = window.scrollY;
      window.scrollBy(0, Math.max(200, Math.floor(window.innerHeight * 0.9)));
      return window.scrollY > before;
    });
    await sleep(120);
    if (!more) break;
  }
  await page.evaluate(async (ms: number) => {
    const imgs = Array.from(document.images).filter((i) => !i.complete);
    await Promise.race([
      Promise.all(imgs.map((i) => new Promise((r) => { i.addEventListener('load', r, { once: true }); i.addEventListener('error', r, { once: true }); }))),
      new Promise((r) => setTimeout(r, ms)),
    ]);
    window.scrollTo(0, 0);
  }, Math.max(0, Math.min(5000, deadline - Date.now())));
  await page.waitForNetworkIdle({ idleTime: 300, timeout: Math.max(500, Math.min(3000, deadline - Date.now())) }).catch(() => {});
}

export async function captureShot(ctx: BrowserContext, p: ShotParams, env: CaptureEnv): Promise<Shot> {
  const { launcher } = env;
  const page = await ctx.newPage();
  const t0 = Date.now();
  const deadline = t0 + env.navTimeoutMs;
  if (launcher.mobile) {
    const m = launcher.mobile;
    await page.setUserAgent(m.userAgent.replace('{version}', env.version));
    await page.setViewport({ width: m.w, height: m.h, deviceScaleFactor: m.deviceScaleFactor, isMobile: true, hasTouch: true });
  } else {
    await page.setViewport({ width: p.viewport.w, height: p.viewport.h, deviceScaleFactor: p.options.retina ? 2 : 1 });
  }
  if (launcher.engine === 'chromium') {
    await page.emulateMediaFeatures([{ name: 'prefers-color-scheme', value: p.scheme }]);
  }
  // gecko: the browser itself runs in the scheme (see launchers/firefox.ts)
  if (p.options.hideCookieBanner) await prepareCookieBanner(page);

  await env.progress(`loading ${p.url}`);
  let resp: HTTPResponse | null;
  try {
    resp = await page.goto(p.url, { waitUntil: 'load', timeout: env.navTimeoutMs });
  } catch (e) {
    throw navigationFailure(e, env.blockedSince?.(t0));
  }
  // the guard proxy answers plain-http requests it refuses itself, with this header
  const guardError = resp?.headers()['x-guard-error'];
  if (guardError === 'blocked_address') throw BLOCKED;
  if (guardError) throw new TaskFailure('unreachable', `${p.url} could not be reached (${guardError})`);
  await page.waitForNetworkIdle({ idleTime: 200, timeout: 2000 }).catch(() => {});

  const extra: Shot['extra'] = { status: resp?.status(), finalUrl: page.url() };
  if (p.options.hideCookieBanner) {
    await env.progress('hiding the cookie banner');
    extra.cookieBanner = await hideCookieBanner(page);
  }
  if (p.options.fullPage) {
    await env.progress('loading lazy content');
    await loadLazyContent(page, deadline);
  }
  if (p.options.delay > 0) {
    await env.progress(`waiting ${p.options.delay} s`);
    await sleep(p.options.delay * 1000);
  }

  const take = async () => Buffer.from(await page.screenshot({ type: 'png', fullPage: p.options.fullPage }));
  let png = await take();
  let raw = await decode(png);
  if (isBlankRaw(raw)) {
    // a page still painting (fonts, a late script) often comes out empty once
    await sleep(1000);
    png = await take();
    raw = await decode(png);
    if (isBlankRaw(raw)) extra.blank = true;
  }
  await page.close().catch(() => {});
  return { png, raw, width: raw.info.width, height: raw.info.height, extra };
}
