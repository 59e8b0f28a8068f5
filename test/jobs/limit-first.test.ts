// Job creation: the shared job limit's write goes beside the pre-charge reads, but nothing with an
// effect (the connection to the target, the charge) happens before it allowed the creation, and its
// refusal is the answer whatever else is wrong with the request.
import t from 'tap';
import { createServer, type AddressInfo } from 'node:net';
import { startJobsApi } from './app.ts';

t.test('a key over its job limit gets 429: no connection to the target, nothing charged, before any other error', async (t) => {
  const s = await startJobsApi(t, { limits: { jobsPerHour: 2 } }, { workers: false });
  // a target that counts the connections made to it (the precheck connects and sends nothing)
  let connections = 0;
  const target = createServer((sock) => {
    connections++;
    sock.destroy();
  });
  await new Promise<void>((r) => target.listen(0, '127.0.0.1', r));
  t.teardown(() => new Promise<void>((r) => target.close(() => r())));
  const url = `http://127.0.0.1:${(target.address() as AddressInfo).port}/`;
  const { key } = await s.newWallet(1000);

  for (let i = 0; i < 2; i++) {
    const r = await s.request('POST', '/v1/websitepro/jobs', { key, body: { url, outputs: ['metadata'] } });
    t.equal(r.status, 201, r.text);
  }
  t.equal(connections, 2, 'each allowed creation checked the target once');
  const balance = (await s.request('GET', '/v1/balance', { key })).json.balance;
  t.equal(balance, 1000 - 2 * 20);

  const refused = await s.request('POST', '/v1/websitepro/jobs', { key, body: { url, outputs: ['metadata'] } });
  t.equal(refused.status, 429);
  t.equal(refused.json.error.code, 'rate_limited');
  t.equal(connections, 2, 'the refused creation made no connection to the target');
  t.equal((await s.request('GET', '/v1/balance', { key })).json.balance, balance, 'and charged nothing');

  // the limit's refusal comes before validation, as when it was awaited first
  const invalid = await s.request('POST', '/v1/websitepro/jobs', { key, body: { url: 'not a url', outputs: ['metadata'] } });
  t.equal(invalid.status, 429, 'an invalid body over the limit: 429, not 400');
  const unreachable = await s.request('POST', '/v1/websitepro/jobs', { key, body: { url: 'http://127.0.0.1:1/', outputs: ['metadata'] } });
  t.equal(unreachable.status, 429, 'an unreachable target over the limit: 429, not 400');
});

t.test('under the limit the other errors are answered as before', async (t) => {
  const s = await startJobsApi(t, { limits: { jobsPerHour: 5 } }, { workers: false });
  const { key } = await s.newWallet(1000);
  const invalid = await s.request('POST', '/v1/websitepro/jobs', { key, body: { url: 'not a url', outputs: ['metadata'] } });
  t.equal(invalid.status, 400);
  t.equal(invalid.json.error.code, 'bad_url');
  const unreachable = await s.request('POST', '/v1/websitepro/jobs', { key, body: { url: 'http://127.0.0.1:1/', outputs: ['metadata'] } });
  t.equal(unreachable.status, 400);
  t.equal(unreachable.json.error.code, 'unreachable');
  t.equal((await s.request('GET', '/v1/balance', { key })).json.balance, 1000, 'nothing charged');
});
