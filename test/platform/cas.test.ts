// shared/nats/cas.ts: a compare-and-set write stays exclusive on a replicated bucket. On nats-server
// 2.9 the server's own expected-revision check let concurrent writers through (#4320) and cas.ts added
// a message id; on 2.10.27 the server's check holds alone, which the second test asserts.
import t from 'tap';
import { Kvm } from '@nats-io/kv';
import { startTestNats } from '../helpers/nats.ts';
import { startTestCluster } from '../helpers/cluster.ts';
import { casRounds, WRITES } from '../../scripts/diagnostics/cas-check.ts';
import { kvCasPut, kvCasDelete, kvUpdate, isCasConflict, CasConflict } from '../../shared/nats/cas.ts';

t.test('one server: create on 0, update on the current revision, conflicts on any other', async (t) => {
  const tn = await startTestNats(t);
  const kv = await new Kvm(tn.nc).create('cas-r1', { history: 1 });
  const r1 = await kvCasPut(kv, 'a', 'one', 0);
  t.equal((await kv.get('a'))?.string(), 'one', 'created');
  const conflict = (p: Promise<unknown>) =>
    p.then(
      () => false,
      (e: unknown) => isCasConflict(e),
    );
  t.ok(await conflict(kvCasPut(kv, 'a', 'again', 0)), 'a second create conflicts');
  const r2 = await kvCasPut(kv, 'a', 'two', r1);
  t.ok(r2 > r1, 'updated on the current revision');
  t.ok(await conflict(kvCasPut(kv, 'a', 'stale', r1)), 'a stale revision conflicts');
  await kvCasDelete(kv, 'a', r2);
  t.equal((await kv.get('a'))?.operation, 'DEL', 'deleted on the current revision');
  t.ok(isCasConflict(new CasConflict('x', 1)) && !isCasConflict(new Error('timeout')), 'conflicts are told apart from other errors');
});

t.test('3-node cluster: of six concurrent writers on one revision exactly one is stored', async (t) => {
  const tc = await startTestCluster(t);
  // A write that times out (a loaded 2-core CI machine: it happened once in 360 writes) or that
  // nobody answered (no responders, "jetstream is not enabled" in the client's words: the new
  // bucket's interest had not reached that node yet, seen once in CI) says nothing about
  // exclusivity; it is reported, and anything else but a conflict fails the test.
  const notTimeout = (errors: string[]) => errors.filter((e) => e !== 'timeout' && e !== 'unanswered');
  const guarded = await casRounds(tc.cluster, 'cas-r3', WRITES.cas, 60);
  if (guarded.otherErrors.length) t.comment(`guarded rounds: ${guarded.otherErrors.join(', ')}`);
  t.same(notTimeout(guarded.otherErrors), [], 'every loser gets a conflict, nothing else (timeouts and unanswered writes aside)');
  t.ok(guarded.otherErrors.length <= 36, `and those are few (${guarded.otherErrors.length} of 360 writes): the rounds did race`);
  t.equal(guarded.moreThanOneAccepted, 0, 'never two writers accepted');
  t.equal(guarded.noneAccepted, 0, 'never nobody (no livelock)');
  t.equal(guarded.winnerNotStored, 0, 'the stored value is always the winner’s');
  // the server's own check (the plain KV update, no help from cas.ts): what lets cas.ts rely on it.
  // Debian's 2.9.10 accepted more than one writer here in 181 of 200 rounds.
  const plain = await casRounds(tc.cluster, 'plain-r3', WRITES.plain, 60);
  t.equal(plain.moreThanOneAccepted, 0, 'the plain KV update never accepts two writers on one revision (nats-server >= 2.10)');
  if (plain.otherErrors.length) t.comment(`plain rounds: ${plain.otherErrors.join(', ')}`);
  t.same(notTimeout(plain.otherErrors), [], 'no error but conflicts (timeouts and unanswered writes aside)');
  t.ok(plain.otherErrors.length <= 36, `and those are few (${plain.otherErrors.length} of 360 writes)`);
});

t.test('kvUpdate: 3-node cluster, 30 concurrent increments of one counter from every node: none lost', async (t) => {
  const tc = await startTestCluster(t);
  const kvs = await Promise.all(
    [0, 1, 2].map(async (i) => {
      const nc = await tc.connect(i);
      await new Kvm(nc).create('counter', { replicas: 3, history: 1 }).catch(() => {});
      return new Kvm(nc).open('counter');
    }),
  );
  await Promise.all(Array.from({ length: 30 }, (_, i) => kvUpdate(kvs[i % 3]!, 'n', (e) => String(Number(e?.string() || 0) + 1))));
  t.equal((await kvs[0]!.get('n'))?.string(), '30', 'the counter is 30');
  t.equal(await kvUpdate(kvs[1]!, 'n', () => undefined), undefined, 'nothing to write: nothing written');
  t.equal((await kvs[0]!.get('n'))?.revision, (await kvs[2]!.get('n'))?.revision, 'and the revision stayed');
});
