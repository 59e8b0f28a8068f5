// The converter actor: websitepro tasks. One fetch per job, shared by all its outputs:
//   - the task of the job's first output ("leader") fetches the page through the outbound guard,
//   renders it in browser-pool when it needs JavaScript, converts every text output of the job in
//   one worker-thread pass, writes each output's file under its own object name (`<jobId>/<output>`,
//   its content type and file name in the object's meta), and reports every other output's outcome
//   on `result.<jobId>` itself, with the message id that output's own task would use;
//   - every other task ("follower") listens for its outcome there, or finds its file in the store,
//   and reports the same (a duplicate the stream drops): no fetch, no parse, no object read;
//   - `<jobId>/_converted`, a small JSON index of what became of every output, is written only when
//   the files cannot say it: an output failed, or the job has a `pdf` to decide;
//   - if neither the outcome nor the file appears in time (the leader's worker died), the follower
//     does the work itself;
//   - `pdf` is printed by a real Chromium in browser-pool (request/reply); for a PDF target the
//     fetched file itself is the result.
// See docs/websitepro.md.
import os from 'node:os';
import { Objm, type ObjectStore } from '@nats-io/obj';
import { CONSUMERS, subjects } from '../../shared/names.ts';
import {
  earlierWork,
  filenameFor,
  hasFacts,
  indexName,
  isPoolOutput,
  putFile,
  TEXT_OUTPUTS,
  type ConvertedIndex,
  type Deps,
  type Entry,
  type Output,
} from './job-files.ts';
import { waitForLeader } from './follower.ts';
import type { ActorContext, ActorHandle } from '../../shared/actor.ts';
import { runWorker, publishOutcome, type TaskContext, type TaskResult } from '../../shared/worker.ts';
import { handlePage, isPageTask } from './page.ts';
import { putObject } from '../../shared/nats/objects.ts';
import { advertise } from '../../shared/catalogue.ts';
import { objectName, TaskFailure, type Outcome, type StoredFile, type Task } from '../../shared/protocol/jobs.ts';
import { OutboundError, type GuardedResponse } from '../../shared/outbound/index.ts';
import { cachedFetch, targetFetchOptions } from './cache.ts';
import { ConvertPool, ConversionError } from './pool.ts';
import { wallFailure } from './walls.ts';
import { sleep } from '../../shared/runtime.ts';
import {
  browserFailure,
  browserHttpError,
  forcesRender,
  originHeaders,
  convertPage,
  renderHtml,
  renderHtmlRetrying,
  renderPdf,
  taskControls,
  type RenderPdfReply,
  type TaskControls,
} from './browser.ts';
// the conversion itself runs in the pool's threads (thread.ts loads convert.ts, jsdom and unpdf);
// this thread needs only the sniffing and the output types (1.4 s less CPU per converter start)
import { isHtmlType, sniffType } from './sniff.ts';
import { CONTENT_TYPES, type ConvertInput, type ConvertResult, type OutputFile, type OutputFailure, type TextOutput } from './types.ts';

export type { RenderHtmlReply, RenderPdfReply } from './browser.ts';
export { TEXT_OUTPUTS, indexName, type ConvertedIndex };

/** Map a fetch failure to the result's error code (documented in docs/websitepro.md). */
function fetchFailure(e: unknown): { error: string; message: string } {
  if (e instanceof OutboundError) return { error: e.code, message: e.message };
  return { error: 'unreachable', message: (e as Error).message };
}

/** Progress for a step only when it is still running after a while: a fast job publishes none (the heartbeat keeps the task alive). */
const SLOW_STEP_MS = 1000;
async function step<T>(ctx: TaskContext, text: string, fn: () => Promise<T>): Promise<T> {
  const timer = setTimeout(() => void ctx.progress(text), SLOW_STEP_MS);
  try {
    return await fn();
  } finally {
    clearTimeout(timer);
  }
}

