// The service endpoints' error answers (shared/micro.ts), across a real server: a handler's own
// NATS step meeting a failover answers service_unavailable (the caller's 503), a bug answers
// internal, an ApiError keeps its code.
import t from 'tap';
import { startTestNats, testLog } from '../helpers/nats.ts';
import { addService, call, client } from '../../shared/micro.ts';
import { endpoint } from '../../shared/protocol/endpoint.ts';
import { Type as T } from '@sinclair/typebox';
import { ApiError } from '../../shared/errors.ts';

t.test('endpoint errors keep their meaning across NATS', async (t) => {
  const tn = await startTestNats(t);
  const nc = await tn.connect('micro-service');
  const svc = await addService(
    nc,
    {
      api: {
        service: 'micro-test',
        description: 'error answers',
        endpoints: ['failover', 'bug', 'refused'].map((n) => ({
          subject: `micro.test.${n}`,
          summary: n,
          request: T.Object({}),
          reply: T.Object({}),
          timeoutMs: 1000,
        })),
      },
      version: '1.0.0',
      endpoints: {
        'micro.test.failover': async () => {
          await nc.request('micro.test.nobody.listens', '', { timeout: 500 });
          return {};
        },
        'micro.test.bug': () => {
          throw new TypeError('a bug');
        },
        'micro.test.refused': () => {
          throw new ApiError('bad_request', 'walletId is required');
        },
      },
    },
    testLog(),
  );
  t.teardown(() => svc.stop());
  const client = await tn.connect('micro-client');
  const failed = (subject: string) =>
    call(client, subject, {}).then(
      () => null,
      (e: unknown) => e as ApiError,
    );

  const f = await failed('micro.test.failover');
  t.equal(f?.code, 'service_unavailable', 'a NATS step without an answer: retry later');
  t.match(f?.message, /did not answer/);
  t.equal((await failed('micro.test.bug'))?.code, 'internal', 'a bug stays internal');
  const r = await failed('micro.test.refused');
  t.equal(r?.code, 'bad_request');
  t.equal(r?.message, 'walletId is required');
});

t.test('requests are validated with the declared schema before the handler runs', async (t) => {
  const tn = await startTestNats(t);
  const nc = await tn.connect('micro-service');
  const reached: unknown[] = [];
  const echo = endpoint({
    subject: 'micro.test.echo',
    summary: 'echo',
    request: T.Object({ walletId: T.String({ minLength: 1 }), limit: T.Optional(T.Integer({ minimum: 1, maximum: 10 })) }),
    reply: T.Object({ got: T.Unknown() }),
  });
  const svc = await addService(
    nc,
    {
      api: { service: 'micro-echo', description: 'echo', endpoints: [echo] },
      version: '1.0.0',
      endpoints: {
        [echo.subject]: (req) => {
          reached.push(req);
          return { got: req };
        },
      },
    },
    testLog(),
  );
  t.teardown(() => svc.stop());
  const c = await tn.connect('micro-client');
  const typed = client(echo);
  t.same(await typed(c, { walletId: 'w1', limit: 3 }), { got: { walletId: 'w1', limit: 3 } }, 'the typed client reaches the handler');
  for (const bad of [{}, { walletId: '' }, { walletId: 5 }, { walletId: 'w', limit: 11 }, { walletId: 'w', limit: '3' }]) {
    const e = await call(c, echo.subject, bad).then(
      () => null,
      (e: unknown) => e as ApiError,
    );
    t.equal(e?.code, 'bad_request', JSON.stringify(bad));
  }
  const notJson = await c.request(echo.subject, '{nope', { timeout: 2000 });
  t.equal(notJson.json<{ error: { code: string } }>().error.code, 'bad_request', 'not JSON');
  const e = await call(c, echo.subject, { walletId: 'w', limit: 11 }).catch((e: ApiError) => e);
  t.match((e as ApiError).message, /limit/, 'the message names the field');
  t.equal(reached.length, 1, 'only the valid request reached the handler');
});

t.test('a service must serve exactly what it declares', async (t) => {
  const tn = await startTestNats(t);
  const ep = endpoint({ subject: 'micro.test.declared', summary: '', request: T.Object({}), reply: T.Object({}) });
  await t.rejects(
    addService(
      tn.nc,
      { api: { service: 'micro-a', description: '', endpoints: [ep] }, version: '1.0.0', endpoints: { 'micro.test.other': () => ({}) } },
      testLog(),
    ),
    /without a declaration \(micro.test.other\).*not served \(micro.test.declared\)/,
  );
});
