// A page of a page-set job (websitepro `urls`; the crawl's pages too): one task per page, which
// fetches the page once and makes every output of the job from that one fetch (no leader and
// followers: the task is the page). Each output's file is stored as `<jobId>/<pageKey>/<output>`;
// the task's outcome carries what became of every output (`extra.outputs`) and the final URL
// (`extra.page`), which the supervisor records as the page's results (actors/job-supervisor/pages.ts).
import { objectName, type StoredFile } from '../../shared/protocol/jobs.ts';
import type { TaskContext, TaskResult } from '../../shared/worker.ts';
import { guardedFetch, OutboundError } from '../../shared/outbound/index.ts';
import { putObject } from '../../shared/nats/objects.ts';
import { call } from '../../shared/micro.ts';
import { subjects } from '../../shared/names.ts';
import { ApiError } from '../../shared/errors.ts';
import { resultKey } from '../../shared/crawl/keys.ts';
import type { PageTaskParams } from '../../shared/jobs/pages.ts';
import { sniffType } from './sniff.ts';
import { wallFailure } from './walls.ts';
import { ConversionError } from './pool.ts';
import { CONTENT_TYPES, type ConvertInput, type ConvertResult, type OutputFile, type OutputFailure, type TextOutput } from './types.ts';
import type { RenderHtmlReply, RenderPdfReply } from './browser.ts';
import type { Deps } from './job-files.ts';

/** What a page task needs of the converter. */
export type PageDeps = Pick<Deps, 'nc' | 'config' | 'pool'>;

/** What became of one output of the page. */
export type PageOutput = { file: StoredFile } | { error: string; message: string; extra?: Record<string, unknown> };
/** The page task's outcome facts (`extra`): the final URL and every output's file or failure. */
export interface PageOutcomeExtra {
  page: string;
  outputs: Record<string, PageOutput>;
}

const failAll = (outputs: string[], f: { error: string; message: string; extra?: Record<string, unknown> }) =>
  Object.fromEntries(outputs.map((o) => [o, f]));

/** A download's file name: the page key with its folders joined (`docs_intro.md`); the zip keeps the folders. */
const downloadName = (pageKey: string, ext: string) => `${pageKey.replace(/\//g, '_')}.${ext}`;

export const isPageTask = (params: Record<string, unknown>) => params.page === true;

