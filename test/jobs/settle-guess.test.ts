// A failed result is refunded and its job finished on the record as of the outcome's own write:
// the refund mark and the finish are compare-and-set writes on that copy's revision, so the
// settling reads nothing from the jobs bucket (three round trips fewer between a failed outcome and
// the long poll's answer); money stays exact (one refund, the audit clean).
import t from 'tap';
import { startJobsSystem } from './lib.ts';
import { BUCKETS, subjects } from '../../shared/names.ts';
import { commitJob, newJobRecord } from '../../gateway/jobs/create.ts';
import { isFinished, type JobRecord } from '../../shared/protocol/jobs.ts';

const KV_STREAM = `KV_${BUCKETS.jobs}`;

t.test('a failed job is refunded and finished without reading the jobs bucket', async (t) => {
  const s = await startJobsSystem(t);
  await s.startWorker();
  const { walletId } = await s.newWallet(1000);
  const job = newJobRecord('websitepro', { target: '127.0.0.1', items: [{ key: 'metadata', price: 30, task: { subject: subjects.taskWebsitepro, params: { behave: 'fail' } } }] }, walletId, {}, s.config);
  const watch = await s.deps.kv.jobs.watch({ key: job.id });
  const reads: string[] = [];
  const sub = s.nc.subscribe('$JS.API.>', { callback: (_e, m) => { if (m.subject.includes(KV_STREAM) && /GET/.test(m.subject)) reads.push(m.subject); } });
  await commitJob(s.deps, job);
  let done: JobRecord | null = null;
  for await (const e of watch) {
    const j = e.json<JobRecord>();
    if (isFinished(j)) { done = j; break; }
  }
  sub.unsubscribe();
  t.equal(done?.status, 'failed');
  t.equal(done?.refunded, 30, 'refunded once');
  t.equal(done?.results[0]?.refunded, true);
  // fails against the settle that read the record before each of its steps: 3 reads
  t.same(reads, [], 'no read of the bucket between the creation and the finish');
  t.same(await s.violations(), []);
});
