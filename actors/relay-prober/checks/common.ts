// What every check file shares: the check definition, outcome helpers, the test dataset and the
// small probes several checks use.
import { matchFilter, type Filter } from 'nostr-tools/filter';
import type { Event } from 'nostr-tools/pure';
import type { CheckInfo, LabsModule } from '../../../shared/services/index.ts';
import type { CheckStatus } from '../../../shared/schemas/labs-report.ts';
import { isWriteRefusal, ProbeFatal, type OkAnswer, type Probe, type ProbeTimings } from '../probe.ts';
import type { RelayConn } from '../conn.ts';
import { RULES, type Rule } from './rules.ts';

export interface Outcome {
  status: CheckStatus;
  message: string;
  details?: Record<string, unknown>;
  /** The rule this finding was judged by, when softer or different from the check's basis. */
  rule?: Rule;
}

export interface CheckDef extends CheckInfo {
  module: LabsModule;
  /** The rule the check tests; its level caps the status (run.ts `judge`). */
  basis: Rule;
  /** Least number of round trips the check needs (connections, REQ/EVENT/COUNT/AUTH, HTTP). */
  minRoundTrips: number | ((t: ProbeTimings) => number);
  run(p: Probe): Promise<Outcome>;
}

export const pass = (message: string, details: Record<string, unknown> = {}, rule?: Rule): Outcome => ({
  status: 'pass',
  message,
  details,
  ...(rule ? { rule } : {}),
});
export const bad = (message: string, details: Record<string, unknown> = {}, rule?: Rule): Outcome => ({
  status: 'fail',
  message,
  details,
  ...(rule ? { rule } : {}),
});
export const skip = (message: string, details: Record<string, unknown> = {}, rule?: Rule): Outcome => ({
  status: 'skip',
  message,
  details,
  ...(rule ? { rule } : {}),
});
export const info = (message: string, details: Record<string, unknown> = {}, rule?: Rule): Outcome => ({
  status: 'info',
  message,
  details,
  ...(rule ? { rule } : {}),
});
export const warn = (message: string, details: Record<string, unknown> = {}, rule?: Rule): Outcome => ({
  status: 'warn',
  message,
  details,
  ...(rule ? { rule } : {}),
});

export const now = () => Math.floor(Date.now() / 1000);
export const randHex = () => Array.from(crypto.getRandomValues(new Uint8Array(32)), (b) => b.toString(16).padStart(2, '0')).join('');
export const short = (id: string) => id.slice(0, 12);

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
  const n1 = p.sign(
    {
      kind: 1,
      created_at: base - 40,
      content: 'labs test note 1',
      tags: [
        ['t', 'alpha'],
        ['e', refs.e1],
        ['p', pB],
      ],
    },
    A,
  );
  const n2 = p.sign(
    {
      kind: 1,
      created_at: base - 30,
      content: 'labs test note 2',
      tags: [
        ['t', 'beta'],
        ['e', refs.e2],
      ],
    },
    A,
  );
  const n3 = p.sign(
    {
      kind: 1,
      created_at: base - 20,
      content: 'labs test note 3',
      tags: [
        ['t', 'alpha'],
        ['p', pB],
      ],
    },
    A,
  );
  const n4 = p.sign({ kind: 1, created_at: base - 20, content: 'labs test note 4', tags: [['t', 'gamma']] }, A);
  const n5 = p.sign({ kind: 1, created_at: base - 10, content: 'labs test note 5', tags: [['l', 'labs-label']] }, A);
  const decoy = p.sign(
    {
      kind: 9999,
      created_at: base - 25,
      content: 'labs decoy',
      tags: [
        ['t', 'delta'],
        ['e', refs.e3],
      ],
    },
    A,
  );
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
      if (a.ok === false && isWriteRefusal(a.reason))
        throw new ProbeFatal('write_restricted', `the relay refuses test events: ${a.reason}`);
      throw new ProbeFatal(
        'write_restricted',
        a.ok === null ? `no OK for a test event within ${p.timings.replyTimeoutMs} ms` : `test event refused: ${a.reason || '(no reason)'}`,
      );
    }
  }
  return {
    base,
    notes,
    decoy,
    repl: { older: replOlder, newer: replNewer, oldest: replOldest },
    addr: { older: addrOlder, newer: addrNewer, other: addrOther },
    refs,
    visible: [...notes, decoy, replNewer, addrNewer, addrOther],
  };
}

export const dataset = (p: Probe) => p.once('dataset', () => publishDataset(p));

