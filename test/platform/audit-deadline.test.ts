// The audit's reads (shared/audit-read.ts) on a real nats-server: the ordered consumer, the leader
// gets, and a consumer given up for leader gets mid-way all read the same entries and values; a
// deadline is kept to the moment: the audit answers with how far it got even when the server does
// not answer at all (paused), and reads nothing once it has answered; `admin audit --within`
// reports the partial read and exits 4, the default audit reads everything of a small store.
import t from 'tap';
import { readdirSync, readFileSync } from 'node:fs';
import { jetstream } from '@nats-io/jetstream';
import { Kvm } from '@nats-io/kv';
import { startTestNats } from '../helpers/nats.ts';
import { audit, readBucket, readLedger } from '../../shared/audit.ts';
import { STREAMS, subjects } from '../../shared/names.ts';
import type { LedgerMessage } from '../../shared/protocol/wallet.ts';
import { admin } from '../wallet/_admin.ts';

type Tap = { teardown(fn: () => unknown): void };

/** Every thread of `pid` in state T (stopped), as /proc says. */
async function stopped(pid: number): Promise<void> {
  for (;;) {
    const states = readdirSync(`/proc/${pid}/task`).map((tid) => {
      try {
        return readFileSync(`/proc/${pid}/task/${tid}/stat`, 'utf8').replace(/^.*\) /s, '')[0];
      } catch {
        return 'T';
      }
    });
    if (states.every((st) => st === 'T')) return;
    await new Promise((res) => setTimeout(res, 10));
  }
}

const WALLETS = 30;
const ENTRIES = 3000;

const tn = await startTestNats(t);
const js = jetstream(tn.nc);
// grants with their balanceAfter chains, as the wallet writes them: a clean ledger for the audit
{
  const balance = new Map<string, number>();
  const acks = [];
  for (let i = 0; i < ENTRIES; i++) {
    const w = `w_audit${i % WALLETS}`;
    const amount = 1 + (i % 7);
    const after = (balance.get(w) ?? 0) + amount;
    balance.set(w, after);
    const m: LedgerMessage = { v: 1, type: 'grant', amount, balanceAfter: after, at: Date.now(), ref: `grant:g${i}`, reason: 'audit test' };
    acks.push(js.publish(subjects.ledger(w), JSON.stringify(m)));
    if (acks.length >= 500) await Promise.all(acks.splice(0));
  }
  await Promise.all(acks);
}

t.test('consumer, leader gets, and a consumer given up mid-way read the same entries and values', async (t) => {
  const viaConsumer = await readLedger(tn.nc);
  t.equal(viaConsumer.length, ENTRIES, 'every entry');
  t.same(
    viaConsumer.map((e) => e.seq),
    Array.from({ length: ENTRIES }, (_, i) => i + 1),
    'in sequence order',
  );
  t.same(await readLedger(tn.nc, Infinity, { consumer: false }), viaConsumer, 'leader gets: the same');
  // a consumer allowed 1 ms without a delivery is given up at once: the gets go on after what it delivered
  t.same(await readLedger(tn.nc, Infinity, { stallMs: 1 }), viaConsumer, 'consumer given up for leader gets: the same');

  const kv = await new Kvm(tn.nc).create('audit_read_test', { history: 1 });
  for (let i = 0; i < 300; i++) await kv.put(`k${i}`, JSON.stringify({ i, v: 1 }));
  for (let i = 0; i < 300; i += 15) await kv.delete(`k${i}`);
  await kv.put('k7', JSON.stringify({ i: 7, v: 2 }));
  const values = await readBucket<{ i: number; v: number }>(tn.nc, 'audit_read_test');
  t.equal(values.size, 280, 'deleted keys left out');
  t.same(values.get('k7'), { i: 7, v: 2 }, 'the current value');
  t.notOk(values.has('k15'), 'a deleted key is not read');
  const sorted = (m: Map<string, unknown>) => [...m].sort(([a], [b]) => a.localeCompare(b));
  t.same(sorted(await readBucket(tn.nc, 'audit_read_test', undefined, { consumer: false })), sorted(values), 'leader gets: the same');
  t.same(sorted(await readBucket(tn.nc, 'audit_read_test', undefined, { stallMs: 1 })), sorted(values), 'consumer given up: the same');
  t.same(
    [...(await readBucket(tn.nc, 'audit_read_test', (k) => k.endsWith('1'))).keys()].sort(),
    [...values.keys()].filter((k) => k.endsWith('1')).sort(),
    'a filter keeps its keys only',
  );

  const full = await audit(tn.nc);
  t.equal(full.complete, true);
  t.equal(full.entries, ENTRIES);
  t.equal(full.wallets, WALLETS);
  t.same(full.violations, [], 'a clean ledger');
});

