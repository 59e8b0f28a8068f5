// A map (websitepro `outputs: ["map"]`, issue 42) in the supervisor: a crawl whose pages are fetched
// only for their links (task param `linksOnly`) and are never results. Each page is recorded as
// dropped (`x`) once its links are in the frontier; the frontier's admitted entries are the list. The
// map ends when the list holds `limit` URLs, the frontier has nothing left to fetch, or the deadline
// passed (or at once after page 0 with `sitemap: "only"`): then map.json (url, count, urls, report) is
// stored as the job's one result `map`, priced per block of 1,000 URLs listed, and the blocks not
// used come back in the one `_slots` entry. Everything else (frontier, scope, robots, keys, politeness)
// is the crawl's (crawl.ts). The frontier drops each job's entries when it ends, so the list is read
// before the finish writes anything that would let a step skip it.
import { DeliverPolicy, jetstream } from '@nats-io/jetstream';
import { subjects } from '../../shared/names.ts';
import { wallet } from '../../shared/protocol/wallet.ts';
import { objectName, SLOTS_RESULT_KEY, type JobRecord, type Outcome, type ResultRecord } from '../../shared/protocol/jobs.ts';
import { putObject } from '../../shared/nats/objects.ts';
import { readJob, refundedTotal, updateJob } from '../../shared/jobs/store.ts';
import { inFlight, pageMsgId, unsettled, type PageMessage } from '../../shared/jobs/pages.ts';
import { FRONTIER_STREAM, frontierSubject, type FrontierEntry } from '../../shared/crawl/frontier.ts';
import type { ReportJson } from '../../shared/crawl/report.ts';
import { mapBlocks, SERVICE_MODULES } from '../../shared/services/index.ts';
import { admitPageLinks, advanceCrawl, crawlPage, crawlStore, dropCrawl, mergeReport, type CrawlExtra } from './crawl.ts';
import type { Deps } from './deps.ts';

/** map.json: what a map result holds. */
export interface MapFile {
  url: string;
  count: number;
  urls: { url: string; source: 'sitemap' | 'link'; depth: number }[];
  report: ReportJson;
}

type MapExtra = CrawlExtra & { outputs?: Record<string, { error?: string; message?: string }> };

/**
 * A map page's outcome: its links into the frontier (page 0: its robots.txt, then its sitemaps'
 * URLs, counted, then its links), then the page is dropped (`x`) with the skips in the report, in
 * one write. A start URL that robots.txt forbids, or whose robots.txt cannot be read, lists nothing.
 */
export async function recordMapPage(d: Deps, job: JobRecord, index: number, o: Outcome): Promise<void> {
  const page = await crawlPage(d, job, index);
  if (!page) throw new Error(`map ${job.id}: no record of page ${index}`);
  const extra = (o.kind === 'done' ? (o.extra ?? {}) : {}) as MapExtra;
  const failed = o.kind === 'failed' ? { error: o.error, message: o.message ?? '' } : extra.outputs?.map;
  let report: ReportJson = { skipped: {} };
  let first: NonNullable<JobRecord['pageSet']>['map'] = {};
  if (index === 0 && failed?.error?.startsWith('robots')) first = { error: { error: failed.error, message: failed.message ?? '' } };
  else if (index === 0) {
    const fromSitemaps = await admitPageLinks(d, job, page, {
      ...(extra.robots ? { robots: extra.robots } : {}),
      ...(extra.sitemap ? { sitemap: extra.sitemap } : {}),
    });
    // the sitemaps' URLs are admitted first, in order, right after the start URL (ordinal 1)
    const { n: admitted } = await (await crawlStore(d)).frontier.tail(job.id);
    first = { sitemapUrls: Math.max(0, admitted - 1) };
    report = mergeReport(fromSitemaps, await admitPageLinks(d, job, page, extra.links ? { links: extra.links } : {}));
  } else report = await admitPageLinks(d, job, page, extra.links ? { links: extra.links } : {});
  await updateJob(d.jobs, job.id, (j) => {
    const s = j.pageSet;
    if (!s || index >= s.state.length || s.state[index] === 'r' || s.state[index] === 'x') return false;
    s.state = s.state.slice(0, index) + 'x' + s.state.slice(index + 1);
    if (s.crawl) s.crawl.report = mergeReport(s.crawl.report, report);
    if (index === 0) s.map = { ...s.map, ...first };
    return true;
  });
}

/**
 * One step of a map: while the list is short of its limit, the crawl's step fetches more pages
 * (for links); once it is full (or page 0 is all `sitemap: "only"` reads, or robots.txt refused the
 * start), pages not sent yet are not needed, and the map finishes when none is in flight.
 */
