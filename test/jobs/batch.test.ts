// websitepro `urls` (issue 42, batch) end to end with the real converter: 500 URLs in one body are
// one job, one quote and one charge; each failed URL is refunded on its own; the results are read
// to the end through the paging; the zip holds every delivered page; the audit is clean.
import t from 'tap';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { startTestApp } from '../helpers/app.ts';
import { wallet } from '../../shared/protocol/wallet.ts';
import { audit } from '../../shared/audit.ts';
import { readZip } from './app.ts';

const PAGES = Number(process.env.BATCH_PAGES ?? 500);
/** Every 50th URL answers 404: a failed page, its results refunded. */
const missing = (n: number) => n % 50 === 7;

t.test('a batch of 500 URLs in one body', async (t) => {
  const app = await startTestApp(t, {
    actors: ['wallet', 'job-supervisor', 'converter'],
    config: { outbound: { allowCidrs: ['127.0.0.1/32'] }, websitepro: { fetchTimeoutMs: 5000 }, crawl: { concurrency: 8 } },
  });
  const hits: string[] = [];
  const site = http.createServer((req, res) => {
    hits.push(req.url ?? '');
    const m = /^\/p\/(\d+)\.html$/.exec(req.url ?? '');
    if (!m || missing(Number(m[1]))) return res.writeHead(404).end('no');
    res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' });
    res.end(`<html><head><title>Page ${m[1]}</title></head><body><h1>Page ${m[1]}</h1><p>Text of page ${m[1]}.</p></body></html>`);
  });
  await new Promise<void>((r) => site.listen(0, '127.0.0.1', r));
  t.teardown(() => new Promise((r) => site.close(r)));
  const base = `http://127.0.0.1:${(site.address() as AddressInfo).port}`;
  const urls = Array.from({ length: PAGES }, (_, i) => `${base}/p/${i}.html`);
  const outputs = ['markdown', 'text', 'metadata'];
  const perPage = 30 + 20 + 20;
  const k = await app.newKey();
  await wallet.grant(app.nc, k.walletId, 100_000, 'test');
  const balance = async () => (await wallet.balance(app.nc, k.walletId)).balance;

  const body = { urls, outputs };
  t.ok(JSON.stringify(body).length < 65536, `the body fits the spec's 64 KB (${JSON.stringify(body).length} bytes)`);
  const q = await app.request('POST', '/v1/websitepro/quote', { key: k.key, body });
  t.equal(q.status, 200, q.text);
  t.equal(q.json.cost, PAGES * perPage);
  t.same(
    q.json.items.map((i: Record<string, unknown>) => [i.key, i.price, i.quantity, i.unitPrice]),
    [
      ['markdown', 30 * PAGES, PAGES, 30],
      ['text', 20 * PAGES, PAGES, 20],
      ['metadata', 20 * PAGES, PAGES, 20],
    ],
    'one item per output with its quantity',
  );
  t.equal(q.json.target, '127.0.0.1');

  const r = await app.request('POST', '/v1/websitepro/jobs', { key: k.key, body });
  t.equal(r.status, 201, r.text);
  t.equal(r.json.balance, 100_000 - PAGES * perPage, 'charged in full at creation');
  let job = r.json.job;
  t.same(job.results, []);
  const until = Date.now() + 240_000;
  while ((job.status === 'queued' || job.status === 'processing') && Date.now() < until)
    job = (await app.request('GET', `/v1/jobs/${job.id}?wait=25`, { key: k.key })).json.job;
  t.equal(job.status, 'completed', JSON.stringify(job.pages));
  const failedPages = urls.filter((_, i) => missing(i)).length;
  t.equal(job.resultCount, PAGES * outputs.length);
  t.match(job.pages, { total: PAGES, recorded: PAGES, slots: PAGES, failed: failedPages * outputs.length });
  t.equal(job.refunded, failedPages * perPage, 'each failed page refunded');
  t.equal(job.charged, (PAGES - failedPages) * perPage, 'charged exactly what was delivered');
  t.equal(await balance(), 100_000 - job.charged);
  t.equal(hits.length, PAGES, 'one fetch per page, not one per output');

  // inline: whole pages up to 1,000 results; then the cursor, read to the end
  t.equal(job.results.length, 999);
  t.type(job.resultsNext, 'string');
  const all = [...job.results];
  let next: string | null = job.resultsNext;
  let reads = 0;
  while (next) {
    const p = await app.request('GET', `/v1/jobs/${job.id}/results?after=${encodeURIComponent(next)}`, { key: k.key });
    t.equal(p.status, 200, p.text);
    all.push(...p.json.results);
    next = p.json.next;
    reads++;
  }
  t.equal(reads, 1);
  t.equal(all.length, PAGES * outputs.length, 'every result read through the paging');
  t.equal(new Set(all.map((x) => x.key)).size, all.length, 'keys unique');
  const byKey = new Map(all.map((x) => [x.key, x]));
  t.match(byKey.get('p/3/markdown'), { status: 'done', refunded: false, price: 30, page: `${base}/p/3.html`, source: `${base}/p/3.html` });
  t.match(byKey.get('p/7/text'), { status: 'failed', refunded: true, error: 'http_error' });
  const failed = all.filter((x) => x.status === 'failed');
  t.equal(failed.length, failedPages * outputs.length);
  t.ok(
    failed.every((x) => x.refunded),
    'every failed result refunded',
  );

  // one result's file
  const md = await app.request('GET', new URL(byKey.get('p/3/markdown').url).pathname, { key: k.key });
  t.equal(md.status, 200);
  t.match(md.text, /# Page 3/);
  t.match(md.headers.get('content-disposition'), /p_3\.md/);

  // the list shows the page set without its results
  const list = await app.request('GET', '/v1/jobs', { key: k.key });
  const listed = list.json.jobs.find((j: { id: string }) => j.id === job.id);
  t.same(listed.results, []);
  t.equal(listed.resultCount, PAGES * outputs.length);
  t.type(listed.resultsNext, 'string');
  const first = await app.request('GET', `/v1/jobs/${job.id}/results?after=${listed.resultsNext}`, { key: k.key });
  t.equal(first.json.results.length, 999, 'the list cursor reads from the start');

  // the zip: every delivered file, named <pageKey>.<ext>
  const z = await fetch(`${app.url}/v1/jobs/${job.id}/zip`, { headers: { authorization: `Bearer ${k.key}` } });
  t.equal(z.status, 200);
  const entries = readZip(Buffer.from(await z.arrayBuffer()));
  const names = new Set(entries.map((e) => e.name));
  t.equal(entries.length, (PAGES - failedPages) * outputs.length);
  t.ok(names.has('p/3.md') && names.has('p/3.txt') && names.has('p/3.metadata.json'), 'named <pageKey>.<ext>');
  t.notOk(names.has('p/7.md'), 'no file for a failed page');

  const rep = await audit(app.nc);
  t.same(rep.violations, [], 'audit clean');
});
