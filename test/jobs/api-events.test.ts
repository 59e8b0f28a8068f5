// GET /v1/jobs/{id}/events: Server-Sent Events through the real gateway (uWebSockets.js), wallet,
// supervisor and test workers: events arrive while the job runs, the stream ends with the job,
// Last-Event-ID resumes without repeats, heartbeats, ownership and bad ids.
import t from 'tap';
import { startJobsApi } from './app.ts';
import { openSse } from '../helpers/sse.ts';

// Each test starts a system of its own and shares nothing with the others: four at a time (most of a
// test is waiting on nats-server: stream writes synced to disk, deliveries, the test worker).
t.jobs = 4;

t.test('a job streams its status, progress and result as they happen, ending with the job', async (t) => {
  const s = await startJobsApi(t);
  const { key } = await s.newWallet(1000);
  const c = await s.request('POST', '/v1/websitepro/jobs', { key, body: { url: `${s.targetUrl}/?behave=progress`, outputs: ['text'] } });
  t.equal(c.status, 201);
  const id = c.json.job.id;
  const sse = await openSse(`${s.url}/v1/jobs/${id}/events`, key);
  t.teardown(() => sse.close());
  t.equal(sse.status, 200);
  t.match(sse.headers.get('content-type'), /^text\/event-stream/);
  const first = await sse.until((e) => e.event === 'status');
  t.ok(['queued', 'processing'].includes(first.data.status), `first event tells the current status (${first.data.status})`);
  const progress = await sse.until((e) => e.event === 'progress');
  t.equal(progress.data.key, 'text');
  // not buffered: the progress line arrived while the job was still running
  const mid = await s.request('GET', `/v1/jobs/${id}`, { key });
  t.equal(mid.json.job.status, 'processing', 'the event came before the job finished');
  await sse.ended;
  const names = sse.events.map((e) => e.event);
  t.same(names.filter((n) => n === 'progress').length >= 2, true, `several progress lines: ${names}`);
  const result = sse.events.find((e) => e.event === 'result')!;
  t.match(result.data, { key: 'text', status: 'done' });
  t.match(result.data.url, new RegExp(`/v1/jobs/${id}/results/text$`));
  t.same(names.slice(-3), ['result', 'status', 'job'], 'the finish: result, status, then the job');
  t.equal(sse.events.at(-2)!.data.status, 'completed');
  const job = sse.events.at(-1)!.data;
  t.equal(job.id, id);
  t.equal(job.status, 'completed');
  t.equal(job.results[0].status, 'done');
  t.ok(
    sse.events.every((e) => typeof e.id === 'string' && e.id.length > 0),
    'every event has an id',
  );
  t.equal(new Set(sse.events.map((e) => e.id)).size, sse.events.length, 'ids are distinct');
});

t.test('a finished job: its state at once, then the job; the end resumes as 204', async (t) => {
  const s = await startJobsApi(t);
  const { key } = await s.newWallet(1000);
  const c = await s.request('POST', '/v1/websitepro/jobs?wait=20', {
    key,
    body: { url: `${s.targetUrl}/?behave.text=fail`, outputs: ['text', 'metadata'] },
  });
  t.equal(c.json.job.status, 'completed');
  const sse = await openSse(`${s.url}/v1/jobs/${c.json.job.id}/events`, key);
  await sse.ended;
  t.same(
    sse.events.map((e) => e.event),
    ['result', 'result', 'status', 'job'],
  );
  t.same(
    sse.events
      .slice(0, 2)
      .map((e) => [e.data.key, e.data.status])
      .sort(),
    [
      ['metadata', 'done'],
      ['text', 'failed'],
    ],
  );
  t.equal(sse.events[1]!.data.refunded !== undefined, true);
  const again = await fetch(`${s.url}/v1/jobs/${c.json.job.id}/events`, {
    headers: { authorization: `Bearer ${key}`, 'last-event-id': sse.events.at(-1)!.id! },
  });
  t.equal(again.status, 204, 'nothing more after the final job event');
});

