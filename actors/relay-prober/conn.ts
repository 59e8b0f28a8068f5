// One WebSocket connection to a relay, as a client sees it: every message parsed and queued with its
// arrival time, and waits for the next message that matches. Connects to the address the outbound
// check returned (the `lookup` is pinned), so no second DNS lookup can change the target.
import WebSocket from 'ws';
import { matchFilters, type Filter } from 'nostr-tools/filter';
import type { SecureContextOptions } from 'node:tls';
import type { CheckedAddress } from '../../shared/services/index.ts';

export type RelayMsg = unknown[];

/** Bytes one connection may receive before the probe drops it. */
export const MAX_BYTES_PER_CONNECTION = 32 * 1024 * 1024;

export interface Received {
  msg: RelayMsg;
  at: number;
  raw: string;
}

export interface ConnectOptions {
  url: string;
  address: CheckedAddress;
  timeoutMs: number;
  ca?: SecureContextOptions['ca'];
  /** Called for every message the client sends (round-trip and budget accounting). */
  onSend?: (msg: unknown[]) => void;
}

export class ConnectError extends Error {
  readonly stage: 'tcp' | 'tls' | 'upgrade' | 'timeout';
  readonly httpStatus?: number;
  constructor(stage: 'tcp' | 'tls' | 'upgrade' | 'timeout', message: string, httpStatus?: number) {
    super(message);
    this.stage = stage;
    this.httpStatus = httpStatus;
    this.name = 'ConnectError';
  }
}

export class RelayConn {
  readonly received: Received[] = [];
  /** Messages not yet taken by a wait. */
  private inbox: Received[] = [];
  private waiters: { pred: (m: RelayMsg) => boolean; resolve: (r: Received | null) => void }[] = [];
  closed = false;
  /** Latest NIP-42 challenge the relay sent on this connection. */
  challenge: string | null = null;
  /** This connection authenticated (NIP-42) with the probe's key. */
  authed = false;
  closeCode: number | null = null;
  readonly notices: string[] = [];
  readonly nonJson: string[] = [];
  private closeWaiters: (() => void)[] = [];

  readonly ws: WebSocket;
  private readonly opts: ConnectOptions;
  readonly connectMs: number;
  readonly tls: { authorized: boolean; error: string | null; validTo: string | null; protocol: string | null } | null;
  private constructor(
    ws: WebSocket,
    opts: ConnectOptions,
    connectMs: number,
    tls: { authorized: boolean; error: string | null; validTo: string | null; protocol: string | null } | null,
  ) {
    this.ws = ws;
    this.opts = opts;
    this.connectMs = connectMs;
    this.tls = tls;
    ws.on('message', (data) => {
      const raw = data.toString();
      // a relay that floods must not exhaust the prober's memory
      this.bytes += raw.length;
      if (this.bytes > MAX_BYTES_PER_CONNECTION) {
        this.overflow = true;
        ws.terminate();
        return;
      }
      let msg: RelayMsg;
      try {
        const v = JSON.parse(raw);
        if (!Array.isArray(v)) throw new Error('not an array');
        msg = v;
      } catch {
        this.nonJson.push(raw.slice(0, 200));
        return;
      }
      if (msg[0] === 'NOTICE') this.notices.push(String(msg[1]));
      if (msg[0] === 'AUTH' && typeof msg[1] === 'string') this.challenge = msg[1];
      if (msg[0] === 'EVENT' && msg[2] && typeof msg[2] === 'object') {
        const f = this.subFilters.get(String(msg[1]));
        if (f && !matchFilters(f, msg[2] as never))
          this.nonMatching.push({ subId: String(msg[1]), id: String((msg[2] as { id?: unknown }).id) });
      }
      const r = { msg, at: performance.now(), raw };
      this.received.push(r);
      const i = this.waiters.findIndex((w) => w.pred(msg));
      if (i >= 0) {
        const [w] = this.waiters.splice(i, 1);
        w!.resolve(r);
      } else this.inbox.push(r);
    });
    ws.on('close', (code) => {
      this.closed = true;
      this.closeCode = code;
      for (const w of this.waiters.splice(0)) w.resolve(null);
      for (const c of this.closeWaiters.splice(0)) c();
    });
    ws.on('error', () => {});
  }

