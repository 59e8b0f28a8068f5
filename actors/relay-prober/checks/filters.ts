// NIP-01 filter checks, all against the test dataset.
import { def, pass, bad, skip, dataset, filterCheck, openLive, extrasSeen, short, type CheckDef, type Dataset } from './common.ts';
import { RULES } from './rules.ts';
import type { Filter } from 'nostr-tools/filter';
import type { Rule } from './rules.ts';

export function filterChecks(): CheckDef[] {
  type F = {
    id: string;
    title: string;
    rule?: Rule;
    missingRule?: Rule;
    filters: (d: Dataset, pk: string) => Filter[];
    describe: string;
    expect?: (d: Dataset) => string[];
  };
  const fs: F[] = [
    {
      id: 'filter-ids',
      title: 'Filter by ids',
      filters: (d) => [{ ids: [d.notes[1]!.id, d.notes[3]!.id] }],
      describe: 'ids',
      rule: RULES.filterList,
    },
    {
      id: 'filter-authors',
      title: 'Filter by authors',
      filters: (d, pk) => [{ authors: [pk], until: d.base }],
      describe: 'authors',
      rule: RULES.filterList,
    },
    {
      id: 'filter-kinds',
      title: 'Filter by kinds',
      filters: (d, pk) => [{ authors: [pk], kinds: [0, 9999] }],
      describe: 'kinds 0 and 9999',
      rule: RULES.filterList,
    },
    {
      id: 'filter-e',
      title: 'Filter by #e',
      filters: (d, pk) => [{ authors: [pk], '#e': [d.refs.e1] }],
      describe: '#e',
      rule: RULES.filterList,
      missingRule: RULES.tagIndex,
    },
    {
      id: 'filter-p',
      title: 'Filter by #p',
      filters: (d, pk) => [{ authors: [pk], '#p': [d.refs.pB] }],
      describe: '#p',
      rule: RULES.filterList,
      missingRule: RULES.tagIndex,
    },
    {
      id: 'filter-tag',
      title: 'Filter by other single-letter tags',
      filters: (d, pk) => [
        { authors: [pk], '#t': ['gamma'] },
        { authors: [pk], '#l': ['labs-label'] },
      ],
      describe: '#t and #l',
      rule: RULES.filterList,
      missingRule: RULES.tagIndex,
    },
    {
      id: 'filter-or-list',
      title: 'Values in a list are OR',
      filters: (d, pk) => [{ authors: [pk], '#t': ['alpha', 'beta'] }],
      describe: '#t alpha or beta',
      rule: RULES.filterList,
    },
    {
      id: 'filter-and',
      title: 'Fields are AND',
      filters: (d, pk) => [{ authors: [pk], kinds: [1], '#t': ['alpha'], since: d.base - 25 }],
      describe: 'kind 1 and #t alpha and since',
    },
    {
      id: 'filter-or-filters',
      title: 'Several filters are OR',
      filters: (d, pk) => [{ ids: [d.notes[0]!.id] }, { authors: [pk], '#t': ['gamma'] }],
      describe: 'two filters',
      rule: RULES.filterAnd,
    },
    {
      id: 'filter-since',
      title: 'since',
      filters: (d, pk) => [{ authors: [pk], kinds: [1], since: d.base - 25 }],
      describe: 'since',
      rule: RULES.filterTime,
    },
    {
      id: 'filter-until',
      title: 'until',
      filters: (d, pk) => [{ authors: [pk], kinds: [1], until: d.base - 25 }],
      describe: 'until',
      rule: RULES.filterTime,
    },
    {
      id: 'filter-bounds',
      title: 'since and until are inclusive',
      filters: (d, pk) => [{ authors: [pk], kinds: [1], since: d.base - 30, until: d.base - 20 }],
      describe: 'since = until bounds',
      rule: RULES.filterTime,
    },
  ];
  const out: CheckDef[] = fs.map((f) =>
    def({
      id: f.id,
      title: f.title,
      module: 'conformance',
      needsDataset: true,
      basis: f.rule ?? RULES.filterAnd,
      minRoundTrips: 1,
      async run(p) {
        const ds = await dataset(p);
        return filterCheck(p, f.id, f.filters(ds, p.pk), {
          describe: f.describe,
          ...(f.missingRule ? { missingRule: f.missingRule } : {}),
          ...(f.expect ? { expectIds: f.expect(ds) } : {}),
        });
      },
    }),
  );
  out.push(
    def({
      id: 'filter-limit',
      title: 'limit returns the newest events',
      module: 'conformance',
      needsDataset: true,
      basis: RULES.limitNewest,
      minRoundTrips: 1,
      async run(p) {
        const ds = await dataset(p);
        const r = await p.req([{ authors: [p.pk], kinds: [1], limit: 2 }]);
        const ids = r.events.map((e) => e.id);
        const [, , n3, n4, n5] = ds.notes;
        const d = { returned: ids.map(short) };
        if (ids.length !== 2) return bad(`${ids.length} events for limit 2`, d);
        if (!ids.includes(n5!.id) || !(ids.includes(n3!.id) || ids.includes(n4!.id))) return bad('limit 2 did not return the 2 newest', d);
        return pass('the 2 newest returned', d);
      },
    }),
    def({
      id: 'filter-limit-zero',
      title: 'limit 0 returns no stored events',
      module: 'conformance',
      needsDataset: true,
      basis: RULES.limitCount,
      minRoundTrips: 1,
      async run(p) {
        await dataset(p);
        const r = await p.req([{ authors: [p.pk], kinds: [1], limit: 0 }]);
        if (r.end !== 'EOSE') return bad(`no EOSE (${r.end ?? 'timeout'} ${r.reason})`);
        return r.events.length ? bad(`${r.events.length} stored event(s) for limit 0`) : pass('EOSE with no stored events');
      },
    }),
    def({
      id: 'filter-order',
      title: 'Newest first, ties by lowest id',
      module: 'conformance',
      needsDataset: true,
      basis: RULES.limitOrder,
      minRoundTrips: 1,
      async run(p) {
        await dataset(p);
        const r = await p.req([{ authors: [p.pk], kinds: [1], limit: 10 }]);
        const ev = r.events;
        const wrong = ev.findIndex(
          (e, i) => i > 0 && (ev[i - 1]!.created_at < e.created_at || (ev[i - 1]!.created_at === e.created_at && ev[i - 1]!.id > e.id)),
        );
        const d = { order: ev.map((e) => `${e.created_at}:${short(e.id)}`) };
        if (ev.length < 2) return skip('fewer than 2 events returned', d);
        return wrong < 0 ? pass(`${ev.length} events newest first, tie by lowest id`, d) : bad(`out of order at position ${wrong}`, d);
      },
    }),
    def({
      id: 'filter-limit-live',
      title: 'limit does not apply to live events',
      module: 'conformance',
      basis: RULES.limitLive,
      minRoundTrips: 4,
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
        return n === 2
          ? pass('both live events delivered to a limit-1 subscription')
          : bad(`${n} of 2 live events delivered to a limit-1 subscription`);
      },
    }),
    def({
      id: 'filter-nonmatching',
      title: 'Nothing that does not match',
      module: 'conformance',
      needsDataset: true,
      basis: RULES.filterAnd,
      minRoundTrips: 4,
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
      },
    }),
  );
  return out;
}
