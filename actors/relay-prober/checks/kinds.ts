// NIP-01 kind ranges: regular, replaceable, addressable, ephemeral.
import { def, pass, bad, skip, dataset, filterCheck, openLive, short, type CheckDef } from './common.ts';
import { RULES } from './rules.ts';

export const KIND_CHECKS: CheckDef[] = [
  def({
    id: 'kind-regular',
    title: 'Regular events are stored',
    module: 'conformance',
    needsDataset: true,
    basis: RULES.regularStored,
    minRoundTrips: 1,
    async run(p) {
      const ds = await dataset(p);
      return filterCheck(p, 'kind-regular', [{ ids: ds.notes.map((e) => e.id) }], { describe: 'regular kind-1 notes by id' });
    },
  }),
  def({
    id: 'kind-replaceable',
    title: 'Replaceable events: only the latest is served',
    module: 'conformance',
    needsDataset: true,
    basis: RULES.replaceableStored,
    minRoundTrips: 1,
    async run(p) {
      const ds = await dataset(p);
      return filterCheck(p, 'kind-replaceable', [{ authors: [p.pk], kinds: [0] }], {
        describe: 'kind 0 of the test key',
        expectIds: [ds.repl.newer.id],
        missingRule: RULES.replaceableStored,
      });
    },
  }),
  def({
    id: 'kind-addressable',
    title: 'Addressable events: only the latest per d tag',
    module: 'conformance',
    needsDataset: true,
    basis: RULES.addressableStored,
    minRoundTrips: 1,
    async run(p) {
      const ds = await dataset(p);
      return filterCheck(p, 'kind-addressable', [{ authors: [p.pk], kinds: [30078] }], {
        describe: 'kind 30078 of the test key',
        expectIds: [ds.addr.newer.id, ds.addr.other.id],
        missingRule: RULES.addressableStored,
      });
    },
  }),
  def({
    id: 'kind-replaceable-older',
    title: 'An older replaceable version is refused or hidden',
    module: 'conformance',
    needsDataset: true,
    basis: RULES.replaceableStored,
    minRoundTrips: 2,
    async run(p) {
      const ds = await dataset(p);
      const a = await p.publish(ds.repl.oldest);
      const r = await p.req([{ authors: [p.pk], kinds: [0] }]);
      const ids = r.events.map((e) => e.id);
      const d = { ok: a.ok, reason: a.reason, returned: ids.map(short) };
      if (!ids.includes(ds.repl.newer.id))
        return bad(
          ids.includes(ds.repl.oldest.id)
            ? 'an older version sent after the newer one replaced it'
            : 'the newest version is gone after an older one was sent',
          d,
        );
      if (ids.includes(ds.repl.oldest.id))
        return bad('an older version sent after the newer one is served beside it', d, RULES.replaceableServed);
      return pass(a.ok === false ? `refused (${a.reason})` : 'accepted but the newer version is still the one served', d);
    },
  }),
  def({
    id: 'kind-ephemeral',
    title: 'Ephemeral events delivered live, not stored',
    module: 'conformance',
    basis: RULES.ephemeral,
    minRoundTrips: 4,
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
      if (!d.delivered) return bad('not delivered to a live subscriber', d, RULES.liveDelivery);
      // "not expected to be stored": some relays keep ephemeral events for a short window on purpose
      if (d.stored) return bad('served from storage right afterwards (NIP-01 only says ephemeral events are not expected to be stored)', d);
      return pass('delivered live and not stored', d);
    },
  }),
];