/**
 * The index when the files cannot say it all (a failed output, the pdf decision), then every other
 * output's outcome, reported for its task with the message id that task would use: the supervisor
 * has the result at once and the follower finds it on the subject it listens to. A lost publish is
 * not lost work: the follower finds the file or the index in the store.
 */
async function settle(deps: Deps, ctx: TaskContext, index: ConvertedIndex, outputs: Output[], self: Output): Promise<void> {
  const { task } = ctx;
  const failed = Object.values(index.outputs).some((e) => 'error' in e);
  // with facts on the results (controls), a follower takes its outcome from the index, never from its bare file
  if (failed || outputs.includes('pdf') || outputs.includes('render') || hasFacts(task))
    await putObject(deps.nc, task.store, { name: indexName(task.jobId) }, new TextEncoder().encode(JSON.stringify(index)));
  for (const o of outputs) {
    if (o === self) continue;
    const e = o === 'pdf' ? index.pdf : index.outputs[o];
    if (!e || e === 'browser') continue; // printed by the pdf task itself
    const at = Date.now();
    const extra = e.extra ? { extra: e.extra } : {};
    const outcome: Outcome =
      'error' in e
        ? { v: 1, kind: 'failed', jobId: task.jobId, resultKey: o, at, error: e.error, message: e.message, ...extra }
        : { v: 1, kind: 'done', jobId: task.jobId, resultKey: o, at, ...('file' in e ? { file: e.file } : {}), ...extra };
    await publishOutcome(deps.nc, outcome).catch((err: Error) =>
      deps.log.warn({ err, jobId: task.jobId, resultKey: o }, 'outcome for a follower not published; it finds its file or the index'),
    );
  }
}

