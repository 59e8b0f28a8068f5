// A finished job whose results expired leaves the `jobs` bucket for the archive of finished jobs
// (shared/jobs/archive.ts): the bucket's stream no longer holds a subject for it (nats-server's
// per-key memory), while GET /v1/jobs/{id}, the list, the audit and an Idempotency-Key replay still
// see it. A projection rebuilt from the streams finds it in the archive; a restarted one resumes
// both checkpoints; a write to the bucket after an archived copy wins over the copy.
import t from 'tap';
import { Kvm } from '@nats-io/kv';
import { jetstreamManager } from '@nats-io/jetstream';
import { startJobsApi } from './app.ts';
import { BUCKETS, STREAMS } from '../../shared/names.ts';
import { audit } from '../../shared/audit.ts';
import { jobDocumentInBucketMs } from '../../shared/jobs/retention.ts';
import { archiveJob } from '../../shared/jobs/archive.ts';
import { JobProjection } from '../../actors/job-supervisor/projection.ts';
import { fingerprintOf, recordKey } from '../../gateway/idempotency.ts';
import { startTestNats, tempDir, testLog } from '../helpers/nats.ts';
import type { JobRecord } from '../../shared/protocol/jobs.ts';
import { ApiError } from '../../shared/errors.ts';

t.jobs = 2;

t.test('an expired job moves to the archive and is still read, listed and audited', async (t) => {
  const s = await startJobsApi(t, { retention: { websitepro: 1, shots: 1, sweepSeconds: 0.3, jobRecords: 3600 } });
  const { key, walletId } = await s.newWallet(5000);
  const r = await s.request('POST', '/v1/shots/jobs?wait=10', { key, body: { url: s.targetUrl, browsers: ['testbrowser'] } });
  const job = r.json.job;
  t.equal(job.status, 'completed');
  const kv = await new Kvm(s.nc).open(BUCKETS.jobs);
  const jsm = await jetstreamManager(s.nc);
  const subjectsOf = async () =>
    (await jsm.streams.info(`KV_${BUCKETS.jobs}`, { subjects_filter: `$KV.${BUCKETS.jobs}.${job.id}` })).state.subjects ?? {};
  t.same(Object.keys(await subjectsOf()), [`$KV.${BUCKETS.jobs}.${job.id}`], 'in the bucket while its results are kept');
  // results expire after 1 s; the purge deletes the files, the next sweep archives the document
  for (let i = 0; i < 100 && (await kv.get(job.id)) !== null; i++) await new Promise((r) => setTimeout(r, 200));
  t.equal(await kv.get(job.id), null, 'gone from the bucket');
  t.same(await subjectsOf(), {}, "no subject of it left in the bucket's stream (nor a delete marker)");
  t.equal((await jsm.streams.info(STREAMS.jobsArchive)).state.messages, 1, 'one document in the archive');

  const got = await s.request('GET', `/v1/jobs/${job.id}`, { key });
  t.equal(got.status, 200, 'the job is still read');
  t.equal(got.json.job.id, job.id);
  t.equal(got.json.job.status, 'completed');
  const file = await s.request('GET', `/v1/jobs/${job.id}/results/${job.results[0].key}`, { key });
  t.equal(file.status, 410, 'its result answers expired, as before the move');
  const other = await s.newWallet(100);
  t.equal((await s.request('GET', `/v1/jobs/${job.id}`, { key: other.key })).status, 404, 'another wallet does not see it');
  const list = await s.request('GET', '/v1/jobs', { key });
  t.equal(list.status, 200);
  t.ok(
    list.json.jobs.some((j: { id: string }) => j.id === job.id),
    'listed',
  );
  const report = await audit(s.nc, { keptMs: jobDocumentInBucketMs(s.config) });
  t.same(report.violations, [], 'the money adds up with the archived document');
  t.equal(report.jobs, 1, 'the audit read the archived job');
  t.equal(await s.balance(walletId), 5000 - job.cost + job.refunded);

  // an Idempotency-Key left running by a gateway that died, naming the archived job: that job is
  // the answer, not a new one (fails against the replay that read the bucket only: charged twice)
  const body = { url: s.targetUrl, browsers: ['testbrowser'] };
  const idem = await new Kvm(s.nc).open(BUCKETS.idempotency);
  await idem.put(
    recordKey(walletId, 'k-archived'),
    JSON.stringify({
      v: 1,
      state: 'running',
      fp: fingerprintOf('POST', '/v1/shots/jobs', body),
      at: Date.now() - 10 * 60_000,
      jobId: job.id,
    }),
  );
  const again = await s.request('POST', '/v1/shots/jobs', { key, body, headers: { 'idempotency-key': 'k-archived' } });
  t.equal(again.status, 201, again.text);
  t.equal(again.json.job.id, job.id, 'the archived job is the answer');
  t.equal(again.headers.get('idempotent-replayed'), 'true');
  t.equal(await s.balance(walletId), 5000 - job.cost + job.refunded, 'charged once');

  // no supervisor runs: an archived job is only the supervisor's to read, so the gateway says 503
  // (never 404: the job exists), and a replay naming it creates and charges nothing
  for (const [name, h] of s.actors) if (name.startsWith('job-supervisor')) await h.stop();
  const down = await s.request('GET', `/v1/jobs/${job.id}`, { key });
  t.equal(down.status, 503, down.text);
  t.equal(down.json.error.code, 'service_unavailable');
  t.equal((await s.request('GET', `/v1/jobs/${job.id}/results/${job.results[0].key}`, { key })).status, 503, 'its download too');
  await idem.put(
    recordKey(walletId, 'k-archived-2'),
    JSON.stringify({
      v: 1,
      state: 'running',
      fp: fingerprintOf('POST', '/v1/shots/jobs', body),
      at: Date.now() - 10 * 60_000,
      jobId: job.id,
    }),
  );
  const replayDown = await s.request('POST', '/v1/shots/jobs', { key, body, headers: { 'idempotency-key': 'k-archived-2' } });
  t.equal(replayDown.status, 503, replayDown.text);
  t.equal(await s.balance(walletId), 5000 - job.cost + job.refunded, 'nothing charged while the archived job could not be read');
  t.equal((await jsm.streams.info(`KV_${BUCKETS.jobs}`)).state.messages, 0, 'no new job written');
});