/** Counts the read requests on LEDGER (gets, consumer creations and pulls) the server is asked for. */
async function ledgerReads(t: Tap) {
  const spy = await tn.connect('spy');
  let n = 0;
  const sub = spy.subscribe('$JS.API.>', {
    callback: (_e, m) => {
      if (m.subject.includes(`.${STREAMS.ledger}`)) n++;
    },
  });
  t.teardown(() => sub.unsubscribe());
  await spy.flush();
  return {
    count: async () => {
      await tn.nc.flush();
      await spy.flush();
      return n;
    },
  };
}

for (const consumer of [true, false]) {
  t.test(`a tiny deadline (${consumer ? 'consumer' : 'leader gets'}): how far it got, nothing judged, nothing read after`, async (t) => {
    const spy = await ledgerReads(t);
    const r = await audit(tn.nc, { deadline: Date.now() + 5, consumer });
    t.equal(r.complete, false, 'not complete');
    const m = /^read (\d+) of (\d+|an unknown number of) ledger entries before the deadline/.exec(r.progress);
    t.ok(m, `says how far it got: ${r.progress}`);
    t.ok(Number(m?.[1]) < ENTRIES, 'a part of the entries');
    t.same(r.violations, [], 'nothing judged');
    t.equal(r.entries, 0);
    const atAnswer = await spy.count();
    await new Promise((res) => setTimeout(res, 1500));
    t.equal(await spy.count(), atAnswer, 'no read of LEDGER after the audit answered');
  });
}

t.test('a server that does not answer: the audit answers at its deadline, saying it read nothing', async (t) => {
  const other = await startTestNats(t);
  const nc = await other.connect('paused');
  process.kill(other.server.pid, 'SIGSTOP');
  t.teardown(() => {
    try {
      process.kill(other.server.pid, 'SIGCONT');
    } catch {
      /* already gone */
    }
  });
  // kill() returns before every thread of the server has stopped: one still running answered the
  // first reads once (under load), and the audit stopped at a later bucket. Wait until all have.
  await stopped(other.server.pid);
  // with the server stopped every request hangs: the answer can only come from the deadline (the
  // reads' own 2 s timeouts ended the old audit with a TimeoutError instead)
  const r = await audit(nc, { deadline: Date.now() + 300 });
  process.kill(other.server.pid, 'SIGCONT');
  t.equal(r.complete, false);
  t.match(r.progress, /^read 0 of an unknown number of ledger entries before the deadline/);
  t.same(r.violations, []);
});

t.test('admin audit: --within reports the partial read (exit 4); the default reads the whole small store', async (t) => {
  const part = await admin(tn.server.url, ['audit', '--within', '0.001']);
  t.equal(part.code, 4, part.err);
  const m = /audit not finished within 0\.001 s: read (\d+) of (\d+|an unknown number of) ledger entries before the deadline/.exec(
    part.out,
  );
  t.ok(m, part.out);
  t.ok(Number(m?.[1]) < ENTRIES, 'a part of the entries');
  t.notMatch(part.out, /VIOLATION|ok: no violation/, 'nothing judged');
  const bad = await admin(tn.server.url, ['audit', '--within', 'soon']);
  t.equal(bad.code, 2, 'a bad --within is a usage error');
  const whole = await admin(tn.server.url, ['audit']);
  t.equal(whole.code, 0, whole.err);
  t.match(whole.out, new RegExp(`${WALLETS} wallets, ${ENTRIES} ledger entries`));
  t.match(whole.out, /ok: no violation/);
});
