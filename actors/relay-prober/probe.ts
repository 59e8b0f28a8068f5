// The state of one module run against one relay: the checked address, the NIP-11 document, the
// connections, the throwaway keys and every test event, the budget, latency samples and the
// advertised-versus-observed table. Checks (checks.ts) use it; report.ts turns it into labs.report/1.
import { request as httpRequest } from 'node:http';
import { request as httpsRequest } from 'node:https';
import type { SecureContextOptions } from 'node:tls';
import { finalizeEvent, generateSecretKey, getPublicKey, type Event, type EventTemplate } from 'nostr-tools/pure';
import { checkAddress, type CheckedAddress } from '../../shared/services/index.ts';
import type { Config } from '../../shared/config/index.ts';
import { RelayConn, ConnectError, type Received, type RelayMsg } from './conn.ts';

/** Hard bounds of one module run (advertised in the catalogue). */
export const BOUNDS = { connections: 24, subscriptions: 160, events: 120 } as const;

/** Tag every test event carries, so anyone can recognise (and ignore) them. */
export const TEST_MARKER = ['t', 'labs-test'] as const;
export const CLIENT_TAG = ['client', 'payloads-labs'] as const;

export class BudgetExceeded extends Error {
  constructor(what: string) {
    super(`probe budget exhausted: ${what}`);
    this.name = 'BudgetExceeded';
  }
}

/** A module cannot run at all (turned into TaskFailure with one of the documented errors). */
export class ProbeFatal extends Error {
  readonly code: 'unreachable' | 'not_a_relay' | 'write_restricted' | 'timeout';
  constructor(code: 'unreachable' | 'not_a_relay' | 'write_restricted' | 'timeout', message: string) {
    super(message);
    this.code = code;
    this.name = 'ProbeFatal';
  }
}

export interface Nip11Fetch {
  status: number | null;
  contentType: string | null;
  headers: Record<string, string | string[] | undefined>;
  body: string;
  doc: Record<string, unknown> | null;
  error: string | null;
}

export interface OkAnswer {
  ok: boolean | null; // null: no OK within the timeout
  reason: string;
  msg: RelayMsg | null;
  ms: number;
}

export interface ReqAnswer {
  events: Event[];
  end: 'EOSE' | 'CLOSED' | null;
  reason: string;
  /** Other answers seen meanwhile (NOTICE) */
  notices: string[];
  ms: number;
}

export interface ProbeTimings {
  replyTimeoutMs: number;
  quietMs: number;
  idleMs: number;
  latencySamples: number;
  connectTimeoutMs: number;
}

/** NIP-01's standard prefixes plus those other NIPs define (42: auth-required, restricted). */
export const STANDARD_PREFIXES = [
  'duplicate',
  'pow',
  'blocked',
  'rate-limited',
  'invalid',
  'error',
  'unsupported',
  'restricted',
  'auth-required',
  'mute',
  'payment-required',
];

/**
 * The machine-readable prefix of an OK/CLOSED message: `none`, a `standard` one, a standard word in
 * other letters (`case`: "ERROR:"), or some `other` single word. Prefixes are compared as written:
 * NIP-01 lists them in lower case and clients match them literally (e.g. `auth-required:`).
 */
export function prefixOf(reason: string): { kind: 'none' | 'standard' | 'case' | 'other'; word: string | null } {
  const m = /^([A-Za-z][A-Za-z0-9_-]*):/.exec(reason);
  if (!m) return { kind: 'none', word: null };
  const word = m[1]!;
  if (STANDARD_PREFIXES.includes(word)) return { kind: 'standard', word };
  if (STANDARD_PREFIXES.includes(word.toLowerCase())) return { kind: 'case', word };
  return { kind: 'other', word };
}

/** Has a machine-readable single-word prefix (what NIP-01's MUST asks), whatever its case. */
export const hasPrefix = (reason: string) => prefixOf(reason).kind !== 'none';
// what the relay means matters here, not its spelling: "RESTRICTED:" is still a refusal
export const isWriteRefusal = (reason: string) => /^(restricted|auth-required|blocked|pow|payment-required|mute):/i.test(reason);

let subCounter = 0;

