// Issue 28 item 6: "600 jobs per hour and key" counts jobs created, not requests. Before, every
// creation request took a token whatever its answer: after 10 requests refused with 400 under
// `limits.jobsPerHour: 5`, the next 5 valid jobs all answered 429, and a client retrying through
// an outage (503) was locked out for up to an hour afterwards. Now the token is taken before
// anything with an effect (so the limit holds under concurrency and 429 still comes first) and
// given back when the request made no job; `limits.jobRequestsPerMinute` bounds every request.
import t from 'tap';
import { setTimeout as sleep } from 'node:timers/promises';
import { startJobsApi } from '../jobs/app.ts';

const valid = (url: string) => ({ url, outputs: ['metadata'] });

t.test('refused creations (400, 402) do not use up the hourly job limit', async (t) => {
  const s = await startJobsApi(t, { limits: { jobsPerHour: 5 } }, { workers: false });
  const { key, walletId } = await s.newWallet(100);
  for (let i = 0; i < 10; i++)
    t.equal((await s.request('POST', '/v1/websitepro/jobs', { key, body: { url: 'not a url', outputs: ['metadata'] } })).status, 400);
  const poor = await s.newWallet(0);
  for (let i = 0; i < 3; i++)
    t.equal((await s.request('POST', '/v1/websitepro/jobs', { key: poor.key, body: valid(s.targetUrl) })).status, 402);
  const statuses: number[] = [];
  for (let i = 0; i < 5; i++) statuses.push((await s.request('POST', '/v1/websitepro/jobs', { key, body: valid(s.targetUrl) })).status);
  t.same(statuses, [201, 201, 201, 201, 201], 'the five jobs of the hour are still there');
  const sixth = await s.request('POST', '/v1/websitepro/jobs', { key, body: valid(s.targetUrl) });
  t.equal(sixth.status, 429, 'the sixth job is refused');
  t.equal(sixth.json.error.code, 'rate_limited');
  const invalid = await s.request('POST', '/v1/websitepro/jobs', { key, body: { url: 'not a url', outputs: ['metadata'] } });
  t.equal(invalid.status, 429, 'over the limit, 429 still comes before a 400');
  t.equal(await s.balance(walletId), 0, 'five jobs of 20 charged, nothing else');
  t.same(await s.violations(), []);
});

t.test('concurrent creations never pass the limit', async (t) => {
  const s = await startJobsApi(t, { limits: { jobsPerHour: 3 } }, { workers: false });
  const { key, walletId } = await s.newWallet(1000);
  const bodies = [
    ...Array.from({ length: 8 }, () => valid(s.targetUrl)),
    ...Array.from({ length: 4 }, () => ({ url: 'not a url', outputs: ['metadata'] })),
  ];
  const answers = await Promise.all(bodies.map((body) => s.request('POST', '/v1/websitepro/jobs', { key, body })));
  const created = answers.filter((a) => a.status === 201).length;
  t.ok(created <= 3 && created >= 1, `${created} created of 8 valid requests sent at once (limit 3)`);
  t.ok(
    answers.every((a) => [201, 400, 429].includes(a.status)),
    answers.map((a) => a.status).join(' '),
  );
  // whatever raced, the hour's jobs can be filled up to the limit and not past it
  let more = 0;
  for (let i = 0; i < 4; i++)
    if ((await s.request('POST', '/v1/websitepro/jobs', { key, body: valid(s.targetUrl) })).status === 201) more++;
  t.equal(created + more, 3, 'exactly three jobs in the hour');
  t.equal(await s.balance(walletId), 1000 - 3 * 20);
});

t.test('creations answered 503 during an outage give their tokens back', async (t) => {
  const s = await startJobsApi(t, { limits: { jobsPerHour: 3 } }, { workers: false });
  const { key } = await s.newWallet(1000);
  const [name, supervisor] = [...s.actors].find(([n]) => n.startsWith('job-supervisor'))!;
  await supervisor.stop();
  s.actors.delete(name);
  await sleep(1200); // the gateway takes a supervisor's answer as standing for a second
  for (let i = 0; i < 6; i++) {
    const r = await s.request('POST', '/v1/websitepro/jobs', { key, body: valid(s.targetUrl) });
    t.equal(r.status, 503, `retry ${i + 1} during the outage: 503 (${r.json?.error?.code})`);
  }
  await s.startActor('job-supervisor');
  const statuses: number[] = [];
  for (let i = 0; i < 3; i++) statuses.push((await s.request('POST', '/v1/websitepro/jobs', { key, body: valid(s.targetUrl) })).status);
  t.same(statuses, [201, 201, 201], 'after the outage the hour still holds its three jobs');
});

t.test('every creation request counts against the looser per-minute bound', async (t) => {
  const s = await startJobsApi(t, { limits: { jobsPerHour: 100, jobRequestsPerMinute: 4 } }, { workers: false });
  const { key } = await s.newWallet(1000);
  const statuses: number[] = [];
  for (let i = 0; i < 6; i++)
    statuses.push((await s.request('POST', '/v1/websitepro/jobs', { key, body: { url: 'not a url', outputs: ['metadata'] } })).status);
  t.same(statuses, [400, 400, 400, 400, 429, 429]);
  const other = await s.newWallet(1000);
  t.equal((await s.request('POST', '/v1/websitepro/jobs', { key: other.key, body: valid(s.targetUrl) })).status, 201, 'per key');
});
