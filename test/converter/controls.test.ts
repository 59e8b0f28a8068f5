// websitepro's page controls in the real converter actor (issue 43), on pages served from
// 127.0.0.1: removeSelectors, targetSelectors (document order, selector_not_found), mainContent,
// the links/images/rawHtml outputs, the selector counts on every result, and the caller's headers
// and cookies sent to the target's origin only (a redirect through another origin and back).
import t from 'tap';
import type { IncomingHttpHeaders } from 'node:http';
import { fixtureServer, html } from '../outbound/fixture-server.ts';
import { startConverter, type Final } from './harness.ts';

const LONG = 'The tide tables of the northern coast were kept by hand for two centuries, '.repeat(6);
export const CONTROLS_PAGE = `<!doctype html><html lang="en"><head><title>Controls page</title></head><body>
<nav><a href="/home">Home nav</a></nav>
<div class="ad"><a href="https://ads.example.net/click">Buy now</a><img src="/ad.png" alt="ad banner"></div>
<main><article>
<h1>Controls page</h1>
<p class="first">Alpha paragraph. ${LONG}</p>
<section class="b"><p>Bravo section text. ${LONG}</p></section>
<section class="a"><p>Charlie section text.</p><img src="pics/c.png" alt="Charlie picture"></section>
<p>More text <a href="/docs/intro#part">Intro</a> and <a href="https://other.example.org/x">Other</a>
<a href="mailto:x@example.org">mail</a> <a href="/docs/intro">Intro again</a> <a href="javascript:void(0)">js</a></p>
</article></main>
<footer>Footer words here</footer>
</body></html>`;

