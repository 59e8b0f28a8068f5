// NIP-01 messages (OK, CLOSED, CLOSE, EVENT, subscription ids) and event validation.
import { def, pass, bad, skip, warn, now, openLive, refusedOrHidden, sleep, flip, type CheckDef } from './common.ts';
import { RULES } from './rules.ts';
import { verifyEvent } from 'nostr-tools/pure';
import { prefixOf } from '../probe.ts';

/** A standard prefix in other letters: present (the MUST is met) but not the word clients match. */
const caseMessage = (what: string, reason: string) => {
  const word = prefixOf(reason).word!;
  return `${what} "${reason.slice(0, 80)}": the prefix \`${word}:\` is the standard \`${word.toLowerCase()}:\` in other letters; prefixes are case-sensitive, so clients matching \`${word.toLowerCase()}:\` miss it`;
};

export const MESSAGE_CHECKS: CheckDef[] = [
  def({
    id: 'ok-format',
    title: 'OK has 4 elements; a refusal has a prefix',
    module: 'conformance',
    basis: RULES.okFormat,
    minRoundTrips: 1,
    async run(p) {
      // make sure at least one refusal was seen
      const ev = p.sign({ kind: 1, content: 'labs test: bad signature' });
      await p.publish({ ...ev, sig: flip(ev.sig) });
      const oks = p.conns.flatMap((c) => c.received.filter((r) => r.msg[0] === 'OK').map((r) => r.msg));
      const malformed = oks.filter((m) => m.length !== 4 || typeof m[2] !== 'boolean' || typeof m[3] !== 'string');
      const refusals = oks.filter((m) => m[2] === false && typeof m[3] === 'string');
      const noPrefix = refusals.filter((m) => prefixOf(m[3] as string).kind === 'none');
      const otherCase = refusals.filter((m) => prefixOf(m[3] as string).kind === 'case');
      const d = {
        oks: oks.length,
        malformed: malformed.slice(0, 5),
        refusalsWithoutPrefix: noPrefix.slice(0, 5),
        prefixesInOtherCase: otherCase.slice(0, 5),
      };
      if (!oks.length) return bad('no OK message seen', d, RULES.okSent);
      if (malformed.length) return bad(`${malformed.length} OK message(s) without exactly 4 elements`, d);
      if (noPrefix.length) return bad(`${noPrefix.length} refusal(s) without a machine-readable prefix, e.g. "${noPrefix[0]![3]}"`, d);
      if (otherCase.length) return warn(caseMessage('OK', otherCase[0]![3] as string), d, RULES.standardPrefixes);
      return pass(`${oks.length} OK message(s), all well formed`, d);
    },
  }),
  def({
    id: 'closed-prefix',
    title: 'A refused REQ gets CLOSED with a prefix',
    module: 'conformance',
    basis: RULES.reqAnswered,
    minRoundTrips: 1,
    async run(p) {
      const c = await p.open();
      // prefix matching of ids is gone from NIP-01: a 4-char id is invalid
      const r = await p.req([{ ids: ['abcd'] }], c, {
        timeoutMs: Math.min(p.timings.replyTimeoutMs, p.timings.quietMs * 2),
        endOnNotice: true,
      });
      c.close();
      const d = { end: r.end, reason: r.reason, notices: r.notices };
      if (r.end === 'CLOSED') {
        const pre = prefixOf(r.reason);
        if (pre.kind === 'none') return bad(`CLOSED without a prefix: "${r.reason}"`, d, RULES.closedPrefix);
        if (pre.kind === 'case') return warn(caseMessage('CLOSED', r.reason), d, RULES.standardPrefixes);
        return pass(`CLOSED "${r.reason}"`, d);
      }
      if (r.notices.length) return bad(`refused with NOTICE "${r.notices[0]}" instead of CLOSED`, d);
      if (r.end === 'EOSE') return skip('the relay accepted the invalid filter (no refusal to judge)', d);
      return bad('no answer to an invalid REQ', d);
    },
  }),
  def({
    id: 'close-stops',
    title: 'CLOSE stops delivery',
    module: 'conformance',
    basis: RULES.liveDelivery,
    minRoundTrips: 3,
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
    },
  }),
  def({
    id: 'event-subid',
    title: 'EVENT only for subscriptions the client opened',
    module: 'conformance',
    basis: RULES.eventSubid,
    minRoundTrips: 0,
    async run(p) {
      const stray = p.strayEvents();
      if (stray.length) return bad(`${stray.length} EVENT message(s) for subscription ids never opened`, { stray: stray.slice(0, 10) });
      const n = p.conns.reduce((s, c) => s + c.received.filter((r) => r.msg[0] === 'EVENT').length, 0);
      return pass(`${n} EVENT message(s), all for opened subscriptions`);
    },
  }),
  def({
    id: 'subid-replace',
    title: 'A new REQ with the same id replaces the old one',
    module: 'conformance',
    basis: RULES.liveDelivery,
    minRoundTrips: 5,
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
    },
  }),
  def({
    id: 'subid-per-conn',
    title: 'Subscription ids are per connection',
    module: 'conformance',
    basis: RULES.subidPerConn,
    minRoundTrips: 5,
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
    },
  }),

  // ----------------------------------------------------------------------------- events
  def({
    id: 'bad-signature',
    title: 'Event with a bad signature refused',
    module: 'conformance',
    basis: RULES.signature,
    minRoundTrips: 2,
    async run(p) {
      const ev = p.sign({ kind: 1, content: 'labs test: bad signature' });
      const forged = { ...ev, sig: flip(ev.sig) };
      const r = await refusedOrHidden(p, forged, await p.conn());
      return r.refused ? pass(`refused (${r.how})`) : bad(`accepted (${r.how})`);
    },
  }),
  def({
    id: 'bad-id',
    title: 'Event whose id is not its hash refused',
    module: 'conformance',
    basis: RULES.eventId,
    minRoundTrips: 2,
    async run(p) {
      const ev = p.sign({ kind: 1, content: 'labs test: bad id' });
      const forged = { ...ev, id: flip(ev.id) };
      const r = await refusedOrHidden(p, forged, await p.conn());
      return r.refused ? pass(`refused (${r.how})`) : bad(`accepted (${r.how})`);
    },
  }),
  def({
    id: 'json-escapes',
    title: 'Content with JSON escapes round-trips',
    module: 'conformance',
    basis: RULES.escapes,
    minRoundTrips: 2,
    async run(p) {
      const content = 'labs test: line\nbreak "quote" back\\slash tab\t cr\r ctl\u0001 bell\u0007 nul-free \u2028 ✓ 😀 </script>';
      const ev = p.sign({ kind: 1, content });
      const a = await p.publishAuthed(ev);
      if (a.ok !== true) return bad(`refused a valid event with escapes: ${a.reason || 'no OK'}`);
      const r = await p.req([{ ids: [ev.id] }]);
      const back = r.events[0];
      if (!back) return bad('not served back');
      if (back.content !== content || !verifyEvent({ ...back }))
        return bad('content altered on the way back', { sent: JSON.stringify(content), got: JSON.stringify(back.content) });
      return pass('stored and served byte-identical, signature valid');
    },
  }),
  def({
    id: 'empty-tags',
    title: 'Event with no tags accepted',
    module: 'conformance',
    basis: RULES.tagsShape,
    minRoundTrips: 2,
    async run(p) {
      // the one test event without the marker tag (it cannot carry one); content says what it is
      const ev = p.sign({ kind: 1, content: 'labs-test: empty tags', tags: [] }, 0, { marker: false });
      const a = await p.publishAuthed(ev);
      if (a.ok !== true) return bad(`refused: ${a.reason || 'no OK'}`);
      const r = await p.req([{ ids: [ev.id] }]);
      if (!r.events[0]) return bad('not served back');
      if (!Array.isArray(r.events[0].tags) || r.events[0].tags.length) return bad('tags changed', { tags: r.events[0].tags });
      return pass('accepted and served with tags []');
    },
  }),
  def({
    id: 'duplicate',
    title: 'A duplicate gets OK (duplicate:)',
    module: 'conformance',
    basis: RULES.okSent,
    minRoundTrips: 2,
    async run(p) {
      const ev = p.sign({ kind: 1, content: 'labs test: duplicate' });
      const a1 = await p.publishAuthed(ev);
      if (a1.ok !== true) return skip(`first copy not accepted: ${a1.reason || 'no OK'}`);
      const a2 = await p.publish(ev);
      const d = { ok: a2.ok, reason: a2.reason };
      if (a2.ok === null) return bad('no OK for the duplicate', d);
      if (a2.ok === false && !a2.reason.startsWith('duplicate:')) return bad(`duplicate refused as "${a2.reason}"`, d, RULES.duplicateOk);
      if (!a2.reason.startsWith('duplicate:')) return pass('OK true (no duplicate: prefix, which NIP-01 suggests)', d);
      return pass(`OK ${a2.ok} "${a2.reason}"`, d);
    },
  }),
];
