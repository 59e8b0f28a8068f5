// The job document kept in the `jobs` bucket, and the worker protocol: the task a worker pulls,
// and the outcome it reports. A new worker kind needs only this file and shared/worker.ts.
import type { ServiceName } from '../names.ts';
import type { ReportJson } from '../crawl/report.ts';

export type JobStatus = 'queued' | 'processing' | 'completed' | 'failed';
export type ResultStatus = 'pending' | 'done' | 'failed';

/** What a worker stored for a delivered result. */
export interface StoredFile {
  store: string; // object store name (OBJECT_STORES)
  name: string; // object name, see objectName()
  contentType: string;
  bytes: number;
  filename: string;
  thumb?: { name: string; contentType: string; bytes: number };
}

export interface ResultRecord {
  key: string;
  status: ResultStatus;
  price: number;
  refunded: boolean;
  error?: string;
  /** Longer human text for `error`. */
  message?: string;
  oneTime?: boolean;
  /** labs: this result uses the test dataset (the `dataset` fee is refunded unless one such result is delivered). */
  needsDataset?: boolean;
  progress?: string;
  file?: StoredFile;
  /** Small service-specific facts shown on the result (e.g. shots: cookieBanner, blank). */
  extra?: Record<string, unknown>;
  /** Where the task for this result is published; absent for results with no work (dataset fee). */
  subject?: string;
  params?: Record<string, unknown>;
  /** TASKS stream sequence of the published task, or of its held message while it waits past the wallet's share (lets the sweep remove a stuck one). */
  taskSeq?: number;
  /** Results this one is made from (shots compare): its task is published once all are done. */
  after?: string[];
  /** labs: the delivery of this report to the job's webhook (written by the relay-prober that sends it). */
  webhook?: ResultWebhook;
}

/** One POST of a job's webhook. */
export interface WebhookAttempt {
  at: number;
  /** The receiver's HTTP status; null when no answer came (then `error` says why). */
  status: number | null;
  error?: string;
}

/**
 * The webhook of a websitepro or shots job (labs reports are sent per result by the prober).
 * waiting: the job runs; pending: to be sent from `nextAt`; delivered; failed: retries used up or refused.
 */
export interface JobWebhook {
  url: string;
  state: 'waiting' | 'pending' | 'delivered' | 'failed';
  /** Attempts made so far (all of them). */
  tries: number;
  /** The last attempts, oldest first (at most WEBHOOK_ATTEMPTS_KEPT). */
  attempts: WebhookAttempt[];
  nextAt?: number;
  /** The supervisor instance sending it now, until claimUntil; others leave it alone till then. */
  claimedBy?: string;
  claimUntil?: number;
}

export const WEBHOOK_ATTEMPTS_KEPT = 10;

/**
 * The webhook of one labs report, sent by the prober that made it (once per result). Absent until
 * the report is stored; pending while being sent; delivered; failed: retries used up, refused, or
 * the prober stopped between attempts.
 */
export interface ResultWebhook {
  url: string;
  state: 'pending' | 'delivered' | 'failed';
  tries: number;
  attempts: WebhookAttempt[];
  nextAt?: number;
}

export interface JobRecord {
  id: string;
  service: ServiceName;
  status: JobStatus;
  walletId: string;
  target: string;
  request: Record<string, unknown>;
  cost: number;
  refunded: number;
  error?: string;
  createdAt: number;
  startedAt?: number;
  finishedAt?: number;
  expiresAt: number;
  /** Set once the stored files are deleted after expiresAt. */
  purgedAt?: number;
  results: ResultRecord[];
  webhook?: JobWebhook;
  /**
   * Public base URL of the gateway that created the job, for the result URLs its webhook carries:
   * a supervisor cannot know a gateway's port that was picked at start (PORT=0, no BASE_URL).
   * Absent on jobs from before it was recorded (then the supervisor's own server.baseUrl).
   */
  baseUrl?: string;
  /**
   * The document was written after the wallet's orphan sweep had given the whole charge back (it
   * landed later than the charge's grace): the job ended at once as failed, its results refunded by
   * that one `refund:<jobId>:_orphan` entry (actors/job-supervisor/orphaned.ts).
   */
  orphaned?: true;
  /**
   * A page-set job (websitepro `urls`, `crawl`): its results are not in `results` (always empty) but
   * in the PAGES stream, one message per page (shared/jobs/pages.ts); the document keeps counts.
   */
  pageSet?: PageSetRecord;
}