/** Fetch once, render if needed, convert all text outputs, store every file, report the others' outcomes. */
async function produce(
  deps: Deps,
  ctx: TaskContext,
  outputs: Output[],
  url: string,
  self: Output,
  t: TaskControls,
): Promise<ConvertedIndex> {
  const { task } = ctx;
  const began = Date.now();
  const st = await deps.store(task.store);
  if (ctx.deliveryCount > 1) {
    const prior = await earlierWork(st, task, outputs);
    if (prior) return prior;
  }

  const text = outputs.filter(isPoolOutput);
  const index: ConvertedIndex = { v: 1, at: Date.now(), outputs: {} };
  const { config } = deps;
  const credentials = originHeaders(t.secret);
  let res: GuardedResponse | null = null;
  let failed: Entry | null = null;
  let cachedAt: string | undefined;
  try {
    const fetched = await step(ctx, 'fetching', () =>
      cachedFetch(
        deps.nc,
        config,
        url,
        {
          ...targetFetchOptions(config, ctx.signal),
          // the caller's headers and cookies go to the target's origin only, on every hop that is there
          ...(credentials ? { originHeaders: { origin: new URL(url).origin, headers: credentials } } : {}),
        },
        { maxAge: Number(task.params.maxAge) || 0, eligible: !credentials && !forcesRender(t.controls) },
      ),
    );
    res = fetched.res;
    cachedAt = fetched.cachedAt;
    // a wall (bot challenge, CAPTCHA, login) is not a delivery, whatever its status (shared/crawl/walls.ts)
    const wall = wallFailure(res);
    if (wall) failed = { ...wall, extra: { page: res.url, ...wall.extra } };
    else if (res.status >= 400) failed = { error: 'http_error', message: `the target answered HTTP ${res.status}` };
  } catch (e) {
    if (ctx.signal.aborted) throw e;
    failed = fetchFailure(e);
  }
  if (failed || !res) return failEvery(deps, ctx, index, outputs, self, failed!);

  const contentType = String(res.headers['content-type'] ?? '');
  const facts: Record<string, unknown> = { page: res.url, ...(cachedAt ? { cachedAt } : {}) };
  const selectors: Record<string, number> = {};
  const counted = (more: Record<string, number> | undefined) => {
    for (const [k, n] of Object.entries(more ?? {})) selectors[k] = Math.max(selectors[k] ?? 0, n);
  };
  const base: ConvertInput = {
    body: res.body,
    contentType,
    contentLanguage: res.headers['content-language'] as string | undefined,
    status: res.status,
    url,
    finalUrl: res.url,
    redirects: res.chain.slice(0, -1),
    rendered: false,
    outputs: text,
    warnings: [],
    ...(t.controls.removeSelectors || t.controls.targetSelectors || t.controls.mainContent === false
      ? {
          controls: {
            removeSelectors: t.controls.removeSelectors,
            targetSelectors: t.controls.targetSelectors,
            mainContent: t.controls.mainContent,
          },
        }
      : {}),
  };
  // with credentials the browser starts where the caller asked (its origin is the one they belong to)
  const renderUrl = credentials ? url : res.url;
  const isHtml = isHtmlType(sniffType(res.body, contentType));
  if (forcesRender(t.controls) && outputs.some((o) => o !== 'pdf')) {
    // the caller waits for a selector or runs actions: the page is rendered whatever it needs
    if (!isHtml)
      return failEvery(deps, ctx, index, outputs, self, {
        error: 'selector_not_found',
        message: `the target is ${contentType || 'not HTML'}, which has no elements to wait for or act on`,
        extra: facts,
      });
    try {
      // a busy browser-pool is asked again (browser.ts renderHtmlRetrying): our capacity, not the page's failure
      const r = await step(ctx, 'rendering', () => renderHtmlRetrying(deps.nc, config, renderUrl, t, { began, signal: ctx.signal, sleep }));
      // the browser's own answer counts as the fetch's did: an error page is no delivery (browser-pool
      // does not wait for a selector on it)
      const httpError = browserHttpError(r);
      if (httpError) return failEvery(deps, ctx, index, outputs, self, { ...httpError, extra: facts });
      counted(r.selectors);
      Object.assign(base, {
        body: Buffer.from(r.html, 'utf8'),
        contentType: 'text/html; charset=utf-8',
        finalUrl: r.finalUrl || res.url,
        rendered: true,
      });
      facts.page = base.finalUrl;
    } catch (e) {
      if (ctx.signal.aborted) throw e;
      const f = browserFailure(e, 'renders pages');
      return failEvery(deps, ctx, index, outputs, self, { error: f.error, message: f.message, extra: { ...facts, ...(f.extra ?? {}) } });
    }
  }
  if (text.length) {
    let result: ConvertResult;
    const last = { input: base };
    try {
      const c = await convertPage(
        (input) => step(ctx, 'converting', () => deps.pool.run(input)),
        base,
        async () => {
          const r = await renderHtml(deps.nc, config, renderUrl, t);
          await ctx.progress('converting the rendered page');
          counted(r.selectors);
          return r;
        },
        last,
      );
      result = c.result;
      // rawHtml below is the page as rendered
      if (c.rendered)
        Object.assign(base, { body: last.input.body, contentType: last.input.contentType, finalUrl: last.input.finalUrl, rendered: true });
    } catch (e) {
      // a second pass that failed had rendered the page: rawHtml below is the page as rendered
      if (last.input.rendered && !base.rendered)
        Object.assign(base, { body: last.input.body, contentType: last.input.contentType, finalUrl: last.input.finalUrl, rendered: true });
      result = await convertEachAlone(deps, ctx, text, last.input, e);
    }
    if (result.needsJavaScript) throw new Error('unreachable: the page was converted');
    counted(result.selectors);
    if (hasFacts(task)) facts.selectors = selectors;
    for (const o of text) {
      const r = result.outputs[o] as OutputFile | OutputFailure | undefined;
      if (!r) index.outputs[o] = { error: 'conversion_failed', message: `no ${o} was produced`, extra: facts };
      else if (!r.ok) index.outputs[o] = { error: r.error, message: r.message, extra: facts };
      else
        index.outputs[o] = {
          file: await putFile(deps, task, o, Buffer.from(r.data, 'utf8'), r.contentType, r.ext, res.url),
          extra: facts,
        };
    }
  }
  if (hasFacts(task)) facts.selectors = selectors;
  if (outputs.includes('rawHtml')) {
    // the page as fetched (its own bytes and content type) or as rendered (UTF-8)
    index.outputs.rawHtml = isHtmlType(sniffType(base.body, base.contentType))
      ? { file: await putFile(deps, task, 'rawHtml', base.body, base.contentType || 'text/html', 'raw.html', res.url), extra: facts }
      : { error: 'unsupported_content', message: `a ${base.contentType || 'non-HTML'} target has no rawHtml`, extra: facts };
  }
  if (outputs.includes('render')) index.outputs.render = { done: true, extra: facts };
  if (outputs.includes('pdf')) {
    const mt = sniffType(res.body, contentType);
    // a PDF target is its own PDF; everything else is printed by a browser
    index.pdf =
      mt === 'application/pdf' ? { file: await putFile(deps, task, 'pdf', res.body, 'application/pdf', 'pdf', res.url) } : 'browser';
  }
  await settle(deps, ctx, index, outputs, self);
  return index;
}