export class Probe {
  readonly url: URL;
  address: CheckedAddress | null = null;
  readonly timings: ProbeTimings;
  readonly ca: SecureContextOptions['ca'];
  readonly usage = { connections: 0, subscriptions: 0, events: 0, roundTrips: 0 };
  readonly latency = { connect: [] as number[], eose: [] as number[], ok: [] as number[] };
  readonly observed: { claim: string; advertised: unknown; observed: unknown; agrees: boolean | null; checkId?: string }[] = [];
  readonly keys: { sk: Uint8Array; pk: string }[];
  /** Stored test events per pubkey (deleted at the end). */
  readonly stored = new Map<string, Event>();
  readonly deleted = new Set<string>();
  /** Storable test events sent without an OK in time: perhaps stored, so deleted too. */
  readonly unconfirmed = new Map<string, Event>();
  nip11: Nip11Fetch | null = null;
  /** Set during the final clean-up. */
  cleaning = false;
  stopped = false;
  /** Results of checks already run, by id (dependent checks read them). */
  readonly results = new Map<string, { status: string; details: Record<string, unknown> }>();
  readonly memo = new Map<string, Promise<unknown>>();
  readonly conns: RelayConn[] = [];
  private mainConn: RelayConn | null = null;

  /**
   * Called (and awaited) once before the first event the relay may store is sent: the throwaway
   * keys are written down then (actors/relay-prober/cleanups.ts), so a prober that dies afterwards
   * leaves another one what it needs to delete them.
   */
  private beforeFirstEvent: (() => Promise<void>) | undefined;
  private firstEvent: Promise<void> | undefined;

  readonly config: Config;
  constructor(
    url: string,
    config: Config,
    opts: {
      ca?: SecureContextOptions['ca'];
      timings?: Partial<ProbeTimings>;
      progress?: (t: string) => void;
      keys?: Uint8Array[];
      beforeFirstEvent?: (p: Probe) => Promise<void>;
    } = {},
  ) {
    this.config = config;
    this.url = new URL(url);
    this.ca = opts.ca;
    const l = config.labs;
    this.timings = {
      replyTimeoutMs: l.replyTimeoutMs,
      quietMs: l.quietMs,
      idleMs: l.idleMs,
      latencySamples: l.latencySamples,
      connectTimeoutMs: config.outbound.connectTimeoutMs,
      ...opts.timings,
    };
    this.keys = (opts.keys ?? [generateSecretKey(), generateSecretKey()]).map((sk) => ({ sk, pk: getPublicKey(sk) }));
    this.progress = opts.progress ?? (() => {});
    const hook = opts.beforeFirstEvent;
    if (hook) this.beforeFirstEvent = () => hook(this);
  }

  progress: (t: string) => void;

  get pk(): string {
    return this.keys[0]!.pk;
  }

  get info(): Record<string, unknown> | null {
    return this.nip11?.doc ?? null;
  }

  get limitation(): Record<string, unknown> {
    const l = this.info?.limitation;
    return l && typeof l === 'object' ? (l as Record<string, unknown>) : {};
  }

  advertisesNip(n: number): boolean | null {
    const s = this.info?.supported_nips;
    return Array.isArray(s) ? s.includes(n) : null;
  }

  observe(claim: string, advertised: unknown, observed: unknown, agrees: boolean | null, checkId?: string) {
    const i = this.observed.findIndex((o) => o.claim === claim);
    const row = { claim, advertised: advertised ?? null, observed: observed ?? null, agrees, ...(checkId ? { checkId } : {}) };
    if (i >= 0) this.observed[i] = row;
    else this.observed.push(row);
  }

  once<T>(key: string, fn: () => Promise<T>): Promise<T> {
    let p = this.memo.get(key) as Promise<T> | undefined;
    if (!p) {
      p = fn();
      this.memo.set(key, p);
    }
    return p;
  }

  async resolve(): Promise<CheckedAddress> {
    return this.once('resolve', async () => {
      this.address = await checkAddress(this.url.hostname, this.config);
      return this.address;
    });
  }

