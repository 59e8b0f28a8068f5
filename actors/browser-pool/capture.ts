// One screenshot: a fresh page in a fresh context, the viewport (or the phone), the colour
// scheme, navigation, the cookie banner, lazy content for full-page shots, the delay, the PNG,
// and a retry when the capture came out all one colour.
import type { Page } from 'puppeteer-core';
import type { PageHooks, PhaseTimes } from './pool.ts';
import sharp from 'sharp';
import { TaskFailure } from '../../shared/protocol/jobs.ts';
import type { Launcher, Scheme } from './launchers/types.ts';
import { hideCookieBanner, prepareCookieBanner, type CookieBannerReport } from './cookies.ts';
import { openPage, PageWatch, type PageReport, type Settle } from './settle.ts';
import {
  DEFAULT_QUALITY,
  FORMAT_TYPE,
  SHOT_FORMATS,
  THUMB_WIDTHS,
  type ShotControls,
  type ShotSecrets,
} from '../../shared/services/index.ts';
import type { SelectorCounts } from '../../shared/schemas/page-controls.ts';
import { applyRequestControls, type RequestReport } from './requests.ts';
import { doPageWork, elementClip, hasPageWork } from './page-work.ts';

export interface ShotParams {
  url: string;
  browser: string;
  version: string;
  viewport: { w: number; h: number };
  scheme: Scheme;
  options: { fullPage: boolean; retina: boolean; hideCookieBanner: boolean; delay: number } & Partial<ShotControls>;
}

/** A task's params as the shots plan wrote them; anything else is refused, not retried. */
export function checkShotParams(p: unknown): ShotParams {
  const x = p as Partial<ShotParams> | undefined;
  const ok =
    !!x &&
    typeof x.url === 'string' &&
    /^https?:\/\//i.test(x.url) &&
    !!x.viewport &&
    Number.isInteger(x.viewport.w) &&
    Number.isInteger(x.viewport.h) &&
    (x.scheme === 'light' || x.scheme === 'dark') &&
    !!x.options &&
    typeof x.options === 'object';
  if (!ok) throw new TaskFailure('render_failed', 'malformed shots task');
  const o = x.options as Partial<ShotControls>;
  // the caller's headers and cookies ride in the task message only (params.secret); a task published
  // again from the stored job has their names and not their values: not captured without them
  const secret = (p as { secret?: ShotSecrets }).secret;
  if ((o.headerNames?.length && !secret?.headers) || (o.cookieNames?.length && !secret?.cookies))
    throw new TaskFailure(
      'credentials_unavailable',
      'the request headers or cookies are no longer available (they are never stored); create the job again',
    );
  const format = SHOT_FORMATS.includes(o.format as never) ? o.format! : 'png';
  const quality = Number.isInteger(o.quality) && o.quality! >= 1 && o.quality! <= 100 ? o.quality! : DEFAULT_QUALITY;
  const thumbWidth =
    Number.isInteger(o.thumbWidth) && o.thumbWidth! >= THUMB_WIDTHS.min && o.thumbWidth! <= THUMB_WIDTHS.max
      ? o.thumbWidth!
      : THUMB_WIDTHS.default;
  return {
    ...x,
    options: {
      ...o,
      ...(secret?.headers ? { headers: secret.headers } : {}),
      ...(secret?.cookies ? { cookies: secret.cookies } : {}),
      format,
      quality,
      thumbWidth,
      fullPage: !!x.options!.fullPage && !o.selector,
      retina: !!x.options!.retina,
      hideCookieBanner: !!x.options!.hideCookieBanner,
      delay: [0, 2, 5].includes(Number(x.options!.delay)) ? Number(x.options!.delay) : 0,
    },
  } as ShotParams;
}

export interface Shot {
  png: Buffer;
  /** The file delivered: `png` itself, or its pixels encoded as options.format asks. */
  file: Buffer;
  contentType: string;
  /** The decoded pixels of `png`. */
  raw: RawImage;
  width: number;
  height: number;
  extra: {
    status?: number;
    finalUrl?: string;
    blank?: boolean;
    cookieBanner?: CookieBannerReport;
    heightCapped?: boolean;
    /** How many elements each selector of the options matched. */
    selectors?: SelectorCounts;
  } & PageReport &
    RequestReport;
}

