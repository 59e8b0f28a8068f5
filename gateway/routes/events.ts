// GET /v1/jobs/{id}/events: the job's state changes and progress lines as Server-Sent Events,
// written as they happen (uWebSockets.js chunked writes, nothing buffered), ending with the job.
import type { Reply, Route } from '../route.ts';
import { ApiError } from '../../shared/errors.ts';
import { jobEventStream, decodeCursor, findJob, openStreamsOf } from '../jobs/index.ts';
import { pagesReader } from '../../shared/jobs/page-results.ts';

const encoder = new TextEncoder();

async function* bytes(chunks: AsyncIterable<string>, end: () => void): AsyncIterable<Uint8Array> {
  try {
    for await (const c of chunks) yield encoder.encode(c);
  } finally {
    end();
  }
}

export const eventsRoute: Route = {
  method: 'GET',
  path: '/v1/jobs/:id/events',
  auth: true,
  summary: 'Follow a job as Server-Sent Events',
  description: [
    '`text/event-stream`. Events: `status` (`{id, status, at}`: the job moved to queued, processing, completed or failed), ',
    '`progress` (`{key, progress}`: a progress line of a pending result), `result` (a Result that is now done or failed), ',
    'and last `job` (the final Job document), after which the stream ends. The first events describe the job as it is now. ',
    'Every event has an `id`; send the last one back as `Last-Event-ID` to resume on any gateway: only what changed since is sent ',
    '(a resume after the final `job` event answers 204, which stops EventSource reconnecting). ',
    'A comment line (`: heartbeat`) is sent every 15 s so proxies keep the connection open. ',
    'Open streams are bounded per key and per client address on each gateway: one more answers `429 rate_limited` ',
    'with `limit` (`eventStreamsPerKey` or `eventStreamsPerAddress`) and `max`.',
  ].join(''),
  tags: ['jobs'],
  requestHeaders: { 'Last-Event-ID': 'The `id` of the last event received, to resume after a disconnect.' },
  responses: {
    200: { description: 'The event stream.', contentType: 'text/event-stream' },
    204: { description: 'Resumed after the final `job` event: nothing more will come.' },
  },
  errors: ['bad_request', 'not_found', 'service_unavailable', 'rate_limited'],
  async handler(req, ctx): Promise<Reply> {
    const cur = await findJob(ctx.nc, ctx.kv.jobs, req.auth!.walletId, req.params.id ?? '');
    if (!cur) throw new ApiError('not_found', 'no such job');
    const last = req.headers['last-event-id'];
    const seen = last ? decodeCursor(last, cur.job.results.length) : null;
    if (last && !seen) throw new ApiError('bad_request', 'Last-Event-ID is not the id of an event of this job');
    if (seen?.ended) return { status: 204, body: '', headers: {} };
    // open streams per key and address, bounded (stream-cap.ts); counted until the stream ends or
    // the client goes away, whichever comes first
    const end = openStreamsOf(ctx.config).open(req.auth!.keyHash, req.addressGroup);
    req.signal.addEventListener('abort', end, { once: true });
    const stream = jobEventStream({
      kv: ctx.kv.jobs,
      job: cur.job,
      revision: cur.revision,
      baseUrl: ctx.baseUrl,
      seen,
      heartbeatMs: ctx.config.server.eventsHeartbeatSeconds * 1000,
      signal: req.signal,
      ...(cur.job.pageSet ? { pages: await pagesReader(ctx.nc, ctx.js) } : {}),
    });
    return {
      stream: bytes(stream, end),
      headers: { 'content-type': 'text/event-stream; charset=utf-8', 'cache-control': 'no-cache, no-store', 'x-accel-buffering': 'no' },
    };
  },
};
