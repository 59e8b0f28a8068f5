// Page-set jobs (websitepro `urls`; the crawl plugs in here): their pages as tasks, their results in
// the PAGES stream. The job document keeps counts and one state character per page
// (PageSetRecord); every page's final results are one PAGES message on `page.<jobId>`, appended by
// the supervisor when it records the page (message id `page:<jobId>:<index>`: a repeat is dropped).
// Readers page through them by stream sequence (an opaque cursor): the document, the job list,
// webhooks and SSE stay bounded whatever the number of pages. See docs/websitepro.md "Batch".
import type { JetStreamClient, JetStreamManager } from '@nats-io/jetstream';
import { STREAMS, subjects } from '../names.ts';
import { outcomeMsgId, taskMsgId, type JobRecord, type Outcome, type ResultRecord } from '../protocol/jobs.ts';
import { planBatch, type PlannedPage } from '../crawl/keys.ts';
import { parseTargetUrl } from '../outbound/index.ts';
import { taskOf } from './task.ts';
import type { PageAction } from '../schemas/page-controls.ts';
import { startPageOf } from './crawl.ts';

/** Results a job document, a page of `GET /v1/jobs/{id}/results` or a webhook carries at most. */
export const RESULTS_INLINE = 1000;

/**
 * A page's task carries this result key: `page:<index>` (the page's results are keyed by its page key);
 * a crawl page sent again (after a 429/503, or a lost task) `page:<index>~<send>`, so its task and
 * outcome message ids are new ones (the streams' duplicate windows would drop a repeat of the first).
 */
export const pageTaskKey = (index: number, send = 0) => (send > 0 ? `page:${index}~${send}` : `page:${index}`);
export function pageIndexOf(resultKey: string): number | null {
  const m = /^page:(\d{1,7})(?:~\d{1,4})?$/.exec(resultKey);
  return m ? Number(m[1]) : null;
}
export const pageMsgId = (jobId: string, index: number) => `page:${jobId}:${index}`;

/** One PAGES message: the final results of one page. */
export interface PageMessage {
  v: 1;
  jobId: string;
  index: number;
  pageKey: string;
  results: ResultRecord[];
}

/** The parameters of a page task (actors/converter/page.ts). */
export interface PageTaskParams {
  page: true;
  index: number;
  url: string;
  source: string;
  pageKey: string;
  /** A map's page: fetched only for its links (no output made or stored). */
  linksOnly?: true;
  /** `crawl.sitemap: "only"`: no links but page 0's sitemaps (a map's page 0 is then not fetched at all). */
  sitemapOnly?: true;
  outputs: string[];
  /**
   * The request's controls, the same for every page: the HTML ones (removeSelectors, targetSelectors,
   * mainContent) and a render per page (waitFor, timeoutMs, actions: its `render` result).
   */
  controls?: {
    removeSelectors?: string[];
    targetSelectors?: string[];
    mainContent?: false;
    waitFor?: string;
    timeoutMs?: number;
    actions?: PageAction[];
  };
  /** The request's `pdf` options (the pdf output). */
  pdf?: Record<string, unknown>;
  /** Seconds: the page may be served from the fetch cache if fetched this recently (actors/converter/cache.ts). */
  maxAge?: number;
  /** A crawl's page: its links come back in the outcome (`extra.links`); page 0 also reads robots.txt (`extra.robots`). */
  crawl?: {
    robots: boolean;
    sitemaps?: number;
    /**
     * A page on another origin than the start's (allowSubdomains): read that origin's robots.txt first;
     * the outcome says `skipped` ('robots' | 'robots_unavailable') when it forbids the page or cannot be
     * read, and `crawlDelayMs` (session-30 contract section 1).
     */
    originRobots?: true;
  };
}

/** A job's pages, derived from its request (deterministic: the same on every process). Small cache: outcomes of one job come in a row. */
const pagesCache = new Map<string, PlannedPage[]>();
export function pagesOf(job: Pick<JobRecord, 'id' | 'request'>): PlannedPage[] {
  let pages = pagesCache.get(job.id);
  // a crawl's pages are found as it goes (shared/jobs/crawl.ts): only its start URL is in the request
  // (a map is a crawl even when its body has no `crawl`: its defaults do)
  const crawl = job.request.crawl !== undefined || (Array.isArray(job.request.outputs) && job.request.outputs.includes('map'));
  if (!pages && crawl) return [startPageOf(job)];
  if (!pages) {
    const urls = Array.isArray(job.request.urls) ? job.request.urls.map(String) : [];
    pages = planBatch(urls, (raw) => parseTargetUrl(raw)).pages;
    if (pagesCache.size >= 64) pagesCache.delete(pagesCache.keys().next().value!);
    pagesCache.set(job.id, pages);
  }
  return pages;
}