t.test('a projection rebuilt from the streams finds archived jobs; a restart resumes both checkpoints', async (t) => {
  const { nc } = await startTestNats(t);
  const kv = await new Kvm(nc).open(BUCKETS.jobs);
  const jsm = await jetstreamManager(nc);
  const doc = (id: string, over: Partial<JobRecord> = {}) =>
    ({
      id,
      walletId: 'w1',
      service: 'websitepro',
      status: 'completed',
      target: 'https://example.com/',
      request: {},
      createdAt: 1_000,
      finishedAt: 2_000,
      expiresAt: 3_000,
      purgedAt: 4_000,
      cost: 30,
      refunded: 0,
      results: [],
      ...over,
    }) as JobRecord;
  // two jobs archived as the supervisor does (copy, then delete by sequence), one still in the bucket
  for (const id of ['a1', 'a2']) {
    const rev = await kv.put(id, JSON.stringify(doc(id)));
    await archiveJob(jsm.jetstream(), doc(id), rev);
    await jsm.streams.deleteMessage(`KV_${BUCKETS.jobs}`, rev, false);
  }
  await kv.put('hot', JSON.stringify(doc('hot', { purgedAt: undefined, expiresAt: Date.now() + 3600_000 })));
  const dir = tempDir('payloads-arch-');
  const open = async () => {
    const p = new JobProjection({ dir, keepMs: 3600_000, log: testLog() });
    await p.start(kv, jsm);
    return p;
  };
  const first = await open();
  t.equal(first.startedAs.mode, 'rebuilt');
  for (let i = 0; i < 100 && !first.complete; i++) await new Promise((r) => setTimeout(r, 50));
  t.ok(first.complete, 'complete once both streams are read');
  t.equal(first.count(), 3);
  t.ok((await first.archivedAt('a1'))! > 0, 'an archived job has its archive sequence');
  t.equal(await first.archivedAt('hot'), null, 'a job in the bucket has none');
  t.same(first.archiveDue(Date.now()), [], 'nothing due: the archived ones moved, the hot one is not purged');
  await first.stop();

  // while stopped: a third job archived, and a newer write of a1 in the bucket (it is back there)
  const rev3 = await kv.put('a3', JSON.stringify(doc('a3')));
  await archiveJob(jsm.jetstream(), doc('a3'), rev3);
  await jsm.streams.deleteMessage(`KV_${BUCKETS.jobs}`, rev3, false);
  await kv.put('a1', JSON.stringify(doc('a1', { status: 'failed' })));
  const second = await open();
  await second.caughtUp;
  for (let i = 0; i < 100 && (await second.archivedAt('a3', 0)) === null; i++) await new Promise((r) => setTimeout(r, 50));
  t.equal(second.startedAs.mode, 'resumed');
  // fails against a projection that reads the archive from its start again (3 archived + the tail)
  t.equal(second.appliedCount, 2, 'the tail only: one archived copy, one bucket write');
  t.ok((await second.archivedAt('a3'))! > 0, 'the job archived while it was down is found');
  t.equal(await second.archivedAt('a1'), null, 'a write after the archived copy wins: read from the bucket');
  t.same(second.archiveDue(Date.now()), ['a1'], 'and it is due to be archived again');
  await second.stop();
});

