// Cookie banners, offline. First the consent-manager rules of @duckduckgo/autoconsent (shipped in
// the npm package; opt-out mode, cosmetic hiding, heuristics), driven without any binding: a shim
// collects the content script's messages in the page and we answer them from here by polling,
// which works the same over CDP (Chromium) and WebDriver BiDi (Firefox). Then a fallback for
// banners no rule knows: fixed or sticky overlays found with elementsFromPoint whose text reads
// like a consent notice are hidden.
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import type { Frame, Page } from 'puppeteer-core';

const require = createRequire(import.meta.url);
const pkgDir = dirname(dirname(require.resolve('@duckduckgo/autoconsent/rules/compact-rules.json')));
const CONTENT_SCRIPT = readFileSync(join(pkgDir, 'dist', 'autoconsent.playwright.js'), 'utf8');
// required, not imported: the package's ESM/CJS entry points differ between loaders (tsx, tap)
const { filterCompactRules } = require('@duckduckgo/autoconsent') as {
  filterCompactRules(rules: unknown, ctx: { url: string; mainFrame: boolean }): unknown;
};
const COMPACT_RULES = require('@duckduckgo/autoconsent/rules/compact-rules.json') as unknown;

const INBOX = '__payloadsAutoconsent';
const SHIM = `window.autoconsentSendMessage = (m) => { (window.${INBOX} ||= []).push(m); return Promise.resolve(); };`;

const AC_CONFIG = {
  enabled: true,
  autoAction: 'optOut',
  disabledCmps: [],
  enablePrehide: true,
  enableCosmeticRules: true,
  enableGeneratedRules: true,
  enableHeuristicDetection: true,
  enablePopupMutationObserver: false,
  detectRetries: 10,
  isMainWorld: false,
  prehideTimeout: 2000,
  heuristicMode: 'reject',
  visualTest: false,
  logs: { lifecycle: false, rulesteps: false, detectionsteps: false, evals: false, errors: false, messages: false, waits: false },
};

export interface CookieBannerReport {
  /** A banner was seen (a consent manager or an overlay). */
  found: boolean;
  /** It is no longer visible on the screenshot. */
  hidden: boolean;
  /** `autoconsent:<cmp>` or `overlay`. */
  method?: string;
  /** Number of overlay elements hidden by the fallback. */
  overlays?: number;
}

/** Before navigation: install the shim and the content script in every frame. */
export async function prepareCookieBanner(page: Page): Promise<void> {
  await page.evaluateOnNewDocument(SHIM);
  await page.evaluateOnNewDocument(CONTENT_SCRIPT);
}

type AcMessage = { type: string; id?: string; code?: string; cmp?: string; result?: boolean; isCosmetic?: boolean };

async function drain(frame: Frame): Promise<AcMessage[]> {
  try {
    return (await frame.evaluate(`(window.${INBOX} || []).splice(0)`)) as AcMessage[];
  } catch {
    return []; // detached or navigating
  }
}

async function answer(frame: Frame, m: AcMessage, url: string, mainFrame: boolean) {
  if (m.type === 'init') {
    const rules = { compact: filterCompactRules(COMPACT_RULES, { url, mainFrame }) };
    await frame
      .evaluate(
        `window.autoconsentReceiveMessage && autoconsentReceiveMessage(${JSON.stringify({ type: 'initResp', config: AC_CONFIG, rules })})`,
      )
      .catch(() => {});
  } else if (m.type === 'eval' && m.id && typeof m.code === 'string') {
    let result: unknown = false;
    try {
      result = await frame.evaluate(m.code);
    } catch {
      /* a failing snippet answers false */
    }
    await frame.evaluate(`autoconsentReceiveMessage(${JSON.stringify({ id: m.id, type: 'evalResp', result: !!result })})`).catch(() => {});
  }
}

/** After load: let autoconsent finish (bounded), then the overlay fallback. */
export async function hideCookieBanner(page: Page, opts: { detectMs?: number; maxMs?: number } = {}): Promise<CookieBannerReport> {
  const detectMs = opts.detectMs ?? 2500;
  const maxMs = opts.maxMs ?? 8000;
  const t0 = Date.now();
  let cmp: string | undefined;
  let popup = false;
  let done = false;
  let optedOut: boolean | undefined;
  while (Date.now() - t0 < maxMs) {
    for (const frame of page.frames()) {
      const main = frame === page.mainFrame();
      for (const m of await drain(frame)) {
        await answer(frame, m, frame.url(), main);
        if (m.type === 'cmpDetected') cmp ??= m.cmp;
        if (m.type === 'popupFound') {
          popup = true;
          cmp = m.cmp ?? cmp;
        }
        if (m.type === 'optOutResult') optedOut = !!m.result;
        if (m.type === 'autoconsentDone') {
          done = true;
          cmp = m.cmp ?? cmp;
        }
      }
    }
    if (done) break;
    if (!cmp && Date.now() - t0 > detectMs) break;
    if (cmp && !popup && Date.now() - t0 > detectMs * 2) break; // a CMP with no popup open
    await new Promise((r) => setTimeout(r, 150));
  }
  const overlays = await hideOverlays(page);
  if (popup || done) {
    return {
      found: true,
      hidden: (done && optedOut !== false) || overlays > 0,
      method: `autoconsent:${cmp ?? 'unknown'}`,
      ...(overlays ? { overlays } : {}),
    };
  }
  if (overlays > 0) return { found: true, hidden: true, method: 'overlay', overlays };
  return { found: false, hidden: false };
}

/** Fixed/sticky elements in front of the page that talk about cookies or consent: hidden. */
async function hideOverlays(page: Page): Promise<number> {
  return page.evaluate(() => {
    const W = window.innerWidth;
    const H = window.innerHeight;
    const words = /cookie|consent|gdpr|privacy|datenschutz|einwilligung|akzeptier|zustimm|tracking|rgpd|galleta/i;
    const points: [number, number][] = [];
    for (const fy of [0.05, 0.25, 0.5, 0.75, 0.95]) for (const fx of [0.1, 0.5, 0.9]) points.push([W * fx, H * fy]);
    const found = new Set<HTMLElement>();
    for (const [x, y] of points) {
      for (const el of document.elementsFromPoint(x, y)) {
        // climb to the outermost fixed/sticky ancestor: that is the overlay
        let top: HTMLElement | null = null;
        for (
          let e: HTMLElement | null = el as HTMLElement;
          e && e !== document.body && e !== document.documentElement;
          e = e.parentElement
        ) {
          const pos = getComputedStyle(e).position;
          if (pos === 'fixed' || pos === 'sticky') top = e;
        }
        if (!top || found.has(top)) continue;
        const r = top.getBoundingClientRect();
        const big = r.width >= W * 0.3 && r.height >= 40;
        if (big && words.test((top.innerText || '').slice(0, 5000))) found.add(top);
      }
    }
    for (const e of found) e.style.setProperty('display', 'none', 'important');
    if (found.size) {
      // banners often lock scrolling; give it back so full-page shots see the whole document
      for (const e of [document.documentElement, document.body]) {
        if (getComputedStyle(e).overflow === 'hidden') e.style.setProperty('overflow', 'visible', 'important');
      }
    }
    return found.size;
  });
}
