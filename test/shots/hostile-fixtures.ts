// Fixture pages that behave like the real web at its worst: dialogs, popups, downloads, pages that
// never go network-idle, endless scripts, memory hogs, redirects of every kind, very tall pages,
// late fonts. Served by the fixture server in fixtures.ts.
import { readFileSync } from 'node:fs';
import type { IncomingMessage, ServerResponse } from 'node:http';

const doc = (body: string, bg = 'rgb(255,255,255)', head = '') =>
  `<!doctype html><html><head><meta charset="utf-8"><style>html,body{margin:0;height:100%;background:${bg}}</style>${head}</head><body>${body}</body></html>`;

/** Colour of stripe k of /very-tall: unique per stripe, so a repeated tile shows. */
export const stripeColour = (k: number): [number, number, number] => [k * 8, 40, 255 - k * 8];
export const VERY_TALL_STRIPES = 30;

const stripes = Array.from(
  { length: VERY_TALL_STRIPES },
  (_, k) => `<div style="height:1000px;background:rgb(${stripeColour(k).join(',')})"></div>`,
).join('');

export const HOSTILE_PAGES: Record<string, string> = {
  '/dialog/load': doc('<p>after the alert</p>', 'rgb(0,160,0)', `<script>alert('hello from load')</script>`),
  // alert, confirm and prompt while parsing, a beforeunload handler, and another alert after load
  // that turns the page green once it is answered
  '/dialog/all': doc(
    '<p>dialogs</p>',
    'rgb(200,0,0)',
    `<script>
    alert('first');
    window.answers = { confirm: confirm('sure?'), prompt: prompt('name?', 'default') };
    addEventListener('beforeunload', (e) => { e.preventDefault(); e.returnValue = 'stay?'; });
    addEventListener('load', () => setTimeout(() => {
      alert('later');
      document.documentElement.style.background = document.body.style.background = 'rgb(0,160,0)';
    }, 300));
  </script>`,
  ),
  // a page that leaves for /plain once loaded, with a beforeunload handler in the way
  '/dialog/beforeunload': doc(
    '<p>leaving</p>',
    'rgb(200,0,0)',
    `<script>
    addEventListener('beforeunload', (e) => { e.preventDefault(); e.returnValue = 'stay?'; });
  </script>`,
  ),
  '/popup': doc(
    '<a id="blank" href="/popup-target" target="_blank">new tab</a>',
    'rgb(0,0,160)',
    `<script>addEventListener('DOMContentLoaded', () => { window.open('/popup-alert?open'); document.getElementById('blank').click(); })</script>`,
  ),
  // a window opened by a click (a user gesture: the popup blocker lets it through) whose script
  // raises a dialog before anything can attach to it; the opener turns green once it runs on
  '/popup-click': doc(
    '<button id="open" style="width:200px;height:100px">open</button>',
    'rgb(0,0,160)',
    `<script>
    addEventListener('DOMContentLoaded', () => document.getElementById('open').addEventListener('click', () => {
      const w = window.open('');
      if (w) w.alert('from the popup');
      document.documentElement.style.background = document.body.style.background = 'rgb(0,160,0)';
    }));
  </script>`,
  ),
  // pages for a frame of another site (see /xframe): dialogs while loading and later, popups on
  // load (no gesture) and on a click
  '/frame/alert': doc(
    '<p>frame</p>',
    'rgb(200,0,0)',
    `<script>
    alert('from the frame');
    addEventListener('load', () => setTimeout(() => {
      confirm('frame later?');
      document.documentElement.style.background = document.body.style.background = 'rgb(0,160,0)';
    }, 300));
  </script>`,
  ),
  '/frame/popup': doc(
    '<a id="blank" href="/popup-target?frame" target="_blank">new tab</a>',
    'rgb(0,160,0)',
    `<script>addEventListener('DOMContentLoaded', () => { window.open('/popup-alert?frame'); document.getElementById('blank').click(); })</script>`,
  ),
  '/frame/popup-click': doc(
    '<button id="open" style="width:200px;height:200px">open</button>',
    'rgb(200,0,0)',
    `<script>
    addEventListener('DOMContentLoaded', () => document.getElementById('open').addEventListener('click', () => {
      const w = window.open('');
      if (w) w.alert('from the popup');
      document.documentElement.style.background = document.body.style.background = 'rgb(0,160,0)';
    }));
  </script>`,
  ),
  // red once the page has had a user gesture (navigator.userActivation), green while it has not:
  // our questions to the page must not count as the user's (quiet-eval.ts)
  '/activation': doc(
    '<p>activation</p>',
    'rgb(0,160,0)',
    `<script>const paint = () => { if (navigator.userActivation.hasBeenActive) document.head.insertAdjacentHTML('beforeend', '<style>html,body{background:rgb(200,0,0)!important}</style>'); else setTimeout(paint, 5) }; paint()</script>`,
  ),
  '/popup-target': doc('<p>popup</p>', 'rgb(255,0,0)'),
  '/popup-alert': doc('<p>popup</p>', 'rgb(255,0,0)', `<script>alert('from the popup')</script>`),
  '/idle/longpoll': doc('<p>long poll</p>', 'rgb(0,128,128)', `<script>fetch('/hang').catch(() => {})</script>`),
  '/idle/ws': doc('<p>web socket</p>', 'rgb(0,128,128)', `<script>window.sock = new WebSocket('ws://' + location.host + '/ws')</script>`),
  '/idle/fetchloop': doc(
    '<p>fetch loop</p>',
    'rgb(0,128,128)',
    `<script>const tick = () => fetch('/tick?' + Math.random()).catch(() => {}).finally(() => setTimeout(tick, 20)); tick();</script>`,
  ),
  '/idle/video': doc('<video autoplay muted loop src="/drip?type=video/webm" width="320" height="200"></video>', 'rgb(0,128,128)'),
  // a frame that never finishes: the load event never fires
  '/idle/frame': doc('<p>endless frame</p><iframe src="/drip?type=text/html" width="100" height="100"></iframe>', 'rgb(0,128,128)'),
  '/loop/inline': doc('<p>never parsed</p>', 'rgb(0,0,0)', '<script>for (;;) {}</script>'),
  '/loop/later': doc(
    '<p>busy</p>',
    'rgb(0,128,128)',
    `<script>addEventListener('load', () => setTimeout(() => { for (;;) {} }, 0))</script>`,
  ),
  // the loop starts after the page has settled: during the capture (here, the shot's delay)
  '/loop/settled': doc(
    '<p>busy</p>',
    'rgb(0,128,128)',
    `<script>addEventListener('load', () => setTimeout(() => { for (;;) {} }, 1000))</script>`,
  ),
  '/memory': doc('<p>hog</p>', 'rgb(0,128,128)', `<script>window.hog = []; for (;;) window.hog.push(new Array(1e6).fill(1.5));</script>`),
  '/redirect/meta': doc('<p>refreshing</p>', 'rgb(200,0,0)', '<meta http-equiv="refresh" content="0;url=/plain">'),
  '/redirect/js': doc('<p>moving</p>', 'rgb(200,0,0)', `<script>location.replace('/plain')</script>`),
  // 60 history changes at once: past Firefox's limit (50 in 10 s, launchers/firefox.ts) the calls throw
  // and the page turns red; under Chromium's (200) it stays green
  '/pushstate-burst': doc(
    '<p>burst</p>',
    'rgb(0,160,0)',
    `<script>try { for (let i = 0; i < 60; i++) history.pushState({ i }, '', '/pushstate-burst?i=' + i) } catch (e) { document.head.insertAdjacentHTML('beforeend', '<style>html,body{background:' + (e.name === 'SecurityError' ? 'rgb(200,0,0)' : 'rgb(0,0,200)') + '}</style>') }</script>`,
  ),
  // 300 history changes at once: Firefox throws past 50 (red); Chromium ignores past 200 while its
  // flooding protection is on (green: the address stopped at i=199); without it all 300 land (blue)
  '/pushstate-flood': doc(
    '<p>flood</p>',
    'rgb(255,255,255)',
    `<script>let bg = 'rgb(0,0,200)'; try { for (let i = 0; i < 300; i++) history.pushState({ i }, '', '/pushstate-flood?i=' + i); if (new URLSearchParams(location.search).get('i') !== '299') bg = 'rgb(0,160,0)' } catch (e) { bg = e.name === 'SecurityError' ? 'rgb(200,0,0)' : 'rgb(90,90,90)' } document.head.insertAdjacentHTML('beforeend', '<style>html,body{background:' + bg + '}</style>')</script>`,
  ),
  '/pushstate': doc(
    '<p>push state</p>',
    'rgb(0,128,128)',
    `<script>let n = 0; setInterval(() => history.pushState({ n }, '', '/pushstate?n=' + n++), 5)</script>`,
  ),
  '/very-tall': doc(stripes, 'rgb(255,255,255)'),
  '/late-font': doc(
    '<p id="t" style="font-family:Late;font-size:160px;line-height:1;margin:0">MMMM</p>',
    'rgb(255,255,255)',
    '<style>@font-face{font-family:Late;src:url(/font.ttf?ms=1500);font-display:block}</style>',
  ),
  '/self-dark': doc('<p>dark by itself</p>', 'canvas', '<meta name="color-scheme" content="dark">'),
};

