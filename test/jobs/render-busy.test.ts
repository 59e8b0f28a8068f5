// Our own lack of browser capacity is not the page's failure. A page set's render (waitFor / actions /
// timeout) that finds every page of browser-pool taken (`busy`), or no browser-pool answering
// (`service_unavailable`), is asked again: a crawl page goes back to wait and is sent again after a
// short back-off, its origin neither held nor struck (actors/job-supervisor/crawl-send.ts ourRetry),
// and fails with that error (refunded) only past crawl.maxRetries; a batch page is rendered again by
// the converter after 1 s and 3 s (actors/converter/page.ts). Real gateway, supervisor, wallet,
// converter, browser-pool (Chromium, one page slot), NATS and HTTP servers; the slot is held by a
// render of a slow page asked of browser-pool directly.
import t, { type Test } from 'tap';
import { existsSync } from 'node:fs';
import { startTestApp, type TestApp } from '../helpers/app.ts';
import { fixtureServer, html } from '../outbound/fixture-server.ts';
import { wallet } from '../../shared/protocol/wallet.ts';
import { audit } from '../../shared/audit.ts';
import { call } from '../../shared/micro.ts';
import { BUCKETS, subjects } from '../../shared/names.ts';

const noChromium = existsSync('/usr/bin/chromium') ? false : 'no chromium';
const GRANT = 100_000;
const page = (title: string, links: string[]) =>
  html(
    `<html><head><title>${title}</title></head><body><main><article><h1>${title}</h1><p>Words of the page ${title}.</p>${links
      .map((l) => `<a href="${l}">${l}</a>`)
      .join(' ')}</article></main></body></html>`,
  );
/** `#late` ("arrived") appears `ms` after the page loaded: a render waiting for it holds its browser page that long. */
const slow = (ms: number) =>
  html(
    `<html><body><p>slow</p><script>setTimeout(() => { const d = document.createElement('div'); d.id = 'late'; d.textContent = 'arr' + 'ived'; document.body.append(d); }, ${ms})</script></body></html>`,
  );

async function app(t: Test, browser: boolean, crawl: Record<string, number> = {}) {
  const a = await startTestApp(t, {
    actors: ['wallet', 'job-supervisor', 'converter', ...(browser ? (['browser-pool'] as const) : [])],
    config: {
      outbound: { allowCidrs: ['127.0.0.1/32'] },
      // one browser page: a second render waits for it, then answers busy
      ...(browser ? { shots: { browsers: ['chromium'], concurrency: 1, pageTimeoutMs: 30000 } } : {}),
      crawl,
    },
  });
  // every write to a crawl origin's politeness state (`<jobId>.o<hash>` in the crawl bucket)
  const originWrites: { holdUntil?: number; strikes?: number; pages: number[] }[] = [];
  a.nc.subscribe(`$KV.${BUCKETS.crawlVisited}.>`, {
    callback: (_e, m) => {
      if (/\.o[0-9a-f]{40}$/.test(m.subject) && m.data.length) originWrites.push(m.json());
    },
  });
  await a.nc.flush();
  const k = await a.newKey();
  await wallet.grant(a.nc, k.walletId, GRANT, 'test');
  return { app: a, key: k.key, walletId: k.walletId, originWrites };
}

async function runJob(t: Test, a: TestApp, key: string, walletId: string, body: Record<string, unknown>) {
  const r = await a.request('POST', '/v1/websitepro/jobs', { key, body });
  t.equal(r.status, 201, r.text);
  let job = r.json.job;
  for (let i = 0; i < 600 && job.status !== 'completed' && job.status !== 'failed'; i++) {
    await new Promise((res) => setTimeout(res, 200));
    job = (await a.request('GET', `/v1/jobs/${job.id}`, { key })).json.job;
  }
  const results = job.results as { key: string; status: string; error?: string; message?: string; price: number }[];
  t.same((await audit(a.nc)).violations, [], 'the money adds up (admin audit)');
  t.equal((await wallet.balance(a.nc, walletId)).balance, GRANT - job.charged, 'the wallet paid what the job says it charged');
  const delivered = results.filter((x) => x.status === 'done').reduce((n, x) => n + x.price, 0);
  t.equal(job.charged, delivered, 'charged exactly the delivered results');
  const by = Object.fromEntries(results.map((x) => [x.key, x.status === 'done' ? 'done' : x.error]));
  return { job, results, by };
}

/** Hold browser-pool's one page: a render of a page whose `#late` appears after `ms`; resolves once the browser is on it. */
async function holdBrowser(t: Test, a: TestApp, ms: number) {
  const s = await fixtureServer(t, { '/slow': slow(ms) });
  const held = call<{ html: string }>(
    a.nc,
    subjects.browser.renderHtml,
    { url: s.url('/slow'), controls: { waitFor: '#late', timeoutMs: 20000 } },
    40000,
  );
  held.catch(() => {});
  for (let i = 0; i < 200 && !s.hits.includes('/slow'); i++) await new Promise((r) => setTimeout(r, 50));
  t.ok(s.hits.includes('/slow'), 'the slow page holds the one browser page');
  // wrapped: an async function returning the promise itself would wait for it
  return { held };
}

