// Sending a crawl's pages and reading their outcome facts (issue 42, session-30 contract sections 1-2).
//
// A crawl page waits (`-`) until its origin's politeness (shared/crawl/politeness.ts, one state per
// crawl and origin in NATS, changed by compare-and-set) lets it start: at most crawl.originConcurrency
// in flight (1 on another origin until its robots.txt is read), starts max(crawl.delayMs, Crawl-delay)
// apart, nothing while a 429/503 holds the origin. Its task then goes out (`q`) and its send is noted
// (`<jobId>.t<index>`: when, its TASKS sequence, retries). On its outcome:
// - `retry` (429/503, not a wall): the origin is held until the bounded Retry-After (else a back-off),
//   the page waits again (`-`) until then, and is sent again with a new task key (`page:<i>~<n>`); past
//   crawl.maxRetries it is recorded as failed `http_error` results (refunded);
// - `retry` with `ours` (browser-pool had no free page for its render, or no instance answered): our
//   capacity, not the target's answer, so the origin is neither held nor struck (its place is only
//   given back); the page waits a short back-off (1 s, 2 s, 4 s, at most 5 s) and is sent again, the
//   tries counted against crawl.maxRetries as a 429's, past them failed `busy` / `service_unavailable`;
// - `skipped` (another origin's robots.txt forbids it or cannot be read): dropped (`x`), counted;
// - `canonical`: a copy of a page the crawl already has (its uniqueKey is in the visited set) is
//   dropped (`x`, counted `duplicate`); otherwise the canonical URL enters the visited set as this
//   page's, so a later link to it is not fetched, and this page is delivered.
// A page of the start origin, where the politeness can hold nothing back (its concurrency at least the
// crawl's window, no gap between starts, no 429/503 counted), starts and ends with no write to its state.
// A task lost with no outcome (gone from TASKS crawl.pageLostSeconds after it went out) is sent again,
// at most crawl.maxRetries times, then fails as worker_lost.
import { STREAMS, subjects } from '../../shared/names.ts';
import { outcomeMsgId, type JobRecord, type Outcome } from '../../shared/protocol/jobs.ts';
import { answered, decide, gapOf, started, type PolitenessRules } from '../../shared/crawl/politeness.ts';
import type { CrawlStore, OriginPolite, OurRetry, PageAttempt, CrawlPage, RetryFact } from '../../shared/jobs/crawl.ts';
import { pageTaskKey, publishPages } from '../../shared/jobs/pages.ts';
import { updateJob } from '../../shared/jobs/store.ts';
import type { ReportJson } from '../../shared/crawl/report.ts';
import type { Deps } from './deps.ts';

/** A crawl page's outcome facts beside its outputs (actors/converter/page.ts, PageOutcomeExtra). */
export interface CrawlFacts {
  retry?: RetryFact;
  skipped?: 'robots' | 'robots_unavailable';
  canonical?: string;
  crawlDelayMs?: number;
}

/** The wait before a page our browser-pool could not take is sent again: 1 s, 2 s, 4 s, then 5 s, each up to a quarter more (spread). */
export const ourBackoffMs = (tries: number, asked: number | null) =>
  Math.min(asked ?? 1000 * 2 ** Math.min(Math.max(0, tries - 1), 10), 5000) * (1 + Math.random() / 4);

const startOrigin = (job: JobRecord) => new URL(String(job.request.url)).origin;
const sendOf = (a: PageAttempt | null) => (a ? a.tries + a.lost : 0);

function rulesOf(d: Deps, job: JobRecord, origin: string, st: OriginPolite, startDelayMs: number): PolitenessRules {
  const c = d.config.crawl;
  const other = origin !== startOrigin(job);
  return {
    // another origin's robots.txt is read by its first page: one at a time until then
    concurrency: other && st.crawlDelayMs === undefined ? 1 : c.originConcurrency,
    delayMs: c.delayMs,
    crawlDelayMs: other ? (st.crawlDelayMs ?? 0) : startDelayMs,
    maxRetryAfterMs: c.maxRetryAfterMs,
  };
}

