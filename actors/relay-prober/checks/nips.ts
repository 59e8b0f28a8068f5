// Optional NIPs: 40 (expiration), 42 (AUTH), 45 (COUNT), 70 (protected events).
import { def, pass, bad, skip, now, dataset, authChallenge, refusedOrHidden, type CheckDef } from './common.ts';
import { hasPrefix, type Probe } from '../probe.ts';

export const NIP_CHECKS: CheckDef[] = [
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
