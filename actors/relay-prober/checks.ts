// The catalogue of checks. Each has an id, a title, a module, its basis in the spec (NIP, section,
// level), whether it needs the test dataset, and how many round trips it needs at least (the
// benchmark compares the real count with that). `run` returns the observed status; the runner
// turns a `fail` of a recommended/convention check into `warn` (only required/essential can fail).
import { matchFilter, type Filter } from 'nostr-tools/filter';
import { verifyEvent, type Event } from 'nostr-tools/pure';
import { getPow } from 'nostr-tools/nip13';
import type { CheckInfo, LabsModule } from '../../shared/services/labs.ts';
import type { CheckStatus, BasisLevel } from '../../shared/schemas/labs-report.ts';
import { Probe, BudgetExceeded, hasPrefix, isWriteRefusal, ProbeFatal, type OkAnswer, type ProbeTimings } from './probe.ts';
import type { RelayConn } from './conn.ts';

export interface Outcome {
  status: CheckStatus;
  message: string;
  details?: Record<string, unknown>;
}

export interface CheckDef extends CheckInfo {
  module: LabsModule;
  basis: { nip: string; section?: string; level: BasisLevel };
  /** Least number of round trips the check needs (connections, REQ/EVENT/COUNT/AUTH, HTTP). */
  minRoundTrips: number | ((t: ProbeTimings) => number);
  run(p: Probe): Promise<Outcome>;
}

const pass = (message: string, details: Record<string, unknown> = {}): Outcome => ({ status: 'pass', message, details });
const bad = (message: string, details: Record<string, unknown> = {}): Outcome => ({ status: 'fail', message, details });
const skip = (message: string, details: Record<string, unknown> = {}): Outcome => ({ status: 'skip', message, details });
const info = (message: string, details: Record<string, unknown> = {}): Outcome => ({ status: 'info', message, details });
const warn = (message: string, details: Record<string, unknown> = {}): Outcome => ({ status: 'warn', message, details });

const now = () => Math.floor(Date.now() / 1000);
const randHex = () => Array.from(crypto.getRandomValues(new Uint8Array(32)), (b) => b.toString(16).padStart(2, '0')).join('');
const short = (id: string) => id.slice(0, 12);

// ---------------------------------------------------------------------------------------------
// The test dataset: published once per run from the throwaway keys, used by filter, kind and
// deletion checks. Times are in the recent past so `created_at` limits do not refuse them.

export interface Dataset {
  base: number;
  notes: Event[]; // n1..n5 (kind 1); n3 and n4 share created_at
  decoy: Event; // kind 9999, must match none of the filter checks
  repl: { older: Event; newer: Event; oldest: Event }; // kind 0; `oldest` is sent after `newer`
  addr: { older: Event; newer: Event; other: Event }; // kind 30078
  refs: { e1: string; e2: string; e3: string; pB: string };
  /** What a conformant relay serves now. */
  visible: Event[];
}

async function publishDataset(p: Probe): Promise<Dataset> {
  const base = now() - 120;
  const A = 0;
  const pB = p.keys[1]!.pk;
  const refs = { e1: randHex(), e2: randHex(), e3: randHex(), pB };
  const n1 = p.sign({ kind: 1, created_at: base - 40, content: 'labs test note 1', tags: [['t', 'alpha'], ['e', refs.e1], ['p', pB]] }, A);
  const n2 = p.sign({ kind: 1, created_at: base - 30, content: 'labs test note 2', tags: [['t', 'beta'], ['e', refs.e2]] }, A);
  const n3 = p.sign({ kind: 1, created_at: base - 20, content: 'labs test note 3', tags: [['t', 'alpha'], ['p', pB]] }, A);
  const n4 = p.sign({ kind: 1, created_at: base - 20, content: 'labs test note 4', tags: [['t', 'gamma']] }, A);
  const n5 = p.sign({ kind: 1, created_at: base - 10, content: 'labs test note 5', tags: [['l', 'labs-label']] }, A);
  const decoy = p.sign({ kind: 9999, created_at: base - 25, content: 'labs decoy', tags: [['t', 'delta'], ['e', refs.e3]] }, A);
  const replOlder = p.sign({ kind: 0, created_at: base - 30, content: '{"name":"labs test (old)"}' }, A);
  const replNewer = p.sign({ kind: 0, created_at: base - 10, content: '{"name":"labs test"}' }, A);
  const replOldest = p.sign({ kind: 0, created_at: base - 40, content: '{"name":"labs test (oldest)"}' }, A);
  const addrOlder = p.sign({ kind: 30078, created_at: base - 30, content: 'addressable old', tags: [['d', 'labs-a']] }, A);
  const addrNewer = p.sign({ kind: 30078, created_at: base - 10, content: 'addressable new', tags: [['d', 'labs-a']] }, A);
  const addrOther = p.sign({ kind: 30078, created_at: base - 20, content: 'addressable other', tags: [['d', 'labs-b']] }, A);
  const notes = [n1, n2, n3, n4, n5];
  const ordered = [...notes, decoy, replOlder, replNewer, addrOlder, addrNewer, addrOther];
  p.progress(`publishing the test dataset (${ordered.length} events)`);
  const conn = await p.conn();
  for (const ev of ordered) {
    const a = await p.publishAuthed(ev, conn);
    if (a.ok !== true) {
      if (a.ok === false && isWriteRefusal(a.reason)) throw new ProbeFatal('write_restricted', `the relay refuses test events: ${a.reason}`);
      throw new ProbeFatal('write_restricted', a.ok === null ? `no OK for a test event within ${p.timings.replyTimeoutMs} ms` : `test event refused: ${a.reason || '(no reason)'}`);
    }
  }
  return { base, notes, decoy, repl: { older: replOlder, newer: replNewer, oldest: replOldest }, addr: { older: addrOlder, newer: addrNewer, other: addrOther }, refs, visible: [...notes, decoy, replNewer, addrNewer, addrOther] };
}

export const dataset = (p: Probe) => p.once('dataset', () => publishDataset(p));

/** Non-matching events returned by any filter check so far (for filter-nonmatching). */
const extrasSeen = (p: Probe): { check: string; id: string }[] => {
  const k = '__extras';
  const m = p.memo as unknown as Map<string, unknown>;
  if (!m.has(k)) m.set(k, []);
  return m.get(k) as { check: string; id: string }[];
};

/** Run filters, compare with what the dataset says must come back. */
async function filterCheck(p: Probe, id: string, filters: Filter[], opts: { expectIds?: string[]; describe: string } ) {
  const ds = await dataset(p);
  const r = await p.req(filters as Record<string, unknown>[]);
  if (r.end !== 'EOSE') return bad(`no EOSE for ${opts.describe} (${r.end ?? 'timeout'}${r.reason ? `: ${r.reason}` : ''})`, { filters, notices: r.notices });
  const expected = opts.expectIds ?? ds.visible.filter((e) => filters.some((f) => matchFilter(f, e))).map((e) => e.id);
  const got = r.events.map((e) => e.id);
  const nonMatching = r.events.filter((e) => !filters.some((f) => matchFilter(f, e))).map((e) => e.id);
  for (const x of nonMatching) extrasSeen(p).push({ check: id, id: x });
  const missing = expected.filter((x) => !got.includes(x));
  const unexpected = got.filter((x) => !expected.includes(x) && !nonMatching.includes(x));
  const details = { filters, expected: expected.map(short), returned: got.map(short), missing: missing.map(short), nonMatching: nonMatching.map(short) };
  if (nonMatching.length) return bad(`${opts.describe}: ${nonMatching.length} event(s) returned that do not match the filter`, details);
  if (missing.length) return bad(`${opts.describe}: ${missing.length} of ${expected.length} matching test event(s) missing`, details);
  if (unexpected.length) return bad(`${opts.describe}: ${unexpected.length} superseded or unexpected event(s) returned`, details);
  return pass(`${opts.describe}: exactly the ${expected.length} matching event(s)`, details);
}

/** Publish on one connection and wait for live delivery on a subscription of another. */
async function openLive(p: Probe, c: RelayConn, filter: Filter): Promise<string | null> {
  const sub = p.subId('live');
  const r = await p.req([filter as Record<string, unknown>], c, { subId: sub, keepOpen: true });
  return r.end === 'EOSE' ? sub : null;
}

const writeRefused = (a: OkAnswer) => a.ok === false && isWriteRefusal(a.reason);

function percentiles(xs: number[]) {
  if (!xs.length) return null;
  const s = [...xs].sort((a, b) => a - b);
  const at = (q: number) => s[Math.min(s.length - 1, Math.max(0, Math.ceil(q * s.length) - 1))]!;
  const r = (v: number) => Math.round(v * 10) / 10;
  return { samples: s.length, min: r(s[0]!), max: r(s.at(-1)!), p50: r(at(0.5)), p90: r(at(0.9)), p99: r(at(0.99)) };
}
export { percentiles };

