// NATS faults on the 3-node cluster, one system, scenarios in order:
//   1. one NATS server SIGKILLed → requests keep being served; restarted → it catches up;
//   2. the whole system stopped (a job in flight) and started again → nothing lost.
// After each: no job left unfinished and the money audit clean.
import t from 'tap';
import { setTimeout as sleep } from 'node:timers/promises';
import { jetstreamManager } from '@nats-io/jetstream';
import { Kvm } from '@nats-io/kv';
import { startSystem, type System } from '../../scripts/cluster-lib.ts';
import { http, until, retry, testSystemConfig } from '../helpers/cluster.ts';
import { tempDir } from '../helpers/nats.ts';
import { connectNats, type NatsConnection } from '../../shared/nats/connect.ts';
import { createKey } from '../../shared/keys.ts';
import { wallet } from '../../shared/protocol/wallet.ts';
import { audit, readLedger } from '../../shared/audit.ts';
import { BUCKETS, STREAMS } from '../../shared/names.ts';
import { isFinished, type JobRecord } from '../../shared/protocol/jobs.ts';
import { startGate, type Gate } from './fixtures/gate.ts';
import { startPages } from './fixtures/pages.ts';

// two cluster starts and a failover on a shared 2-core machine: more than tap's default 300 s
t.setTimeout(480_000);

const pages = await startPages();
t.teardown(() => pages.close());

const GRANT = 1_000_000;

