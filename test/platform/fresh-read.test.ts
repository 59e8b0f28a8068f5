// freshRead (shared/nats/fresh.ts): concurrent callers share one request, but never one that was
// sent before they called. AppliedUpTo: readers wait until the copy has applied a sequence.
import t from 'tap';
import { AppliedUpTo, freshRead } from '../../shared/nats/fresh.ts';

function controlled() {
  const sent: { n: number; resolve: (v: number) => void }[] = [];
  let n = 0;
  const fetch = () =>
    new Promise<number>((resolve) => {
      sent.push({ n: ++n, resolve });
    });
  return { sent, fetch };
}
const tick = () => new Promise((r) => setImmediate(r));

t.test('callers while one is in flight share the next one, sent after it', async (t) => {
  const { sent, fetch } = controlled();
  const read = freshRead(fetch);
  const a = read();
  t.equal(sent.length, 1, 'the first caller sends at once');
  const b = read();
  const c = read();
  t.equal(sent.length, 1, 'later callers do not send while one is in flight');
  sent[0]!.resolve(1);
  t.equal(await a, 1);
  await tick();
  await tick();
  t.equal(sent.length, 2, 'one more request for both waiting callers');
  sent[1]!.resolve(2);
  t.same([await b, await c], [2, 2], 'they get the answer of a request sent after they called (not 1)');
  const d = read();
  t.equal(sent.length, 3, 'idle again: the next caller sends at once');
  sent[2]!.resolve(3);
  t.equal(await d, 3);
});

t.test('a failed request fails its callers only; the waiting ones get the next', async (t) => {
  let n = 0;
  const read = freshRead(() => (++n === 1 ? Promise.reject(new Error('timeout')) : Promise.resolve(n)));
  const a = read();
  const b = read();
  await t.rejects(a, /timeout/);
  t.equal(await b, 2);
});

t.test('applied up to: a reader waits until its sequence is applied, and no longer than its time', async (t) => {
  const applied = new AppliedUpTo(0);
  t.equal(await applied.reached(0, 0), true, 'already reached: at once');
  const five = applied.reached(5, 10_000);
  const seven = applied.reached(7, 10_000);
  applied.reach(5);
  t.equal(await five, true, 'woken when its sequence is applied');
  applied.reach(3);
  t.equal(applied.seq, 5, 'never moves back');
  const t0 = Date.now();
  t.equal(await applied.reached(9, 50), false, 'not reached within its time');
  t.ok(Date.now() - t0 < 5000);
  applied.reset(-1);
  t.equal(await seven, false, 'a restart wakes the others, not reached');
  t.equal(applied.seq, -1);
});
