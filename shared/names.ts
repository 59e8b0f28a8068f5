// Every NATS subject, stream, consumer, bucket and object-store name of the system.
// Nothing else in the code base spells one of these strings.

export const SERVICES = ['websitepro', 'shots', 'labs'] as const;
export type ServiceName = (typeof SERVICES)[number];
export const isService = (s: string): s is ServiceName => (SERVICES as readonly string[]).includes(s);

export const STREAMS = {
  jobs: 'JOBS',
  tasks: 'TASKS',
  results: 'RESULTS',
  ledger: 'LEDGER',
  events: 'EVENTS',
  /** The server's max-deliveries advisories of TASKS, kept until the supervisor has acted on them. */
  lostTasks: 'LOST_TASKS',
  /**
   * Finished job documents whose results are deleted, moved out of the `jobs` bucket (shared/jobs/archive.ts):
   * one subject for all, so nats-server keeps no per-job index for them; read by sequence.
   */
  jobsArchive: 'JOBS_ARCHIVE',
  /** A crawl's admitted URLs, one subject per crawl (shared/crawl/frontier.ts, which creates it). */
  crawlFrontier: 'CRAWL_FRONTIER',
  /** The final results of page-set jobs (batch, crawl): one message per page, on `page.<jobId>` (shared/jobs/pages.ts). */
  pages: 'PAGES',
} as const;

export const BUCKETS = {
  keys: 'keys',
  jobs: 'jobs',
  topups: 'topups',
  limits: 'limits',
  catalogue: 'catalogue',
  datasets: 'datasets',
  /** Idempotency-Key answers of job and top-up creations, per wallet, kept 24 h (gateway/idempotency.ts). */
  idempotency: 'idempotency',
  /** Throwaway keys of labs clean-ups not yet done, so another prober finishes them (actors/relay-prober/cleanups.ts). */
  labsCleanups: 'labs_cleanups',
  /** Invoices of the dev Lightning backend (created by that backend only; never in production). */
  devInvoices: 'dev_invoices',
  /** A crawl's visited set (uniqueKey hashes) and frontier cursor (shared/crawl/frontier.ts, which creates it). */
  crawlVisited: 'crawl_visited',
  /** Fetched pages, for websitepro `maxAge` (actors/converter/cache.ts); bounded by websitepro.cacheMaxBytes / cacheMaxAgeSeconds. */
  fetchCache: 'fetch_cache',
} as const;

export const OBJECT_STORES = {
  results: 'results',
  reports: 'reports',
} as const;

/** Subject tokens may not contain '.', '*', '>' or whitespace. */
export function token(s: string): string {
  return s.replace(/[.*>\s]/g, '_');
}

/** A kind subject without its `task.` (`task.shots.chromium.156` → `shots.chromium.156`). */
const kindTail = (kind: string) => (kind.startsWith('task.') ? kind.slice(5) : kind);