/** Every output of the job fails alike (the fetch or the render did), reported and indexed. */
async function failEvery(deps: Deps, ctx: TaskContext, index: ConvertedIndex, outputs: Output[], self: Output, f: Entry) {
  for (const o of outputs) index.outputs[o] = f;
  if (outputs.includes('pdf')) index.pdf = f;
  await settle(deps, ctx, index, outputs, self);
  return index;
}

/**
 * The thread died on the whole job (a crash, a heap limit): try each output alone, so the one that
 * kills it fails by itself and the others are delivered. A timeout is not retried: the task's own
 * time limit would not allow it.
 */
async function convertEachAlone(deps: Deps, ctx: TaskContext, text: TextOutput[], last: ConvertInput, e: unknown): Promise<ConvertResult> {
  const fail = (x: unknown) =>
    x instanceof ConversionError ? { error: x.code, message: x.message } : { error: 'conversion_failed', message: (x as Error).message };
  const f = fail(e);
  const result: ConvertResult = { outputs: Object.fromEntries(text.map((o) => [o, { ok: false, ...f }])) };
  if (f.error !== 'conversion_failed' || text.length < 2) return result;
  await ctx.progress('converting each output alone');
  for (const o of text) {
    try {
      const one = await deps.pool.run({ ...last, detectJs: false, outputs: [o] });
      if (!one.needsJavaScript && one.outputs[o]) result.outputs[o] = one.outputs[o];
      if (!one.needsJavaScript && one.selectors) result.selectors = { ...result.selectors, ...one.selectors };
    } catch (e2) {
      result.outputs[o] = { ok: false, ...fail(e2) };
    }
  }
  return result;
}

async function printPdf(
  deps: Deps,
  task: Task,
  url: string,
  t: TaskControls,
): Promise<{ file: StoredFile; extra?: Record<string, unknown> }> {
  const name = objectName(task.jobId, 'pdf');
  let reply: RenderPdfReply;
  try {
    reply = await renderPdf(deps.nc, deps.config, { url, store: task.store, objectName: name }, t);
  } catch (e) {
    throw browserFailure(e, 'prints PDFs');
  }
  return {
    file: { store: task.store, name, contentType: 'application/pdf', bytes: reply.bytes, filename: filenameFor(url, 'pdf') },
    ...(hasFacts(task) ? { extra: { selectors: reply.selectors ?? {} } } : {}),
  };
}

