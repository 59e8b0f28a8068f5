// Issue 27 item 1: listeners on loopback addresses the guard refuses (127.0.0.2, 127.0.0.3; on
// Linux all of 127.0.0.0/8 is served by lo), and a hostile page, served from the one allowed
// address (127.0.0.1), that tries every way out a browser has. A browser-pool actor runs real
// shot jobs and a real PDF print of the page; every listener must see nothing.
import type { Test } from 'tap';
import dgram from 'node:dgram';
import http from 'node:http';
import net from 'node:net';
import type { AddressInfo } from 'node:net';
import { readdirSync, readFileSync, readlinkSync } from 'node:fs';
import { startTestNats, type TestNats } from '../helpers/nats.ts';
import { startPool, shotTask, publishTask, watchOutcomes, newJobId } from '../shots/pool.ts';
import { readCatalogue } from '../../shared/catalogue.ts';
import { mergeOffers } from '../../shared/services/shots.ts';
import { BUCKETS, OBJECT_STORES, subjects } from '../../shared/names.ts';
import { call } from '../../shared/micro.ts';
import { Kvm } from '@nats-io/kv';
import type { Config } from '../../shared/config/index.ts';

type Tap = Test;

/** What reached one forbidden address: UDP datagrams and TCP connections. */
export interface Sink {
  host: string;
  port: number;
  udp: { from: string; bytes: number }[];
  tcp: { from: string; first: string }[];
}

async function startSink(t: Tap, host: string): Promise<Sink> {
  const sink: Sink = { host, port: 0, udp: [], tcp: [] };
  const tcp = net.createServer((s) => {
    const entry = { from: `${s.remoteAddress}:${s.remotePort}`, first: '' };
    sink.tcp.push(entry);
    s.once('data', (d) => {
      entry.first = d.subarray(0, 60).toString('latin1');
      s.destroy();
    });
    s.on('error', () => {});
    setTimeout(() => s.destroy(), 2000).unref();
  });
  await new Promise<void>((r) => tcp.listen(0, host, r));
  sink.port = (tcp.address() as AddressInfo).port;
  // UDP on the same port number: STUN, TURN over UDP, QUIC and WebTransport all aim at it
  const udp = dgram.createSocket('udp4');
  udp.on('message', (m, r) => sink.udp.push({ from: `${r.address}:${r.port}`, bytes: m.length }));
  await new Promise<void>((r, j) => {
    udp.once('error', j);
    udp.bind(sink.port, host, r);
  });
  t.teardown(() => {
    tcp.close();
    udp.close();
  });
  return sink;
}

/** The hostile page. `a` and `b` are the forbidden addresses (`host:port`). */
export function hostilePage(a: string, b: string): string {
  const [ha, pa] = a.split(':');
  const [hb, pb] = b.split(':');
  return `<!doctype html><html><head>
<link rel="dns-prefetch" href="//${a}"><link rel="preconnect" href="http://${a}"><link rel="preconnect" href="https://${b}" crossorigin>
<link rel="prefetch" href="http://${a}/prefetch"><link rel="preload" as="script" href="http://${b}/preload.js"><link rel="modulepreload" href="http://${a}/mod.js">
<script type="speculationrules">{"prerender":[{"source":"list","urls":["http://${a}/prerender"]}],"prefetch":[{"source":"list","urls":["http://${b}/spec-prefetch"]}]}</script>
<style>body{background:#fff url(http://${a}/bg.png)} @font-face{font-family:x;src:url(http://${b}/f.woff)} p{font-family:x}</style>
</head><body><p>hostile</p>
<img src="http://${a}/img.png"><img src="https://${b}/img.png"><iframe src="http://${b}/frame"></iframe><video src="http://${a}/v.mp4" autoplay muted></video>
<iframe srcdoc="<a id=l ping='http://${a}/ping' href='/nav'>x</a><script>document.getElementById('l').click()</script>"></iframe>
<script>
const tried = [];
const attempt = (name, fn) => { try { const r = fn(); tried.push(name); if (r && r.catch) r.catch(() => {}); } catch (e) { tried.push(name + ':' + e.name); } };
attempt('webrtc', async () => {
  const cfg = { iceServers: [{ urls: ['stun:${a}'] }, { urls: ['turn:${b}?transport=udp', 'turn:${b}?transport=tcp', 'turn:${a}?transport=tcp'], username: 'u', credential: 'p' }], iceCandidatePoolSize: 1 };
  const pc1 = new RTCPeerConnection(cfg), pc2 = new RTCPeerConnection(cfg);
  window.keep = [pc1, pc2];
  pc1.onicecandidate = (e) => e.candidate && pc2.addIceCandidate(e.candidate).catch(() => {});
  pc2.onicecandidate = (e) => e.candidate && pc1.addIceCandidate(e.candidate).catch(() => {});
  pc1.createDataChannel('x');
  const offer = await pc1.createOffer(); await pc1.setLocalDescription(offer); await pc2.setRemoteDescription(offer);
  const answer = await pc2.createAnswer(); await pc2.setLocalDescription(answer); await pc1.setRemoteDescription(answer);
  // remote candidates on the forbidden addresses: connectivity checks over UDP and ICE-TCP
  for (const c of ['candidate:9 1 udp 2122260223 ${ha} ${pa} typ host', 'candidate:10 1 tcp 1518280447 ${hb} ${pb} typ host tcptype passive', 'candidate:11 1 udp 2122260223 ${hb} ${pb} typ host'])
    await pc1.addIceCandidate({ candidate: c, sdpMid: '0', sdpMLineIndex: 0 }).catch(() => {});
});
attempt('webtransport', () => new WebTransport('https://${a}/wt').ready);
attempt('websocket', () => { window.ws1 = new WebSocket('ws://${a}/ws'); });
attempt('websocket-tls', () => { window.ws2 = new WebSocket('wss://${b}/ws'); });
attempt('fetch', () => fetch('http://${a}/fetch', { mode: 'no-cors' }));
attempt('fetch-https', () => fetch('https://${b}/fetch', { mode: 'no-cors' }));
attempt('xhr', () => { const x = new XMLHttpRequest(); x.open('GET', 'http://${b}/xhr'); x.send(); });
attempt('beacon', () => navigator.sendBeacon('http://${a}/beacon', 'x'));
attempt('eventsource', () => { window.es = new EventSource('http://${b}/es'); });
attempt('worker', () => { window.w = new Worker('/worker.js'); });
attempt('serviceworker', () => navigator.serviceWorker.register('/sw.js'));
attempt('window-open', () => window.open('http://${a}/popup'));
// the page's own origin learns what ran; a held request keeps the network busy so the shot and
// the print wait while all of the above is under way
fetch('/ran?' + encodeURIComponent(tried.join(',')));
fetch('/hold');
</script></body></html>`;
}

