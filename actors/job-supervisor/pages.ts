// The supervisor's steps for page-set jobs (websitepro `urls`; the crawl plugs in here): record a
// page's outcome as its results, refund the failed ones, admit the next pages, finish the job and
// give back the slots never used. Each step is idempotent, like every step in steps.ts: the page's
// PAGES message has a fixed id (a repeat is dropped), refunds are one ledger entry per key, and the
// document marks a page recorded once (its state character), with its counts, in one write.
import { subjects } from '../../shared/names.ts';
import { wallet } from '../../shared/protocol/wallet.ts';
import { SLOTS_RESULT_KEY, type JobRecord, type Outcome, type ResultRecord } from '../../shared/protocol/jobs.ts';
import { readJob, updateJob, refundedTotal } from '../../shared/jobs/store.ts';
import { freeShare } from '../../shared/jobs/share.ts';
import {
  inFlight,
  markAdmitted,
  pageIndexOf,
  pageMsgId,
  pagesOf,
  publishPages,
  waitingPages,
  type PageMessage,
  pageTaskKey,
  resultPages,
  unsettled,
} from '../../shared/jobs/pages.ts';
import { resultKey, type PlannedPage } from '../../shared/crawl/keys.ts';
import type { CrawlPage } from '../../shared/jobs/crawl.ts';
import {
  admitPageLinks,
  advanceCrawl,
  crawlPage,
  crawlStore,
  dropCrawl,
  extendTo,
  mergeReport,
  untakenAtDeadline,
  type CrawlExtra,
} from './crawl.ts';
import { readFacts } from './crawl-send.ts';
import { CrawlReport, type ReportJson, type SkipReason } from '../../shared/crawl/report.ts';
import { sleep } from '../../shared/runtime.ts';
import { advanceMap, recordMapPage } from './map.ts';
import type { Deps } from './deps.ts';

/** A page's outcome facts as the converter reports them (actors/converter/page.ts). */
type PageExtra = {
  page?: string;
  /** A request with selector controls: each selector's match count. */
  selectors?: Record<string, number>;
  /** Served from the fetch cache: when the page was fetched (actors/converter/cache.ts). */
  cachedAt?: string;
  /** Each output's file or failure; `done` with no file: the page's render (waitFor, actions). */
  outputs?: Record<string, { file?: ResultRecord['file']; done?: true; error?: string; message?: string; extra?: Record<string, unknown> }>;
};

/**
 * How many more pages of this job the wallet's share of the converters admits now
 * (shared/jobs/share.ts). A page set with no page in flight may always admit one: its own page
 * outcomes are what admit its next pages, so it never waits for a trigger that would not come (the
 * wallet's share is then passed by one page at most, per page set).
 */
export async function walletShareRoom(d: Deps, job: JobRecord): Promise<number> {
  const free = await freeShare(d.jsm, d.config, job.walletId, subjects.taskWebsitepro);
  return inFlight(job) === 0 ? Math.max(1, free) : free;
}

/** The page's results as the outcome says: one per output, each with its page and source. */
function pageResults(
  job: JobRecord,
  page: PlannedPage,
  o: Extract<Outcome, { kind: 'done' | 'failed' }>,
): { key: string; results: ResultRecord[] } {
  const ps = job.pageSet!;
  const extra = (o.extra ?? {}) as PageExtra;
  const facts = {
    page: extra.page ?? page.url,
    source: page.source,
    ...(extra.cachedAt ? { cachedAt: extra.cachedAt } : {}),
    ...(extra.selectors ? { selectors: extra.selectors } : {}),
  };
  const results = ps.outputs.map((out): ResultRecord => {
    const price = ps.unitPrices[out] ?? 0;
    const e =
      o.kind === 'failed'
        ? { error: o.error, message: o.message }
        : (extra.outputs?.[out] ?? { error: 'conversion_failed', message: `no ${out} was produced` });
    const base = { key: resultKey(page.key, out), price, extra: facts };
    if (e.file) return { ...base, status: 'done', refunded: false, file: e.file };
    if ('done' in e && e.done) return { ...base, status: 'done', refunded: false };
    return {
      ...base,
      // a failure's own facts (a wall's evidence) beside the page's
      ...('extra' in e && e.extra ? { extra: { ...facts, ...e.extra } } : {}),
      status: 'failed',
      refunded: true,
      error: e.error ?? 'conversion_failed',
      ...(e.message ? { message: e.message } : {}),
    };
  });
  return { key: page.key, results };
}

