// The audit's arithmetic of a map (shared/audit-refunds.ts): one result `map` priced by the blocks of
// 1,000 URLs listed, and one `_slots` entry of the cap's blocks not used. Pure: documents and
// entries as the supervisor writes them; the wrong amounts are named.
import t from 'tap';
import { pageSetViolations, type PageResults } from '../../shared/audit-refunds.ts';
import type { JobRecord } from '../../shared/protocol/jobs.ts';

const PRICE = 50;
const mapJob = (count: number, slotsRefunded: number, status: 'completed' | 'failed' = 'completed'): JobRecord =>
  ({
    id: 'job_m',
    walletId: 'w',
    service: 'websitepro',
    status,
    cost: 3 * PRICE,
    refunded: slotsRefunded,
    results: [],
    request: { url: 'http://127.0.0.1/', outputs: ['map'] },
    pageSet: {
      kind: 'crawl',
      outputs: ['map'],
      unitPrices: { map: PRICE },
      slots: 2500,
      pages: 4,
      window: 4,
      state: 'xxxx',
      resultCount: 1,
      done: status === 'completed' ? 1 : 0,
      failed: status === 'completed' ? 0 : 1,
      resultsRefunded: 0,
      slotsRefunded,
      map: { count },
    },
  }) as unknown as JobRecord;
const pagesOf = (price: number, status = 'done'): PageResults =>
  new Map([['job_m', new Map([[0, [{ key: 'map', status, price, refunded: status !== 'done' }]]])]]);
const slots = (amount: number) => [{ resultKey: '_slots', amount, seq: 9 }];

t.test('a map of 1,200 URLs: 2 blocks charged, 1 of 3 back', async (t) => {
  t.same(pageSetViolations(mapJob(1200, PRICE), slots(PRICE), pagesOf(2 * PRICE)), []);
});

t.test('a map priced for the wrong number of blocks is named', async (t) => {
  // 1,200 URLs sold as one block, two blocks refunded: charged = delivered holds, the map's count does not
  const v = pageSetViolations(mapJob(1200, 2 * PRICE), slots(2 * PRICE), pagesOf(PRICE));
  t.ok(
    v.some((x) => /1200 URLs priced 50, not 2 blocks/.test(x)),
    v.join('\n'),
  );
  t.ok(
    v.some((x) => /refunded for unused blocks, not 50/.test(x)),
    v.join('\n'),
  );
});

t.test('a failed map costs nothing: the whole cap back in `_slots`', async (t) => {
  t.same(pageSetViolations(mapJob(0, 3 * PRICE, 'failed'), slots(3 * PRICE), pagesOf(0, 'failed')), []);
  t.ok(pageSetViolations(mapJob(0, 2 * PRICE, 'failed'), slots(2 * PRICE), pagesOf(0, 'failed')).length > 0, 'one block kept is named');
});
