// A page set's results as the API shows them: read from PAGES (shared/jobs/pages.ts), mapped by the
// one public mapping (shared/protocol/public-job.ts). GET /v1/jobs/{id}, the creation's answer and
// the webhook carry up to RESULTS_INLINE results and `resultsNext` beyond; GET /v1/jobs/{id}/results
// pages on; the job list shows none (toPublicJob alone).
import { jetstreamManager, type JetStreamClient, type JetStreamManager } from '@nats-io/jetstream';
import type { NatsConnection } from '@nats-io/nats-core';
import type { JobRecord } from '../protocol/jobs.ts';
import type { JobDoc, ResultDoc } from '../schemas/api.ts';
import { isExpired, toPublicJob, toPublicResult } from '../protocol/public-job.ts';
import { RawJson } from '../raw-json.ts';
import { decodeCursor, encodeCursor, readPageResults, RESULTS_INLINE, type PageMessage } from './pages.ts';
import { ApiError } from '../errors.ts';

export interface PagesReader {
  js: JetStreamClient;
  jsm: JetStreamManager;
}

const jsms = new WeakMap<NatsConnection, Promise<JetStreamManager>>();
/** A reader of PAGES for a connection (one JetStream manager per connection). */
export async function pagesReader(nc: NatsConnection, js: JetStreamClient): Promise<PagesReader> {
  let jsm = jsms.get(nc);
  if (!jsm) {
    jsm = jetstreamManager(nc);
    jsms.set(nc, jsm);
    jsm.catch(() => jsms.delete(nc));
  }
  return { js, jsm: await jsm };
}

/**
 * The first page of each recently read page set's results, kept in this process: a page's PAGES
 * message never changes once written and the subject only grows, so a page full up to
 * RESULTS_INLINE is final, and one that was not is read on from its last sequence. A job read
 * while its crawl runs costs the messages written since the last read, not all of them again.
 * Bounded by results held (FIRST_PAGES_MAX_RESULTS, the oldest read dropped first). Exported for its test.
 */
const firstPages = new Map<string, FirstPage>();
interface FirstPage {
  messages: PageMessage[];
  next: number | null;
  lastSeq: number;
  count: number;
  /**
   * The public results of the first `upTo` messages as JSON text (comma-joined), per base URL and
   * expiry (what toPublicResult depends on): a read serialises only the messages new since the last
   * one. The text and its UTF-8 (the RawJson the answer sends): at most about twice a few hundred
   * bytes per result held (FIRST_PAGES_MAX_RESULTS bounds them).
   */
  texts?: Map<string, { upTo: number; text: string; raw?: RawJson }>;
}
let firstPagesHeld = 0;
export const FIRST_PAGES_MAX_RESULTS = 20_000;

export async function firstResults(r: PagesReader, jobId: string): Promise<FirstPage> {
  const had = firstPages.get(jobId);
  let e: FirstPage;
  if (!had) {
    const got = await readPageResults(r.js, r.jsm, jobId, 1, RESULTS_INLINE);
    e = { messages: got.messages, next: got.next, lastSeq: got.seqs.at(-1) ?? 0, count: 0 };
  } else if (had.next === null) {
    const room = RESULTS_INLINE - had.count;
    const got = await readPageResults(r.js, r.jsm, jobId, had.lastSeq + 1, room);
    if (got.messages.length && got.messages[0]!.results.length > room) e = { ...had, next: got.seqs[0]! };
    else
      e = {
        messages: [...had.messages, ...got.messages],
        next: got.next,
        lastSeq: got.seqs.at(-1) ?? had.lastSeq,
        count: 0,
        ...(had.texts ? { texts: had.texts } : {}),
      };
  } else e = had;
  // entered again as the newest read
  if (had) {
    firstPages.delete(jobId);
    firstPagesHeld -= had.count;
  }
  e.count = e.messages.reduce((n, m) => n + m.results.length, 0);
  if (e.lastSeq > 0) {
    firstPages.set(jobId, e);
    firstPagesHeld += e.count;
  }
  while (firstPagesHeld > FIRST_PAGES_MAX_RESULTS && firstPages.size) {
    const [oldest, o] = firstPages.entries().next().value!;
    firstPages.delete(oldest);
    firstPagesHeld -= o.count;
  }
  return e;
}

/** One page of a page set's results from a cursor (absent: the first). */
export async function pageOfResults(
  r: PagesReader,
  job: JobRecord,
  baseUrl: string,
  after?: string,
  now = Date.now(),
): Promise<{ results: ResultDoc[]; next: string | null }> {
  const from = after === undefined || after === '' ? 1 : decodeCursor(after);
  if (from === null) throw new ApiError('bad_request', '`after` is not a cursor this API gave (use `resultsNext` or `next`)');
  if (!job.pageSet) {
    // a one-page job: all its results, one page
    return from === 1 ? { results: job.results.map((x) => toPublicResult(job, x, baseUrl, now)), next: null } : { results: [], next: null };
  }
  const { messages, next } = from === 1 ? await firstResults(r, job.id) : await readPageResults(r.js, r.jsm, job.id, from, RESULTS_INLINE);
  return {
    results: messages.flatMap((m) => m.results.map((x) => toPublicResult(job, x, baseUrl, now))),
    next: next === null ? null : encodeCursor(next),
  };
}

/**
 * The first results as a JSON array for this base URL and expiry, extended by the messages new since
 * it was made; the same RawJson (and its UTF-8) for every read until a message comes.
 */
function firstText(e: FirstPage, job: JobRecord, baseUrl: string, now: number): RawJson {
  const key = `${isExpired(job, now) ? 'x' : '-'}${baseUrl}`;
  const texts = (e.texts ??= new Map());
  const had = texts.get(key) ?? { upTo: 0, text: '' };
  if (had.upTo === e.messages.length && had.raw) return had.raw;
  const more = e.messages
    .slice(had.upTo)
    .flatMap((m) => m.results.map((x) => JSON.stringify(toPublicResult(job, x, baseUrl, now))))
    .join(',');
  const text = had.text && more ? `${had.text},${more}` : had.text || more;
  const raw = new RawJson(`[${text}]`);
  texts.set(key, { upTo: e.messages.length, text, raw });
  return raw;
}

/**
 * The public job as publicJobOf makes it, its inline results as JSON text kept with the first
 * results (RawJson: the gateway's answer puts it in as it is). GET /v1/jobs/{id} of a big page set
 * then serialises only its new results, not a thousand each time.
 */
export async function publicJobText(r: PagesReader, job: JobRecord, baseUrl: string, now = Date.now()): Promise<JobDoc> {
  const doc = toPublicJob(job, baseUrl, now);
  if (!job.pageSet || !job.pageSet.resultCount) return doc;
  const e = await firstResults(r, job.id);
  (doc as { results: unknown }).results = firstText(e, job, baseUrl, now);
  if (e.next !== null) doc.resultsNext = encodeCursor(e.next);
  else delete doc.resultsNext;
  return doc;
}

/** The public job with a page set's first results inline (a one-page job as toPublicJob makes it). */
export async function publicJobOf(r: PagesReader, job: JobRecord, baseUrl: string, now = Date.now()): Promise<JobDoc> {
  const doc = toPublicJob(job, baseUrl, now);
  if (!job.pageSet || !job.pageSet.resultCount) return doc;
  const { results, next } = await pageOfResults(r, job, baseUrl, undefined, now);
  doc.results = results;
  if (next) doc.resultsNext = next;
  else delete doc.resultsNext;
  return doc;
}
