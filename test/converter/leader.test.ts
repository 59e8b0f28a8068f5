// One fetch per job, and little NATS traffic for it: the leader reports every output's outcome, the
// followers read nothing from the object store, and a follower that comes after the leader finished
// still finds its result (its file, or the index for a failed output).
import t from 'tap';
import { jetstreamManager } from '@nats-io/jetstream';
import type { NatsConnection } from '@nats-io/nats-core';
import { fixtureServer, html } from '../outbound/fixture-server.ts';
import { startConverter, type Final } from './harness.ts';
import { ARTICLE } from './pages.ts';
import { STREAMS, subjects } from '../../shared/names.ts';
import type { Outcome } from '../../shared/protocol/jobs.ts';

const PNG = Buffer.from(
  '89504e470d0a1a0a0000000d49484452000000010000000108060000001f15c4890000000d4944415478da63f8cfc0f01f0005000201a5e6b4a70000000049454e44ae426082',
  'hex',
);

/** Every final outcome published for a job, in order. */
function collect(nc: NatsConnection, jobId: string) {
  const finals: Final[] = [];
  let changed: () => void = () => {};
  const sub = nc.subscribe(subjects.result(jobId), {
    callback: (_e, m) => {
      const o = m.json<Outcome>();
      if (o.kind === 'done' || o.kind === 'failed') finals.push(o);
      changed();
    },
  });
  const until = async (ok: () => boolean, what: string, ms = 30000) => {
    const end = Date.now() + ms;
    while (!ok()) {
      if (Date.now() > end) throw new Error(`timed out waiting for ${what}: ${JSON.stringify(finals)}`);
      await new Promise<void>((r) => {
        changed = r;
        setTimeout(r, 100);
      });
    }
  };
  return { finals, until, stop: () => sub.unsubscribe() };
}

/** Tasks not yet acknowledged, once none is or after 10 s. */
async function tasksLeft(nc: NatsConnection): Promise<number> {
  const jsm = await jetstreamManager(nc);
  const end = Date.now() + 10000;
  for (;;) {
    const n = (await jsm.streams.info(STREAMS.tasks)).state.messages;
    if (n === 0 || Date.now() > end) return n;
    await new Promise((r) => setTimeout(r, 100));
  }
}

t.test('a job reads nothing back from the object store and writes no index when every output is made', async (t) => {
  const c = await startConverter(t);
  const s = await fixtureServer(t, { '/post': html(ARTICLE) });
  await c.runJob(s.url('/post'), ['metadata', 'markdown']); // threads started, stores opened
  const api: Record<string, number> = {};
  const spy = await c.connect('spy');
  spy.subscribe('$JS.API.>', {
    callback: (_e, m) => {
      const k = m.subject.split('.').slice(2, 5).join('.');
      api[k] = (api[k] ?? 0) + 1;
    },
  });
  await spy.flush();
  const jobs = 4;
  const outs: Record<string, Final>[] = [];
  for (let i = 0; i < jobs; i++) outs.push(await c.runJob(s.url('/post'), ['metadata', 'markdown']));
  await spy.flush();
  const counted = { ...api }; // what follows (the test reading the files) is not the jobs' traffic
  for (const o of outs) {
    t.equal(o.metadata?.kind, 'done');
    t.equal(o.markdown?.kind, 'done');
    t.match(await c.read(o.markdown!), /^# Tides of the North Sea\n/);
    t.equal(await c.store.info(`${o.markdown!.jobId}/_converted`), null, 'no index: the files say it all');
  }
  t.comment(`JetStream API calls for ${jobs} jobs: ${JSON.stringify(counted)}`);
  t.notOk(counted['CONSUMER.CREATE.OBJ_results'], 'no object read (each costs a consumer)');
  // one lookup inside each of the two writes, and the follower's one look for its file (the old
  // design: a lookup for an earlier index, and the index looked up, read and written: 7-9 per job)
  t.ok((counted['STREAM.MSG.GET'] ?? 0) <= 3 * jobs, `${counted['STREAM.MSG.GET']} object lookups for ${jobs} jobs (at most 3 a job)`);
});

t.test('a follower that starts after its leader finished finds its file', async (t) => {
  const c = await startConverter(t);
  const s = await fixtureServer(t, { '/post': html(ARTICLE) });
  const job = await c.planJob(s.url('/post'), ['metadata', 'markdown']);
  const seen = collect(c.nc, job.jobId);
  t.teardown(seen.stop);
  const [leader, follower] = job.tasks;
  t.equal(leader!.task.resultKey, 'metadata');
  await c.publishTask(leader!);
  // the leader reports the follower's outcome itself
  await seen.until(
    () => seen.finals.some((o) => o.resultKey === 'markdown') && seen.finals.some((o) => o.resultKey === 'metadata'),
    'both outcomes from the leader',
  );
  const reported = seen.finals.find((o) => o.resultKey === 'markdown')!;
  t.equal(reported.kind, 'done');
  t.equal(await tasksLeft(c.nc), 0, 'the leader task is done; the follower task was never published');
  await c.publishTask(follower!);
  await seen.until(() => seen.finals.filter((o) => o.resultKey === 'markdown').length === 2, "the follower's own outcome");
  const own = seen.finals.filter((o) => o.resultKey === 'markdown')[1]!;
  t.same(
    own.kind === 'done' && own.file,
    reported.kind === 'done' && reported.file,
    'the same file, described the same way (content type, size, file name from the object meta)',
  );
  t.match(await c.read(own), /^# Tides of the North Sea\n/);
  t.equal(await tasksLeft(c.nc), 0, 'the follower task is acknowledged');
});

t.test('a follower that starts after its leader finished finds its failure in the index', async (t) => {
  const c = await startConverter(t);
  const s = await fixtureServer(t, { '/pixel.png': (_q, r) => r.writeHead(200, { 'content-type': 'image/png' }).end(PNG) });
  const job = await c.planJob(s.url('/pixel.png'), ['metadata', 'markdown']);
  const seen = collect(c.nc, job.jobId);
  t.teardown(seen.stop);
  await c.publishTask(job.tasks[0]!);
  await seen.until(() => seen.finals.length >= 2, 'both outcomes from the leader');
  t.match(
    seen.finals.find((o) => o.resultKey === 'markdown'),
    { kind: 'failed', error: 'unsupported_content' },
  );
  t.ok(await c.store.info(`${job.jobId}/_converted`), 'an output failed: the index says so');
  await c.publishTask(job.tasks[1]!);
  await seen.until(() => seen.finals.filter((o) => o.resultKey === 'markdown').length === 2, "the follower's own outcome");
  t.match(seen.finals.filter((o) => o.resultKey === 'markdown')[1], {
    kind: 'failed',
    error: 'unsupported_content',
    message: /image\/png/,
  });
});