/** The host a page's URL names (as `unreachable` is keyed). */
export const hostOfPage = (p: PlannedPage) => new URL(p.url).host;

/** Pages waiting to be admitted, at most `room` of them, in order. */
export function waitingPages(job: JobRecord, room: number): number[] {
  const out: number[] = [];
  const state = job.pageSet?.state ?? '';
  for (let i = 0; i < state.length && out.length < room; i++) if (state[i] === '-') out.push(i);
  return out;
}
export const inFlight = (job: JobRecord) => (job.pageSet?.state.match(/q/g) ?? []).length;
/** Pages whose results are recorded (`r`): what the slots paid for and used; `x` pages come back with the unused ones. */
export const resultPages = (state: string) => (state.match(/r/g) ?? []).length;
/** Pages not settled yet: waiting (`-`) or in flight (`q`); `r` and `x` are final. */
export const unsettled = (state: string) => /[-q]/.test(state);

/**
 * Publish the tasks of these pages (a page on a host the precheck found unreachable gets its failed
 * outcome instead: the same recording path, no fetch). Message ids make a repeat a no-op.
 */
export async function publishPages(
  js: JetStreamClient,
  job: JobRecord,
  indexes: number[],
  timeoutMs?: number,
  pageAt: (i: number) => PlannedPage = (i) => pagesOf(job)[i]!,
  keyAt: (i: number) => string = pageTaskKey,
): Promise<Map<number, number>> {
  const seqs = new Map<number, number>();
  const ps = job.pageSet!;
  const opts = (msgID: string) => ({ msgID, ...(timeoutMs ? { timeout: timeoutMs } : {}) });
  await Promise.all(
    indexes.map(async (i) => {
      const p = pageAt(i);
      const key = keyAt(i);
      const down = ps.unreachable?.[hostOfPage(p)];
      if (down) {
        const o: Outcome = {
          v: 1,
          kind: 'failed',
          jobId: job.id,
          resultKey: key,
          at: Date.now(),
          error: down.error,
          message: down.message,
        };
        await js.publish(subjects.result(job.id), JSON.stringify(o), opts(`${outcomeMsgId(job.id, key)}:supervisor`));
        return;
      }
      const params: PageTaskParams = {
        page: true,
        index: i,
        ...mapParams(job),
        url: p.url,
        source: p.source,
        pageKey: p.key,
        outputs: ps.outputs,
        ...pageControls(job),
        ...(typeof job.request.maxAge === 'number' && job.request.maxAge > 0 ? { maxAge: job.request.maxAge } : {}),
        ...(ps.kind === 'crawl' ? { crawl: crawlParams(job, i, p) } : {}),
      };
      const task = taskOf(job, { key, status: 'pending', price: 0, refunded: false }, params as unknown as Record<string, unknown>);
      // on the wallet's subject, as every task (shared/jobs/share.ts): counted in its share
      const ack = await js.publish(
        subjects.taskOfWallet(subjects.taskWebsitepro, job.walletId),
        JSON.stringify(task),
        opts(taskMsgId(job.id, key)),
      );
      seqs.set(i, ack.seq);
    }),
  );
  return seqs;
}

/** A crawl page's task asks for its links; page 0 also for robots.txt and (unless `sitemap: "skip"`) the sitemaps' URLs. */
function crawlParams(job: JobRecord, i: number, p: PlannedPage): NonNullable<PageTaskParams['crawl']> {
  const c = job.request.crawl as { sitemap?: string } | undefined;
  if (i !== 0)
    return new URL(p.url).origin === new URL(String(job.request.url)).origin ? { robots: false } : { robots: false, originRobots: true };
  // the outcome carries them: bounded well under a NATS message whatever the limit
  return { robots: true, ...(c?.sitemap === 'skip' ? {} : { sitemaps: Math.min(job.pageSet!.slots, SITEMAP_URLS_MAX) }) };
}

