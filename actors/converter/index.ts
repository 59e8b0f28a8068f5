// The converter actor: websitepro tasks. One fetch per job, shared by all its outputs:
//   - the task of the job's first output ("leader") fetches the page through the outbound guard,
//     renders it in browser-pool when it needs JavaScript, converts every text output of the job in
//     one worker-thread pass, writes each output's file under its own object name, and finally writes
//     `<jobId>/_converted`, a small JSON index of what became of every output;
//   - every other task waits for that index and reports its own entry (no fetch, no parse);
//     if the index does not appear in time (the leader's worker died), it does the work itself;
//   - `pdf` is printed by a real Chromium in browser-pool (request/reply); for a PDF target the
//     fetched file itself is the result.
// See docs/websitepro.md.
import os from 'node:os';
import { Objm, type ObjectStore } from '@nats-io/obj';
import type { NatsConnection } from '@nats-io/nats-core';
import { CONSUMERS, subjects } from '../../shared/names.ts';
import type { ActorContext, ActorHandle } from '../../shared/actor.ts';
import { runWorker, type TaskContext } from '../../shared/worker.ts';
import { call } from '../../shared/micro.ts';
import { advertise } from '../../shared/catalogue.ts';
import { ApiError } from '../../shared/errors.ts';
import { objectName, TaskFailure, type StoredFile, type Task } from '../../shared/protocol/jobs.ts';
import { guardedFetch, OutboundError, type GuardedResponse } from '../../shared/outbound/index.ts';
import type { Config } from '../../shared/config/index.ts';
import type { Logger } from '../../shared/log.ts';
import { ConvertPool, ConversionError } from './pool.ts';
import { sniffType, CONTENT_TYPES, type ConvertInput, type ConvertResult, type OutputFile, type OutputFailure, type TextOutput } from './convert.ts';

export const TEXT_OUTPUTS = ['metadata', 'markdown', 'text', 'html'] as const;
type Output = TextOutput | 'pdf';

/** `<jobId>/_converted`: what the leader made of every output of the job. */
export interface ConvertedIndex {
  v: 1;
  at: number;
  outputs: Partial<Record<Output, { file: StoredFile } | { error: string; message: string }>>;
  /** pdf: `browser` means "print it in browser-pool"; a file or error means it is decided. */
  pdf?: 'browser' | { file: StoredFile } | { error: string; message: string };
}
export const indexName = (jobId: string) => `${jobId}/_converted`;

interface Deps {
  nc: NatsConnection;
  config: Config;
  log: Logger;
  pool: ConvertPool;
  store(name: string): Promise<ObjectStore>;
}

export interface RenderHtmlReply { html: string; finalUrl: string; status: number | null }
export interface RenderPdfReply { bytes: number; contentType?: string }

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

async function putFile(deps: Deps, task: Task, key: Output, data: Uint8Array, contentType: string, ext: string, url: string): Promise<StoredFile> {
  const name = objectName(task.jobId, key);
  await (await deps.store(task.store)).putBlob({ name }, data);
  return { store: task.store, name, contentType, bytes: data.length, filename: filenameFor(url, ext) };
}

