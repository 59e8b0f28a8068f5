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
import type { NatsConnection } from '@nats-io/nats-core';
import { CONSUMERS, subjects } from '../../shared/names.ts';
import type { ActorContext, ActorHandle } from '../../shared/actor.ts';
import { runWorker, publishOutcome, type TaskContext, type TaskResult } from '../../shared/worker.ts';
import { handlePage, isPageTask } from './page.ts';
import { call } from '../../shared/micro.ts';
import { putObject } from '../../shared/nats/objects.ts';
import { advertise } from '../../shared/catalogue.ts';
import { ApiError } from '../../shared/errors.ts';
import { objectName, TaskFailure, type Outcome, type StoredFile, type Task } from '../../shared/protocol/jobs.ts';
import { guardedFetch, OutboundError, type GuardedResponse } from '../../shared/outbound/index.ts';
import type { Config } from '../../shared/config/index.ts';
import type { Logger } from '../../shared/log.ts';
import { ConvertPool, ConversionError } from './pool.ts';
// the conversion itself runs in the pool's threads (thread.ts loads convert.ts, jsdom and unpdf);
// this thread needs only the sniffing and the output types (1.4 s less CPU per converter start)
import { sniffType } from './sniff.ts';
import { CONTENT_TYPES, type ConvertInput, type ConvertResult, type OutputFile, type OutputFailure, type TextOutput } from './types.ts';

export const TEXT_OUTPUTS = ['metadata', 'markdown', 'text', 'html'] as const;
type Output = TextOutput | 'pdf';

type Entry = { file: StoredFile } | { error: string; message: string };

/** `<jobId>/_converted`: what the leader made of every output of the job. */
export interface ConvertedIndex {
  v: 1;
  at: number;
  outputs: Partial<Record<Output, Entry>>;
  /** pdf: `browser` means "print it in browser-pool"; a file or error means it is decided. */
  pdf?: 'browser' | Entry;
}
export const indexName = (jobId: string) => `${jobId}/_converted`;

/** What a page task (page.ts) needs of the converter. */
export type PageDeps = Pick<Deps, 'nc' | 'config' | 'pool'>;

interface Deps {
  nc: NatsConnection;
  config: Config;
  log: Logger;
  pool: ConvertPool;
  store(name: string): Promise<ObjectStore>;
}

export interface RenderHtmlReply {
  html: string;
  finalUrl: string;
  status: number | null;
}
export interface RenderPdfReply {
  bytes: number;
  contentType?: string;
}

const filenameFor = (url: string, ext: string) => {
  let host = 'page';
  try {
    host = new URL(url).hostname.replace(/^\[|\]$/g, '').replace(/[^a-z0-9.-]/gi, '_') || 'page';
  } catch {
    /* keep the default */
  }
  return `${host}.${ext}`;
};

/** Map a fetch failure to the result's error code (documented in docs/websitepro.md). */
function fetchFailure(e: unknown): { error: string; message: string } {
  if (e instanceof OutboundError) return { error: e.code, message: e.message };
  return { error: 'unreachable', message: (e as Error).message };
}

/** Store one output's file; its content type and file name go in the object's meta, so the file alone says what it is. */
async function putFile(
  deps: Deps,
  task: Task,
  key: Output,
  data: Uint8Array,
  contentType: string,
  ext: string,
  url: string,
): Promise<StoredFile> {
  const name = objectName(task.jobId, key);
  const filename = filenameFor(url, ext);
  await putObject(deps.nc, task.store, { name, description: contentType, metadata: { filename } }, data);
  return { store: task.store, name, contentType, bytes: data.length, filename };
}

/** An output's stored file as its outcome would describe it, or null when there is none. */
async function storedFile(st: ObjectStore, task: Task, key: Output): Promise<{ file: StoredFile } | null> {
  const info = await st.info(objectName(task.jobId, key)).catch(() => null);
  if (!info || info.deleted) return null;
  const known = key === 'pdf' ? { contentType: 'application/pdf', ext: 'pdf' } : CONTENT_TYPES[key];
  return {
    file: {
      store: task.store,
      name: info.name,
      contentType: info.description || known.contentType,
      bytes: info.size,
      filename: info.metadata?.filename ?? filenameFor(String(task.params.url ?? ''), known.ext),
    },
  };
}

