// Optional NIPs: 40 (expiration), 42 (AUTH), 45 (COUNT), 70 (protected events).
import { def, pass, bad, skip, warn, now, short, randHex, dataset, authChallenge, refusedOrHidden, type CheckDef } from './common.ts';
import { RULES } from './rules.ts';
import { newHll, feedPubkey, computeOffset, hllEncode } from 'nostr-tools/nip45';
import { prefixOf, type Probe } from '../probe.ts';
import type { RelayConn } from '../conn.ts';
import { loadNip77 } from '../negentropy.ts';

/** COUNT → COUNT, CLOSED, a NOTICE (taken as the answer to it) or nothing. */
async function count(p: Probe, filter: Record<string, unknown>) {
  const c = await p.conn();
  const id = p.subId('count');
  const n0 = c.notices.length;
  c.send(['COUNT', id, filter]);
  // a NOTICE right after COUNT is the relay's answer to it (no need to wait for the timeout)
  let r = await c.next((m) => ((m[0] === 'COUNT' || m[0] === 'CLOSED') && m[1] === id) || m[0] === 'NOTICE', p.timings.replyTimeoutMs);
  if (r?.msg[0] === 'NOTICE')
    r = await c.next((m) => (m[0] === 'COUNT' || m[0] === 'CLOSED') && m[1] === id, Math.min(200, p.timings.quietMs));
  const answer = r?.msg[0] === 'COUNT' ? ('COUNT' as const) : r?.msg[0] === 'CLOSED' ? ('CLOSED' as const) : null;
  return {
    answer,
    msg: r?.msg ?? null,
    body: answer === 'COUNT' ? (r!.msg[2] as { count?: unknown; hll?: unknown } | undefined) : undefined,
    reason: answer === 'CLOSED' ? String(r!.msg[2] ?? '') : '',
    notice: c.notices.slice(n0)[0] ?? null,
  };
}

/** A fresh connection and its AUTH challenge (sent on connect, or after a REQ that needs it). */
async function freshChallenge(p: Probe): Promise<{ c: RelayConn; challenge: string | null }> {
  const c = await p.open();
  let r = await c.next((m) => m[0] === 'AUTH' && typeof m[1] === 'string', p.timings.quietMs);
  if (!r && !c.challenge) {
    await p.req([{ kinds: [4], '#p': [p.pk], limit: 1 }], c);
    r = await c.next((m) => m[0] === 'AUTH' && typeof m[1] === 'string', p.timings.quietMs);
  }
  return { c, challenge: c.challenge ?? (r ? String(r.msg[1]) : null) };
}