/** Record a page task's final outcome: PAGES first, then the refunds, then the document's counts. */
export async function recordPage(d: Deps, o: Outcome): Promise<void> {
  if (o.kind !== 'done' && o.kind !== 'failed') return; // progress is not shown per page; a lost file has no page record to fail
  const index = pageIndexOf(o.resultKey)!;
  let cur = d.copyOf?.(o.jobId) ?? (await readJob(d.jobs, o.jobId));
  if (!cur) {
    // tasks go out just before the document is written (gateway/jobs/create.ts): retried while it may appear
    await sleep(200);
    cur = await readJob(d.jobs, o.jobId);
    if (!cur && Date.now() - o.at < d.config.wallet.orphanChargeGraceSeconds * 1000)
      throw new Error(`page outcome for job ${o.jobId}, not (yet) in the bucket`);
    if (!cur) {
      d.log.warn({ jobId: o.jobId, resultKey: o.resultKey }, 'page outcome for an unknown job; dropped');
      return;
    }
  }
  // a crawl's page task goes out before the document grows by it (advanceCrawl): grow it here
  // (the pages before it wait: a page sent with it whose mark did not land yet is sent again under the same task id)
  if (cur.job.pageSet?.kind === 'crawl' && index >= cur.job.pageSet.pages && (await crawlPage(d, cur.job, index)))
    cur = (await updateJob(d.jobs, cur.job.id, (j) => extendTo(j, index + 1, '-') && markAdmitted(j, [index]), undefined, cur)) ?? cur;
  const job = cur.job;
  const ps = job.pageSet;
  if (!ps || index >= ps.pages) {
    d.log.warn({ jobId: o.jobId, resultKey: o.resultKey }, 'page outcome for no page of the job; dropped');
    return;
  }
  if (ps.state[index] !== 'r' && ps.state[index] !== 'x') {
    const crawl = ps.kind === 'crawl';
    const page = crawl ? await crawlPage(d, job, index) : pagesOf(job)[index]!;
    if (!page) throw new Error(`crawl ${job.id}: no record of page ${index}`);
    if (crawl) {
      // the outcome's facts: a retry holds it, a robots skip or a canonical copy drops it (crawl-send.ts)
      const v = await readFacts(d, await crawlStore(d), job, index, page as CrawlPage, o);
      if (v === 'held') return void (await stepPageSet(d, job.id));
      if ('dropped' in v) {
        await dropPage(d, job, index, v.dropped, page.url);
        return void (await stepPageSet(d, job.id));
      }
      o = v.record as typeof o;
    }
    // the page is done at the target (its origin's place given back): the next page goes out now,
    // while this one is recorded; this page's own write and step follow
    const early = stepPageSet(d, job.id, index).catch((e: Error) => {
      d.log.warn({ jobId: job.id, err: e }, 'page set step failed');
      return false;
    });
    const { key, results } = pageResults(job, page, o);
    // a map's page is never a result: its links only (map.ts); after the crawl's own reading of the outcome
    if (ps.map) return recordMapPage(d, job, index, o).then(() => void stepPageSet(d, job.id));
    const msg: PageMessage = { v: 1, jobId: job.id, index, pageKey: key, results };
    await d.js.publish(subjects.page(job.id), JSON.stringify(msg), { msgID: pageMsgId(job.id, index) });
    // each failed result refunded on its own (one ledger entry per key, whatever repeats)
    for (const r of results)
      if (r.status === 'failed' && r.price > 0)
        await wallet.refund(d.nc, { walletId: job.walletId, jobId: job.id, resultKey: r.key, amount: r.price });
    // a crawl page's links into the frontier before the page counts as recorded (so the crawl cannot
    // end between the two); what was skipped goes into the report in the same write
    const skipped = crawl
      ? await admitPageLinks(d, job, page as CrawlPage, o.kind === 'done' ? ((o.extra ?? {}) as CrawlExtra) : {})
      : null;
    await updateJob(
      d.jobs,
      job.id,
      (j) => {
        const s = j.pageSet;
        if (!s || s.state[index] === 'r' || s.state[index] === 'x') return false;
        s.state = s.state.slice(0, index) + 'r' + s.state.slice(index + 1);
        if (skipped && s.crawl) s.crawl.report = mergeReport(s.crawl.report, skipped);
        for (const r of results) {
          s.resultCount++;
          if (r.status === 'done') s.done++;
          else {
            s.failed++;
            s.resultsRefunded += r.price;
            s.firstError ??= r.error;
          }
        }
        j.refunded = refundedTotal(j);
        return true;
      },
      undefined,
      cur,
    );
    // the early step filled the window: nothing more goes before another outcome, which steps again
    if (await early) return;
  }
  await stepPageSet(d, job.id);
}