async function readIndex(st: ObjectStore, jobId: string): Promise<ConvertedIndex | null> {
  const raw = await st.getBlob(indexName(jobId)).catch(() => null);
  return raw ? (JSON.parse(new TextDecoder().decode(raw)) as ConvertedIndex) : null;
}

/**
 * A redelivered task finds what an earlier delivery (its own, or a follower that gave up waiting)
 * already made: the index, or every text output's file. A first delivery does not look: nothing can
 * be there yet, and the failed lookup cost a request per job.
 */
async function earlierWork(st: ObjectStore, task: Task, outputs: Output[]): Promise<ConvertedIndex | null> {
  const index = await readIndex(st, task.jobId);
  if (index || outputs.includes('pdf')) return index;
  const found: ConvertedIndex = { v: 1, at: Date.now(), outputs: {} };
  for (const o of outputs) {
    const f = await storedFile(st, task, o);
    if (!f) return null;
    found.outputs[o] = f;
  }
  return found;
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
  if (failed || outputs.includes('pdf'))
    await putObject(deps.nc, task.store, { name: indexName(task.jobId) }, new TextEncoder().encode(JSON.stringify(index)));
  for (const o of outputs) {
    if (o === self) continue;
    const e = o === 'pdf' ? index.pdf : index.outputs[o];
    if (!e || e === 'browser') continue; // printed by the pdf task itself
    const at = Date.now();
    const outcome: Outcome =
      'file' in e
        ? { v: 1, kind: 'done', jobId: task.jobId, resultKey: o, at, file: e.file }
        : { v: 1, kind: 'failed', jobId: task.jobId, resultKey: o, at, error: e.error, message: e.message };
    await publishOutcome(deps.nc, outcome).catch((err: Error) =>
      deps.log.warn({ err, jobId: task.jobId, resultKey: o }, 'outcome for a follower not published; it finds its file or the index'),
    );
  }
}

