// Actor faults on the 3-node cluster, one system, scenarios in order:
//   1. the job-supervisor SIGKILLed mid-job → a new one resumes it;
//   2. a gateway SIGKILLed while clients long-poll → clients that retry get their jobs;
//   3. the wallet killed between writing a charge and answering → no double charge, no lost refund.
// After each: no job left unfinished and the money audit clean. NATS faults: faults-nats.scenario.ts.
import t from 'tap';
import { setTimeout as sleep } from 'node:timers/promises';
import { http, until } from '../helpers/cluster.ts';
import { startFaultBench } from '../helpers/faults.ts';
import { readLedger } from '../../shared/audit.ts';
import { isFinished } from '../../shared/protocol/jobs.ts';
import { startPages } from './fixtures/pages.ts';

const pages = await startPages();
t.teardown(() => pages.close());

/** Found by this test (docs/notes/issue-8.md, finding 1): when the wallet dies after writing the
 * charge and before replying, the gateway answers 503 without knowing whether it charged. The
 * wallet's orphan sweep (actors/wallet/orphans.ts) refunds such a charge once no job document
 * exists after wallet.orphanChargeGraceSeconds (short here). */
const ORPHAN_GRACE_SECONDS = 10;

t.test('actor faults on the cluster', async (t) => {
  const b = await startFaultBench(t, {
    pagesPort: pages.port,
    name: 'faults-platform',
    config: { wallet: { orphanChargeGraceSeconds: ORPHAN_GRACE_SECONDS } },
  });
  const { key, walletId, create, finished, clean, gated } = b;

  await t.test('job-supervisor SIGKILLed mid-job: a new one resumes it', async (t) => {
    const { gate, id } = await gated();
    const sup = b.sys.procs.find((p) => p.name === 'job-supervisor')!;
    t.equal(await sup.kill('SIGKILL'), 'SIGKILL', 'supervisor killed while the job is processing');
    gate.open();
    // the converter finishes and reports; nobody records it until a supervisor runs again
    await sleep(3000);
    const mid = await http(b.base, 'GET', `/v1/jobs/${id}`, { key });
    t.notOk(isFinished(mid.json.job), `without a supervisor the job waits (${mid.json.job.status})`);
    await b.sys.add('job-supervisor');
    const job = await finished(id);
    t.equal(job.status, 'completed', 'the new supervisor finished the job');
    t.equal(job.results[0].status, 'done', 'its result was delivered');
    await clean('after the supervisor restart');
  });

  await t.test('gateway SIGKILLed while clients long-poll: retrying clients get their jobs', async (t) => {
    const { gate, id } = await gated();
    const polls = Array.from({ length: 5 }, async () => {
      let errors = 0;
      for (;;) {
        try {
          const r = await http(b.base, 'GET', `/v1/jobs/${id}?wait=25`, { key, timeoutMs: 35000 });
          if (r.status === 200 && isFinished(r.json.job)) return { job: r.json.job, errors };
          if (r.status !== 200) errors++;
        } catch {
          errors++;
          await sleep(300);
        }
      }
    });
    await sleep(1000);
    const gw = b.sys.gateway()!;
    t.equal(await gw.kill('SIGKILL'), 'SIGKILL', 'gateway killed under five long polls');
    // A load balancer would send the retries to another gateway: the clients follow `base`.
    // (uWebSockets.js may refuse the dead gateway's port for a while: connections in TIME_WAIT.)
    const g2 = await b.sys.add('gateway');
    b.base = g2.url!;
    gate.open();
    const results = await Promise.all(polls);
    t.ok(
      results.every((r) => r.job.id === id && r.job.status === 'completed'),
      'every client got the completed job',
    );
    t.ok(
      results.every((r) => r.errors >= 1),
      'every client saw the gateway go away and retried',
    );
    await clean('after the gateway restart');
  });

  await t.test('wallet killed between writing a charge and answering: no double charge, no lost refund', async (t) => {
    const before = (await http(b.base, 'GET', '/v1/balance', { key })).json.balance as number;
    const healthy = b.sys.procs.find((p) => p.name === 'wallet' && p.child.exitCode === null && p.child.signalCode === null)!;
    // the only wallet is one that dies right after its ledger write, before replying
    const faulty = await b.sys.add('wallet', { WALLET_FAULT: 'after-ledger-write' });
    await healthy.stop();
    const r = await create(`${pages.url}wallet-dies`);
    t.comment(`answer while the wallet died mid-charge: ${r.status} ${r.json?.error?.code ?? r.json?.job?.status}`);
    t.equal(await faulty.exited, 'SIGKILL', 'the wallet died at its fault point');
    await b.sys.add('wallet');
    if (r.status === 201) {
      const job = await finished(r.json.job.id);
      t.equal(job.status, 'completed', 'the job was charged once and completed');
    } else {
      t.ok(r.status === 503 || r.status === 500, `the client was told to retry (${r.status})`);
    }
    // settle: whatever the gateway answered, the ledger must agree with it. A refused creation's
    // charge comes back through the orphan sweep (its grace and a sweep): awaited, not slept for
    if (r.status === 201) await sleep(2 * ORPHAN_GRACE_SECONDS * 1000 + 2000);
    else
      await until(
        'the charge written before the crash given back',
        async () => (await http(b.base, 'GET', '/v1/balance', { key })).json.balance === before,
        2 * ORPHAN_GRACE_SECONDS * 1000 + 30000,
        500,
      ).catch(() => undefined);
    const report = await clean('after the wallet crash');
    const after = (await http(b.base, 'GET', '/v1/balance', { key })).json.balance as number;
    const charges = (await readLedger(b.nc)).filter((e) => e.walletId === walletId && e.type === 'charge');
    const byJob = new Map<string, number>();
    for (const c of charges) byJob.set(c.jobId!, (byJob.get(c.jobId!) ?? 0) + 1);
    t.ok(
      [...byJob.values()].every((n) => n === 1),
      'no job charged twice',
    );
    if (r.status !== 201) t.equal(after, before, 'a refused creation cost nothing (the charge written before the crash was given back)');
    t.equal(report.balances[walletId], after, "the balance the API shows is the ledger's");
  });
});
