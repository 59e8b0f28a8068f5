// A failed result is refunded and its job finished on the record as of the outcome's own write:
// the refund mark goes out in the finish's own write, a compare-and-set on that copy's revision, so
// the settling reads nothing from the jobs bucket and writes the document once (three reads and one
// write fewer between a failed outcome and the long poll's answer); money stays exact (one refund,
// the audit clean).
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
  const job = newJobRecord(
    'websitepro',
    {
      target: '127.0.0.1',
      items: [{ key: 'metadata', price: 30, task: { subject: subjects.taskWebsitepro, params: { behave: 'fail' } } }],
    },
    walletId,
    {},
    s.config,
  );
  const watch = await s.deps.kv.jobs.watch({ key: job.id });
  // every write of the job's document (the creation, the outcome, the settle), each with its status
  const writes: string[] = [];
  // reads by the settle: after the outcome's write. (Recording the outcome may read once before it:
  // the test worker fails at once, and the outcome can reach the supervisor before its projection
  // has seen the document just created; that guess is not the settle's.)
  const reads: string[] = [];
  const sub = s.nc.subscribe('$JS.API.>', {
    callback: (_e, m) => {
      if (writes.length >= 2 && m.subject.includes(KV_STREAM) && /GET/.test(m.subject)) reads.push(m.subject);
    },
  });
  const wsub = s.nc.subscribe(`$KV.${BUCKETS.jobs}.${job.id}`, {
    callback: (_e, m) => {
      writes.push(m.json<JobRecord>().status + (m.json<JobRecord>().refunded ? '+refunded' : ''));
    },
  });
  await commitJob(s.deps, job);
  let done: JobRecord | null = null;
  for await (const e of watch) {
    const j = e.json<JobRecord>();
    if (isFinished(j)) {
      done = j;
      break;
    }
  }
  await s.nc.flush();
  sub.unsubscribe();
  wsub.unsubscribe();
  t.equal(done?.status, 'failed');
  // fails against the settle that marked the refund in a write of its own (4 writes)
  t.same(writes, ['processing', 'processing', 'failed+refunded'], 'created, the outcome, then the refund mark with the finish');
  t.equal(done?.refunded, 30, 'refunded once');
  t.equal(done?.results[0]?.refunded, true);
  // fails against the settle that read the record before each of its steps: 3 reads
  t.same(reads, [], 'no read of the bucket between the outcome and the finish');
  t.same(await s.violations(), []);
});