/**
 * Whether an origin's state can hold back none of the crawl's pages, so a page's start and end need not
 * be written to it: the start origin, whose concurrency is at least the crawl's window (the job never has
 * more pages in flight), with no gap between starts (crawl.delayMs and Crawl-delay 0), not held by a
 * 429/503 nor counting one (a listed page's answer resets the back-off: until then pages are listed).
 */
function unrestrained(job: JobRecord, origin: string, r: PolitenessRules, st: OriginPolite, now: number): boolean {
  return (
    origin === startOrigin(job) &&
    r.concurrency >= (job.pageSet?.window ?? Infinity) &&
    gapOf(r) === 0 &&
    !st.strikes &&
    (st.holdUntil ?? 0) <= now
  );
}

type Known = [CrawlPage | null, PageAttempt | null];
const knownOf = (s: CrawlStore, job: JobRecord, i: number): Promise<Known> => Promise.all([s.page(job, i), s.attempt(job.id, i)]);

/** The records of the first `n` waiting pages, being read (for sendWaiting; a read not used fails silently). */
export function readAhead(s: CrawlStore, job: JobRecord, state: string, n: number): Map<number, Promise<Known>> {
  const out = new Map<number, Promise<Known>>();
  for (let i = state.indexOf('-'); i >= 0 && out.size < n; i = state.indexOf('-', i + 1)) {
    const p = knownOf(s, job, i);
    p.catch(() => {});
    out.set(i, p);
  }
  return out;
}

/**
 * Send waiting pages (`-` in `state`: the document's, with the pages just taken), at most `room`, as
 * their origins' politeness allows; answers the pages sent (the caller marks them `q` in its document
 * write) and the earliest time a page that could not go may (Infinity: none waits on time).
 */
export async function sendWaiting(
  d: Deps,
  s: CrawlStore,
  job: JobRecord,
  state: string,
  room: number,
  startDelayMs: number,
  early: Map<number, Promise<Known>> = new Map(),
): Promise<{ sent: number[]; wake: number }> {
  const now = Date.now();
  let wake = Infinity;
  const out: { i: number; page: CrawlPage; a: PageAttempt | null }[] = [];
  const waiting: number[] = [];
  for (let i = state.indexOf('-'); i >= 0; i = state.indexOf('-', i + 1)) waiting.push(i);
  // their records read a few ahead together (politeness may pass over some)
  const known = new Map(waiting.slice(0, room + 2).map((i) => [i, early.get(i) ?? knownOf(s, job, i)]));
  for (let k = 0; k < waiting.length && out.length < room; k++) {
    const i = waiting[k]!;
    const [page, a] = await (known.get(i) ?? knownOf(s, job, i));
    if (!page) continue;
    if (a?.retryAt && a.retryAt > now) {
      wake = Math.min(wake, a.retryAt);
      continue;
    }
    const origin = new URL(page.url).origin;
    let ok = false;
    await s.updateOrigin(job.id, origin, (st) => {
      // counted already (a step that stopped between this and its send)
      if (st.pages.includes(i)) return ((ok = true), null);
      const r = rulesOf(d, job, origin, st, startDelayMs);
      const cur = { ...st, inFlight: st.pages.length };
      const dec = decide(cur, r, now);
      if (!dec.ok) {
        if (dec.at !== null) wake = Math.min(wake, dec.at);
        return null;
      }
      ok = true;
      // nothing here could hold a page back: no write (two of a page's writes in NATS)
      if (unrestrained(job, origin, r, st, now)) return null;
      return { ...st, ...started(cur, r, now), pages: [...st.pages, i] };
    });
    if (ok) out.push({ i, page, a });
  }
  if (!out.length) return { sent: [], wake };
  const by = new Map(out.map((p) => [p.i, p]));
  const idx = [...by.keys()];
  const seqs = await publishPages(
    d.js,
    job,
    idx,
    undefined,
    (i) => by.get(i)!.page,
    (i) => pageTaskKey(i, sendOf(by.get(i)!.a)),
  );
  // each send noted before the document says `q` (a lost task is found by its sequence)
  await Promise.all(
    out.map(({ i, a }) => {
      const { retryAt: _, ...rest } = a ?? { tries: 0, lost: 0 };
      return s.setAttempt(job.id, i, { ...rest, sentAt: now, ...(seqs.has(i) ? { seq: seqs.get(i)! } : {}) });
    }),
  );
  return { sent: idx, wake };
}

