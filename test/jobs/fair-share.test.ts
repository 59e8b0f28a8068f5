// Issue 44 item 1: one wallet's backlog does not take the service from another. Wallet A fills its
// queue with jobs against a host that accepts TCP and never answers (every task stalls in the real
// converter); wallet B's job is still created (not 503 busy) and completes. Before fair shares the
// queue bound counted every wallet's tasks (B was refused) and workers took tasks in the order they
// came (B's waited behind A's stalls).
import t from 'tap';
import { createServer as createTcpServer, type Socket } from 'node:net';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { jetstreamManager } from '@nats-io/jetstream';
import { startTestApp } from '../helpers/app.ts';
import { wallet } from '../../shared/protocol/wallet.ts';
import { walletTasks } from '../../shared/jobs/share.ts';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

t.test("a wallet's stalling backlog neither refuses nor delays another wallet's job", async (t) => {
  // accepts every connection and never answers
  const sockets = new Set<Socket>();
  const stall = createTcpServer((s) => {
    sockets.add(s);
    s.on('error', () => {});
  });
  await new Promise<void>((r) => stall.listen(0, '127.0.0.1', r));
  const page = createServer((_req, res) => res.end('<html><title>fine</title><body>a page that answers</body></html>'));
  await new Promise<void>((r) => page.listen(0, '127.0.0.1', r));
  t.teardown(() => {
    for (const s of sockets) s.destroy();
    stall.close();
    page.close();
  });
  const stallUrl = `http://127.0.0.1:${(stall.address() as AddressInfo).port}/`;
  const pageUrl = `http://127.0.0.1:${(page.address() as AddressInfo).port}/`;

  const JOBS = 10;
  const OUTPUTS = ['metadata', 'markdown', 'text', 'html'];
  const s = await startTestApp(t, {
    actors: ['wallet', 'job-supervisor', 'converter'],
    config: {
      // A's jobs fill its queue bound exactly; the stalls outlast the test
      limits: { queueMax: JOBS * OUTPUTS.length, walletTasks: 2 },
      websitepro: { concurrency: 4, fetchTimeoutMs: 120_000 },
      jobs: { taskTimeoutSeconds: 300 },
    },
  });
  const a = await s.newKey();
  const b = await s.newKey();
  await wallet.grant(s.nc, a.walletId, 1_000_000, 'test');
  await wallet.grant(s.nc, b.walletId, 1_000_000, 'test');

  for (let i = 0; i < JOBS; i++) {
    const r = await s.request('POST', '/v1/websitepro/jobs', { key: a.key, body: { url: `${stallUrl}?n=${i}`, outputs: OUTPUTS } });
    t.equal(r.status, 201, `wallet A's job ${i} created`);
  }
  const jsm = await jetstreamManager(s.nc);
  // the converter has A's tasks within its share in hand, stalling
  for (let i = 0; i < 100 && sockets.size < 2; i++) await sleep(100);
  t.ok(sockets.size >= 1, 'the converter is stalled on wallet A');
  const counts = await walletTasks(jsm, a.walletId);
  t.ok(counts.taken <= 2, `at most walletTasks of A's tasks are where workers take them (${counts.taken})`);
  t.equal(counts.taken + counts.held, JOBS * OUTPUTS.length, "every one of A's tasks is in TASKS, taken or held");

  const full = await s.request('POST', '/v1/websitepro/jobs', { key: a.key, body: { url: stallUrl, outputs: ['metadata'] } });
  t.equal(full.status, 503, "A's own queue is full");

  const created = await s.request('POST', '/v1/websitepro/jobs', { key: b.key, body: { url: pageUrl, outputs: ['metadata'] } });
  t.equal(created.status, 201, "B's creation is not refused for A's backlog");
  const id = created.json.job.id as string;
  // long polls until the job is finished; the stalls last two minutes, so B's job finishing within
  // the test's bound means it did not wait for them
  let job = created.json.job;
  for (let i = 0; i < 6 && job.status !== 'completed' && job.status !== 'failed'; i++)
    job = (await s.request('GET', `/v1/jobs/${id}?wait=10`, { key: b.key })).json.job;
  t.equal(job.status, 'completed', "B's job completed while A's tasks stall");
  t.equal(job.results[0].status, 'done');
});

t.test("a wallet's own backlog drains as its tasks finish, without waiting for the sweep", async (t) => {
  const page = createServer((_req, res) => res.end('<html><title>fine</title><body>a page that answers</body></html>'));
  await new Promise<void>((r) => page.listen(0, '127.0.0.1', r));
  t.teardown(() => page.close());
  const pageUrl = `http://127.0.0.1:${(page.address() as AddressInfo).port}/`;
  const s = await startTestApp(t, {
    actors: ['wallet', 'job-supervisor', 'converter'],
    // the sweep far away: only the outcome path releases held tasks here
    config: { limits: { walletTasks: 2 }, retention: { sweepSeconds: 600 } },
  });
  const a = await s.newKey();
  await wallet.grant(s.nc, a.walletId, 1_000_000, 'test');
  const ids: string[] = [];
  for (let i = 0; i < 5; i++) {
    const r = await s.request('POST', '/v1/websitepro/jobs', {
      key: a.key,
      body: { url: `${pageUrl}?n=${i}`, outputs: ['metadata', 'markdown', 'text', 'html'] },
    });
    t.equal(r.status, 201);
    ids.push(r.json.job.id);
  }
  const jsm = await jetstreamManager(s.nc);
  const first = await walletTasks(jsm, a.walletId);
  t.ok(first.held > 0, `tasks past the share were held (${first.held})`);
  for (const id of ids) {
    let job = (await s.request('GET', `/v1/jobs/${id}?wait=20`, { key: a.key })).json.job;
    if (job.status === 'processing') job = (await s.request('GET', `/v1/jobs/${id}?wait=20`, { key: a.key })).json.job;
    t.equal(job.status, 'completed', `job ${id} completed`);
    t.ok(
      job.results.every((r: { status: string }) => r.status === 'done'),
      'every result delivered',
    );
  }
  let left = await walletTasks(jsm, a.walletId);
  for (let i = 0; i < 50 && left.taken + left.held > 0; i++) {
    await sleep(100);
    left = await walletTasks(jsm, a.walletId);
  }
  t.match(left, { taken: 0, held: 0 }, 'nothing of the wallet left in TASKS');
});