t.test('a document written straight to the archive (revision 0) leaves the records at its retention', async (t) => {
  const s = await startJobsApi(t, { retention: { websitepro: 1, shots: 1, sweepSeconds: 0.3, jobRecords: 1 } }, { workers: false });
  const { key, walletId } = await s.newWallet(100);
  const jsm = await jetstreamManager(s.nc);
  const now = Date.now();
  const doc = {
    id: 'job_history0',
    walletId,
    service: 'websitepro',
    status: 'completed',
    target: 'https://example.com/',
    request: {},
    createdAt: now - 10_000,
    finishedAt: now - 9_000,
    expiresAt: now - 2_000,
    purgedAt: now - 1_500,
    cost: 0,
    refunded: 0,
    results: [],
  } as unknown as JobRecord;
  // as scripts/history.ts writes history: no bucket revision (0)
  await archiveJob(jsm.jetstream(), doc, 0);
  let got = await s.request('GET', `/v1/jobs/${doc.id}`, { key });
  for (let i = 0; i < 100 && got.status === 200; i++) {
    await new Promise((r) => setTimeout(r, 200));
    got = await s.request('GET', `/v1/jobs/${doc.id}`, { key });
  }
  t.equal(got.status, 404, 'past its record retention the job is gone, though the bucket never held it');
});

// Issue 44 item 10: a job the projection does not know while it is still reading the archive (a
// rebuild, or a start behind it) is not known to be absent: 503 with Retry-After, never a 404.
t.test('while the archive is read, an unknown job answers 503 with Retry-After; once read, 404', async (t) => {
  const { nc } = await startTestNats(t);
  const kv = await new Kvm(nc).open(BUCKETS.jobs);
  const jsm = await jetstreamManager(nc);
  const doc = (id: string) =>
    ({
      id,
      walletId: 'w1',
      service: 'websitepro',
      status: 'completed',
      target: 'https://example.com/',
      request: {},
      createdAt: 1_000,
      finishedAt: 2_000,
      expiresAt: 3_000,
      purgedAt: 4_000,
      cost: 30,
      refunded: 0,
      results: [],
    }) as JobRecord;
  // enough that the rebuild cannot have read the last one when it is asked for, right after the start
  // (300 were read once, on an idle machine, before the question: the test then saw a sequence)
  const ids = Array.from({ length: 3000 }, (_, i) => `old${i}`);
  for (let i = 0; i < ids.length; i += 50) await Promise.all(ids.slice(i, i + 50).map((id) => archiveJob(jsm.jetstream(), doc(id), 0)));
  const p = new JobProjection({ dir: tempDir('payloads-arch-'), keepMs: 3600_000, log: testLog() });
  await p.start(kv, jsm);
  t.teardown(() => p.stop());
  t.equal(p.startedAs.mode, 'rebuilt');
  // fails against the projection that answered null (404) when its 2 s wait ran out mid-rebuild
  const err = await p.archivedAt('old2999', 0).then(
    (seq) => ({ seq }),
    (e: ApiError) => e,
  );
  t.match(
    err,
    { code: 'service_unavailable', headers: { 'retry-after': '5' }, details: { retryAfter: 5 } },
    'not known yet: 503, retry in 5 s',
  );
  // the details carry the retry time across NATS: the gateway answers it as Retry-After
  t.same(ApiError.fromJSON((err as ApiError).toJSON()).headers, { 'retry-after': '5' }, 'Retry-After survives the service call');
  for (let i = 0; i < 600 && !p.complete; i++) await new Promise((r) => setTimeout(r, 50));
  t.ok(p.complete);
  t.ok((await p.archivedAt('old2999', 0))! > 0, 'once read, the archived job is found');
  t.equal(await p.archivedAt('never-was', 0), null, 'and a job that is nowhere is absent (404)');
});
