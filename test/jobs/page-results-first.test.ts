// The first page of a page set's results as GET /v1/jobs/{id} shows it, kept between reads
// (shared/jobs/page-results.ts firstResults): after every write it equals a fresh read of PAGES,
// while the page fills, once it is full (RESULTS_INLINE), and for two jobs read in turn.
import t from 'tap';
import { jetstream } from '@nats-io/jetstream';
import { subjects } from '../../shared/names.ts';
import { pageMsgId, readPageResults, RESULTS_INLINE, type PageMessage } from '../../shared/jobs/pages.ts';
import { firstResults, pagesReader, publicJobOf, publicJobText } from '../../shared/jobs/page-results.ts';
import { encodeParts } from '../../shared/raw-json.ts';

/** The gateway's answer text of a value, from the parts it sends. */
const answerText = (v: unknown) => {
  const p = encodeParts(v);
  return typeof p === 'string' ? p : Buffer.concat(p).toString('utf8');
};
import type { JobRecord } from '../../shared/protocol/jobs.ts';
import { startTestNats } from '../helpers/nats.ts';

t.test('the first results page, read on from where it stopped, equals a fresh read after every write', async (t) => {
  const nats = await startTestNats(t);
  const js = jetstream(nats.nc);
  const r = await pagesReader(nats.nc, js);
  const counts = new Map<string, number>();
  const write = async (jobId: string, results: number) => {
    const index = counts.get(jobId) ?? 0;
    counts.set(jobId, index + 1);
    const msg: PageMessage = {
      v: 1,
      jobId,
      index,
      pageKey: `p${index}`,
      results: Array.from({ length: results }, (_, k) => ({
        key: `p${index}/${k}`,
        status: 'done',
        price: 1,
        refunded: false,
        extra: { page: `https://e.test/${index}?q="x"&k=${k}` },
        ...(k % 2 ? {} : { file: { store: 'results', name: `o${index}.${k}`, contentType: 'text/markdown', bytes: 10, filename: 'a.md' } }),
      })),
    };
    await js.publish(subjects.page(jobId), JSON.stringify(msg), { msgID: pageMsgId(jobId, index) });
  };
  const same = async (jobId: string, what: string) => {
    const fresh = await readPageResults(r.js, r.jsm, jobId, 1, RESULTS_INLINE);
    const kept = await firstResults(r, jobId);
    t.same(
      { keys: kept.messages.map((m) => m.pageKey), next: kept.next },
      { keys: fresh.messages.map((m) => m.pageKey), next: fresh.next },
      what,
    );
    // GET /v1/jobs/{id}'s text (its results serialised once, extended after) is the same JSON
    // byte for byte, for results that can be downloaded and for expired ones
    for (const expiresAt of [Date.now() + 3_600_000, Date.now() - 1]) {
      const job = {
        id: jobId,
        service: 'websitepro',
        status: 'processing',
        cost: 10,
        refunded: 0,
        createdAt: 1,
        expiresAt,
        results: [],
        pageSet: {
          kind: 'batch',
          outputs: ['markdown'],
          unitPrices: {},
          slots: 9,
          pages: 1,
          window: 2,
          state: 'r',
          resultCount: 1,
          done: 1,
          failed: 0,
          resultsRefunded: 0,
        },
      } as unknown as JobRecord;
      for (const base of ['http://a.test', 'http://b.test'])
        t.equal(
          answerText(await publicJobText(r, job, base)),
          JSON.stringify(await publicJobOf(r, job, base)),
          `${what}: the text is the JSON`,
        );
    }
    return kept;
  };
  t.same((await firstResults(r, 'job_none')).messages, [], 'no page yet: none');
  for (let i = 0; i < 3; i++) await write('job_a', 1);
  await same('job_a', 'three pages');
  await write('job_a', 1);
  await write('job_b', 3);
  await same('job_a', 'a fourth page, read on');
  await same('job_b', 'another job beside it');
  // fill job_a's first page: pages of 7 results until past RESULTS_INLINE
  let kept;
  for (let i = 0; i < 150; i++) {
    await write('job_a', 7);
    if (i % 37 === 0 || i > 140) kept = await same('job_a', `after ${i + 5} pages`);
  }
  t.ok(kept!.next !== null, 'the first page is full: it says where the next begins');
  t.ok(kept!.messages.reduce((n, m) => n + m.results.length, 0) <= RESULTS_INLINE, 'never more than RESULTS_INLINE');
  await write('job_a', 1);
  await same('job_a', 'a full page stays as it is');
  await same('job_b', 'the other job unchanged');
});
