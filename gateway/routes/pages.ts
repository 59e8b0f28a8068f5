// Reading page-set jobs (websitepro `urls`): their results page by page, a result's file, and the zip
// of every page. The results are in PAGES (shared/jobs/pages.ts), the files under
// `<jobId>/<pageKey>/<output>` in the results store; the job document holds counts only.
import { Readable } from 'node:stream';
import { Type as T } from '@sinclair/typebox';
import { Objm, type ObjectResult } from '@nats-io/obj';
import yazl from 'yazl';
import type { GatewayContext, Reply, Route } from '../route.ts';
import { ApiError } from '../../shared/errors.ts';
import { objectName, type JobRecord } from '../../shared/protocol/jobs.ts';
import { pageOfResults, pagesReader, publicJobOf, publicJobText } from '../../shared/jobs/page-results.ts';
import { readPageResults, RESULTS_INLINE } from '../../shared/jobs/pages.ts';
import { zipName } from '../../shared/crawl/keys.ts';
import { Result } from '../../shared/schemas/api.ts';
import { reportLostFile } from '../../shared/jobs/lost.ts';

/** The public job as GET /v1/jobs/{id} shows it: a page set with its first results inline. */
export async function jobDoc(ctx: GatewayContext, job: JobRecord) {
  return publicJobOf(await pagesReader(ctx.nc, ctx.js), job, ctx.baseUrl);
}

/** The job as GET /v1/jobs/{id} answers it: its inline results as text kept per job (shared/jobs/page-results.ts publicJobText). */
export async function jobDocText(ctx: GatewayContext, job: JobRecord) {
  return publicJobText(await pagesReader(ctx.nc, ctx.js), job, ctx.baseUrl);
}

/** GET /v1/jobs/:id/results (the route; `ownJob` is the caller's check of the job). */
export function resultsRoute(ownJob: (ctx: GatewayContext, id: string, walletId: string) => Promise<JobRecord>): Route {
  return {
    method: 'GET',
    path: '/v1/jobs/:id/results',
    auth: true,
    summary: "A job's results, a page at a time",
    description: `Every result of the job, ${RESULTS_INLINE} at most per answer, in the order they were recorded. Start without \`after\` (or with the job's \`resultsNext\`) and go on with each answer's \`next\` until it is null. For a page set (websitepro \`urls\`), whose job shows only its first ${RESULTS_INLINE} results.`,
    tags: ['jobs'],
    query: T.Object(
      {
        after: T.Optional(
          T.String({ maxLength: 64, description: 'A cursor: `resultsNext` of the job, or `next` of the previous answer.' }),
        ),
      },
      { additionalProperties: true },
    ),
    responses: {
      200: {
        description: 'Results and the cursor of the next ones (null at the end).',
        schema: T.Object({ results: T.Array(T.Ref(Result)), next: T.Union([T.String(), T.Null()]) }),
      },
    },
    errors: ['bad_request', 'not_found', 'service_unavailable'],
    async handler(req, ctx) {
      const job = await ownJob(ctx, req.params.id ?? '', req.auth!.walletId);
      const after = typeof req.query.after === 'string' ? req.query.after : undefined;
      return { json: await pageOfResults(await pagesReader(ctx.nc, ctx.js), job, ctx.baseUrl, after) };
    },
  };
}

async function* chunks(o: ObjectResult): AsyncIterable<Uint8Array> {
  for await (const c of o.data as unknown as AsyncIterable<Uint8Array>) yield c;
  const err = await o.error;
  if (err) throw err;
}

/** A page set's result file, found by its object name (the document lists none). */
export async function pageResultFile(ctx: GatewayContext, job: JobRecord, key: string, disposition: (f: string) => string): Promise<Reply> {
  const os = await new Objm(ctx.nc).open('results');
  const o = await os.get(objectName(job.id, key));
  if (!o) throw new ApiError('not_found', 'no such delivered result in this job (a failed one has no file; see its result)');
  return {
    stream: chunks(o),
    length: o.info.size,
    headers: {
      'content-type': o.info.description || 'application/octet-stream',
      'content-disposition': disposition(o.info.metadata?.filename ?? key.replace(/\//g, '_')),
      'cache-control': 'private, no-store',
    },
  };
}

/**
 * The zip of a page set: every delivered file as `<pageKey>.<ext>` (the download's extension),
 * PAGES read a page of results at a time while the zip streams, each object read when reached.
 */
export function pageSetZip(ctx: GatewayContext, job: JobRecord): AsyncIterable<Uint8Array> {
  const zip = new yazl.ZipFile();
  const objm = new Objm(ctx.nc);
  const mtime = new Date(job.finishedAt ?? job.createdAt);
  void (async () => {
    const r = await pagesReader(ctx.nc, ctx.js);
    let from: number | null = 1;
    while (from !== null) {
      const { messages, next } = await readPageResults(r.js, r.jsm, job.id, from, RESULTS_INLINE);
      for (const m of messages) {
        for (const res of m.results) {
          const f = res.file;
          if (res.status !== 'done' || !f) continue;
          const flat = m.pageKey.replace(/\//g, '_');
          const ext = f.filename.startsWith(`${flat}.`) ? f.filename.slice(flat.length + 1) : (f.filename.split('.').pop() ?? 'bin');
          zip.addReadStreamLazy(zipName(m.pageKey, ext), { compress: true, mtime }, (cb) => {
            objm
              .open(f.store)
              .then((os) => os.get(f.name))
              .then((o) => {
                if (!o) {
                  void reportLostFile(ctx.nc, job.id, res.key, 'the stored file was not found while zipping').catch(() => {});
                  throw new Error(`object ${f.name} is missing`);
                }
                cb(null, Readable.from(chunks(o)));
              })
              .catch((e: unknown) => cb(e as Error, undefined as never));
          });
        }
      }
      from = next;
    }
  })()
    .catch((err) => {
      ctx.log.warn({ err, jobId: job.id }, 'zip of a page set broke off');
      (zip.outputStream as unknown as { destroy(e: Error): void }).destroy(err as Error);
    })
    .finally(() => zip.end());
  return zip.outputStream as unknown as AsyncIterable<Uint8Array>;
}
