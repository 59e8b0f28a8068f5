// Quote and job creation for every service module, and reading jobs: one job (long poll), a
// wallet's recent jobs, result downloads and the shots zip.
import { reportLostFile } from '../../shared/jobs/lost.ts';
import { Readable } from 'node:stream';
import { Type as T } from '@sinclair/typebox';
import { Objm, type ObjectResult } from '@nats-io/obj';
import yazl from 'yazl';
import type { GatewayContext, Reply, Route, RouteRequest } from '../route.ts';
import { idempotent, idempotencyKeyOf, fingerprintOf, IDEMPOTENCY_DOC } from '../idempotency.ts';
import { newId } from '../../shared/ids.ts';
import { ApiError, type ErrorCode } from '../../shared/errors.ts';
import { SERVICES, type ServiceName } from '../../shared/names.ts';
import { SERVICE_MODULES } from '../../shared/services/index.ts';
import { jobsService, LIST_MAX } from '../../shared/protocol/job-supervisor.ts';
import { readBalance } from '../balances.ts';
import { isFinished, type JobRecord, type ResultRecord } from '../../shared/protocol/jobs.ts';
import {
  quoteJob,
  submitJob,
  toPublicJob,
  isExpired,
  jobWatchOf,
  reportPageReply,
  wantsReportHtml,
  jobMayAppearMs,
  findJob,
  type JobDeps,
  retryCreation,
} from '../jobs/index.ts';
import { Quote, JobWithBalance, Job } from '../../shared/schemas/api.ts';
import { jobDoc, jobDocText, pageResultFile, pageSetZip, resultsRoute } from './pages.ts';

/** The 400-class codes each service's body and plan can answer with. */
const SERVICE_ERRORS: Record<ServiceName, ErrorCode[]> = {
  websitepro: ['bad_request', 'bad_url', 'no_output', 'bad_webhook'],
  shots: ['bad_request', 'bad_url', 'unknown_browser', 'bad_viewport', 'bad_webhook'],
  labs: ['bad_request', 'bad_relay_url', 'bad_port', 'bad_webhook', 'no_checks'],
};
/** Codes of the network prechecks run before the charge. */
const PRECHECK_ERRORS: Record<ServiceName, ErrorCode[]> = {
  websitepro: ['blocked_address', 'unreachable'],
  shots: ['blocked_address', 'unreachable'],
  labs: ['blocked_address', 'unreachable', 'relay_busy'],
};

const WaitQuery = T.Object(
  {
    wait: T.Optional(
      T.Integer({
        minimum: 0,
        description: 'Seconds (0 to 25) to hold the answer until the job is finished; larger values are capped at 25.',
      }),
    ),
  },
  { additionalProperties: true },
);

const deps = (ctx: GatewayContext): JobDeps => ({
  nc: ctx.nc,
  js: ctx.js,
  config: ctx.config,
  log: ctx.log,
  kv: ctx.kv,
  baseUrl: ctx.baseUrl,
});
const waitMs = (ctx: GatewayContext, wait: unknown) => Math.min(Number(wait ?? 0), ctx.config.limits.maxWaitSeconds) * 1000;
const walletOf = (req: RouteRequest) => req.auth!.walletId;

