// websitepro's browser work, served as NATS micro endpoints: a PDF of the page (Chromium; A4 with
// backgrounds unless `pdf` says otherwise) written to the object store, and the rendered DOM of a
// page that needs JavaScript. Both take the caller's `controls` (headers and cookies for the target
// origin only, waitFor, actions, removeSelectors, timeoutMs) and answer how many elements each
// selector matched.
import type { Page, PDFOptions } from 'puppeteer-core';
import { FORBIDDEN_HEADER, type PageControls, type PdfOptionsDoc, type SelectorCounts } from '../../shared/schemas/page-controls.ts';
import { applyRequestControls } from './requests.ts';
import { doPageWork, hasPageWork } from './page-work.ts';
import { ApiError, type ErrorCode } from '../../shared/errors.ts';
import { TaskFailure } from '../../shared/protocol/jobs.ts';
import { navigationFailure, openPage, PageWatch, type Settle } from './settle.ts';
import { PageTimeout, type ManagedBrowser, type PageHooks, type Slots } from './pool.ts';
import type { Stores } from './store.ts';

export interface RenderPdfRequest {
  url: string;
  store: string;
  objectName: string;
  controls?: PageControls;
  pdf?: PdfOptionsDoc;
}
export interface RenderPdfReply {
  bytes: number;
  contentType: 'application/pdf';
  selectors?: SelectorCounts;
}
export interface RenderHtmlRequest {
  url: string;
  controls?: PageControls;
}
export interface RenderHtmlReply {
  html: string;
  finalUrl: string;
  status: number | null;
  selectors?: SelectorCounts;
}

/** puppeteer's print options from the caller's `pdf` (A4, backgrounds, no header or footer unless asked). */
export function pdfOptionsOf(pdf: PdfOptionsDoc | undefined, timeout: number): PDFOptions {
  const p = pdf ?? {};
  const templated = p.headerTemplate !== undefined || p.footerTemplate !== undefined;
  return {
    format: p.format ?? 'A4',
    landscape: !!p.landscape,
    printBackground: p.printBackground ?? true,
    timeout,
    ...(p.scale !== undefined ? { scale: p.scale } : {}),
    ...(p.margin ? { margin: p.margin } : {}),
    ...(p.pageRanges ? { pageRanges: p.pageRanges } : {}),
    // a template is shown only with displayHeaderFooter; the other one is then empty, not Chromium's default
    ...(templated
      ? {
          displayHeaderFooter: true,
          headerTemplate: p.headerTemplate ?? '<span></span>',
          footerTemplate: p.footerTemplate ?? '<span></span>',
        }
      : {}),
  };
}

/**
 * Failures cross the wire as ApiError: `blocked_address` and `unreachable` (the target could not
 * be reached) as themselves; a page that was reached but did not finish in time or could not be
 * rendered as `internal` with `reason` `timeout` / `render_failed`, which the converter turns into
 * the result's error. A reached page is never reported as `unreachable`.
 */
export function toApiError(e: unknown): ApiError {
  if (e instanceof ApiError) return e;
  if (e instanceof TaskFailure && e.error === 'selector_not_found')
    return new ApiError('internal', e.message, { reason: 'selector_not_found', selector: e.extra?.selector });
  const f = e instanceof PageTimeout ? new TaskFailure('timeout', e.message) : e instanceof TaskFailure ? e : navigationFailure(e);
  const code: ErrorCode = f.error === 'blocked_address' || f.error === 'unreachable' ? f.error : 'internal';
  return new ApiError(code, f.message, { reason: f.error === 'timeout' ? 'timeout' : code === 'internal' ? 'render_failed' : f.error });
}

/** A header the guard forbids is the caller's mistake, whoever validated it before. */
function checkControls(c: PageControls | undefined) {
  for (const name of Object.keys(c?.headers ?? {}))
    if (FORBIDDEN_HEADER.test(name)) throw new ApiError('bad_request', `controls.headers: ${name} may not be set`, { header: name });
}

