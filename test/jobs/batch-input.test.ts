// websitepro `urls` (issue 42, batch): duplicate URLs folded and their slots refunded by one
// `_slots` entry; an unreachable host's URLs are failed, refunded results, not a refused job; bad
// input is a 400 before any charge; page keys are readable and unique.
import t from 'tap';
import net from 'node:net';
import type { AddressInfo } from 'node:net';
import { startTestApp } from '../helpers/app.ts';
import { wallet } from '../../shared/protocol/wallet.ts';
import { audit } from '../../shared/audit.ts';
import { fixtureServer, html } from '../outbound/fixture-server.ts';
import { openSse } from '../helpers/sse.ts';
import { pageKeys, planBatch } from '../../shared/crawl/keys.ts';

/** A port on 127.0.0.1 nobody listens on (taken, then closed). */
async function closedPort(): Promise<number> {
  const s = net.createServer();
  await new Promise<void>((r) => s.listen(0, '127.0.0.1', r));
  const port = (s.address() as AddressInfo).port;
  await new Promise((r) => s.close(r));
  return port;
}

t.test('page keys', async (t) => {
  const u = (s: string) => new URL(s);
  const keys0 = pageKeys(
    [
      u('https://a.example/'),
      u('https://a.example/docs/intro.html'),
      u('https://a.example/docs/intro'),
      u('https://a.example/docs/intro/'),
      u('https://a.example/%C3%A9t%C3%A9/../x y'),
      u('https://a.example/a/..%2F..%2Fetc'),
      u('https://a.example/report.pdf'),
    ],
    false,
  );
  t.same(
    keys0,
    ['index', 'docs/intro', 'docs/intro~2', 'docs/intro~3', 'x-y', 'a/.._.._etc', 'report.pdf'],
    'readable, unique, clashes in order',
  );
  const keys = pageKeys([u('https://a.example/search?q=1'), u('https://a.example/search?q=2')], false);
  t.match(keys[0], /^search-[0-9a-f]{6}$/);
  t.not(keys[0], keys[1], 'a query adds its hash');
  t.same(pageKeys([u('http://127.0.0.1:8080/p'), u('https://b.example/p')], true), ['127.0.0.1_8080/p', 'b.example/p'], 'hosts prefixed');
  const b = planBatch(['https://a.example/x#top', 'https://a.example/x', 'https://a.example/y'], (s) => new URL(s));
  t.equal(b.duplicates, 1);
  t.same(
    b.pages.map((p) => p.key),
    ['x', 'y'],
  );
  t.ok(
    pageKeys([u('https://a.example/../../x/./y')], false).every((k) => !k.split('/').some((s) => s === '..' || s === '.' || !s)),
    'never . or .. segments',
  );
});

