// Issue 28 item 5, the client's side: every creation carries an Idempotency-Key, and the client's own
// retry after a lost answer sends the same key, so it gets the first answer and pays once.
import t from 'tap';
import { startJobsApi } from '../jobs/app.ts';
import { createPayloadsClient } from '../../client/src/index.ts';
import { wallet } from '../../shared/protocol/wallet.ts';

/** A fetch whose first POST reaches the server but loses its answer (the connection drops). */
function droppingFetch() {
  const sent: { url: string; key: string | null }[] = [];
  let dropped = false;
  const f: typeof fetch = async (input, init) => {
    const req = new Request(input as Request, init);
    if (req.method === 'POST') sent.push({ url: req.url, key: req.headers.get('idempotency-key') });
    const res = await fetch(req);
    if (req.method === 'POST' && !dropped) {
      dropped = true;
      await res.arrayBuffer();
      throw new TypeError('fetch failed (the connection dropped)');
    }
    return res;
  };
  return { f, sent };
}

t.test('a job whose answer was lost is retried with the same key and charged once', async (t) => {
  const s = await startJobsApi(t);
  const w = await s.newWallet(1000);
  const { f, sent } = droppingFetch();
  const c = createPayloadsClient({ baseUrl: s.url, key: w.key, fetch: f });
  const { job, balance } = await c.createJob('websitepro', { url: s.targetUrl, outputs: ['text'] });
  t.equal(sent.length, 2, 'sent twice');
  t.ok(sent[0]!.key && sent[0]!.key.length <= 255, 'with a key');
  t.equal(sent[1]!.key, sent[0]!.key, 'the retry reuses it');
  t.equal(balance, 980);
  const charges = (await wallet.transactions(s.nc, w.walletId)).entries.filter((e) => e.type === 'charge');
  t.match(charges, [{ jobId: job.id }], 'one charge, for the job answered');
  // a new call is a new request: a new key
  await c.createJob('websitepro', { url: s.targetUrl, outputs: ['text'] });
  t.not(sent[2]!.key, sent[0]!.key);
});

t.test('a top-up whose answer was lost is the same top-up on the retry', async (t) => {
  const s = await startJobsApi(t, {}, { workers: false });
  const w = await s.newWallet(0);
  const { f, sent } = droppingFetch();
  const c = createPayloadsClient({ baseUrl: s.url, key: w.key, fetch: f });
  const { topup } = await c.topup(5, { idempotencyKey: 'my-topup-1' });
  t.same(
    sent.map((x) => x.key),
    ['my-topup-1', 'my-topup-1'],
  );
  const again = await createPayloadsClient({ baseUrl: s.url, key: w.key }).topup(5, { idempotencyKey: 'my-topup-1' });
  t.equal(again.topup.id, topup.id);
});
