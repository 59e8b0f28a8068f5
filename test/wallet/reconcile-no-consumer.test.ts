// Reconciliation reads the top-ups from the stream leader (like the audit, issue 19), never through a
// consumer: with a node down a consumer can be placed on, or wait for, the dead peer, and a listing
// with no time limit would hold every later reconciliation of the instance (they share one run).
import t from 'tap';
import { startTestNats } from '../helpers/nats.ts';
import { startWallet, walletId } from './_helpers.ts';
import { wallet } from '../../shared/protocol/wallet.ts';

t.test('a reconciliation creates no consumer on the top-ups stream', async (t) => {
  const tn = await startTestNats(t);
  await startWallet(t, tn);
  const w = walletId();
  await wallet.topupCreate(tn.nc, w, 1);
  await wallet.topupCreate(tn.nc, w, 2);
  // every consumer creation is a request on $JS.API.CONSUMER.CREATE.<stream>[...]; watch the top-ups'
  const watcher = await tn.connect('watcher');
  const seen: string[] = [];
  const sub = watcher.subscribe('$JS.API.CONSUMER.>', {
    callback: (_e, m) => {
      if (m.subject.includes('KV_topups')) seen.push(m.subject);
    },
  });
  t.teardown(() => sub.unsubscribe());
  await watcher.flush();
  const r = await wallet.reconcile(tn.nc);
  await watcher.flush();
  t.equal(r.topups, 2, 'both top-ups read');
  t.same(seen, [], 'no consumer on KV_topups');
});
