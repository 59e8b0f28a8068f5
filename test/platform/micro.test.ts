// The service endpoints' error answers (shared/micro.ts), across a real server: a handler's own
// NATS step meeting a failover answers service_unavailable (the caller's 503), a bug answers
// internal, an ApiError keeps its code.
import t from 'tap';
import { startTestNats, testLog } from '../helpers/nats.ts';
import { addService, call } from '../../shared/micro.ts';
import { ApiError } from '../../shared/errors.ts';

t.test('endpoint errors keep their meaning across NATS', async (t) => {
  const tn = await startTestNats(t);
  const nc = await tn.connect('micro-service');
  const svc = await addService(nc, {
    name: 'micro-test',
    version: '1.0.0',
    description: 'error answers',
    endpoints: {
      'micro.test.failover': async () => {
        await nc.request('micro.test.nobody.listens', '', { timeout: 500 });
        return {};
      },
      'micro.test.bug': () => { throw new TypeError('a bug'); },
      'micro.test.refused': () => { throw new ApiError('bad_request', 'walletId is required'); },
    },
  }, testLog());
  t.teardown(() => svc.stop());
  const client = await tn.connect('micro-client');
  const failed = (subject: string) => call(client, subject, {}).then(() => null, (e: unknown) => e as ApiError);

  const f = await failed('micro.test.failover');
  t.equal(f?.code, 'service_unavailable', 'a NATS step without an answer: retry later');
  t.match(f?.message, /did not answer/);
  t.equal((await failed('micro.test.bug'))?.code, 'internal', 'a bug stays internal');
  const r = await failed('micro.test.refused');
  t.equal(r?.code, 'bad_request');
  t.equal(r?.message, 'walletId is required');
});
