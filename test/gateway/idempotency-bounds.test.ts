// Issue 44 item 5: Idempotency-Key records had no bound per wallet (every new key with a request
// refused 400 or 402 kept a record 24 h, bounded only by 120 requests a minute), and a replayed
// answer spent a token of the hourly job limit, though it made no job. Now a wallet makes at most
// `limits.idempotencyKeysPerDay` records in 24 h (429 with `limit: "idempotencyKeys"`), and a replay
// gives its job token back.
import t from 'tap';
import { Kvm } from '@nats-io/kv';
import { startJobsApi } from '../jobs/app.ts';
import { BUCKETS } from '../../shared/names.ts';

t.test('a replayed answer does not spend the hourly job limit', async (t) => {
  const s = await startJobsApi(t, { limits: { jobsPerHour: 2 } });
  const { key } = await s.newWallet(10_000);
  const post = (idem: string) =>
    s.request('POST', '/v1/websitepro/jobs', {
      key,
      body: { url: s.targetUrl, outputs: ['metadata'] },
      headers: { 'idempotency-key': idem },
    });
  const first = await post('a');
  t.equal(first.status, 201, first.text);
  for (let i = 0; i < 3; i++) {
    const r = await post('a');
    t.equal(r.status, 201, `replay ${i + 1}: ${r.text}`);
    t.equal(r.headers.get('idempotent-replayed'), 'true');
  }
  t.equal((await post('b')).status, 201, 'the second job of the hour is made: the replays spent nothing');
  const third = await post('c');
  t.equal(third.status, 429, 'the third is over jobsPerHour');
  t.equal(third.json.error.code, 'rate_limited');
});

t.test('records per wallet are bounded', async (t) => {
  const s = await startJobsApi(t, { limits: { idempotencyKeysPerDay: 3 } });
  const { key, walletId } = await s.newWallet(10_000);
  const bad = (idem?: string) =>
    s.request('POST', '/v1/websitepro/jobs', {
      key,
      body: { url: 'not a url', outputs: ['metadata'] },
      headers: idem ? { 'idempotency-key': idem } : {},
    });
  for (const k of ['k1', 'k2', 'k3']) t.equal((await bad(k)).status, 400, `${k}: refused, and its answer kept`);
  const over = await bad('k4');
  t.equal(over.status, 429, over.text);
  t.match(over.json.error, { code: 'rate_limited', limit: 'idempotencyKeys' });
  t.ok(Number(over.headers.get('retry-after')) > 0, 'with Retry-After');
  const again = await bad('k1');
  t.equal(again.status, 400, 'a kept answer is still replayed');
  t.equal(again.headers.get('idempotent-replayed'), 'true');
  t.equal((await bad()).status, 400, 'without a key the request runs');

  const other = await s.newWallet(10_000);
  const r = await s.request('POST', '/v1/websitepro/jobs', {
    key: other.key,
    body: { url: 'not a url', outputs: ['metadata'] },
    headers: { 'idempotency-key': 'k4' },
  });
  t.equal(r.status, 400, "another wallet's bound is its own");

  const kv = await new Kvm(s.nc).open(BUCKETS.idempotency);
  const mine: string[] = [];
  for await (const k of await kv.keys(`${walletId}.>`)) mine.push(k);
  t.equal(mine.filter((k) => !k.endsWith('.n')).length, 3, 'three records kept for the wallet');
});

t.test('a transient answer gives its count back', async (t) => {
  const s = await startJobsApi(t, { limits: { idempotencyKeysPerDay: 2, jobsPerHour: 1 } });
  const { key, walletId } = await s.newWallet(10_000);
  const post = (idem: string) =>
    s.request('POST', '/v1/websitepro/jobs', {
      key,
      body: { url: s.targetUrl, outputs: ['metadata'] },
      headers: { 'idempotency-key': idem },
    });
  t.equal((await post('x1')).status, 201);
  // over jobsPerHour: 429, nothing kept, so nothing counted against the wallet's records
  for (let i = 0; i < 5; i++) {
    const r = await post(`y${i}`);
    t.equal(r.status, 429);
    t.equal(r.json.error.limit, undefined, 'the job limit, not the records bound');
  }
  const kv = await new Kvm(s.nc).open(BUCKETS.idempotency);
  const counts = (await kv.get(`${walletId}.n`))!.json<Record<string, number>>();
  t.equal(
    Object.values(counts).reduce((a, b) => a + b, 0),
    1,
    'one record counted',
  );
});
