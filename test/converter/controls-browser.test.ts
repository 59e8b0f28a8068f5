// websitepro's browser controls end to end (issue 43): the converter asks the real browser-pool
// actor (Chromium) to render with `controls` (waitFor, actions, headers, cookies) and to print with
// `pdf` options (session 29 contract, section 7).
import t, { type Test } from 'tap';
import { existsSync } from 'node:fs';
import type { IncomingHttpHeaders } from 'node:http';
import { fixtureServer, html } from '../outbound/fixture-server.ts';
import { startConverter } from './harness.ts';
import { testLog } from '../helpers/nats.ts';

const skip = existsSync('/usr/bin/chromium') ? false : 'no chromium';

const LATE = `<!doctype html><html><head><title>Late page</title></head><body><main><h1>Late page</h1>
<p>Static words of the page, enough of them to be read as an article by anyone who looks at it.</p>
<div id="slot"></div><button id="btn" onclick="document.getElementById('slot').insertAdjacentHTML('beforeend','<p id=clicked>Clicked content arrived.</p>')">More</button>
<script>setTimeout(() => document.getElementById('slot').insertAdjacentHTML('beforeend', '<p id="late">Late content arrived.</p>'), 400)</script>
</main></body></html>`;

// the button is pushed down by content the page inserts when the pointer first moves: the press,
// aimed where the button was, would land on that content (the late insert of LATE, made certain)
const PUSHED = `<!doctype html><html><head><title>Pushed page</title></head><body><main><h1>Pushed page</h1>
<p>Static words of the page, enough of them to be read as an article by anyone who looks at it.</p>
<div id="above"></div><button id="go" onclick="document.getElementById('above').insertAdjacentHTML('afterend','<p id=hit>The button was clicked.</p>')">Go</button>
<script>document.addEventListener('mousemove', () => document.getElementById('above').insertAdjacentHTML('beforeend', '<p style="height:300px;margin:0">Pushed in as the pointer came.</p>'), { once: true })</script>
</main></body></html>`;

