// A page set's state is stored as runs (shared/jobs/store.ts encodeJob): the document of a big crawl
// stays small, every reader gets one character per page, and a document written before reads as it is.
import t from 'tap';
import { decodeJob, encodeJob, packState, readJob, unpackState, updateJob } from '../../shared/jobs/store.ts';
import type { JobRecord } from '../../shared/protocol/jobs.ts';
import { startTestNats } from '../helpers/nats.ts';

const pageSetJob = (state: string): JobRecord =>
  ({
    id: 'job_doc_state',
    service: 'websitepro',
    status: 'processing',
    walletId: 'w1',
    results: [],
    pageSet: {
      kind: 'crawl',
      outputs: ['markdown'],
      unitPrices: {},
      slots: 20000,
      pages: state.length,
      window: 2,
      state,
      resultCount: 0,
      done: 0,
      failed: 0,
      resultsRefunded: 0,
    },
  }) as unknown as JobRecord;

t.test('runs round-trip, whatever the mix', async (t) => {
  for (const s of [
    '',
    'q',
    '-',
    'rq',
    'rrrrx',
    `${'r'.repeat(9990)}qq${'-'.repeat(8)}`,
    'rxrxrxrx',
    `${'x'.repeat(12)}r${'q'.repeat(100)}`,
  ]) {
    t.equal(unpackState(packState(s)), s, `${s.length} pages`);
  }
  t.equal(packState(`${'r'.repeat(9990)}qq${'-'.repeat(8)}`), '~r9990q2-8');
  t.equal(packState('rxrx'), 'rxrx', 'kept as it is when runs are not shorter');
  t.equal(unpackState('rrq'), 'rrq', 'a state without ~ (written before) reads as it is');
});

t.test("a 10,000-page crawl's document stays small; a job without a page set is plain JSON", async (t) => {
  const big = pageSetJob(`${'r'.repeat(9990)}qq${'-'.repeat(8)}`);
  const doc = encodeJob(big);
  t.ok(doc.length < 600, `document ${doc.length} bytes`);
  t.same(decodeJob(doc), big, 'decoded whole');
  t.same(decodeJob(new TextEncoder().encode(doc)), big, 'from bytes too');
  const plain = { ...big, pageSet: undefined } as JobRecord;
  delete (plain as { pageSet?: unknown }).pageSet;
  t.equal(encodeJob(plain), JSON.stringify(plain));
  t.same(decodeJob(JSON.stringify(big)), big, 'a document written before (state in full) reads the same');
});

t.test('the bucket holds runs; readJob and updateJob see one character per page', async (t) => {
  const tn = await startTestNats(t);
  const { Kvm } = await import('@nats-io/kv');
  const kv = await new Kvm(tn.nc).create('jobs_doc_state', { history: 1 });
  const job = pageSetJob(`${'r'.repeat(5000)}q`);
  await kv.put(job.id, JSON.stringify(job)); // as written before this encoding
  const res = await updateJob(kv, job.id, (j) => {
    t.equal(j.pageSet!.state.length, 5001, 'the mutation sees the whole state');
    j.pageSet!.state = `${'r'.repeat(5001)}-`;
    return true;
  });
  t.equal(res?.job.pageSet?.state, `${'r'.repeat(5001)}-`);
  const raw = (await kv.get(job.id))!.string();
  t.ok(raw.includes('"state":"~r5001-"'), 'stored as runs');
  t.ok(raw.length < 600, `stored ${raw.length} bytes`);
  t.equal((await readJob(kv, job.id))?.job.pageSet?.state, `${'r'.repeat(5001)}-`);
});
