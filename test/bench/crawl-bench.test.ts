// The crawl bench (bench/crawl.ts) in its smallest run: the generated site is whole (a breadth-first
// walk of its links from `/` reaches every page, nothing else answers), and the bench, on the embedded
// default's layout, gives its four figures and reads every result of its big crawl through the
// paging. No figure is judged here (speed belongs to the bench); the bench itself throws on a wrong count.
import t from 'tap';
import { startSite, pagePath } from '../../bench/lib/site.ts';
import { startCluster } from '../../bench/lib/cluster.ts';
import { isSkipped } from '../../bench/figure.ts';

t.test('the site: every page reachable from / by its links, once; other paths 404', async (t) => {
  const site = await startSite(250);
  t.teardown(() => site.close());
  const seen = new Set<string>(['/']);
  const queue = ['/'];
  while (queue.length) {
    const path = queue.shift()!;
    const res = await fetch(new URL(path, site.url));
    t.equal(res.status, 200, path);
    for (const m of (await res.text()).matchAll(/href="([^"]+)"/g))
      if (!seen.has(m[1]!)) {
        seen.add(m[1]!);
        queue.push(m[1]!);
      }
  }
  t.same([...seen].sort(), Array.from({ length: 250 }, (_, i) => pagePath(i)).sort(), 'every page, nothing else');
  t.equal(await site.hits(), 250, 'each fetched once');
  for (const p of ['/p/250', '/robots.txt', '/sitemap.xml', '/p/x']) t.equal((await fetch(new URL(p, site.url))).status, 404, p);
});

t.test('the bench, smallest run: four figures, every result read', async (t) => {
  process.env.CRAWL_BENCH_PAGES = '120';
  process.env.CRAWL_BENCH_RATE_PAGES = '60';
  const { runCrawlBench, CRAWL_CONFIG } = await import('../../bench/crawl.ts');
  const cluster = await startCluster({ layout: 'one-process', config: CRAWL_CONFIG });
  t.teardown(() => cluster.stop());
  const { rows, raw } = await runCrawlBench(cluster);
  t.equal(rows.length, 4);
  t.same(
    rows.filter(isSkipped).map((r) => r.name),
    [],
    'nothing skipped',
  );
  for (const r of rows) if (!isSkipped(r)) t.ok(r.value > 0 && r.baseline > 0, `${r.name}: measured`);
  t.equal((raw as { read: { results: number } }).read.results, 120, 'every result of the big crawl through the paging');
});
