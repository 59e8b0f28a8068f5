// A crawl that ends at its deadline with URLs admitted to its frontier but never taken as pages (a
// link admitted just before the deadline, whose step came after it) counts them `deadline`
// (actors/job-supervisor/crawl.ts untakenAtDeadline, merged by the finish's write). The full suite
// once saw such a crawl end with none counted.
import t from 'tap';
import { untakenAtDeadline, crawlStore } from '../../actors/job-supervisor/crawl.ts';
import type { Deps } from '../../actors/job-supervisor/deps.ts';
import type { JobRecord } from '../../shared/protocol/jobs.ts';
import { startTestNats } from '../helpers/nats.ts';

t.test('URLs left in the frontier at the deadline are counted, with a sample', async (t) => {
  const tn = await startTestNats(t);
  const d = { nc: tn.nc, config: tn.config } as unknown as Deps;
  const s = await crawlStore(d);
  const id = 'job_untaken';
  for (const p of ['', 'a', 'b', 'c']) await s.frontier.admit(id, { url: `https://e.test/${p}`, depth: p ? 1 : 0 }, 100);
  const first = (await s.frontier.pending(id, 1)).entries[0]!;
  const job = (deadline: number, state: string, taken = { seq: first.seq, n: 1 }) =>
    ({
      id,
      pageSet: { kind: 'crawl', state, pages: state.length, slots: 100, crawl: { report: { skipped: {} }, deadline, taken } },
    }) as unknown as JobRecord;
  t.equal(await untakenAtDeadline(d, job(Date.now() + 60_000, 'r')), null, 'before the deadline: nothing');
  t.same(
    await untakenAtDeadline(d, job(Date.now() - 1, 'r')),
    { skipped: { deadline: { count: 3, sample: ['https://e.test/a', 'https://e.test/b', 'https://e.test/c'] } } },
    'past it: the three never taken',
  );
  const all = (await s.frontier.pending(id, 4)).entries.at(-1)!;
  t.equal(await untakenAtDeadline(d, job(Date.now() - 1, 'rrrr', { seq: all.seq, n: 4 })), null, 'every URL a page: nothing');
  await s.frontier.drop(id);
});
