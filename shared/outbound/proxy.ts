// A local forward proxy (CONNECT for https and wss, absolute-URI requests for plain http) that
// applies the guard to every connection a browser makes: page, sub-resources, redirects, iframes.
// Browsers follow redirects themselves, and each new location comes back through here, so each
// hop is checked. Bound to 127.0.0.1 only.
import http from 'node:http';
import net from 'node:net';
import type { AddressInfo } from 'node:net';
import type { Duplex } from 'node:stream';
import { OutboundError, resolvePinned, pinnedLookup, type Resolver } from './resolve.ts';

export interface GuardProxyOptions {
  allowCidrs: readonly string[];
  /** 0: a random free port. */
  port?: number;
  connectTimeoutMs?: number;
  resolver?: Resolver;
  /** Called for every refused connection (to count or report them). */
  onBlocked?: (e: { host: string; code: string; reason: string }) => void;
}

export interface GuardProxy {
  port: number;
  /** `http://127.0.0.1:<port>`, for `--proxy-server=`. */
  url: string;
  /** Connections refused so far. */
  blocked: number;
  /**
   * Serve a connection accepted elsewhere as if it had arrived on the proxy's port: a browser in a
   * network namespace of its own reaches the proxy only through a listener inside that namespace.
   */
  accept(socket: Duplex): void;
  stop(): Promise<void>;
}

/** An upstream connection (tunnel or plain-http exchange) silent this long is closed. */
const IDLE_MS = 5 * 60 * 1000;

const HOP_BY_HOP = new Set([
  'connection',
  'keep-alive',
  'proxy-connection',
  'proxy-authorization',
  'proxy-authenticate',
  'te',
  'trailer',
  'transfer-encoding',
  'upgrade',
]);

