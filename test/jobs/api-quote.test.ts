// Quotes (real HTTP, wallet, supervisor, test workers).
import t from 'tap';
import { jetstreamManager } from '@nats-io/jetstream';
import { startJobsApi } from './app.ts';
import { advertise } from '../../shared/catalogue.ts';
import { Kvm } from '@nats-io/kv';
import { BUCKETS, STREAMS } from '../../shared/names.ts';
import { readLedger } from '../../shared/audit.ts';
import { closedPort } from '../helpers/ports.ts';

t.test('a quote is free: priced like the job, nothing charged, written or published', async (t) => {
  const s = await startJobsApi(t, {}, { workers: false });
  const { key, walletId } = await s.newWallet(1000);
  const r = await s.request('POST', '/v1/websitepro/quote', {
    key,
    body: { url: `${s.targetUrl}/page`, outputs: ['markdown', 'pdf', 'markdown'] },
  });
  t.equal(r.status, 200, r.text);
  t.same(r.json, {
    service: 'websitepro',
    target: '127.0.0.1',
    cost: 130,
    eur: 0.013,
    balance: 1000,
    sufficient: true,
    items: [
      { key: 'markdown', price: 30 },
      { key: 'pdf', price: 100 },
    ],
  });
  const poor = await s.newWallet(10);
  const q2 = await s.request('POST', '/v1/websitepro/quote', { key: poor.key, body: { url: 'http://127.0.0.1:1/', outputs: ['pdf'] } });
  t.equal(q2.status, 200, 'a quote does not contact the target');
  t.equal(q2.json.sufficient, false);
  // validated exactly like creation
  for (const path of ['/v1/websitepro/quote', '/v1/websitepro/jobs']) {
    const bad = await s.request('POST', path, { key, body: { url: 'ftp://x', outputs: ['text'] } });
    t.equal(bad.json?.error?.code, 'bad_url', `${path}: bad_url`);
    const none = await s.request('POST', path, { key, body: { url: s.targetUrl, outputs: [] } });
    t.equal(none.json?.error?.code, 'no_output', `${path}: no_output`);
  }
  t.equal((await s.request('POST', '/v1/websitepro/quote', { body: { url: s.targetUrl, outputs: ['text'] } })).status, 401);
  t.equal(await s.balance(walletId), 1000);
  const jsm = await jetstreamManager(s.nc);
  t.equal((await jsm.streams.info(STREAMS.jobs)).state.last_seq, 0, 'nothing ever published on JOBS');
  t.equal((await readLedger(s.nc)).filter((e) => e.walletId === walletId).length, 1, 'only the grant in the ledger');
  const keys = await (await new Kvm(s.nc).open(BUCKETS.jobs)).keys();
  const all: string[] = [];
  for await (const k of keys) all.push(k);
  t.same(all, [], 'no job written');
});

t.test('labs quote: the relay is not contacted, the dataset fee is listed until paid', async (t) => {
  // a port this test bound and released (nothing listens there, whatever else runs on the
  // machine), allowed for relays: a contact would answer unreachable
  const port = await closedPort();
  const s = await startJobsApi(t, { labs: { allowedPorts: [port] } }, { workers: false });
  const cat = await advertise(s.nc, 'labs', 'test-prober', () => ({
    checks: [
      { id: 'nip01.req', title: 'REQ', module: 'quick', needsDataset: false, selectable: true, basis: { nip: '01', level: 'required' } },
      {
        id: 'nip01.filters',
        title: 'Filters',
        module: 'conformance',
        needsDataset: true,
        selectable: true,
        basis: { nip: '01', level: 'required' },
      },
    ],
  }));
  t.teardown(() => cat.stop());
  const { key, walletId } = await s.newWallet(10_000);
  const relay = `ws://127.0.0.1:${port}`;
  const q = await s.request('POST', '/v1/labs/quote', { key, body: { relay, modules: ['quick', 'conformance'] } });
  t.equal(q.status, 200, q.text);
  const p = s.config.pricing.labs;
  t.same(q.json.items, [
    { key: 'quick', price: p.quick },
    { key: 'conformance', price: p.conformance },
    { key: 'dataset', price: p.dataset, oneTime: true },
  ]);
  t.equal(q.json.cost, p.quick + p.conformance + p.dataset);
  t.equal(q.json.target, '127.0.0.1');
  const quick = await s.request('POST', '/v1/labs/quote', { key, body: { relay, checks: ['nip01.req', 'unknown.check'] } });
  t.same(
    quick.json.items,
    [{ key: 'custom', price: Math.max(p.customMin, p.customPerCheck) }],
    'unknown checks ignored, no dataset needed',
  );
  const none = await s.request('POST', '/v1/labs/quote', { key, body: { relay } });
  t.equal(none.json.error.code, 'no_checks');
  const created = await s.request('POST', '/v1/labs/jobs', { key, body: { relay, modules: ['quick'] } });
  t.equal(created.status, 400, 'creation does contact the relay');
  t.equal(created.json.error.code, 'unreachable');
  t.equal(await s.balance(walletId), 10_000, 'nothing charged by quotes or the rejected creation');
});
