// Network partitions, as Jepsen tests them: the three NATS nodes in their own network namespaces
// (test/helpers/netns.ts), links cut while jobs and top-ups arrive. Scenarios in order, each healed
// before the next: the LEDGER leader isolated for 30 s; a 2/1 split with the leader on the majority
// side; a flapping link (down/up every 2 s for 30 s); 200 ms of delay with tc netem (skipped where
// the kernel has no netem). After each: every acknowledged charge and credit is in the ledger once,
// every created job is finished (completed, or failed and refunded), and the money audit is clean.
// Figures (jobs created, failed creations by code, time to recover) are printed as comments and
// kept in docs/reliability.md. Needs root and `ip netns`; skips with the reason elsewhere.
//   PARTITION_SECONDS=30 (default) the length of each fault
import t from 'tap';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { jetstreamManager } from '@nats-io/jetstream';
import { spawnActor, type ActorProcess, type ProcessName } from '../../scripts/cluster-lib.ts';
import { http, until, retry, testSystemConfig } from '../helpers/cluster.ts';
import { tempDir } from '../helpers/nats.ts';
import { netnsUnavailable, netemUnavailable, startNetnsCluster, type NetCluster } from '../helpers/netns.ts';
import { connectNats, type NatsConnection } from '../../shared/nats/connect.ts';
import { createKey } from '../../shared/keys.ts';
import { wallet } from '../../shared/protocol/wallet.ts';
import { audit, readLedger, readBucket } from '../../shared/audit.ts';
import { BUCKETS, STREAMS } from '../../shared/names.ts';
import { isFinished, type JobRecord } from '../../shared/protocol/jobs.ts';
import { startPages } from './fixtures/pages.ts';

t.setTimeout(900_000);
const FAULT_MS = Number(process.env.PARTITION_SECONDS ?? 30) * 1000;
// One run takes 4-15 min on 2 cores (three 30 s faults under load, each followed by a full recovery
// check), too long for the suite's budget: `npm run test:partitions` runs it (PARTITION_TESTS=1).
const unavailable = process.env.PARTITION_TESTS === '1' ? await netnsUnavailable() : 'long scenario: run it with `npm run test:partitions`';