export const NIP_CHECKS: CheckDef[] = [
  def({
    id: 'nip40-expiration',
    title: 'Expired events are not served',
    module: 'conformance',
    basis: RULES.expiration,
    minRoundTrips: 2,
    async run(p) {
      const ev = p.sign({ kind: 1, content: 'labs test: already expired', tags: [['expiration', String(now() - 60)]] });
      const r = await refusedOrHidden(p, ev, await p.conn());
      p.observe(
        'supported_nips: 40',
        p.advertisesNip(40),
        r.refused,
        p.advertisesNip(40) === null ? null : p.advertisesNip(40) === r.refused,
        'nip40-expiration',
      );
      return r.refused ? pass(`expired event not served (${r.how})`) : bad('an expired event is served');
    },
  }),
  def({
    id: 'nip42-auth',
    title: 'AUTH challenge answered with OK',
    module: 'conformance',
    basis: RULES.auth,
    minRoundTrips: 3,
    async run(p) {
      const { c, challenge } = await authChallenge(p);
      p.observe(
        'supported_nips: 42',
        p.advertisesNip(42),
        !!challenge,
        p.advertisesNip(42) === null ? null : p.advertisesNip(42) === !!challenge,
        'nip42-auth',
      );
      if (!challenge) return skip('no AUTH challenge seen (NIP-42 not offered)');
      const a = await p.auth(c, challenge, {}, 1);
      if (a.ok === null) return bad('AUTH not answered with OK', {}, RULES.authOk);
      if (a.ok !== true) return bad(`valid AUTH refused: ${a.reason}`);
      return pass('challenge received; valid AUTH accepted with OK');
    },
  }),
  def({
    id: 'nip42-refusals',
    title: 'Bad AUTH events refused (kind, challenge, relay, time)',
    module: 'conformance',
    basis: RULES.authVerify,
    minRoundTrips: 5,
    async run(p) {
      // the connection (and challenge) of nip42-auth when it ran; bad AUTH events must be refused
      // whether or not the connection authenticated before
      const { c, challenge } = await authChallenge(p);
      if (!challenge) return skip('no AUTH challenge seen');
      const cases: [string, Parameters<Probe['auth']>[2]][] = [
        ['wrong kind', { kind: 22243 }],
        [
          'wrong challenge',
          {
            tags: [
              ['relay', p.url.href],
              ['challenge', `${challenge}x`],
            ],
          },
        ],
        [
          'wrong relay',
          {
            tags: [
              ['relay', 'wss://other-relay.invalid/'],
              ['challenge', challenge],
            ],
          },
        ],
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
      // refusals only mean something from a relay that accepts a good AUTH
      const good = await p.auth(c, challenge, {}, 0);
      if (good.ok !== true)
        return skip(
          `no AUTH is accepted here, not even a valid one (${good.ok === null ? 'no OK' : good.reason}): the refusals say nothing`,
          { validAuth: { ok: good.ok, reason: good.reason } },
        );
      return pass('all four bad AUTH events refused with OK false; a valid one accepted');
    },
  }),
  def({
    id: 'nip45-count',
    title: 'COUNT answered with COUNT or CLOSED',
    module: 'conformance',
    needsDataset: true,
    basis: RULES.count,
    minRoundTrips: 1,
    async run(p) {
      const ds = await dataset(p);
      const r = await count(p, { authors: [p.pk], kinds: [1], until: ds.base });
      const adv = p.advertisesNip(45);
      if (r.answer === 'COUNT') {
        p.observe('supported_nips: 45', adv, true, adv === null ? null : adv === true, 'nip45-count');
        if (!r.body || !Number.isInteger(r.body.count)) return bad('COUNT without an integer count', { msg: r.msg });
        if (r.body.count !== ds.notes.length) return bad(`count ${r.body.count}, expected ${ds.notes.length}`, { msg: r.msg });
        return pass(`COUNT ${r.body.count}`, { msg: r.msg });
      }
      p.observe(
        'supported_nips: 45',
        adv,
        r.answer === 'CLOSED' ? `COUNT refused: ${r.reason}` : false,
        adv === null ? null : adv === false,
        'nip45-count',
      );
      if (r.answer === 'CLOSED') {
        if (prefixOf(r.reason).kind === 'none') return bad(`CLOSED without a prefix: "${r.reason}"`, { msg: r.msg }, RULES.closedPrefix);
        // a refusal is what NIP-45 asks for when a relay will not count; advertising the NIP and
        // refusing a plain count of public notes is a claim the relay does not keep
        if (adv === true)
          return warn(`NIP-45 is advertised, but COUNT of public notes was refused: "${r.reason}"`, { msg: r.msg }, RULES.countRefusal);
        return skip(`not offered: COUNT refused with CLOSED "${r.reason}" (a proper refusal)`, { msg: r.msg });
      }
      const what = r.notice ? `answered with NOTICE "${r.notice}" instead of COUNT or CLOSED` : 'COUNT not answered';
      if (adv !== true) return skip(`not offered (NIP-45 not in supported_nips): ${what}`);
      return bad(what, {}, RULES.countRefusal);
    },
  }),
  def({
    id: 'nip45-hll',
    title: 'COUNT with a HyperLogLog (hll) for a tag filter',
    module: 'conformance',
    needsDataset: true,
    basis: RULES.hll,
    minRoundTrips: 1,
    async run(p) {
      const ds = await dataset(p);
      if (p.advertisesNip(45) !== true) return skip('NIP-45 not advertised');
      // a single #p value: the case NIP-45 defines hll for; both matching notes are by key A
      const filter = { kinds: [1], '#p': [ds.refs.pB] };
      const r = await count(p, filter);
      if (r.answer !== 'COUNT')
        return skip(
          `COUNT not answered (${r.answer === 'CLOSED' ? `CLOSED "${r.reason}"` : r.notice ? `NOTICE "${r.notice}"` : 'no answer'}); see nip45-count`,
        );
      const hll = r.body?.hll;
      if (hll === undefined) return skip('no hll in the COUNT answer (relays may leave it out)', { msg: r.msg });
      const expected = hllEncode(feedPubkey(newHll(), p.pk, computeOffset(ds.refs.pB)));
      const d = { filter, count: r.body?.count ?? null, hll, expectedHll: expected };
      if (typeof hll !== 'string' || !/^[0-9a-f]{512}$/.test(hll)) return bad('hll is not 512 lowercase hex characters (256 registers)', d);
      if (hll !== expected) {
        const differ = Array.from({ length: 256 }, (_, i) => i).filter(
          (i) => hll.slice(2 * i, 2 * i + 2) !== expected.slice(2 * i, 2 * i + 2),
        );
        return bad(
          `hll registers differ from the ones NIP-45's steps give for the matching events (${differ.length} register(s), e.g. #${differ[0]})`,
          { ...d, differingRegisters: differ.slice(0, 10) },
        );
      }
      return pass(`hll matches the registers NIP-45's steps give (count ${r.body?.count})`, d);
    },
  }),
  def({
    id: 'nip77-negentropy',
    title: 'Negentropy sync (NEG-OPEN/NEG-MSG) finds what each side lacks',
    module: 'conformance',
    needsDataset: true,
    basis: RULES.negentropy,
    minRoundTrips: 1,
    async run(p) {
      const ds = await dataset(p);
      if (p.advertisesNip(77) !== true) return skip('NIP-77 not advertised');
      const { Negentropy, NegentropyStorageVector } = await loadNip77();
      // the client holds notes 1-4 of the dataset and one event the relay never saw: the relay
      // must make it need note 5 and learn it has the made-up one
      const [n1, n2, n3, n4, n5] = ds.notes;
      const madeUp = { created_at: ds.base - 15, id: randHex() };
      const storage = new NegentropyStorageVector();
      for (const e of [n1!, n2!, n3!, n4!, madeUp]) storage.insert(e.created_at, e.id);
      storage.seal();
      const neg = new Negentropy(storage);
      const filter = { authors: [p.pk], kinds: [1], until: ds.base };
      const c = await p.conn();
      const sid = p.subId('neg');
      const have: string[] = [];
      const need: string[] = [];
      const n0 = c.notices.length;
      c.send(['NEG-OPEN', sid, filter, neg.initiate()]);
      let rounds = 0;
      for (; rounds < 8; rounds++) {
        const r = await c.next(
          (m) => ((m[0] === 'NEG-MSG' || m[0] === 'NEG-ERR') && m[1] === sid) || m[0] === 'NOTICE',
          p.timings.replyTimeoutMs,
        );
        if (!r || r.msg[0] === 'NOTICE')
          return bad(r ? `answered with NOTICE "${String(r.msg[1])}" instead of NEG-MSG or NEG-ERR` : 'NEG-OPEN not answered', {
            notices: c.notices.slice(n0),
          });
        if (r.msg[0] === 'NEG-ERR') {
          const reason = String(r.msg[2] ?? '');
          p.observe('supported_nips: 77', true, `NEG-ERR: ${reason}`, false, 'nip77-negentropy');
          if (prefixOf(reason).kind === 'none') return bad(`NEG-ERR without a prefix: "${reason}"`, { reason }, RULES.negentropyError);
          return warn(
            `NIP-77 is advertised, but a sync of ${ds.notes.length} test notes was refused: "${reason}"`,
            { reason },
            RULES.negentropyError,
          );
        }
        let next: string | null;
        try {
          next = neg.reconcile(
            String(r.msg[2]),
            (id) => have.push(id),
            (id) => need.push(id),
          );
        } catch (e) {
          c.send(['NEG-CLOSE', sid]);
          return bad(`NEG-MSG that is not negentropy V1: ${(e as Error).message}`, { msg: String(r.msg[2]).slice(0, 200) });
        }
        if (next === null) break;
        c.send(['NEG-MSG', sid, next]);
      }
      c.send(['NEG-CLOSE', sid]);
      const d = {
        rounds: rounds + 1,
        need: need.map(short),
        have: have.map(short),
        expectedNeed: [short(n5!.id)],
        expectedHave: [short(madeUp.id)],
      };
      const ok = need.length === 1 && need[0] === n5!.id && have.length === 1 && have[0] === madeUp.id;
      p.observe('supported_nips: 77', true, ok, ok, 'nip77-negentropy');
      if (!ok) return bad('the sync did not find exactly the note the client lacks and the event the relay lacks', d);
      return pass(`in ${rounds + 1} round(s): needs note 5, relay lacks the made-up event`, d);
    },
  }),
  def({
    id: 'nip70-protected',
    title: 'Protected events refused without AUTH',
    module: 'conformance',
    basis: RULES.protectedDefault,
    minRoundTrips: 2,
    async run(p) {
      const c = await p.open();
      const ev = p.sign({ kind: 1, content: 'labs test: protected', tags: [['-']] });
      const a = await p.publish(ev, c);
      c.close();
      p.observe(
        'supported_nips: 70',
        p.advertisesNip(70),
        a.ok === false,
        p.advertisesNip(70) === null ? null : p.advertisesNip(70) === (a.ok === false),
        'nip70-protected',
      );
      if (a.ok === null) return bad('no OK');
      if (a.ok) return bad('accepted from an unauthenticated connection');
      return pass(`refused: ${a.reason}`);
    },
  }),
  def({
    id: 'nip70-protected-auth',
    title: "After AUTH, only the author's protected events are accepted",
    module: 'conformance',
    basis: RULES.protectedAuthor,
    minRoundTrips: 4,
    async run(p) {
      const { c, challenge } = await freshChallenge(p);
      if (!challenge) {
        c.close();
        return skip('no AUTH challenge seen: protected events can only be refused (see nip70-protected)');
      }
      const a = await p.auth(c, challenge, {}, 0);
      if (a.ok !== true) {
        c.close();
        return skip(`AUTH with the test key not accepted (${a.ok === null ? 'no OK' : a.reason}); see nip42-auth`);
      }
      c.authed = true;
      // authenticated as key A: key B's protected event must be refused, A's may be accepted
      const other = p.sign({ kind: 1, content: 'labs test: protected, someone else', tags: [['-']] }, 1);
      const own = p.sign({ kind: 1, content: 'labs test: protected, own', tags: [['-']] }, 0);
      const ao = await p.publish(other, c);
      const aa = await p.publish(own, c);
      c.close();
      const d = { otherKey: { ok: ao.ok, reason: ao.reason }, ownKey: { ok: aa.ok, reason: aa.reason } };
      if (ao.ok === null || aa.ok === null) return bad('no OK for a protected event', d, RULES.okSent);
      if (ao.ok) return bad("another key's protected event accepted on a connection authenticated as someone else", d);
      return pass(
        aa.ok
          ? "own protected event accepted after AUTH, another key's refused"
          : `protected events refused even after AUTH (${aa.reason})`,
        d,
      );
    },
  }),
];
