// within(p, ms, fallback): a bound on a wait that does not keep the process alive once the wait is
// over. Promise.race with a sleep did: a job-supervisor stopped right after its start kept its
// process alive until its 15 s catch-up bound fired, and every test file with a supervisor ended
// about 12 s after its last test (issue 30, session 19).
import t from 'tap';
import { within } from '../../shared/runtime.ts';

const timers = () => process.getActiveResourcesInfo().filter((r) => r === 'Timeout').length;

t.test('the value when it comes first, and no timer left behind', async (t) => {
  const before = timers();
  t.equal(await within(Promise.resolve('done'), 60_000, 'late'), 'done');
  t.equal(timers(), before, 'the 60 s timer is gone');
});

t.test('the fallback when the time comes first', async (t) => {
  t.equal(await within(new Promise(() => {}), 20, 'late'), 'late');
});

t.test('a rejection passes through, and clears the timer too', async (t) => {
  const before = timers();
  await t.rejects(within(Promise.reject(new Error('no')), 60_000, 'late'), /no/);
  t.equal(timers(), before, 'the 60 s timer is gone');
});