t.test('NATS faults on the cluster', async (t) => {
  const dataDir = tempDir('payloads-platform-');
  const opts = {
    dataDir,
    logLevel: process.env.TEST_LOG_LEVEL ?? 'warn',
    config: testSystemConfig({ websitepro: { fetchTimeoutMs: 120000 } }),
    processes: ['wallet', 'job-supervisor', 'converter', 'gateway'] as const,
  };
  let sys: System = await startSystem({ ...opts, processes: [...opts.processes] });
  t.teardown(() => sys.stop());
  let base = sys.gateway()!.url!;
  let nc: NatsConnection = await connectNats(sys.cluster.url, 'faults-platform-test');
  t.teardown(() => nc.close().catch(() => {}));
  const { key, walletId } = await createKey(nc, 'admin');
  await wallet.grant(nc, walletId, GRANT, 'fault test funds', 'faults-platform');

  const create = (url: string) => http(base, 'POST', '/v1/websitepro/jobs', { key, body: { url, outputs: ['metadata'] } });
  const finished = async (id: string, ms = 90000) => until(`job ${id} finished`, async () => {
    const r = await http(base, 'GET', `/v1/jobs/${id}?wait=20`, { key, timeoutMs: 30000 });
    return r.status === 200 && isFinished(r.json.job) ? r.json.job : null;
  }, ms, 100);
  const clean = async (when: string, todo: string | false = false) => {
    const kv = await new Kvm(nc).open(BUCKETS.jobs);
    const unfinished: string[] = [];
    for await (const k of await kv.keys()) {
      const e = await kv.get(k);
      if (e?.operation === 'PUT' && !isFinished(e.json<JobRecord>())) unfinished.push(k);
    }
    t.same(unfinished, [], `${when}: no job left unfinished`);
    const report = await retry(() => audit(nc));
    t.same(report.violations, [], `${when}: money audit clean`, { todo });
    return report;
  };
  const gated = async (): Promise<{ gate: Gate; id: string }> => {
    const gate = await startGate(pages.port);
    t.teardown(() => gate.close());
    const r = await create(`http://127.0.0.1:${gate.port}/held`);
    t.equal(r.status, 201, 'job created');
    await until('the converter inside the task', async () => gate.working() > 0, 60000);
    return { gate, id: r.json.job.id };
  };

  await t.test('one NATS server SIGKILLed: requests keep being served; restarted: it catches up', async (t) => {
    const jsm = await jetstreamManager(nc);
    const leader = (await retry(() => jsm.streams.info(STREAMS.ledger))).cluster!.leader!;
    const victim = sys.cluster.nodes.findIndex((n) => `payloads-${n.name}` === leader);
    t.ok(victim >= 0, `killing ${leader}, leader of the LEDGER stream`);
    await sys.cluster.kill(victim);
    const t0 = Date.now();
    // a failover window is allowed (retry for a few seconds), then every request must be served
    const first = await until('a job created after the node loss', async () => {
      const r = await create(`${pages.url}after-kill`);
      return r.status === 201 ? r : null;
    }, 30000, 250);
    t.comment(`first job accepted ${Date.now() - t0} ms after the node died`);
    const ids = [first.json.job.id];
    for (let i = 0; i < 5; i++) {
      const r = await create(`${pages.url}during-${i}`);
      t.equal(r.status, 201, `job ${i + 1} of 5 created with one node down (${r.status} ${r.json?.error?.code ?? ''})`);
      if (r.status === 201) ids.push(r.json.job.id);
    }
    for (const id of ids) t.equal((await finished(id)).status, 'completed', `job ${id} completed with one node down`);
    t.equal((await http(base, 'GET', '/v1/balance', { key })).status, 200, 'balance served');

    await sys.cluster.restart(victim);
    const caughtUp = await until('the restarted node current on every stream', async () => {
      for (const s of [STREAMS.ledger, STREAMS.jobs, STREAMS.tasks, `KV_${BUCKETS.jobs}`]) {
        const info = await jsm.streams.info(s);
        const reps = info.cluster?.replicas ?? [];
        if (reps.length !== 2 || !reps.every((r) => r.current && !r.offline)) return false;
      }
      return true;
    }, 60000, 500);
    t.ok(caughtUp, 'the restarted node is a current replica of the ledger, jobs and tasks');
    const r = await create(`${pages.url}after-restart`);
    t.equal(r.status, 201, 'jobs are created after the node came back');
    t.equal((await finished(r.json.job.id)).status, 'completed', 'and completed');
    await clean('after the NATS node loss');
  });

  await t.test('the whole system stopped with a job in flight and started again: nothing lost', async (t) => {
    const { gate, id } = await gated();
    const balance = (await http(base, 'GET', '/v1/balance', { key })).json.balance as number;
    const ledgerBefore = (await readLedger(nc)).length;
    const jobsBefore = (await audit(nc)).jobs;
    const ports = { clientPorts: sys.cluster.nodes.map((n) => n.clientPort), clusterPorts: sys.cluster.nodes.map((n) => n.clusterPort) };
    await nc.close();
    await sys.stop();
    await gate.close();
    sys = await startSystem({ ...opts, ...ports, processes: [...opts.processes] });
    base = sys.gateway()!.url!;
    nc = await connectNats(sys.cluster.url, 'faults-platform-test-2');
    t.equal((await http(base, 'GET', '/v1/balance', { key })).status, 200, 'the key still works');
    t.ok((await readLedger(nc)).length >= ledgerBefore, 'every ledger entry is still there');
    // the job in flight: its worker was stopped mid-task; the task is redelivered and fails cleanly
    // (the gate is gone: nothing answers there now) or completes; either way it finishes and is settled
    const job = await finished(id, 150000);
    t.ok(isFinished(job), `the job in flight finished after the restart (${job.status}, ${job.results.map((r: any) => r.error ?? r.status).join(',')})`);
    t.equal((await http(base, 'GET', '/v1/balance', { key })).json?.balance, balance + job.refunded, 'the balance survived (plus the refund of what the job in flight did not deliver)');
    const r = await create(`${pages.url}after-full-restart`);
    t.equal(r.status, 201, 'new jobs are taken');
    t.equal((await finished(r.json.job.id)).status, 'completed', 'and completed');
    const report = await clean('after the full restart');
    t.ok(report.jobs >= jobsBefore + 1, 'every job document survived');
  });
});