  /**
   * A new connection, counted against the budget; one for the clean-up is reserved beyond it, so a
   * module that used its budget still deletes its test events.
   */
  async open(opts: { forCleanup?: boolean } = {}): Promise<RelayConn> {
    if (this.stopped && !opts.forCleanup) throw new Error('the probe was stopped');
    if (this.usage.connections >= BOUNDS.connections + (opts.forCleanup ? 1 : 0))
      throw new BudgetExceeded(`${BOUNDS.connections} connections`);
    const address = await this.resolve();
    this.usage.connections++;
    this.usage.roundTrips++;
    const c = await RelayConn.open({
      url: this.url.href,
      address,
      timeoutMs: this.timings.connectTimeoutMs,
      ca: this.ca,
      onSend: (m) => this.onSend(m),
    });
    this.latency.connect.push(c.connectMs);
    this.conns.push(c);
    return c;
  }

  private onSend(m: unknown[]) {
    const t = m[0];
    if (t === 'REQ' || t === 'NEG-OPEN') {
      if (this.usage.subscriptions >= BOUNDS.subscriptions) throw new BudgetExceeded(`${BOUNDS.subscriptions} subscriptions`);
      this.usage.subscriptions++;
    }
    if (t === 'EVENT') {
      // the final NIP-09 clean-up (one request per key) is always allowed
      // (twice: the end-of-module clean-up may be cut short and run again after a stop)
      if (this.usage.events >= BOUNDS.events + (this.cleaning ? 2 * this.keys.length : 0))
        throw new BudgetExceeded(`${BOUNDS.events} events`);
      this.usage.events++;
    }
    if (t === 'REQ' || t === 'EVENT' || t === 'COUNT' || t === 'AUTH' || t === 'NEG-OPEN' || t === 'NEG-MSG') this.usage.roundTrips++;
  }

  /** The shared connection; reopened when the relay dropped it (for the clean-up: on the reserved one). */
  async conn(opts: { forCleanup?: boolean } = {}): Promise<RelayConn> {
    if (!this.mainConn || this.mainConn.closed) this.mainConn = await this.open(opts);
    return this.mainConn;
  }

  subId(prefix = 's'): string {
    return `${prefix}${(++subCounter).toString(36)}`;
  }

  /** Sign with a throwaway key; every test event carries the marker and client tags. */
  sign(t: Partial<EventTemplate> & { kind: number }, keyIndex = 0, opts: { marker?: boolean } = {}): Event {
    const tags = [...(t.tags ?? [])];
    if (opts.marker !== false) tags.push([...TEST_MARKER], [...CLIENT_TAG]);
    return finalizeEvent(
      { created_at: t.created_at ?? Math.floor(Date.now() / 1000), kind: t.kind, tags, content: t.content ?? '' },
      this.keys[keyIndex]!.sk,
    );
  }

  /** EVENT → OK. Stored kinds that were accepted are remembered for the final deletion. */
  async publish(ev: Event, c?: RelayConn, opts: { latency?: boolean; raw?: string } = {}): Promise<OkAnswer> {
    const conn = c ?? (await this.conn());
    const storable = !(ev.kind >= 20000 && ev.kind < 30000) && ev.kind !== 5 && !opts.raw;
    if (this.beforeFirstEvent && (storable || opts.raw)) await (this.firstEvent ??= this.beforeFirstEvent());
    const t0 = performance.now();
    if (opts.raw) conn.sendRaw(opts.raw, ['EVENT']);
    else conn.send(['EVENT', ev]);
    const r = await conn.next((m) => m[0] === 'OK' && m[1] === ev.id, this.timings.replyTimeoutMs);
    const ms = performance.now() - t0;
    if (!r) {
      if (storable) this.unconfirmed.set(ev.id, ev);
      return { ok: null, reason: '', msg: null, ms };
    }
    const ok = r.msg[2] === true;
    if (opts.latency) this.latency.ok.push(ms);
    if (ok && storable) this.stored.set(ev.id, ev);
    return { ok, reason: typeof r.msg[3] === 'string' ? r.msg[3] : '', msg: r.msg, ms };
  }

