// Issue 44 item 4: an event stream (GET /v1/jobs/{id}/events) registers with the gateway's one
// shared watch of the `jobs` bucket, as long polls do, instead of making a JetStream consumer of its
// own: 5,000 open streams cost the server a bounded number of consumers, and each still ends with the
// job. Before, every stream was a consumer of its own (5,000 of them).
import t from 'tap';
import http from 'node:http';
import { jetstreamManager } from '@nats-io/jetstream';
import { startJobsApi } from './app.ts';
import { BUCKETS } from '../../shared/names.ts';
import { publishOutcome } from '../../shared/worker.ts';

const STREAMS_OPEN = 5000;

t.test('5,000 open event streams: one watch consumer on the jobs bucket, every stream ends with the job', async (t) => {
  const s = await startJobsApi(
    t,
    { server: { keyRequestsPerMinute: 1_000_000, eventStreamsPerKey: 10_000, eventStreamsPerAddress: 10_000 } },
    { workers: false },
  );
  const { key } = await s.newWallet(1000);
  const c = await s.request('POST', '/v1/websitepro/jobs', { key, body: { url: s.targetUrl, outputs: ['metadata'] } });
  t.equal(c.status, 201);
  const id = c.json.job.id as string;
  const jsm = await jetstreamManager(s.nc);
  const consumers = async () => (await jsm.streams.info(`KV_${BUCKETS.jobs}`)).state.consumer_count;
  const before = await consumers();

  const agent = new http.Agent({ keepAlive: false, maxSockets: Infinity });
  t.teardown(() => agent.destroy());
  const open = () =>
    new Promise<{ started: Promise<void>; ended: Promise<string> }>((resolve, reject) => {
      const rq = http.get(`${s.url}/v1/jobs/${id}/events`, { agent, headers: { authorization: `Bearer ${key}` } }, (res) => {
        let text = '';
        let started!: () => void;
        const startedP = new Promise<void>((r) => {
          started = r;
        });
        res.setEncoding('utf8');
        res.on('data', (d: string) => {
          text += d;
          if (text.includes('event: status')) started();
        });
        resolve({ started: startedP, ended: new Promise((r) => res.on('end', () => r(text))) });
      });
      rq.on('error', reject);
    });
  const streams: { started: Promise<void>; ended: Promise<string> }[] = [];
  for (let i = 0; i < STREAMS_OPEN; i += 250) {
    const batch = await Promise.all(Array.from({ length: Math.min(250, STREAMS_OPEN - i) }, open));
    await Promise.all(batch.map((b) => b.started));
    streams.push(...batch);
  }
  t.equal(streams.length, STREAMS_OPEN, 'every stream open and told the current status');
  const during = await consumers();
  t.ok(during - before <= 1, `at most one consumer more on the jobs bucket for ${STREAMS_OPEN} open streams (${before} → ${during})`);

  // the result's outcome, as a worker reports it: every stream follows the job to its end
  await publishOutcome(s.nc, { v: 1, kind: 'done', jobId: id, resultKey: 'metadata', at: Date.now() });
  const texts = await Promise.all(streams.map((x) => x.ended));
  t.equal(texts.filter((x) => x.includes('event: job')).length, STREAMS_OPEN, 'every stream ended with the job event');
  t.ok((await consumers()) - before <= 1, 'still at most one consumer more');
});
