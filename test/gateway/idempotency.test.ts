// Issue 28 item 5: Idempotency-Key on job and top-up creation (Stripe's semantics). Real HTTP,
// wallet, supervisor, test workers; the records in the real `idempotency` bucket.
import t from 'tap';
import { Kvm } from '@nats-io/kv';
import { startJobsApi } from '../jobs/app.ts';
import { wallet } from '../../shared/protocol/wallet.ts';
import { BUCKETS } from '../../shared/names.ts';
import { fingerprintOf, recordKey } from '../../gateway/idempotency.ts';

t.test('job creation', async (t) => {
  const s = await startJobsApi(t, { wallet: { orphanChargeGraceSeconds: 2 } });
  const { key, walletId } = await s.newWallet(1000);
  const body = { url: s.targetUrl, outputs: ['metadata', 'text'] };
  const post = (b: unknown, idem?: string, k = key, q = '?wait=10') =>
    s.request('POST', `/v1/websitepro/jobs${q}`, { key: k, body: b, headers: idem === undefined ? {} : { 'idempotency-key': idem } });
  const charges = async (w = walletId) => (await wallet.transactions(s.nc, w)).entries.filter((e) => e.type === 'charge').length;

  t.test('the same key and body: the first answer again, charged once', async (t) => {
    const a = await post(body, 'k-1');
    t.equal(a.status, 201, a.text);
    t.equal(a.headers.get('idempotent-replayed'), null);
    const b = await post({ outputs: ['metadata', 'text'], url: s.targetUrl }, 'k-1'); // other key order: the same request
    t.equal(b.status, 201);
    t.equal(b.headers.get('idempotent-replayed'), 'true');
    t.same(b.json, a.json, 'status and body of the first answer');
    t.equal(await charges(), 1, 'one charge');
    t.equal(await s.balance(walletId), 1000 - 40);
  });

  t.test('the same key with another body: 422 idempotency_key_reused, nothing charged', async (t) => {
    const r = await post({ ...body, outputs: ['text'] }, 'k-1');
    t.equal(r.status, 422, r.text);
    t.equal(r.json.error.code, 'idempotency_key_reused');
    t.equal(await charges(), 1);
    const other = await s.request('POST', '/v1/shots/jobs', {
      key,
      body: { url: s.targetUrl, browsers: ['testbrowser'] },
      headers: { 'idempotency-key': 'k-1' },
    });
    t.equal(other.json?.error?.code, 'idempotency_key_reused', 'another path is another request');
  });

  t.test('keys are per wallet', async (t) => {
    const b = await s.newWallet(1000);
    const r = await post(body, 'k-1', b.key);
    t.equal(r.status, 201, r.text);
    t.equal(r.headers.get('idempotent-replayed'), null, "not the other wallet's answer");
    t.equal(await charges(b.walletId), 1);
  });

  t.test('a request still running under the key: 409 with Retry-After', async (t) => {
    const slow = { url: `${s.targetUrl}/?behave=slow`, outputs: ['text'] };
    const first = post(slow, 'k-slow', key, '?wait=4');
    await new Promise((r) => setTimeout(r, 1000));
    const second = await post(slow, 'k-slow');
    t.equal(second.status, 409, second.text);
    t.equal(second.json.error.code, 'idempotency_key_in_use');
    t.ok(Number(second.headers.get('retry-after')) >= 1);
    const a = await first;
    t.equal(a.status, 201);
    const again = await post(slow, 'k-slow');
    t.same(again.json, a.json, 'after it finished: its answer');
  });

  t.test('a malformed or too long key: 400, nothing charged', async (t) => {
    const before = await charges();
    for (const bad of ['x'.repeat(256), 'ünïcode']) {
      const r = await post(body, bad);
      t.equal(r.status, 400, r.text);
      t.equal(r.json.error.code, 'bad_request');
    }
    t.equal(await charges(), before);
  });

  t.test('a refusal that would repeat is kept; one that says nothing happened is not', async (t) => {
    const poor = await s.newWallet(10);
    const r = await post(body, 'k-poor', poor.key);
    t.equal(r.status, 402);
    t.equal((await post(body, 'k-poor', poor.key)).headers.get('idempotent-replayed'), 'true');
  });

  t.test('left running by a gateway that died: the job it names is answered, or the creation runs anew', async (t) => {
    const kv = await new Kvm(s.nc).open(BUCKETS.idempotency);
    const fp = fingerprintOf('POST', '/v1/websitepro/jobs', body);
    const made = await post(body, undefined);
    const old = Date.now() - 10 * 60_000;
    await kv.put(recordKey(walletId, 'k-dead'), JSON.stringify({ v: 1, state: 'running', fp, at: old, jobId: made.json.job.id }));
    const r = await post(body, 'k-dead');
    t.equal(r.status, 201);
    t.equal(r.json.job.id, made.json.job.id, 'the job the dead creation made');
    const n = await charges();
    await kv.put(recordKey(walletId, 'k-dead2'), JSON.stringify({ v: 1, state: 'running', fp, at: old, jobId: 'job_never_written' }));
    const r2 = await post(body, 'k-dead2');
    t.equal(r2.status, 201, r2.text);
    t.not(r2.json.job.id, 'job_never_written', 'a new job');
    t.equal(await charges(), n + 1);
    t.same((await post(body, 'k-dead2')).json.job.id, r2.json.job.id);
  });
  t.test('audit', async (t) => t.same(await s.violations(), []));
});

t.test('top-up creation', async (t) => {
  const s = await startJobsApi(t, {}, { workers: false });
  const { key } = await s.newWallet(0);
  const post = (eur: number, idem: string) => s.request('POST', '/v1/topups', { key, body: { eur }, headers: { 'idempotency-key': idem } });
  const a = await post(5, 'top-1');
  t.equal(a.status, 201, a.text);
  const b = await post(5, 'top-1');
  t.equal(b.status, 201);
  t.equal(b.json.topup.id, a.json.topup.id, 'the same top-up, not a second invoice');
  t.equal((await post(6, 'top-1')).json.error.code, 'idempotency_key_reused');
  t.not((await post(5, 'top-2')).json.topup.id, a.json.topup.id, 'another key: another top-up');
});
