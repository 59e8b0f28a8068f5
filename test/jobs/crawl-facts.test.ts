// The supervisor's side of a crawl page's outcome facts (session-30 contract sections 1-2): a 429/503
// goes back and is asked again after its Retry-After, a site that 503s forever ends as refunded
// http_error results, a rel=canonical copy is folded (state `x`, its slot back), and a subdomain's own
// robots.txt keeps its disallowed path unfetched. Real gateway, supervisor, wallet, converter, NATS and
// HTTP servers; test/helpers/crawl-facts-worker.ts plays the converter where a test needs a name the
// real resolver cannot answer (a subdomain of localhost) or a page task held without an answer.
import t, { type Test } from 'tap';
import type http from 'node:http';
import { startTestApp, type TestApp } from '../helpers/app.ts';
import { startCrawlFactsWorker } from '../helpers/crawl-facts-worker.ts';
import { wallet } from '../../shared/protocol/wallet.ts';
import { audit } from '../../shared/audit.ts';
import { Kvm } from '@nats-io/kv';
import { jetstreamManager } from '@nats-io/jetstream';
import { BUCKETS, STREAMS } from '../../shared/names.ts';
import { fixtureServer, type Route } from '../outbound/fixture-server.ts';

const page =
  (title: string, links: string[], head = ''): Route =>
  (_q, r) =>
    r
      .writeHead(200, { 'content-type': 'text/html; charset=utf-8' })
      .end(
        `<html><head><title>${title}</title>${head}</head><body><h1>${title}</h1>${links.map((l) => `<a href="${l}">${l}</a>`).join(' ')}</body></html>`,
      );

async function finished(app: TestApp, key: string, id: string) {
  for (let i = 0; i < 300; i++) {
    const job = (await app.request('GET', `/v1/jobs/${id}`, { key })).json.job;
    if (job.status === 'completed' || job.status === 'failed') return job;
    await new Promise((r) => setTimeout(r, 200));
  }
  throw new Error(`job ${id} did not finish`);
}

/** `converter: 'stand-in'`: test/helpers/crawl-facts-worker.ts plays the converter (it resolves `*.localhost`). */
async function crawl(
  t: Test,
  config: Record<string, unknown>,
  body: Record<string, unknown>,
  converter: 'real' | 'stand-in' = 'real',
  started: (app: TestApp) => Promise<void> = async () => {},
) {
  const app = await startTestApp(t, {
    actors: ['wallet', 'job-supervisor', ...(converter === 'real' ? (['converter'] as const) : [])],
    config: { outbound: { allowCidrs: ['127.0.0.1/32'] }, ...config },
  });
  await started(app);
  if (converter === 'stand-in') await startCrawlFactsWorker(t, await app.connect('converter'), app.config);
  const k = await app.newKey();
  await wallet.grant(app.nc, k.walletId, 100_000, 'test');
  const r = await app.request('POST', '/v1/websitepro/jobs', { key: k.key, body: { outputs: ['text'], ...body } });
  t.equal(r.status, 201, r.text);
  const limit = (body.crawl as { limit: number }).limit;
  const unit = r.json.job.cost / limit;
  const job = await finished(app, k.key, r.json.job.id);
  const results = job.results as { key: string; status: string; error?: string; refunded: boolean; page: string }[];
  const a = await audit(app.nc);
  t.same(a.violations, [], 'the money adds up (admin audit)');
  t.equal(job.charged, results.filter((x) => x.status === 'done').length * unit, 'charged exactly the delivered results');
  t.equal((await wallet.balance(app.nc, k.walletId)).balance, 100_000 - job.charged, 'the wallet says the same');
  return { job, results, unit, limit };
}

t.test('a 429 with Retry-After, then 200: asked again after it, delivered once', async (t) => {
  let asked = 0;
  const site = await fixtureServer(t, {
    '/': page('Home', ['/busy']),
    '/busy': (q, r) => {
      if (++asked === 1) r.writeHead(429, { 'retry-after': '1', 'content-type': 'text/plain' }).end('slow down');
      else page('Busy', [])(q, r);
    },
  });
  const { job, results } = await crawl(t, {}, { url: site.url('/'), crawl: { limit: 5 } });
  t.equal(job.status, 'completed');
  t.same(results.map((x) => [x.page, x.status]).sort(), [
    [site.url('/'), 'done'],
    [site.url('/busy'), 'done'],
  ]);
  t.equal(site.hits.filter((h) => h === '/busy').length, 2, 'the server saw the 429 and one more request');
});

