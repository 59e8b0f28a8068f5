// The wallet's start on a cluster whose meta group has no leader yet (a restart of `npm run
// cluster`: the history bench saw a wallet exit with "wallet start failed at "top-ups": timeout",
// session 26). The development Lightning backend creates its bucket at the start; that request now
// waits for the cluster like every bucket a unit opens, instead of failing on the first timeout.
import t from 'tap';
import { jetstreamManager } from '@nats-io/jetstream';
import { retry, startTestCluster } from '../helpers/cluster.ts';
import { testLog } from '../helpers/nats.ts';
import { createDevBackend } from '../../actors/wallet/lightning/dev.ts';
import { BUCKETS } from '../../shared/names.ts';

t.test('the dev backend waits for a meta leader, then creates its bucket', async (t) => {
  const tc = await startTestCluster(t);
  const nc = await tc.connect(0, 'dev-backend-no-quorum');
  // two of three nodes down: node 0 alone has no quorum, so no meta leader answers a create
  await tc.cluster.kill(1);
  await tc.cluster.kill(2);
  const jsm = await jetstreamManager(nc, { timeout: 2000, checkAPI: false });
  await t.rejects(jsm.streams.info(`KV_${BUCKETS.devInvoices}`), 'without a quorum, JetStream does not answer');
  const t0 = Date.now();
  let settled = false;
  // the outcome, not a rejection left pending while the nodes come back
  const starting = createDevBackend({ config: tc.config, nc, log: testLog() })
    .then(
      (d) => d,
      (e: Error) => e,
    )
    .finally(() => {
      settled = true;
    });
  await new Promise((r) => setTimeout(r, 6000));
  t.notOk(settled, 'still waiting past a request timeout (5 s), not failed');
  await tc.cluster.restart(1);
  await tc.cluster.restart(2);
  const dev = await starting;
  if (dev instanceof Error) return t.fail(`the start failed: ${dev.message}`);
  t.ok(Date.now() - t0 >= 6000, `started once the quorum came back (${Date.now() - t0} ms)`);
  // a request path answers 503 while the bucket's own group settles (a client retries): retried here
  const inv = await retry(() => dev.createInvoice(1000, 'after the quorum came back', 600), 30_000, 500);
  t.match(inv.bolt11, /^ln/, 'and it makes invoices');
  t.equal((await jsm.streams.info(`KV_${BUCKETS.devInvoices}`)).config.num_replicas, 3, 'in the bucket, replicated');
});
