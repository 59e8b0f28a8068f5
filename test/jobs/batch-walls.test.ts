// Walls in a batch: a page of a page set that answers with a login wall or a bot challenge fails
// every output with `login_required` / `blocked` and its evidence, refunded on its own; the other
// pages are delivered. Real gateway, supervisor, wallet, converter, NATS.
import { readFileSync } from 'node:fs';
import t from 'tap';
import { startTestApp } from '../helpers/app.ts';
import { wallet } from '../../shared/protocol/wallet.ts';
import { audit } from '../../shared/audit.ts';
import { fixtureServer, html } from '../outbound/fixture-server.ts';
import { ARTICLE } from '../converter/pages.ts';

const wall = (name: string) => readFileSync(new URL(`../fixtures/walls/${name}`, import.meta.url), 'utf8');

t.test('a batch: walls are failed, refunded pages with evidence; the rest delivered', async (t) => {
  const app = await startTestApp(t, {
    actors: ['wallet', 'job-supervisor', 'converter'],
    config: { outbound: { allowCidrs: ['127.0.0.1/32'] }, websitepro: { fetchTimeoutMs: 5000 } },
  });
  const site = await fixtureServer(t, {
    '/post': html(ARTICLE),
    '/members/roadmap': html(wall('login-form.html')),
    '/shop': (_q, r) =>
      r
        .writeHead(403, { 'content-type': 'text/html; charset=UTF-8', 'cf-mitigated': 'challenge', server: 'cloudflare' })
        .end(wall('cloudflare-just-a-moment.html')),
  });
  const k = await app.newKey();
  await wallet.grant(app.nc, k.walletId, 10_000, 'test');
  const body = { urls: [site.url('/post'), site.url('/members/roadmap'), site.url('/shop')], outputs: ['markdown', 'text'] };
  const r = await app.request('POST', '/v1/websitepro/jobs?wait=25', { key: k.key, body });
  t.equal(r.status, 201, r.text);
  let job = r.json.job;
  for (let i = 0; i < 10 && (job.status === 'queued' || job.status === 'processing'); i++)
    job = (await app.request('GET', `/v1/jobs/${job.id}?wait=25`, { key: k.key })).json.job;
  t.equal(job.status, 'completed');
  const byKey = Object.fromEntries(job.results.map((x: { key: string }) => [x.key, x]));
  for (const out of ['markdown', 'text']) {
    t.match(byKey[`post/${out}`], { status: 'done' });
    t.match(byKey[`members/roadmap/${out}`], {
      status: 'failed',
      error: 'login_required',
      refunded: true,
      evidence: { signature: 'login-form' },
      source: site.url('/members/roadmap'),
    });
    t.match(byKey[`shop/${out}`], { status: 'failed', error: 'blocked', refunded: true, evidence: { status: 403 } });
  }
  const perPage = job.cost / 3;
  t.equal(job.charged, perPage, 'only the delivered page is charged');
  t.equal((await wallet.balance(app.nc, k.walletId)).balance, 10_000 - perPage);
  const a = await audit(app.nc);
  t.same(a.violations, [], 'the money adds up');
});