/** Fetch once, render if needed, convert all text outputs, store every file and the index. */
async function produce(deps: Deps, ctx: TaskContext, outputs: Output[], url: string): Promise<ConvertedIndex> {
  const { task } = ctx;
  const st = await deps.store(task.store);
  const prior = await st.getBlob(indexName(task.jobId)).catch(() => null);
  if (prior) return JSON.parse(new TextDecoder().decode(prior)) as ConvertedIndex;

  const text = outputs.filter((o): o is TextOutput => o !== 'pdf');
  const index: ConvertedIndex = { v: 1, at: Date.now(), outputs: {} };
  const { config } = deps;
  await ctx.progress('fetching');
  let res: GuardedResponse | null = null;
  let failed: { error: string; message: string } | null = null;
  try {
    res = await guardedFetch(url, {
      allowCidrs: config.outbound.allowCidrs,
      maxRedirects: config.outbound.maxRedirects,
      connectTimeoutMs: config.outbound.connectTimeoutMs,
      timeoutMs: config.websitepro.fetchTimeoutMs,
      maxBytes: config.websitepro.maxBytes,
      signal: ctx.signal,
      headers: { accept: 'text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8', 'accept-language': 'en;q=0.9,*;q=0.5' },
    });
    if (res.status >= 400) failed = { error: 'http_error', message: `the target answered HTTP ${res.status}` };
  } catch (e) {
    if (ctx.signal.aborted) throw e;
    failed = fetchFailure(e);
  }
  if (failed || !res) {
    for (const o of outputs) index.outputs[o] = failed!;
    if (outputs.includes('pdf')) index.pdf = failed!;
    await st.putBlob({ name: indexName(task.jobId) }, new TextEncoder().encode(JSON.stringify(index)));
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
    await ctx.progress('converting');
    let result: ConvertResult;
    let last: ConvertInput = { ...base, detectJs: true };
    try {
      result = await deps.pool.run(last);
      if (result.needsJavaScript) {
        const reason = result.reason;
        const rendered = await renderInBrowser(deps, res.url).catch((e: Error) => e);
        if (rendered instanceof Error) {
          base.warnings!.push(`the page needs JavaScript (${reason}) but could not be rendered: ${rendered.message}; converted the static HTML`);
          last = base;
        } else {
          await ctx.progress('converting the rendered page');
          last = { ...base, body: Buffer.from(rendered.html, 'utf8'), contentType: 'text/html; charset=utf-8', finalUrl: rendered.finalUrl || res.url, rendered: true };
        }
        result = await deps.pool.run(last);
      }
    } catch (e) {
      const f = e instanceof ConversionError ? { error: e.code, message: e.message } : { error: 'conversion_failed', message: (e as Error).message };
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
            result.outputs[o] = { ok: false, ...(e2 instanceof ConversionError ? { error: e2.code, message: e2.message } : { error: 'conversion_failed', message: (e2 as Error).message }) };
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
    index.pdf = mt === 'application/pdf' ? { file: await putFile(deps, task, 'pdf', res.body, 'application/pdf', 'pdf', res.url) } : 'browser';
  }
  await st.putBlob({ name: indexName(task.jobId) }, new TextEncoder().encode(JSON.stringify(index)));
  return index;
}

async function renderInBrowser(deps: Deps, url: string): Promise<RenderHtmlReply> {
  return call<RenderHtmlReply>(deps.nc, subjects.browser.renderHtml, { url }, deps.config.shots.pageTimeoutMs + 5000);
}

/**
 * Wait for the leader's index; null when it did not come in time. The store is looked at again
 * whenever an outcome of the job is published (the leader reports right after it wrote the index),
 * and every 2 s in any case: polling every 200 ms cost the pipeline a tenth of its CPU.
 */
async function waitIndex(deps: Deps, ctx: TaskContext): Promise<ConvertedIndex | null> {
  const st = await deps.store(ctx.task.store);
  const c = deps.config;
  const limit = Date.now() + c.websitepro.fetchTimeoutMs + c.shots.pageTimeoutMs + 2 * c.websitepro.convertTimeoutMs + 10000;
  let lastBeat = 0;
  let news = 0;
  let wake: (() => void) | null = null;
  const sub = deps.nc.subscribe(subjects.result(ctx.task.jobId), {
    callback: () => {
      news++;
      wake?.();
    },
  });
  try {
    while (Date.now() < limit && !ctx.signal.aborted) {
      const seen = news;
      const info = await st.info(indexName(ctx.task.jobId)).catch(() => null);
      if (info) {
        const raw = await st.getBlob(indexName(ctx.task.jobId));
        if (raw) return JSON.parse(new TextDecoder().decode(raw)) as ConvertedIndex;
      }
      if (Date.now() - lastBeat > 5000) {
        lastBeat = Date.now();
        await ctx.progress('waiting for the page to be fetched');
      }
      if (news !== seen) continue;
      await new Promise<void>((r) => {
        const timer = setTimeout(r, 2000);
        wake = () => {
          clearTimeout(timer);
          r();
        };
      });
      wake = null;
    }
    return null;
  } finally {
    sub.unsubscribe();
  }
}

async function printPdf(deps: Deps, task: Task, url: string): Promise<StoredFile> {
  const name = objectName(task.jobId, 'pdf');
  let reply: RenderPdfReply;
  try {
    reply = await call<RenderPdfReply>(deps.nc, subjects.browser.renderPdf, { url, store: task.store, objectName: name }, deps.config.shots.pageTimeoutMs + 10000);
  } catch (e) {
    if (e instanceof ApiError) {
      if (e.code === 'service_unavailable') throw new TaskFailure('service_unavailable', `no browser-pool instance prints PDFs right now (${e.message})`);
      throw new TaskFailure(e.code === 'internal' ? String(e.details?.reason ?? 'render_failed') : e.code, e.message);
    }
    throw e;
  }
  return { store: task.store, name, contentType: 'application/pdf', bytes: reply.bytes, filename: filenameFor(url, 'pdf') };
}

function outcome(entry: { file: StoredFile } | { error: string; message: string } | undefined, key: string): { file: StoredFile } {
  if (!entry) throw new TaskFailure('conversion_failed', `no ${key} was produced`);
  if ('error' in entry) throw new TaskFailure(entry.error, entry.message);
  return { file: entry.file };
}

export async function handleTask(deps: Deps, ctx: TaskContext): Promise<{ file: StoredFile }> {
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
  const leader = outputs[0] === output;
  let index = leader ? null : await waitIndex(deps, ctx);
  index ??= await produce(deps, ctx, outputs, url);
  if (output !== 'pdf') return outcome(index.outputs[output], output);
  if (index.pdf === 'browser' || index.pdf === undefined) {
    await ctx.progress('printing');
    return { file: await printPdf(deps, ctx.task, url) };
  }
  return outcome(index.pdf, 'pdf');
}

export async function start(ctx: ActorContext): Promise<ActorHandle> {
  const { nc, config, log } = ctx;
  const size = Math.max(1, Math.min(config.websitepro.concurrency, os.availableParallelism()));
  const pool = new ConvertPool({ size, taskTimeoutMs: config.websitepro.convertTimeoutMs, recycleAfter: 200 });
  const stores = new Map<string, Promise<ObjectStore>>();
  const deps: Deps = {
    nc, config, log, pool,
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
    nc, config, log,
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
    limits: { maxBytes: config.websitepro.maxBytes, fetchTimeoutMs: config.websitepro.fetchTimeoutMs, maxRedirects: config.outbound.maxRedirects },
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