function serviceRoutes(service: ServiceName): Route[] {
  const mod = SERVICE_MODULES[service];
  return [
    {
      method: 'POST',
      path: `/v1/${service}/quote`,
      auth: true,
      summary: `Quote a ${service} job`,
      description:
        'Validates the body exactly as job creation does and prices it. Free: nothing is fetched, charged or created' +
        (service === 'labs' ? '; the relay is not contacted.' : '.'),
      tags: [service],
      body: mod.body,
      bodyErrorCode: (e) => mod.errorCode(e),
      responses: { 200: { description: 'The price of the job and whether the balance covers it.', schema: Quote } },
      errors: [...SERVICE_ERRORS[service], 'service_unavailable'],
      async handler(req, ctx) {
        return { json: await quoteJob(deps(ctx), service, req.body, walletOf(req)) };
      },
    },
    {
      method: 'POST',
      path: `/v1/${service}/jobs`,
      auth: true,
      rateLimit: 'jobs',
      summary: `Create a ${service} job`,
      description:
        'Charges the whole job, queues it and answers with the job and the new balance. With `wait`, the answer is held until the job is finished or the time is over. Every result that is not delivered is refunded.',
      tags: [service],
      body: mod.body,
      bodyErrorCode: (e) => mod.errorCode(e),
      query: WaitQuery,
      responses: {
        201: { description: 'The job (finished if `wait` allowed it) and the balance after the charge.', schema: JobWithBalance },
      },
      requestHeaders: { 'Idempotency-Key': IDEMPOTENCY_DOC },
      errors: [
        ...SERVICE_ERRORS[service],
        ...PRECHECK_ERRORS[service],
        'insufficient_funds',
        'rate_limited',
        'busy',
        'service_unavailable',
        'idempotency_key_in_use',
        'idempotency_key_reused',
      ],
      async handler(req, ctx) {
        const walletId = walletOf(req);
        const path = `/v1/${service}/jobs`;
        return idempotent(
          {
            nc: ctx.nc,
            walletId,
            key: idempotencyKeyOf(req.headers),
            maxRecords: ctx.config.limits.idempotencyKeysPerDay,
            fingerprint: fingerprintOf('POST', path, req.body),
            jobId: newId('job'),
            staleMs: jobMayAppearMs(ctx.config),
            answerJob: (id) => jobAnswer(ctx, walletId, id),
          },
          async (jobId) => {
            // asked again, same job id, while NATS fails over (gateway/jobs/retry.ts)
            const created = await retryCreation(() => submitJob(deps(ctx), service, req.body, walletId, req.limited, jobId), {
              signal: req.signal,
              budgetMs: ctx.config.server.failoverRetryMs,
              chargeAgain: service !== 'labs', // the dataset fee: gateway/jobs/retry.ts
            });
            let { job, balance } = created;
            const ms = waitMs(ctx, req.query.wait);
            if (ms > 0) {
              // the job exists and is charged from here: a failed wait still answers it (and an
              // Idempotency-Key keeps that answer), never an error a client would retry
              job = await jobWatchOf(ctx.kv.jobs, ctx.log)
                .wait(job, ms, req.signal)
                .catch(() => job);
              // refunds may have come back while we waited
              if (job.refunded > 0) balance = await readBalance(ctx.nc, walletId).catch(() => balance);
            }
            return { status: 201, json: { job: await jobDoc(ctx, job), balance } };
          },
        );
      },
    },
  ];
}

/**
 * A job created under an Idempotency-Key whose first answer was lost (its gateway died): answered as
 * it is now, from the archive too (a result retention shorter than the key's 24 h can archive it
 * first: not found, it would be created and charged again).
 */
async function jobAnswer(ctx: GatewayContext, walletId: string, jobId: string): Promise<Reply | null> {
  const cur = await findJob(ctx.nc, ctx.kv.jobs, walletId, jobId);
  if (!cur) return null;
  return { status: 201, json: { job: await jobDoc(ctx, cur.job), balance: await readBalance(ctx.nc, walletId) } };
}

/**
 * The job if it exists and belongs to the caller; another wallet's job is "not found", and so is one
 * whose record was deleted at the end of its retention (retention.jobRecords after its results
 * expired): the spec gives GET /v1/jobs/{id} only 404, and 410 means a deleted result.
 */