/** From config: `startGuardProxy({allowCidrs: config.outbound.allowCidrs, port: config.outbound.proxyPort, connectTimeoutMs: config.outbound.connectTimeoutMs})`. */
export async function startGuardProxy(opts: GuardProxyOptions): Promise<GuardProxy> {
  const sockets = new Set<Duplex>();
  const state = { blocked: 0 };
  const guard = { allowCidrs: opts.allowCidrs, resolver: opts.resolver, timeoutMs: opts.connectTimeoutMs ?? 10000 };
  const refused = (host: string, e: unknown) => {
    const code = e instanceof OutboundError ? e.code : 'unreachable';
    if (code === 'blocked_address') state.blocked++;
    opts.onBlocked?.({ host, code, reason: (e as Error).message });
    return { code, status: code === 'blocked_address' ? 403 : code === 'bad_url' ? 400 : 502, reason: (e as Error).message };
  };

  const server = http.createServer(async (req, res) => {
    // plain-http proxying: the request line carries an absolute URI
    let target: URL;
    try {
      target = new URL(req.url ?? '');
      if (target.protocol !== 'http:') throw new Error('not http');
    } catch {
      res
        .writeHead(400, { 'content-type': 'text/plain', 'x-guard-error': 'bad_url' })
        .end('this proxy only forwards absolute http:// URLs\n');
      return;
    }
    let pinned;
    try {
      if (target.username || target.password) throw new OutboundError('bad_url', 'credentials in URL');
      pinned = await resolvePinned(target.hostname, guard);
    } catch (e) {
      const r = refused(target.host, e);
      res
        .writeHead(r.status, { 'content-type': 'text/plain', 'x-guard-error': r.code })
        .end(`refused by the outbound guard: ${r.reason}\n`);
      return;
    }
    const headers: Record<string, string | string[]> = {};
    for (const [k, v] of Object.entries(req.headers)) if (v !== undefined && !HOP_BY_HOP.has(k)) headers[k] = v;
    const up = http.request({
      hostname: target.hostname.replace(/^\[|\]$/g, ''),
      port: target.port || 80,
      path: `${target.pathname}${target.search}`,
      method: req.method,
      headers,
      agent: false,
      lookup: pinnedLookup(pinned) as never,
    });
    // The connect timeout bounds the connect only, as for a tunnel below. (http.request's own
    // `timeout` is the socket's idle timeout for the whole exchange: a target that took longer than
    // it to send its first byte, or went quiet that long mid-body, was cut and the page reported
    // `unreachable` although it had been reached.) The page's own timeout bounds a slow answer.
    const connectTimer = setTimeout(() => up.destroy(new Error('connect timeout')), opts.connectTimeoutMs ?? 10000);
    up.once('socket', (s) => {
      const connected = () => {
        clearTimeout(connectTimer);
        s.setTimeout(IDLE_MS, () => up.destroy(new Error('idle timeout')));
      };
      if ((s as net.Socket).connecting) s.once('connect', connected);
      else connected();
    });
    up.once('close', () => clearTimeout(connectTimer));
    // the browser gave up on the request (page closed, navigation aborted): so does the proxy
    res.once('close', () => {
      if (!res.writableFinished) up.destroy();
    });
    up.on('response', (ur) => {
      const out: Record<string, string | string[]> = {};
      // the guard's own signal header is ours alone: a target must not be able to fake it
      for (const [k, v] of Object.entries(ur.headers)) if (v !== undefined && !HOP_BY_HOP.has(k) && k !== 'x-guard-error') out[k] = v;
      res.writeHead(ur.statusCode ?? 502, ur.statusMessage, out);
      ur.pipe(res);
    });
    up.on('error', (e) => {
      if (!res.headersSent)
        res.writeHead(502, { 'content-type': 'text/plain', 'x-guard-error': 'unreachable' }).end(`upstream error: ${e.message}\n`);
      else res.destroy();
    });
    req.pipe(up);
  });

  server.on('connect', async (req: http.IncomingMessage, client: Duplex, head: Buffer) => {
    sockets.add(client);
    client.on('close', () => sockets.delete(client));
    client.on('error', () => {});
    const m = /^(\[[0-9a-fA-F:.]+\]|[^:\[\]]+):(\d{1,5})$/.exec(req.url ?? '');
    if (!m || Number(m[2]) < 1 || Number(m[2]) > 65535) {
      client.end('HTTP/1.1 400 Bad Request\r\nX-Guard-Error: bad_url\r\nContent-Length: 0\r\n\r\n');
      return;
    }
    let hostname: string;
    try {
      // normalise the host the way a URL would (numeric spellings, case, IDN)
      hostname = new URL(`http://${m[1]}/`).hostname;
    } catch {
      client.end('HTTP/1.1 400 Bad Request\r\nX-Guard-Error: bad_url\r\nContent-Length: 0\r\n\r\n');
      return;
    }
    let pinned;
    try {
      pinned = await resolvePinned(hostname, guard);
    } catch (e) {
      const r = refused(hostname, e);
      client.end(
        `HTTP/1.1 ${r.status} ${r.status === 403 ? 'Forbidden' : r.status === 400 ? 'Bad Request' : 'Bad Gateway'}\r\nX-Guard-Error: ${r.code}\r\nContent-Length: 0\r\n\r\n`,
      );
      return;
    }
    const up = net.connect({ host: pinned.address, port: Number(m[2]), family: pinned.family });
    sockets.add(up);
    up.on('close', () => sockets.delete(up));
    const t = setTimeout(() => up.destroy(new Error('connect timeout')), opts.connectTimeoutMs ?? 10000);
    let connected = false;
    up.once('connect', () => {
      connected = true;
      clearTimeout(t);
      // a tunnel nobody uses for 5 minutes is closed (browsers reopen what they need)
      up.setTimeout(IDLE_MS, () => up.destroy());
      client.write('HTTP/1.1 200 Connection Established\r\n\r\n');
      if (head.length) up.write(head);
      up.pipe(client);
      client.pipe(up);
    });
    up.on('error', () => {
      clearTimeout(t);
      if (!connected) client.end('HTTP/1.1 502 Bad Gateway\r\nX-Guard-Error: unreachable\r\nContent-Length: 0\r\n\r\n');
      else client.destroy();
    });
    client.on('close', () => up.destroy());
  });

  // websocket upgrades over plain-http proxying are refused: browsers tunnel ws:// with CONNECT
  server.on('upgrade', (_req, socket: Duplex) => {
    socket.on('error', () => {});
    socket.end('HTTP/1.1 405 Method Not Allowed\r\nContent-Length: 0\r\n\r\n');
  });
  server.on('connection', (s) => {
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
  });

  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(opts.port ?? 0, '127.0.0.1', () => resolve());
  });
  const port = (server.address() as AddressInfo).port;
  return {
    port,
    url: `http://127.0.0.1:${port}`,
    get blocked() {
      return state.blocked;
    },
    accept(socket) {
      server.emit('connection', socket);
    },
    async stop() {
      for (const s of sockets) s.destroy();
      await new Promise<void>((r) => server.close(() => r()));
    },
  };
}

/**
 * Chromium flags that force every request (loopback included) through the proxy, and keep QUIC,
 * WebRTC's UDP and DNS prefetch off it (the browser-pool's full list is chromiumProxyFlags in
 * actors/browser-pool/launchers/types.ts; the strong form is a network namespace, docs/shots.md).
 */
export const chromiumProxyArgs = (proxy: { url: string }) => [
  `--proxy-server=${proxy.url}`,
  '--proxy-bypass-list=<-loopback>',
  '--disable-quic',
  '--dns-prefetch-disable',
  '--force-webrtc-ip-handling-policy=disable_non_proxied_udp',
  '--webrtc-ip-handling-policy=disable_non_proxied_udp',
];
