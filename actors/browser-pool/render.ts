// websitepro's browser work, served as NATS micro endpoints: a PDF of the page (Chromium, A4,
// backgrounds) written to the object store, and the rendered DOM of a page that needs JavaScript.
import type { Page } from 'puppeteer-core';
import { ApiError, type ErrorCode } from '../../shared/errors.ts';
import { TaskFailure } from '../../shared/protocol/jobs.ts';
import { navigationFailure, openPage, PageWatch, type Settle } from './settle.ts';
import { PageTimeout, type ManagedBrowser, type PageHooks, type Slots } from './pool.ts';
import type { Stores } from './store.ts';

export interface RenderPdfRequest {
  url: string;
  store: string;
  objectName: string;
}
export interface RenderPdfReply {
  bytes: number;
  contentType: 'application/pdf';
}
export interface RenderHtmlRequest {
  url: string;
}
export interface RenderHtmlReply {
  html: string;
  finalUrl: string;
  status: number | null;
}

/**
 * Failures cross the wire as ApiError: `blocked_address` and `unreachable` (the target could not
 * be reached) as themselves; a page that was reached but did not finish in time or could not be
 * rendered as `internal` with `reason` `timeout` / `render_failed`, which the converter turns into
 * the result's error. A reached page is never reported as `unreachable`.
 */
export function toApiError(e: unknown): ApiError {
  if (e instanceof ApiError) return e;
  const f = e instanceof PageTimeout ? new TaskFailure('timeout', e.message) : e instanceof TaskFailure ? e : navigationFailure(e);
  const code: ErrorCode = f.error === 'blocked_address' || f.error === 'unreachable' ? f.error : 'internal';
  return new ApiError(code, f.message, { reason: f.error === 'timeout' ? 'timeout' : code === 'internal' ? 'render_failed' : f.error });
}

function checkUrl(url: unknown): string {
  if (typeof url !== 'string' || !/^https?:\/\//i.test(url)) throw new ApiError('bad_url', 'url must be an absolute http(s) URL');
  return url;
}

/** A page opened and settled by the same rule as a screenshot (dialogs, popups, downloads, caps). */
async function open(page: Page, url: string, timeoutMs: number, blockedSince?: (t: number) => boolean, ahead?: PageHooks, settle?: Settle) {
  const watch = new PageWatch(page);
  const resp = await openPage(page, watch, url, {
    deadline: Date.now() + timeoutMs,
    blockedSince,
    onParsed: ahead?.makeNext,
    step: ahead?.step,
    settle,
  });
  return { page, watch, status: (watch.mainResponse ?? resp)?.status() ?? null };
}

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
  const run = async <T>(fn: (page: Page, ahead: PageHooks) => Promise<T>): Promise<T> => {
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
      const pdf = await run(async (page, ahead) => {
        const { watch } = await open(page, url, pageTimeoutMs - 2000, blockedSince, ahead, settle);
        ahead.step('the PDF');
        await page.emulateMediaType('print');
        return Buffer.from(await watch.ownCapture(page.pdf({ format: 'A4', printBackground: true, timeout: pageTimeoutMs })));
      });
      await stores.put(req.store, req.objectName, pdf);
      return { bytes: pdf.length, contentType: 'application/pdf' };
    },
    async renderHtml(req: RenderHtmlRequest): Promise<RenderHtmlReply> {
      const url = checkUrl(req.url);
      return run(async (page, ahead) => {
        const { watch, status } = await open(page, url, pageTimeoutMs - 2000, blockedSince, ahead, settle);
        ahead.step('the rendered HTML');
        return { html: await watch.ownCapture(page.content()), finalUrl: watch.finalUrl ?? page.url(), status };
      });
    },
  };
}