/** The state of a page-set job in its document: counts, never a list of results. */
export interface PageSetRecord {
  /** batch: the pages are the request's `urls`; crawl: page 0 is the start URL, the others are found as it goes (their URLs in NATS, shared/jobs/crawl.ts). */
  kind: 'batch' | 'crawl';
  /** The outputs every page produces, in order, and each one's price for one page. */
  outputs: string[];
  unitPrices: Record<string, number>;
  /** Pages paid for (the quote's quantity): the URLs given, duplicates included. */
  slots: number;
  /** Pages to convert (a batch: its distinct URLs; a crawl: the pages handed out so far, `x` ones included). */
  pages: number;
  /** Pages in the task queue at most (config crawl.concurrency when created). */
  window: number;
  /**
   * One character per page: `-` waiting, `q` admitted (task out), `r` recorded (results in PAGES),
   * `x` dropped (not a result: a crawl's canonical duplicate, a robots skip of another origin, a map
   * page; it costs nothing: its slot comes back with the unused ones in `_slots`).
   */
  state: string;
  /** Results recorded, delivered and failed. */
  resultCount: number;
  done: number;
  failed: number;
  /** Payloads refunded for failed results (`refund:<jobId>:<key>`). */
  resultsRefunded: number;
  /** Payloads refunded for slots never used (`refund:<jobId>:_slots`), once written. */
  slotsRefunded?: number;
  /** The first failed result's error (the job's `error` if nothing was delivered). */
  firstError?: string;
  /** Hosts the creation's precheck found unreachable: their pages fail (refunded) without a fetch. */
  unreachable?: Record<string, { error: string; message: string }>;
  /**
   * A crawl: why found URLs were not pages (shared/crawl/report.ts), its deadline, and the frontier
   * entry taken last as a page (its stream sequence and ordinal: the next step reads on after it).
   */
  crawl?: { report: ReportJson; deadline?: number; taken?: { seq: number; n: number } };
  /**
   * A map (websitepro `outputs: ["map"]`, kind `crawl`): its pages are fetched for links only (each
   * `x`); `slots` are URLs listed at most, priced per block of 1,000 (unitPrices.map). `sitemapUrls`:
   * the frontier's ordinals 2..sitemapUrls+1 came from page 0's sitemaps; `count`: URLs listed (set
   * at the end); `error`: why nothing could be listed (robots.txt).
   */
  map?: { sitemapUrls?: number; count?: number; error?: { error: string; message: string } };
}

/** The result key of the one ledger refund of a page set's unused slots. */
export const SLOTS_RESULT_KEY = '_slots';

export const isFinished = (j: Pick<JobRecord, 'status'>) => j.status === 'completed' || j.status === 'failed';
/** A result that failed and whose money is not back yet: whoever finds it next settles the job again. */
export const isUnrefunded = (r: Pick<ResultRecord, 'status' | 'refunded'>) => r.status === 'failed' && !r.refunded;

/** Published on `job.submitted.<service>` (JOBS stream), message id = jobId. The job itself is in the `jobs` bucket. */
export interface JobSubmitted {
  v: 1;
  jobId: string;
  service: ServiceName;
}

/** Published on `evt.job.<service>.<jobId>` (EVENTS stream) on every state change, for operators. */
export interface JobEvent {
  v: 1;
  jobId: string;
  service: ServiceName;
  walletId: string;
  status: JobStatus;
  /** What happened: created, processing, completed, failed, purged. */
  event: string;
  cost: number;
  refunded: number;
  at: number;
}

/** Published on a TASKS subject, one per result, message id `task:<jobId>:<resultKey>`. */
export interface Task {
  v: 1;
  jobId: string;
  service: ServiceName;
  resultKey: string;
  walletId: string;
  /** Where the worker writes its file, and under which object name. */
  store: string;
  objectName: string;
  expiresAt: number;
  /** Service-specific, from the service module's plan (e.g. url, browser, viewport, outputs). */
  params: Record<string, unknown>;
}

/**
 * Published on `result.<jobId>`; final ones with message id `outcome:<jobId>:<resultKey>`. A worker's
 * final outcome names the TASKS sequence of its task (`taskSeq`): the supervisor removes that message
 * when it records the outcome, so the wallet's share counts it finished at once, not at the ack.
 */
export type Outcome =
  | {
      v: 1;
      kind: 'done';
      jobId: string;
      resultKey: string;
      at: number;
      file?: StoredFile;
      extra?: Record<string, unknown>;
      taskSeq?: number;
    }
  | {
      v: 1;
      kind: 'failed';
      jobId: string;
      resultKey: string;
      at: number;
      error: string;
      message?: string;
      extra?: Record<string, unknown>;
      taskSeq?: number;
    }
  | { v: 1; kind: 'progress'; jobId: string; resultKey: string; at: number; progress: string }
  /** Not from a worker: a delivered result's stored file is missing (seen at download or by the supervisor's sweep). Message id `lost:<jobId>:<resultKey>`. */
  | { v: 1; kind: 'lost'; jobId: string; resultKey: string; at: number; message?: string };

export const objectName = (jobId: string, resultKey: string) => `${jobId}/${resultKey}`;
export const thumbName = (jobId: string, resultKey: string) => `${jobId}/${resultKey}.thumb.webp`;
export const taskMsgId = (jobId: string, resultKey: string) => `task:${jobId}:${resultKey}`;
export const outcomeMsgId = (jobId: string, resultKey: string) => `outcome:${jobId}:${resultKey}`;
export const lostMsgId = (jobId: string, resultKey: string) => `lost:${jobId}:${resultKey}`;

/** A worker's way of saying "this result cannot be produced" with one of the documented errors. */
export class TaskFailure extends Error {
  readonly error: string;
  readonly extra?: Record<string, unknown>;
  constructor(error: string, message?: string, extra?: Record<string, unknown>) {
    super(message ?? error);
    this.error = error;
    this.extra = extra;
    this.name = 'TaskFailure';
  }
}