/** Pages still `q` in the document whose outcome is in hand (being recorded): not in flight any more. */
const doneOf = (state: string, freed: ReadonlySet<number>) => [...freed].filter((i) => state[i] === 'q').length;

/** Per page set, in this process: the step running and the one asked for after it (with the pages it may count as done). */
const steps = new Map<string, { running: Promise<boolean> | null; next: Promise<boolean> | null; freed: Set<number> }>();

/**
 * Ask for a step of the page set (advancePageSet). One runs at a time per page set in this process;
 * asking while one runs joins the next one (one more step, not one per caller), which reads the
 * document when it starts, so it sees what every caller wrote before asking. `done`: a page whose
 * outcome is being recorded, so the step may send another in its place before its own write lands.
 */
export function stepPageSet(d: Deps, jobId: string, done?: number): Promise<boolean> {
  let q = steps.get(jobId);
  if (!q) steps.set(jobId, (q = { running: null, next: null, freed: new Set() }));
  if (done !== undefined) q.freed.add(done);
  if (q.next) return q.next;
  const e = q;
  const run: Promise<boolean> = (e.running ?? Promise.resolve(false))
    .catch(() => {})
    .then(async () => {
      e.next = null;
      e.running = run;
      const freed = e.freed;
      e.freed = new Set();
      try {
        return await advancePageSet(d, jobId, freed);
      } finally {
        if (e.running === run) e.running = null;
        if (!e.running && !e.next) steps.delete(jobId);
      }
    });
  e.next = run;
  return run;
}

/**
 * Admit pages up to the window (and the wallet's share), or finish the job once every page is
 * recorded: the unused slots' one refund, then the finish in one write. Called after every page
 * and by the sweep (settleJob). True when it sent a page into every place it had.
 */
export async function advancePageSet(d: Deps, jobId: string, freed: ReadonlySet<number> = new Set()): Promise<boolean> {
  const cur = await readJob(d.jobs, jobId);
  const job = cur?.job;
  const ps = job?.pageSet;
  if (!job || !ps || job.status !== 'processing') return false;
  if (ps.map) return advanceMap(d, job, await walletShareRoom(d, job), () => stepPageSet(d, jobId).then(() => {})).then(() => false);
  if (ps.kind === 'crawl') {
    // page 0 is published at creation; every other page comes from the frontier
    // the wallet's share is asked only when the window has a place (a step after the early one, which
    // filled it, asks nothing: one stream info less per page)
    const places = ps.window - inFlight(job) + doneOf(ps.state, freed);
    const room = places > 0 ? walletShareRoom(d, job).then((share) => Math.min(places, share)) : Promise.resolve(places);
    room.catch(() => {}); // awaited by advanceCrawl; this keeps a failure before that from going unhandled
    const again = () => void stepPageSet(d, jobId).catch((e: Error) => d.log.warn({ jobId, err: e }, 'crawl step failed'));
    const step = await advanceCrawl(d, job, room, again);
    if (step === 'finish') {
      const now = await readJob(d.jobs, jobId);
      if (now?.job.status === 'processing') await finishPageSet(d, now.job, await untakenAtDeadline(d, now.job));
      await dropCrawl(d, job.id);
    }
    return step === 'filled';
  }
  if (!unsettled(ps.state)) return finishPageSet(d, job).then(() => false);
  const room = Math.min(ps.window - inFlight(job) + doneOf(ps.state, freed), await walletShareRoom(d, job));
  const next = room > 0 ? waitingPages(job, room) : [];
  if (!next.length) return false;
  // tasks first, then the mark: a crash between leaves them `-`, admitted again (the same task ids)
  await publishPages(d.js, job, next);
  await updateJob(d.jobs, jobId, (j) => markAdmitted(j, next));
  return next.length >= room;
}

