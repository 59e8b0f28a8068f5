// A crawl whose converter and supervisor stop in the middle (issue 42): the frontier, the visited
// set and the page records live in NATS, so new instances go on; every page is delivered once and
// charged once (audit clean). Real gateway, supervisor, wallet, converter, NATS.
import t from 'tap';
import { startTestApp, type TestApp } from '../helpers/app.ts';
import { wallet } from '../../shared/protocol/wallet.ts';
import { audit } from '../../shared/audit.ts';
import { fixtureServer, type Route } from '../outbound/fixture-server.ts';

const PAGES = 16;
const slow =
  (ms: number, links: (path: string) => string[]): Route =>
  (q, r) => {
    const path = new URL(q.url ?? '/', 'http://x').pathname;
    setTimeout(() => {
      const body = `<html><head><title>${path}</title></head><body><main><h1>${path}</h1><p>A page of the test site.</p>${links(path)
        .map((l) => `<a href="${l}">${l}</a>`)
        .join(' ')}</main></body></html>`;
      r.writeHead(200, { 'content-type': 'text/html; charset=utf-8' }).end(body);
    }, ms);
  };

async function poll(app: TestApp, key: string, id: string, until: (job: any) => boolean, seconds: number) {
  let job = (await app.request('GET', `/v1/jobs/${id}`, { key })).json.job;
  for (let i = 0; i < seconds * 5 && !until(job); i++) {
    await new Promise((r) => setTimeout(r, 200));
    job = (await app.request('GET', `/v1/jobs/${id}`, { key })).json.job;
  }
  return job;
}
const isDone = (job: any) => job.status === 'completed' || job.status === 'failed';

t.test('converter and supervisor stopped mid-crawl: every page once, charged once', async (t) => {
  const app = await startTestApp(t, {
    actors: ['wallet', 'job-supervisor', 'converter'],
    config: { outbound: { allowCidrs: ['127.0.0.1/32'] }, websitepro: { fetchTimeoutMs: 5000 }, crawl: { concurrency: 2 } },
  });
  const routes: Record<string, Route> = {};
  const next = (path: string) => {
    const n = path === '/' ? 0 : Number(path.split('/').pop());
    return n + 1 < PAGES ? [`/p/${n + 1}`, '/'] : ['/'];
  };
  routes['/'] = slow(150, next);
  for (let i = 1; i < PAGES; i++) routes[`/p/${i}`] = slow(150, next);
  const site = await fixtureServer(t, routes);
  const k = await app.newKey();
  await wallet.grant(app.nc, k.walletId, 100_000, 'test');
  const r = await app.request('POST', '/v1/websitepro/jobs', {
    key: k.key,
    body: { url: site.url('/'), outputs: ['text'], crawl: { limit: 40 } },
  });
  t.equal(r.status, 201, r.text);
  const id = r.json.job.id;
  const unit = r.json.job.cost / 40;

  const mid = await poll(app, k.key, id, (j) => (j.pages?.recorded ?? 0) >= 3 || isDone(j), 60);
  t.ok(mid.pages.recorded >= 3 && !isDone(mid), `stopped in the middle (${mid.pages.recorded} recorded)`);
  for (const [name, h] of [...app.actors.entries()])
    if (name.startsWith('converter#') || name.startsWith('job-supervisor#')) {
      await h.stop();
      app.actors.delete(name);
    }
  await app.startActor('job-supervisor');
  await app.startActor('converter');

  const job = await poll(app, k.key, id, isDone, 120);
  t.equal(job.status, 'completed');
  const keys = (job.results as { key: string; status: string }[]).map((x) => x.key);
  t.equal(keys.length, PAGES, 'every page once');
  t.equal(new Set(keys).size, PAGES, 'no page twice');
  t.ok(
    job.results.every((x: { status: string }) => x.status === 'done'),
    'all delivered',
  );
  t.equal(job.charged, PAGES * unit, 'charged once per page');
  t.equal(job.refunded, (40 - PAGES) * unit, 'the unused slots back');
  const fetched = site.hits.filter((h) => h.startsWith('/p/'));
  t.ok(fetched.length >= PAGES - 1, 'pages fetched (a page in flight at the stop may be fetched again)');
  const a = await audit(app.nc);
  t.same(a.violations, [], 'the money adds up');
});

t.test('a crawl past its deadline admits no more pages; their slots come back', async (t) => {
  const app = await startTestApp(t, {
    actors: ['wallet', 'job-supervisor', 'converter'],
    config: { outbound: { allowCidrs: ['127.0.0.1/32'] }, websitepro: { fetchTimeoutMs: 5000 }, crawl: { concurrency: 1 } },
  });
  // an endless chain: the 10 s deadline stops it
  const chain = (q: Parameters<Route>[0], r: Parameters<Route>[1]) => {
    const i = Number(new URL(q.url ?? '/', 'http://x').searchParams.get('i') ?? 0);
    slow(300, () => [`/n?i=${i + 1}`])(q, r);
  };
  const site = await fixtureServer(t, { '/': chain, '/n': chain });
  const k = await app.newKey();
  await wallet.grant(app.nc, k.walletId, 1_000_000, 'test');
  const r = await app.request('POST', '/v1/websitepro/jobs', {
    key: k.key,
    body: { url: site.url('/'), outputs: ['text'], crawl: { limit: 1000, timeout: 10 } },
  });
  t.equal(r.status, 201, r.text);
  const unit = r.json.job.cost / 1000;
  const job = await poll(app, k.key, r.json.job.id, isDone, 60);
  t.equal(job.status, 'completed');
  const n = job.pages.total;
  t.ok(n >= 2 && n < 1000, `stopped by the deadline after ${n} pages`);
  t.ok(job.finishedAt - job.createdAt < 20_000, `ended near its deadline (${job.finishedAt - job.createdAt} ms)`);
  t.equal(job.pages.recorded, n, 'every admitted page recorded');
  t.equal(job.charged, n * unit, 'charged the delivered pages');
  t.equal(job.refunded, (1000 - n) * unit, 'the slots not used, back');
  t.ok(job.crawl.skipped.deadline?.count >= 1, 'the link found after the deadline is counted');
  const a = await audit(app.nc);
  t.same(a.violations, [], 'the money adds up');
});