export async function handlePage(deps: PageDeps, ctx: TaskContext): Promise<TaskResult> {
  const { task } = ctx;
  const p = task.params as unknown as PageTaskParams;
  const outputs = p.outputs as (TextOutput | 'pdf')[];
  const text = outputs.filter((o): o is TextOutput => o !== 'pdf');
  const { config } = deps;
  const put = async (o: string, data: Uint8Array, contentType: string, ext: string): Promise<StoredFile> => {
    const name = objectName(task.jobId, resultKey(p.pageKey, o));
    const filename = downloadName(p.pageKey, ext);
    await putObject(deps.nc, task.store, { name, description: contentType, metadata: { filename } }, data);
    return { store: task.store, name, contentType, bytes: data.length, filename };
  };

  let res;
  try {
    res = await guardedFetch(p.url, {
      allowCidrs: config.outbound.allowCidrs,
      maxRedirects: config.outbound.maxRedirects,
      connectTimeoutMs: config.outbound.connectTimeoutMs,
      timeoutMs: config.websitepro.fetchTimeoutMs,
      maxBytes: config.websitepro.maxBytes,
      signal: ctx.signal,
      headers: { accept: 'text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8', 'accept-language': 'en;q=0.9,*;q=0.5' },
    });
  } catch (e) {
    if (ctx.signal.aborted) throw e;
    const f = e instanceof OutboundError ? { error: e.code, message: e.message } : { error: 'unreachable', message: (e as Error).message };
    return { extra: { page: p.url, outputs: failAll(outputs, f) } satisfies PageOutcomeExtra };
  }
  // a wall (bot challenge, CAPTCHA, login) is not a delivery: every output of the page fails with
  // its evidence (shared/crawl/walls.ts), as in a one-page job
  const wall = wallFailure(res);
  if (wall) return { extra: { page: res.url, outputs: failAll(outputs, wall) } satisfies PageOutcomeExtra };
  if (res.status >= 400)
    return {
      extra: {
        page: res.url,
        outputs: failAll(outputs, { error: 'http_error', message: `the target answered HTTP ${res.status}` }),
      } satisfies PageOutcomeExtra,
    };

  const out: Record<string, PageOutput> = {};
  const contentType = String(res.headers['content-type'] ?? '');
  if (text.length) {
    const base: ConvertInput = {
      body: res.body,
      contentType,
      contentLanguage: res.headers['content-language'] as string | undefined,
      status: res.status,
      url: p.url,
      finalUrl: res.url,
      redirects: res.chain.slice(0, -1),
      rendered: false,
      outputs: text,
      warnings: [],
    };
    let result: ConvertResult;
    try {
      result = await deps.pool.run({ ...base, detectJs: true });
      if (result.needsJavaScript) {
        const reason = result.reason;
        const rendered = await call<RenderHtmlReply>(
          deps.nc,
          subjects.browser.renderHtml,
          { url: res.url },
          config.shots.pageTimeoutMs + 5000,
        ).catch((e: Error) => e);
        const again: ConvertInput =
          rendered instanceof Error
            ? {
                ...base,
                warnings: [
                  `the page needs JavaScript (${reason}) but could not be rendered: ${rendered.message}; converted the static HTML`,
                ],
              }
            : {
                ...base,
                body: Buffer.from(rendered.html, 'utf8'),
                contentType: 'text/html; charset=utf-8',
                finalUrl: rendered.finalUrl || res.url,
                rendered: true,
              };
        result = await deps.pool.run(again);
      }
    } catch (e) {
      const f =
        e instanceof ConversionError
          ? { error: e.code, message: e.message }
          : { error: 'conversion_failed', message: (e as Error).message };
      result = { outputs: Object.fromEntries(text.map((o) => [o, { ok: false, ...f }])) };
    }
    if (result.needsJavaScript) throw new Error('unreachable: second pass asked for JavaScript');
    for (const o of text) {
      const r = result.outputs[o] as OutputFile | OutputFailure | undefined;
      if (!r) out[o] = { error: 'conversion_failed', message: `no ${o} was produced` };
      else if (!r.ok) out[o] = { error: r.error, message: r.message };
      else out[o] = { file: await put(o, Buffer.from(r.data, 'utf8'), r.contentType, r.ext || CONTENT_TYPES[o].ext) };
    }
  }
  if (outputs.includes('pdf')) {
    // a PDF target is its own PDF; everything else is printed by a browser
    if (sniffType(res.body, contentType) === 'application/pdf') out.pdf = { file: await put('pdf', res.body, 'application/pdf', 'pdf') };
    else
      out.pdf = await printPage(
        deps,
        task.store,
        objectName(task.jobId, resultKey(p.pageKey, 'pdf')),
        res.url,
        downloadName(p.pageKey, 'pdf'),
      );
  }
  return { extra: { page: res.url, outputs: out } satisfies PageOutcomeExtra };
}

async function printPage(deps: PageDeps, store: string, name: string, url: string, filename: string): Promise<PageOutput> {
  try {
    const reply = await call<RenderPdfReply>(
      deps.nc,
      subjects.browser.renderPdf,
      { url, store, objectName: name },
      deps.config.shots.pageTimeoutMs + 10000,
    );
    return { file: { store, name, contentType: 'application/pdf', bytes: reply.bytes, filename } };
  } catch (e) {
    if (e instanceof ApiError)
      return {
        error: e.code === 'internal' ? String(e.details?.reason ?? 'render_failed') : e.code,
        message: e.message,
      };
    return { error: 'render_failed', message: (e as Error).message };
  }
}