t.test('batch: duplicates, an unreachable host, bad input', async (t) => {
  const app = await startTestApp(t, {
    actors: ['wallet', 'job-supervisor', 'converter'],
    config: { outbound: { allowCidrs: ['127.0.0.1/32'] }, websitepro: { fetchTimeoutMs: 3000 } },
  });
  const site = await fixtureServer(t, {
    '/a': html('<html><title>A</title><body><p>Page A</p></body></html>'),
    '/b': html('<html><title>B</title><body><p>Page B</p></body></html>'),
  });
  const down = `http://127.0.0.1:${await closedPort()}/gone`;
  const k = await app.newKey();
  await wallet.grant(app.nc, k.walletId, 10_000, 'test');
  const balance = async () => (await wallet.balance(app.nc, k.walletId)).balance;

  // bad input: 400 with the spec's code, nothing charged
  const bad = async (body: unknown, code: string, why: string) => {
    const r = await app.request('POST', '/v1/websitepro/jobs', { key: k.key, body });
    t.equal(r.status, 400, `${why}: ${r.text}`);
    t.equal(r.json?.error?.code, code, why);
  };
  await bad({ outputs: ['text'] }, 'bad_url', 'neither url nor urls');
  await bad({ url: site.url('/a'), urls: [site.url('/b')], outputs: ['text'] }, 'bad_url', 'both url and urls');
  await bad({ urls: [], outputs: ['text'] }, 'bad_url', 'no URL');
  await bad({ urls: [site.url('/a'), 'ftp://x.example/'], outputs: ['text'] }, 'bad_url', 'a URL not http(s)');
  await bad({ urls: [site.url('/a'), 42], outputs: ['text'] }, 'bad_url', 'not a string');
  await bad({ urls: [site.url('/a')], outputs: [] }, 'no_output', 'no output');
  await bad({ urls: [site.url('/a'), 'http://10.0.0.1/x'], outputs: ['text'] }, 'blocked_address', 'a private address');
  await bad({ urls: [down], outputs: ['text'] }, 'unreachable', 'no host answers');
  t.equal(await balance(), 10_000, 'nothing charged for bad input');

  // the existing one-page body is answered as before
  const one = await app.request('POST', '/v1/websitepro/jobs?wait=20', { key: k.key, body: { url: site.url('/a'), outputs: ['text'] } });
  t.equal(one.status, 201, one.text);
  t.same(
    one.json.job.results.map((r: { key: string }) => r.key),
    ['text'],
  );
  t.notOk('resultCount' in one.json.job, 'a one-page job has no page-set fields');
  const afterOne = await balance();

  // duplicates folded, their slot refunded by one entry; the unreachable host's page failed and refunded
  const urls = [site.url('/a'), `${site.url('/a')}#again`, site.url('/b'), down];
  const q = await app.request('POST', '/v1/websitepro/quote', { key: k.key, body: { urls, outputs: ['markdown', 'text'] } });
  t.equal(q.json.cost, 4 * 50, 'four slots quoted');
  t.equal(q.json.target, '127.0.0.1 +1', 'the first host and a count');
  const r = await app.request('POST', '/v1/websitepro/jobs', { key: k.key, body: { urls, outputs: ['markdown', 'text'] } });
  t.equal(r.status, 201, r.text);
  let job = r.json.job;
  for (let i = 0; i < 10 && job.status !== 'completed' && job.status !== 'failed'; i++)
    job = (await app.request('GET', `/v1/jobs/${job.id}?wait=20`, { key: k.key })).json.job;
  t.equal(job.status, 'completed');
  t.match(job.pages, { total: 3, slots: 4, recorded: 3, done: 4, failed: 2 });
  t.equal(job.refunded, 50 + 50, 'the duplicate slot and the unreachable page');
  t.equal(job.charged, 2 * 50, 'charged exactly the two delivered pages');
  t.equal(await balance(), afterOne - job.charged);
  t.notOk(job.resultsNext, 'all results inline');
  const byKey = Object.fromEntries(job.results.map((x: { key: string }) => [x.key, x]));
  const host = new URL(site.url('/a')).host.replace(':', '_');
  t.match(byKey[`${host}/a/markdown`], { status: 'done', source: site.url('/a'), page: site.url('/a') });
  const downKey = `${new URL(down).host.replace(':', '_')}/gone/text`;
  t.match(byKey[downKey], { status: 'failed', refunded: true, error: 'unreachable', source: down });
  t.equal(Object.keys(byKey).length, 6);
  t.equal(site.hits.filter((h) => h === '/a').length, 2, 'the duplicate fetched once (and once by the one-page job)');

  const { entries } = await wallet.transactions(app.nc, k.walletId, undefined, 50);
  const mine = (entries as { type: string; jobId?: string; resultKey?: string; amount: number }[]).filter((e) => e.jobId === job.id);
  t.equal(mine.filter((e) => e.type === 'charge').length, 1, 'one charge');
  t.same(
    mine
      .filter((e) => e.type === 'refund')
      .map((e) => [e.resultKey, e.amount])
      .sort(),
    [
      ['_slots', 50],
      [`${new URL(down).host.replace(':', '_')}/gone/markdown`, 30],
      [`${new URL(down).host.replace(':', '_')}/gone/text`, 20],
    ].sort(),
    'each failed result on its own, the unused slot by one entry',
  );
  // SSE: one `result` event per page with its results, then the finish; a resume after the first page sends the others
  const sse = await openSse(`${app.url}/v1/jobs/${job.id}/events`, k.key);
  await sse.ended;
  const pages = sse.events.filter((e) => e.event === 'result');
  t.equal(pages.length, 3, 'one event per page');
  t.same(pages.flatMap((e) => e.data.results.map((x: { key: string }) => x.key)).sort(), Object.keys(byKey).sort());
  t.same(
    sse.events.slice(-2).map((e) => e.event),
    ['status', 'job'],
    'the finish after the pages',
  );
  const again = await openSse(`${app.url}/v1/jobs/${job.id}/events`, k.key, { 'last-event-id': pages[0]!.id! });
  await again.ended;
  t.same(
    again.events.filter((e) => e.event === 'result').map((e) => e.data.pageKey),
    pages.slice(1).map((e) => e.data.pageKey),
    'resumed after the first page',
  );

  t.same((await audit(app.nc)).violations, [], 'audit clean');
});