/** Non-matching events returned by any filter check so far (for filter-nonmatching). */
export const extrasSeen = (p: Probe): { check: string; id: string }[] => {
  const k = '__extras';
  const m = p.memo as unknown as Map<string, unknown>;
  if (!m.has(k)) m.set(k, []);
  return m.get(k) as { check: string; id: string }[];
};

/** Run filters, compare with what the dataset says must come back. */
// An event outside the filter breaks the check's MUST; a matching event missing is judged by
// "the relay SHOULD return events that match the filter" (relays may hold events back), and a
// superseded version served by "it SHOULD return just the latest one".
export async function filterCheck(
  p: Probe,
  id: string,
  filters: Filter[],
  opts: { expectIds?: string[]; describe: string; missingRule?: Rule },
) {
  const ds = await dataset(p);
  const r = await p.req(filters as Record<string, unknown>[]);
  if (r.end !== 'EOSE')
    return bad(
      `no EOSE for ${opts.describe} (${r.end ?? 'timeout'}${r.reason ? `: ${r.reason}` : ''})`,
      { filters, notices: r.notices },
      r.end === 'CLOSED' ? RULES.reqReturns : RULES.reqAnswered,
    );
  const expected = opts.expectIds ?? ds.visible.filter((e) => filters.some((f) => matchFilter(f, e))).map((e) => e.id);
  const got = r.events.map((e) => e.id);
  const nonMatching = r.events.filter((e) => !filters.some((f) => matchFilter(f, e))).map((e) => e.id);
  for (const x of nonMatching) extrasSeen(p).push({ check: id, id: x });
  const missing = expected.filter((x) => !got.includes(x));
  const unexpected = got.filter((x) => !expected.includes(x) && !nonMatching.includes(x));
  const details = {
    filters,
    expected: expected.map(short),
    returned: got.map(short),
    missing: missing.map(short),
    nonMatching: nonMatching.map(short),
  };
  if (nonMatching.length) return bad(`${opts.describe}: ${nonMatching.length} event(s) returned that do not match the filter`, details);
  if (missing.length)
    return bad(
      `${opts.describe}: ${missing.length} of ${expected.length} matching test event(s) missing`,
      details,
      opts.missingRule ?? RULES.reqReturns,
    );
  if (unexpected.length)
    return bad(`${opts.describe}: ${unexpected.length} superseded or unexpected event(s) returned`, details, RULES.replaceableServed);
  return pass(`${opts.describe}: exactly the ${expected.length} matching event(s)`, details);
}

/** Publish on one connection and wait for live delivery on a subscription of another. */
export async function openLive(p: Probe, c: RelayConn, filter: Filter): Promise<string | null> {
  const sub = p.subId('live');
  const r = await p.req([filter as Record<string, unknown>], c, { subId: sub, keepOpen: true });
  return r.end === 'EOSE' ? sub : null;
}

export const writeRefused = (a: OkAnswer) => a.ok === false && isWriteRefusal(a.reason);

export function percentiles(xs: number[]) {
  if (!xs.length) return null;
  const s = [...xs].sort((a, b) => a - b);
  const at = (q: number) => s[Math.min(s.length - 1, Math.max(0, Math.ceil(q * s.length) - 1))]!;
  const r = (v: number) => Math.round(v * 10) / 10;
  return { samples: s.length, min: r(s[0]!), max: r(s.at(-1)!), p50: r(at(0.5)), p90: r(at(0.9)), p99: r(at(0.99)) };
}

/** A stored note from the throwaway key, published and read back (quick module). */
export const quickNote = (p: Probe) =>
  p.once('quickNote', async () => {
    const ev = p.sign({ kind: 1, content: 'labs test: publish and read back' });
    const a = await p.publishAuthed(ev);
    return { ev, a };
  });

/** The AUTH challenge of a fresh connection (sent on connect, or after a REQ that needs it). */
export const authChallenge = (p: Probe) =>
  p.once('challenge', async () => {
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

export const L = (p: Probe, k: string): number | null => (typeof p.limitation[k] === 'number' ? (p.limitation[k] as number) : null);

/** Events refused or at least not served back; used by several limit probes. */
export async function refusedOrHidden(
  p: Probe,
  ev: Event,
  c?: RelayConn,
  raw?: string,
): Promise<{ refused: boolean; how: string; a: OkAnswer }> {
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

export type Def = Omit<CheckDef, 'selectable' | 'needsDataset'> & { needsDataset?: boolean; selectable?: boolean };
export type { Rule };
export const def = (d: Def): CheckDef => ({ needsDataset: false, selectable: true, ...d });

export function flip(hex: string): string {
  const c = hex[hex.length - 1] === '0' ? '1' : '0';
  return hex.slice(0, -1) + c;
}

export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