  /** Publish, answering an `auth-required:` refusal with AUTH once (NIP-42) when a challenge came. */
  async publishAuthed(ev: Event, c?: RelayConn): Promise<OkAnswer> {
    const conn = c ?? (await this.conn());
    let a = await this.publish(ev, conn);
    if (a.ok === false && /^auth-required:/i.test(a.reason)) {
      const ch = conn.challenge ?? (await conn.next((m) => m[0] === 'AUTH', this.timings.quietMs))?.msg[1];
      if (typeof ch === 'string' && !conn.authed) {
        const auth = await this.auth(conn, ch);
        conn.authed = auth.ok === true;
        if (conn.authed) a = await this.publish(ev, conn);
      }
    }
    return a;
  }

  async auth(conn: RelayConn, challenge: string, over: Partial<EventTemplate> = {}, keyIndex = 0): Promise<OkAnswer> {
    const ev = finalizeEvent(
      {
        kind: 22242,
        created_at: Math.floor(Date.now() / 1000),
        tags: [
          ['relay', this.url.href],
          ['challenge', challenge],
        ],
        content: '',
        ...over,
      },
      this.keys[keyIndex]!.sk,
    );
    const t0 = performance.now();
    conn.send(['AUTH', ev]);
    const r = await conn.next((m) => m[0] === 'OK' && m[1] === ev.id, this.timings.replyTimeoutMs);
    if (!r) return { ok: null, reason: '', msg: null, ms: performance.now() - t0 };
    return { ok: r.msg[2] === true, reason: typeof r.msg[3] === 'string' ? r.msg[3] : '', msg: r.msg, ms: performance.now() - t0 };
  }

  /** REQ → events until EOSE or CLOSED; the subscription is closed after EOSE unless keepOpen. */
  async req(
    filters: Record<string, unknown>[],
    c?: RelayConn,
    opts: { subId?: string; keepOpen?: boolean; latency?: boolean; timeoutMs?: number; noAuth?: boolean; endOnNotice?: boolean } = {},
  ): Promise<ReqAnswer> {
    const conn = c ?? (await this.conn());
    const id = opts.subId ?? this.subId();
    const t0 = performance.now();
    const n0 = conn.notices.length;
    conn.send(['REQ', id, ...filters]);
    const events: Event[] = [];
    const deadline = Date.now() + (opts.timeoutMs ?? this.timings.replyTimeoutMs);
    let end: ReqAnswer['end'] = null;
    let reason = '';
    for (;;) {
      const left = deadline - Date.now();
      if (left <= 0) break;
      const r = await conn.next(
        (m) => ((m[0] === 'EVENT' || m[0] === 'EOSE' || m[0] === 'CLOSED') && m[1] === id) || (!!opts.endOnNotice && m[0] === 'NOTICE'),
        left,
      );
      if (!r) break;
      if (r.msg[0] === 'NOTICE') break;
      if (r.msg[0] === 'EVENT') {
        events.push(r.msg[2] as Event);
        continue;
      }
      end = r.msg[0] as 'EOSE' | 'CLOSED';
      reason = typeof r.msg[2] === 'string' ? r.msg[2] : '';
      break;
    }
    const ms = performance.now() - t0;
    // a relay that wants NIP-42 first: authenticate with the throwaway key once, then ask again
    if (end === 'CLOSED' && /^auth-required:/i.test(reason) && conn.challenge && !opts.noAuth && !conn.authed) {
      const a = await this.auth(conn, conn.challenge);
      conn.authed = a.ok === true;
      if (conn.authed) return this.req(filters, conn, { ...opts, noAuth: true });
    }
    if (end === 'EOSE' && opts.latency) this.latency.eose.push(ms);
    if (end === 'EOSE' && !opts.keepOpen) this.close(conn, id);
    return { events, end, reason, notices: conn.notices.slice(n0), ms };
  }

  close(conn: RelayConn, subId: string) {
    conn.send(['CLOSE', subId]);
  }

  /** Live EVENTs for a subscription within ms. */
  async live(conn: RelayConn, subId: string, ms: number, until?: (e: Event) => boolean): Promise<Event[]> {
    const out: Event[] = [];
    const deadline = Date.now() + ms;
    for (;;) {
      const left = deadline - Date.now();
      if (left <= 0) break;
      const r = await conn.next((m) => m[0] === 'EVENT' && m[1] === subId, left);
      if (!r) break;
      out.push(r.msg[2] as Event);
      if (until?.(r.msg[2] as Event)) break;
    }
    return out;
  }

