// The NIP-09 clean-up of the test events: at the end of every module, and also when a module
// stops early (timeout, a fatal error, the actor stopping) after it published something.
import { short } from './common.ts';
import type { Probe } from '../probe.ts';
import type { RelayConn } from '../conn.ts';

export type CleanupResult = {
  stored: number;
  remaining: string[];
  honoured: boolean | null;
  requests: number;
};

/** Delete every test event not yet deleted (one kind-5 request per key) and see what is still served. */
export async function deleteTestEvents(p: Probe, c: RelayConn | null): Promise<CleanupResult> {
  // events whose OK never came may still have been stored: they are named in the request too
  const all = [...p.stored.values(), ...p.unconfirmed.values()];
  const pending = all.filter((e) => !p.deleted.has(e.id));
  if (!all.length) return { stored: 0, remaining: [], honoured: null, requests: 0 };
  p.progress('deleting the test events (NIP-09)');
  p.cleaning = true;
  let requests = 0;
  if (!c) return { stored: p.stored.size, remaining: all.map((e) => short(e.id)), honoured: null, requests };
  for (const [i, k] of p.keys.entries()) {
    const mine = pending.filter((e) => e.pubkey === k.pk);
    if (!mine.length) continue;
    const tags: string[][] = [];
    for (const e of mine) {
      tags.push(['e', e.id]);
      const d = e.tags.find((t) => t[0] === 'd')?.[1];
      if (e.kind >= 30000 && e.kind < 40000) tags.push(['a', `${e.kind}:${e.pubkey}:${d ?? ''}`]);
      if (e.kind === 0 || e.kind === 3 || (e.kind >= 10000 && e.kind < 20000)) tags.push(['a', `${e.kind}:${e.pubkey}:`]);
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
  return { stored: p.stored.size, remaining: remaining.map(short), honoured: r ? remaining.length === 0 : null, requests };
}

/** The end-of-module clean-up (once per run; the `cleanup` check reads the same result). */
export function cleanup(p: Probe) {
  // on the connection reserved for it when the module's own budget is used up
  return p.once('cleanup', async () =>
    deleteTestEvents(p, p.stored.size || p.unconfirmed.size ? await p.conn({ forCleanup: true }).catch(() => null) : null),
  );
}

/**
 * Clean-up of a run that stopped early: its connections are closed, so a fresh one is opened for
 * the deletion alone, and the whole thing is bounded so a dead relay cannot hold the task.
 */
export async function cleanupAfterStop(p: Probe, boundMs: number): Promise<CleanupResult | null> {
  if (![...p.stored.keys(), ...p.unconfirmed.keys()].some((id) => !p.deleted.has(id))) return null;
  let c: RelayConn | null = null;
  let timer: NodeJS.Timeout | undefined;
  let over = false;
  try {
    return await Promise.race([
      (async () => {
        const conn = await p.open({ forCleanup: true });
        // opened after the bound ran out: nobody is left to close it but us
        if (over) {
          conn.close();
          return null;
        }
        c = conn;
        return deleteTestEvents(p, conn);
      })(),
      new Promise<null>((r) => {
        timer = setTimeout(() => r(null), boundMs);
      }),
    ]);
  } catch {
    return null;
  } finally {
    over = true;
    clearTimeout(timer);
    (c as RelayConn | null)?.close();
  }
}