export interface CaptureEnv {
  launcher: Launcher;
  version: string;
  navTimeoutMs: number;
  progress(text: string): Promise<void>;
  /** From the guard proxy: whether it refused a non-public address since `t`. */
  blockedSince?(t: number): boolean;
  /** Where the time goes (bench rows). */
  times?: PhaseTimes;
  /** The pool's hooks: make the next task's context while this page settles, say the step. */
  ahead?: PageHooks;
  /** The settle rule's figures (SETTLE unless given). */
  settle?: Settle;
}

const noTimes = { time: <T>(_phase: string, fn: () => Promise<T>) => fn() };

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

export { navigationFailure } from './settle.ts';

/**
 * Tallest full-page capture, in device pixels: a GPU texture is at most 16384 px, and past it
 * Chromium repeats tiles instead of painting the rest. Taller documents are cut at this height
 * (CSS height = this / device scale factor) and `extra.heightCapped` says so.
 */
export const FULL_PAGE_MAX_DEVICE_PX = 16384;

export interface RawImage {
  data: Buffer;
  info: { width: number; height: number; channels: 1 | 2 | 3 | 4 };
}

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
    const more = await page.evaluate(async () => {
      const step = Math.max(200, Math.floor(window.innerHeight * 0.9));
      const before = window.scrollY;
      window.scrollBy(0, step);
      if (window.scrollY > before) return true;
      // At the bottom. What a page adds once its end is seen (an IntersectionObserver, an endless
      // list) comes in the next frames: the observer's callback runs after the frame that saw the
      // end. Two frames later (or 500 ms, for a page that renders no frame) look again; without
      // this a loaded machine captured such a page without its last part.
      await new Promise((r) => {
        const late = setTimeout(r, 500);
        requestAnimationFrame(() =>
          requestAnimationFrame(() => {
            clearTimeout(late);
            r(null);
          }),
        );
      });
      window.scrollBy(0, step);
      return window.scrollY > before;
    });
    await sleep(120);
    if (!more) break;
  }
  await page.evaluate(
    async (ms: number) => {
      const imgs = Array.from(document.images).filter((i) => !i.complete);
      await Promise.race([
        Promise.all(
          imgs.map(
            (i) =>
              new Promise((r) => {
                i.addEventListener('load', r, { once: true });
                i.addEventListener('error', r, { once: true });
              }),
          ),
        ),
        new Promise((r) => setTimeout(r, ms)),
      ]);
      window.scrollTo(0, 0);
    },
    Math.max(0, Math.min(5000, deadline - Date.now())),
  );
  await page.waitForNetworkIdle({ idleTime: 300, timeout: Math.max(500, Math.min(3000, deadline - Date.now())) }).catch(() => {});
}

/** Capture `p` in `page` (a fresh page of a fresh context, closed by the caller's pool). */
export async function captureShot(page: Page, p: ShotParams, env: CaptureEnv): Promise<Shot> {
  const watch = new PageWatch(page);
  return watch.race(shoot(page, watch, p, env));
}

