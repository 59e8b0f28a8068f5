// Walls are not deliveries, end to end: a one-page websitepro job on a login wall and on a bot
// challenge fails with `login_required` / `blocked`, every output refunded, the evidence on the result;
// a normal page beside them is delivered as before. Real gateway, supervisor, wallet, converter, NATS.
import { readFileSync } from 'node:fs';
import t from 'tap';
import { startTestApp } from '../helpers/app.ts';
import { wallet } from '../../shared/protocol/wallet.ts';
import { audit } from '../../shared/audit.ts';
import { fixtureServer, html } from '../outbound/fixture-server.ts';
import { ARTICLE } from './pages.ts';

const wall = (name: string) => readFileSync(new URL(`../fixtures/walls/${name}`, import.meta.url), 'utf8');

t.test('walls are failed, refunded results with evidence', async (t) => {
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
  const balance = async () => (await wallet.balance(app.nc, k.walletId)).balance;

  const run = async (path: string, outputs: string[]) => {
    const r = await app.request('POST', '/v1/websitepro/jobs?wait=25', { key: k.key, body: { url: site.url(path), outputs } });
    t.equal(r.status, 201, r.text);
    let job = r.json.job;
    for (let i = 0; i < 10 && (job.status === 'queued' || job.status === 'processing'); i++)
      job = (await app.request('GET', `/v1/jobs/${job.id}?wait=25`, { key: k.key })).json.job;
    return job;
  };

  const login = await run('/members/roadmap', ['markdown', 'metadata', 'text']);
  t.match(login, { status: 'failed', charged: 0 });
  t.equal(login.refunded, login.cost, 'all of it refunded');
  t.equal(login.results.length, 3);
  for (const r of login.results) {
    t.match(r, { status: 'failed', error: 'login_required', refunded: true }, r.key);
    t.same(r.evidence, { status: 200, title: 'Sign in · Example Wiki', signature: 'login-form' }, `${r.key}: evidence shown`);
    t.notOk(r.url, 'no file to download');
  }
  t.equal(await balance(), 10_000, 'the wall cost nothing');

  const challenge = await run('/shop', ['markdown']);
  t.match(challenge, { status: 'failed', charged: 0 });
  t.match(challenge.results[0], {
    error: 'blocked',
    refunded: true,
    evidence: { status: 403, title: 'Just a moment...', signature: 'cloudflare-challenge' },
  });
  t.match(challenge.results[0].message, /bot challenge/);

  const ok = await run('/post', ['markdown']);
  t.match(ok, { status: 'completed' });
  t.match(ok.results[0], { status: 'done', refunded: false });
  t.notOk(ok.results[0].evidence, 'no evidence on a delivered page');
  t.equal(await balance(), 10_000 - ok.charged, 'only the real page is paid for');

  const page = await app.request('GET', '/docs/errors');
  t.match(page.text, /id="result-blocked"/, 'the errors page lists blocked');
  t.match(page.text, /id="result-login_required"/, 'and login_required');

  const report = await audit(app.nc);
  t.same(report.violations, [], 'the money adds up');
});
