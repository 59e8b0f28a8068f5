// Network partitions, as Jepsen tests them: the three NATS nodes in their own network namespaces
// (test/helpers/netns.ts), links cut while jobs and top-ups arrive. Scenarios in order, each healed
// before the next: the LEDGER leader isolated for 30 s; a 2/1 split with the leader on the majority
// side; a flapping link (down/up every 2 s for 30 s); 200 ms of delay with tc netem (skipped where
// the kernel has no netem). After each: every acknowledged charge and credit is in the ledger once,
// every created job is finished (completed, or failed and refunded), and the money audit is clean.
// Figures (jobs created, failed creations by code, time to recover) are printed as comments and
// kept in docs/reliability.md. Needs root and `ip netns`; skips with the reason elsewhere.
//   PARTITION_SECONDS=30 (default) the length of each fault
import t, { type Test } from 'tap';
import { writeFileSync, mkdirSync, cpSync, existsSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
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

t.setTimeout(1_200_000);

/** `modprobe sch_netem`: what it said ('loaded' when it worked). */
async function loadNetem(): Promise<string> {
  try {
    await promisify(execFile)('modprobe', ['sch_netem']);
    return 'loaded';
  } catch (e) {
    return String((e as { stderr?: string }).stderr || (e as Error).message).trim();
  }
}
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
  // registered after the cluster's and the processes' teardowns, so it runs before them (tap runs
  // teardowns last-first): a run below the goal keeps every process's and node's log, and the
  // timeline of failed requests, under test-output/ (PARTITION_KEEP_LOGS=1 keeps them always)
  const timeline: string[] = [];
  let belowGoal = false;
  t.teardown(() => {
    if (!belowGoal && process.env.PARTITION_KEEP_LOGS !== '1') return;
    const out = join('test-output', `partitions-${new Date().toISOString().replace(/[:.]/g, '-')}`);
    mkdirSync(out, { recursive: true });
    for (const p of readdirSync(join(dataDir, 'procs'))) {
      const f = join(dataDir, 'procs', p, 'output.log');
      if (existsSync(f)) cpSync(f, join(out, `${p}.log`));
    }
    for (const n of cluster.nodes) {
      const f = join(dataDir, 'netns', n.name, 'nats-server.log');
      if (existsSync(f)) cpSync(f, join(out, `nats-${n.name}.log`));
    }
    writeFileSync(join(out, 'timeline.log'), `${timeline.join('\n')}\n`);
    writeFileSync(join(out, 'figures.json'), JSON.stringify(figures, null, 2));
    console.log(`# logs of this run kept in ${out}`);
  });
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
  const created: string[] = [];
  const paid: string[] = [];
  const figures: Record<string, unknown>[] = [];

  /** What the goal asks of every scenario (issue 45). */
  const GOAL = { created: 0.97, balance: 0.995, recoverMs: 5000 };
  const note = (line: string) => timeline.push(`${new Date().toISOString()} ${line}`);

  /**
   * Jobs from three clients and balance reads from a fourth (and a top-up every 5th round of one)
   * every 250 ms while `fault` runs; its figures. Recovered: the first success of either after the
   * last failure that began after the fault started, measured from the fault's start.
   */
  async function underLoad(name: string, fault: () => Promise<void>) {
    const codes: Record<string, number> = {};
    const balanceCodes: Record<string, number> = {};
    let ok = 0;
    let balanceOk = 0;
    let lastFailureAt = 0;
    let firstFailureAt = 0;
    let slowestMs = 0;
    let stop = false;
    const failed = (kind: string, asked: number, r: { status: number; json?: any }) => {
      const code = `${r.status} ${r.json?.error?.code ?? ''}`.trim();
      (kind === 'balance' ? balanceCodes : codes)[code] = ((kind === 'balance' ? balanceCodes : codes)[code] ?? 0) + 1;
      lastFailureAt = Date.now();
      firstFailureAt ||= asked;
      note(`${name} ${kind} failed after ${Date.now() - asked} ms: ${code} ${r.json?.error?.message ?? ''}`);
    };
    // three clients: one stuck on a request that hangs does not stop the others from trying
    const creations = [0, 1, 2].map((c) =>
      (async () => {
        for (let i = c * 100_000; !stop; i++) {
          const asked = Date.now();
          const r = await http(base, 'POST', '/v1/websitepro/jobs', {
            key,
            body: { url: `${pages.url}${name}-${i}`, outputs: ['metadata'] },
            timeoutMs: 60000,
          }).catch((e: Error) => ({ status: 0, json: { error: { code: `client: ${e.name}`, message: e.message } } }));
          slowestMs = Math.max(slowestMs, Date.now() - asked);
          if (r.status === 201) {
            ok++;
            created.push(r.json.job.id);
          } else failed('creation', asked, r);
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
    );
    const reads = (async () => {
      while (!stop) {
        const asked = Date.now();
        const r = await http(base, 'GET', '/v1/balance', { key, timeoutMs: 60000 }).catch((e: Error) => ({
          status: 0,
          json: { error: { code: `client: ${e.name}`, message: e.message } },
        }));
        if (r.status === 200) balanceOk++;
        else failed('balance', asked, r);
        await sleep(250);
      }
    })();
    // which server the gateway's connection is on, noted when it changes (GET /readyz says)
    const watchGateway = (async () => {
      let was = '';
      while (!stop) {
        const r = await http(base, 'GET', '/readyz', { timeoutMs: 5000 }).catch(() => null);
        const on = r?.status === 200 ? (r.json.nats as string) : `not ready (${r?.status ?? 'no answer'})`;
        const node = cluster.nodes.find((n) => n.url.endsWith(on))?.name ?? on;
        if (node !== was) note(`${name}: gateway on ${node}`);
        was = node;
        await sleep(500);
      }
    })();
    const t0 = Date.now();
    const belowBefore = belowGoal;
    belowGoal = true; // until the figures say otherwise: a scenario that throws keeps the logs
    note(`${name}: fault begins`);
    await fault();
    const healedAt = Date.now();
    note(`${name}: healed`);
    // recovered: a job created after the heal
    // the load stops whatever happens: a recovery that times out left it running, and the test
    // process with it, until tap's 20 min timeout (session 30, run 4); its logs are kept
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
    ).finally(() => {
      stop = true;
    });
    await Promise.all([...creations, reads, watchGateway]);
    const failedCount = Object.values(codes).reduce((a, b) => a + b, 0);
    const balanceFailed = Object.values(balanceCodes).reduce((a, b) => a + b, 0);
    const f = {
      scenario: name,
      faultSeconds: Math.round((healedAt - t0) / 1000),
      created: ok,
      failedCreations: codes,
      createdShare: +(ok / Math.max(1, ok + failedCount)).toFixed(4),
      balanceReads: balanceOk,
      failedBalanceReads: balanceCodes,
      balanceShare: +(balanceOk / Math.max(1, balanceOk + balanceFailed)).toFixed(4),
      // from the fault's start to the last failure (0: none)
      outageSeconds: lastFailureAt > t0 ? +((lastFailureAt - Math.max(t0, firstFailureAt)) / 1000).toFixed(1) : 0,
      recoverSeconds: lastFailureAt > t0 ? +((lastFailureAt - t0) / 1000).toFixed(1) : 0,
      recoveredAfterHealSeconds: +((recovered - healedAt) / 1000).toFixed(1),
      slowestCreationSeconds: +(slowestMs / 1000).toFixed(1),
      failuresAfterHealSeconds: lastFailureAt > healedAt ? +((lastFailureAt - healedAt) / 1000).toFixed(1) : 0,
    };
    figures.push(f);
    t.comment(JSON.stringify(f));
    const meets =
      f.createdShare >= GOAL.created &&
      f.balanceShare >= GOAL.balance &&
      f.failuresAfterHealSeconds === 0 &&
      (failedCount + balanceFailed === 0 || f.recoverSeconds * 1000 <= GOAL.recoverMs);
    belowGoal = belowBefore || !meets;
    return f;
  }

  /** The availability goal of issue 45, asserted for one scenario's figures. */
  function available(t: Test, f: Awaited<ReturnType<typeof underLoad>>) {
    t.ok(
      f.createdShare >= GOAL.created,
      `${f.scenario}: ${(f.createdShare * 100).toFixed(1)} % of job creations succeeded (goal ${GOAL.created * 100} %)`,
    );
    t.ok(
      f.balanceShare >= GOAL.balance,
      `${f.scenario}: ${(f.balanceShare * 100).toFixed(1)} % of balance reads succeeded (goal ${GOAL.balance * 100} %)`,
    );
    t.equal(f.failuresAfterHealSeconds, 0, `${f.scenario}: no failure after the heal`);
    t.ok(
      f.recoverSeconds * 1000 <= GOAL.recoverMs,
      `${f.scenario}: served again ${f.recoverSeconds} s after the fault began (goal ${GOAL.recoverMs / 1000} s)`,
    );
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

  /** Node index of a stream's leader (right after a heal there may be none yet: waits for one). */
  const leaderOf = async (stream: string) =>
    retry(async () => {
      const leader = (await jsm.streams.info(stream)).cluster?.leader;
      const i = cluster.nodes.findIndex((n) => `payloads-${n.name}` === leader);
      if (i < 0) throw new Error(`no ${stream} leader among the nodes yet (${leader ?? 'none'})`);
      return i;
    }, 30000);

  /** One node cut off from the other two for FAULT_MS under load, then healed; availability asserted, nothing lost. */
  async function isolate(t: Test, name: string, victim: number) {
    t.comment(`isolating ${cluster.nodes[victim]!.name}`);
    const f = await underLoad(name, async () => {
      note(`${name}: cutting ${cluster.nodes[victim]!.name}`);
      await cluster.cut(victim);
      await sleep(FAULT_MS);
      await cluster.heal(victim);
    });
    available(t, f);
    await nothingLost(`after ${name}`);
  }

  for (const [label, stream] of [
    ['LEDGER', STREAMS.ledger],
    ['KV_jobs', `KV_${BUCKETS.jobs}`],
    ['tasks stream', STREAMS.tasks],
  ] as const) {
    await t.test(`the ${label} leader isolated for ${FAULT_MS / 1000} s`, async (t) => {
      await isolate(t, `isolate-${label.replace(' ', '-')}-leader`, await leaderOf(stream));
    });
  }

  await t.test("a 2/1 split with the gateway's node on the minority side", async (t) => {
    // the gateway says which server its connection is on (GET /ready answers `nats`)
    const on = (await retry(async () => {
      const r = await http(base, 'GET', '/readyz');
      if (r.status !== 200) throw new Error(`ready ${r.status}`);
      return r.json.nats as string;
    })) as string;
    const minority = cluster.nodes.findIndex((n) => n.url.replace('nats://', '') === on);
    t.ok(minority >= 0, `the gateway is on ${on}`);
    await isolate(t, 'split-2-1-gateway-minority', minority);
  });

  await t.test(`a flapping link: down/up every 2 s for ${FAULT_MS / 1000} s`, async (t) => {
    const victim = await leaderOf(STREAMS.ledger);
    const f = await underLoad('flapping', async () => {
      const end = Date.now() + FAULT_MS;
      while (Date.now() < end) {
        await cluster.cut(victim);
        await sleep(2000);
        await cluster.heal(victim);
        await sleep(2000);
      }
    });
    available(t, f);
    await nothingLost('after the flapping link');
  });

  // netem is a kernel module (sch_netem) that may be unloaded: load it first, and say why not
  const modprobe = await loadNetem();
  const noNetem = await netemUnavailable(cluster.nodes[0]!.ns, 'eth0');
  if (noNetem) t.comment(`modprobe sch_netem: ${modprobe}`);
  await t.test('200 ms delay on every link (tc netem)', { skip: noNetem ?? false }, async (t) => {
    const f = await underLoad('delay-200ms', async () => {
      for (let i = 0; i < 3; i++) await cluster.delay(i, 200);
      await sleep(FAULT_MS);
      for (let i = 0; i < 3; i++) await cluster.delay(i, 0);
    });
    available(t, f);
    await nothingLost('after 200 ms of delay');
  });
  if (noNetem) t.comment(`netem scenario skipped: ${noNetem}`);
  t.comment(`figures: ${JSON.stringify(figures)}`);
});
