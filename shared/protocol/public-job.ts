// The one mapping from the stored JobRecord to the public Job document of spec 2.1 / 2.2.
import type { JobRecord, ResultRecord, WebhookAttempt } from './jobs.ts';
import type { JobDoc, ResultDoc } from '../schemas/api.ts';

/** The cursor of a page set's first results (shared/jobs/pages.ts encodeCursor(1)). */
export const FIRST_RESULTS_CURSOR = Buffer.from('p1').toString('base64url');

export const resultPath = (jobId: string, key: string) => `/v1/jobs/${encodeURIComponent(jobId)}/results/${encodeURIComponent(key)}`;

/** Results are gone once expiresAt has passed, whether or not the sweep has deleted them yet. */
export const isExpired = (job: Pick<JobRecord, 'expiresAt' | 'purgedAt'>, now = Date.now()) =>
  now >= job.expiresAt || job.purgedAt !== undefined;

/** A webhook's delivery as the API shows it (the job's, or a labs result's). */
function publicWebhook<S extends string>(w: { url: string; state: S; tries: number; attempts: WebhookAttempt[]; nextAt?: number }) {
  return {
    url: w.url,
    state: w.state,
    tries: w.tries,
    attempts: w.attempts,
    ...(w.state === 'pending' && w.nextAt ? { nextAttemptAt: w.nextAt } : {}),
  };
}

export function toPublicResult(job: JobRecord, r: ResultRecord, baseUrl: string, now = Date.now()): ResultDoc {
  const out: ResultDoc = {
    // service facts first, so they can never shadow a field of the contract
    ...(r.extra ?? {}),
    key: r.key,
    status: r.status,
    price: r.price,
    refunded: r.refunded,
  };
  if (r.error) out.error = r.error;
  if (r.message && r.status === 'failed') out.message = r.message;
  if (r.oneTime) out.oneTime = true;
  if (r.status === 'pending' && r.progress) out.progress = r.progress;
  if (r.webhook) out.webhook = publicWebhook(r.webhook);
  if (r.file) {
    out.contentType = r.file.contentType;
    out.bytes = r.file.bytes;
    out.filename = r.file.filename;
  }
  if (r.status === 'done' && r.file && !isExpired(job, now)) {
    out.url = baseUrl + resultPath(job.id, r.key);
    if (r.file.thumb) out.thumbUrl = `${out.url}?thumb=1`;
  }
  return out;
}

export function toPublicJob(job: JobRecord, baseUrl: string, now = Date.now()): JobDoc {
  const out: JobDoc = {
    id: job.id,
    service: job.service,
    status: job.status,
    target: job.target,
    cost: job.cost,
    refunded: job.refunded,
    charged: job.cost - job.refunded,
    createdAt: job.createdAt,
    expiresAt: job.expiresAt,
    results: job.results.map((r) => toPublicResult(job, r, baseUrl, now)),
  };
  if (job.pageSet) {
    // a page set: counts here, its results in PAGES (shared/jobs/page-results.ts fills `results` up
    // to RESULTS_INLINE for GET /v1/jobs/{id} and webhooks; the list shows none and where to read)
    const ps = job.pageSet;
    out.resultCount = ps.resultCount;
    if (ps.resultCount > 0) out.resultsNext = FIRST_RESULTS_CURSOR;
    // `x` pages (dropped: a canonical duplicate, a robots skip) are not pages of the result set
    const dropped = (ps.state.match(/x/g) ?? []).length;
    out.pages = {
      total: ps.pages - dropped,
      recorded: (ps.state.match(/r/g) ?? []).length,
      slots: ps.slots,
      done: ps.done,
      failed: ps.failed,
    };
    if (ps.crawl) out.crawl = { skipped: ps.crawl.report.skipped, ...(ps.crawl.deadline ? { deadline: ps.crawl.deadline } : {}) };
  }
  if (job.error) out.error = job.error;
  if (job.finishedAt !== undefined) out.finishedAt = job.finishedAt;
  if (job.webhook) {
    out.webhook = publicWebhook(job.webhook);
  }
  return out;
}