t.test('no browser-pool: a crawl page is sent again, its origin never held, then fails service_unavailable, refunded', async (t) => {
  const { app: a, key, walletId, originWrites } = await app(t, false, { maxRetries: 2, originConcurrency: 1 });
  const site = await fixtureServer(t, { '/': page('Home', ['/a']), '/a': page('A', []) });
  const began = Date.now();
  const { job, by, results } = await runJob(t, a, key, walletId, {
    url: site.url('/'),
    outputs: ['markdown'],
    waitFor: 'h1',
    crawl: { limit: 3 },
  });
  t.equal(job.status, 'failed');
  t.same(by, { 'index/markdown': 'service_unavailable', 'index/render': 'service_unavailable' });
  t.match(results[0]!.message, /no browser-pool instance answered in time each of the 3 times/);
  t.equal(site.hits.filter((h) => h === '/').length, 3, 'page 0 sent 3 times (crawl.maxRetries 2), fetched each time');
  t.ok(Date.now() - began >= 2500, `after back-offs of about 1 s and 2 s (${Date.now() - began} ms)`);
  // origin concurrency 1: the page's place is taken at each send and given back at each retry, nothing more
  t.ok(originWrites.length >= 3, `the origin's place taken and given back (${originWrites.length} writes)`);
  t.same(
    originWrites.filter((w) => w.holdUntil || w.strikes),
    [],
    'the origin is never held nor struck for our own lack of a browser',
  );
});

t.test('a crawl while browser-pool is busy: every page delivered, the origin never written', { skip: noChromium }, async (t) => {
  const { app: a, key, walletId, originWrites } = await app(t, true, { maxRetries: 10 });
  const site = await fixtureServer(t, { '/': page('Home', ['/a', '/b']), '/a': page('A', []), '/b': page('B', []) });
  const { held } = await holdBrowser(t, a, 6000);
  const began = Date.now();
  // timeout 5: browser-pool waits at most 2.5 s for its page, then answers busy
  const { job, by } = await runJob(t, a, key, walletId, {
    url: site.url('/'),
    outputs: ['markdown'],
    waitFor: 'h1',
    timeout: 5,
    crawl: { limit: 3 },
  });
  t.equal(job.status, 'completed');
  t.same(
    by,
    {
      'index/markdown': 'done',
      'index/render': 'done',
      'a/markdown': 'done',
      'a/render': 'done',
      'b/markdown': 'done',
      'b/render': 'done',
    },
    'every page delivered, after the browser was free again',
  );
  t.ok((await held).html.includes('arrived'), 'the slow render finished as well');
  const home = site.hits.filter((h) => h === '/').length;
  t.ok(home >= 3, `page 0 was sent again after busy (${home} requests to it: a fetch per send, one by the browser)`);
  t.ok(Date.now() - began >= 4000, `it waited for the browser (${Date.now() - began} ms)`);
  t.same(originWrites, [], "the origin's politeness state is never written (no hold, no strike) for busy");
});

t.test('a batch while browser-pool is busy: the converter renders again, every page delivered', { skip: noChromium }, async (t) => {
  const { app: a, key, walletId } = await app(t, true);
  const site = await fixtureServer(t, { '/a': page('A', []), '/b': page('B', []) });
  const { held } = await holdBrowser(t, a, 4000);
  const { job, by } = await runJob(t, a, key, walletId, {
    urls: [site.url('/a'), site.url('/b')],
    outputs: ['markdown'],
    waitFor: 'h1',
    timeout: 5,
  });
  t.equal(job.status, 'completed');
  t.same(by, { 'a/markdown': 'done', 'a/render': 'done', 'b/markdown': 'done', 'b/render': 'done' }, 'both pages delivered');
  t.ok((await held).html.includes('arrived'), 'the slow render finished as well');
  t.equal(site.hits.filter((h) => h === '/a').length, 2, 'page a fetched once by the converter, once by the browser');
});

t.test('a one-page job while browser-pool is busy: rendered again, delivered', { skip: noChromium }, async (t) => {
  const { app: a, key, walletId } = await app(t, true);
  const site = await fixtureServer(t, { '/a': page('A', []) });
  const { held } = await holdBrowser(t, a, 4000);
  const { job, by } = await runJob(t, a, key, walletId, { url: site.url('/a'), outputs: ['markdown'], waitFor: 'h1', timeout: 5 });
  t.equal(job.status, 'completed');
  t.same(by, { markdown: 'done', render: 'done' }, 'delivered once the browser was free');
  t.ok((await held).html.includes('arrived'), 'the slow render finished as well');
});