/** Give the page's place on its origin back (and, from another origin's page, learn its Crawl-delay). */
async function release(s: CrawlStore, job: JobRecord, index: number, page: CrawlPage, facts: CrawlFacts, status: number | null) {
  const origin = new URL(page.url).origin;
  const other = origin !== startOrigin(job);
  await s.updateOrigin(job.id, origin, (st) => {
    const learn = other && st.crawlDelayMs === undefined;
    if (!st.pages.includes(index) && !learn) return null;
    const pages = st.pages.filter((p) => p !== index);
    const a = answered(
      { ...st, inFlight: st.pages.length },
      { concurrency: 1, delayMs: 0, crawlDelayMs: 0, maxRetryAfterMs: 0 },
      Date.now(),
      {
        status,
      },
    );
    const next: OriginPolite = { ...st, ...a.state, inFlight: pages.length, pages };
    if (learn) next.crawlDelayMs = Math.max(0, facts.crawlDelayMs ?? 0);
    return next;
  });
}

export type FactsVerdict = { record: Outcome } | { dropped: keyof ReportJson['skipped'] } | 'held';

/** What a crawl page's outcome facts make of it: recorded (possibly as http_error), dropped, or held for a retry. */
export async function readFacts(d: Deps, s: CrawlStore, job: JobRecord, index: number, page: CrawlPage, o: Outcome): Promise<FactsVerdict> {
  const facts = (o.kind === 'done' ? (o.extra ?? {}) : {}) as CrawlFacts;
  if (o.kind === 'done' && facts.retry?.ours) return ourRetry(d, s, job, index, page, o, facts.retry);
  if (o.kind === 'done' && facts.retry) {
    const retry = facts.retry;
    const origin = new URL(page.url).origin;
    return retryPage(
      d,
      s,
      job,
      index,
      o,
      async () => {
        let retryAt = o.at;
        await s.updateOrigin(job.id, origin, (st) => {
          const r = rulesOf(d, job, origin, st, 0);
          const ans = answered({ ...st, inFlight: st.pages.length }, r, o.at, {
            status: retry.status as number,
            retryAfterMs: retry.retryAfterMs,
          });
          retryAt = ans.retryAt ?? o.at;
          const pages = st.pages.filter((p) => p !== index);
          return { ...st, ...ans.state, inFlight: pages.length, pages };
        });
        return retryAt;
      },
      (tries) => ({
        error: 'http_error',
        message: `the target answered HTTP ${retry.status} ${tries} times (crawl.maxRetries ${d.config.crawl.maxRetries})`,
      }),
    );
  }
  await release(s, job, index, page, facts, o.kind === 'done' ? 200 : null);
  if (o.kind !== 'done') return { record: o };
  if (facts.skipped === 'robots' || facts.skipped === 'robots_unavailable') return { dropped: facts.skipped };
  if (facts.canonical && (await s.frontier.claimCanonical(job.id, facts.canonical, index)) === 'duplicate') return { dropped: 'duplicate' };
  return { record: o };
}

/**
 * A page to ask again: its tries counted (a redelivered outcome once), `origin` gives its place on its
 * origin back and answers when it may go again; past crawl.maxRetries it is recorded as `failure`
 * (refunded), else it waits (`-`) until then (the document is left alone when the page is no longer `q`).
 */
async function retryPage(
  d: Deps,
  s: CrawlStore,
  job: JobRecord,
  index: number,
  o: Extract<Outcome, { kind: 'done' }>,
  origin: (tries: number) => Promise<number>,
  failure: (tries: number) => { error: string; message: string },
): Promise<FactsVerdict> {
  const a = (await s.attempt(job.id, index)) ?? { tries: 0, lost: 0, sentAt: 0 };
  const tries = a.last === o.at ? a.tries : a.tries + 1;
  const retryAt = await origin(tries);
  if (tries > d.config.crawl.maxRetries)
    return { record: { v: 1, kind: 'failed', jobId: o.jobId, resultKey: o.resultKey, at: o.at, ...failure(tries) } };
  await s.setAttempt(job.id, index, { ...a, tries, retryAt, last: o.at });
  await updateJob(d.jobs, job.id, (j) => {
    const ps = j.pageSet;
    if (!ps || ps.state[index] !== 'q') return false;
    ps.state = `${ps.state.slice(0, index)}-${ps.state.slice(index + 1)}`;
    return true;
  });
  return 'held';
}