/** Also run from a dedicated worker and from the service worker. */
const workerScript = (a: string, b: string) => `
const go = () => {
  try { fetch('http://${a}/from-worker', { mode: 'no-cors' }).catch(() => {}); } catch {}
  try { new WebSocket('ws://${b}/from-worker'); } catch {}
  try { new WebTransport('https://${a}/from-worker').ready.catch(() => {}); } catch {}
};
go();
self.addEventListener('install', (e) => { go(); self.skipWaiting(); });
self.addEventListener('activate', () => go());
`;

export interface EgressEnv {
  tn: TestNats;
  a: Sink;
  b: Sink;
  page: string;
  /** Query strings of /ran: the attempts each page made. */
  ran: string[];
  /** Everything any listener received, for one assertion message. */
  leaks(): string[];
}

export async function startEgressEnv(t: Tap, outbound: Partial<Config['outbound']> = {}): Promise<EgressEnv> {
  const a = await startSink(t, '127.0.0.2');
  const b = await startSink(t, '127.0.0.3');
  const ran: string[] = [];
  const page = hostilePage(`${a.host}:${a.port}`, `${b.host}:${b.port}`);
  const worker = workerScript(`${a.host}:${a.port}`, `${b.host}:${b.port}`);
  const server = http.createServer((req, res) => {
    const u = new URL(req.url ?? '/', 'http://x');
    if (u.pathname === '/ran') {
      ran.push(decodeURIComponent(u.search.slice(1)));
      res.end('ok');
      return;
    }
    if (u.pathname === '/nav') {
      res.end('ok');
      return;
    }
    if (u.pathname === '/hold') {
      setTimeout(() => res.end('ok'), 3000).unref();
      return;
    }
    if (u.pathname === '/worker.js' || u.pathname === '/sw.js') {
      res.writeHead(200, { 'content-type': 'text/javascript' }).end(worker);
      return;
    }
    res.writeHead(200, { 'content-type': 'text/html' }).end(page);
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  t.teardown(
    () =>
      new Promise<void>((r) => {
        server.closeAllConnections();
        server.close(() => r());
      }),
  );
  const tn = await startTestNats(t, { outbound: { allowCidrs: ['127.0.0.1/32'], ...outbound } });
  return {
    tn,
    a,
    b,
    ran,
    page: `http://127.0.0.1:${(server.address() as AddressInfo).port}/hostile`,
    leaks: () =>
      [a, b].flatMap((s) => [
        ...s.udp.map((u) => `udp ${u.from} -> ${s.host}:${s.port} (${u.bytes} B)`),
        ...s.tcp.map((c) => `tcp ${c.from} -> ${s.host}:${s.port} ${JSON.stringify(c.first)}`),
      ]),
  };
}

/** The listeners work: a datagram and a connection from this process arrive (then are forgotten). */
export async function checkSinksWork(t: Tap, env: EgressEnv) {
  for (const s of [env.a, env.b]) {
    const u = dgram.createSocket('udp4');
    await new Promise<void>((r) => u.send('probe', s.port, s.host, () => r()));
    u.close();
    await new Promise<void>((r, j) => {
      const c = net.connect(s.port, s.host, () => {
        c.end('probe');
        r();
      });
      c.on('error', j);
    });
  }
  await sleep(300);
  t.equal(env.leaks().length, 4, 'the listeners receive what reaches them');
  for (const s of [env.a, env.b]) {
    s.udp.length = 0;
    s.tcp.length = 0;
  }
}

/** Network namespace of every browser process under this one (renderers, content processes too). */
export function browserNamespaces(): { pid: number; exe: string; ns: string; main: boolean }[] {
  const parent = new Map<number, number>();
  for (const d of readdirSync('/proc')) {
    if (!/^\d+$/.test(d)) continue;
    try {
      const stat = readFileSync(`/proc/${d}/stat`, 'utf8');
      parent.set(Number(d), Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]));
    } catch {
      /* gone */
    }
  }
  const under = (pid: number): boolean => {
    for (let p = parent.get(pid); p; p = parent.get(p)) if (p === process.pid) return true;
    return false;
  };
  const out: { pid: number; exe: string; ns: string; main: boolean }[] = [];
  for (const pid of parent.keys()) {
    if (!under(pid)) continue;
    try {
      const exe = readlinkSync(`/proc/${pid}/exe`);
      if (/chrom|firefox|headless/.test(exe))
        out.push({ pid, exe, ns: readlinkSync(`/proc/${pid}/ns/net`), main: parent.get(pid) === process.pid });
    } catch {
      /* gone */
    }
  }
  return out;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * One browser-pool actor with `browsers`; shot jobs of the hostile page on each (light and dark),
 * then a PDF print of it when the pool has a printer; after each, nothing at any listener.
 */
export async function runEgress(t: Tap, env: EgressEnv, browsers: string[], opts: { pdf: boolean; netns?: boolean }) {
  await checkSinksWork(t, env);
  await startPool(t, env.tn, browsers, `egress-${browsers.join('-')}`, { pageTimeoutMs: 30000 });
  const offers = mergeOffers(await readCatalogue(await new Kvm(env.tn.nc).open(BUCKETS.catalogue), 'shots'));
  const jobId = newJobId();
  const outcomes = watchOutcomes(env.tn.nc, jobId);
  const tasks = offers.flatMap((o) =>
    o.versions.flatMap((version) =>
      (['light', 'dark'] as const).map((scheme) =>
        shotTask(jobId, {
          url: env.page,
          browser: o.id,
          version,
          viewport: o.mobile ? { w: o.mobile.w, h: o.mobile.h } : { w: 800, h: 600 },
          scheme,
        }),
      ),
    ),
  );
  t.equal(tasks.length, browsers.length * 2, `shots of ${offers.map((o) => `${o.id}:${o.versions}`).join(' ')}`);
  for (const task of tasks) await publishTask(env.tn.nc, task);
  const got = await outcomes.waitFor(tasks.length, 120000);
  outcomes.stop();
  for (const task of tasks) t.equal(got.get(task.resultKey)?.kind, 'done', `${task.resultKey}: ${JSON.stringify(got.get(task.resultKey))}`);
  const procs = browserNamespaces();
  const own = readlinkSync('/proc/self/ns/net');
  t.ok(procs.length > 0, `${procs.length} browser processes`);
  if (opts.netns === true) {
    t.same(
      procs.filter((p) => p.ns === own).map((p) => p.exe),
      [],
      'every browser process runs outside this network namespace',
    );
    // one per browser: Firefox's light and dark processes, Chromium and the phone, each its own
    const mains = procs.filter((p) => p.main);
    t.equal(new Set(mains.map((p) => p.ns)).size, mains.length, `${mains.length} browsers, each in a namespace of its own`);
  } else if (opts.netns === false) {
    t.same(
      procs.filter((p) => p.ns !== own).map((p) => p.exe),
      [],
      'flags and prefs only: the browsers share this network namespace',
    );
  }
  await sleep(1500); // stragglers (ICE retransmits, TURN retries)
  t.same(env.leaks(), [], 'shots: nothing reached a forbidden address');
  t.equal(env.ran.length, tasks.length, `the hostile page ran in every shot: ${env.ran.join(' | ')}`);
  if (!opts.pdf) return;
  const ranBefore = env.ran.length;
  const pdf = await call<{ bytes: number }>(
    env.tn.nc,
    subjects.browser.renderPdf,
    { url: env.page, store: OBJECT_STORES.results, objectName: `${jobId}/pdf` },
    60000,
  );
  t.ok(pdf.bytes > 0, 'the PDF was printed');
  await sleep(1500);
  t.same(env.leaks(), [], 'pdf: nothing reached a forbidden address');
  t.equal(env.ran.length, ranBefore + 1, 'the hostile page ran in the print');
}
