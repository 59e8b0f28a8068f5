// Issue 44 item 4: open event streams are bounded per key and per client address on each gateway;
// one more answers 429 rate_limited saying which limit, and a stream that ends gives its place back.
import t from 'tap';
import { startJobsApi } from './app.ts';
import { openSse } from '../helpers/sse.ts';

t.test('open event streams per key and per address: 429 with the limit named, the place back once closed', async (t) => {
  const s = await startJobsApi(t, { server: { eventStreamsPerKey: 2, eventStreamsPerAddress: 3 } }, { workers: false });
  const one = await s.newWallet(1000);
  const two = await s.newWallet(1000);
  const jobOf = async (key: string) =>
    (await s.request('POST', '/v1/websitepro/jobs', { key, body: { url: s.targetUrl, outputs: ['metadata'] } })).json.job.id as string;
  const j1 = await jobOf(one.key);
  const j2 = await jobOf(two.key);
  const open = async (key: string, id: string) => {
    const sse = await openSse(`${s.url}/v1/jobs/${id}/events`, key);
    t.teardown(() => sse.close());
    return sse;
  };
  const a = await open(one.key, j1);
  const b = await open(one.key, j1);
  t.equal(a.status, 200);
  t.equal(b.status, 200);
  const third = await s.request('GET', `/v1/jobs/${j1}/events`, { key: one.key });
  t.equal(third.status, 429, 'a third stream of the key is refused');
  t.match(third.json.error, { code: 'rate_limited', limit: 'eventStreamsPerKey', max: 2 });
  t.ok(third.headers.get('retry-after'));

  // another key from the same address: the address's bound (3) is next
  const c = await open(two.key, j2);
  t.equal(c.status, 200);
  const fourth = await s.request('GET', `/v1/jobs/${j2}/events`, { key: two.key });
  t.equal(fourth.status, 429, 'a fourth stream from the address is refused');
  t.match(fourth.json.error, { code: 'rate_limited', limit: 'eventStreamsPerAddress', max: 3 });

  // a stream that goes away gives its place back
  a.close();
  let again = await open(one.key, j1);
  for (let i = 0; i < 50 && again.status === 429; i++) {
    again.close();
    await new Promise((r) => setTimeout(r, 100));
    again = await open(one.key, j1);
  }
  t.equal(again.status, 200, 'a new stream of the key opens once one closed');
});
