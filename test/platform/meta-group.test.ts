// How a fresh 3-node cluster whose JetStream meta group formed without a node is told at once
// (scripts/cluster-ready.ts metaGroupState), from the nodes' /jsz as nats-server 2.10.27 wrote them
// here: a good start counts 3 members on every node the moment JetStream answers; a bad one counts 2
// on every node and never takes the third in (it was found only when placement gave up after 20 s).
import t from 'tap';
import { freePort } from '../../scripts/cluster-lib.ts';
import { metaGroupState, waitForMetaGroup, waitForPlacement, type MetaView } from '../../scripts/cluster-ready.ts';
import { startNatsServer } from '../../shared/nats/server.ts';
import { tempDir } from '../helpers/nats.ts';

const view = (leader: string, clusterSize: number): MetaView => ({ leader, clusterSize });

t.test('every node names one leader and counts 3: complete', async (t) => {
  t.equal(metaGroupState([view('payloads-n1', 3), view('payloads-n1', 3), view('payloads-n1', 3)], 3), 'complete');
});

t.test('every node names one leader and counts 2 (recorded from a bad start): short', async (t) => {
  t.equal(metaGroupState([view('payloads-n3', 2), view('payloads-n3', 2), view('payloads-n3', 2)], 3), 'short');
});

t.test('nodes that do not agree yet decide nothing', async (t) => {
  t.equal(metaGroupState([view('payloads-n1', 3), view('', 0), view('payloads-n1', 3)], 3), undefined, 'a node without a leader yet');
  t.equal(metaGroupState([view('payloads-n1', 2), view('payloads-n2', 2), view('payloads-n1', 2)], 3), undefined, 'two leaders named');
  t.equal(metaGroupState([view('payloads-n1', 3), null, view('payloads-n1', 3)], 3), undefined, 'a node that did not answer');
  t.equal(
    metaGroupState([view('payloads-n1', 3), view('payloads-n1', 2), view('payloads-n1', 3)], 3),
    undefined,
    'views that differ in size',
  );
});

t.test('nodes that never answer: undecided after the bound, not an error', async (t) => {
  const t0 = Date.now();
  const port = await freePort(); // nothing listens on it: bound and released here
  t.equal(await waitForMetaGroup([`http://127.0.0.1:${port}`], 3, 300), undefined);
  t.ok(Date.now() - t0 >= 300, 'it asked until its bound');
});

t.test('a placement that fails says what the nodes showed of the meta group meanwhile', async (t) => {
  // one JetStream node can never place 3 replicas; its /jsz is read while the wait fails
  const server = await startNatsServer({ storeDir: tempDir('payloads-nats-'), port: -1, monitor: true, startTimeoutMs: 60_000 });
  t.teardown(() => server.destroy());
  const err = await waitForPlacement(server.url, 3, 2500, [server.monitorUrl!]).then(
    () => null,
    (e: Error) => e,
  );
  t.ok(err, 'it could not place');
  t.match(err!.message, /could not place a 3-replica stream within 2500 ms/);
  t.match(err!.message, /the nodes' \/jsz meta_cluster meanwhile:\n\d{4}-\d\d-\d\dT[^ ]+ \[/, "with each node's view, timed");
  const without = await waitForPlacement(server.url, 3, 300).then(
    () => null,
    (e: Error) => e,
  );
  t.notMatch(without!.message, /meta_cluster/, 'without monitoring URLs: the reason only');
});
