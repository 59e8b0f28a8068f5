// NIP-11 `limitation` values and what the relay actually enforces.
import { def, pass, bad, skip, info, warn, now, L, dataset, refusedOrHidden, type CheckDef } from './common.ts';
import { RULES } from './rules.ts';
import { getPow } from 'nostr-tools/nip13';
import { hasPrefix, isWriteRefusal } from '../probe.ts';

export const LIMIT_CHECKS: CheckDef[] = [
  def({
    id: 'limit-subscriptions',
    title: 'max_subscriptions enforced with CLOSED',
    module: 'conformance',
    basis: RULES.maxSubscriptions,
    minRoundTrips: 2,
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
      const over = await p.req([{ authors: [p.pk], kinds: [1], limit: 1 }], c, {
        keepOpen: true,
        timeoutMs: p.timings.quietMs * 2,
        endOnNotice: true,
      });
      c.close();
      const d = { end: over.end, reason: over.reason, notices: over.notices };
      p.observe(
        'limitation.max_subscriptions',
        max,
        over.end === 'EOSE' ? `more than ${max}` : max,
        over.end !== 'EOSE',
        'limit-subscriptions',
      );
      if (over.end === 'CLOSED' && hasPrefix(over.reason)) return pass(`subscription ${max + 1} refused: ${over.reason}`, d);
      if (over.end === 'EOSE') return bad(`subscription ${max + 1} accepted although max_subscriptions is ${max}`, d);
      return bad(`subscription ${max + 1} refused without CLOSED and a prefix`, d);
    },
  }),
  def({
    id: 'limit-subid-length',
    title: 'Subscription ids up to 64 characters work; max_subid_length enforced',
    module: 'conformance',
    basis: RULES.subidLength,
    minRoundTrips: 2,
    async run(p) {
      const max = L(p, 'max_subid_length');
      const okLen = Math.min(64, max ?? 64);
      const c = await p.open();
      const r = await p.req([{ authors: [p.pk], limit: 1 }], c, { subId: 'x'.repeat(okLen) });
      if (r.end !== 'EOSE') {
        c.close();
        return bad(`a ${okLen}-character subscription id is refused (${r.end ?? 'no answer'} ${r.reason})`);
      }
      if (max === null || max >= 1000) {
        c.close();
        return pass(`${okLen}-character id accepted`);
      }
      const over = await p.req([{ authors: [p.pk], limit: 1 }], c, {
        subId: 'y'.repeat(max + 1),
        timeoutMs: p.timings.quietMs * 2,
        endOnNotice: true,
      });
      c.close();
      p.observe(
        'limitation.max_subid_length',
        max,
        over.end === 'EOSE' ? `more than ${max}` : max,
        over.end !== 'EOSE',
        'limit-subid-length',
      );
      if (over.end === 'EOSE') return warn(`a ${max + 1}-character id is accepted although max_subid_length is ${max}`);
      return pass(`${okLen} accepted, ${max + 1} refused`);
    },
  }),
  def({
    id: 'limit-max-limit',
    title: 'max_limit caps results',
    module: 'conformance',
    needsDataset: true,
    basis: RULES.maxLimit,
    minRoundTrips: 1,
    async run(p) {
      const ds = await dataset(p);
      const max = L(p, 'max_limit');
      if (max === null) return skip('max_limit not advertised');
      if (max >= ds.notes.length) return skip(`max_limit ${max} cannot be observed with ${ds.notes.length} test notes`);
      const r = await p.req([{ authors: [p.pk], kinds: [1], limit: ds.notes.length }]);
      p.observe('limitation.max_limit', max, r.events.length, r.events.length <= max, 'limit-max-limit');
      return r.events.length <= max ? pass(`${r.events.length} returned`) : bad(`${r.events.length} returned, more than max_limit ${max}`);
    },
  }),
  def({
    id: 'limit-content-length',
    title: 'max_content_length enforced',
    module: 'conformance',
    basis: RULES.maxContentLength,
    minRoundTrips: 2,
    async run(p) {
      const max = L(p, 'max_content_length');
      if (max === null) return skip('max_content_length not advertised');
      if (max > 256 * 1024) return skip(`max_content_length ${max} is above what the probe sends (256 KB)`);
      const r = await refusedOrHidden(p, p.sign({ kind: 1, content: 'x'.repeat(max + 1) }));
      p.observe('limitation.max_content_length', max, r.refused ? max : `more than ${max}`, r.refused, 'limit-content-length');
      return r.refused ? pass(`content of ${max + 1} refused (${r.how})`) : bad(`content of ${max + 1} characters accepted`);
    },
  }),
  def({
    id: 'limit-message-length',
    title: 'max_message_length enforced',
    module: 'conformance',
    basis: RULES.maxMessageLength,
    minRoundTrips: 2,
    async run(p) {
      const max = L(p, 'max_message_length');
      if (max === null) return skip('max_message_length not advertised');
      if (max > 512 * 1024) return skip(`max_message_length ${max} is above what the probe sends (512 KB)`);
      const ev = p.sign({ kind: 1, content: 'x'.repeat(max) });
      const r = await refusedOrHidden(p, ev);
      p.observe('limitation.max_message_length', max, r.refused ? max : `more than ${max}`, r.refused, 'limit-message-length');
      return r.refused
        ? pass(`a ${JSON.stringify(['EVENT', ev]).length}-byte message refused (${r.how})`)
        : bad('a message longer than max_message_length accepted');
    },
  }),
  def({
    id: 'limit-event-tags',
    title: 'max_event_tags enforced',
    module: 'conformance',
    basis: RULES.maxEventTags,
    minRoundTrips: 2,
    async run(p) {
      const max = L(p, 'max_event_tags');
      if (max === null) return skip('max_event_tags not advertised');
      if (max > 5000) return skip(`max_event_tags ${max} is above what the probe sends (5000)`);
      const tags = Array.from({ length: max + 1 }, (_, i) => ['x', String(i)]);
      const r = await refusedOrHidden(p, p.sign({ kind: 1, content: 'labs test: many tags', tags }));
      p.observe('limitation.max_event_tags', max, r.refused ? max : `more than ${max}`, r.refused, 'limit-event-tags');
      return r.refused ? pass(`${max + 3} tags refused (${r.how})`) : bad(`${max + 3} tags accepted`);
    },
  }),
  def({
    id: 'limit-created-at',
    title: 'created_at window (seconds relative to now)',
    module: 'conformance',
    basis: RULES.createdAtLimits,
    minRoundTrips: 2,
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
    },
  }),
  def({
    id: 'limit-pow',
    title: 'min_pow_difficulty enforced',
    module: 'conformance',
    basis: RULES.minPow,
    minRoundTrips: 2,
    async run(p) {
      const d = L(p, 'min_pow_difficulty');
      if (!d) return skip('no proof of work required');
      let ev = p.sign({ kind: 1, content: 'labs test: no pow' });
      for (let i = 0; getPow(ev.id) >= d && i < 20; i++) ev = p.sign({ kind: 1, content: `labs test: no pow ${i}` });
      const r = await refusedOrHidden(p, ev);
      p.observe('limitation.min_pow_difficulty', d, r.refused ? d : 0, r.refused, 'limit-pow');
      if (!r.refused) return bad(`an event with ${getPow(ev.id)} bits accepted`);
      return r.a.reason.startsWith('pow:') ? pass(`refused: ${r.a.reason}`) : warn(`refused without the pow: prefix (${r.how})`);
    },
  }),
  def({
    id: 'limit-auth-writes',
    title: 'auth_required / restricted_writes match what happens',
    module: 'conformance',
    basis: RULES.authWrites,
    minRoundTrips: 2,
    async run(p) {
      const c = await p.open();
      const ev = p.sign({ kind: 1, content: 'labs test: unauthenticated write' });
      const a = await p.publish(ev, c);
      c.close();
      const authObserved = a.ok === false && a.reason.startsWith('auth-required:');
      const restrictedObserved = a.ok === false && isWriteRefusal(a.reason) && !authObserved;
      const adv = { auth: p.limitation.auth_required, restricted: p.limitation.restricted_writes };
      p.observe(
        'limitation.auth_required',
        adv.auth ?? null,
        authObserved,
        typeof adv.auth === 'boolean' ? adv.auth === authObserved : null,
        'limit-auth-writes',
      );
      p.observe(
        'limitation.restricted_writes',
        adv.restricted ?? null,
        restrictedObserved,
        typeof adv.restricted === 'boolean' ? adv.restricted === restrictedObserved : null,
        'limit-auth-writes',
      );
      const mism: string[] = [];
      if (typeof adv.auth === 'boolean' && adv.auth !== authObserved)
        mism.push(`auth_required ${adv.auth} but a write ${authObserved ? 'needed' : 'did not need'} AUTH`);
      if (typeof adv.restricted === 'boolean' && adv.restricted !== restrictedObserved)
        mism.push(`restricted_writes ${adv.restricted} but a write was ${restrictedObserved ? 'refused' : 'accepted'}`);
      const d = { ok: a.ok, reason: a.reason, advertised: adv };
      if (mism.length) return bad(mism.join('; '), d);
      if (adv.auth === undefined && adv.restricted === undefined)
        return info(`not advertised; an unauthenticated write got OK ${a.ok} ${a.reason}`, d);
      return pass('advertised write policy matches', d);
    },
  }),
];
