// NATS faults on the 3-node cluster, one system, scenarios in order:
//   1. one NATS server SIGKILLed → requests keep being served; restarted → it catches up;
//   2. the whole system stopped (a job in flight) and started again → nothing lost.
// After each: no job left unfinished and the money audit clean.
import t from 'tap';
import { jetstreamManager } from '@nats-io/jetstream';
import { startSystem } from '../../scripts/cluster-lib.ts';
import { http, until, retry } from '../helpers/cluster.ts';
import { startFaultBench } from '../helpers/faults.ts';
import { connectNats } from '../../shared/nats/connect.ts';
import { audit, readLedger } from '../../shared/audit.ts';
import { BUCKETS, STREAMS } from '../../shared/names.ts';
import { isFinished } from '../../shared/protocol/jobs.ts';
import { startPages } from './fixtures/pages.ts';

// two cluster starts and a failover on a shared 2-core machine: more than tap's default 300 s
t.setTimeout(480_000);

const pages = await startPages();
t.teardown(() => pages.close());

t.test('NATS faults on the cluster', async (t) => {
  const b = await startFaultBench(t, { pagesPort: pages.port, name: 'faults-nats' });
  const { key, create, finished, clean, gated } = b;

  await t.test('one NATS server SIGKILLed: requests keep being served; restarted: it catches up', async (t) => {
    const jsm = await jetstreamManager(b.nc);
    const leader = (await retry(() => jsm.streams.info(STREAMS.ledger))).cluster!.leader!;
    const victim = b.sys.cluster.nodes.findIndex((n) => `payloads-${n.name}` === leader);
    t.ok(victim >= 0, `killing ${leader}, leader of the LEDGER stream`);
    await b.sys.cluster.kill(victim);
    const t0 = Date.now();
    // a failover window is allowed (retry for a few seconds), then every request must be served
    const first = await until(
      'a job created after the node loss',
      async () => {
        const r = await create(`${pages.url}after-kill`);
        return r.status === 201 ? r : null;
      },
      30000,
      250,
    );
    t.comment(`first job accepted ${Date.now() - t0} ms after the node died`);
    const ids = [first.json.job.id];
    for (let i = 0; i < 5; i++) {
      const r = await create(`${pages.url}during-${i}`);
      t.equal(r.status, 201, `job ${i + 1} of 5 created with one node down (${r.status} ${r.json?.error?.code ?? ''})`);
      if (r.status === 201) ids.push(r.json.job.id);
    }
    for (const id of ids) t.equal((await finished(id)).status, 'completed', `job ${id} completed with one node down`);
    t.equal((await http(b.base, 'GET', '/v1/balance', { key })).status, 200, 'balance served');

    await b.sys.cluster.restart(victim);
    const caughtUp = await until(
      'the restarted node current on every stream',
      async () => {
        for (const s of [STREAMS.ledger, STREAMS.jobs, STREAMS.tasks, `KV_${BUCKETS.jobs}`]) {
          const info = await jsm.streams.info(s);
          const reps = info.cluster?.replicas ?? [];
          if (reps.length !== 2 || !reps.every((r) => r.current && !r.offline)) return false;
        }
        return true;
      },
      60000,
      500,
    );
    t.ok(caughtUp, 'the restarted node is a current replica of the ledger, jobs and tasks');
    const r = await create(`${pages.url}after-restart`);
    t.equal(r.status, 201, 'jobs are created after the node came back');
    t.equal((await finished(r.json.job.id)).status, 'completed', 'and completed');
    await clean('after the NATS node loss');
  });

  await t.test('the whole system stopped with a job in flight and started again: nothing lost', async (t) => {
    const { gate, id } = await gated();
    const balance = (await http(b.base, 'GET', '/v1/balance', { key })).json.balance as number;
    const ledgerBefore = (await readLedger(b.nc)).length;
    const jobsBefore = (await audit(b.nc)).jobs;
    const ports = {
      clientPorts: b.sys.cluster.nodes.map((n) => n.clientPort),
      clusterPorts: b.sys.cluster.nodes.map((n) => n.clusterPort),
    };
    await b.nc.close();
    await b.sys.stop();
    await gate.close();
    b.sys = await startSystem({ ...b.opts, ...ports });
    b.base = b.sys.gateway()!.url!;
    b.nc = await connectNats(b.sys.cluster.url, 'faults-platform-test-2');
    t.equal((await http(b.base, 'GET', '/v1/balance', { key })).status, 200, 'the key still works');
    t.ok((await readLedger(b.nc)).length >= ledgerBefore, 'every ledger entry is still there');
    // the job in flight: its worker was stopped mid-task; the task is redelivered and fails cleanly
    // (the gate is gone: nothing answers there now) or completes; either way it finishes and is settled
    const job = await finished(id, 150000);
    t.ok(
      isFinished(job),
      `the job in flight finished after the restart (${job.status}, ${job.results.map((r: any) => r.error ?? r.status).join(',')})`,
    );
    t.equal(
      (await http(b.base, 'GET', '/v1/balance', { key })).json?.balance,
      balance + job.refunded,
      'the balance survived (plus the refund of what the job in flight did not deliver)',
    );
    const r = await create(`${pages.url}after-full-restart`);
    t.equal(r.status, 201, 'new jobs are taken');
    t.equal((await finished(r.json.job.id)).status, 'completed', 'and completed');
    const report = await clean('after the full restart');
    t.ok(report.jobs >= jobsBefore + 1, 'every job document survived');
  });
});
