// A real Chromium forced through the guard proxy: the page loads, while a sub-resource, a redirect
// and a script fetch aimed at a non-allowed address never reach that address.
import t from 'tap';
import { existsSync } from 'node:fs';
import puppeteer from 'puppeteer-core';
import { startGuardProxy, chromiumProxyArgs } from '../../shared/outbound/index.ts';
import { fixtureServer, html, redirect } from './fixture-server.ts';

const CHROMIUM = '/usr/bin/chromium';

t.test('chromium through the proxy', { skip: existsSync(CHROMIUM) ? false : 'no /usr/bin/chromium' }, async (t) => {
  // the "private" server lives on 127.0.0.2, which the allow list does not cover
  const priv = await fixtureServer(t, { '/pixel.png': html('secret'), '/api': html('secret') }, '127.0.0.2');
  const pub = await fixtureServer(t, {
    '/': html(`<title>ok</title><img src="${priv.url('/pixel.png')}"><img src="/hop"><iframe src="${priv.url('/api')}"></iframe>
      <script>fetch(${JSON.stringify(priv.url('/api'))}).catch(()=>{}).finally(()=>{document.title='done'})</script>`),
    '/hop': redirect(priv.url('/pixel.png')),
  });
  const proxy = await startGuardProxy({ allowCidrs: ['127.0.0.1/32'] });
  t.teardown(() => proxy.stop());
  const browser = await puppeteer.launch({
    executablePath: CHROMIUM,
    headless: true,
    args: [
      '--no-sandbox',
      '--disable-gpu',
      '--disable-background-networking',
      '--disable-component-update',
      '--no-first-run',
      '--disable-sync',
      ...chromiumProxyArgs(proxy),
    ],
  });
  t.teardown(() => browser.close());
  const page = await browser.newPage();
  const res = await page.goto(pub.url('/'), { waitUntil: 'networkidle0', timeout: 20000 });
  t.equal(res?.status(), 200, 'the allowed page loaded through the proxy');
  await page.waitForFunction(() => document.title === 'done', { timeout: 10000 });
  t.equal(priv.hits.length, 0, 'no request reached 127.0.0.2');
  t.ok(proxy.blocked >= 2, `proxy refused ${proxy.blocked} connections`);
  t.ok(pub.hits.includes('/hop'), 'the redirecting request went out, its target did not');
});