async function ownJob(ctx: GatewayContext, req: RouteRequest): Promise<JobRecord> {
  return ownJobById(ctx, req.params.id ?? '', walletOf(req));
}
async function ownJobById(ctx: GatewayContext, id: string, walletId: string): Promise<JobRecord> {
  const cur = await findJob(ctx.nc, ctx.kv.jobs, walletId, id);
  if (!cur)
    throw new ApiError(
      'not_found',
      `no such job (a job's record is kept ${Math.round(ctx.config.retention.jobRecords / 86400)} days after its results expired)`,
    );
  return cur.job;
}

async function openObject(ctx: GatewayContext, store: string, name: string): Promise<ObjectResult | null> {
  const os = await new Objm(ctx.nc).open(store);
  return os.get(name);
}

/** The object's bytes as they arrive; a broken read surfaces as an error after the last chunk. */
async function* objectChunks(o: ObjectResult): AsyncIterable<Uint8Array> {
  for await (const chunk of o.data as unknown as AsyncIterable<Uint8Array>) yield chunk;
  const err = await o.error;
  if (err) throw err;
}

/** `attachment` with an ASCII fallback and the exact UTF-8 name (RFC 6266). */
export function contentDisposition(filename: string): string {
  const ascii = filename.replace(/[^\x20-\x7e]/g, '_').replace(/["\\]/g, '_');
  return `attachment; filename="${ascii}"; filename*=UTF-8''${encodeURIComponent(filename)}`;
}

function gone(job: JobRecord): ApiError {
  return new ApiError(
    'expired',
    `the results of this job were deleted at the end of their retention (${new Date(job.expiresAt).toISOString()})`,
  );
}

const jobRoutes: Route[] = [
  {
    method: 'GET',
    path: '/v1/jobs',
    auth: true,
    summary: 'Recent jobs of this key',
    description:
      'Newest first; jobs whose record passed its retention are no longer listed. 503 `service_unavailable` (with `Retry-After`) while the list is rebuilt or catching up after a restart, never a partial list.',
    tags: ['jobs'],
    query: T.Object({ limit: T.Optional(T.Integer({ minimum: 1, maximum: LIST_MAX, default: 30 })) }, { additionalProperties: true }),
    responses: { 200: { description: 'The jobs.', schema: T.Object({ jobs: T.Array(T.Ref(Job)) }) } },
    errors: ['bad_request', 'service_unavailable'],
    async handler(req, ctx) {
      const { jobs } = await jobsService.list(ctx.nc, { walletId: walletOf(req), limit: req.query.limit ?? 30 });
      const now = Date.now();
      return { json: { jobs: jobs.map((j) => toPublicJob(j, ctx.baseUrl, now)) } };
    },
  },
  {
    method: 'GET',
    path: '/v1/jobs/:id',
    auth: true,
    summary: 'One job',
    description:
      'With `wait`, the answer is held until the job is finished or the time is over (long polling). A job whose record passed its retention (`retention.jobRecords` after its results expired) answers 404 `not_found`. A job whose results expired is kept in the archive of finished jobs, which a job-supervisor reads: with none running, or while a supervisor that just started is still reading the archive, such a job answers 503 `service_unavailable` (with `Retry-After` in the second case), never 404.',
    tags: ['jobs'],
    query: WaitQuery,
    responses: { 200: { description: 'The job and the current balance.', schema: JobWithBalance } },
    errors: ['bad_request', 'not_found', 'service_unavailable'],
    async handler(req, ctx) {
      const first = await ownJob(ctx, req);
      const ms = waitMs(ctx, req.query.wait);
      if (ms <= 0 || isFinished(first)) {
        // the balance is read after the job (it holds every refund the record shows, below), beside
        // the job's results: two reads at once, not one after the other (the crawl bench's p99)
        const [job, balance] = await Promise.all([jobDocText(ctx, first), readBalance(ctx.nc, first.walletId)]);
        return { json: { job, balance } };
      }
      // A long poll reads the balance beside its wait, not after it: the read is taken after the
      // job was read, so it holds every ledger write acknowledged before the request (README
      // "NATS consistency") and every refund of this job the record read shows (a refund's ledger
      // write is acknowledged before the record marks it, actors/job-supervisor/steps.ts
      // settleJob). Refunds made during the wait are marked in the record too: when the job's
      // `refunded` moved, the balance is read again after the wait, so the answer still carries
      // the balance after them (README "Jobs"). A finish without a refund costs no round trip
      // between the watch's delivery and the answer.
      const early = readBalance(ctx.nc, first.walletId);
      early.catch(() => {}); // awaited below unless read again; its error is answered then
      const job = await jobWatchOf(ctx.kv.jobs, ctx.log).wait(first, ms, req.signal);
      const [doc, balance] = await Promise.all([
        jobDocText(ctx, job),
        job.refunded === first.refunded ? early : readBalance(ctx.nc, job.walletId),
      ]);
      return { json: { job: doc, balance } };
    },
  },
  {
    method: 'GET',
    path: '/v1/jobs/:id/results/:key',
    auth: true,
    summary: 'Download a result',
    description:
      'The file with its real content type, as an attachment. `thumb=1` (shots only) gives the WebP thumbnail instead. A `labs` report asked for with `format=html` or `Accept: text/html` (without `application/json`) comes as a readable page rendered from the same JSON; JSON stays the default.',
    tags: ['jobs'],
    query: T.Object(
      {
        thumb: T.Optional(T.Literal('1', { description: 'Only `1`; shots only.' })),
        format: T.Optional(
          T.Union([T.Literal('html'), T.Literal('json')], {
            description: '`labs` only: `html` renders the report as a page; `json` (default) the file.',
          }),
        ),
      },
      { additionalProperties: true },
    ),
    responses: {
      200: {
        description: 'The file (a labs report: JSON, or text/html when asked for).',
        contentType: '*/*',
        headers: { 'Content-Disposition': 'attachment; filename=...' },
      },
    },
    errors: ['bad_request', 'not_found', 'not_ready', 'expired', 'service_unavailable'],
    async handler(req, ctx) {
      const job = await ownJob(ctx, req);
      if (job.pageSet) {
        // a page set's results are not in its document: the file is found by its object name
        if (isExpired(job)) throw gone(job);
        return pageResultFile(ctx, job, req.params.key ?? '', contentDisposition);
      }
      const r: ResultRecord | undefined = job.results.find((x) => x.key === req.params.key);
      if (!r) throw new ApiError('not_found', 'no such result in this job');
      const thumb = req.query.thumb === '1';
      if (thumb && job.service !== 'shots') throw new ApiError('not_found', 'thumbnails exist only for shots results');
      if (r.status === 'pending') throw new ApiError('not_ready', 'the result is still being produced', undefined, { 'retry-after': '2' });
      if (isExpired(job)) throw gone(job);
      if (r.status !== 'done' || !r.file)
        throw new ApiError(
          'not_found',
          r.oneTime ? 'this result is a fee and has no file' : `the result was not delivered${r.error ? ` (${r.error})` : ''}`,
        );
      const f = thumb ? r.file.thumb : r.file;
      if (!f) throw new ApiError('not_found', 'this result has no thumbnail');
      const o = await openObject(ctx, r.file.store, f.name);
      if (!o) {
        // deleted between the check and the read: expiry won, or the store lost it
        if (isExpired(job, Date.now())) throw gone(job);
        if (!thumb) {
          // the store lost a delivered file: the supervisor checks and refunds the result (once)
          await reportLostFile(ctx.nc, job.id, r.key, 'the stored file was not found at download').catch((err) =>
            ctx.log.error({ err, jobId: job.id, resultKey: r.key }, 'lost result file not reported'),
          );
          throw new ApiError('not_found', 'the stored file of this result was lost; the result is refunded as worker_lost');
        }
        throw new ApiError('not_found', 'the thumbnail is not in the store');
      }
      if (job.service === 'labs' && wantsReportHtml(req.query.format, req.headers.accept))
        return reportPageReply(await readAll(objectChunks(o)));
      const filename = thumb ? r.file.filename.replace(/\.[^.]+$/, '') + '.thumb.webp' : r.file.filename;
      return {
        stream: objectChunks(o),
        length: o.info.size,
        headers: {
          'content-type': f.contentType,
          'content-disposition': contentDisposition(filename),
          'cache-control': 'private, no-store',
        },
      };
    },
  },
  {
    method: 'GET',
    path: '/v1/jobs/:id/zip',
    auth: true,
    summary: 'All screenshots of a completed shots job, or every page of a websitepro page set, as a zip',
    description:
      'shots: every screenshot. websitepro with `urls`: every delivered file as `<pageKey>.<ext>` (folders from the page path), read page by page while the zip streams. 409 `not_ready` (with `Retry-After`) while the job runs; 410 `expired` once its results passed their retention.',
    tags: ['jobs'],
    responses: { 200: { description: 'application/zip', contentType: 'application/zip' } },
    errors: ['not_found', 'not_ready', 'expired', 'service_unavailable'],
    async handler(req, ctx) {
      const job = await ownJob(ctx, req);
      if (job.service !== 'shots' && !job.pageSet)
        throw new ApiError('not_found', 'zips exist only for shots jobs and websitepro page sets');
      if (!isFinished(job)) throw new ApiError('not_ready', 'the job is not finished yet', undefined, { 'retry-after': '2' });
      if (isExpired(job)) throw gone(job);
      if (job.pageSet) {
        if (job.status !== 'completed') throw new ApiError('not_found', 'the job delivered no page');
        return {
          stream: pageSetZip(ctx, job),
          headers: {
            'content-type': 'application/zip',
            'content-disposition': contentDisposition(`${job.id}.zip`),
            'cache-control': 'private, no-store',
          },
        };
      }
      const files = job.results.filter((r) => r.status === 'done' && r.file);
      if (job.status !== 'completed' || !files.length) throw new ApiError('not_found', 'the job delivered no screenshots');
      const objm = new Objm(ctx.nc);
      const zip = new yazl.ZipFile();
      const used = new Set<string>();
      for (const r of files) {
        let name = r.file!.filename || r.key;
        for (let i = 2; used.has(name); i++) name = `${i}-${r.file!.filename}`;
        used.add(name);
        // lazily: each object is read from the store only when the zip writer reaches it
        zip.addReadStreamLazy(name, { compress: false, mtime: new Date(job.finishedAt ?? job.createdAt) }, (cb) => {
          objm
            .open(r.file!.store)
            .then((os) => os.get(r.file!.name))
            .then((o) => {
              if (!o) {
                // the zip is already streaming and breaks off; the lost result is refunded (shared/jobs/lost.ts)
                void reportLostFile(ctx.nc, job.id, r.key, 'the stored file was not found while zipping').catch(() => {});
                throw new Error(`object ${r.file!.name} is missing`);
              }
              cb(null, Readable.from(objectChunks(o)));
            })
            .catch((e: unknown) => cb(e, undefined as never));
        });
      }
      zip.end();
      return {
        stream: zip.outputStream as unknown as AsyncIterable<Uint8Array>,
        headers: {
          'content-type': 'application/zip',
          'content-disposition': contentDisposition(`${job.id}.zip`),
          'cache-control': 'private, no-store',
        },
      };
    },
  },
];

export const routes: Route[] = [...SERVICES.flatMap(serviceRoutes), ...jobRoutes, resultsRoute(ownJobById)];

/** A stored labs report in memory (reports are JSON of some kilobytes) to render it. */
async function readAll(chunks: AsyncIterable<Uint8Array>): Promise<Uint8Array> {
  const parts: Uint8Array[] = [];
  for await (const c of chunks) parts.push(c);
  return Buffer.concat(parts);
}
