// The final NIP-09 clean-up of every stored test event.
import { short } from './common.ts';
import type { Probe } from '../probe.ts';

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

