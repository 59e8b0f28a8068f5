// Top-ups at start (issue 26): the watch resumes after the `topups` revision the last run saw, kept
// in the projection's file with the pending top-ups, instead of reading every top-up ever made.
import t from 'tap';
import { startTestNats, tempDir } from '../helpers/nats.ts';
import { openTopups as open, walletId } from './_helpers.ts';

const until = async (f: () => boolean) => {
  for (let i = 0; i < 200 && !f(); i++) await new Promise((r) => setTimeout(r, 50));
  return f();
};

t.test('a restart resumes the top-up watch after what it saw, with the pending top-ups kept', async (t) => {
  // six top-ups of one wallet at once: over the default cap of unpaid ones
  const tn = await startTestNats(t, { wallet: { lightning: { maxUnpaidTopups: 10 } } });
  const dir = tempDir('payloads-topups-resume-');
  const w = walletId();
  const first = await open(tn, dir);
  t.teardown(() => first.stop());
  const made = [];
  for (let i = 0; i < 6; i++) made.push((await first.topups.create(w, 1)).topup.id);
  for (const id of made.slice(0, 4)) await first.topups.devPay(id);
  t.ok(await until(() => first.topups.watching === 2), 'two left pending');
  t.equal(first.topups.resumedFrom, 0, 'a new file reads every current value');
  await first.stop();

  const second = await open(tn, dir);
  t.teardown(() => second.stop());
  t.ok(second.topups.resumedFrom > 0, `resumed after revision ${second.topups.resumedFrom}`);
  t.equal(second.topups.watching, 2, 'the two pending top-ups come from the file');
  // one change since: the watch delivers that one, not the six documents before it
  const late = (await second.topups.create(w, 1)).topup.id;
  t.ok(await until(() => second.topups.watched >= 1));
  t.equal(second.topups.watched, 1, 'one document read by the watch after the restart');
  t.equal(second.topups.watching, 3);
  // a kept pending top-up still settles
  const paid = await second.topups.devPay(made[5]);
  t.equal(paid.topup.status, 'paid');
  t.equal(paid.balance, 5 * 10000);
  void late;
});