async function shoot(page: Page, watch: PageWatch, p: ShotParams, env: CaptureEnv): Promise<Shot> {
  const { launcher } = env;
  const times = env.times ?? noTimes;
  const step = (name: string) => env.ahead?.step(name);
  /** A step that is timed (bench rows) and named (a page that runs out of time says it). */
  const phase = <T>(name: string, fn: () => Promise<T>) => {
    step(name);
    return times.time(name, fn);
  };
  const deadline = Date.now() + env.navTimeoutMs;
  // progress is published without waiting for its acknowledgement: it is a heartbeat and a
  // status line, and the shot need not wait for a NATS round trip at every step
  const progress = (text: string) => void env.progress(text).catch(() => {});
  let dpr = p.options.retina ? 2 : 1;
  await phase('viewport and scheme', async () => {
    // independent settings: sent at once, one round trip instead of two or three
    const steps: Promise<unknown>[] = [];
    if (launcher.mobile) {
      const m = launcher.mobile;
      dpr = m.deviceScaleFactor;
      steps.push(page.setUserAgent(m.userAgent.replace('{version}', env.version)));
      steps.push(page.setViewport({ width: m.w, height: m.h, deviceScaleFactor: m.deviceScaleFactor, isMobile: true, hasTouch: true }));
    } else {
      steps.push(page.setViewport({ width: p.viewport.w, height: p.viewport.h, deviceScaleFactor: dpr }));
    }
    // gecko: the browser itself runs in the scheme (see launchers/firefox.ts)
    if (launcher.engine === 'chromium') steps.push(page.emulateMediaFeatures([{ name: 'prefers-color-scheme', value: p.scheme }]));
    await Promise.all(steps);
  });
  if (p.options.hideCookieBanner) await phase('cookie banner', () => prepareCookieBanner(page));
  const o = p.options;
  // only when asked: a shot without them has no such step (the bench's rows stay as they were)
  const requests =
    o.userAgent || o.locale || o.timezone || o.headers || o.cookies?.length || o.blockAds
      ? await phase('request controls', () => applyRequestControls(page, p.url, o, launcher.engine))
      : {};

  progress(`loading ${p.url}`);
  const resp = await openPage(page, watch, p.url, {
    deadline,
    blockedSince: env.blockedSince,
    times: env.times,
    onParsed: env.ahead?.makeNext,
    step,
    settle: env.settle,
  });

  const finalUrl = watch.finalUrl ?? page.url();
  const extra: Shot['extra'] = { status: (watch.mainResponse ?? resp)?.status(), finalUrl };
  if (p.options.hideCookieBanner) {
    progress('hiding the cookie banner');
    extra.cookieBanner = await phase('cookie banner', () => hideCookieBanner(page));
  }
  const counts: SelectorCounts = {};
  if (hasPageWork(o)) {
    progress('working on the page');
    await phase('page work', () => doPageWork(page, o, { deadline, counts, step }));
  }
  if (p.options.fullPage) {
    progress('loading lazy content');
    await phase('lazy content', () => loadLazyContent(page, deadline));
  }
  if (p.options.delay > 0) {
    progress(`waiting ${p.options.delay} s`);
    step(`the ${p.options.delay} s delay`);
    await sleep(p.options.delay * 1000);
  }

  let clip: { x: number; y: number; width: number; height: number } | undefined;
  if (o.selector) {
    step(`the element ${o.selector}`);
    clip = await elementClip(page, o.selector, counts);
  }
  if (Object.keys(counts).length) extra.selectors = counts;
  if (p.options.fullPage) {
    step("the document's height");
    const size = await page.evaluate(() => ({
      w: window.innerWidth,
      h: Math.max(document.documentElement.scrollHeight, document.body?.scrollHeight ?? 0),
    }));
    const maxCss = Math.floor(FULL_PAGE_MAX_DEVICE_PX / dpr);
    if (size.h > maxCss) {
      clip = { x: 0, y: 0, width: size.w, height: maxCss };
      extra.heightCapped = true;
    }
  }
  const take = () =>
    phase('screenshot', async () =>
      Buffer.from(
        await watch.ownCapture(
          page.screenshot(clip ? { type: 'png', clip, captureBeyondViewport: true } : { type: 'png', fullPage: p.options.fullPage }),
        ),
      ),
    );
  const check = (png: Buffer) =>
    phase('decode and blank check', async () => {
      const raw = await decode(png);
      return { raw, blank: isBlankRaw(raw) };
    });
  let png = await take();
  let { raw, blank } = await check(png);
  // an element of one colour is what it is; a whole page of one colour is often not painted yet
  if (blank && !o.selector) {
    // a page still painting (fonts, a late script) often comes out empty once
    step('a second screenshot (the first was blank)');
    await sleep(1000);
    png = await take();
    ({ raw, blank } = await check(png));
    if (blank) extra.blank = true;
  }
  Object.assign(extra, watch.report);
  if (!extra.dialogs?.length) delete extra.dialogs;
  Object.assign(extra, requests);
  const format = o.format ?? 'png';
  const file =
    format === 'png'
      ? png
      : await phase('encode', () => {
          const img = sharp(raw.data, { raw: raw.info });
          return (
            format === 'jpeg'
              ? img.flatten({ background: '#ffffff' }).jpeg({ quality: o.quality ?? DEFAULT_QUALITY })
              : img.webp({ quality: o.quality ?? DEFAULT_QUALITY })
          ).toBuffer();
        });
  return { png, file, contentType: FORMAT_TYPE[format], raw, width: raw.info.width, height: raw.info.height, extra };
}