t.test('a site that answers 503 forever: failed http_error results after crawl.maxRetries, refunded', async (t) => {
  const site = await fixtureServer(t, {
    '/': page('Home', ['/down']),
    '/down': (_q, r) => r.writeHead(503, { 'content-type': 'text/plain' }).end('down'),
  });
  const { results, unit, limit, job } = await crawl(
    t,
    { crawl: { maxRetries: 2, maxRetryAfterMs: 1000 } },
    { url: site.url('/'), crawl: { limit: 5 } },
  );
  const down = results.find((x) => x.page === site.url('/down'));
  t.match(down, { status: 'failed', error: 'http_error', refunded: true }, 'one failed result, refunded');
  t.equal(results.length, 2, 'no result per try');
  t.equal(site.hits.filter((h) => h === '/down').length, 3, 'asked 1 + maxRetries times');
  t.equal(job.refunded, (limit - 1) * unit, 'the failed page and the unused slots back');
});

t.test('rel=canonical: a copy of a page the crawl has is folded; a canonical not yet seen is never fetched', async (t) => {
  const canon = (path: string) => `<link rel="canonical" href="${path}">`;
  const site = await fixtureServer(t, {
    '/': page('Home', ['/b', '/b2', '/c2']),
    '/b': page('B', []),
    // a copy of /b, which the crawl already admitted: dropped, counted duplicate
    '/b2': page('B again', [], canon('/b')),
    // names /c as its canonical: /c is not a page yet, so this page stands for it and /c is never fetched
    '/c2': page('C', ['/c'], canon('/c')),
    '/c': page('C', []),
  });
  const { results, job, unit, limit } = await crawl(t, {}, { url: site.url('/'), crawl: { limit: 10 } });
  t.same(results.map((x) => x.page).sort(), [site.url('/'), site.url('/b'), site.url('/c2')], 'the copy is not a result');
  t.ok(job.crawl.skipped.duplicate?.sample.includes(site.url('/b2')), 'the copy is counted as a duplicate');
  t.notOk(site.hits.includes('/c'), 'the canonical URL was not fetched again');
  t.equal(job.pages.total, 3, 'the dropped page is not a page of the result set');
  t.equal(job.refunded, (limit - 3) * unit, "the dropped page's slot back with the unused ones");
});

t.test("a subdomain's own robots.txt: its disallowed path is never fetched there", async (t) => {
  const log: string[] = [];
  const byHost =
    (routes: Record<string, Route>): Route =>
    (q: http.IncomingMessage, r: http.ServerResponse) => {
      const host = String(q.headers.host).split(':')[0]!;
      log.push(`${host}${q.url}`);
      const route = routes[host];
      if (route) route(q, r);
      else r.writeHead(404).end();
    };
  const robots =
    (text: string): Route =>
    (_q, r) =>
      r.writeHead(200, { 'content-type': 'text/plain' }).end(text);
  // one server answers both names (same port: in scope); routes are read per request, filled once its port is known
  const routes: Record<string, Route> = {};
  const server = await fixtureServer(t, routes);
  const start = `http://localhost:${server.port}/`;
  const docsOf = (p: string) => `http://docs.localhost:${server.port}${p}`;
  Object.assign(routes, {
    '/robots.txt': byHost({
      localhost: robots('User-agent: *\nAllow: /\n'),
      'docs.localhost': robots('User-agent: *\nDisallow: /private/\n'),
    }),
    '/': byHost({ localhost: page('Home', [docsOf('/'), docsOf('/private/x')]), 'docs.localhost': page('Docs', [docsOf('/guide')]) }),
    '/guide': byHost({ 'docs.localhost': page('Guide', []) }),
    '/private/x': byHost({ 'docs.localhost': page('Private', []) }),
  });
  // the stand-in converter: `docs.localhost` resolves nowhere on this machine but in its resolver
  const { results, job, unit, limit } = await crawl(t, {}, { url: start, crawl: { limit: 10, allowSubdomains: true } }, 'stand-in');
  t.same(results.map((x) => x.page).sort(), [docsOf('/'), docsOf('/guide'), start].sort(), 'the subdomain is crawled');
  t.ok(log.includes('docs.localhost/robots.txt'), "the subdomain's robots.txt was read");
  t.notOk(
    log.some((h) => h.startsWith('docs.localhost/private')),
    'its disallowed path was never fetched (the server says so)',
  );
  t.equal(job.crawl.skipped.robots?.count, 1, 'counted as a robots skip');
  t.same(job.crawl.skipped.robots?.sample, [docsOf('/private/x')]);
  t.equal(job.refunded, (limit - 3) * unit, "the skipped page's slot back");
});

