// The audit's checks added by issue 20: a wallet keeping two dataset fees, a fee kept by a job that
// delivered nothing needing the dataset, a delivered result without its stored file.
import t from 'tap';
import { Kvm } from '@nats-io/kv';
import { Objm } from '@nats-io/obj';
import { startTestNats } from '../helpers/nats.ts';
import { audit } from '../../shared/audit.ts';
import { BUCKETS, OBJECT_STORES } from '../../shared/names.ts';
import type { JobRecord, ResultRecord } from '../../shared/protocol/jobs.ts';

const job = (id: string, walletId: string, results: Partial<ResultRecord>[], extra: Partial<JobRecord> = {}): JobRecord => ({
  id,
  service: 'labs',
  status: 'completed',
  walletId,
  target: 'relay.example',
  request: {},
  cost: 0,
  refunded: 0,
  createdAt: Date.now(),
  finishedAt: Date.now(),
  expiresAt: Date.now() + 3600_000,
  results: results.map((r) => ({ key: 'x', status: 'done', price: 0, refunded: false, ...r }) as ResultRecord),
  ...extra,
});

t.test('dataset fees and lost files are reported', async (t) => {
  const { nc } = await startTestNats(t);
  const jobs = await new Kvm(nc).open(BUCKETS.jobs);
  const reports = await new Objm(nc).open(OBJECT_STORES.reports);
  await reports.putBlob({ name: 'j1/conformance' }, new TextEncoder().encode('{}'));
  const fee = { key: 'dataset', status: 'done' as const, oneTime: true };
  const conf = (status: 'done' | 'failed', name: string) => ({
    key: 'conformance',
    status,
    needsDataset: true,
    subject: 'task.labs',
    ...(status === 'done'
      ? { file: { store: OBJECT_STORES.reports, name, contentType: 'application/json', bytes: 2, filename: 'r.json' } }
      : { error: 'write_restricted', refunded: true }),
  });
  await jobs.put('j1', JSON.stringify(job('j1', 'w_two', [conf('done', 'j1/conformance'), fee])));
  await jobs.put('j2', JSON.stringify(job('j2', 'w_two', [conf('done', 'j2/conformance'), fee]))); // file never stored
  await jobs.put(
    'j3',
    JSON.stringify(
      job('j3', 'w_unused', [
        {
          key: 'quick',
          status: 'done',
          needsDataset: false,
          subject: 'task.labs',
          file: { store: OBJECT_STORES.reports, name: 'j1/conformance', contentType: 'application/json', bytes: 2, filename: 'q.json' },
        },
        conf('failed', ''),
        fee,
      ]),
    ),
  );
  await jobs.put('j4', JSON.stringify(job('j4', 'w_ok', [conf('done', 'j1/conformance'), fee])));
  await jobs.put('j5', JSON.stringify(job('j5', 'w_ok', [conf('done', 'gone/expired')], { expiresAt: Date.now() - 1000 })));

  const { violations } = await audit(nc);
  const about = (re: RegExp) => violations.filter((v) => re.test(v));
  t.same(about(/dataset fees kept/), ['wallet w_two: 2 dataset fees kept (jobs j1, j2)']);
  t.same(about(/dataset fee kept although/), ['job j3: dataset fee kept although no result that needed the dataset was delivered']);
  t.same(
    about(/is not stored/),
    [`job j2: result conformance is done (charged) but its file ${OBJECT_STORES.reports}/j2/conformance is not stored`],
    "an expired job's files are not expected",
  );
  t.same(
    about(/\bj4\b|w_ok/).filter((v) => /dataset|stored/.test(v)),
    [],
    'one fee used by its job is fine',
  );
});