  static open(opts: ConnectOptions): Promise<RelayConn> {
    const t0 = performance.now();
    const { address } = opts;
    return new Promise((resolve, reject) => {
      let settled = false;
      const ws = new WebSocket(opts.url, {
        handshakeTimeout: opts.timeoutMs,
        // connect to the checked address only
        lookup: ((_h: string, o: { all?: boolean }, cb: (...a: unknown[]) => void) =>
          o?.all ? cb(null, [{ address: address.address, family: address.family }]) : cb(null, address.address, address.family)) as never,
        ca: opts.ca,
        rejectUnauthorized: false, // TLS is judged by the tls check, not refused here
        perMessageDeflate: false,
        maxPayload: 16 * 1024 * 1024,
        headers: { 'User-Agent': 'payloads-labs relay-prober' },
      });
      const fail = (e: ConnectError) => {
        if (settled) return;
        settled = true;
        ws.terminate();
        reject(e);
      };
      ws.on('unexpected-response', (_req, res) =>
        fail(new ConnectError('upgrade', `HTTP ${res.statusCode} instead of a WebSocket upgrade`, res.statusCode)),
      );
      ws.on('error', (e: NodeJS.ErrnoException) => {
        const msg = e.message || String(e.code);
        if (/handshake has timed out/i.test(msg)) fail(new ConnectError('timeout', 'no WebSocket handshake within the timeout'));
        else if (/ECONNREFUSED|ECONNRESET|EHOSTUNREACH|ENETUNREACH|ETIMEDOUT/.test(msg) || e.code?.startsWith('E'))
          fail(new ConnectError('tcp', msg));
        else if (/SSL|TLS|certificate|wrong version/i.test(msg)) fail(new ConnectError('tls', msg));
        else fail(new ConnectError('upgrade', msg));
      });
      ws.on('open', () => {
        if (settled) return;
        settled = true;
        const sock = (ws as unknown as { _socket: import('node:tls').TLSSocket })._socket;
        let tls = null;
        if (opts.url.startsWith('wss:') && sock && 'authorized' in sock) {
          const cert = sock.getPeerCertificate?.();
          tls = {
            authorized: sock.authorized,
            error: sock.authorizationError ? String(sock.authorizationError) : null,
            validTo: cert?.valid_to ?? null,
            protocol: sock.getProtocol?.() ?? null,
          };
        }
        resolve(new RelayConn(ws, opts, performance.now() - t0, tls));
      });
    });
  }

  bytes = 0;
  /** Closed by the probe because the relay sent more than MAX_BYTES_PER_CONNECTION. */
  overflow = false;

  /** Every subscription id this client ever sent a REQ for. */
  readonly reqIds = new Set<string>();
  /** Filters of the latest REQ per subscription id, and EVENTs that matched none of them. */
  readonly subFilters = new Map<string, Filter[]>();
  readonly nonMatching: { subId: string; id: string }[] = [];

  send(msg: unknown[]): void {
    if (this.closed || this.ws.readyState !== WebSocket.OPEN) return;
    if (msg[0] === 'REQ' || msg[0] === 'COUNT') this.reqIds.add(String(msg[1]));
    if (msg[0] === 'REQ') this.subFilters.set(String(msg[1]), msg.slice(2) as Filter[]);
    this.opts.onSend?.(msg);
    this.ws.send(JSON.stringify(msg));
  }

  sendRaw(text: string, counted: unknown[] = ['RAW']): void {
    if (this.closed || this.ws.readyState !== WebSocket.OPEN) return;
    this.opts.onSend?.(counted);
    this.ws.send(text);
  }

  /** The next message (already queued or arriving within timeoutMs) that matches; null on timeout or close. */
  next(pred: (m: RelayMsg) => boolean, timeoutMs: number): Promise<Received | null> {
    const i = this.inbox.findIndex((r) => pred(r.msg));
    if (i >= 0) return Promise.resolve(this.inbox.splice(i, 1)[0]!);
    if (this.closed) return Promise.resolve(null);
    return new Promise((resolve) => {
      const w = {
        pred,
        resolve: (r: Received | null) => {
          clearTimeout(timer);
          resolve(r);
        },
      };
      const timer = setTimeout(() => {
        const j = this.waiters.indexOf(w);
        if (j >= 0) this.waiters.splice(j, 1);
        resolve(null);
      }, timeoutMs);
      this.waiters.push(w);
    });
  }

  /** Drop queued messages that match (e.g. leftovers of a finished subscription). */
  drain(pred: (m: RelayMsg) => boolean = () => true): Received[] {
    const out = this.inbox.filter((r) => pred(r.msg));
    this.inbox = this.inbox.filter((r) => !pred(r.msg));
    return out;
  }

  /** Resolves when the connection closes or after ms; true when it closed. */
  waitClose(ms: number): Promise<boolean> {
    if (this.closed) return Promise.resolve(true);
    return new Promise((resolve) => {
      const t = setTimeout(() => resolve(this.closed), ms);
      this.closeWaiters.push(() => {
        clearTimeout(t);
        resolve(true);
      });
    });
  }

  close(): void {
    if (!this.closed) {
      this.ws.close();
      // a relay that never answers the close frame must not keep the socket
      setTimeout(() => this.ws.terminate(), 1000).unref();
    }
  }
}
