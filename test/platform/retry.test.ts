import t from 'tap';
import { withRetry } from '../../shared/runtime.ts';

t.test('start-up steps are retried with backoff, then give up with the last error', async (t) => {
  let calls = 0;
  const v = await withRetry(
    'flaky',
    async () => {
      if (++calls < 3) throw new Error(`no responders ${calls}`);
      return 'ok';
    },
    { timeoutMs: 5000 },
  );
  t.equal(v, 'ok');
  t.equal(calls, 3);
  const t0 = Date.now();
  await t.rejects(
    withRetry(
      'down',
      async () => {
        throw new Error('still down');
      },
      { timeoutMs: 1000 },
    ),
    { message: 'still down' },
  );
  t.ok(Date.now() - t0 < 2500, 'gives up near its bound');
});

t.test('retryIf: only the errors it accepts are tried again; any other ends the retries at once', async (t) => {
  let calls = 0;
  const failure = await withRetry(
    'selective',
    async () => {
      calls++;
      throw new Error(calls < 3 ? 'timeout' : 'a refusal');
    },
    { timeoutMs: 10_000, retryIf: (e) => (e as Error).message === 'timeout' },
  ).catch((e: Error) => e);
  t.equal(failure.message, 'a refusal', 'the first error it does not accept is thrown');
  t.equal(calls, 3, 'the accepted ones were retried; the other was not');
});
