// Which NATS errors count as a passing unavailability (a 503 and a retry, not a 500): the errors
// are the client's own, produced against a real server.
import t from 'tap';
import { jetstream, jetstreamManager, JetStreamApiError } from '@nats-io/jetstream';
import { startTestNats } from '../helpers/nats.ts';
import { isTransientNatsError, transientKind } from '../../shared/nats/transient.ts';

const caught = async (p: Promise<unknown>) =>
  p.then(
    () => {
      throw new Error('expected a rejection');
    },
    (e: unknown) => e,
  );

t.test('no responders and timeouts are transient; a missing stream or a bad request is not', async (t) => {
  const tn = await startTestNats(t);
  const nc = await tn.connect('transient-test');
  t.equal(transientKind(await caught(nc.request('nobody.listens', '', { timeout: 500 }))), 'unanswered', 'no responders: nobody took it');
  const silent = nc.subscribe('listens.never.answers');
  t.teardown(() => silent.unsubscribe());
  await nc.flush();
  t.equal(
    transientKind(await caught(nc.request('listens.never.answers', '', { timeout: 200 }))),
    'timeout',
    'a timeout: it may have had its effect',
  );
  const jsm = await jetstreamManager(nc);
  const missing = await caught(jsm.streams.info('NO_SUCH_STREAM'));
  t.type(missing, JetStreamApiError);
  t.notOk(isTransientNatsError(missing), 'stream not found is an answer, not an outage');
  await jsm.streams.add({ name: 'TAKEN', subjects: ['taken.>'] });
  const refused = await caught(jsm.streams.add({ name: 'OTHER', subjects: ['taken.x'] }));
  t.type(refused, JetStreamApiError);
  t.notOk(isTransientNatsError(refused), `a request the server refused (${(refused as Error).message})`);
  t.notOk(isTransientNatsError(new Error('timeout of something else')), 'a plain error that mentions a timeout');
  t.notOk(isTransientNatsError(undefined));
  t.ok(isTransientNatsError(new Error('step failed', { cause: await caught(nc.request('nobody.listens', '')) })), 'wrapped one level deep');
});

t.test('a JetStream publish nobody stores (as while a stream has no leader) is transient', async (t) => {
  const tn = await startTestNats(t);
  const nc = await tn.connect('transient-js');
  const e = await caught(jetstream(nc).publish('no.stream.captures.this', 'x', { timeout: 1000 }));
  t.equal(transientKind(e), 'unanswered', `${(e as Error).name}: ${(e as Error).message}`);
});

t.test('JetStream "temporarily unavailable" (10008) is transient', async (t) => {
  // the server sends it while a stream or consumer elects a leader; the class is the client's own
  const e = new JetStreamApiError({ code: 503, err_code: 10008, description: 'JetStream system temporarily unavailable' });
  t.equal(transientKind(e), 'unanswered');
  t.notOk(
    isTransientNatsError(
      new JetStreamApiError({ code: 400, err_code: 10058, description: 'stream name already in use with a different configuration' }),
    ),
  );
  // 503 is also the status of lasting faults: a full stream, JetStream off for the account
  t.notOk(isTransientNatsError(new JetStreamApiError({ code: 503, err_code: 10077, description: 'maximum bytes exceeded' })));
  const off = new JetStreamApiError({ code: 503, err_code: 10039, description: 'jetstream not enabled for account' });
  // the client throws its JetStreamNotEnabled (not exported by the package) with the 10039 answer as cause
  t.notOk(
    isTransientNatsError(Object.assign(new Error(off.message, { cause: off }), { name: 'JetStreamNotEnabled' })),
    'JetStream not enabled for the account',
  );
});