t.test('Last-Event-ID resumes: nothing seen is repeated, nothing missed is lost', async (t) => {
  const s = await startJobsApi(t);
  const { key } = await s.newWallet(1000);
  const c = await s.request('POST', '/v1/websitepro/jobs', {
    key,
    body: { url: `${s.targetUrl}/?behave.text=slow&behave.html=progress`, outputs: ['text', 'html'] },
  });
  const url = `${s.url}/v1/jobs/${c.json.job.id}/events`;
  const a = await openSse(url, key);
  const seen = await a.until((e) => e.event === 'status' && e.data.status === 'processing');
  a.close();
  const lastId = a.events.at(-1)!.id!;
  t.equal(a.events.at(-1), seen, 'cut right after the processing status');
  const b = await openSse(url, key, { 'last-event-id': lastId });
  await b.ended;
  const names = b.events.map((e) => e.event);
  t.notOk(
    b.events.some((e) => e.event === 'status' && e.data.status === 'processing'),
    `processing not repeated: ${names}`,
  );
  t.same(
    b.events
      .filter((e) => e.event === 'result')
      .map((e) => e.data.key)
      .sort(),
    ['html', 'text'],
    'both results after the cut',
  );
  t.same(names.slice(-2), ['status', 'job']);
  t.equal(b.events.at(-1)!.data.status, 'completed');

  // resuming from a cut after one result: only the other one comes
  const firstResult = b.events.findIndex((e) => e.event === 'result');
  const cut = b.events[firstResult]!;
  const d = await openSse(url, key, { 'last-event-id': cut.id! });
  await d.ended;
  t.same(
    d.events.filter((e) => e.event === 'result').map((e) => e.data.key),
    b.events.filter((e, i) => e.event === 'result' && i > firstResult).map((e) => e.data.key),
  );
  t.same(d.events.map((e) => e.event).slice(-2), ['status', 'job']);
});

t.test('heartbeat comments keep a quiet stream open', async (t) => {
  const s = await startJobsApi(t, { server: { eventsHeartbeatSeconds: 0.2 } });
  const { key } = await s.newWallet(1000);
  const c = await s.request('POST', '/v1/websitepro/jobs', { key, body: { url: `${s.targetUrl}/?behave=hang`, outputs: ['text'] } });
  const sse = await openSse(`${s.url}/v1/jobs/${c.json.job.id}/events`, key);
  t.teardown(() => sse.close());
  await new Promise<void>((resolve) => {
    const iv = setInterval(() => {
      if (sse.comments.length >= 2) {
        clearInterval(iv);
        resolve();
      }
    }, 50);
  });
  t.same([...new Set(sse.comments)], ['heartbeat']);
  t.notOk(
    sse.events.some((e) => e.event === 'job'),
    'the hanging job has not ended',
  );
});

t.test('errors: no key, another key, unknown job, a Last-Event-ID that is not ours', async (t) => {
  const s = await startJobsApi(t);
  const { key } = await s.newWallet(1000);
  const other = await s.newWallet(0);
  const c = await s.request('POST', '/v1/websitepro/jobs?wait=20', { key, body: { url: s.targetUrl, outputs: ['text'] } });
  const path = `/v1/jobs/${c.json.job.id}/events`;
  t.equal((await s.request('GET', path)).json.error.code, 'unauthorized');
  const o = await s.request('GET', path, { key: other.key });
  t.equal(o.status, 404);
  t.equal(o.json.error.code, 'not_found');
  t.equal((await s.request('GET', '/v1/jobs/job_nope/events', { key })).status, 404);
  for (const bad of ['garbage', '12.cdd', '12.x', '-1.cd']) {
    const r = await s.request('GET', path, { key, headers: { 'last-event-id': bad } });
    t.equal(r.status, 400, `Last-Event-ID ${bad}`);
    t.equal(r.json.error.code, 'bad_request');
  }
});
