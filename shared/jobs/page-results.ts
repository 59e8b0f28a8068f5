// A page set's results as the API shows them: read from PAGES (shared/jobs/pages.ts), mapped by the
// one public mapping (shared/protocol/public-job.ts). GET /v1/jobs/{id}, the creation's answer and
// the webhook carry up to RESULTS_INLINE results and `resultsNext` beyond; GET /v1/jobs/{id}/results
// pages on; the job list shows none (toPublicJob alone).
import { jetstreamManager, type JetStreamClient, type JetStreamManager } from '@nats-io/jetstream';
import type { NatsConnection } from '@nats-io/nats-core';
import type { JobRecord } from '../protocol/jobs.ts';
import type { JobDoc, ResultDoc } from '../schemas/api.ts';
import { toPublicJob, toPublicResult } from '../protocol/public-job.ts';
import { decodeCursor, encodeCursor, readPageResults, RESULTS_INLINE } from './pages.ts';
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
  const { messages, next } = await readPageResults(r.js, r.jsm, job.id, from, RESULTS_INLINE);
  return {
    results: messages.flatMap((m) => m.results.map((x) => toPublicResult(job, x, baseUrl, now))),
    next: next === null ? null : encodeCursor(next),
  };
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