t.test('a page task lost with no outcome is sent again by the sweep, and delivered once', async (t) => {
  const app = await startTestApp(t, {
    actors: ['wallet', 'job-supervisor'],
    config: { outbound: { allowCidrs: ['127.0.0.1/32'] }, crawl: { pageLostSeconds: 10 }, retention: { sweepSeconds: 1 } },
  });
  const site = await fixtureServer(t, { '/': page('Home', ['/lost']), '/lost': page('Lost', []) });
  // the first worker takes /lost and never answers; its task message is then removed from TASKS
  const first = await startCrawlFactsWorker(t, await app.connect('converter'), app.config, { hold: (u) => u.endsWith('/lost') });
  const k = await app.newKey();
  await wallet.grant(app.nc, k.walletId, 100_000, 'test');
  const r = await app.request('POST', '/v1/websitepro/jobs', {
    key: k.key,
    body: { url: site.url('/'), outputs: ['text'], crawl: { limit: 5 } },
  });
  t.equal(r.status, 201, r.text);
  const id = r.json.job.id;
  for (let i = 0; i < 150 && !first.held.length; i++) await new Promise((res) => setTimeout(res, 200));
  t.same(first.held, [site.url('/lost')], 'the page is held by the first worker');
  // the supervisor notes the send (with its TASKS sequence) after the publish, so the worker may hold
  // the task before the note is written: wait for the note, do not assume it came first
  const kv = await new Kvm(app.nc).open(BUCKETS.crawlVisited);
  let attempt: { seq?: number } | undefined;
  for (let i = 0; i < 150 && !attempt?.seq; i++) {
    attempt = (await kv.get(`${id}.t1`))?.json<{ seq?: number }>();
    if (!attempt?.seq) await new Promise((res) => setTimeout(res, 200));
  }
  const seq = attempt?.seq ?? 0;
  t.ok(seq, 'its send is recorded with its TASKS sequence');
  await (await jetstreamManager(app.nc)).streams.deleteMessage(STREAMS.tasks, seq, false);
  await first.stop();
  await startCrawlFactsWorker(t, await app.connect('converter'), app.config);

  const job = await finished(app, k.key, id);
  t.equal(job.status, 'completed');
  const results = job.results as { page: string; status: string }[];
  t.same(results.map((x) => [x.page, x.status]).sort(), [
    [site.url('/'), 'done'],
    [site.url('/lost'), 'done'],
  ]);
  t.equal(site.hits.filter((h) => h === '/lost').length, 1, 'fetched once: by the task sent again');
  t.equal(job.charged, 2 * (r.json.job.cost / 5), 'charged once per page');
  t.same((await audit(app.nc)).violations, [], 'the money adds up');
});

/** A home page linking five pages, each answered after `ms`; `most()`: the most requests the site had at once. */
async function slowSite(t: Test, ms: number) {
  let now = 0;
  let most = 0;
  const slow =
    (links: string[]): Route =>
    (q, r) => {
      most = Math.max(most, ++now);
      setTimeout(() => {
        now--;
        page(String(q.url), links)(q, r);
      }, ms);
    };
  const paths = ['/1', '/2', '/3', '/4', '/5'];
  const site = await fixtureServer(t, Object.fromEntries([['/', slow(paths)], ...paths.map((p) => [p, slow([])])]));
  return { site, most: () => most };
}

t.test('crawl.originConcurrency 1: never two pages of the origin at once, whatever the window', async (t) => {
  const { site, most } = await slowSite(t, 150);
  const { results } = await crawl(t, { crawl: { concurrency: 4, originConcurrency: 1 } }, { url: site.url('/'), crawl: { limit: 10 } });
  t.equal(results.length, 6, 'every page delivered');
  t.equal(most(), 1, 'one request at a time on the origin (the server counted)');
});

t.test('an origin its politeness cannot restrain: no write to its state; one it can: written', async (t) => {
  const run = async (crawlConfig: Record<string, number>) => {
    const { site, most } = await slowSite(t, 50);
    // every write to an origin's state (`<jobId>.o<hash>` in the crawl bucket), seen on its subject;
    // and to the frontier's cursor key, which the supervisor keeps in the job document instead
    const writes: string[] = [];
    const cursorWrites: string[] = [];
    const { results } = await crawl(t, { crawl: crawlConfig }, { url: site.url('/'), crawl: { limit: 10 } }, 'real', async (app) => {
      app.nc.subscribe(`$KV.${BUCKETS.crawlVisited}.>`, {
        callback: (_e, m) => {
          if (/\.o[0-9a-f]{40}$/.test(m.subject)) writes.push(m.subject);
          if (m.subject.endsWith('.cursor')) cursorWrites.push(m.subject);
        },
      });
      await app.nc.flush();
    });
    t.equal(results.length, 6, 'every page delivered');
    t.same(cursorWrites, [], "no cursor key: the entry taken last is in the job's document");
    return { writes: writes.length, most: most() };
  };
  const free = await run({ concurrency: 2, originConcurrency: 4 });
  t.equal(free.writes, 0, 'window 2, origin concurrency 4, no delay: the origin state is never written');
  t.ok(free.most <= 2, `never more pages in flight than the window (${free.most})`);
  const held = await run({ concurrency: 2, originConcurrency: 1 });
  t.ok(held.writes >= 10, `origin concurrency 1: every start and end written (${held.writes})`);
  t.equal(held.most, 1, 'one request at a time on the origin');
});
