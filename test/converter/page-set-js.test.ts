// A page set's page that needs JavaScript is converted as a one-page job's is (actors/converter/browser.ts
// convertPage, shared by both): rendered by browser-pool and its rendered DOM converted; with no
// browser-pool running, its static HTML converted with a warning in its metadata. Real gateway,
// supervisor, wallet, converter, browser-pool (Chromium), NATS and HTTP servers.
import t, { type Test } from 'tap';
import { existsSync } from 'node:fs';
import { fixtureServer, html } from '../outbound/fixture-server.ts';
import { SPA_SHELL, SPA_SCRIPT, ARTICLE } from './pages.ts';
import { startWebsiteproApp } from '../helpers/app.ts';

const routes = {
  '/spa': html(SPA_SHELL),
  '/app.js': (_q: unknown, r: import('node:http').ServerResponse) =>
    r.writeHead(200, { 'content-type': 'text/javascript' }).end(SPA_SCRIPT),
  '/article': html(ARTICLE),
};

/** A batch of the SPA and the article, metadata + markdown: its finished job and a reader of its results. */
async function batch(t: Test, withBrowser: boolean) {
  const { app, key } = await startWebsiteproApp(t, withBrowser);
  const s = await fixtureServer(t, routes);
  const r = await app.request('POST', '/v1/websitepro/jobs', {
    key,
    body: { urls: [s.url('/spa'), s.url('/article')], outputs: ['metadata', 'markdown'] },
  });
  t.equal(r.status, 201, r.text);
  let job = r.json.job;
  for (let i = 0; i < 600 && job.status !== 'completed' && job.status !== 'failed'; i++) {
    await new Promise((res) => setTimeout(res, 200));
    job = (await app.request('GET', `/v1/jobs/${job.id}`, { key })).json.job;
  }
  t.equal(job.status, 'completed');
  const results = job.results as { key: string; status: string; page: string }[];
  const read = async (page: string, output: string) => {
    const x = results.find((y) => y.page === s.url(page) && y.key.endsWith(output))!;
    t.equal(x?.status, 'done', `${page} ${output}: ${JSON.stringify(x)}`);
    return (await app.request('GET', `/v1/jobs/${job.id}/results/${encodeURIComponent(x.key)}`, { key })).text;
  };
  return { read, hits: s.hits };
}

t.test('no browser-pool: the static HTML, with a warning', async (t) => {
  const { read } = await batch(t, false);
  const meta = JSON.parse(await read('/spa', 'metadata'));
  t.equal(meta.rendered, false);
  t.match(meta.warnings[0], /needs JavaScript .* could not be rendered/);
  t.same(JSON.parse(await read('/article', 'metadata')).warnings, [], 'a page that needs none: no warning');
});

t.test(
  'with browser-pool (Chromium): rendered, then converted',
  { skip: existsSync('/usr/bin/chromium') ? false : 'no chromium' },
  async (t) => {
    const { read, hits } = await batch(t, true);
    const meta = JSON.parse(await read('/spa', 'metadata'));
    t.equal(meta.rendered, true);
    t.same(meta.warnings, []);
    t.match(await read('/spa', 'markdown'), 'only after JavaScript ran in a browser');
    t.equal(hits.filter((h) => h === '/spa').length, 2, 'the static fetch and the rendering browser');
  },
);