let font: Buffer | undefined;

/** Routes that are not plain pages; true when handled. */
export function hostileRoute(u: URL, req: IncomingMessage, res: ServerResponse): boolean {
  const timers: NodeJS.Timeout[] = [];
  res.on('close', () => timers.forEach(clearInterval));
  switch (u.pathname) {
    case '/hang': // accepted, never answered
      return true;
    case '/tick':
      res.writeHead(200, { 'content-type': 'text/plain' });
      res.end('tick');
      return true;
    case '/drip': // a body that never ends
      res.writeHead(200, { 'content-type': u.searchParams.get('type') ?? 'application/octet-stream' });
      timers.push(setInterval(() => res.write(Buffer.alloc(64, 1)), 200));
      return true;
    case '/xframe': {
      // the page of ?frame=/frame/... framed from the other loopback site
      const [host, port] = String(req.headers.host ?? '').split(':');
      const other = host === 'localhost' ? '127.0.0.1' : 'localhost';
      const src = `http://${other}:${port}${u.searchParams.get('frame') ?? '/plain'}`;
      res.writeHead(200, { 'content-type': 'text/html' });
      res.end(doc(`<iframe src="${src}" width="200" height="200" style="border:0;display:block"></iframe>`, 'rgb(0,0,160)'));
      return true;
    }
    case '/attachment':
      res.writeHead(200, { 'content-type': 'text/html', 'content-disposition': 'attachment; filename="page.html"' });
      res.end(HOSTILE_PAGES['/dialog/load']);
      return true;
    case '/octet':
      res.writeHead(200, { 'content-type': 'application/octet-stream' });
      res.end(Buffer.alloc(4096, 7));
      return true;
    case '/zip':
      res.writeHead(200, { 'content-type': 'application/zip' });
      res.end(Buffer.from('PK\x05\x06' + '\0'.repeat(18), 'binary'));
      return true;
    case '/font.ttf': {
      font ??= readFileSync('/usr/share/fonts/truetype/liberation/LiberationMono-Bold.ttf');
      timers.push(
        setTimeout(
          () => {
            res.writeHead(200, { 'content-type': 'font/ttf' });
            res.end(font);
          },
          Number(u.searchParams.get('ms') ?? 0),
        ),
      );
      return true;
    }
    case '/redirect/meta-to':
      res.writeHead(200, { 'content-type': 'text/html' });
      res.end(
        doc('<p>refreshing</p>', 'rgb(200,0,0)', `<meta http-equiv="refresh" content="0;url=${u.searchParams.get('to') ?? '/plain'}">`),
      );
      return true;
    case '/redirect/js-to':
      res.writeHead(200, { 'content-type': 'text/html' });
      res.end(
        doc('<p>moving</p>', 'rgb(200,0,0)', `<script>location.replace(${JSON.stringify(u.searchParams.get('to') ?? '/plain')})</script>`),
      );
      return true;
    default:
      void req;
      return false;
  }
}