function outcome(entry: Entry | undefined, key: string): { file?: StoredFile; extra?: Record<string, unknown> } {
  if (!entry) throw new TaskFailure('conversion_failed', `no ${key} was produced`);
  if ('error' in entry) throw new TaskFailure(entry.error, entry.message, entry.extra);
  return { ...('file' in entry ? { file: entry.file } : {}), ...(entry.extra ? { extra: entry.extra } : {}) };
}

export async function handleTask(deps: Deps, ctx: TaskContext): Promise<TaskResult> {
  // a page of a page set (batch, crawl): one task makes every output of the page (page.ts)
  if (isPageTask(ctx.task.params)) return handlePage(deps, ctx);
  const p = ctx.task.params as { url?: unknown; output?: unknown; outputs?: unknown };
  const url = String(p.url ?? '');
  const output = String(p.output ?? ctx.task.resultKey) as Output;
  const outputs = [...new Set((Array.isArray(p.outputs) ? p.outputs : [output]).map(String))] as Output[];
  if (!outputs.includes(output)) outputs.push(output);
  const t = taskControls(ctx.task.params);
  const needsFetch = outputs.some((o) => o !== 'pdf');

  if (output === 'pdf' && !needsFetch) {
    await ctx.progress('printing');
    return printPdf(deps, ctx.task, url, t);
  }
  const leader = outputs[0]!;
  let entry: Entry | 'browser' | null | undefined = leader === output ? null : await waitForLeader(deps, ctx, output, leader);
  if (!entry) {
    const index = await produce(deps, ctx, outputs, url, output, t);
    entry = output === 'pdf' ? index.pdf : index.outputs[output];
  }
  if (output !== 'pdf') return outcome(entry === 'browser' ? undefined : entry, output);
  if (entry === 'browser' || entry === undefined) {
    await ctx.progress('printing');
    return printPdf(deps, ctx.task, url, t);
  }
  return outcome(entry, 'pdf');
}

export async function start(ctx: ActorContext): Promise<ActorHandle> {
  const { nc, config, log } = ctx;
  const size = Math.max(1, Math.min(config.websitepro.concurrency, os.availableParallelism()));
  const pool = new ConvertPool({ size, taskTimeoutMs: config.websitepro.convertTimeoutMs });
  const stores = new Map<string, Promise<ObjectStore>>();
  const deps: Deps = {
    nc,
    config,
    log,
    pool,
    store(name) {
      let s = stores.get(name);
      if (!s) {
        s = new Objm(nc).open(name);
        stores.set(name, s);
        s.catch(() => stores.delete(name));
      }
      return s;
    },
  };
  const worker = await runWorker({
    nc,
    config,
    log,
    consumer: CONSUMERS.converter,
    filterSubject: subjects.taskWebsitepro,
    concurrency: config.websitepro.concurrency,
    handle: (tctx) => handleTask(deps, tctx),
  });
  const ad = await advertise(nc, 'websitepro', ctx.instanceId, () => ({
    outputs: [
      ...TEXT_OUTPUTS.map((id) => ({ id, contentType: CONTENT_TYPES[id].contentType })),
      {
        id: 'pdf',
        contentType: 'application/pdf',
        note: 'printed by a real Chromium in browser-pool (A4 and backgrounds unless `pdf` says otherwise)',
      },
      { id: 'rawHtml', contentType: 'text/html', note: 'the HTML as fetched, or as rendered when the page was rendered' },
    ],
    metadataSchema: '/openapi.json#/components/schemas/PageMetadata',
    limits: {
      maxBytes: config.websitepro.maxBytes,
      fetchTimeoutMs: config.websitepro.fetchTimeoutMs,
      maxRedirects: config.outbound.maxRedirects,
    },
    concurrency: config.websitepro.concurrency,
  }));
  log.info({ threads: size, concurrency: config.websitepro.concurrency }, 'converter started');
  return {
    async stop() {
      await ad.stop();
      await worker.stop();
      await pool.close();
    },
  };
}