t.test('browser controls through browser-pool', { skip }, async (t) => {
  const c = await startConverter(t, {
    outbound: { allowCidrs: ['127.0.0.1/32'] },
    shots: { browsers: ['chromium'], concurrency: 1, pageTimeoutMs: 30000 },
  });
  const { start } = await import('../../actors/browser-pool/index.ts');
  const pool = await start({ nc: c.nc, config: c.config, log: testLog(), instanceId: 'bp-controls' });
  t.teardown(() => pool.stop());
  const seen: { who: string; path: string; headers: IncomingHttpHeaders }[] = [];
  let flaky = 0;
  const other = await fixtureServer(t, {
    '/pixel.png': (req, res) => {
      seen.push({ who: 'other', path: '/pixel.png', headers: req.headers });
      res.writeHead(200, { 'content-type': 'image/png' }).end();
    },
  });
  const s = await fixtureServer(t, {
    '/late': html(LATE),
    // the converter's fetch gets the page, the browser's visit a 429
    '/flaky': (req, res) => {
      flaky++;
      if (flaky % 2 === 0) res.writeHead(429, { 'content-type': 'text/plain' }).end('slow down');
      else html(LATE)(req, res);
    },
    '/pushed': html(PUSHED),
    '/private': (req, res) => {
      seen.push({ who: 'target', path: '/private', headers: req.headers });
      html(`<title>Members</title><main><p id="ok">Members only.</p><img src="/own.png"><img src="${other.url('/pixel.png')}"></main>`)(
        req,
        res,
      );
    },
    '/own.png': (req, res) => {
      seen.push({ who: 'target', path: '/own.png', headers: req.headers });
      res.writeHead(200, { 'content-type': 'image/png' }).end();
    },
  });

  t.test('waitFor: the page is converted once the selector is there', async (t) => {
    const r = await c.runBody({ url: s.url('/late'), outputs: ['markdown'], waitFor: '#late' }, 120000);
    t.equal(r.markdown?.kind, 'done', JSON.stringify(r.markdown));
    t.match(await c.read(r.markdown!), /Late content arrived/);
    t.same(r.markdown!.extra?.selectors, { '#late': 1 });
    t.match(r.render, { kind: 'done', extra: { selectors: { '#late': 1 } } }, 'the render result carries the facts');
  });

  t.test('the browser is told an HTTP error the fetch was not: http_error at once, the selector not waited out', async (t) => {
    const t0 = Date.now();
    const r = await c.runBody({ url: s.url('/flaky'), outputs: ['text'], waitFor: '#late', timeout: 20 }, 120000);
    for (const k of ['text', 'render']) t.match(r[k], { kind: 'failed', error: 'http_error', message: /HTTP 429 to the browser/ }, k);
    t.ok(Date.now() - t0 < 15000, `answered in ${Date.now() - t0} ms, not after the 20 s wait`);
  });

  t.test('waitFor that never matches: selector_not_found, every result (render included)', async (t) => {
    const r = await c.runBody({ url: s.url('/late'), outputs: ['text'], waitFor: '#never', timeout: 3 }, 120000);
    for (const k of ['text', 'render']) {
      t.match(r[k], { kind: 'failed', error: 'selector_not_found' }, k);
      t.match((r[k] as { message?: string }).message, /#never/);
    }
  });

  /** Markdown of `path` after a click on `click` and a wait for `wait`, delivered (asserted). */
  const clickThenWait = async (t: Test, path: string, click: string, wait: string) => {
    const r = await c.runBody(
      {
        url: s.url(path),
        outputs: ['markdown'],
        actions: [
          { type: 'click', selector: click },
          { type: 'wait', selector: wait },
        ],
      },
      120000,
    );
    t.equal(r.markdown?.kind, 'done', JSON.stringify(r.markdown));
    return r;
  };

  t.test('actions: a click before conversion', async (t) => {
    const r = await clickThenWait(t, '/late', '#btn', '#clicked');
    t.match(await c.read(r.markdown!), /Clicked content arrived/);
    t.same(r.markdown!.extra?.selectors, { '#btn': 1, '#clicked': 1 });
  });

  t.test('actions: a click on a button that moves away from under the press reaches the button', async (t) => {
    const r = await clickThenWait(t, '/pushed', '#go', '#hit');
    const md = await c.read(r.markdown!);
    t.match(md, /Pushed in as the pointer came/, 'the page moved the button');
    t.match(md, /The button was clicked/, 'and the click reached it');
  });

  t.test('an action selector that matches nothing: selector_not_found', async (t) => {
    const r = await c.runBody({ url: s.url('/late'), outputs: ['text'], actions: [{ type: 'click', selector: '#nobutton' }] }, 120000);
    t.match(r.text, { kind: 'failed', error: 'selector_not_found' });
    t.match((r.text as { message?: string }).message, /#nobutton/);
  });

  t.test('headers in the browser: the target origin only, its subresources included', async (t) => {
    seen.length = 0;
    const r = await c.runBody(
      {
        url: s.url('/private'),
        outputs: ['text'],
        waitFor: '#ok',
        headers: { 'X-Token': 'br-secret' },
        cookies: [{ name: 'sid', value: 'br-c' }],
      },
      120000,
    );
    t.equal(r.text?.kind, 'done', JSON.stringify(r.text));
    const inBrowser = seen.filter((x) => x.headers['user-agent']?.includes('Chrom'));
    t.ok(
      inBrowser.some((x) => x.path === '/private'),
      'the browser asked for the page',
    );
    for (const x of inBrowser) {
      if (x.who === 'target') t.equal(x.headers['x-token'], 'br-secret', `${x.path}: the target gets the header`);
      else t.notOk(x.headers['x-token'] ?? x.headers.cookie, `${x.path}: another origin gets neither`);
    }
    t.ok(
      inBrowser.some((x) => x.who === 'other'),
      'the other origin was asked (its image), without them',
    );
  });

  t.test('pdf options: Letter landscape is 792 x 612 pt', async (t) => {
    const r = await c.runBody({ url: s.url('/late'), outputs: ['pdf'], pdf: { format: 'Letter', landscape: true } }, 120000);
    t.equal(r.pdf?.kind, 'done', JSON.stringify(r.pdf));
    const pdf = Buffer.from((await c.store.getBlob(r.pdf!.kind === 'done' ? r.pdf!.file!.name : ''))!).toString('latin1');
    t.match(pdf, /\/MediaBox\s*\[\s*0 0 792 612\s*\]/);
  });
});