/** A stored note from the throwaway key, published and read back (quick module). */
const quickNote = (p: Probe) => p.once('quickNote', async () => {
  const ev = p.sign({ kind: 1, content: 'labs test: publish and read back' });
  const a = await p.publishAuthed(ev);
  return { ev, a };
});

/** The AUTH challenge of a fresh connection (sent on connect, or after a REQ that needs it). */
const authChallenge = (p: Probe) => p.once('challenge', async () => {
  const c = await p.open();
  let r = await c.next((m) => m[0] === 'AUTH' && typeof m[1] === 'string', p.timings.quietMs);
  if (!r && c.challenge) return { c, challenge: c.challenge };
  if (!r) {
    await p.req([{ kinds: [4], '#p': [p.pk], limit: 1 }], c);
    r = await c.next((m) => m[0] === 'AUTH' && typeof m[1] === 'string', p.timings.quietMs);
  }
  const challenge = c.challenge ?? (r ? String(r.msg[1]) : null);
  return { c, challenge };
});

const L = (p: Probe, k: string): number | null => (typeof p.limitation[k] === 'number' ? (p.limitation[k] as number) : null);

/** Events refused or at least not served back; used by several limit probes. */
async function refusedOrHidden(p: Probe, ev: Event, c?: RelayConn, raw?: string): Promise<{ refused: boolean; how: string; a: OkAnswer }> {
  const conn = c ?? (await p.open());
  const a = await p.publish(ev, conn, raw ? { raw } : {});
  if (a.ok === false) return { refused: true, how: `OK false: ${a.reason}`, a };
  if (a.ok === null) {
    if (conn.closed) return { refused: true, how: 'connection closed', a };
    const n = conn.notices.at(-1);
    if (n) return { refused: true, how: `NOTICE: ${n}`, a };
    return { refused: false, how: 'no answer', a };
  }
  const back = await p.req([{ ids: [ev.id] }], conn);
  return { refused: back.events.length === 0, how: back.events.length ? 'accepted and served' : 'OK true but not served', a };
}

// ---------------------------------------------------------------------------------------------

type Def = Omit<CheckDef, 'selectable' | 'needsDataset'> & { needsDataset?: boolean; selectable?: boolean };
const def = (d: Def): CheckDef => ({ needsDataset: false, selectable: true, ...d });

