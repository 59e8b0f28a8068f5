// Which failed tries of a job creation the gateway asks again with the same job id (issue 45), and
// that it does so until one succeeds.
import t from 'tap';
import { ApiError } from '../../shared/errors.ts';
import { retriableCreation, retryCreation } from '../../gateway/jobs/retry.ts';

const timeout = () => Object.assign(new Error('timeout'), { name: 'TimeoutError' });
const unavailable = (message: string, details?: Record<string, unknown>) => new ApiError('service_unavailable', message, details);

t.test('what is tried again', async (t) => {
  t.ok(retriableCreation(timeout()), 'NATS unanswered before the charge');
  t.ok(
    retriableCreation(unavailable('the wallet did not answer; nothing was charged')),
    'the charge unanswered: the same job id charges once',
  );
  t.notOk(
    retriableCreation(unavailable('the wallet did not answer; nothing was charged'), false),
    'not where the cost may change (labs dataset fee)',
  );
  t.ok(retriableCreation(unavailable('no job-supervisor instance is running; nothing was charged')), 'the supervisor ping lost');
  t.notOk(retriableCreation(unavailable('the job may not have been created', { jobId: 'job_x' })), 'an answer naming a job: it may exist');
  t.notOk(retriableCreation(unavailable('the wallet answered too late; the charge was refunded')), 'a late charge, refunded');
  t.notOk(retriableCreation(new ApiError('insufficient_funds', 'no')), 'an answer');
});

t.test('asked again until it is served', async (t) => {
  let tries = 0;
  const r = await retryCreation(async () => {
    if (++tries < 3) throw timeout();
    return 'created';
  });
  t.equal(r, 'created');
  t.equal(tries, 3);
  tries = 0;
  const ac = new AbortController();
  ac.abort();
  await t.rejects(
    retryCreation(
      async () => {
        tries++;
        throw timeout();
      },
      { signal: ac.signal },
    ),
    { name: 'TimeoutError' },
    'the client left: no more tries',
  );
  t.equal(tries, 1);
});
