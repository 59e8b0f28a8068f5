// `npm run admin -- audit`: exit 0 when the money adds up, 1 with the violations listed when not.
import t from 'tap';
import { jetstream } from '@nats-io/jetstream';
import { startTestNats } from '../helpers/nats.ts';
import { startWallet, fund, walletId as newWalletId } from './_helpers.ts';
import { subjects } from '../../shared/names.ts';
import { admin } from './_admin.ts';

t.test('admin audit: clean, then a forged ledger entry', async (t) => {
  const tn = await startTestNats(t);
  await startWallet(t, tn);
  const walletId = newWalletId();
  await fund(tn.nc, walletId, 15000);
  const a = await admin(tn.server.url, ['audit']);
  t.equal(a.code, 0, a.out + a.err);
  t.match(a.out, /ok: no violation/);

  // Somebody writes to the ledger behind the wallet's back: a balance that does not add up.
  await jetstream(tn.nc).publish(
    subjects.ledger(walletId),
    JSON.stringify({ v: 1, type: 'grant', amount: 1, balanceAfter: 99999, at: Date.now(), ref: 'grant:forged', reason: 'x' }),
  );
  const bad = await admin(tn.server.url, ['audit']);
  t.equal(bad.code, 1);
  t.match(bad.out, /VIOLATION wallet .* says balanceAfter 99999, but 15000 \+ 1 = 15001/);
});
