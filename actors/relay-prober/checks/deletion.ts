// NIP-09 deletion requests.
import { def, pass, bad, skip, now, type CheckDef } from './common.ts';
import { RULES } from './rules.ts';

export const DELETION_CHECKS: CheckDef[] = [
  def({
    id: 'delete-e',
    title: 'Deletion by e tag',
    module: 'conformance',
    basis: RULES.deletion,
    minRoundTrips: 4,
    async run(p) {
      const ev = p.sign({ kind: 1, content: 'labs test: to be deleted' });
      if ((await p.publishAuthed(ev)).ok !== true) return skip('test event not accepted');
      const del = p.sign({
        kind: 5,
        content: 'labs test clean-up',
        tags: [
          ['e', ev.id],
          ['k', '1'],
        ],
      });
      const a = await p.publishAuthed(del);
      if (a.ok !== true) return bad(`deletion request refused: ${a.reason || 'no OK'}`);
      p.deleted.add(ev.id);
      const r = await p.req([{ ids: [ev.id, del.id] }]);
      const ids = r.events.map((e) => e.id);
      const d = { deletedStillServed: ids.includes(ev.id), deletionRequestServed: ids.includes(del.id) };
      if (d.deletedStillServed) return bad('the deleted event is still served', d);
      return pass(
        d.deletionRequestServed
          ? 'deleted; the deletion request is served'
          : 'deleted (the deletion request itself is not served, which NIP-09 says it should be)',
        d,
      );
    },
  }),
  def({
    id: 'delete-a',
    title: 'Deletion by a tag up to its time',
    module: 'conformance',
    basis: RULES.deletionA,
    minRoundTrips: 5,
    async run(p) {
      const t = now();
      const ev = p.sign({ kind: 30078, created_at: t - 5, content: 'labs test: addressable to delete', tags: [['d', 'labs-del']] });
      if ((await p.publishAuthed(ev)).ok !== true) return skip('test event not accepted');
      const del = p.sign({
        kind: 5,
        created_at: t,
        content: 'labs test clean-up',
        tags: [
          ['a', `30078:${p.pk}:labs-del`],
          ['k', '30078'],
        ],
      });
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
    },
  }),
  def({
    id: 'delete-others',
    title: "Deletion does not remove someone else's event",
    module: 'conformance',
    basis: RULES.deletion,
    minRoundTrips: 3,
    async run(p) {
      const other = p.sign({ kind: 1, content: 'labs test: someone else' }, 1);
      if ((await p.publishAuthed(other)).ok !== true) return skip('test event not accepted');
      const del = p.sign({ kind: 5, content: 'labs test: deleting what is not mine', tags: [['e', other.id]] }, 0);
      const a = await p.publish(del);
      const r = await p.req([{ ids: [other.id] }]);
      if (!r.events.length) return bad("another key's event was deleted", { ok: a.ok, reason: a.reason });
      return pass(`survives (${a.ok === false ? `request refused: ${a.reason}` : 'request accepted, not applied'})`);
    },
  }),
];