const ALL_CHECKS: CheckDef[] = [
  // ----------------------------------------------------------------------------- quick
  def({ id: 'dns', title: 'Host name resolves to a public address', module: 'quick', basis: { nip: 'transport', section: 'DNS', level: 'required' }, minRoundTrips: 0,
    async run(p) {
      const a = await p.resolve();
      return pass(`${a.host} → ${a.address}`, { address: a.address, family: a.family });
    } }),
  def({ id: 'tcp', title: 'TCP connection opens', module: 'quick', basis: { nip: 'transport', section: 'TCP', level: 'required' }, minRoundTrips: 0,
    async run(p) {
      const c = await p.conn();
      return pass(`connected in ${Math.round(c.connectMs)} ms (TCP, TLS and upgrade)`, { connectMs: Math.round(c.connectMs) });
    } }),
  def({ id: 'tls', title: 'TLS certificate chain, name and expiry', module: 'quick', basis: { nip: 'transport', section: 'TLS', level: 'required' }, minRoundTrips: 0,
    async run(p) {
      if (p.url.protocol === 'ws:') return skip('ws:// relay: no TLS');
      const c = await p.conn();
      const t = c.tls;
      if (!t) return bad('no TLS session information');
      if (!t.authorized) return bad(`certificate not trusted: ${t.error}`, t);
      const days = t.validTo ? (Date.parse(t.validTo) - Date.now()) / 86400_000 : null;
      if (days !== null && days < 14) return warn(`certificate expires in ${Math.max(0, Math.floor(days))} day(s)`, { ...t, daysLeft: Math.floor(days) });
      return pass(`trusted certificate for ${p.url.hostname}${days !== null ? `, ${Math.floor(days)} days left` : ''} (${t.protocol})`, { ...t, daysLeft: days === null ? null : Math.floor(days) });
    } }),
  def({ id: 'websocket', title: 'WebSocket upgrade on the relay URL', module: 'quick', basis: { nip: '01', section: 'Communication between clients and relays', level: 'required' }, minRoundTrips: 0,
    async run(p) {
      await p.conn();
      return pass(`upgraded to WebSocket at ${p.url.href}`);
    } }),
  def({ id: 'nip11-served', title: 'NIP-11 document served for Accept: application/nostr+json', module: 'quick', basis: { nip: '11', level: 'recommended' }, minRoundTrips: 0,
    async run(p) {
      const f = await p.fetchNip11();
      p.observe('supported_nips: 11', p.advertisesNip(11), !!f.doc, f.doc ? true : null, 'nip11-served');
      if (f.error) return bad(`no NIP-11 document: ${f.error}`);
      if (f.status !== 200 || !f.doc) return bad(`no NIP-11 document (HTTP ${f.status}, ${f.contentType ?? 'no content type'})`, { status: f.status, contentType: f.contentType, body: f.body.slice(0, 200) });
      if (!String(f.contentType).includes('application/nostr+json')) return warn(`NIP-11 JSON served as ${f.contentType} instead of application/nostr+json`, { contentType: f.contentType });
      return pass('NIP-11 document served', { contentType: f.contentType, name: f.doc.name ?? null });
    } }),
  def({ id: 'nip11-cors', title: 'NIP-11 CORS headers', module: 'quick', basis: { nip: '11', section: 'Cross-Origin Resource Sharing', level: 'required' }, minRoundTrips: 0,
    async run(p) {
      const f = await p.fetchNip11();
      if (!f.doc) return skip('no NIP-11 document');
      const need = ['access-control-allow-origin', 'access-control-allow-headers', 'access-control-allow-methods'];
      const missing = need.filter((h) => !f.headers[h]);
      const got = Object.fromEntries(need.map((h) => [h, f.headers[h] ?? null]));
      if (missing.length) return bad(`missing ${missing.join(', ')}`, got);
      return pass('Access-Control-Allow-Origin, -Headers and -Methods sent', got);
    } }),
  def({ id: 'nip11-fields', title: 'NIP-11 field types', module: 'quick', basis: { nip: '11', section: 'Fields', level: 'essential' }, minRoundTrips: 0,
    async run(p) {
      const f = await p.fetchNip11();
      const d = f.doc;
      if (!d) return skip('no NIP-11 document');
      const wrong: string[] = [];
      for (const k of ['name', 'description', 'contact', 'software', 'version', 'icon', 'banner', 'privacy_policy', 'terms_of_service', 'posting_policy']) if (k in d && typeof d[k] !== 'string') wrong.push(`${k} is not a string`);
      for (const k of ['pubkey', 'self']) if (k in d && !(typeof d[k] === 'string' && /^[0-9a-f]{64}$/.test(d[k] as string))) wrong.push(`${k} is not 64 lowercase hex`);
      if ('supported_nips' in d && !(Array.isArray(d.supported_nips) && d.supported_nips.every((n) => Number.isInteger(n)))) wrong.push('supported_nips is not a list of integers');
      if ('limitation' in d) {
        const l = d.limitation as Record<string, unknown>;
        if (!l || typeof l !== 'object' || Array.isArray(l)) wrong.push('limitation is not an object');
        else {
          for (const k of ['max_message_length', 'max_subscriptions', 'max_limit', 'max_subid_length', 'max_event_tags', 'max_content_length', 'min_pow_difficulty', 'created_at_lower_limit', 'created_at_upper_limit', 'default_limit']) if (k in l && !Number.isInteger(l[k])) wrong.push(`limitation.${k} is not an integer`);
          for (const k of ['auth_required', 'payment_required', 'restricted_writes']) if (k in l && typeof l[k] !== 'boolean') wrong.push(`limitation.${k} is not a boolean`);
        }
      }
      if (wrong.length) return bad(wrong.join('; '), { wrong });
      return pass(`${Object.keys(d).length} field(s), all well typed`, { fields: Object.keys(d) });
    } }),
  def({ id: 'req-eose', title: 'REQ answered with EOSE', module: 'quick', basis: { nip: '01', section: 'EOSE', level: 'required' }, minRoundTrips: 1,
    async run(p) {
      const r = await p.req([{ kinds: [1], limit: 1 }], undefined, { latency: true });
      if (r.end === 'EOSE') return pass(`EOSE after ${Math.round(r.ms)} ms with ${r.events.length} event(s)`, { ms: Math.round(r.ms) });
      if (r.end === 'CLOSED' && hasPrefix(r.reason)) return skip(`REQ refused: ${r.reason}`);
      return bad(r.end === 'CLOSED' ? `CLOSED without a machine-readable prefix: "${r.reason}"` : `no EOSE within ${p.timings.replyTimeoutMs} ms`, { notices: r.notices });
    } }),
  def({ id: 'publish-ok', title: 'EVENT answered with OK', module: 'quick', basis: { nip: '01', section: 'OK', level: 'required' }, minRoundTrips: 1,
    async run(p) {
      const { ev, a } = await quickNote(p);
      if (a.ok === true) return pass(`OK true after ${Math.round(a.ms)} ms`, { id: ev.id, reason: a.reason });
      if (writeRefused(a)) {
        p.observe('limitation.restricted_writes', p.limitation.restricted_writes ?? null, true, p.limitation.restricted_writes === undefined ? null : p.limitation.restricted_writes === true, 'publish-ok');
        return skip(`writes are restricted: ${a.reason}`, { reason: a.reason });
      }
      const c = await p.conn();
      if (a.ok === null) return bad(c.closed ? 'the relay closed the connection instead of answering OK' : `no OK within ${p.timings.replyTimeoutMs} ms`);
      return bad(`test note refused: ${a.reason || '(no reason)'}`, { reason: a.reason });
    } }),
  def({ id: 'read-back', title: 'Published event can be read back', module: 'quick', basis: { nip: '01', section: 'REQ', level: 'essential' }, minRoundTrips: 1,
    async run(p) {
      const { ev, a } = await quickNote(p);
      if (a.ok !== true) return skip('nothing was published');
      const r = await p.req([{ ids: [ev.id] }]);
      const back = r.events.find((e) => e.id === ev.id);
      if (!back) return bad('accepted with OK true but not served back (dropped?)', { id: ev.id, end: r.end });
      if (JSON.stringify(back) !== JSON.stringify(ev) && !(verifyEvent({ ...back }) && back.content === ev.content)) return bad('served back altered', { sent: ev, got: back });
      return pass('served back identical', { id: ev.id });
    } }),
  def({ id: 'live-delivery', title: 'New events reach open subscriptions', module: 'quick', basis: { nip: '01', section: 'REQ', level: 'required' }, minRoundTrips: 3,
    async run(p) {
      const sub = await p.open();
      const tag = `live-${Math.random().toString(36).slice(2, 8)}`;
      const id = await openLive(p, sub, { authors: [p.pk], '#t': [tag] });
      if (!id) return bad('subscription not confirmed with EOSE');
      const ev = p.sign({ kind: 1, content: 'labs test: live delivery', tags: [['t', tag]] });
      const a = await p.publishAuthed(ev);
      if (a.ok !== true) return skip(`test event not accepted: ${a.reason || 'no OK'}`);
      const got = await p.live(sub, id, p.timings.replyTimeoutMs, (e) => e.id === ev.id);
      p.close(sub, id);
      if (got.some((e) => e.id === ev.id)) return pass('delivered to the other connection');
      return bad(`not delivered within ${p.timings.replyTimeoutMs} ms`);
    } }),
  def({ id: 'latency', title: 'Latency: connect, EOSE, OK', module: 'quick', basis: { nip: '01', level: 'measurement' }, minRoundTrips: (t) => 3 * t.latencySamples + 1,
    async run(p) {
      const n = p.timings.latencySamples;
      p.progress(`measuring latency (${n} samples)`);
      for (let i = 0; i < n; i++) {
        const c = await p.open();
        c.close();
      }
      const c = await p.conn();
      for (let i = 0; i < n; i++) await p.req([{ kinds: [1], authors: [p.pk], limit: 1 }], c, { latency: true });
      // OK latency with ephemeral events a subscriber listens to (some relays drop unheard ones)
      const sid = await openLive(p, c, { authors: [p.pk], kinds: [20_777] });
      for (let i = 0; i < n; i++) await p.publish(p.sign({ kind: 20_777, content: `labs test: latency ${i}` }), c, { latency: true });
      if (sid) p.close(c, sid);
      c.drain((m) => m[0] === 'EVENT' && m[1] === sid);
      const d = { connect: percentiles(p.latency.connect), eose: percentiles(p.latency.eose), ok: percentiles(p.latency.ok) };
      return info(`p50: connect ${d.connect?.p50 ?? '-'} ms, EOSE ${d.eose?.p50 ?? '-'} ms, OK ${d.ok?.p50 ?? '-'} ms`, d);
    } }),
  def({ id: 'reconnect', title: 'Reconnects after a close', module: 'quick', basis: { nip: '01', section: 'Communication between clients and relays', level: 'recommended' }, minRoundTrips: 2,
    async run(p) {
      const c1 = await p.open();
      c1.close();
      await c1.waitClose(p.timings.replyTimeoutMs);
      let c2;
      try {
        c2 = await p.open();
      } catch (e) {
        if (e instanceof BudgetExceeded) throw e;
        return bad(`could not connect again: ${(e as Error).message}`);
      }
      const r = await p.req([{ kinds: [1], authors: [p.pk], limit: 1 }], c2);
      c2.close();
      if (r.end === 'EOSE') return pass('new connection answers right after a close');
      return bad('the new connection does not answer a REQ');
    } }),
  def({ id: 'idle', title: 'Connection survives idle time', module: 'quick', basis: { nip: '01', section: 'Communication between clients and relays', level: 'recommended' }, minRoundTrips: 2,
    async run(p) {
      const c = await p.open();
      p.progress(`idle for ${Math.round(p.timings.idleMs / 1000)} s`);
      const closed = await c.waitClose(p.timings.idleMs);
      if (closed) return bad(`closed by the relay after less than ${p.timings.idleMs} ms idle (code ${c.closeCode})`);
      const r = await p.req([{ kinds: [1], authors: [p.pk], limit: 1 }], c);
      c.close();
      if (r.end !== 'EOSE') return bad(`no answer after ${p.timings.idleMs} ms idle`);
      return pass(`still answering after ${p.timings.idleMs} ms idle`);
    } }),
  def({ id: 'cleanup', title: 'Test events deleted with NIP-09', module: 'quick', basis: { nip: '09', level: 'recommended' }, minRoundTrips: 2,
    async run(p) {
      const r = await cleanup(p);
      if (r.stored === 0) return skip('no test events were stored');
      if (r.honoured) return pass(`${r.stored} test event(s) deleted`, r);
      return bad(`${r.remaining.length} of ${r.stored} test event(s) still served after NIP-09 deletion`, r);
    } }),

  // ----------------------------------------------------------------------------- conformance: filters
  ...filterChecks(),

  // ----------------------------------------------------------------------------- kinds
  def({ id: 'kind-regular', title: 'Regular events are stored', module: 'conformance', needsDataset: true, basis: { nip: '01', section: 'Kinds', level: 'required' }, minRoundTrips: 1,
    async run(p) {
      const ds = await dataset(p);
      return filterCheck(p, 'kind-regular', [{ ids: ds.notes.map((e) => e.id) }], { describe: 'regular kind-1 notes by id' });
    } }),
  def({ id: 'kind-replaceable', title: 'Replaceable events: only the latest is served', module: 'conformance', needsDataset: true, basis: { nip: '01', section: 'Kinds (replaceable)', level: 'essential' }, minRoundTrips: 1,
    async run(p) {
      const ds = await dataset(p);
      return filterCheck(p, 'kind-replaceable', [{ authors: [p.pk], kinds: [0] }], { describe: 'kind 0 of the test key', expectIds: [ds.repl.newer.id] });
    } }),
  def({ id: 'kind-addressable', title: 'Addressable events: only the latest per d tag', module: 'conformance', needsDataset: true, basis: { nip: '01', section: 'Kinds (addressable)', level: 'essential' }, minRoundTrips: 1,
    async run(p) {
      const ds = await dataset(p);
      return filterCheck(p, 'kind-addressable', [{ authors: [p.pk], kinds: [30078] }], { describe: 'kind 30078 of the test key', expectIds: [ds.addr.newer.id, ds.addr.other.id] });
    } }),
  def({ id: 'kind-replaceable-older', title: 'An older replaceable version is refused or hidden', module: 'conformance', needsDataset: true, basis: { nip: '01', section: 'Kinds (replaceable)', level: 'essential' }, minRoundTrips: 2,
    async run(p) {
      const ds = await dataset(p);
      const a = await p.publish(ds.repl.oldest);
      const r = await p.req([{ authors: [p.pk], kinds: [0] }]);
      const ids = r.events.map((e) => e.id);
      const d = { ok: a.ok, reason: a.reason, returned: ids.map(short) };
      if (ids.includes(ds.repl.oldest.id)) return bad('an older version sent after the newer one replaced it', d);
      if (!ids.includes(ds.repl.newer.id)) return bad('the newest version is gone after an older one was sent', d);
      return pass(a.ok === false ? `refused (${a.reason})` : 'accepted but the newer version is still the one served', d);
    } }),
  def({ id: 'kind-ephemeral', title: 'Ephemeral events delivered live, not stored', module: 'conformance', basis: { nip: '01', section: 'Kinds (ephemeral)', level: 'essential' }, minRoundTrips: 4,
    async run(p) {
      const sub = await p.open();
      const id = await openLive(p, sub, { authors: [p.pk], kinds: [20_001] });
      if (!id) return bad('subscription not confirmed');
      const ev = p.sign({ kind: 20_001, content: 'labs test: ephemeral' });
      const a = await p.publishAuthed(ev);
      if (a.ok !== true) return skip(`ephemeral event not accepted: ${a.reason || 'no OK'}`);
      const got = await p.live(sub, id, p.timings.replyTimeoutMs, (e) => e.id === ev.id);
      p.close(sub, id);
      const r = await p.req([{ ids: [ev.id] }]);
      const d = { delivered: got.some((e) => e.id === ev.id), stored: r.events.length > 0 };
      if (!d.delivered) return bad('not delivered to a live subscriber', d);
      if (d.stored) return bad('served from storage afterwards', d);
      return pass('delivered live and not stored', d);
    } }),

  // ----------------------------------------------------------------------------- NIP-01 messages
  def({ id: 'ok-format', title: 'OK has 4 elements; a refusal has a prefix', module: 'conformance', basis: { nip: '01', section: 'OK', level: 'required' }, minRoundTrips: 1,
    async run(p) {
      // make sure at least one refusal was seen
      const ev = p.sign({ kind: 1, content: 'labs test: bad signature' });
      await p.publish({ ...ev, sig: flip(ev.sig) });
      const oks = p.conns.flatMap((c) => c.received.filter((r) => r.msg[0] === 'OK').map((r) => r.msg));
      const malformed = oks.filter((m) => m.length !== 4 || typeof m[2] !== 'boolean' || typeof m[3] !== 'string');
      const noPrefix = oks.filter((m) => m[2] === false && typeof m[3] === 'string' && !hasPrefix(m[3]));
      const d = { oks: oks.length, malformed: malformed.slice(0, 5), refusalsWithoutPrefix: noPrefix.slice(0, 5) };
      if (!oks.length) return bad('no OK message seen', d);
      if (malformed.length) return bad(`${malformed.length} OK message(s) without exactly 4 elements`, d);
      if (noPrefix.length) return bad(`${noPrefix.length} refusal(s) without a machine-readable prefix, e.g. "${noPrefix[0]![3]}"`, d);
      return pass(`${oks.length} OK message(s), all well formed`, d);
    } }),
  def({ id: 'closed-prefix', title: 'A refused REQ gets CLOSED with a prefix', module: 'conformance', basis: { nip: '01', section: 'CLOSED', level: 'required' }, minRoundTrips: 1,
    async run(p) {
      const c = await p.open();
      // prefix matching of ids is gone from NIP-01: a 4-char id is invalid
      const r = await p.req([{ ids: ['abcd'] }], c, { timeoutMs: Math.min(p.timings.replyTimeoutMs, p.timings.quietMs * 2), endOnNotice: true });
      c.close();
      const d = { end: r.end, reason: r.reason, notices: r.notices };
      if (r.end === 'CLOSED') return hasPrefix(r.reason) ? pass(`CLOSED "${r.reason}"`, d) : bad(`CLOSED without a prefix: "${r.reason}"`, d);
      if (r.notices.length) return bad(`refused with NOTICE "${r.notices[0]}" instead of CLOSED`, d);
      if (r.end === 'EOSE') return skip('the relay accepted the invalid filter (no refusal to judge)', d);
      return bad('no answer to an invalid REQ', d);
    } }),
  def({ id: 'close-stops', title: 'CLOSE stops delivery', module: 'conformance', basis: { nip: '01', section: 'CLOSE', level: 'required' }, minRoundTrips: 3,
    async run(p) {
      const sub = await p.open();
      const tag = `close-${Math.random().toString(36).slice(2, 8)}`;
      const id = await openLive(p, sub, { authors: [p.pk], '#t': [tag] });
      if (!id) return bad('subscription not confirmed');
      p.close(sub, id);
      await sleep(Math.min(200, p.timings.quietMs));
      const ev = p.sign({ kind: 1, content: 'labs test: after CLOSE', tags: [['t', tag]] });
      const a = await p.publishAuthed(ev);
      if (a.ok !== true) return skip(`test event not accepted: ${a.reason || 'no OK'}`);
      const got = await p.live(sub, id, p.timings.quietMs);
      sub.close();
      if (got.length) return bad(`${got.length} event(s) delivered after CLOSE`, { subId: id });
      return pass(`nothing delivered in ${p.timings.quietMs} ms after CLOSE`);
    } }),
  def({ id: 'event-subid', title: 'EVENT only for subscriptions the client opened', module: 'conformance', basis: { nip: '01', section: 'EVENT', level: 'required' }, minRoundTrips: 0,
    async run(p) {
      const stray = p.strayEvents();
      if (stray.length) return bad(`${stray.length} EVENT message(s) for subscription ids never opened`, { stray: stray.slice(0, 10) });
      const n = p.conns.reduce((s, c) => s + c.received.filter((r) => r.msg[0] === 'EVENT').length, 0);
      return pass(`${n} EVENT message(s), all for opened subscriptions`);
    } }),
  def({ id: 'subid-replace', title: 'A new REQ with the same id replaces the old one', module: 'conformance', basis: { nip: '01', section: 'REQ', level: 'required' }, minRoundTrips: 5,
    async run(p) {
      const sub = await p.open();
      const id = p.subId('rep');
      // the two filters differ by author, which every relay matches live
      const [A, B] = p.keys;
      await p.req([{ authors: [B!.pk], kinds: [1], since: now() - 5 }], sub, { subId: id, keepOpen: true });
      const r2 = await p.req([{ authors: [A!.pk], kinds: [1], '#t': ['labs-rep'], since: now() - 5 }], sub, { subId: id, keepOpen: true });
      if (r2.end !== 'EOSE') return bad('second REQ with the same id not answered with EOSE', { end: r2.end, reason: r2.reason });
      const e1 = p.sign({ kind: 1, content: 'labs test: old filter' }, 1);
      const e2 = p.sign({ kind: 1, content: 'labs test: new filter', tags: [['t', 'labs-rep']] }, 0);
      const a1 = await p.publishAuthed(e1);
      const a2 = await p.publishAuthed(e2);
      if (a1.ok !== true || a2.ok !== true) return skip('test events not accepted');
      const got = (await p.live(sub, id, p.timings.quietMs)).map((e) => e.id);
      sub.close();
      const d = { oldFilterDelivered: got.includes(e1.id), newFilterDelivered: got.includes(e2.id) };
      if (d.oldFilterDelivered) return bad('the replaced filter still delivers', d);
      if (!d.newFilterDelivered) return bad('the new filter does not deliver', d);
      return pass('only the new filter delivers', d);
    } }),
  def({ id: 'subid-per-conn', title: 'Subscription ids are per connection', module: 'conformance', basis: { nip: '01', section: 'REQ', level: 'required' }, minRoundTrips: 5,
    async run(p) {
      const c1 = await p.open();
      const c2 = await p.open();
      const tag = `pc-${Math.random().toString(36).slice(2, 8)}`;
      const id = p.subId('same');
      await p.req([{ authors: [p.pk], '#t': [tag] }], c1, { subId: id, keepOpen: true });
      await p.req([{ authors: [p.pk], '#t': [tag] }], c2, { subId: id, keepOpen: true });
      p.close(c1, id);
      await sleep(Math.min(200, p.timings.quietMs));
      const ev = p.sign({ kind: 1, content: 'labs test: per connection', tags: [['t', tag]] });
      const a = await p.publishAuthed(ev);
      if (a.ok !== true) return skip('test event not accepted');
      const got2 = await p.live(c2, id, p.timings.replyTimeoutMs, (e) => e.id === ev.id);
      const got1 = await p.live(c1, id, Math.min(200, p.timings.quietMs));
      c1.close();
      c2.close();
      if (!got2.some((e) => e.id === ev.id)) return bad('closing the id on one connection closed it on the other');
      if (got1.length) return bad('delivered on the connection that closed the id');
      return pass('closing an id on one connection leaves the same id on another open');
    } }),

  // ----------------------------------------------------------------------------- events
  def({ id: 'bad-signature', title: 'Event with a bad signature refused', module: 'conformance', basis: { nip: '01', section: 'Events and signatures', level: 'required' }, minRoundTrips: 2,
    async run(p) {
      const ev = p.sign({ kind: 1, content: 'labs test: bad signature' });
      const forged = { ...ev, sig: flip(ev.sig) };
      const r = await refusedOrHidden(p, forged, await p.conn());
      return r.refused ? pass(`refused (${r.how})`) : bad(`accepted (${r.how})`);
    } }),
  def({ id: 'bad-id', title: 'Event whose id is not its hash refused', module: 'conformance', basis: { nip: '01', section: 'Events and signatures', level: 'required' }, minRoundTrips: 2,
    async run(p) {
      const ev = p.sign({ kind: 1, content: 'labs test: bad id' });
      const forged = { ...ev, id: flip(ev.id) };
      const r = await refusedOrHidden(p, forged, await p.conn());
      return r.refused ? pass(`refused (${r.how})`) : bad(`accepted (${r.how})`);
    } }),
  def({ id: 'json-escapes', title: 'Content with JSON escapes round-trips', module: 'conformance', basis: { nip: '01', section: 'Serialization', level: 'essential' }, minRoundTrips: 2,
    async run(p) {
      const content = 'labs test: line\nbreak "quote" back\\slash tab\t cr\r ctl\u0001 bell\u0007 nul-free \u2028 ✓ 😀 </script>';
      const ev = p.sign({ kind: 1, content });
      const a = await p.publishAuthed(ev);
      if (a.ok !== true) return bad(`refused a valid event with escapes: ${a.reason || 'no OK'}`);
      const r = await p.req([{ ids: [ev.id] }]);
      const back = r.events[0];
      if (!back) return bad('not served back');
      if (back.content !== content || !verifyEvent({ ...back })) return bad('content altered on the way back', { sent: JSON.stringify(content), got: JSON.stringify(back.content) });
      return pass('stored and served byte-identical, signature valid');
    } }),
  def({ id: 'empty-tags', title: 'Event with no tags accepted', module: 'conformance', basis: { nip: '01', section: 'Events and signatures', level: 'essential' }, minRoundTrips: 2,
    async run(p) {
      // the one test event without the marker tag (it cannot carry one); content says what it is
      const ev = p.sign({ kind: 1, content: 'labs-test: empty tags', tags: [] }, 0, { marker: false });
      const a = await p.publishAuthed(ev);
      if (a.ok !== true) return bad(`refused: ${a.reason || 'no OK'}`);
      const r = await p.req([{ ids: [ev.id] }]);
      if (!r.events[0]) return bad('not served back');
      if (!Array.isArray(r.events[0].tags) || r.events[0].tags.length) return bad('tags changed', { tags: r.events[0].tags });
      return pass('accepted and served with tags []');
    } }),
  def({ id: 'duplicate', title: 'A duplicate gets OK (duplicate:)', module: 'conformance', basis: { nip: '01', section: 'OK', level: 'required' }, minRoundTrips: 2,
    async run(p) {
      const ev = p.sign({ kind: 1, content: 'labs test: duplicate' });
      const a1 = await p.publishAuthed(ev);
      if (a1.ok !== true) return skip(`first copy not accepted: ${a1.reason || 'no OK'}`);
      const a2 = await p.publish(ev);
      const d = { ok: a2.ok, reason: a2.reason };
      if (a2.ok === null) return bad('no OK for the duplicate', d);
      if (a2.ok === false && !a2.reason.startsWith('duplicate:')) return bad(`duplicate refused as "${a2.reason}"`, d);
      if (!a2.reason.startsWith('duplicate:')) return pass('OK true (no duplicate: prefix, which NIP-01 suggests)', d);
      return pass(`OK ${a2.ok} "${a2.reason}"`, d);
    } }),

  // ----------------------------------------------------------------------------- NIP-09
  def({ id: 'delete-e', title: 'Deletion by e tag', module: 'conformance', basis: { nip: '09', level: 'recommended' }, minRoundTrips: 4,
    async run(p) {
      const ev = p.sign({ kind: 1, content: 'labs test: to be deleted' });
      if ((await p.publishAuthed(ev)).ok !== true) return skip('test event not accepted');
      const del = p.sign({ kind: 5, content: 'labs test clean-up', tags: [['e', ev.id], ['k', '1']] });
      const a = await p.publishAuthed(del);
      if (a.ok !== true) return bad(`deletion request refused: ${a.reason || 'no OK'}`);
      p.deleted.add(ev.id);
      const r = await p.req([{ ids: [ev.id, del.id] }]);
      const ids = r.events.map((e) => e.id);
      const d = { deletedStillServed: ids.includes(ev.id), deletionRequestServed: ids.includes(del.id) };
      if (d.deletedStillServed) return bad('the deleted event is still served', d);
      return pass(d.deletionRequestServed ? 'deleted; the deletion request is served' : 'deleted (the deletion request itself is not served, which NIP-09 says it should be)', d);
    } }),
  def({ id: 'delete-a', title: 'Deletion by a tag up to its time', module: 'conformance', basis: { nip: '09', level: 'recommended' }, minRoundTrips: 5,
    async run(p) {
      const t = now();
      const ev = p.sign({ kind: 30078, created_at: t - 5, content: 'labs test: addressable to delete', tags: [['d', 'labs-del']] });
      if ((await p.publishAuthed(ev)).ok !== true) return skip('test event not accepted');
      const del = p.sign({ kind: 5, created_at: t, content: 'labs test clean-up', tags: [['a', `30078:${p.pk}:labs-del`], ['k', '30078']] });
      const a = await p.publishAuthed(del);
      if (a.ok !== true) return bad(`deletion request refused: ${a.reason || 'no OK'}`);
      p.deleted.add(ev.id);
      const r = await p.req([{ authors: [p.pk], kinds: [30078], '#d': ['labs-del'] }]);
      if (r.events.some((e) => e.id === ev.id)) return bad('the addressed version is still served');
      // "up to its time": a version newer than the request stays
      const newer = p.sign({ kind: 30078, created_at: t + 1, content: 'labs test: newer than the deletion', tags: [['d', 'labs-del']] });
      const an = await p.publishAuthed(newer);
      const r2 = await p.req([{ ids: [newer.id] }]);
      const d = { newerAccepted: an.ok, newerReason: an.reason, newerServed: r2.events.length > 0 };
      if (!d.newerServed) return bad('a version newer than the deletion request is refused or hidden too', d);
      return pass('older versions gone, a newer version is kept', d);
    } }),
  def({ id: 'delete-others', title: "Deletion does not remove someone else's event", module: 'conformance', basis: { nip: '09', level: 'essential' }, minRoundTrips: 3,
    async run(p) {
      const other = p.sign({ kind: 1, content: 'labs test: someone else' }, 1);
      if ((await p.publishAuthed(other)).ok !== true) return skip('test event not accepted');
      const del = p.sign({ kind: 5, content: 'labs test: deleting what is not mine', tags: [['e', other.id]] }, 0);
      const a = await p.publish(del);
      const r = await p.req([{ ids: [other.id] }]);
      if (!r.events.length) return bad("another key's event was deleted", { ok: a.ok, reason: a.reason });
      return pass(`survives (${a.ok === false ? `request refused: ${a.reason}` : 'request accepted, not applied'})`);
    } }),

  // ----------------------------------------------------------------------------- limits (NIP-11 limitation)
  def({ id: 'limit-subscriptions', title: 'max_subscriptions enforced with CLOSED', module: 'conformance', basis: { nip: '11', section: 'limitation.max_subscriptions', level: 'convention' }, minRoundTrips: 2,
    async run(p) {
      const max = L(p, 'max_subscriptions');
      if (max === null) return skip('max_subscriptions not advertised');
      if (max > 60) return skip(`max_subscriptions ${max} is above what the probe opens (60)`);
      const c = await p.open();
      for (let i = 0; i < max; i++) {
        const r = await p.req([{ authors: [p.pk], kinds: [1], limit: 1 }], c, { keepOpen: true });
        if (r.end !== 'EOSE') {
          p.observe('limitation.max_subscriptions', max, i, false, 'limit-subscriptions');
          c.close();
          return bad(`subscription ${i + 1} of ${max} refused (${r.end ?? 'no answer'} ${r.reason})`);
        }
      }
      const over = await p.req([{ authors: [p.pk], kinds: [1], limit: 1 }], c, { keepOpen: true, timeoutMs: p.timings.quietMs * 2, endOnNotice: true });
      c.close();
      const d = { end: over.end, reason: over.reason, notices: over.notices };
      p.observe('limitation.max_subscriptions', max, over.end === 'EOSE' ? `more than ${max}` : max, over.end !== 'EOSE', 'limit-subscriptions');
      if (over.end === 'CLOSED' && hasPrefix(over.reason)) return pass(`subscription ${max + 1} refused: ${over.reason}`, d);
      if (over.end === 'EOSE') return bad(`subscription ${max + 1} accepted although max_subscriptions is ${max}`, d);
      return bad(`subscription ${max + 1} refused without CLOSED and a prefix`, d);
    } }),
  def({ id: 'limit-subid-length', title: 'Subscription ids up to 64 characters work; max_subid_length enforced', module: 'conformance', basis: { nip: '01', section: 'REQ (subscription_id)', level: 'required' }, minRoundTrips: 2,
    async run(p) {
      const max = L(p, 'max_subid_length');
      const okLen = Math.min(64, max ?? 64);
      const c = await p.open();
      const r = await p.req([{ authors: [p.pk], limit: 1 }], c, { subId: 'x'.repeat(okLen) });
      if (r.end !== 'EOSE') { c.close(); return bad(`a ${okLen}-character subscription id is refused (${r.end ?? 'no answer'} ${r.reason})`); }
      if (max === null || max >= 1000) { c.close(); return pass(`${okLen}-character id accepted`); }
      const over = await p.req([{ authors: [p.pk], limit: 1 }], c, { subId: 'y'.repeat(max + 1), timeoutMs: p.timings.quietMs * 2, endOnNotice: true });
      c.close();
      p.observe('limitation.max_subid_length', max, over.end === 'EOSE' ? `more than ${max}` : max, over.end !== 'EOSE', 'limit-subid-length');
      if (over.end === 'EOSE') return warn(`a ${max + 1}-character id is accepted although max_subid_length is ${max}`);
      return pass(`${okLen} accepted, ${max + 1} refused`);
    } }),
  def({ id: 'limit-max-limit', title: 'max_limit caps results', module: 'conformance', needsDataset: true, basis: { nip: '11', section: 'limitation.max_limit', level: 'convention' }, minRoundTrips: 1,
    async run(p) {
      const ds = await dataset(p);
      const max = L(p, 'max_limit');
      if (max === null) return skip('max_limit not advertised');
      if (max >= ds.notes.length) return skip(`max_limit ${max} cannot be observed with ${ds.notes.length} test notes`);
      const r = await p.req([{ authors: [p.pk], kinds: [1], limit: ds.notes.length }]);
      p.observe('limitation.max_limit', max, r.events.length, r.events.length <= max, 'limit-max-limit');
      return r.events.length <= max ? pass(`${r.events.length} returned`) : bad(`${r.events.length} returned, more than max_limit ${max}`);
    } }),
  def({ id: 'limit-content-length', title: 'max_content_length enforced', module: 'conformance', basis: { nip: '11', section: 'limitation.max_content_length', level: 'convention' }, minRoundTrips: 2,
    async run(p) {
      const max = L(p, 'max_content_length');
      if (max === null) return skip('max_content_length not advertised');
      if (max > 256 * 1024) return skip(`max_content_length ${max} is above what the probe sends (256 KB)`);
      const r = await refusedOrHidden(p, p.sign({ kind: 1, content: 'x'.repeat(max + 1) }));
      p.observe('limitation.max_content_length', max, r.refused ? max : `more than ${max}`, r.refused, 'limit-content-length');
      return r.refused ? pass(`content of ${max + 1} refused (${r.how})`) : bad(`content of ${max + 1} characters accepted`);
    } }),
  def({ id: 'limit-message-length', title: 'max_message_length enforced', module: 'conformance', basis: { nip: '11', section: 'limitation.max_message_length', level: 'convention' }, minRoundTrips: 2,
    async run(p) {
      const max = L(p, 'max_message_length');
      if (max === null) return skip('max_message_length not advertised');
      if (max > 512 * 1024) return skip(`max_message_length ${max} is above what the probe sends (512 KB)`);
      const ev = p.sign({ kind: 1, content: 'x'.repeat(max) });
      const r = await refusedOrHidden(p, ev);
      p.observe('limitation.max_message_length', max, r.refused ? max : `more than ${max}`, r.refused, 'limit-message-length');
      return r.refused ? pass(`a ${JSON.stringify(['EVENT', ev]).length}-byte message refused (${r.how})`) : bad('a message longer than max_message_length accepted');
    } }),
  def({ id: 'limit-event-tags', title: 'max_event_tags enforced', module: 'conformance', basis: { nip: '11', section: 'limitation.max_event_tags', level: 'convention' }, minRoundTrips: 2,
    async run(p) {
      const max = L(p, 'max_event_tags');
      if (max === null) return skip('max_event_tags not advertised');
      if (max > 5000) return skip(`max_event_tags ${max} is above what the probe sends (5000)`);
      const tags = Array.from({ length: max + 1 }, (_, i) => ['x', String(i)]);
      const r = await refusedOrHidden(p, p.sign({ kind: 1, content: 'labs test: many tags', tags }));
      p.observe('limitation.max_event_tags', max, r.refused ? max : `more than ${max}`, r.refused, 'limit-event-tags');
      return r.refused ? pass(`${max + 3} tags refused (${r.how})`) : bad(`${max + 3} tags accepted`);
    } }),
  def({ id: 'limit-created-at', title: 'created_at window (seconds relative to now)', module: 'conformance', basis: { nip: '11', section: 'limitation.created_at_lower_limit / created_at_upper_limit', level: 'convention' }, minRoundTrips: 2,
    async run(p) {
      const lo = L(p, 'created_at_lower_limit');
      const hi = L(p, 'created_at_upper_limit');
      if (lo === null && hi === null) return skip('no created_at limits advertised');
      const out: string[] = [];
      let allOk = true;
      const c = await p.open();
      if (lo !== null) {
        const r = await refusedOrHidden(p, p.sign({ kind: 1, created_at: now() - lo - 3600, content: 'labs test: too old' }), c);
        p.observe('limitation.created_at_lower_limit', lo, r.refused ? 'older refused' : 'older accepted', r.refused, 'limit-created-at');
        out.push(`now-${lo}-3600: ${r.refused ? 'refused' : 'accepted'}`);
        allOk &&= r.refused;
      }
      if (hi !== null) {
        const r = await refusedOrHidden(p, p.sign({ kind: 1, created_at: now() + hi + 3600, content: 'labs test: too new' }), c);
        p.observe('limitation.created_at_upper_limit', hi, r.refused ? 'newer refused' : 'newer accepted', r.refused, 'limit-created-at');
        out.push(`now+${hi}+3600: ${r.refused ? 'refused' : 'accepted'}`);
        allOk &&= r.refused;
      }
      c.close();
      return allOk ? pass(out.join('; ')) : bad(out.join('; '));
    } }),
  def({ id: 'limit-pow', title: 'min_pow_difficulty enforced', module: 'conformance', basis: { nip: '13', section: 'limitation.min_pow_difficulty', level: 'convention' }, minRoundTrips: 2,
    async run(p) {
      const d = L(p, 'min_pow_difficulty');
      if (!d) return skip('no proof of work required');
      let ev = p.sign({ kind: 1, content: 'labs test: no pow' });
      for (let i = 0; getPow(ev.id) >= d && i < 20; i++) ev = p.sign({ kind: 1, content: `labs test: no pow ${i}` });
      const r = await refusedOrHidden(p, ev);
      p.observe('limitation.min_pow_difficulty', d, r.refused ? d : 0, r.refused, 'limit-pow');
      if (!r.refused) return bad(`an event with ${getPow(ev.id)} bits accepted`);
      return r.a.reason.startsWith('pow:') ? pass(`refused: ${r.a.reason}`) : warn(`refused without the pow: prefix (${r.how})`);
    } }),
  def({ id: 'limit-auth-writes', title: 'auth_required / restricted_writes match what happens', module: 'conformance', basis: { nip: '11', section: 'limitation.auth_required / restricted_writes', level: 'convention' }, minRoundTrips: 2,
    async run(p) {
      const c = await p.open();
      const ev = p.sign({ kind: 1, content: 'labs test: unauthenticated write' });
      const a = await p.publish(ev, c);
      c.close();
      const authObserved = a.ok === false && a.reason.startsWith('auth-required:');
      const restrictedObserved = a.ok === false && isWriteRefusal(a.reason) && !authObserved;
      const adv = { auth: p.limitation.auth_required, restricted: p.limitation.restricted_writes };
      p.observe('limitation.auth_required', adv.auth ?? null, authObserved, typeof adv.auth === 'boolean' ? adv.auth === authObserved : null, 'limit-auth-writes');
      p.observe('limitation.restricted_writes', adv.restricted ?? null, restrictedObserved, typeof adv.restricted === 'boolean' ? adv.restricted === restrictedObserved : null, 'limit-auth-writes');
      const mism: string[] = [];
      if (typeof adv.auth === 'boolean' && adv.auth !== authObserved) mism.push(`auth_required ${adv.auth} but a write ${authObserved ? 'needed' : 'did not need'} AUTH`);
      if (typeof adv.restricted === 'boolean' && adv.restricted !== restrictedObserved) mism.push(`restricted_writes ${adv.restricted} but a write was ${restrictedObserved ? 'refused' : 'accepted'}`);
      const d = { ok: a.ok, reason: a.reason, advertised: adv };
      if (mism.length) return bad(mism.join('; '), d);
      if (adv.auth === undefined && adv.restricted === undefined) return info(`not advertised; an unauthenticated write got OK ${a.ok} ${a.reason}`, d);
      return pass('advertised write policy matches', d);
    } }),

  // ----------------------------------------------------------------------------- NIP-40, 42, 45, 70
  def({ id: 'nip40-expiration', title: 'Expired events are not served', module: 'conformance', basis: { nip: '40', level: 'recommended' }, minRoundTrips: 2,
    async run(p) {
      const ev = p.sign({ kind: 1, content: 'labs test: already expired', tags: [['expiration', String(now() - 60)]] });
      const r = await refusedOrHidden(p, ev, await p.conn());
      p.observe('supported_nips: 40', p.advertisesNip(40), r.refused, p.advertisesNip(40) === null ? null : p.advertisesNip(40) === r.refused, 'nip40-expiration');
      return r.refused ? pass(`expired event not served (${r.how})`) : bad('an expired event is served');
    } }),
  def({ id: 'nip42-auth', title: 'AUTH challenge answered with OK', module: 'conformance', basis: { nip: '42', level: 'required' }, minRoundTrips: 3,
    async run(p) {
      const { c, challenge } = await authChallenge(p);
      p.observe('supported_nips: 42', p.advertisesNip(42), !!challenge, p.advertisesNip(42) === null ? null : p.advertisesNip(42) === !!challenge, 'nip42-auth');
      if (!challenge) return skip('no AUTH challenge seen (NIP-42 not offered)');
      const a = await p.auth(c, challenge, {}, 1);
      if (a.ok === null) return bad('AUTH not answered with OK');
      if (a.ok !== true) return bad(`valid AUTH refused: ${a.reason}`);
      return pass('challenge received; valid AUTH accepted with OK');
    } }),
  def({ id: 'nip42-refusals', title: 'Bad AUTH events refused (kind, challenge, relay, time)', module: 'conformance', basis: { nip: '42', section: 'Signed Event Verification', level: 'essential' }, minRoundTrips: 4,
    async run(p) {
      // the connection (and challenge) of nip42-auth when it ran; bad AUTH events must be refused
      // whether or not the connection authenticated before
      const { c, challenge } = await authChallenge(p);
      if (!challenge) return skip('no AUTH challenge seen');
      const cases: [string, Parameters<Probe['auth']>[2]][] = [
        ['wrong kind', { kind: 22243 }],
        ['wrong challenge', { tags: [['relay', p.url.href], ['challenge', `${challenge}x`]] }],
        ['wrong relay', { tags: [['relay', 'wss://other-relay.invalid/'], ['challenge', challenge]] }],
        ['stale time', { created_at: now() - 3600 }],
      ];
      const accepted: string[] = [];
      const unanswered: string[] = [];
      for (const [name, over] of cases) {
        const a = await p.auth(c, challenge, over);
        if (a.ok === true) accepted.push(name);
        if (a.ok === null) unanswered.push(name);
      }
      if (accepted.length) return bad(`accepted: ${accepted.join(', ')}`, { accepted });
      if (unanswered.length) return bad(`no OK for: ${unanswered.join(', ')}`, { unanswered });
      return pass('all four bad AUTH events refused with OK false');
    } }),
  def({ id: 'nip45-count', title: 'COUNT answered with COUNT or CLOSED', module: 'conformance', needsDataset: true, basis: { nip: '45', level: 'required' }, minRoundTrips: 1,
    async run(p) {
      const ds = await dataset(p);
      const c = await p.conn();
      const id = p.subId('count');
      c.send(['COUNT', id, { authors: [p.pk], kinds: [1], until: ds.base }]);
      const n0 = c.notices.length;
      // a NOTICE right after COUNT is the relay's answer to it (no need to wait for the timeout)
      let r = await c.next((m) => ((m[0] === 'COUNT' || m[0] === 'CLOSED') && m[1] === id) || m[0] === 'NOTICE', p.timings.replyTimeoutMs);
      if (r?.msg[0] === 'NOTICE') r = await c.next((m) => (m[0] === 'COUNT' || m[0] === 'CLOSED') && m[1] === id, Math.min(200, p.timings.quietMs));
      const adv = p.advertisesNip(45);
      if (r?.msg[0] === 'COUNT') {
        const body = r.msg[2] as { count?: unknown };
        p.observe('supported_nips: 45', adv, true, adv === null ? null : adv === true, 'nip45-count');
        if (!body || !Number.isInteger(body.count)) return bad('COUNT without an integer count', { msg: r.msg });
        if (body.count !== ds.notes.length) return bad(`count ${body.count}, expected ${ds.notes.length}`, { msg: r.msg });
        return pass(`COUNT ${body.count}`, { msg: r.msg });
      }
      p.observe('supported_nips: 45', adv, false, adv === null ? null : adv === false, 'nip45-count');
      if (r?.msg[0] === 'CLOSED') return hasPrefix(String(r.msg[2] ?? '')) ? pass(`refused with CLOSED "${r.msg[2]}"`) : bad(`CLOSED without a prefix: "${r.msg[2]}"`);
      const notice = c.notices.slice(n0)[0];
      return bad(notice ? `answered with NOTICE "${notice}" instead of COUNT or CLOSED` : 'COUNT not answered');
    } }),
  def({ id: 'nip70-protected', title: 'Protected events refused without AUTH', module: 'conformance', basis: { nip: '70', level: 'required' }, minRoundTrips: 2,
    async run(p) {
      const c = await p.open();
      const ev = p.sign({ kind: 1, content: 'labs test: protected', tags: [['-']] });
      const a = await p.publish(ev, c);
      c.close();
      p.observe('supported_nips: 70', p.advertisesNip(70), a.ok === false, p.advertisesNip(70) === null ? null : p.advertisesNip(70) === (a.ok === false), 'nip70-protected');
      if (a.ok === null) return bad('no OK');
      if (a.ok) return bad('accepted from an unauthenticated connection');
      return pass(`refused: ${a.reason}`);
    } }),
];

