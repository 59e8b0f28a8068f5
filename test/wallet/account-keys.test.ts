// Scripted key creation made harder (issue 20 item 9): the proof of work is bound to a challenge
// issued to the client's address, each address makes a few keys per 24 hours, and an operator can
// require single-use invite codes. Real gateway, wallet, NATS; client addresses via X-Forwarded-For
// (server.trustProxy, as behind the operator's proxy).
import t from 'tap';
import { startTestApp } from '../helpers/app.ts';
import { powBits } from '../../gateway/routes/account.ts';

function solve(id: string, bits: number): string {
  for (let n = 0; ; n++) if (powBits(id, String(n)) >= bits) return String(n);
}

type App = Awaited<ReturnType<typeof startTestApp>>;
const from = (ip: string) => ({ 'x-forwarded-for': ip });
async function makeKey(app: App, ip: string, extra: Record<string, unknown> = {}, spendFrom = ip) {
  const ch = (await app.request('GET', '/account/challenge', { headers: from(ip) })).json;
  return app.request('POST', '/account/keys', { headers: from(spendFrom), body: { id: ch.id, nonce: solve(ch.id, ch.bits), ...extra } });
}

t.test('a challenge is spent only from the address it was issued to', async (t) => {
  const app = await startTestApp(t, { actors: ['wallet'], config: { wallet: { keyPowBits: 4 }, server: { trustProxy: true } } });
  const stolen = await makeKey(app, '198.51.100.1', {}, '203.0.113.9');
  t.equal(stolen.status, 400, stolen.text);
  t.match(stolen.json.error.message, /another address/);
  t.equal((await makeKey(app, '198.51.100.1')).status, 201, 'from its own address it works');
});

t.test('per-address limit: keysPerAddressPerDay, then 429 with Retry-After; other addresses unaffected', async (t) => {
  const app = await startTestApp(t, {
    actors: ['wallet'],
    config: { wallet: { keyPowBits: 4, keysPerAddressPerDay: 2 }, server: { trustProxy: true } },
  });
  t.equal((await makeKey(app, '198.51.100.2')).status, 201);
  t.equal((await makeKey(app, '198.51.100.2')).status, 201);
  const third = await makeKey(app, '198.51.100.2');
  t.equal(third.status, 429, third.text);
  t.equal(third.json.error.code, 'rate_limited');
  const retry = Number(third.headers.get('retry-after'));
  t.ok(retry > 23 * 3600 && retry <= 24 * 3600, `Retry-After ${retry} s: when the first key of the day leaves the window`);
  t.equal((await makeKey(app, '198.51.100.3')).status, 201, 'another address still can');
});

t.test('invite codes: required when configured, each makes one key; the page asks for one', async (t) => {
  const app = await startTestApp(t, {
    actors: ['wallet'],
    config: { wallet: { keyPowBits: 4, keyInviteCodes: ['welcome-alpha', 'welcome-beta'] } },
  });
  t.match((await app.request('GET', '/account/config')).json, { inviteRequired: true });
  const none = await makeKey(app, '127.0.0.1');
  t.equal(none.status, 400);
  t.match(none.json.error.message, /invite code/);
  t.equal((await makeKey(app, '127.0.0.1', { invite: 'guessed-code' })).status, 400, 'an unknown code');
  const ok = await makeKey(app, '127.0.0.1', { invite: 'welcome-alpha' });
  t.equal(ok.status, 201, ok.text);
  t.equal((await app.request('GET', '/v1/balance', { key: ok.json.key })).status, 200, 'the key works');
  const reused = await makeKey(app, '127.0.0.1', { invite: 'welcome-alpha' });
  t.equal(reused.status, 400);
  t.match(reused.json.error.message, /used already/);
  t.equal((await makeKey(app, '127.0.0.1', { invite: 'welcome-beta' })).status, 201, 'the other code still works');
});

t.test('without invite codes none is asked for', async (t) => {
  const app = await startTestApp(t, { actors: ['wallet'], config: { wallet: { keyPowBits: 4 } } });
  t.match((await app.request('GET', '/account/config')).json, { inviteRequired: false });
  t.equal((await makeKey(app, '127.0.0.1')).status, 201);
});
