// websitepro's page controls over HTTP (issue 43): every bad control is a 400 bad_request before
// any charge; the quote prices the new outputs and the browser render; a job's request headers and
// cookies never appear in the job, the list, the events or the stored document (only their names).
import t from 'tap';
import type { IncomingHttpHeaders } from 'node:http';
import { Kvm } from '@nats-io/kv';
import { startJobsApi } from './app.ts';
import { startTestApp } from '../helpers/app.ts';
import { openSse } from '../helpers/sse.ts';
import { wallet } from '../../shared/protocol/wallet.ts';
import { fixtureServer, html } from '../outbound/fixture-server.ts';
import { BUCKETS } from '../../shared/names.ts';
import { readJob } from '../../shared/jobs/store.ts';
import { MAX_PAGE_SCRIPT_BYTES } from '../../shared/schemas/page-controls.ts';

t.test('bad controls: 400 bad_request before any charge', async (t) => {
  const s = await startJobsApi(t, {}, { workers: false });
  const { key, walletId } = await s.newWallet(10_000);
  const url = `${s.targetUrl}/page`;
  const click = { type: 'click', selector: 'button' };
  const cases: [string, Record<string, unknown>, RegExp?][] = [
    ['an invalid target selector', { targetSelectors: ['div['] }, /div\[/],
    ['an invalid remove selector', { removeSelectors: ['p', ':::nope'] }, /:::nope/],
    ['an invalid waitFor', { waitFor: 'a[href=' }, /a\[href=/],
    ['an invalid action selector', { actions: [{ type: 'click', selector: '#a..b' }] }, /#a\.\.b/],
    ['Host', { headers: { Host: 'evil.example' } }, /Host/],
    ['a hop-by-hop header', { headers: { Connection: 'close' } }, /Connection/],
    ['another hop-by-hop header', { headers: { 'Transfer-Encoding': 'chunked' } }],
    ['a Proxy-* header', { headers: { 'Proxy-Authorization': 'Basic eDp5' } }, /Proxy-Authorization/],
    ['Cookie as a header', { headers: { cookie: 'a=b' } }],
    ['a header value with a newline', { headers: { 'X-A': 'a\r\nX-B: b' } }],
    ['a cookie value with ;', { cookies: [{ name: 'a', value: 'b; c=d' }] }],
    ['too many actions', { actions: Array.from({ length: 21 }, () => click) }],
    [
      'actions waiting over 30 s in all',
      {
        actions: [
          { type: 'wait', ms: 20_000 },
          { type: 'wait', ms: 10_001 },
        ],
      },
      /30000/,
    ],
    ['a timeout over 60 s', { timeout: 61 }],
    ['targetSelectors with mainContent: true', { targetSelectors: ['p'], mainContent: true }],
    ['pdf options without the pdf output', { pdf: { format: 'Letter' } }],
    // under the schema's 16,384 characters, over its 16 KB in bytes
    ['a PDF template over 16 KB', { outputs: ['pdf'], pdf: { headerTemplate: 'é'.repeat(MAX_PAGE_SCRIPT_BYTES / 2 + 1) } }, /16384 bytes/],
    ['a PDF template over 16 K characters', { outputs: ['pdf'], pdf: { footerTemplate: 'x'.repeat(MAX_PAGE_SCRIPT_BYTES + 1) } }],
    ['a paper size not offered', { outputs: ['pdf'], pdf: { format: 'A0' } }],
    ['a margin without a unit', { outputs: ['pdf'], pdf: { margin: { top: '10' } } }],
  ];
  for (const [what, extra, message] of cases) {
    for (const path of ['/v1/websitepro/quote', '/v1/websitepro/jobs']) {
      const r = await s.request('POST', path, { key, body: { url, outputs: ['markdown'], ...extra } });
      t.equal(r.status, 400, `${what} (${path}): ${r.text}`);
      t.equal(r.json?.error?.code, 'bad_request', what);
      if (message) t.match(r.json?.error?.message, message, `${what}: the message names it`);
    }
  }
  t.equal(await s.balance(walletId), 10_000, 'nothing charged');
  const list = await s.request('GET', '/v1/jobs', { key });
  t.same(list.json.jobs, [], 'no job written');
});

t.test('the quote prices the new outputs and the browser render', async (t) => {
  const s = await startJobsApi(t, {}, { workers: false });
  const { key } = await s.newWallet(1000);
  const url = `${s.targetUrl}/page`;
  const p = s.config.pricing.websitepro;
  const q = await s.request('POST', '/v1/websitepro/quote', {
    key,
    body: { url, outputs: ['markdown', 'links', 'images', 'rawHtml'], waitFor: '#app', removeSelectors: ['.ad'] },
  });
  t.equal(q.status, 200, q.text);
  t.same(q.json.items, [
    { key: 'markdown', price: p.markdown },
    { key: 'links', price: p.links },
    { key: 'images', price: p.images },
    { key: 'rawHtml', price: p.rawHtml },
    { key: 'render', price: p.render },
  ]);
  t.equal(q.json.cost, p.markdown + p.links + p.images + p.rawHtml + p.render);
  const noRender = await s.request('POST', '/v1/websitepro/quote', { key, body: { url, outputs: ['links'], removeSelectors: ['.ad'] } });
  t.same(noRender.json.items, [{ key: 'links', price: p.links }], 'no browser asked: no render');
  const pdfOnly = await s.request('POST', '/v1/websitepro/quote', {
    key,
    body: {
      url,
      outputs: ['pdf'],
      waitFor: '#app',
      actions: [{ type: 'scroll', to: 'bottom' }],
      pdf: { format: 'Letter', landscape: true },
    },
  });
  t.same(pdfOnly.json.items, [{ key: 'pdf', price: p.pdf }], 'a pdf is printed by a browser anyway: no render');
});

t.test('request headers and cookies: names in the job, values nowhere', async (t) => {
  const app = await startTestApp(t, {
    actors: ['wallet', 'job-supervisor', 'converter'],
    config: { outbound: { allowCidrs: ['127.0.0.1/32'] } },
  });
  const seen: IncomingHttpHeaders[] = [];
  const site = await fixtureServer(t, {
    '/private': (req, res) => {
      seen.push(req.headers);
      html('<title>Members</title><main><p>Only for members with the token.</p></main>')(req, res);
    },
  });
  const k = await app.newKey();
  await wallet.grant(app.nc, k.walletId, 10_000, 'test');
  const SECRET = 'tok-3f9a1c-value';
  const COOKIE = 'session-77e1-value';
  const r = await app.request('POST', '/v1/websitepro/jobs', {
    key: k.key,
    body: {
      url: site.url('/private'),
      outputs: ['text'],
      headers: { 'X-Token': SECRET },
      cookies: [{ name: 'sid', value: COOKIE }],
      removeSelectors: ['.none'],
    },
  });
  t.equal(r.status, 201, r.text);
  const id = r.json.job.id;
  const sse = await openSse(`${app.url}/v1/jobs/${id}/events`, k.key);
  await sse.ended;
  let job = r.json.job;
  for (let i = 0; i < 10 && (job.status === 'queued' || job.status === 'processing'); i++)
    job = (await app.request('GET', `/v1/jobs/${id}?wait=25`, { key: k.key })).json.job;
  const list = await app.request('GET', '/v1/jobs', { key: k.key });
  const kv = await new Kvm(app.nc).open(BUCKETS.jobs);
  const stored = await kv.get(id);
  const doc = (await readJob(kv, id))!.job;
  t.same(doc.request.headers, ['X-Token'], 'the stored request has the header names only');
  t.same(doc.request.cookies, ['sid'], 'and the cookie names');
  t.same(doc.results[0]!.params?.controls, { removeSelectors: ['.none'], headerNames: ['X-Token'], cookieNames: ['sid'] });
  const places = {
    creation: r.text,
    job: JSON.stringify(job),
    list: list.text,
    events: JSON.stringify(sse.events),
    'stored document': new TextDecoder().decode(stored?.value),
  };
  for (const [where, text] of Object.entries(places)) {
    t.notOk(text.includes(SECRET), `the header's value is not in the ${where}`);
    t.notOk(text.includes(COOKIE), `the cookie's value is not in the ${where}`);
  }
  t.ok(places['stored document'].includes('X-Token'), 'the stored document was read');

  // the gateway puts the plan's task secrets into the task messages it publishes
  // (shared/services/task-secret.ts): the target sees them, nothing stored does
  t.test('the target sees them', async (t) => {
    t.equal(job.results[0].status, 'done', JSON.stringify(job.results[0]));
    t.equal(seen[0]?.['x-token'], SECRET);
    t.equal(seen[0]?.cookie, `sid=${COOKIE}`);
  });
});