function filterChecks(): CheckDef[] {
  type F = { id: string; title: string; level?: BasisLevel; section?: string; filters: (d: Dataset, pk: string) => Filter[]; describe: string; expect?: (d: Dataset) => string[] };
  const fs: F[] = [
    { id: 'filter-ids', title: 'Filter by ids', filters: (d) => [{ ids: [d.notes[1]!.id, d.notes[3]!.id] }], describe: 'ids' },
    { id: 'filter-authors', title: 'Filter by authors', filters: (d, pk) => [{ authors: [pk], until: d.base }], describe: 'authors' },
    { id: 'filter-kinds', title: 'Filter by kinds', filters: (d, pk) => [{ authors: [pk], kinds: [0, 9999] }], describe: 'kinds 0 and 9999' },
    { id: 'filter-e', title: 'Filter by #e', filters: (d, pk) => [{ authors: [pk], '#e': [d.refs.e1] }], describe: '#e' },
    { id: 'filter-p', title: 'Filter by #p', filters: (d, pk) => [{ authors: [pk], '#p': [d.refs.pB] }], describe: '#p' },
    { id: 'filter-tag', title: 'Filter by other single-letter tags', filters: (d, pk) => [{ authors: [pk], '#t': ['gamma'] }, { authors: [pk], '#l': ['labs-label'] }], describe: '#t and #l' },
    { id: 'filter-or-list', title: 'Values in a list are OR', filters: (d, pk) => [{ authors: [pk], '#t': ['alpha', 'beta'] }], describe: '#t alpha or beta' },
    { id: 'filter-and', title: 'Fields are AND', filters: (d, pk) => [{ authors: [pk], kinds: [1], '#t': ['alpha'], since: d.base - 25 }], describe: 'kind 1 and #t alpha and since' },
    { id: 'filter-or-filters', title: 'Several filters are OR', filters: (d, pk) => [{ ids: [d.notes[0]!.id] }, { authors: [pk], '#t': ['gamma'] }], describe: 'two filters' },
    { id: 'filter-since', title: 'since', filters: (d, pk) => [{ authors: [pk], kinds: [1], since: d.base - 25 }], describe: 'since' },
    { id: 'filter-until', title: 'until', filters: (d, pk) => [{ authors: [pk], kinds: [1], until: d.base - 25 }], describe: 'until' },
    { id: 'filter-bounds', title: 'since and until are inclusive', filters: (d, pk) => [{ authors: [pk], kinds: [1], since: d.base - 30, until: d.base - 20 }], describe: 'since = until bounds' },
  ];
  const out: CheckDef[] = fs.map((f) => def({
    id: f.id, title: f.title, module: 'conformance', needsDataset: true, basis: { nip: '01', section: f.section ?? 'Filters', level: f.level ?? 'required' }, minRoundTrips: 1,
    async run(p) {
      const ds = await dataset(p);
      return filterCheck(p, f.id, f.filters(ds, p.pk), { describe: f.describe, ...(f.expect ? { expectIds: f.expect(ds) } : {}) });
    },
  }));
  out.push(
    def({ id: 'filter-limit', title: 'limit returns the newest events', module: 'conformance', needsDataset: true, basis: { nip: '01', section: 'Filters (limit)', level: 'required' }, minRoundTrips: 1,
      async run(p) {
        const ds = await dataset(p);
        const r = await p.req([{ authors: [p.pk], kinds: [1], limit: 2 }]);
        const ids = r.events.map((e) => e.id);
        const [, , n3, n4, n5] = ds.notes;
        const d = { returned: ids.map(short) };
        if (ids.length !== 2) return bad(`${ids.length} events for limit 2`, d);
        if (!ids.includes(n5!.id) || !(ids.includes(n3!.id) || ids.includes(n4!.id))) return bad('limit 2 did not return the 2 newest', d);
        return pass('the 2 newest returned', d);
      } }),
    def({ id: 'filter-limit-zero', title: 'limit 0 returns no stored events', module: 'conformance', needsDataset: true, basis: { nip: '01', section: 'Filters (limit)', level: 'convention' }, minRoundTrips: 1,
      async run(p) {
        await dataset(p);
        const r = await p.req([{ authors: [p.pk], kinds: [1], limit: 0 }]);
        if (r.end !== 'EOSE') return bad(`no EOSE (${r.end ?? 'timeout'} ${r.reason})`);
        return r.events.length ? bad(`${r.events.length} stored event(s) for limit 0`) : pass('EOSE with no stored events');
      } }),
    def({ id: 'filter-order', title: 'Newest first, ties by lowest id', module: 'conformance', needsDataset: true, basis: { nip: '01', section: 'Filters (limit)', level: 'recommended' }, minRoundTrips: 1,
      async run(p) {
        await dataset(p);
        const r = await p.req([{ authors: [p.pk], kinds: [1], limit: 10 }]);
        const ev = r.events;
        const wrong = ev.findIndex((e, i) => i > 0 && (ev[i - 1]!.created_at < e.created_at || (ev[i - 1]!.created_at === e.created_at && ev[i - 1]!.id > e.id)));
        const d = { order: ev.map((e) => `${e.created_at}:${short(e.id)}`) };
        if (ev.length < 2) return skip('fewer than 2 events returned', d);
        return wrong < 0 ? pass(`${ev.length} events newest first, tie by lowest id`, d) : bad(`out of order at position ${wrong}`, d);
      } }),
    def({ id: 'filter-limit-live', title: 'limit does not apply to live events', module: 'conformance', basis: { nip: '01', section: 'Filters (limit)', level: 'essential' }, minRoundTrips: 4,
      async run(p) {
        const sub = await p.open();
        const tag = `ll-${Math.random().toString(36).slice(2, 8)}`;
        const id = await openLive(p, sub, { authors: [p.pk], '#t': [tag], limit: 1 });
        if (!id) return bad('subscription not confirmed');
        const evs = [0, 1].map((i) => p.sign({ kind: 1, content: `labs test: live ${i}`, tags: [['t', tag]] }));
        for (const e of evs) if ((await p.publishAuthed(e)).ok !== true) return skip('test events not accepted');
        const got = await p.live(sub, id, p.timings.replyTimeoutMs, (e) => e.id === evs[1]!.id);
        const more = got.some((e) => e.id === evs[1]!.id) ? [] : await p.live(sub, id, p.timings.quietMs);
        sub.close();
        const n = [...got, ...more].filter((e) => evs.some((x) => x.id === e.id)).length;
        return n === 2 ? pass('both live events delivered to a limit-1 subscription') : bad(`${n} of 2 live events delivered to a limit-1 subscription`);
      } }),
    def({ id: 'filter-nonmatching', title: 'Nothing that does not match', module: 'conformance', needsDataset: true, basis: { nip: '01', section: 'Filters', level: 'required' }, minRoundTrips: 4,
      async run(p) {
        await dataset(p);
        const r = await p.req([{ authors: [p.pk], kinds: [1], '#t': ['no-such-tag-labs'] }]);
        // and live: an event of the right author and kind but without the tag must not arrive
        const sub = await p.open();
        const sid = await openLive(p, sub, { authors: [p.pk], kinds: [1], '#t': ['no-such-tag-labs'] });
        const ev = p.sign({ kind: 1, content: 'labs test: must not match' });
        if (sid && (await p.publishAuthed(ev)).ok === true) await p.live(sub, sid, p.timings.quietMs);
        sub.close();
        const seen = [...extrasSeen(p)];
        const live = p.conns.flatMap((c) => c.nonMatching);
        const d = { ownQueryReturned: r.events.length, nonMatchingInOtherChecks: seen.slice(0, 10), nonMatchingLive: live.slice(0, 10) };
        if (r.events.length) return bad(`${r.events.length} event(s) for a filter nothing matches`, d);
        if (seen.length) return bad(`${seen.length} non-matching event(s) returned by filter checks`, d);
        if (live.length) return bad(`${live.length} live event(s) delivered to subscriptions whose filters they do not match`, d);
        return pass('no event outside its filter was returned', d);
      } }),
  );
  return out;
}