/** Fetch once, render if needed, convert all text outputs, store every file, report the others' outcomes. */
async function produce(deps: Deps, ctx: TaskContext, outputs: Output[], url: string, self: Output): Promise<ConvertedIndex> {
  const { task } = ctx;
  const st = await deps.store(task.store);
  if (ctx.deliveryCount > 1) {
    const prior = await earlierWork(st, task, outputs);
    if (prior) return prior;
  }

  const text = outputs.filter((o): o is TextOutput => o !== 'pdf');
  const index: ConvertedIndex = { v: 1, at: Date.now(), outputs: {} };
  const { config } = deps;
  let res: GuardedResponse | null = null;
  let failed: { error: string; message: string } | null = null;
  try {
    res = await step(ctx, 'fetching', () =>
      guardedFetch(url, {
        allowCidrs: config.outbound.allowCidrs,
        maxRedirects: config.outbound.maxRedirects,
        connectTimeoutMs: config.outbound.connectTimeoutMs,
        timeoutMs: config.websitepro.fetchTimeoutMs,
        maxBytes: config.websitepro.maxBytes,
        signal: ctx.signal,
        headers: { accept: 'text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8', 'accept-language': 'en;q=0.9,*;q=0.5' },
      }),
    );
    if (res.status >= 400) failed = { error: 'http_error', message: `the target answered HTTP ${res.status}` };
  } catch (e) {
    if (ctx.signal.aborted) throw e;
    failed = fetchFailure(e);
  }
  if (failed || !res) {
    for (const o of outputs) index.outputs[o] = failed!;
    if (outputs.includes('pdf')) index.pdf = failed!;
    await settle(deps, ctx, index, outputs, self);
    return index;
  }

  const contentType = String(res.headers['content-type'] ?? '');
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
  };
  if (text.length) {
    let result: ConvertResult;
    let last: ConvertInput = { ...base, detectJs: true };
    try {
      result = await step(ctx, 'converting', () => deps.pool.run(last));
      if (result.needsJavaScript) {
        const reason = result.reason;
        const rendered = await renderInBrowser(deps, res.url).catch((e: Error) => e);
        if (rendered instanceof Error) {
          base.warnings!.push(
            `the page needs JavaScript (${reason}) but could not be rendered: ${rendered.message}; converted the static HTML`,
          );
          last = base;
        } else {
          await ctx.progress('converting the rendered page');
          last = {
            ...base,
            body: Buffer.from(rendered.html, 'utf8'),
            contentType: 'text/html; charset=utf-8',
            finalUrl: rendered.finalUrl || res.url,
            rendered: true,
          };
        }
        result = await deps.pool.run(last);
      }
    } catch (e) {
      const f =
        e instanceof ConversionError
          ? { error: e.code, message: e.message }
          : { error: 'conversion_failed', message: (e as Error).message };
      result = { outputs: Object.fromEntries(text.map((o) => [o, { ok: false, ...f }])) };
      // The thread died on the whole job (a crash, a heap limit): try each output alone, so the one
      // that kills it fails by itself and the others are delivered. A timeout is not retried: the
      // task's own time limit would not allow it.
      if (f.error === 'conversion_failed' && text.length > 1) {
        await ctx.progress('converting each output alone');
        for (const o of text) {
          try {
            const one = await deps.pool.run({ ...last, detectJs: false, outputs: [o] });
            if (!one.needsJavaScript && one.outputs[o]) result.outputs[o] = one.outputs[o];
          } catch (e2) {
            result.outputs[o] = {
              ok: false,
              ...(e2 instanceof ConversionError
                ? { error: e2.code, message: e2.message }
                : { error: 'conversion_failed', message: (e2 as Error).message }),
            };
          }
        }
      }
    }
    if (result.needsJavaScript) throw new Error('unreachable: second pass asked for JavaScript');
    for (const o of text) {
      const r = result.outputs[o] as OutputFile | OutputFailure | undefined;
      if (!r) index.outputs[o] = { error: 'conversion_failed', message: `no ${o} was produced` };
      else if (!r.ok) index.outputs[o] = { error: r.error, message: r.message };
      else index.outputs[o] = { file: await putFile(deps, task, o, Buffer.from(r.data, 'utf8'), r.contentType, r.ext, res.url) };
    }
  }
  if (outputs.includes('pdf')) {
    const mt = sniffType(res.body, contentType);
    // a PDF target is its own PDF; everything else is printed by a browser
    index.pdf =
      mt === 'application/pdf' ? { file: await putFile(deps, task, 'pdf', res.body, 'application/pdf', 'pdf', res.url) } : 'browser';
  }
  await settle(deps, ctx, index, outputs, self);
  return index;
}

async function renderInBrowser(deps: Deps, url: string): Promise<RenderHtmlReply> {
  return call<RenderHtmlReply>(deps.nc, subjects.browser.renderHtml, { url }, deps.config.shots.pageTimeoutMs + 5000);
}

/**
 * A follower waits for what the leader made of its output: its outcome on `result.<jobId>` (the
 * leader reports it), else its stored file, else the index (failed outputs, the pdf decision). The
 * store is read once at the start (the leader may be done already), then when the leader's own
 * outcome is published without one for this output, and every 2 s. Null when nothing came in time.
 */
