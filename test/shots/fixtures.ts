// Local fixture pages for the browser tests, served by node:http on 127.0.0.1.
import { createHash } from 'node:crypto';
import { createServer, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import sharp from 'sharp';
import { HOSTILE_PAGES, hostileRoute } from './hostile-fixtures.ts';

type Tap = { teardown(fn: () => unknown): void };

export const PAGES: Record<string, string> = {
  '/plain':
    '<!doctype html><html><head><style>html,body{margin:0;background:#3366cc}</style></head><body><h1 style="color:#fff">plain</h1></body></html>',
  '/scheme':
    '<!doctype html><html><head><style>html,body{margin:0;height:100%;background:rgb(255,255,255)} @media (prefers-color-scheme: dark){html,body{background:rgb(0,0,0)}}</style></head><body></body></html>',
  '/tall': `<!doctype html><html><head><style>html,body{margin:0;background:#eee} .block{height:1000px} img{display:block;width:300px;height:200px}</style></head><body>
    <div class="block">top</div><div class="block">middle</div>
    <img id="lazy1" loading="lazy" src="/img/a.png"><div class="block">more</div><img id="lazy2" loading="lazy" src="/img/b.png">
    <div id="late"></div>
    <script>
      // content appended when the bottom is reached, as infinite-scroll pages do
      const io = new IntersectionObserver((es) => { if (es.some((e) => e.isIntersecting)) { document.getElementById('late').style.height = '700px'; io.disconnect(); } });
      io.observe(document.getElementById('late'));
    </script></body></html>`,
  '/delayed':
    '<!doctype html><html><head><style>html,body{margin:0;height:100%;background:rgb(255,0,0)}</style></head><body><p style="margin:200px">text</p><script>setTimeout(() => { document.body.style.background = "rgb(0,255,0)"; document.documentElement.style.background = "rgb(0,255,0)"; }, 1800)</script></body></html>',
  '/cookies': `<!doctype html><html><head><style>html,body{margin:0;height:100%;background:rgb(255,255,255)}
    #cookie-notice{position:fixed;left:0;right:0;bottom:0;height:300px;background:rgb(200,0,0);color:#fff;z-index:9999}</style></head>
    <body><p>content</p><div id="cookie-notice">We use cookies to improve your experience. <button>Accept all cookies</button></div></body></html>`,
  // a consent manager autoconsent has a rule for (AdRoll): no fixed position and no consent words,
  // so only the rule (clicking "reject") can remove it, not the overlay fallback
  '/cmp': `<!doctype html><html><head><style>html,body{margin:0;height:100%;background:rgb(255,255,255)}
    #adroll_consent_container{position:absolute;left:0;top:0;width:100%;height:400px;background:rgb(0,0,200);color:#fff}</style></head>
    <body><div id="adroll_consent_container">Ad settings <button id="adroll_consent_accept">OK</button>
    <button id="adroll_consent_reject">No</button></div>
    <script>document.getElementById('adroll_consent_reject').addEventListener('click', () => {
      document.getElementById('adroll_consent_container').remove(); fetch('/rejected'); });</script></body></html>`,
  '/rejected': 'ok',
  '/blank': '<!doctype html><html><head><style>html,body{margin:0;height:100%;background:rgb(10,20,30)}</style></head><body></body></html>',
  '/js':
    '<!doctype html><html><head><title>js</title></head><body><div id="app"></div><script>document.getElementById("app").textContent = "rendered by script"</script></body></html>',
  '/slow': '<!doctype html><html><body>slow</body></html>',
  '/held': '<!doctype html><html><body>held</body></html>',
  ...HOSTILE_PAGES,
};

export interface Fixtures {
  url(path: string): string;
  port: number;
  hits: Map<string, number>;
  /** User-Agent header of the last request per path. */
  agents: Map<string, string>;
  server: Server;
  /** `/held`: a page that answers only once the test releases it (a browser mid-page as an event). */
  held: {
    /** Resolves once `n` requests for `/held` have arrived; rejects after `ms` without them. */
    arrived(n: number, ms?: number): Promise<void>;
    /** Answer the requests held so far, and every later one at once. */
    release(): void;
  };
}

let pngs: Record<string, Buffer> | undefined;

export async function startFixtures(t: Tap, host = '127.0.0.1'): Promise<Fixtures> {
  pngs ??= {
    '/img/a.png': await sharp({ create: { width: 300, height: 200, channels: 3, background: { r: 0, g: 128, b: 0 } } })
      .png()
      .toBuffer(),
    '/img/b.png': await sharp({ create: { width: 300, height: 200, channels: 3, background: { r: 128, g: 0, b: 128 } } })
      .png()
      .toBuffer(),
  };
  const hits = new Map<string, number>();
  const agents = new Map<string, string>();
  const held = { waiting: [] as ServerResponse[], released: false, waiters: [] as { n: number; wake: () => void }[] };
  const answerHeld = (res: ServerResponse) => {
    if (!res.destroyed) res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' }).end(PAGES['/held']);
  };
  const server = createServer((req, res) => {
    const u = new URL(req.url ?? '/', 'http://x');
    hits.set(u.pathname, (hits.get(u.pathname) ?? 0) + 1);
    agents.set(u.pathname, String(req.headers['user-agent'] ?? ''));
    if (u.pathname === '/redirect') {
      res.writeHead(302, { location: u.searchParams.get('to') ?? '/plain' });
      res.end();
      return;
    }
    if (u.pathname === '/slow') {
      setTimeout(
        () => {
          res.writeHead(200, { 'content-type': 'text/html' });
          res.end(PAGES['/slow']);
        },
        Number(u.searchParams.get('ms') ?? 60000),
      ).unref();
      return;
    }
    if (u.pathname === '/held') {
      if (held.released) answerHeld(res);
      else held.waiting.push(res);
      const n = hits.get('/held')!;
      held.waiters = held.waiters.filter((w) => (w.n <= n ? (w.wake(), false) : true));
      return;
    }
    if (hostileRoute(u, req, res)) return;
    const img = pngs![u.pathname];
    if (img) {
      res.writeHead(200, { 'content-type': 'image/png', 'cache-control': 'no-store' });
      res.end(img);
      return;
    }
    const page = PAGES[u.pathname];
    if (!page) {
      res.writeHead(404);
      res.end('not found');
      return;
    }
    res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' });
    res.end(page);
  });
  // WebSocket upgrades are accepted and then held open: a page with an open socket never idles
  const upgraded = new Set<import('node:stream').Duplex>();
  server.on('upgrade', (req, socket) => {
    upgraded.add(socket);
    socket.on('close', () => upgraded.delete(socket));
    const key = String(req.headers['sec-websocket-key'] ?? '');
    const accept = createHash('sha1').update(`${key}258EAFA5-E914-47DA-95CA-C5AB0DC85B11`).digest('base64');
    socket.write(
      `HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: ${accept}\r\n\r\n`,
    );
    hits.set('/ws', (hits.get('/ws') ?? 0) + 1);
    socket.on('error', () => {});
  });
  await new Promise<void>((r) => server.listen(0, host, r));
  const port = (server.address() as AddressInfo).port;
  // upgraded sockets no longer belong to the server: closeAllConnections does not see them
  t.teardown(
    () =>
      new Promise<void>((r) => {
        upgraded.forEach((s) => s.destroy());
        server.closeAllConnections();
        server.close(() => r());
      }),
  );
  return {
    url: (p) => `http://${host}:${port}${p}`,
    port,
    hits,
    agents,
    server,
    held: {
      arrived: (n, ms = 120000) =>
        new Promise<void>((resolve, reject) => {
          if ((hits.get('/held') ?? 0) >= n) return resolve();
          const bound = setTimeout(() => reject(new Error(`${hits.get('/held') ?? 0} of ${n} requests for /held in ${ms} ms`)), ms);
          held.waiters.push({
            n,
            wake: () => {
              clearTimeout(bound);
              resolve();
            },
          });
        }),
      release: () => {
        held.released = true;
        held.waiting.splice(0).forEach(answerHeld);
      },
    },
  };
}

/** RGB of one pixel of a PNG. */
export async function pixel(png: Buffer, x: number, y: number): Promise<[number, number, number]> {
  const { data, info } = await sharp(png).removeAlpha().raw().toBuffer({ resolveWithObject: true });
  const i = (y * info.width + x) * info.channels;
  return [data[i]!, data[i + 1]!, data[i + 2]!];
}

export { closedPort } from '../helpers/ports.ts';
