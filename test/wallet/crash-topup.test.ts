// The wallet as its own process, killed with SIGKILL between steps; a restarted instance finishes
// the work: nothing lost, nothing counted twice.
import t from 'tap';
import { Kvm } from '@nats-io/kv';
import { decode } from 'light-bolt11-decoder';
import { setTimeout as sleep } from 'node:timers/promises';
import { startTestNats, tempDir } from '../helpers/nats.ts';
import { walletId } from './_helpers.ts';
import { wallet } from '../../shared/protocol/wallet.ts';
import { audit } from '../../shared/audit.ts';
import { BUCKETS } from '../../shared/names.ts';
import { spawnWallet, exited } from './_crash.ts';

t.test('killed between crediting a top-up and marking it paid: the restart finishes it, credited once', async (t) => {
  const tn = await startTestNats(t);
  const dataDir = tempDir('payloads-wallet-');
  const w = walletId();
  const a = await spawnWallet(t, tn, dataDir, 'after-credit');
  const { topup } = await wallet.topupCreate(tn.nc, w, 10);
  const done = exited(a);
  // The operator pays; the process credits and dies before the document says paid.
  const hash = decode(topup.bolt11!).sections.find((s) => s.name === 'payment_hash')!.value as string;
  const kv = await new Kvm(tn.nc).open(BUCKETS.devInvoices);
  const inv = (await kv.get(hash))!.json<Record<string, unknown>>();
  await kv.put(hash, JSON.stringify({ ...inv, state: 'paid', paidAt: Date.now() }));
  t.equal(await done, 'SIGKILL');
  const topups = await new Kvm(tn.nc).open(BUCKETS.topups);
  t.equal((await topups.get(topup.id))!.json<{ status: string }>().status, 'pending', 'document still pending');
  t.same(await wallet.balance(tn.nc, w).catch(() => null), null, 'no wallet running');
  await spawnWallet(t, tn, dataDir);
  let status = 'pending';
  for (let i = 0; i < 100 && status === 'pending'; i++) {
    await sleep(100);
    status = (await topups.get(topup.id))!.json<{ status: string }>().status;
  }
  t.equal(status, 'paid', 'the restarted wallet found the pending top-up and finished it');
  t.same(await wallet.balance(tn.nc, w), { balance: 100_000 }, 'credited once');
  t.same((await audit(tn.nc)).violations, []);
});
