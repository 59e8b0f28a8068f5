// Issue 44 item 3: each GET /account/challenge was a fsynced write to the `limits` bucket, kept 2 h,
// for anyone, and with IPv6 an attacker has a /64 (a fresh per-address limit) per request. Challenges
// are now stateless (an HMAC over expiry, difficulty and address, gateway/pow.ts): issuing writes
// nothing, and spent ids are kept in a bounded set in memory, with a record per key made as the
// backstop across gateways.
import t from 'tap';
import v8 from 'node:v8';
import vm from 'node:vm';
import { jetstreamManager } from '@nats-io/jetstream';
import { startTestApp } from '../helpers/app.ts';
import { testLog } from '../helpers/nats.ts';
import { startGateway } from '../../gateway/index.ts';
import { powBits, SpentChallenges } from '../../gateway/pow.ts';

v8.setFlagsFromString('--expose-gc');
const gc = vm.runInNewContext('gc') as () => void;
const heapAfterGc = () => {
  for (let i = 0; i < 3; i++) gc();
  return process.memoryUsage().heapUsed;
};
const solve = (id: string, bits: number) => {
  for (let n = 0; ; n++) if (powBits(id, String(n)) >= bits) return String(n);
};
/** A client in /64 number i (through the trusted proxy on loopback). */
const from = (i: number) => ({ 'x-forwarded-for': `2001:db8:${(i >> 16).toString(16)}:${(i & 0xffff).toString(16)}::1` });

t.test('5,000 challenges from 5,000 /64s write nothing durable and leave the heap flat', async (t) => {
  const app = await startTestApp(t, {
    config: { server: { trustedProxies: ['loopback'], publicRequestsPerMinute: 100_000 }, wallet: { keyPowBits: 8 } },
  });
  const jsm = await jetstreamManager(app.nc);
  const stored = async () => {
    let n = 0;
    for (const s of ['KV_limits', 'KV_keys', 'KV_idempotency']) n += (await jsm.streams.info(s)).state.messages;
    return n;
  };
  const challenges = async (first: number, n: number) => {
    for (let i = first; i < first + n; i += 50)
      await Promise.all(
        Array.from({ length: 50 }, async (_, j) => {
          const r = await app.request('GET', '/account/challenge', { headers: from(i + j) });
          if (r.status !== 200) throw new Error(`challenge ${i + j}: ${r.status}`);
        }),
      );
  };
  await challenges(1_000_000, 500); // warm-up: the deployment's secret is made once, the HTTP client's pool, the JIT
  const before = await stored();
  const heapBefore = heapAfterGc();
  const N = 5000;
  await challenges(1, N);
  const heapAfter = heapAfterGc();
  t.equal(await stored(), before, `${N} challenges: no message added to the limits, keys or idempotency streams`);
  t.ok(
    heapAfter - heapBefore < 8 * 1024 * 1024,
    `heap after GC ${(heapBefore / 1e6).toFixed(1)} → ${(heapAfter / 1e6).toFixed(1)} MB (less than 8 MB more)`,
  );
});

t.test('a stateless challenge: bound to its address, spent once on every gateway', async (t) => {
  const app = await startTestApp(t, {
    actors: ['wallet'],
    config: { server: { trustedProxies: ['loopback'] }, wallet: { keyPowBits: 8 } },
  });
  const ch = (await app.request('GET', '/account/challenge', { headers: from(1) })).json;
  t.match(ch, { id: /^[0-9a-f]{40}$/, bits: 8, expiresAt: Number });
  const nonce = solve(ch.id, 8);
  const other = await app.request('POST', '/account/keys', { headers: from(2), body: { id: ch.id, nonce } });
  t.equal(other.status, 400, 'another /64 cannot use it');
  const forged = `${ch.id.slice(0, 8)}${'0'.repeat(8)}${ch.id.slice(16)}`;
  t.equal((await app.request('POST', '/account/keys', { headers: from(1), body: { id: forged, nonce } })).status, 400, 'an altered id');
  const past = `${Math.floor(Date.now() / 1000 - 1)
    .toString(16)
    .padStart(8, '0')}${ch.id.slice(8)}`;
  t.equal((await app.request('POST', '/account/keys', { headers: from(1), body: { id: past, nonce } })).status, 400, 'an earlier expiry');
  const made = await app.request('POST', '/account/keys', { headers: from(1), body: { id: ch.id, nonce } });
  t.equal(made.status, 201);
  const again = await app.request('POST', '/account/keys', { headers: from(1), body: { id: ch.id, nonce } });
  t.equal(again.status, 400, 'spent on this gateway');
  t.match(again.json.error.message, /used already/);

  // a second gateway of the deployment: it checks the first one's challenges, and knows what was spent
  const gw2 = await startGateway({ nc: await app.connect('gw2'), config: app.config, log: testLog(), instanceId: 'gw-2' });
  t.teardown(() => gw2.stop());
  const at2 = (body: unknown) =>
    fetch(`http://127.0.0.1:${gw2.port}/account/keys`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...from(1) },
      body: JSON.stringify(body),
    }).then(async (r) => ({ status: r.status, json: (await r.json()) as { error?: { message: string } } }));
  const replay = await at2({ id: ch.id, nonce });
  t.equal(replay.status, 400, 'a replay on another gateway is refused');
  t.match(replay.json.error?.message, /used already/);
  const ch2 = (await app.request('GET', '/account/challenge', { headers: from(1) })).json;
  t.equal((await at2({ id: ch2.id, nonce: solve(ch2.id, 8) })).status, 201, 'a challenge from one gateway is good on another');
});

t.test('the spent set is bounded', async (t) => {
  const s = new SpentChallenges(100);
  const now = Date.now();
  for (let i = 0; i < 1000; i++) s.add(`id${i}`, now + 60_000, now);
  t.ok(s.size <= 100, `${s.size} entries`);
  t.ok(s.has('id999'), 'the newest are kept');
  const e = new SpentChallenges(100);
  for (let i = 0; i < 50; i++) e.add(`old${i}`, now - 1, now);
  e.add('new', now + 60_000, now);
  t.equal(e.size, 1, 'expired ones leave');
});
