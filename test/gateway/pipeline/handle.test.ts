// The handle step's retry of a customer's GET (issue 45, session 30): asked again after NATS did
// not answer, never after a service's 503 that names its own wait (Retry-After: the supervisor
// catching up), never for a POST.
import t from 'tap';
import { handle, readAgain } from '../../../gateway/pipeline/handle.ts';
import { ApiError } from '../../../shared/errors.ts';
import type { GatewayContext, Route, RouteRequest } from '../../../gateway/route.ts';

const noResponders = () => Object.assign(new Error('no responders'), { name: 'NoResponders' });
const timeout = () => Object.assign(new Error('timeout'), { name: 'TimeoutError' });
const catchingUp = () => new ApiError('service_unavailable', 'the supervisor is catching up', {}, { 'retry-after': '5' });
const unanswered = () => new ApiError('service_unavailable', 'wallet.balance: the message system did not answer (failing over)');

t.test('which failures a read is asked again after', async (t) => {
  t.ok(readAgain(noResponders()), 'no responders');
  t.ok(readAgain(timeout()), 'a timeout');
  t.ok(readAgain(new Error('wrapped', { cause: timeout() })), 'a wrapped timeout');
  t.ok(readAgain(unanswered()), "a service's 503 without Retry-After");
  t.notOk(readAgain(catchingUp()), 'a 503 with Retry-After');
  t.notOk(readAgain(new ApiError('not_found')), 'a 404');
  t.notOk(readAgain(new Error('boom')), 'anything else');
});

/** A route whose handler throws `fails` in turn, then answers; counts its calls. */
function route(method: 'GET' | 'POST', fails: Array<() => Error>) {
  const r = { calls: 0 };
  const rt = {
    method,
    auth: true,
    handler: async () => {
      const f = fails[r.calls++];
      if (f) throw f();
      return { status: 200, body: { ok: true } };
    },
  } as unknown as Route;
  return { r, rt };
}
const ctx = { config: { server: { failoverRetryMs: 5000 } } } as unknown as GatewayContext;
const rq = {} as RouteRequest;

t.test('a GET is served after NATS failures', async (t) => {
  const { r, rt } = route('GET', [noResponders, timeout, unanswered]);
  t.same(await handle(rt, rq, ctx), { status: 200, body: { ok: true } });
  t.equal(r.calls, 4);
});

t.test('a GET answered 503 with Retry-After is not asked again', async (t) => {
  const { r, rt } = route('GET', [catchingUp]);
  await t.rejects(handle(rt, rq, ctx), { code: 'service_unavailable', headers: { 'retry-after': '5' } });
  t.equal(r.calls, 1);
});

t.test('a POST is not asked again here', async (t) => {
  const { r, rt } = route('POST', [noResponders]);
  await t.rejects(handle(rt, rq, ctx), { name: 'NoResponders' });
  t.equal(r.calls, 1);
});