async function waitForLeader(deps: Deps, ctx: TaskContext, output: Output, leader: Output): Promise<Entry | 'browser' | null> {
  const { task } = ctx;
  const st = await deps.store(task.store);
  const c = deps.config;
  const limit = Date.now() + c.websitepro.fetchTimeoutMs + c.shots.pageTimeoutMs + 2 * c.websitepro.convertTimeoutMs + 10000;
  let lastBeat = Date.now();
  let mine: Entry | null = null;
  let leaderDone = 0;
  let wake: (() => void) | null = null;
  const sub = deps.nc.subscribe(subjects.result(task.jobId), {
    callback: (_err, m) => {
      let o: Outcome;
      try {
        o = m.json<Outcome>();
      } catch {
        return;
      }
      if (o.kind === 'done' && o.resultKey === output && o.file) mine = { file: o.file };
      else if (o.kind === 'failed' && o.resultKey === output) mine = { error: o.error, message: o.message ?? o.error };
      else if ((o.kind === 'done' || o.kind === 'failed') && o.resultKey === leader) leaderDone++;
      else return;
      wake?.();
    },
  });
  try {
    let lookups = 0;
    while (Date.now() < limit && !ctx.signal.aborted) {
      const seen = leaderDone;
      if (mine) return mine;
      const file = await storedFile(st, task, output);
      if (file) return file;
      // the index exists only when an output failed or a pdf is decided: not worth a request on the
      // first look, when the leader has most likely not finished
      if (lookups++ > 0 || output === 'pdf') {
        const index = await readIndex(st, task.jobId);
        const e = index ? (output === 'pdf' ? index.pdf : index.outputs[output]) : undefined;
        if (e) return e;
      }
      if (mine) return mine;
      if (Date.now() - lastBeat > 5000) {
        lastBeat = Date.now();
        await ctx.progress('waiting for the page to be fetched');
      }
      if (leaderDone !== seen) continue;
      await new Promise<void>((r) => {
        const timer = setTimeout(r, 2000);
        wake = () => {
          clearTimeout(timer);
          r();
        };
      });
      wake = null;
    }
    return mine;
  } finally {
    sub.unsubscribe();
  }
}

async function printPdf(deps: Deps, task: Task, url: string): Promise<StoredFile> {
  const name = objectName(task.jobId, 'pdf');
  let reply: RenderPdfReply;
  try {
    reply = await call<RenderPdfReply>(
      deps.nc,
      subjects.browser.renderPdf,
      { url, store: task.store, objectName: name },
      deps.config.shots.pageTimeoutMs + 10000,
    );
  } catch (e) {
    if (e instanceof ApiError) {
      if (e.code === 'service_unavailable')
        throw new TaskFailure('service_unavailable', `no browser-pool instance prints PDFs right now (${e.message})`);
      throw new TaskFailure(e.code === 'internal' ? String(e.details?.reason ?? 'render_failed') : e.code, e.message);
    }
    throw e;
  }
  return { store: task.store, name, contentType: 'application/pdf', bytes: reply.bytes, filename: filenameFor(url, 'pdf') };
}

function outcome(entry: Entry | undefined, key: string): { file: StoredFile } {
  if (!entry) throw new TaskFailure('conversion_failed', `no ${key} was produced`);
  if ('error' in entry) throw new TaskFailure(entry.error, entry.message);
  return { file: entry.file };
}

export async function handleTask(deps: Deps, ctx: TaskContext): Promise<TaskResult> {
  // a page of a page set (batch, crawl): one task makes every output of the page (page.ts)
  if (isPageTask(ctx.task.params)) return handlePage(deps, ctx);
  const p = ctx.task.params as { url?: unknown; output?: unknown; outputs?: unknown };
  const url = String(p.url ?? '');
  const output = String(p.output ?? ctx.task.resultKey) as Output;
  const outputs = [...new Set((Array.isArray(p.outputs) ? p.outputs : [output]).map(String))] as Output[];
  if (!outputs.includes(output)) outputs.push(output);
  const needsFetch = outputs.some((o) => o !== 'pdf');

  if (output === 'pdf' && !needsFetch) {
    await ctx.progress('printing');
    return { file: await printPdf(deps, ctx.task, url) };
  }
  const leader = outputs[0]!;
  let entry: Entry | 'browser' | null | undefined = leader === output ? null : await waitForLeader(deps, ctx, output, leader);
  if (!entry) {
    const index = await produce(deps, ctx, outputs, url, output);
    entry = output === 'pdf' ? index.pdf : index.outputs[output];
  }
  if (output !== 'pdf') return outcome(entry === 'browser' ? undefined : entry, output);
  if (entry === 'browser' || entry === undefined) {
    await ctx.progress('printing');
    return { file: await printPdf(deps, ctx.task, url) };
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
      { id: 'pdf', contentType: 'application/pdf', note: 'printed by a real Chromium in browser-pool (A4, backgrounds)' },
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
