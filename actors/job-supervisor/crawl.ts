// The crawl's steps in the supervisor (issue 42): a crawl is a page set whose pages are found as it
// goes. Sending pages and their outcome facts (politeness, retry, canonical, skipped): crawl-send.ts.
// When a crawl page is recorded, its links (the converter's `extra.links`, bounded by
// crawl.maxLinksPerPage) go through normalize → scope → robots → the frontier (shared/crawl/
// admission.ts); each refusal is counted in the crawl report, merged into the document with the
// page's own write. Admitting pages takes frontier entries (in order, each its page index = n - 1),
// gives each its key and record (shared/jobs/crawl.ts), publishes its task and moves the frontier's
// cursor; the document's state string then grows by those pages. Everything a later step needs is in
// NATS: a restarted supervisor reads the cursor and goes on (a state shorter than the cursor is
// extended: those tasks were out before the cursor moved).
import type { JobRecord } from '../../shared/protocol/jobs.ts';
import { CrawlStore, type CrawlPage, type RobotsText } from '../../shared/jobs/crawl.ts';
import { admitLinks } from '../../shared/crawl/admission.ts';
import { CrawlReport, SKIP_REASONS, type ReportJson } from '../../shared/crawl/report.ts';
import { compileScope } from '../../shared/crawl/scope.ts';
import { parseRobots, type RobotsRules, type RobotsVerdict } from '../../shared/crawl/robots.ts';
import { scopeRulesOf } from '../../shared/services/index.ts';
import { markAdmitted, unsettled } from '../../shared/jobs/pages.ts';
import { readAhead, resendLost, sendWaiting, type CrawlFacts } from './crawl-send.ts';
import type { CrawlRequest } from '../../shared/schemas/crawl.ts';
import { updateJob } from '../../shared/jobs/store.ts';
import type { Deps } from './deps.ts';

/** A crawl page's outcome facts beside the page's outputs. */
export interface CrawlExtra extends CrawlFacts {
  links?: string[];
  robots?: RobotsText;
  sitemap?: string[];
}

const stores = new WeakMap<Deps['nc'], Promise<CrawlStore>>();
/** The CrawlStore of this supervisor's connection (opened on first use; its bucket and stream are created if absent). */
export function crawlStore(d: Deps): Promise<CrawlStore> {
  let s = stores.get(d.nc);
  if (!s) {
    s = CrawlStore.open(d.nc, { replicas: d.config.nats.replicas }).catch((e) => {
      stores.delete(d.nc);
      throw e;
    });
    stores.set(d.nc, s);
  }
  return s;
}

/** Parsed robots rules of recent crawls (small: rebuilt from NATS after a restart). */
const robotsCache = new Map<string, RobotsRules | null>();

async function robotsOf(d: Deps, s: CrawlStore, job: JobRecord, origin: string): Promise<RobotsRules | null> {
  if (robotsCache.has(job.id)) return robotsCache.get(job.id)!;
  const r = await s.robots(job.id);
  const rules = r && r.status !== null && r.status >= 200 && r.status < 300 ? parseRobots(origin, r.text, d.config.crawl, r.status) : null;
  if (robotsCache.size >= 64) robotsCache.delete(robotsCache.keys().next().value!);
  robotsCache.set(job.id, rules);
  return rules;
}

export const deadlinePassed = (job: JobRecord, now = Date.now()) => {
  const dl = job.pageSet?.crawl?.deadline;
  return dl !== undefined && now >= dl;
};

/** The page of a crawl by index (page 0: its start URL). */
export async function crawlPage(d: Deps, job: JobRecord, index: number): Promise<CrawlPage | null> {
  return (await crawlStore(d)).page(job, index);
}

/**
 * Admit a recorded crawl page's links to the frontier; answers the report of what was skipped (for
 * the document write that marks the page recorded). Page 0 first stores the start origin's
 * robots.txt and is itself entered in the visited set (so links back to it are duplicates).
 */