function checkUrl(url: unknown): string {
  if (typeof url !== 'string' || !/^https?:\/\//i.test(url)) throw new ApiError('bad_url', 'url must be an absolute http(s) URL');
  return url;
}

/**
 * A page opened and settled by the same rule as a screenshot (dialogs, popups, downloads, caps),
 * then the caller's controls: headers and cookies from the first request, the page work once settled.
 * `errorStops`: a page whose own answer is an HTTP error (a 429, a 404) gets no page work (its
 * waitFor would only wait out the timeout): the caller reads the status (websitepro's render).
 */
async function open(
  page: Page,
  url: string,
  timeoutMs: number,
  blockedSince?: (t: number) => boolean,
  ahead?: PageHooks,
  settle?: Settle,
  controls: PageControls = {},
  engine: 'chromium' | 'gecko' = 'chromium',
  o: { errorStops?: boolean } = {},
) {
  const watch = new PageWatch(page);
  const deadline = Date.now() + timeoutMs;
  await applyRequestControls(page, url, { headers: controls.headers, cookies: controls.cookies }, engine);
  const resp = await openPage(page, watch, url, {
    deadline,
    blockedSince,
    onParsed: ahead?.makeNext,
    step: ahead?.step,
    settle,
  });
  const selectors: SelectorCounts = {};
  const status = (watch.mainResponse ?? resp)?.status() ?? null;
  const failed = o.errorStops && status !== null && status >= 400;
  if (hasPageWork(controls) && !failed)
    await watch.race(
      doPageWork(
        page,
        { waitFor: controls.waitFor, actions: controls.actions, removeSelectors: controls.removeSelectors },
        {
          deadline,
          counts: selectors,
          step: ahead?.step,
        },
      ),
    );
  return {
    page,
    watch,
    status: (watch.mainResponse ?? resp)?.status() ?? null,
    selectors: Object.keys(selectors).length ? selectors : undefined,
  };
}

/** The page's own timeout: the caller's (controls.timeoutMs, at most 60 s) or the pool's. */
const timeoutOf = (controls: PageControls | undefined, pageTimeoutMs: number) =>
  controls?.timeoutMs ? Math.min(60_000, Math.max(1000, controls.timeoutMs)) : pageTimeoutMs;

/** `settle`: the settle rule's limits (`SETTLE` unless given). */
export function renderEndpoints(deps: {
  browser: ManagedBrowser;
  slots: Slots;
  stores: Stores;
  pageTimeoutMs: number;
  blockedSince?: (t: number) => boolean;
  settle?: Settle;
}) {
  const { browser, slots, stores, pageTimeoutMs, blockedSince, settle } = deps;
  const engine = browser.launcher.engine;
  const run = async <T>(fn: (page: Page, ahead: PageHooks) => Promise<T>, pageTimeoutMs = deps.pageTimeoutMs): Promise<T> => {
    // the caller gives up after about pageTimeoutMs: do not start a page it no longer waits for
    let release: () => void;
    try {
      release = await slots.acquire(AbortSignal.timeout(Math.min(30000, Math.max(1000, pageTimeoutMs / 2))));
    } catch {
      throw new ApiError('busy', 'every page of this browser-pool instance is busy; retry later');
    }
    try {
      return await browser.withPage(pageTimeoutMs, (page, _ctx, _browser, ahead) => fn(page, ahead));
    } catch (e) {
      throw toApiError(e);
    } finally {
      release();
    }
  };
  return {
    async renderPdf(req: RenderPdfRequest): Promise<RenderPdfReply> {
      const url = checkUrl(req.url);
      if (typeof req.store !== 'string' || typeof req.objectName !== 'string' || !req.objectName)
        throw new ApiError('bad_request', 'store and objectName are required');
      checkControls(req.controls);
      const ms = timeoutOf(req.controls, pageTimeoutMs);
      const { pdf, selectors } = await run(async (page, ahead) => {
        const { watch, selectors } = await open(page, url, ms - 2000, blockedSince, ahead, settle, req.controls, engine);
        ahead.step('the PDF');
        await page.emulateMediaType('print');
        return { pdf: Buffer.from(await watch.ownCapture(page.pdf(pdfOptionsOf(req.pdf, ms)))), selectors };
      }, ms);
      await stores.put(req.store, req.objectName, pdf);
      return { bytes: pdf.length, contentType: 'application/pdf', ...(selectors ? { selectors } : {}) };
    },
    async renderHtml(req: RenderHtmlRequest): Promise<RenderHtmlReply> {
      const url = checkUrl(req.url);
      checkControls(req.controls);
      const ms = timeoutOf(req.controls, pageTimeoutMs);
      return run(async (page, ahead) => {
        const { watch, status, selectors } = await open(page, url, ms - 2000, blockedSince, ahead, settle, req.controls, engine, {
          errorStops: true,
        });
        ahead.step('the rendered HTML');
        return {
          html: await watch.ownCapture(page.content()),
          finalUrl: watch.finalUrl ?? page.url(),
          status,
          ...(selectors ? { selectors } : {}),
        };
      }, ms);
    },
  };
}