export async function advanceMap(d: Deps, job: JobRecord, share: number, again: () => Promise<void>): Promise<void> {
  const ps = job.pageSet!;
  const s = await crawlStore(d);
  const { n: admitted } = await s.frontier.tail(job.id);
  const only = (job.request.crawl as { sitemap?: string } | undefined)?.sitemap === 'only';
  let finish: boolean;
  if (ps.map?.error || (only && ps.state[0] === 'x') || admitted >= ps.slots) {
    if (ps.state.includes('-')) {
      const res = await updateJob(d.jobs, job.id, (j) => {
        if (!j.pageSet?.state.includes('-')) return false;
        j.pageSet.state = j.pageSet.state.replace(/-/g, 'x');
        return true;
      });
      if (res?.job) job = res.job;
    }
    finish = !unsettled(job.pageSet!.state);
  } else {
    const room = Math.min(ps.window - inFlight(job), share);
    const step = () => void again().catch((e: Error) => d.log.warn({ jobId: job.id, err: e }, 'map step failed'));
    finish = (await advanceCrawl(d, job, room, step)) === 'finish';
  }
  if (!finish) return;
  const now = await readJob(d.jobs, job.id);
  if (now?.job.status === 'processing') await finishMap(d, now.job);
  await dropCrawl(d, job.id);
}

/** The frontier's admitted entries of a job, in order, at most `max` (an ordered consumer: one pass). */
async function listed(d: Deps, jobId: string, max: number): Promise<FrontierEntry[]> {
  const { n: admitted } = await (await crawlStore(d)).frontier.tail(jobId);
  if (admitted === 0) return [];
  const c = await jetstream(d.nc).consumers.get(FRONTIER_STREAM, {
    filter_subjects: [frontierSubject(jobId)],
    deliver_policy: DeliverPolicy.All,
  });
  const out = new Map<number, FrontierEntry>();
  try {
    for (;;) {
      const batch = await c.fetch({ max_messages: 500, expires: 5000 });
      let got = 0;
      for await (const m of batch) {
        got++;
        const e = m.json<FrontierEntry>();
        if (e.n <= max) out.set(e.n, e);
        if (m.info.pending === 0) {
          batch.stop();
          return [...out.values()].sort((a, b) => a.n - b.n);
        }
      }
      if (!got) return [...out.values()].sort((a, b) => a.n - b.n);
    }
  } finally {
    await c.delete().catch(() => {});
  }
}

/** The map's one result (stored, then in PAGES), the unused blocks' refund, then the finish in one write. */
async function finishMap(d: Deps, job: JobRecord): Promise<void> {
  const ps = job.pageSet!;
  const price = ps.unitPrices.map ?? 0;
  const entries = ps.map?.error ? [] : await listed(d, job.id, ps.slots);
  const count = entries.length;
  const unused = (mapBlocks(ps.slots) - mapBlocks(count)) * price;
  const sitemapUrls = ps.map?.sitemapUrls ?? 0;
  const start = String(job.request.url);
  const facts = { page: start, source: start };
  let result: ResultRecord;
  if (count > 0) {
    const file: MapFile = {
      url: start,
      count,
      urls: entries.map((e) => ({ url: e.url, source: e.n >= 2 && e.n <= sitemapUrls + 1 ? 'sitemap' : 'link', depth: e.depth })),
      report: ps.crawl?.report ?? { skipped: {} },
    };
    const data = Buffer.from(JSON.stringify(file), 'utf8');
    const store = SERVICE_MODULES[job.service].store;
    const name = objectName(job.id, 'map');
    await putObject(d.nc, store, { name, description: 'application/json', metadata: { filename: 'map.json' } }, data);
    const stored = { store, name, contentType: 'application/json', bytes: data.length, filename: 'map.json' };
    result = { key: 'map', status: 'done', refunded: false, price: mapBlocks(count) * price, file: stored, extra: facts };
  } else {
    const why = ps.map?.error ?? { error: 'not_delivered', message: 'the map found no URL' };
    result = { key: 'map', status: 'failed', refunded: true, price: 0, ...why, extra: facts };
  }
  const msg: PageMessage = { v: 1, jobId: job.id, index: 0, pageKey: 'map', results: [result] };
  await d.js.publish(subjects.page(job.id), JSON.stringify(msg), { msgID: pageMsgId(job.id, 0) });
  if (unused > 0) await wallet.refund(d.nc, { walletId: job.walletId, jobId: job.id, resultKey: SLOTS_RESULT_KEY, amount: unused });
  const res = await updateJob(d.jobs, job.id, (j) => {
    const s = j.pageSet;
    if (!s || j.status !== 'processing') return false;
    s.resultCount = 1;
    if (result.status === 'done') s.done = 1;
    else {
      s.failed = 1;
      s.firstError = result.error;
    }
    s.map = { ...s.map, count };
    if (unused > 0) s.slotsRefunded = unused;
    j.refunded = refundedTotal(j);
    j.status = result.status === 'done' ? 'completed' : 'failed';
    j.finishedAt ??= Date.now();
    if (j.status === 'failed') j.error = result.error ?? 'not_delivered';
    if (j.webhook?.state === 'waiting') {
      j.webhook.state = 'pending';
      j.webhook.nextAt = j.finishedAt;
    }
    return true;
  });
  if (res?.changed) await d.afterFinish?.(res.job);
}
