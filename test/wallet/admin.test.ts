// The operator commands through the real CLI (`npm run admin -- ...` = node --import tsx admin/main.ts).
import t from 'tap';
import { startTestNats } from '../helpers/nats.ts';
import { startWallet } from './_helpers.ts';
import { wallet } from '../../shared/protocol/wallet.ts';
import { createKey } from '../../shared/keys.ts';
import { admin } from './_admin.ts';

t.test('admin: wallet grant by key, topup pay', async (t) => {
  const tn = await startTestNats(t);
  await startWallet(t, tn);
  const { key, walletId } = await createKey(tn.nc, 'admin');

  const g = await admin(tn.server.url, ['wallet', 'grant', key, '5000', '--reason', 'welcome credit']);
  t.equal(g.code, 0, g.err);
  t.match(g.out, /\+5000 Payloads .* balance 5000/);

  const { topup } = await wallet.topupCreate(tn.nc, walletId, 1);
  const p = await admin(tn.server.url, ['topup', 'pay', topup.id]);
  t.equal(p.code, 0, p.err);
  t.match(p.out, new RegExp(`${topup.id} paid; wallet balance 15000`));
  t.match(await wallet.topupPay(tn.nc, topup.id), { alreadyPaid: true, balance: 15000 });
  t.equal((await admin(tn.server.url, ['topup', 'pay', topup.id], { LIGHTNING_BACKEND: 'lnd' })).code, 2, 'refused with a real backend');
});