export async function admitPageLinks(d: Deps, job: JobRecord, page: CrawlPage, extra: CrawlExtra): Promise<ReportJson> {
  const s = await crawlStore(d);
  const ps = job.pageSet!;
  const start = new URL(page.depth === 0 ? page.url : String(job.request.url));
  if (page.depth === 0) {
    if (extra.robots) {
      await s.setRobots(job.id, extra.robots);
      robotsCache.delete(job.id);
    }
    await s.frontier.admit(job.id, { url: page.url, depth: 0 }, ps.slots);
  }
  const report = new CrawlReport();
  // page 0: its sitemaps' URLs first (depth 1, as its links), then its links
  const links = [...(page.depth === 0 ? (extra.sitemap ?? []) : []), ...(extra.links ?? []).slice(0, d.config.crawl.maxLinksPerPage)];
  if (!links.length) return report.toJSON();
  if (deadlinePassed(job)) {
    for (const url of links) report.skip('deadline', url);
    return report.toJSON();
  }
  const scope = compileScope(scopeRulesOf(start.href, job.request.crawl as CrawlRequest | undefined));
  const rules = await robotsOf(d, s, job, scope.origin);
  const robots = {
    // the start origin's rules as page 0 read them; a page on another origin (allowSubdomains, in
    // scope) is admitted, and its task reads that origin's robots.txt first (`crawl.originRobots`):
    // an outcome `skipped` drops it (crawl-send.ts)
    async check(url: string | URL): Promise<RobotsVerdict> {
      if (new URL(String(url)).origin !== scope.origin) return { ok: true, crawlDelayMs: 0 };
      if (!rules) return { ok: true, crawlDelayMs: 0 };
      return rules.allows(String(url)) ? { ok: true, crawlDelayMs: rules.crawlDelayMs } : { ok: false, reason: 'robots' };
    },
  };
  const gate = { jobId: job.id, limit: ps.slots, scope, robots, frontier: s.frontier, report };
  await admitLinks(
    gate,
    links.map((url) => ({ url, depth: page.depth + 1, from: page.url })),
  );
  return report.toJSON();
}

/** Add a page's skips to the crawl's report (counts add up; samples stay bounded). */
export function mergeReport(into: ReportJson, delta: ReportJson): ReportJson {
  const r = CrawlReport.from(into);
  const out = r.toJSON();
  for (const reason of SKIP_REASONS) {
    const e = delta.skipped[reason];
    if (!e) continue;
    const cur = (out.skipped[reason] ??= { count: 0, sample: [] });
    cur.count += e.count;
    for (const u of e.sample) if (cur.sample.length < 10 && !cur.sample.includes(u)) cur.sample.push(u);
  }
  return out;
}

/** Grow the document's state to `n` pages: `q` when their tasks are out, `-` when they wait to be sent. */
export const extendTo = (j: JobRecord, n: number, fill: 'q' | '-' = 'q'): boolean => {
  const s = j.pageSet;
  if (!s || s.state.length >= n) return false;
  s.state += fill.repeat(n - s.state.length);
  s.pages = s.state.length;
  return true;
};

/**
 * One step of a crawl: finish it when nothing is waiting or in flight and nothing more can come
 * (frontier exhausted, limit reached, or deadline passed); else take frontier entries as waiting
 * pages and send waiting pages as politeness allows (crawl-send.ts), up to `room` in flight. Entries
 * are taken `ps.window` ahead of what goes now: the next page outcome sends the next page without
 * reading the frontier first. The pages taken and the pages sent are one document write.
 * Answers 'finish' when the caller should finish the page set, 'filled' when it sent a page into
 * every place it had (nothing more can go before an outcome).
 */
