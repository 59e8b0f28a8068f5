// The operator commands through the real CLI (`npm run admin -- ...` = node --import tsx admin/main.ts).
import t from 'tap';
import { execFile } from 'node:child_process';
import { jetstream } from '@nats-io/jetstream';
import { startTestNats, tempDir } from '../helpers/nats.ts';
import { startWallet } from './_helpers.ts';
import { wallet } from '../../shared/protocol/wallet.ts';
import { createKey } from '../../shared/keys.ts';
import { ROOT } from '../../shared/config/index.ts';
import { subjects } from '../../shared/names.ts';

function admin(natsUrl: string, args: string[], env: Record<string, string> = {}): Promise<{ code: number; out: string; err: string }> {
  return new Promise((resolve) => {
    execFile(process.execPath, ['--import', 'tsx', 'admin/main.ts', ...args], {
      cwd: ROOT,
      env: { ...process.env, NATS_URL: natsUrl, DATA_DIR: tempDir('payloads-admin-'), LOG_LEVEL: 'warn', CONFIG_FILE: '', ...env },
    }, (err, out, errOut) => resolve({ code: err ? (typeof err.code === 'number' ? err.code : 1) : 0, out, err: errOut }));
  });
}

t.test('admin: wallet grant by key, topup pay, audit (clean, then a forged entry)', async (t) => {
  const tn = await startTestNats(t);
  await startWallet(t, tn);
  const { key, walletId } = await createKey(tn.nc, 'admin');

  const g = await admin(tn.server.url, ['wallet', 'grant', key, '5000', '--reason', 'welcome credit']);
  t.equal(g.code, 0, g.err);
  t.match(g.out, /\+5000 Payloads .* balance 5000/);
  t.equal((await admin(tn.server.url, ['wallet', 'grant', key, '5000'])).code, 2, 'a grant needs a reason');

  const { topup } = await wallet.topupCreate(tn.nc, walletId, 1);
  const p = await admin(tn.server.url, ['topup', 'pay', topup.id]);
  t.equal(p.code, 0, p.err);
  t.match(p.out, new RegExp(`${topup.id} paid; wallet balance 15000`));
  const p2 = await admin(tn.server.url, ['topup', 'pay', topup.id]);
  t.match(p2.out, /was already paid.*15000/);
  t.equal((await admin(tn.server.url, ['topup', 'pay', topup.id], { LIGHTNING_BACKEND: 'lnd' })).code, 2, 'refused with a real backend');

  const a = await admin(tn.server.url, ['audit']);
  t.equal(a.code, 0, a.out + a.err);
  t.match(a.out, /ok: no violation/);

  // Somebody writes to the ledger behind the wallet's back: a balance that does not add up.
  await jetstream(tn.nc).publish(subjects.ledger(walletId), JSON.stringify({ v: 1, type: 'grant', amount: 1, balanceAfter: 99999, at: Date.now(), ref: 'grant:forged', reason: 'x' }));
  const bad = await admin(tn.server.url, ['audit']);
  t.equal(bad.code, 1);
  t.match(bad.out, /VIOLATION wallet .* says balanceAfter 99999, but 15000 \+ 1 = 15001/);
});