export const subjects = {
  // JOBS stream
  jobsAll: 'job.submitted.>',
  jobSubmitted: (service: ServiceName) => `job.submitted.${service}`,

  // TASKS stream (work queue): one message per result to produce
  tasksAll: 'task.>',
  taskWebsitepro: 'task.websitepro',
  taskLabs: 'task.labs',
  taskShots: (browserId: string, version: string) => `task.shots.${token(browserId)}.${token(version)}`,
  taskShotsAll: 'task.shots.>',
  /** shots options.compare: one task per pair of screenshots, published once both are stored. */
  taskCompare: 'task.compare',
  // The subjects above name a worker kind (what a plan records on a result). On the wire a task
  // carries its wallet: `task.w.<wallet>.<kind>` for one workers take, `task.w.<wallet>.held.<kind>`
  // for one past the wallet's share (no worker's filter reaches it; shared/jobs/share.ts). One
  // filter, `task.w.<wallet>.>`, counts a wallet's tasks in the stream itself.
  /** The subject a wallet's task of this kind is published on. */
  taskOfWallet: (kind: string, walletId: string) => `task.w.${token(walletId)}.${kindTail(kind)}`,
  /** The subject a wallet's task of this kind waits on while the wallet is over its share. */
  taskHeld: (kind: string, walletId: string) => `task.w.${token(walletId)}.held.${kindTail(kind)}`,
  /** Every task of one wallet, taken or held. */
  tasksOfWallet: (walletId: string) => `task.w.${token(walletId)}.>`,
  /** Every held task of one wallet. */
  tasksHeldOfWallet: (walletId: string) => `task.w.${token(walletId)}.held.>`,
  /** Every held task of every wallet. */
  tasksHeldAll: 'task.w.*.held.>',
  /**
   * A worker consumer's filters for a kind: its tasks of every wallet, and the kind subject itself
   * (tasks published before the wallet token, and tests that publish a task by hand).
   */
  taskFilters: (kind: string) => [kind, `task.w.*.${kindTail(kind)}`],

  // RESULTS stream: outcomes reported by workers
  resultsAll: 'result.>',
  result: (jobId: string) => `result.${jobId}`,
  /** Progress lines: core NATS, no stream stores them (a lost line is only a display). */
  progressAll: 'progress.>',
  progress: (jobId: string) => `progress.${jobId}`,

  // CRAWL_FRONTIER stream: one subject per crawl
  crawlFrontierAll: 'frontier.>',
  crawlFrontier: (jobId: string) => `frontier.${jobId}`,
  // PAGES stream: a page-set job's results, one message per recorded page
  pagesAll: 'page.>',
  page: (jobId: string) => `page.${jobId}`,

  // JOBS_ARCHIVE stream: every archived job document on one subject
  jobArchived: 'archive.job',

  // LEDGER stream: one subject per wallet
  ledgerAll: 'ledger.>',
  ledger: (walletId: string) => `ledger.${walletId}`,

  // EVENTS stream: state changes for operators and long polls
  eventsAll: 'evt.>',
  evtJob: (service: ServiceName, jobId: string) => `evt.job.${service}.${jobId}`,
  evtJobAll: 'evt.job.>',
  evtTopup: (topupId: string) => `evt.topup.${topupId}`,
  evtTopupAll: 'evt.topup.>',

  // request/reply service endpoints (NATS micro services)
  wallet: {
    charge: 'wallet.charge',
    refund: 'wallet.refund',
    chargeOf: 'wallet.charge.of',
    balance: 'wallet.balance',
    transactions: 'wallet.transactions',
    grant: 'wallet.grant',
    topupCreate: 'wallet.topup.create',
    topupGet: 'wallet.topup.get',
    topupPay: 'wallet.topup.pay',
    audit: 'wallet.audit',
    reconcile: 'wallet.reconcile',
  },
  browser: {
    renderPdf: 'browser.render.pdf',
    renderHtml: 'browser.render.html',
  },
  jobs: {
    get: 'jobs.get',
    list: 'jobs.list',
    /** Counts from the supervisor's projection (admin status), no document read. */
    stats: 'jobs.stats',
  },

  // JetStream advisories the supervisor acts on (stored in the LOST_TASKS stream)
  advisoryMaxDeliveries: (stream: string, consumer: string) => `$JS.EVENT.ADVISORY.CONSUMER.MAX_DELIVERIES.${stream}.${consumer}`,
} as const;

export const CONSUMERS = {
  supervisorJobs: 'job-supervisor',
  supervisorResults: 'job-supervisor-results',
  supervisorLost: 'job-supervisor-lost',
  converter: 'converter',
  relayProber: 'relay-prober',
  compare: 'compare',
  shots: (browserId: string, version: string) => `shots-${token(browserId)}-${token(version)}`,
} as const;

/** Names of the NATS micro services (`nats micro ls`). */
export const MICRO = {
  wallet: 'wallet',
  browserPool: 'browser-pool',
  jobSupervisor: 'job-supervisor',
} as const;

/** Keys of the catalogue bucket: `<service>.<instanceId>`. */
export const catalogueKey = (service: ServiceName, instanceId: string) => `${service}.${token(instanceId)}`;
