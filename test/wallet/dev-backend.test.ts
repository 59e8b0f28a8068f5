// The development Lightning backend's settlement: once, idempotent, refused for unknown, malformed
// or expired invoices.
import t from 'tap';
import { Kvm } from '@nats-io/kv';
import { startTestNats, testLog } from '../helpers/nats.ts';
import { createDevBackend } from '../../actors/wallet/lightning/dev.ts';
import { BUCKETS } from '../../shared/names.ts';

t.test('dev backend: pay once, again is a no-op; unknown 404, expired 410, malformed refused', async (t) => {
  const tn = await startTestNats(t);
  const dev = (await createDevBackend({ config: tn.config, nc: tn.nc, log: testLog() })) as Awaited<ReturnType<typeof createDevBackend>> & {
    pay(hash: string): Promise<{ alreadyPaid: boolean }>;
  };
  const inv = await dev.createInvoice(1000, 'test', 600);
  t.same(await dev.lookupInvoice(inv.paymentHash), { state: 'open' }, 'open until paid');
  const paid = await Promise.all([dev.pay(inv.paymentHash), dev.pay(inv.paymentHash), dev.pay(inv.paymentHash)]);
  t.same(paid.map((p) => p.alreadyPaid).sort(), [false, true, true], 'three concurrent payments: one settles, two find it paid');
  t.match(await dev.lookupInvoice(inv.paymentHash), { state: 'paid', paidMsat: 1_000_000 });
  const status = (p: Promise<unknown>) =>
    p.then(
      () => 'paid',
      (e: { status?: number }) => e.status,
    );
  t.equal(await status(dev.pay('00'.repeat(32))), 404, 'unknown invoice');
  await t.rejects(dev.pay('not-a-hash'), /malformed payment hash/, 'malformed hash');
  const old = await dev.createInvoice(1000, 'test', 600);
  const kv = await new Kvm(tn.nc).open(BUCKETS.devInvoices);
  await kv.put(old.paymentHash, JSON.stringify({ ...(await kv.get(old.paymentHash))!.json<object>(), expiresAt: Date.now() - 1 }));
  t.equal(await status(dev.pay(old.paymentHash)), 410, 'an expired invoice cannot be paid');
});
