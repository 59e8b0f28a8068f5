// The API reference at /docs in headless Chromium: Scalar's bundle, served by the gateway, renders
// /openapi.json; every path of the document is on the page; every request the page makes goes to
// the gateway (recorded), and nothing is refused by its Content-Security-Policy (a request to
// another host would be: the policy allows this gateway only). Linked from /, /account and the
// errors page, which keeps its anchors.
import t from 'tap';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import puppeteer from 'puppeteer-core';
import { startTestApp } from '../helpers/app.ts';
import { ROOT } from '../../shared/config/index.ts';

const FLAGS = [
  '--no-sandbox',
  '--disable-gpu',
  '--disable-background-networking',
  '--disable-component-update',
  '--no-first-run',
  '--disable-sync',
];

t.test('the reference page renders every path, loads nothing from another host', async (t) => {
  const app = await startTestApp(t);
  const head = await app.request('GET', '/docs');
  t.equal(head.status, 200);
  t.match(head.headers.get('content-type'), /text\/html/);
  const csp = head.headers.get('content-security-policy') ?? '';
  t.match(csp, /default-src 'none'/, 'nothing is allowed unless named');
  for (const d of csp.split(';').map((x) => x.trim())) {
    const sources = d.split(/\s+/).slice(1);
    t.ok(
      sources.every((s) => ["'self'", "'none'", "'unsafe-inline'", 'data:', 'blob:'].includes(s)),
      `${d}: no host but this gateway`,
    );
  }
  const bundle = await fetch(`${app.url}/docs/scalar.js`, { headers: { 'accept-encoding': 'gzip' } });
  t.equal(bundle.status, 200, 'the renderer is served by the gateway');
  t.equal(bundle.headers.get('content-encoding'), 'gzip', 'compressed for clients that take gzip');

  const spec = (await app.request('GET', '/openapi.json')).json;
  // no internet: every host name but the gateway's address fails to resolve, as on a machine offline
  const offline = ['--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1'];
  const browser = await puppeteer.launch({ executablePath: '/usr/bin/chromium', headless: true, args: [...FLAGS, ...offline] });
  t.teardown(() => browser.close());
  const page = await browser.newPage();
  const requests: string[] = [];
  const violations: string[] = [];
  page.on('request', (r) => void requests.push(r.url()));
  page.on('console', (m) => {
    const v = /^csp-violation (\S+) (.*)$/.exec(m.text());
    if (v) violations.push(`${v[1]} ${v[2]}`);
  });
  await page.evaluateOnNewDocument(() => {
    document.addEventListener('securitypolicyviolation', (e) => console.error(`csp-violation ${e.violatedDirective} ${e.blockedURI}`));
  });
  const res = await page.goto(`${app.url}/docs`, { waitUntil: 'networkidle0', timeout: 60_000 });
  t.equal(res?.status(), 200);
  // the renderer draws an operation when it scrolls into view: scroll down until every one is drawn
  const ops = Object.values(spec.paths as Record<string, Record<string, { summary: string }>>).flatMap((o) => Object.values(o));
  let text = '';
  for (let i = 0; i < 60; i++) {
    text = await page.evaluate(() => document.body.innerText);
    if (ops.every((op) => text.includes(op.summary))) break;
    await page.evaluate(() => window.scrollBy(0, 2500));
    await new Promise((r) => setTimeout(r, 250));
  }
  for (const [path, ops] of Object.entries(spec.paths as Record<string, Record<string, { summary: string }>>)) {
    t.ok(text.includes(path), `path ${path} is on the page`);
    for (const op of Object.values(ops)) t.ok(text.includes(op.summary), `"${op.summary}" is on the page`);
  }
  t.ok(text.includes('curl'), 'curl examples are shown');
  t.ok(text.includes('payloads-client'), 'typed client examples (x-codeSamples) are shown');
  mkdirSync(join(ROOT, 'test-output', 'docs'), { recursive: true });
  await page.screenshot({ path: join(ROOT, 'test-output', 'docs', 'reference.png') });
  t.ok(requests.length >= 4, `the page's requests were recorded (${requests.length})`);
  t.same(
    requests.filter((u) => !u.startsWith(`${app.url}/`) && !u.startsWith('data:')),
    [],
    'no request leaves the gateway',
  );
  t.ok(requests.includes(`${app.url}/openapi.json`), 'the page reads /openapi.json');
  // the bundle probes whether it may eval (refused, and it renders without); no load was refused
  t.same(
    violations.filter((v) => !/^script-src(-elem)? eval$/.test(v)),
    [],
    'no load refused by the Content-Security-Policy (nothing tried elsewhere)',
  );
});

t.test('the reference is linked from /, /account and the errors page; the errors page keeps its anchors', async (t) => {
  const app = await startTestApp(t);
  const html = { accept: 'text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8' };
  for (const path of ['/', '/account', '/docs/errors']) {
    const r = await app.request('GET', path, { headers: html });
    t.equal(r.status, 200, path);
    t.match(r.text, /href="\/docs"/, `${path} links the reference`);
  }
  const errors = (await app.request('GET', '/docs/errors')).text;
  t.match(errors, /<tr id="insufficient_funds">/, 'one anchor per code');
  const home = (await app.request('GET', '/', { headers: html })).text;
  t.match(home, /href="\/account"/);
  t.match(home, /href="\/docs\/errors"/);
});
