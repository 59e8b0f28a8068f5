// What the converter asks of browser-pool (session 29 contract, section 7): the rendered HTML of a
// page, and its PDF, each with the caller's page controls; and the task's controls as they came.
import type { NatsConnection } from '@nats-io/nats-core';
import { subjects } from '../../shared/names.ts';
import { call } from '../../shared/micro.ts';
import { ApiError } from '../../shared/errors.ts';
import { TaskFailure } from '../../shared/protocol/jobs.ts';
import type { Config } from '../../shared/config/index.ts';
import type { PageControls, PdfOptionsDoc, SelectorCounts } from '../../shared/schemas/page-controls.ts';
import type { ConverterControls, ControlSecrets } from '../../shared/services/index.ts';
import type { ConvertInput, ConvertResult } from './types.ts';

export interface RenderHtmlReply {
  html: string;
  finalUrl: string;
  status: number | null;
  selectors?: SelectorCounts;
}
export interface RenderPdfReply {
  bytes: number;
  contentType?: string;
  selectors?: SelectorCounts;
}

/** A task's controls: what the job says (names only) and what its message alone carries (the values). */
export interface TaskControls {
  controls: ConverterControls;
  secret: ControlSecrets;
  pdf?: PdfOptionsDoc;
}

/**
 * The controls of a task's params. Credentials named by the job but absent from the message (a task
 * published again from the stored job, which never holds them) fail the task: the page is not
 * fetched without what the caller said it needs.
 */
export function taskControls(params: Record<string, unknown>): TaskControls {
  const controls = (params.controls ?? {}) as ConverterControls;
  const secret = (params.secret ?? {}) as ControlSecrets;
  if ((controls.headerNames?.length && !secret.headers) || (controls.cookieNames?.length && !secret.cookies))
    throw new TaskFailure(
      'credentials_unavailable',
      'the request headers or cookies of this job are no longer available (they are never stored; the task was published again without them)',
    );
  return { controls, secret, ...(params.pdf ? { pdf: params.pdf as PdfOptionsDoc } : {}) };
}

/** The page must be rendered before it is converted: the caller waits for a selector or runs actions. */
export const forcesRender = (c: ConverterControls) => !!(c.waitFor || c.actions?.length);

/** The browser side of the controls (browser-pool's `controls`), the credentials included. */
export function browserControls(t: TaskControls): PageControls | undefined {
  const c = t.controls;
  const out: PageControls = {
    ...(c.removeSelectors ? { removeSelectors: c.removeSelectors } : {}),
    ...(c.waitFor ? { waitFor: c.waitFor } : {}),
    ...(c.timeoutMs ? { timeoutMs: c.timeoutMs } : {}),
    ...(c.actions?.length ? { actions: c.actions } : {}),
    ...(t.secret.headers ? { headers: t.secret.headers } : {}),
    ...(t.secret.cookies ? { cookies: t.secret.cookies } : {}),
  };
  return Object.keys(out).length ? out : undefined;
}

/** The request headers for the target origin's fetches: the caller's headers and its cookies as one Cookie header. */
export function originHeaders(secret: ControlSecrets): Record<string, string> | undefined {
  const h: Record<string, string> = { ...(secret.headers ?? {}) };
  if (secret.cookies?.length) h.cookie = secret.cookies.map((c) => `${c.name}=${c.value}`).join('; ');
  return Object.keys(h).length ? h : undefined;
}

/** How long browser-pool may take: its page time limit, or the caller's timeout, plus the actions' own time. */
export const browserWaitMs = (config: Config, c: ConverterControls) =>
  Math.max(config.shots.pageTimeoutMs, (c.timeoutMs ?? 0) + (c.actions?.length ? 30_000 : 0)) + 5000;

/** A browser-pool refusal as the result's error; selector_not_found names its selector. */
export function browserFailure(e: unknown, what: string): TaskFailure {
  if (e instanceof TaskFailure) return e;
  if (e instanceof ApiError) {
    if (e.code === 'service_unavailable')
      return new TaskFailure('service_unavailable', `no browser-pool instance ${what} right now (${e.message})`);
    const reason = e.code === 'internal' ? String(e.details?.reason ?? 'render_failed') : e.code;
    if (reason === 'selector_not_found') {
      const sel = e.details?.selector;
      return new TaskFailure(
        'selector_not_found',
        typeof sel === 'string' ? `the selector ${JSON.stringify(sel)} matches nothing on the page` : e.message,
        e.details?.selectors ? { selectors: e.details.selectors } : undefined,
      );
    }
    return new TaskFailure(reason, e.message);
  }
  return new TaskFailure('render_failed', (e as Error)?.message ?? String(e));
}