/**
 * A page our browser-pool could not render now (busy, or no instance answered): the target was not
 * asked by the browser, so its origin is neither held nor struck; only the page's place on it is given
 * back (no write when the page held none). Sent again after a short back-off; past crawl.maxRetries
 * tries (429s included) it fails with our error, refunded.
 */
function ourRetry(
  d: Deps,
  s: CrawlStore,
  job: JobRecord,
  index: number,
  page: CrawlPage,
  o: Extract<Outcome, { kind: 'done' }>,
  retry: RetryFact & { ours: OurRetry },
): Promise<FactsVerdict> {
  const max = d.config.crawl.maxRetries;
  return retryPage(
    d,
    s,
    job,
    index,
    o,
    async (tries) => {
      await s.updateOrigin(job.id, new URL(page.url).origin, (st) => {
        if (!st.pages.includes(index)) return null;
        const pages = st.pages.filter((p) => p !== index);
        return { ...st, inFlight: pages.length, pages };
      });
      return o.at + ourBackoffMs(tries, retry.retryAfterMs);
    },
    (tries) => ({
      error: retry.ours,
      message:
        retry.ours === 'busy'
          ? `every browser page of our browser-pool was busy each of the ${tries} times this page was sent (crawl.maxRetries ${max}); our capacity, not the target's: refunded`
          : `no browser-pool instance answered in time each of the ${tries} times this page was sent (crawl.maxRetries ${max}): refunded`,
    }),
  );
}

/** When each crawl's pages in flight were last checked for lost tasks (a bounded memo; a restart checks at once). */
const lostChecked = new Map<string, number>();

/**
 * Pages in flight whose task is gone from TASKS with no outcome, crawl.pageLostSeconds after it went
 * out: sent again (a new task key), at most crawl.maxRetries times, then failed as worker_lost.
 */
export async function resendLost(d: Deps, s: CrawlStore, job: JobRecord): Promise<void> {
  const state = job.pageSet!.state;
  const now = Date.now();
  const c = d.config.crawl;
  // looked at a few times per pageLostSeconds, not on every page's step (a KV read per page in flight)
  if ((lostChecked.get(job.id) ?? 0) > now - (c.pageLostSeconds * 1000) / 4) return;
  if (lostChecked.size >= 1000) lostChecked.delete(lostChecked.keys().next().value!);
  lostChecked.set(job.id, now);
  for (let i = state.indexOf('q'); i >= 0; i = state.indexOf('q', i + 1)) {
    const a = await s.attempt(job.id, i);
    if (!a?.seq || now - a.sentAt < c.pageLostSeconds * 1000) continue;
    const alive = await d.jsm.streams.getMessage(STREAMS.tasks, { seq: a.seq }).then(
      (m) => !!m, // this client answers null for a sequence not in the stream
      (e: Error) => !/no message found|not found/i.test(e.message),
    );
    if (alive) continue;
    const page = await s.page(job, i);
    if (!page) continue;
    const key = pageTaskKey(i, sendOf(a));
    if (a.lost >= c.maxRetries) {
      d.log.warn({ jobId: job.id, index: i }, 'crawl page lost too often; failing as worker_lost');
      const lost: Outcome = {
        v: 1,
        kind: 'failed',
        jobId: job.id,
        resultKey: key,
        at: now,
        error: 'worker_lost',
        message: `the page's task was lost ${a.lost + 1} times`,
      };
      await d.js.publish(subjects.result(job.id), JSON.stringify(lost), {
        msgID: `${outcomeMsgId(job.id, key)}:lost`,
      });
      continue;
    }
    d.log.warn({ jobId: job.id, index: i, lost: a.lost + 1 }, 'crawl page task lost; sending it again');
    const next = { ...a, lost: a.lost + 1 };
    const seqs = await publishPages(
      d.js,
      job,
      [i],
      undefined,
      () => page,
      () => pageTaskKey(i, sendOf(next)),
    );
    await s.setAttempt(job.id, i, { ...next, sentAt: now, ...(seqs.has(i) ? { seq: seqs.get(i)! } : {}) });
  }
}