  /** GET the NIP-11 document (ws→http, wss→https) from the checked address. */
  async fetchNip11(): Promise<Nip11Fetch> {
    return this.once('nip11', async () => {
      const address = await this.resolve();
      const u = new URL(this.url.href);
      u.protocol = u.protocol === 'wss:' ? 'https:' : 'http:';
      this.usage.roundTrips++;
      const f = await new Promise<Nip11Fetch>((resolve) => {
        const req = (u.protocol === 'https:' ? httpsRequest : httpRequest)(
          u,
          {
            method: 'GET',
            headers: { Accept: 'application/nostr+json', Origin: 'https://labs.example', 'User-Agent': 'payloads-labs relay-prober' },
            lookup: ((_h: string, o: { all?: boolean }, cb: (...a: unknown[]) => void) =>
              o?.all
                ? cb(null, [{ address: address.address, family: address.family }])
                : cb(null, address.address, address.family)) as never,
            ca: this.ca,
            rejectUnauthorized: false,
            timeout: this.timings.replyTimeoutMs,
          },
          (res) => {
            const chunks: Buffer[] = [];
            let size = 0;
            res.on('data', (d: Buffer) => {
              size += d.length;
              if (size > 256 * 1024) req.destroy(new Error('NIP-11 document larger than 256 KB'));
              else chunks.push(d);
            });
            res.on('end', () => {
              const body = Buffer.concat(chunks).toString('utf8');
              let doc: Record<string, unknown> | null = null;
              try {
                const v = JSON.parse(body);
                if (v && typeof v === 'object' && !Array.isArray(v)) doc = v;
              } catch {
                /* not JSON */
              }
              resolve({
                status: res.statusCode ?? null,
                contentType: res.headers['content-type'] ?? null,
                headers: res.headers,
                body: body.slice(0, 2000),
                doc,
                error: null,
              });
            });
            res.on('error', (e) =>
              resolve({ status: res.statusCode ?? null, contentType: null, headers: res.headers, body: '', doc: null, error: e.message }),
            );
          },
        );
        req.on('timeout', () => req.destroy(new Error('timed out')));
        req.on('error', (e) => resolve({ status: null, contentType: null, headers: {}, body: '', doc: null, error: e.message }));
        req.end();
      });
      this.nip11 = f;
      return f;
    });
  }

  /** Fatal preconditions of every module: resolvable, connectable, speaks Nostr. */
  async reachable(): Promise<void> {
    return this.once('reachable', async () => {
      try {
        await this.resolve();
      } catch (e) {
        throw new ProbeFatal('unreachable', (e as Error).message);
      }
      let c: RelayConn;
      try {
        c = await this.conn();
      } catch (e) {
        if (e instanceof ConnectError && e.stage === 'upgrade') throw new ProbeFatal('not_a_relay', `${this.url.href}: ${e.message}`);
        throw new ProbeFatal('unreachable', `${this.url.href}: ${(e as Error).message}`);
      }
      const r = await this.req([{ kinds: [1], authors: [this.pk], limit: 1 }], c);
      if (!r.end && !r.notices.length) {
        if (c.closed) throw new ProbeFatal('unreachable', 'the relay closed the connection on the first REQ');
        throw new ProbeFatal(
          'not_a_relay',
          `no EOSE, CLOSED or NOTICE within ${this.timings.replyTimeoutMs} ms of a REQ: not a Nostr relay`,
        );
      }
    });
  }

  /** Close every connection; nothing new is opened afterwards (a timed-out run winds down). */
  stop() {
    this.stopped = true;
    for (const c of this.conns) c.close();
  }

  /** Every EVENT received on a subscription id that was never opened on that connection. */
  strayEvents(): { subId: string; conn: number }[] {
    const out: { subId: string; conn: number }[] = [];
    this.conns.forEach((c, i) => {
      for (const r of c.received)
        if (r.msg[0] === 'EVENT' && !c.reqIds.has(String(r.msg[1]))) out.push({ subId: String(r.msg[1]), conn: i });
    });
    return out;
  }
}

export type { Received, RelayMsg };