/** The controls every page of the set applies, from the stored request (it holds no credential). */
function pageControls(job: JobRecord): Pick<PageTaskParams, 'controls' | 'pdf'> {
  const r = job.request as {
    removeSelectors?: string[];
    targetSelectors?: string[];
    mainContent?: boolean;
    pdf?: Record<string, unknown>;
    waitFor?: string;
    timeout?: number;
    actions?: PageAction[];
  };
  const controls: NonNullable<PageTaskParams['controls']> = {
    ...(r.removeSelectors?.length ? { removeSelectors: r.removeSelectors } : {}),
    ...(r.targetSelectors?.length ? { targetSelectors: r.targetSelectors } : {}),
    ...(r.mainContent === false ? { mainContent: false as const } : {}),
    ...(r.waitFor ? { waitFor: r.waitFor } : {}),
    ...(r.timeout !== undefined ? { timeoutMs: r.timeout * 1000 } : {}),
    ...(r.actions?.length ? { actions: r.actions } : {}),
  };
  return { ...(Object.keys(controls).length ? { controls } : {}), ...(r.pdf ? { pdf: r.pdf } : {}) };
}

/** A map's pages are fetched for links only; `sitemap: "only"` (crawl or map) reads no page's links. */
function mapParams(job: JobRecord): Pick<PageTaskParams, 'linksOnly' | 'sitemapOnly'> {
  const only = (job.request.crawl as { sitemap?: string } | undefined)?.sitemap === 'only';
  return { ...(job.pageSet?.map ? { linksOnly: true } : {}), ...(only ? { sitemapOnly: true } : {}) };
}

/** Sitemap URLs a crawl's first page hands to the supervisor at most. */
export const SITEMAP_URLS_MAX = 2000;

/** Mark pages admitted (their tasks are out); false when none changed. */
export function markAdmitted(job: JobRecord, indexes: number[]): boolean {
  const ps = job.pageSet;
  if (!ps) return false;
  const s = ps.state.split('');
  let changed = false;
  for (const i of indexes) {
    if (s[i] === '-') {
      s[i] = 'q';
      changed = true;
    }
  }
  ps.state = s.join('');
  return changed;
}

/** The cursor of a results page: the PAGES sequence to read from, opaque to clients. */
export const encodeCursor = (seq: number) => Buffer.from(`p${seq}`).toString('base64url');
export function decodeCursor(c: string): number | null {
  const m = /^p(\d{1,15})$/.exec(Buffer.from(c, 'base64url').toString());
  return m ? Number(m[1]) : null;
}

/**
 * A page of a job's results from PAGES, in the order they were recorded: from sequence `from`,
 * whole pages up to `max` results (at least one page). `next`: the sequence to go on from, or null
 * at the end. The first message is looked up directly (an empty read costs one request, not a
 * pull's wait), the rest come through an ordered consumer on the job's subject, which says with
 * every message how many are left (so no pull waits for its expiry).
 */
export async function readPageResults(
  js: JetStreamClient,
  jsm: JetStreamManager,
  jobId: string,
  from = 1,
  max = RESULTS_INLINE,
): Promise<{ messages: PageMessage[]; next: number | null; seqs: number[] }> {
  const subject = subjects.page(jobId);
  const nextAt = (seq: number) =>
    // the server's message get takes `next_by_subj` (nats-server >= 2.9); the client's type lacks it
    jsm.streams.getMessage(STREAMS.pages, { seq, next_by_subj: subject } as unknown as { seq: number }).catch((e: Error) => {
      if (/no message found|not found/i.test(e.message)) return null;
      throw e;
    });
  const first = await nextAt(Math.max(1, from));
  if (!first) return { messages: [], next: null, seqs: [] };
  const messages: PageMessage[] = [first.json<PageMessage>()];
  /** Each message's PAGES sequence (SSE resumes after one). */
  const seqs = [first.seq];
  let count = messages[0]!.results.length;
  const second = await nextAt(first.seq + 1);
  if (!second) return { messages, next: null, seqs };
  if (count + second.json<PageMessage>().results.length > max) return { messages, next: second.seq, seqs };
  const c = await js.consumers.get(STREAMS.pages, { filter_subjects: [subject], opt_start_seq: second.seq });
  try {
    for (;;) {
      const batch = await c.fetch({ max_messages: 256, expires: 5000 });
      let got = 0;
      for await (const m of batch) {
        got++;
        const pm = m.json<PageMessage>();
        if (count + pm.results.length > max) {
          batch.stop();
          return { messages, next: m.seq, seqs };
        }
        messages.push(pm);
        seqs.push(m.seq);
        count += pm.results.length;
        if (m.info.pending === 0) {
          batch.stop();
          return { messages, next: null, seqs };
        }
      }
      // nothing came at all: the first message was the last one
      if (!got) return { messages, next: null, seqs };
    }
  } finally {
    await c.delete().catch(() => {});
  }
}