export async function advanceCrawl(
  d: Deps,
  job: JobRecord,
  roomOf: number | Promise<number>,
  again: () => void,
): Promise<'finish' | 'wait' | 'filled'> {
  const s = await crawlStore(d);
  const ps = job.pageSet!;
  // the first waiting pages' records are read beside the frontier's cursor and tail (and the room)
  const early = readAhead(s, job, ps.state, ps.window);
  // the last frontier entry taken as a page is in the document, written with the pages it made (a
  // crawl from before session 32 has it in the crawl bucket's cursor key: read once, then moved here)
  const inDoc = ps.crawl?.taken;
  const [cursor, tail, room] = await Promise.all([inDoc ?? s.frontier.cursor(job.id), s.frontier.tail(job.id), roomOf]);
  // (that key's coordinator may have stopped between it and its document write: those pages wait to be sent)
  if (cursor.n > ps.state.length) {
    const res = await updateJob(d.jobs, job.id, (j) => extendTo(j, cursor.n, '-'));
    if (res?.job) job = res.job;
  }
  const past = deadlinePassed(job);
  // past the deadline nothing more is sent: pages waiting are dropped (not results, their slots back)
  if (past && job.pageSet!.state.includes('-')) job = await dropWaiting(d, s, job);
  const state = job.pageSet!.state;
  const busy = unsettled(state);
  const full = state.length >= ps.slots;
  const more = tail.n > state.length;
  if (!busy && (past || full || !more)) return 'finish';
  if (past) return 'wait';
  await resendLost(d, s, job);
  const waiting = (state.match(/-/g) ?? []).length;
  const take = Math.min(Math.max(0, room) + ps.window - waiting, ps.slots - state.length);
  let grown = state.length;
  let taken: { seq: number; n: number } | undefined;
  const takeEntries = async () => {
    if (!more || full || take <= 0) return;
    // entries between the cursor and the state's end are pages already (page 0; a cursor behind a
    // document another coordinator grew): read past them, or they would take the room of new ones
    const behind = Math.max(0, state.length - cursor.n);
    const entries = await s.frontier.pendingAfter(job.id, cursor, behind + take);
    if (!entries.length) return;
    // the records, then the document (the pages and the entry taken last, one write): a crash
    // between leaves them to the next step, which takes the same entries again
    await Promise.all(entries.filter((e) => e.n - 1 >= state.length).map((e) => s.place(job.id, e.n - 1, e)));
    const last = entries[entries.length - 1]!;
    taken = { seq: last.seq, n: last.n };
    grown = Math.max(grown, last.n);
  };
  let sent: number[] = [];
  const send = async (st: string) => {
    if (room <= 0 || !st.includes('-')) return;
    const delay = (await robotsOf(d, s, job, new URL(String(job.request.url)).origin))?.crawlDelayMs ?? 0;
    const r = await sendWaiting(d, s, job, st, room, delay, early);
    sent = r.sent;
    // a page held by politeness asks again when it may go (the sweep is the backstop)
    if (r.wake < Infinity) wakeAt(job.id, r.wake, again);
  };
  // pages waiting already go first (the frontier is read for the ones after them); else take, then send
  if (waiting >= room) {
    await send(state);
    await takeEntries();
  } else {
    await takeEntries();
    await send(state + '-'.repeat(grown - state.length));
  }
  if (grown > state.length || sent.length || (taken && !inDoc) || (taken && taken.seq > inDoc!.seq))
    await updateJob(d.jobs, job.id, (j) => {
      const a = extendTo(j, grown, '-');
      const b = markAdmitted(j, sent);
      const c = j.pageSet?.crawl;
      // another coordinator may have taken them first: the entry taken last only moves on
      if (!taken || !c || (c.taken && c.taken.seq >= taken.seq)) return a || b;
      c.taken = taken;
      return true;
    });
  // every place in the window taken: what comes next waits for a page's outcome (each steps again)
  return sent.length > 0 && sent.length >= room ? 'filled' : 'wait';
}

/** One timer per crawl, for its earliest wake-up: a held origin does not leave a timer per outcome. */
const timers = new Map<string, { at: number; timer: NodeJS.Timeout }>();
function wakeAt(jobId: string, at: number, again: () => void): void {
  const cur = timers.get(jobId);
  if (cur && cur.at <= at && cur.at > Date.now()) return;
  if (cur) clearTimeout(cur.timer);
  const timer = setTimeout(
    () => {
      timers.delete(jobId);
      again();
    },
    Math.max(0, at - Date.now()) + 5,
  );
  timer.unref();
  timers.set(jobId, { at, timer });
}

/** The deadline passed: every waiting page is dropped in one write, counted `deadline`. */
async function dropWaiting(d: Deps, s: CrawlStore, job: JobRecord): Promise<JobRecord> {
  const report = new CrawlReport();
  const st = job.pageSet!.state;
  for (let i = st.indexOf('-'); i >= 0; i = st.indexOf('-', i + 1)) report.skip('deadline', (await s.page(job, i))?.url ?? String(i));
  const res = await updateJob(d.jobs, job.id, (j) => {
    const ps = j.pageSet;
    if (!ps?.state.includes('-')) return false;
    ps.state = ps.state.replace(/-/g, 'x');
    if (ps.crawl) ps.crawl.report = mergeReport(ps.crawl.report, report.toJSON());
    return true;
  });
  return res?.job ?? job;
}

/**
 * What a crawl that ends at its deadline leaves in its frontier: URLs admitted but never taken as
 * pages (a link admitted just before the deadline, whose step came after it), counted `deadline`
 * with a sample, for the finish's write. Null when there are none.
 */
export async function untakenAtDeadline(d: Deps, job: JobRecord): Promise<ReportJson | null> {
  const ps = job.pageSet;
  if (!ps?.crawl || !deadlinePassed(job)) return null;
  const s = await crawlStore(d);
  const tail = await s.frontier.tail(job.id);
  const untaken = tail.n - Math.max(ps.state.length, ps.crawl.taken?.n ?? 0);
  if (untaken <= 0) return null;
  const cursor = ps.crawl.taken ?? (await s.frontier.cursor(job.id));
  const sample = (await s.frontier.pendingAfter(job.id, cursor, 10)).filter((e) => e.n > ps.state.length);
  return { skipped: { deadline: { count: untaken, sample: sample.map((e) => e.url) } } };
}

/** The crawl's frontier, visited set and page records go once it has finished. */
export async function dropCrawl(d: Deps, jobId: string): Promise<void> {
  robotsCache.delete(jobId);
  clearTimeout(timers.get(jobId)?.timer);
  timers.delete(jobId);
  await (await crawlStore(d)).frontier.drop(jobId);
}
