// Issue 43, shots options in real browsers on local pages: the pixels and bytes they produce.
// Chromium and Firefox each: an element's capture has the element's size, a hidden element's colour
// is gone, css/js/click/waitFor/actions change the page before the capture, a selector that matches
// nothing fails the shot naming it, headers and cookies reach the target origin only (redirects and
// subresources of another origin go without), blockAds refuses a listed host, JPEG and WebP files.
import t from 'tap';
import { createServer, type IncomingMessage } from 'node:http';
import type { AddressInfo } from 'node:net';
import sharp from 'sharp';
import { failureOf, sharedBrowsers } from './browsers.ts';
import { pixel } from './fixtures.ts';
import { makeThumb } from '../../actors/browser-pool/store.ts';

t.jobs = 2;
const shared = sharedBrowsers(t);

type Seen = { path: string; header?: string; cookie?: string };
/** Two origins on 127.0.0.1 (two ports); each logs what it was sent. */
async function servers(t: { teardown(fn: () => unknown): void }) {
  const logs = { a: [] as Seen[], b: [] as Seen[] };
  const ports = { a: 0, b: 0 };
  const make = (name: 'a' | 'b') =>
    createServer((req: IncomingMessage, res) => {
      const path = req.url ?? '/';
      logs[name].push({ path, header: req.headers['x-secret'] as string | undefined, cookie: req.headers.cookie });
      const html = (body: string) =>
        res.writeHead(200, { 'content-type': 'text/html' }).end(`<!doctype html><html><body style="margin:0">${body}</body></html>`);
      if (path === '/go-away') return void res.writeHead(302, { location: `http://127.0.0.1:${ports.b}/bounce` }).end();
      if (path === '/bounce') return void res.writeHead(302, { location: `http://127.0.0.1:${ports.a}/back` }).end();
      if (path.startsWith('/img')) return void res.writeHead(404).end();
      if (path === '/page')
        return html(
          `<img src="http://127.0.0.1:${ports.b}/img-b.png"><img src="/img-a.png"><script>fetch('http://127.0.0.1:${ports.b}/xhr-b').catch(()=>{})</script>`,
        );
      if (path === '/ads') return html('<img src="http://doubleclick.net/ad.png"><img src="/img-own.png"><p>ads</p>');
      if (path === '/box')
        return html(
          '<div style="height:30px"></div><div id="box" style="margin-left:41px;width:123px;height:77px;background:rgb(0,200,0);border:5px solid rgb(0,0,200)"></div>' +
            '<div id="ad" style="position:absolute;left:300px;top:0;width:200px;height:200px;background:rgb(255,0,0)"></div>' +
            '<button id="btn" style="position:absolute;left:0;top:300px;width:80px;height:30px" onclick="document.body.style.background=\'rgb(0,0,0)\'">go</button>' +
            '<input id="q" style="position:absolute;left:100px;top:300px"><script>setTimeout(() => { const d = document.createElement("div"); d.id = "late"; document.body.appendChild(d); }, 800)</script>',
        );
      html('<p>other</p>');
    });
  const a = make('a');
  const b = make('b');
  for (const [k, s] of [
    ['a', a],
    ['b', b],
  ] as const) {
    await new Promise<void>((r) => s.listen(0, '127.0.0.1', r));
    ports[k] = (s.address() as AddressInfo).port;
    t.teardown(() => s.close());
  }
  return { logs, url: (name: 'a' | 'b', path: string) => `http://127.0.0.1:${ports[name]}${path}` };
}

const vp = { w: 640, h: 480 };