async function finishPageSet(d: Deps, job: JobRecord, skipped: ReportJson | null = null): Promise<void> {
  const ps = job.pageSet!;
  const perPage = ps.outputs.reduce((s, o) => s + (ps.unitPrices[o] ?? 0), 0);
  // slots minus the pages that became results: a dropped (`x`) page's slot comes back here
  const unused = Math.max(0, ps.slots - resultPages(ps.state)) * perPage;
  if (unused > 0) await wallet.refund(d.nc, { walletId: job.walletId, jobId: job.id, resultKey: SLOTS_RESULT_KEY, amount: unused });
  const res = await updateJob(d.jobs, job.id, (j) => {
    const s = j.pageSet;
    if (!s || j.status !== 'processing') return false;
    if (unused > 0) s.slotsRefunded = unused;
    // a crawl's URLs left in its frontier at the deadline: counted with the finish (once: it changes the status)
    if (skipped && s.crawl) s.crawl.report = mergeReport(s.crawl.report, skipped);
    j.refunded = refundedTotal(j);
    j.status = s.done > 0 ? 'completed' : 'failed';
    j.finishedAt ??= Date.now();
    if (j.status === 'failed') j.error = s.firstError ?? 'not_delivered';
    if (j.webhook?.state === 'waiting') {
      j.webhook.state = 'pending';
      j.webhook.nextAt = j.finishedAt;
    }
    return true;
  });
  if (res?.changed) await d.afterFinish?.(res.job);
}

/**
 * Backstop for a page set whose admitted pages never came back: each fails as worker_lost (refunded).
 * A crawl's page counts from its own (latest) send, not the job's start: a long crawl's pages are not stuck.
 */
export async function failStuckPages(d: Deps, job: JobRecord, fail: (resultKey: string, message: string) => Promise<void>): Promise<void> {
  const state = job.pageSet?.state ?? '';
  const crawl = job.pageSet?.kind === 'crawl' ? await crawlStore(d) : null;
  const stuckBefore = Date.now() - d.config.jobs.stuckSeconds * 1000;
  for (let i = 0; i < state.length; i++) {
    if (state[i] !== 'q') continue;
    const a = crawl ? await crawl.attempt(job.id, i) : null;
    if (a && a.sentAt > stuckBefore) continue;
    await fail(pageTaskKey(i, a ? a.tries + a.lost : 0), `no worker finished the page within ${d.config.jobs.stuckSeconds} s`);
  }
}

/**
 * Drop a page (state `x`): it is not a result and costs nothing (its slot comes back in `_slots`);
 * the crawl report counts why (`reason`; null: not a skip, e.g. a map's page). Idempotent: a page already `r` or `x` is left alone.
 */
export async function dropPage(d: Deps, job: JobRecord, index: number, reason: SkipReason | null, url: string): Promise<boolean> {
  const report = new CrawlReport();
  if (reason) report.skip(reason, url);
  const res = await updateJob(d.jobs, job.id, (j) => {
    const s = j.pageSet;
    if (!s || index >= s.state.length || s.state[index] === 'r' || s.state[index] === 'x') return false;
    s.state = s.state.slice(0, index) + 'x' + s.state.slice(index + 1);
    if (s.crawl) s.crawl.report = mergeReport(s.crawl.report, report.toJSON());
    return true;
  });
  return !!res?.changed;
}