export function flip(hex: string): string {
  const c = hex[hex.length - 1] === '0' ? '1' : '0';
  return hex.slice(0, -1) + c;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Delete every stored test event with NIP-09 (one request per key) and see what is still served. */
export function cleanup(p: Probe) {
  return p.once('cleanup', async () => {
    const stored = [...p.stored.values()].filter((e) => !p.deleted.has(e.id));
    const all = [...p.stored.values()];
    if (!all.length) return { stored: 0, remaining: [] as string[], honoured: null as boolean | null, requests: 0 };
    p.progress('deleting the test events (NIP-09)');
    p.cleaning = true;
    let requests = 0;
    const c = await p.conn().catch(() => null);
    if (!c) return { stored: all.length, remaining: all.map((e) => short(e.id)), honoured: null, requests };
    for (const [i, k] of p.keys.entries()) {
      const mine = stored.filter((e) => e.pubkey === k.pk);
      if (!mine.length) continue;
      const tags: string[][] = [];
      for (const e of mine) {
        tags.push(['e', e.id]);
        const d = e.tags.find((t) => t[0] === 'd')?.[1];
        if ((e.kind >= 30000 && e.kind < 40000)) tags.push(['a', `${e.kind}:${e.pubkey}:${d ?? ''}`]);
        if ((e.kind === 0 || e.kind === 3 || (e.kind >= 10000 && e.kind < 20000))) tags.push(['a', `${e.kind}:${e.pubkey}:`]);
      }
      for (const kind of new Set(mine.map((e) => e.kind))) tags.push(['k', String(kind)]);
      const del = p.sign({ kind: 5, content: 'labs test data clean-up', tags }, i);
      requests++;
      const a = await p.publish(del, c).catch(() => null);
      if (a?.ok === true) for (const e of mine) p.deleted.add(e.id);
    }
    const ids = all.map((e) => e.id);
    const r = await p.req([{ ids }], c).catch(() => null);
    const remaining = r ? r.events.map((e) => e.id).filter((id) => ids.includes(id)) : ids;
    return { stored: all.length, remaining: remaining.map(short), honoured: r ? remaining.length === 0 : null, requests };
  });
}

// Checks that judge everything seen during the run go last within their module.
const LAST = new Set(['event-subid', 'filter-nonmatching', 'ok-format', 'cleanup']);
export const CHECKS: CheckDef[] = [...ALL_CHECKS.filter((c) => !LAST.has(c.id)), ...ALL_CHECKS.filter((c) => LAST.has(c.id))];

export const checkById = new Map(CHECKS.map((c) => [c.id, c]));
export const moduleChecks = (m: LabsModule) => CHECKS.filter((c) => c.module === m);

/** The catalogue entry of a check (what GET /v1/services/labs lists). */
export const checkInfo = (c: CheckDef): CheckInfo => ({ id: c.id, title: c.title, module: c.module, needsDataset: c.needsDataset, selectable: c.selectable, basis: c.basis });
