// Workers killed mid-task on the 3-node cluster, two instances of each worker running. One job of
// each service is created through the gateway; its target is behind a gate that holds the worker's
// connection, so the worker is provably inside the task. The process holding the connection (found
// through /proc) is SIGKILLed, the gate opens: the task is redelivered to the other instance and the
// job completes. Afterwards the money audit is clean and no job is left unfinished.
import t from 'tap';
import { Kvm } from '@nats-io/kv';
import { startTestSystem, http, until, retry } from '../helpers/cluster.ts';
import { connectNats } from '../../shared/nats/connect.ts';
import { createKey } from '../../shared/keys.ts';
import { wallet } from '../../shared/protocol/wallet.ts';
import { audit } from '../../shared/audit.ts';
import { BUCKETS } from '../../shared/names.ts';
import { isFinished, type JobRecord } from '../../shared/protocol/jobs.ts';
import { startGate, ownerOf } from './fixtures/gate.ts';
import { startPages } from './fixtures/pages.ts';
import { startMiniRelay } from '../labs/fixtures/mini-relay.ts';
import { fastLabs, fastWebhooks } from '../labs/fixtures/probe.ts';

// a cluster, seven to nine Node processes and Chromium on a shared 2-core machine: more than tap's default 300 s
t.setTimeout(480_000);

const pages = await startPages();
const relay = await startMiniRelay({});
t.teardown(() => pages.close());
t.teardown(() => relay.close());

t.test('converter, relay-prober and browser-pool SIGKILLed mid-task: redelivered, completed, audit clean', async (t) => {
  const gates = {
    converter: await startGate(pages.port),
    'relay-prober': await startGate(relay.port),
    'browser-pool': await startGate(pages.port),
  };
  t.teardown(() => Promise.all(Object.values(gates).map((g) => g.close())));

  const sys = await startTestSystem(t, {
    processes: [
      'wallet',
      'job-supervisor',
      'converter',
      'converter',
      'relay-prober',
      'relay-prober',
      'browser-pool',
      'browser-pool',
      'gateway',
    ],
    env: { BROWSERS: 'chromium' },
    config: {
      // a held connection must outlast the second instance's start
      labs: { ...fastLabs, replyTimeoutMs: 90000, moduleTimeoutMs: 180000, allowedPorts: [gates['relay-prober'].port] },
      webhooks: fastWebhooks,
      shots: { pageTimeoutMs: 120000 },
      websitepro: { fetchTimeoutMs: 120000 },
    },
  });
  const base = sys.gateway()!.url!;
  const nc = await connectNats(sys.cluster.url, 'faults-workers-test');
  t.teardown(() => nc.close());
  const { key, walletId } = await createKey(nc, 'admin');
  await wallet.grant(nc, walletId, 1_000_000, 'fault test funds', 'faults-workers');

  const bodies: Record<string, [string, unknown]> = {
    converter: ['websitepro', { url: `http://127.0.0.1:${gates.converter.port}/article`, outputs: ['metadata', 'text'] }],
    'relay-prober': ['labs', { relay: `ws://127.0.0.1:${gates['relay-prober'].port}`, modules: ['quick'] }],
    'browser-pool': ['shots', { url: `http://127.0.0.1:${gates['browser-pool'].port}/`, browsers: ['chromium'], viewports: ['1280x800'] }],
  };
  const names = Object.keys(bodies) as (keyof typeof gates)[];
  // every catalogue is advertised once its instance runs (a service without one answers 503)
  await until(
    'the catalogues',
    async () =>
      (await Promise.all(['websitepro', 'shots', 'labs'].map((x) => http(base, 'GET', `/v1/services/${x}`)))).every(
        (r) => r.status === 200,
      ),
    60000,
  );

  const jobs: Record<string, string> = {};
  for (const n of names) {
    const [service, body] = bodies[n]!;
    const r = await http(base, 'POST', `/v1/${service}/jobs`, { key, body });
    t.equal(r.status, 201, `${service} job created (${r.text.slice(0, 200)})`);
    jobs[n] = r.json.job.id;
  }
  // every worker is inside its task: its connection reached the target and is held there
  await until('every worker holding its gate', async () => names.every((n) => gates[n].working() > 0), 90000);
  for (const n of names) {
    const instances = sys.procs.filter((p) => p.name === n);
    const port = gates[n].workingPorts()[0]!;
    const pid = ownerOf(
      port,
      gates[n].port,
      instances.map((p) => p.pid),
    );
    const owner = instances.find((p) => p.pid === pid);
    if (!owner) {
      t.fail(`${n}: no instance owns the held connection from port ${port}`);
      continue;
    }
    t.equal(await owner.kill('SIGKILL'), 'SIGKILL', `${owner.label}, the instance inside the task, killed with SIGKILL`);
  }
  await until('the held connections dropped by the dead processes', async () => names.every((n) => gates[n].droppedByClient() > 0), 15000);
  for (const g of Object.values(gates)) g.open();

  for (const n of names) {
    const id = jobs[n]!;
    const job = await until(
      `job ${id} (${n}) finished`,
      async () => {
        const r = await http(base, 'GET', `/v1/jobs/${id}?wait=20`, { key, timeoutMs: 30000 });
        return r.status === 200 && (r.json.job.status === 'completed' || r.json.job.status === 'failed') ? r.json.job : null;
      },
      150000,
      100,
    );
    t.equal(
      job.status,
      'completed',
      `${n}: the job completed after the redelivery (${JSON.stringify(job.results.map((x: any) => [x.key, x.status, x.error]))})`,
    );
    t.ok(
      job.results.every((x: any) => x.status === 'done'),
      `${n}: every result delivered`,
    );
    if (job.status !== 'completed') {
      const rec = await (await new Kvm(nc).open(BUCKETS.jobs)).get(id);
      t.comment(`job document: ${rec?.string()}`);
      for (const p of sys.procs.filter((p) => p.name === n)) t.comment(`${p.label} output:\n${p.output()}`);
      continue;
    }
    const done = job.results.find((x: any) => x.url);
    const dl = await fetch(done.url.replace('localhost', '127.0.0.1'), { headers: { authorization: `Bearer ${key}` } });
    t.equal(dl.status, 200, `${n}: a result downloads`);
    await dl.arrayBuffer();
  }

  // no job left unfinished, the money audit clean
  const kv = await new Kvm(nc).open(BUCKETS.jobs);
  const unfinished: string[] = [];
  for await (const k of await kv.keys()) {
    const e = await kv.get(k);
    if (e?.operation === 'PUT' && !isFinished(e.json<JobRecord>())) unfinished.push(k);
  }
  t.same(unfinished, [], 'no job left unfinished');
  const report = await retry(() => audit(nc));
  t.same(report.violations, [], 'money audit clean');
  t.ok(report.jobs >= 3, 'the audit saw the three jobs');
});
