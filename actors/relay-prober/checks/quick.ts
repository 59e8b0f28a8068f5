// The quick module: transport, NIP-11, publish/read/live basics, latency, reconnect, idle, clean-up.
import { def, pass, bad, skip, info, warn, quickNote, openLive, writeRefused, percentiles, type CheckDef } from './common.ts';
import { RULES } from './rules.ts';
import { verifyEvent } from 'nostr-tools/pure';
import { BudgetExceeded, hasPrefix } from '../probe.ts';
import { cleanup } from './cleanup.ts';

export const QUICK_CHECKS: CheckDef[] = [
  def({
    id: 'dns',
    title: 'Host name resolves to a public address',
    module: 'quick',
    basis: RULES.endpoint,
    minRoundTrips: 0,
    async run(p) {
      const a = await p.resolve();
      return pass(`${a.host} → ${a.address}`, { address: a.address, family: a.family });
    },
  }),
  def({
    id: 'tcp',
    title: 'TCP connection opens',
    module: 'quick',
    basis: RULES.endpoint,
    minRoundTrips: 0,
    async run(p) {
      const c = await p.conn();
      return pass(`connected in ${Math.round(c.connectMs)} ms (TCP, TLS and upgrade)`, { connectMs: Math.round(c.connectMs) });
    },
  }),
  def({
    id: 'tls',
    title: 'TLS certificate chain, name and expiry',
    module: 'quick',
    basis: RULES.tls,
    minRoundTrips: 0,
    async run(p) {
      if (p.url.protocol === 'ws:') return skip('ws:// relay: no TLS');
      const c = await p.conn();
      const t = c.tls;
      if (!t) return bad('no TLS session information');
      if (!t.authorized) return bad(`certificate not trusted: ${t.error}`, t);
      const days = t.validTo ? (Date.parse(t.validTo) - Date.now()) / 86400_000 : null;
      if (days !== null && days < 14)
        return warn(`certificate expires in ${Math.max(0, Math.floor(days))} day(s)`, { ...t, daysLeft: Math.floor(days) });
      return pass(`trusted certificate for ${p.url.hostname}${days !== null ? `, ${Math.floor(days)} days left` : ''} (${t.protocol})`, {
        ...t,
        daysLeft: days === null ? null : Math.floor(days),
      });
    },
  }),
  def({
    id: 'websocket',
    title: 'WebSocket upgrade on the relay URL',
    module: 'quick',
    basis: RULES.websocket,
    minRoundTrips: 0,
    async run(p) {
      await p.conn();
      return pass(`upgraded to WebSocket at ${p.url.href}`);
    },
  }),
  def({
    id: 'nip11-served',
    title: 'NIP-11 document served for Accept: application/nostr+json',
    module: 'quick',
    basis: RULES.nip11Document,
    minRoundTrips: 0,
    async run(p) {
      const f = await p.fetchNip11();
      p.observe('supported_nips: 11', p.advertisesNip(11), !!f.doc, f.doc ? true : null, 'nip11-served');
      if (f.error) return bad(`no NIP-11 document: ${f.error}`);
      if (f.status !== 200 || !f.doc)
        return bad(`no NIP-11 document (HTTP ${f.status}, ${f.contentType ?? 'no content type'})`, {
          status: f.status,
          contentType: f.contentType,
          body: f.body.slice(0, 200),
        });
      // NIP-11 names the Accept header of the request, not the response's type: a JSON document
      // served as application/json is what the NIP asks for
      if (!String(f.contentType).includes('application/nostr+json'))
        return pass(`NIP-11 document served (as ${f.contentType}; NIP-11 names no response type)`, {
          contentType: f.contentType,
          name: f.doc.name ?? null,
        });
      return pass('NIP-11 document served', { contentType: f.contentType, name: f.doc.name ?? null });
    },
  }),
  def({
    id: 'nip11-cors',
    title: 'NIP-11 CORS headers',
    module: 'quick',
    basis: RULES.nip11Cors,
    minRoundTrips: 0,
    async run(p) {
      const f = await p.fetchNip11();
      if (!f.doc) return skip('no NIP-11 document');
      const need = ['access-control-allow-origin', 'access-control-allow-headers', 'access-control-allow-methods'];
      const missing = need.filter((h) => !f.headers[h]);
      const got = Object.fromEntries(need.map((h) => [h, f.headers[h] ?? null]));
      if (missing.length) return bad(`missing ${missing.join(', ')}`, got);
      return pass('Access-Control-Allow-Origin, -Headers and -Methods sent', got);
    },
  }),
  def({
    id: 'nip11-fields',
    title: 'NIP-11 field types',
    module: 'quick',
    basis: RULES.nip11Document,
    minRoundTrips: 0,
    async run(p) {
      const f = await p.fetchNip11();
      const d = f.doc;
      if (!d) return skip('no NIP-11 document');
      const wrong: string[] = [];
      for (const k of [
        'name',
        'description',
        'contact',
        'software',
        'version',
        'icon',
        'banner',
        'privacy_policy',
        'terms_of_service',
        'posting_policy',
      ])
        if (k in d && typeof d[k] !== 'string') wrong.push(`${k} is not a string`);
      for (const k of ['pubkey', 'self'])
        if (k in d && !(typeof d[k] === 'string' && /^[0-9a-f]{64}$/.test(d[k] as string))) wrong.push(`${k} is not 64 lowercase hex`);
      if ('supported_nips' in d && !(Array.isArray(d.supported_nips) && d.supported_nips.every((n) => Number.isInteger(n))))
        wrong.push('supported_nips is not a list of integers');
      if ('limitation' in d) {
        const l = d.limitation as Record<string, unknown>;
        if (!l || typeof l !== 'object' || Array.isArray(l)) wrong.push('limitation is not an object');
        else {
          for (const k of [
            'max_message_length',
            'max_subscriptions',
            'max_limit',
            'max_subid_length',
            'max_event_tags',
            'max_content_length',
            'min_pow_difficulty',
            'created_at_lower_limit',
            'created_at_upper_limit',
            'default_limit',
          ])
            if (k in l && !Number.isInteger(l[k])) wrong.push(`limitation.${k} is not an integer`);
          for (const k of ['auth_required', 'payment_required', 'restricted_writes'])
            if (k in l && typeof l[k] !== 'boolean') wrong.push(`limitation.${k} is not a boolean`);
        }
      }
      if (wrong.length) return bad(wrong.join('; '), { wrong });
      return pass(`${Object.keys(d).length} field(s), all well typed`, { fields: Object.keys(d) });
    },
  }),
  def({
    id: 'req-eose',
    title: 'REQ answered with EOSE',
    module: 'quick',
    basis: RULES.reqAnswered,
    minRoundTrips: 1,
    async run(p) {
      const r = await p.req([{ kinds: [1], limit: 1 }], undefined, { latency: true });
      if (r.end === 'EOSE') return pass(`EOSE after ${Math.round(r.ms)} ms with ${r.events.length} event(s)`, { ms: Math.round(r.ms) });
      if (r.end === 'CLOSED' && hasPrefix(r.reason)) return skip(`REQ refused: ${r.reason}`);
      return bad(
        r.end === 'CLOSED' ? `CLOSED without a machine-readable prefix: "${r.reason}"` : `no EOSE within ${p.timings.replyTimeoutMs} ms`,
        { notices: r.notices },
        r.end === 'CLOSED' ? RULES.closedPrefix : RULES.reqAnswered,
      );
    },
  }),
  def({
    id: 'publish-ok',
    title: 'EVENT answered with OK',
    module: 'quick',
    basis: RULES.okSent,
    minRoundTrips: 1,
    async run(p) {
      const { ev, a } = await quickNote(p);
      if (a.ok === true) return pass(`OK true after ${Math.round(a.ms)} ms`, { id: ev.id, reason: a.reason });
      if (writeRefused(a)) {
        p.observe(
          'limitation.restricted_writes',
          p.limitation.restricted_writes ?? null,
          true,
          p.limitation.restricted_writes === undefined ? null : p.limitation.restricted_writes === true,
          'publish-ok',
        );
        return skip(`writes are restricted: ${a.reason}`, { reason: a.reason });
      }
      const c = await p.conn();
      if (a.ok === null)
        return bad(c.closed ? 'the relay closed the connection instead of answering OK' : `no OK within ${p.timings.replyTimeoutMs} ms`);
      return bad(`test note refused: ${a.reason || '(no reason)'}`, { reason: a.reason });
    },
  }),
  def({
    id: 'read-back',
    title: 'Published event can be read back',
    module: 'quick',
    basis: RULES.regularStored,
    minRoundTrips: 1,
    async run(p) {
      const { ev, a } = await quickNote(p);
      if (a.ok !== true) return skip('nothing was published');
      const r = await p.req([{ ids: [ev.id] }]);
      const back = r.events.find((e) => e.id === ev.id);
      if (!back) return bad('accepted with OK true but not served back (dropped?)', { id: ev.id, end: r.end });
      if (JSON.stringify(back) !== JSON.stringify(ev) && !(verifyEvent({ ...back }) && back.content === ev.content))
        return bad('served back altered', { sent: ev, got: back }, RULES.signature);
      return pass('served back identical', { id: ev.id });
    },
  }),
  def({
    id: 'live-delivery',
    title: 'New events reach open subscriptions',
    module: 'quick',
    basis: RULES.liveDelivery,
    minRoundTrips: 3,
    async run(p) {
      const sub = await p.open();
      const tag = `live-${Math.random().toString(36).slice(2, 8)}`;
      const id = await openLive(p, sub, { authors: [p.pk], '#t': [tag] });
      if (!id) return bad('subscription not confirmed with EOSE');
      const ev = p.sign({ kind: 1, content: 'labs test: live delivery', tags: [['t', tag]] });
      const a = await p.publishAuthed(ev);
      if (a.ok !== true) return skip(`test event not accepted: ${a.reason || 'no OK'}`);
      const got = await p.live(sub, id, p.timings.replyTimeoutMs, (e) => e.id === ev.id);
      p.close(sub, id);
      if (got.some((e) => e.id === ev.id)) return pass('delivered to the other connection');
      return bad(`not delivered within ${p.timings.replyTimeoutMs} ms`);
    },
  }),
  def({
    id: 'latency',
    title: 'Latency: connect, EOSE, OK',
    module: 'quick',
    basis: RULES.measurement,
    minRoundTrips: (t) => 3 * t.latencySamples + 1,
    async run(p) {
      const n = p.timings.latencySamples;
      p.progress(`measuring latency (${n} samples)`);
      for (let i = 0; i < n; i++) {
        const c = await p.open();
        c.close();
      }
      const c = await p.conn();
      for (let i = 0; i < n; i++) await p.req([{ kinds: [1], authors: [p.pk], limit: 1 }], c, { latency: true });
      // OK latency with ephemeral events a subscriber listens to (some relays drop unheard ones)
      const sid = await openLive(p, c, { authors: [p.pk], kinds: [20_777] });
      for (let i = 0; i < n; i++) await p.publish(p.sign({ kind: 20_777, content: `labs test: latency ${i}` }), c, { latency: true });
      if (sid) p.close(c, sid);
      c.drain((m) => m[0] === 'EVENT' && m[1] === sid);
      const d = { connect: percentiles(p.latency.connect), eose: percentiles(p.latency.eose), ok: percentiles(p.latency.ok) };
      return info(`p50: connect ${d.connect?.p50 ?? '-'} ms, EOSE ${d.eose?.p50 ?? '-'} ms, OK ${d.ok?.p50 ?? '-'} ms`, d);
    },
  }),
  def({
    id: 'reconnect',
    title: 'Reconnects after a close',
    module: 'quick',
    basis: RULES.connectionsMay,
    minRoundTrips: 2,
    async run(p) {
      const c1 = await p.open();
      c1.close();
      await c1.waitClose(p.timings.replyTimeoutMs);
      let c2;
      try {
        c2 = await p.open();
      } catch (e) {
        if (e instanceof BudgetExceeded) throw e;
        return bad(`could not connect again: ${(e as Error).message}`);
      }
      const r = await p.req([{ kinds: [1], authors: [p.pk], limit: 1 }], c2);
      c2.close();
      if (r.end === 'EOSE') return pass('new connection answers right after a close');
      return bad('the new connection does not answer a REQ');
    },
  }),
  def({
    id: 'idle',
    title: 'Connection survives idle time',
    module: 'quick',
    basis: RULES.killSubscriptionMay,
    minRoundTrips: 2,
    async run(p) {
      const c = await p.open();
      p.progress(`idle for ${Math.round(p.timings.idleMs / 1000)} s`);
      const closed = await c.waitClose(p.timings.idleMs);
      if (closed) return bad(`closed by the relay after less than ${p.timings.idleMs} ms idle (code ${c.closeCode})`);
      const r = await p.req([{ kinds: [1], authors: [p.pk], limit: 1 }], c);
      c.close();
      if (r.end !== 'EOSE') return bad(`no answer after ${p.timings.idleMs} ms idle`);
      return pass(`still answering after ${p.timings.idleMs} ms idle`);
    },
  }),
  def({
    id: 'cleanup',
    title: 'Test events deleted with NIP-09',
    module: 'quick',
    basis: RULES.deletion,
    minRoundTrips: 2,
    async run(p) {
      const r = await cleanup(p);
      if (r.stored === 0) return skip('no test events were stored');
      if (r.honoured) return pass(`${r.stored} test event(s) deleted`, r);
      return bad(`${r.remaining.length} of ${r.stored} test event(s) still served after NIP-09 deletion`, r);
    },
  }),
];
