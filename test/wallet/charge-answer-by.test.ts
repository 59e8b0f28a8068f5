// A charge carries the time its caller stops waiting (answerBy). The wallet checks it again at the
// write itself, after the wallet's lock and the ledger's catch-up, so a charge that waited its turn
// behind others (a wallet resumed with a backlog) past that time is refused and writes nothing,
// instead of charging a creation already answered 503. A charge already written still answers as
// written (its retry must not read as "nothing was charged").
import t from 'tap';
import { join } from 'node:path';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { startTestNats, testLog } from '../helpers/nats.ts';
import { Ledger } from '../../actors/wallet/ledger.ts';
import { Projection } from '../../actors/wallet/projection.ts';
import { charge, grant } from '../../actors/wallet/money.ts';
import { readLedger } from '../../shared/audit.ts';
import { walletId } from './_helpers.ts';

t.test('a charge whose turn comes after its answerBy is refused and writes nothing; one written answers as written', async (t) => {
  const tn = await startTestNats(t);
  const projection = new Projection(mkdtempSync(join(tmpdir(), 'payloads-answerby-')));
  const ledger = new Ledger(tn.nc, projection, testLog());
  await ledger.start();
  t.teardown(async () => {
    await ledger.stop();
    projection.close();
  });
  const w = walletId();
  await grant(ledger, w, 1000, 'test funds');

  await t.rejects(charge(ledger, w, 'job-late', 100, Date.now() - 1), { code: 'service_unavailable' }, 'past its answerBy: refused');
  const inTime = await charge(ledger, w, 'job-ok', 100, Date.now() + 10_000);
  t.equal(inTime.balance, 900, 'in time: charged');
  const again = await charge(ledger, w, 'job-ok', 100, Date.now() - 1);
  t.equal(again.duplicate, true, 'the same charge asked again late answers as written');
  t.equal(again.balance, 900);
  const charges = (await readLedger(tn.nc)).filter((e) => e.walletId === w && e.type === 'charge');
  t.same(
    charges.map((e) => e.jobId),
    ['job-ok'],
    'only the charge in time is in the ledger',
  );
});