t.test('network partitions under load', { skip: unavailable ?? false }, async (t) => {
  const pages = await startPages();
  t.teardown(() => pages.close());
  const dataDir = tempDir('payloads-partition-');
  const cluster: NetCluster = await startNetnsCluster(dataDir);
  t.teardown(() => cluster.stop());
  const configFile = join(dataDir, 'config.json');
  // a generous job limit: the three clients create several hundred jobs an hour's limit would refuse
  writeFileSync(
    configFile,
    JSON.stringify(
      testSystemConfig({
        websitepro: { fetchTimeoutMs: 120000 },
        limits: { jobsPerHour: 100000, jobRequestsPerMinute: 100000 },
        outbound: { allowCidrs: ['127.0.0.0/8', '::1/128'], checksPerKeyPerMinute: 100000, checksPerTargetPerMinute: 100000 },
      }),
    ),
  );
  const procs: ActorProcess[] = [];
  t.teardown(() => Promise.all(procs.map((p) => p.stop())));
  for (const name of ['wallet', 'job-supervisor', 'converter', 'gateway'] as ProcessName[]) {
    procs.push(
      await spawnActor(name, { natsUrl: cluster.url, dataDir, replicas: 3, configFile, logLevel: process.env.TEST_LOG_LEVEL ?? 'warn' }),
    );
  }
  const base = procs.at(-1)!.url!;
  const nc: NatsConnection = await connectNats(cluster.url, 'partition-test');
  t.teardown(() => nc.close().catch(() => {}));
  const { key, walletId } = await createKey(nc, 'admin');
  await wallet.grant(nc, walletId, 1_000_000, 'partition test funds', 'partition-funds');
  const jsm = await jetstreamManager(nc);
  // right after a heal the stream may have no leader yet: wait until one of the three is named
  const ledgerLeader = async () =>
    retry(async () => {
      const leader = (await jsm.streams.info(STREAMS.ledger)).cluster?.leader;
      const i = cluster.nodes.findIndex((n) => `payloads-${n.name}` === leader);
      if (i < 0) throw new Error(`no LEDGER leader among the nodes yet (${leader ?? 'none'})`);
      return i;
    }, 30000);

  const created: string[] = [];
  const paid: string[] = [];
  const figures: Record<string, unknown>[] = [];

  /** Jobs from three clients (and a top-up every 5th round of one) every 250 ms while `fault` runs; its figures. */
  async function underLoad(name: string, fault: () => Promise<void>) {
    const codes: Record<string, number> = {};
    let ok = 0;
    let lastFailureAt = 0;
    let slowestMs = 0;
    let stop = false;
    // three clients: one stuck on a request that hangs does not stop the others from trying
    const loop = Promise.all(
      [0, 1, 2].map((c) =>
        (async () => {
          for (let i = c * 100_000; !stop; i++) {
            const asked = Date.now();
            const r = await http(base, 'POST', '/v1/websitepro/jobs', {
              key,
              body: { url: `${pages.url}${name}-${i}`, outputs: ['metadata'] },
              timeoutMs: 60000,
            }).catch((e: Error) => ({ status: 0, json: { error: { code: `client: ${e.name}` } } }));
            slowestMs = Math.max(slowestMs, Date.now() - asked);
            if (r.status === 201) {
              ok++;
              created.push(r.json.job.id);
            } else {
              const code = `${r.status} ${r.json?.error?.code ?? ''}`.trim();
              codes[code] = (codes[code] ?? 0) + 1;
              lastFailureAt = Date.now();
            }
            if (c === 0 && i % 5 === 0) {
              // a top-up made and paid: an acknowledged payment must be credited exactly once
              await wallet
                .topupCreate(nc, walletId, 1)
                .then((c) => wallet.topupPay(nc, c.topup.id))
                .then(
                  (p) => {
                    paid.push(p.topup.id);
                  },
                  () => {},
                );
            }
            await sleep(250);
          }
        })(),
      ),
    );
    const t0 = Date.now();
    await fault();
    const healedAt = Date.now();
    // recovered: a job created after the heal
    const recovered = await until(
      `a job created after ${name} healed`,
      async () => {
        const r = await http(base, 'POST', '/v1/websitepro/jobs', {
          key,
          body: { url: `${pages.url}${name}-after`, outputs: ['metadata'] },
          timeoutMs: 30000,
        });
        if (r.status === 201) created.push(r.json.job.id);
        return r.status === 201 ? Date.now() : null;
      },
      90_000,
      250,
    );
    stop = true;
    await loop;
    const f = {
      scenario: name,
      faultSeconds: Math.round((healedAt - t0) / 1000),
      created: ok,
      failedCreations: codes,
      recoverSeconds: +((recovered - healedAt) / 1000).toFixed(1),
      slowestCreationSeconds: +(slowestMs / 1000).toFixed(1),
      failuresAfterHealSeconds: lastFailureAt > healedAt ? +((lastFailureAt - healedAt) / 1000).toFixed(1) : 0,
    };
    figures.push(f);
    t.comment(JSON.stringify(f));
    return f;
  }

  /** Nothing lost: every created job finished, every acknowledged charge and credit in the ledger once, the audit clean. */
  async function nothingLost(when: string) {
    for (const id of created) {
      await until(
        `job ${id} finished (${when})`,
        async () => {
          const r = await http(base, 'GET', `/v1/jobs/${id}?wait=20`, { key, timeoutMs: 30000 });
          return r.status === 200 && isFinished(r.json.job);
        },
        180_000,
        200,
      );
    }
    const jobs = await retry(() => readBucket<JobRecord>(nc, BUCKETS.jobs));
    const ledger = await retry(() => readLedger(nc));
    const charges = new Map<string, number>();
    for (const e of ledger) if (e.type === 'charge' && e.jobId) charges.set(e.jobId, (charges.get(e.jobId) ?? 0) + 1);
    const missing = created.filter((id) => !jobs.has(id) || charges.get(id) !== 1);
    t.same(missing, [], `${when}: every created job (${created.length}) has its document and exactly one charge`);
    const failedNotRefunded = created
      .map((id) => jobs.get(id)!)
      .filter((j) => j && j.status === 'failed' && j.refunded !== j.cost)
      .map((j) => j.id);
    t.same(failedNotRefunded, [], `${when}: every failed job refunded`);
    const credits = new Set(ledger.filter((e) => e.type === 'topup').map((e) => e.topupId));
    t.same(
      paid.filter((id) => !credits.has(id)),
      [],
      `${when}: every acknowledged top-up (${paid.length}) credited`,
    );
    const report = await retry(() => audit(nc));
    t.same(report.violations, [], `${when}: money audit clean (no double charge, refund or credit)`);
  }

  await t.test(`the LEDGER leader isolated for ${FAULT_MS / 1000} s`, async (t) => {
    const victim = await ledgerLeader();
    t.ok(victim >= 0, `isolating ${cluster.nodes[victim]?.name}`);
    await underLoad('isolate-leader', async () => {
      await cluster.cut(victim);
      await sleep(FAULT_MS);
      await cluster.heal(victim);
    });
    await nothingLost('after the leader was isolated');
  });

  await t.test('a 2/1 split, leader on the majority side, then healed', async (t) => {
    const leader = await ledgerLeader();
    const minority = (leader + 1) % 3;
    t.comment(`cutting ${cluster.nodes[minority]!.name} off; LEDGER leader ${cluster.nodes[leader]!.name}`);
    // a connection of its own, on the node about to be cut off: it must move to the majority
    const minorityServer = cluster.nodes[minority]!.url.replace('nats://', '');
    // the client picks a server of its list at random: connect until it picked the minority's
    let onMinority = await connectNats(cluster.url, 'on-minority');
    for (let i = 0; i < 30 && onMinority.getServer() !== minorityServer; i++) {
      await onMinority.close();
      onMinority = await connectNats(cluster.url, 'on-minority');
    }
    t.teardown(() => onMinority.close().catch(() => {}));
    t.equal(onMinority.getServer(), minorityServer, 'a client connected to the node to be cut off');
    let movedAfterMs = -1;
    await underLoad('split-2-1', async () => {
      await cluster.cut(minority);
      const cutAt = Date.now();
      // the client needs ~20 s to notice (two missed checks 5 s apart, after the cut-off node lost
      // its meta leadership): a shorter fault is held until it moved, for at most 45 s
      const watch = (async () => {
        while (Date.now() - cutAt < 45_000) {
          if (onMinority.getServer() !== minorityServer) {
            movedAfterMs = Date.now() - cutAt;
            return;
          }
          await sleep(250);
        }
      })();
      await sleep(FAULT_MS);
      await watch;
      await cluster.heal(minority);
      t.comment(`split held ${Math.round((Date.now() - cutAt) / 1000)} s`);
    });
    t.ok(movedAfterMs >= 0, `the client left the node without quorum ${movedAfterMs} ms after the cut`);
    t.comment(`client moved off the minority node after ${movedAfterMs} ms`);
    await nothingLost('after the 2/1 split');
  });

  await t.test(`a flapping link: down/up every 2 s for ${FAULT_MS / 1000} s`, async (t) => {
    const victim = await ledgerLeader();
    await underLoad('flapping', async () => {
      const end = Date.now() + FAULT_MS;
      while (Date.now() < end) {
        await cluster.cut(victim);
        await sleep(2000);
        await cluster.heal(victim);
        await sleep(2000);
      }
    });
    await nothingLost('after the flapping link');
  });

  const noNetem = await netemUnavailable(cluster.nodes[0]!.ns, 'eth0');
  await t.test('200 ms delay on every link (tc netem)', { skip: noNetem ?? false }, async (t) => {
    await underLoad('delay-200ms', async () => {
      for (let i = 0; i < 3; i++) await cluster.delay(i, 200);
      await sleep(FAULT_MS);
      for (let i = 0; i < 3; i++) await cluster.delay(i, 0);
    });
    await nothingLost('after 200 ms of delay');
  });
  if (noNetem) t.comment(`netem scenario skipped: ${noNetem}`);
  t.comment(`figures: ${JSON.stringify(figures)}`);
});
