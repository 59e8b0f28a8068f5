// Issue 44 item 2: top-ups grew storage for ever. Each POST /v1/topups made a real invoice and a
// `topups` document kept with no expiry, any number of them per wallet, and every GET of a pending
// one asked the Lightning node. Now: at most wallet.lightning.maxUnpaidTopups unpaid per wallet (429
// with `limit: "unpaidTopups"`), a top-up that ended unpaid leaves the bucket after
// wallet.lightning.unpaidRetentionSeconds, and a client's polls ask the node at most every 2 s.
import t from 'tap';
import { jetstreamManager } from '@nats-io/jetstream';
import { startTestApp } from '../helpers/app.ts';
import { startClnNode } from '../helpers/lightning-node.ts';
import { BUCKETS } from '../../shared/names.ts';
import { LOOKUP_REUSE_MS } from '../../actors/wallet/topups.ts';

t.test('unpaid top-ups: capped per wallet, polls cached, gone after their retention', async (t) => {
  const node = await startClnNode(t);
  const app = await startTestApp(t, {
    actors: ['wallet'],
    config: { wallet: { lightning: { ...node.lightning, maxUnpaidTopups: 2, unpaidRetentionSeconds: 1 } } },
  });
  const { key } = await app.newKey();
  const topup = () => app.request('POST', '/v1/topups', { key, body: { eur: 1 } });
  const a = await topup();
  t.equal(a.status, 201, a.text);
  t.equal((await topup()).status, 201);
  const over = await topup();
  t.equal(over.status, 429, over.text);
  t.match(over.json.error, { code: 'rate_limited', limit: 'unpaidTopups' });
  t.equal(node.invoices.size, 2, 'no third invoice at the node');
  const other = await app.newKey();
  t.equal((await app.request('POST', '/v1/topups', { key: other.key, body: { eur: 1 } })).status, 201, 'another wallet has its own cap');

  // 30 polls of one pending top-up within a second: the node is asked once or twice, not 30 times
  const before = node.lookups();
  const polls: number[] = [];
  const t0 = Date.now();
  for (let i = 0; i < 30; i++) polls.push((await app.request('GET', `/v1/topups/${a.json.topup.id}`, { key })).status);
  // the bound is counted, not timed: one lookup per LOOKUP_REUSE_MS of the polls (a busy machine makes
  // them slower) plus the wallet's own background checks in that time; uncached it would be 30
  const took = Date.now() - t0;
  const bound = Math.ceil(took / LOOKUP_REUSE_MS) + Math.ceil(took / app.config.wallet.lightning.pollMs) + 1;
  t.ok(
    polls.every((s) => s === 200),
    'every poll answered',
  );
  t.ok(node.lookups() - before <= Math.min(bound, 10), `node asked ${node.lookups() - before} times for 30 polls in ${took} ms`);

  // the first invoice expires at the node: the top-up ends unpaid, frees a place, then leaves the bucket
  [...node.invoices.values()][0]!.status = 'expired'; // the first invoice made: a's
  await new Promise((r) => setTimeout(r, 2100)); // past the poll cache
  const ended = await app.request('GET', `/v1/topups/${a.json.topup.id}`, { key });
  t.equal(ended.json.topup.status, 'expired');
  t.equal((await topup()).status, 201, 'an ended top-up frees its place');

  const jsm = await jetstreamManager(app.nc);
  const subject = `$KV.${BUCKETS.topups}.${a.json.topup.id}`;
  const left = async () => (await jsm.streams.info(`KV_${BUCKETS.topups}`, { subjects_filter: subject })).state.subjects?.[subject] ?? 0;
  let gone = false;
  for (let i = 0; i < 100 && !gone; i++) {
    gone = (await left()) === 0;
    if (!gone) await new Promise((r) => setTimeout(r, 200));
  }
  t.ok(gone, 'the unpaid top-up left the bucket after its retention (no message, no marker)');
  t.equal((await app.request('GET', `/v1/topups/${a.json.topup.id}`, { key })).status, 404);
});