export async function renderHtml(nc: NatsConnection, config: Config, url: string, t: TaskControls | null): Promise<RenderHtmlReply> {
  const controls = t ? browserControls(t) : undefined;
  return call<RenderHtmlReply>(
    nc,
    subjects.browser.renderHtml,
    { url, ...(controls ? { controls } : {}) },
    t ? browserWaitMs(config, t.controls) : config.shots.pageTimeoutMs + 5000,
  );
}

/**
 * A render that found our browser-pool busy (or no instance answering) is asked again after these
 * waits, while the task's time bound allows a whole render more: our capacity is not the page's
 * failure. A crawl's page goes back to the supervisor instead (actors/converter/page.ts `retry.ours`).
 */
export const RENDER_BUSY_BACKOFF_MS = [1000, 3000];
export const ourCapacity = (error: string): error is 'busy' | 'service_unavailable' => error === 'busy' || error === 'service_unavailable';

/** The browser's own answer counts as the fetch's: an HTTP error page (browser-pool waits for no selector on it) is no delivery. */
export const browserHttpError = (r: Pick<RenderHtmlReply, 'status'>) =>
  r.status !== null && r.status >= 400 ? { error: 'http_error', message: `the target answered HTTP ${r.status} to the browser` } : null;

/** renderHtml, asked again after RENDER_BUSY_BACKOFF_MS while browser-pool is busy; a failure thrown as browserFailure makes it. */
export async function renderHtmlRetrying(
  nc: NatsConnection,
  config: Config,
  url: string,
  t: TaskControls | null,
  o: { began: number; signal: AbortSignal; sleep: (ms: number, signal: AbortSignal) => Promise<unknown> },
): Promise<RenderHtmlReply> {
  for (let tries = 1; ; tries++) {
    try {
      return await renderHtml(nc, config, url, t);
    } catch (e) {
      if (o.signal.aborted) throw e;
      const f = browserFailure(e, 'renders pages');
      const wait = RENDER_BUSY_BACKOFF_MS[tries - 1];
      const room = config.jobs.taskTimeoutSeconds * 1000 - (Date.now() - o.began) - 5000;
      const whole = t ? browserWaitMs(config, t.controls) : config.shots.pageTimeoutMs + 5000;
      if (ourCapacity(f.error) && wait !== undefined && wait + whole < room) {
        await o.sleep(wait, o.signal);
        continue;
      }
      throw tries > 1 ? new TaskFailure(f.error, `${f.message} (rendered ${tries} times)`, f.extra) : f;
    }
  }
}

export async function renderPdf(
  nc: NatsConnection,
  config: Config,
  req: { url: string; store: string; objectName: string },
  t: TaskControls,
): Promise<RenderPdfReply> {
  const controls = browserControls(t);
  return call<RenderPdfReply>(
    nc,
    subjects.browser.renderPdf,
    { ...req, ...(controls ? { controls } : {}), ...(t.pdf ? { pdf: t.pdf } : {}) },
    browserWaitMs(config, t.controls) + 5000,
  );
}

/**
 * Convert a fetched page the way every websitepro page is converted (a one-page job's, a page set's):
 * the first pass also asks whether the page needs JavaScript; one that does is rendered (`render`, by
 * browser-pool) and its rendered DOM converted, and when no browser renders it the static HTML is
 * converted with a warning that says so. `last.input` holds the input being converted (a caller that
 * converts each output alone after a failure starts from it); `rendered` says the page was rendered.
 */
export async function convertPage(
  run: (input: ConvertInput) => Promise<ConvertResult>,
  base: ConvertInput,
  render: () => Promise<RenderHtmlReply>,
  last: { input: ConvertInput } = { input: base },
): Promise<{ result: Exclude<ConvertResult, { needsJavaScript: true }>; rendered?: RenderHtmlReply }> {
  last.input = { ...base, detectJs: true };
  const first = await run(last.input);
  if (!first.needsJavaScript) return { result: first };
  const rendered = await render().catch((e: Error) => e);
  last.input =
    rendered instanceof Error
      ? {
          ...base,
          warnings: [
            ...(base.warnings ?? []),
            `the page needs JavaScript (${first.reason}) but could not be rendered: ${rendered.message}; converted the static HTML`,
          ],
        }
      : {
          ...base,
          body: Buffer.from(rendered.html, 'utf8'),
          contentType: 'text/html; charset=utf-8',
          finalUrl: rendered.finalUrl || base.finalUrl,
          rendered: true,
        };
  const result = await run(last.input);
  if (result.needsJavaScript) throw new Error('unreachable: second pass asked for JavaScript');
  return rendered instanceof Error ? { result } : { result, rendered };
}