t.test('page controls in the converter', async (t) => {
  const c = await startConverter(t, { outbound: { allowCidrs: ['127.0.0.1/32'] } });
  const s = await fixtureServer(t, { '/page': html(CONTROLS_PAGE) });
  const url = s.url('/page');

  t.test('removeSelectors, then targetSelectors in document order; counts on every result', async (t) => {
    const r = await c.runBody({
      url,
      outputs: ['markdown', 'metadata'],
      removeSelectors: ['.ad', 'nav'],
      targetSelectors: ['.a', '.b'],
    });
    t.equal(r.markdown?.kind, 'done', JSON.stringify(r.markdown));
    const md = await c.read(r.markdown!);
    t.ok(
      md.indexOf('Bravo section') >= 0 && md.indexOf('Bravo section') < md.indexOf('Charlie section'),
      'document order, not selector order',
    );
    t.notMatch(md, /Alpha paragraph/, 'only the targets');
    t.notMatch(md, /Footer words|Home nav|Buy now/);
    for (const k of ['markdown', 'metadata'] as const) {
      t.same(r[k]!.extra?.selectors, { '.ad': 1, nav: 1, '.a': 1, '.b': 1 }, `${k}: every selector's count`);
      t.equal(r[k]!.extra?.page, url);
    }
  });

  t.test('a target that matches nothing: selector_not_found naming it', async (t) => {
    const r = await c.runBody({ url, outputs: ['text', 'metadata'], targetSelectors: ['.a', '#nope'] });
    t.match(r.text, { kind: 'failed', error: 'selector_not_found' });
    t.match((r.text as Extract<Final, { kind: 'failed' }>).message, /#nope/);
    t.same(r.text!.extra?.selectors, { '.a': 1, '#nope': 0 });
    t.equal(r.metadata?.kind, 'done', 'metadata does not depend on the targets');
  });

  t.test('mainContent: false converts the whole body', async (t) => {
    const whole = await c.runBody({ url, outputs: ['text'], mainContent: false });
    const text = await c.read(whole.text!);
    t.match(text, /Home nav/);
    t.match(text, /Footer words here/);
    const main = await c.runBody({ url, outputs: ['text'] });
    t.notMatch(await c.read(main.text!), /Footer words here/, 'the default (Readability) leaves the footer out');
  });

  t.test('links and images: absolute, whole page after removeSelectors', async (t) => {
    const r = await c.runBody({ url, outputs: ['links', 'images'], removeSelectors: ['.ad'] });
    t.equal(r.links?.kind, 'done', JSON.stringify(r.links));
    const links = JSON.parse(await c.read(r.links!));
    t.same(links, [
      { url: s.url('/home'), text: 'Home nav', internal: true },
      { url: s.url('/docs/intro'), text: 'Intro', internal: true },
      { url: 'https://other.example.org/x', text: 'Other', internal: false },
    ]);
    const images = JSON.parse(await c.read(r.images!));
    t.same(images, [{ url: s.url('/pics/c.png'), alt: 'Charlie picture', internal: true }]);
    const all = JSON.parse(await c.read((await c.runBody({ url, outputs: ['images'] })).images!));
    t.same(
      all.map((i: { url: string }) => i.url),
      [s.url('/ad.png'), s.url('/pics/c.png')],
      'without removeSelectors the ad image is there',
    );
  });

  t.test('rawHtml: the bytes as fetched', async (t) => {
    const r = await c.runBody({ url, outputs: ['rawHtml', 'markdown'], removeSelectors: ['.ad'] });
    t.equal(r.rawHtml?.kind, 'done', JSON.stringify(r.rawHtml));
    t.equal(await c.read(r.rawHtml!), CONTROLS_PAGE);
    t.match(r.rawHtml, { file: { contentType: 'text/html; charset=utf-8' } });
  });
});

t.test('headers and cookies go to the target origin only', async (t) => {
  const c = await startConverter(t, { outbound: { allowCidrs: ['127.0.0.1/32'] } });
  const seen: { who: string; path: string; headers: IncomingHttpHeaders }[] = [];
  const log = (who: string) => (req: import('node:http').IncomingMessage) =>
    seen.push({ who, path: new URL(req.url ?? '/', 'http://x').pathname, headers: req.headers });
  // two origins: 127.0.0.1 on two ports (an origin is scheme, host and port)
  let targetBase = '';
  const other = await fixtureServer(t, {
    '/hop': (req, res) => {
      log('other')(req);
      res.writeHead(302, { location: `${targetBase}/final` }).end();
    },
    '/elsewhere': (req, res) => {
      log('other')(req);
      res.writeHead(200, { 'content-type': 'text/html' }).end('<title>x</title><p>elsewhere</p>');
    },
  });
  const target = await fixtureServer(t, {
    '/start': (req, res) => {
      log('target')(req);
      res.writeHead(302, { location: other.url('/hop') }).end();
    },
    '/final': (req, res) => {
      log('target')(req);
      html(CONTROLS_PAGE)(req, res);
    },
    '/away': (req, res) => {
      log('target')(req);
      res.writeHead(302, { location: other.url('/elsewhere') }).end();
    },
  });
  targetBase = target.base;
  const body = {
    outputs: ['markdown'],
    headers: { 'X-Token': 'sekrit-123' },
    cookies: [{ name: 'sid', value: 'c00kie-456' }],
  };
  const r = await c.runBody({ ...body, url: target.url('/start') });
  t.equal(r.markdown?.kind, 'done', JSON.stringify(r.markdown));
  t.same(
    seen.map((x) => [x.who, x.path]),
    [
      ['target', '/start'],
      ['other', '/hop'],
      ['target', '/final'],
    ],
  );
  for (const x of seen) {
    if (x.who === 'target') {
      t.equal(x.headers['x-token'], 'sekrit-123', `${x.path}: the target gets the header`);
      t.equal(x.headers.cookie, 'sid=c00kie-456', `${x.path}: and the cookie`);
    } else {
      t.notOk(x.headers['x-token'], 'another origin never gets the header');
      t.notOk(x.headers.cookie, 'nor the cookie');
    }
  }
  t.notMatch(JSON.stringify(r), /sekrit-123|c00kie-456/, 'no value in any outcome');

  seen.length = 0;
  const away = await c.runBody({ ...body, url: target.url('/away') });
  t.equal(away.markdown?.kind, 'done');
  t.same(
    seen.map((x) => [x.who, x.path, x.headers['x-token'] ?? null]),
    [
      ['target', '/away', 'sekrit-123'],
      ['other', '/elsewhere', null],
    ],
    'a redirect elsewhere goes without them',
  );

  // a task published again from the stored job has no credentials: failed, never fetched without them
  seen.length = 0;
  const lost = await c.runBody({ ...body, url: target.url('/final') }, 60000, { withSecret: false });
  t.match(lost.markdown, { kind: 'failed', error: 'credentials_unavailable' });
  t.equal(seen.length, 0, 'nothing fetched');
});