for (const id of process.env.ONLY ? [process.env.ONLY] : ['chromium', 'firefox']) {
  t.test(`${id}: selector, hideSelectors, css, js, click, waitFor, actions`, async (t) => {
    const s = await servers(t);
    const b = await shared(id);
    // the element's border box: 123 + 2 x 5 by 77 + 2 x 5
    const el = await b.shoot(s.url('a', '/box'), { viewport: vp, options: { selector: '#box' } as never });
    t.same([el.width, el.height], [133, 87], "the capture has the element's size");
    t.same(await pixel(el.png, 60, 40), [0, 200, 0], 'the element inside');
    t.same(await pixel(el.png, 2, 2), [0, 0, 200], 'its border');
    t.same(el.extra.selectors, { '#box': 1 });

    const full = await b.shoot(s.url('a', '/box'), { viewport: vp });
    t.same(await pixel(full.png, 400, 100), [255, 0, 0], 'the red element is there without the option');
    const hidden = await b.shoot(s.url('a', '/box'), { viewport: vp, options: { hideSelectors: ['#ad', '.none'] } as never });
    const { data, info } = hidden.raw;
    let red = 0;
    for (let i = 0; i < data.length; i += info.channels) if (data[i] === 255 && data[i + 1] === 0 && data[i + 2] === 0) red++;
    t.equal(red, 0, 'no red pixel once #ad is hidden');
    t.same(hidden.extra.selectors, { '#ad': 1, '.none': 0 }, 'a hide selector that matches nothing counts 0 and is no error');

    const worked = await b.shoot(s.url('a', '/box'), {
      viewport: vp,
      options: {
        waitFor: '#late',
        actions: [
          { type: 'type', selector: '#q', text: 'hello' },
          { type: 'wait', ms: 50 },
          { type: 'scroll', to: 'bottom' },
        ],
        click: '#btn',
        css: '#box { background: rgb(255, 255, 0) !important }',
        js: 'await new Promise((r) => setTimeout(r, 10)); document.getElementById("ad").style.background = "rgb(0, 255, 255)"; document.title = document.getElementById("q").value;',
      } as never,
    });
    t.same(await pixel(worked.png, 5, 5), [0, 0, 0], 'the click ran (the body turned black)');
    t.same(await pixel(worked.png, 100, 60), [255, 255, 0], 'the style sheet applied');
    t.same(await pixel(worked.png, 400, 100), [0, 255, 255], 'the script ran');
    t.same(worked.extra.selectors, { '#late': 1, '#q': 1, '#btn': 1 });

    for (const options of [
      { selector: '#nope' },
      { click: '#nope' },
      { actions: [{ type: 'click', selector: '#nope' }] },
      { waitFor: '#nope' },
    ]) {
      const f = await failureOf(b.shoot(s.url('a', '/box'), { viewport: vp, options: options as never, timeoutMs: 20000 }));
      t.equal(f?.error, 'selector_not_found', `${JSON.stringify(options)}: ${f?.message}`);
      t.match(f?.message, /#nope/, 'the message names the selector');
    }
  });

  t.test(`${id}: headers and cookies reach the target origin only; blockAds; jpeg and webp`, async (t) => {
    const s = await servers(t);
    const b = await shared(id);
    const secret = { headers: { 'X-Secret': 'h-value' }, cookies: [{ name: 'sid', value: 'c-value' }] };
    await b.shoot(s.url('a', '/page'), { viewport: vp, options: secret as never });
    await b.shoot(s.url('a', '/go-away'), { viewport: vp, options: secret as never });
    const a = s.logs.a.filter((l) => l.path !== '/favicon.ico');
    t.ok(a.length >= 4, JSON.stringify(a));
    for (const l of a) {
      t.equal(l.header, 'h-value', `target origin ${l.path}: the header`);
      t.equal(l.cookie, 'sid=c-value', `target origin ${l.path}: the cookie`);
    }
    t.ok(
      a.some((l) => l.path === '/back'),
      'the redirect back to the target origin got them again',
    );
    t.ok(s.logs.b.some((l) => l.path === '/img-b.png') && s.logs.b.some((l) => l.path === '/bounce'), JSON.stringify(s.logs.b));
    for (const l of s.logs.b) t.same([l.header, l.cookie], [undefined, undefined], `other origin ${l.path}: neither`);

    const plain = await b.shoot(s.url('a', '/ads'), { viewport: vp });
    t.equal(plain.extra.adsBlocked, undefined);
    const blocked = await b.shoot(s.url('a', '/ads'), { viewport: vp, options: { blockAds: true } as never });
    // Firefox may ask twice for an image whose first request was refused
    t.ok((blocked.extra.adsBlocked ?? 0) >= 1, `the request to doubleclick.net (EasyList) was refused (${blocked.extra.adsBlocked})`);
    t.ok(
      s.logs.a.some((l) => l.path === '/img-own.png'),
      'the page itself loads',
    );

    const jpeg = await b.shoot(s.url('a', '/box'), { viewport: vp, options: { format: 'jpeg', quality: 50 } as never });
    t.same([...jpeg.file.subarray(0, 3)], [0xff, 0xd8, 0xff], 'a JPEG starts with FF D8');
    t.equal(jpeg.contentType, 'image/jpeg');
    t.match(await sharp(jpeg.file).metadata(), { format: 'jpeg', width: 640, height: 480 });
    const webp = await b.shoot(s.url('a', '/box'), { viewport: vp, options: { format: 'webp' } as never });
    t.equal(webp.file.subarray(8, 12).toString(), 'WEBP');
    t.match(await sharp(await makeThumb(webp.file, webp.raw, 200)).metadata(), { format: 'webp', width: 200, height: 150 }, 'thumbWidth');
  });
}
