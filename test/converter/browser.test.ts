// Converter + the real browser-pool actor (Chromium): a client-rendered page is rendered before it
// is converted, and pdf is printed by Chromium. Without browser-pool: pdf fails as
// service_unavailable (refunded by the supervisor) and a client-rendered page is converted from its
// static HTML with a warning.
import t from 'tap';
import { existsSync } from 'node:fs';
import { fixtureServer, html } from '../outbound/fixture-server.ts';
import { startConverter } from './harness.ts';
import { SPA_SHELL, SPA_SCRIPT, ARTICLE } from './pages.ts';
import { testLog } from '../helpers/nats.ts';

const routes = {
  '/spa': html(SPA_SHELL),
  '/app.js': (_q: unknown, r: import('node:http').ServerResponse) =>
    r.writeHead(200, { 'content-type': 'text/javascript' }).end(SPA_SCRIPT),
  '/article': html(ARTICLE),
};

t.test('without browser-pool', async (t) => {
  const c = await startConverter(t);
  const s = await fixtureServer(t, routes);
  const only = await c.runJob(s.url('/article'), ['pdf']);
  t.match(only.pdf, { kind: 'failed', error: 'service_unavailable' });
  const spa = await c.runJob(s.url('/spa'), ['metadata', 'markdown', 'pdf']);
  t.match(spa.pdf, { kind: 'failed', error: 'service_unavailable' });
  t.equal(spa.markdown?.kind, 'done');
  const meta = JSON.parse(await c.read(spa.metadata!));
  t.equal(meta.rendered, false);
  t.match(meta.warnings[0], /needs JavaScript .* could not be rendered/);
});

t.test('with the browser-pool actor (Chromium)', { skip: existsSync('/usr/bin/chromium') ? false : 'no chromium' }, async (t) => {
  const c = await startConverter(t, { shots: { browsers: ['chromium'], concurrency: 1, pageTimeoutMs: 30000 } });
  const { start } = await import('../../actors/browser-pool/index.ts');
  const pool = await start({ nc: c.nc, config: c.config, log: testLog(), instanceId: 'bp-test' });
  t.teardown(() => pool.stop());
  const s = await fixtureServer(t, routes);

  const spa = await c.runJob(s.url('/spa'), ['metadata', 'markdown', 'pdf'], 120000);
  t.equal(spa.markdown?.kind, 'done', JSON.stringify(spa.markdown));
  const md = await c.read(spa.markdown!);
  t.match(md, 'Rendered heading');
  t.match(md, 'only after JavaScript ran in a browser');
  const meta = JSON.parse(await c.read(spa.metadata!));
  t.equal(meta.rendered, true);
  t.same(meta.warnings, []);
  t.equal(s.hits.filter((h) => h === '/spa').length, 3, 'static fetch, rendering browser, printing browser');

  t.equal(spa.pdf?.kind, 'done', JSON.stringify(spa.pdf));
  const pdf = await c.store.getBlob(spa.pdf!.kind === 'done' ? spa.pdf!.file!.name : '');
  t.equal(Buffer.from(pdf!).subarray(0, 5).toString(), '%PDF-');
  t.equal(spa.pdf!.kind === 'done' && spa.pdf!.file!.contentType, 'application/pdf');
  t.equal(spa.pdf!.kind === 'done' && spa.pdf!.file!.bytes, pdf!.length);
});
