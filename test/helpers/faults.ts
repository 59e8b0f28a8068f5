// The set-up shared by the fault tests (test/reliability/faults-*.test.ts): one system on the 3-node
// cluster with a funded key, and the steps every scenario uses. `sys`, `base` and `nc` are fields
// because scenarios replace them (a new gateway, a restarted system); the steps always use the
// current ones.
import { Kvm } from '@nats-io/kv';
import { startSystem, type System, type SystemOptions, type ProcessName } from '../../scripts/cluster-lib.ts';
import { http, until, retry, testSystemConfig, type HttpAnswer } from './cluster.ts';
import { tempDir } from './nats.ts';
import { connectNats, type NatsConnection } from '../../shared/nats/connect.ts';
import { createKey } from '../../shared/keys.ts';
import { wallet } from '../../shared/protocol/wallet.ts';
import { audit, type AuditReport } from '../../shared/audit.ts';
import { BUCKETS } from '../../shared/names.ts';
import { isFinished, type JobRecord } from '../../shared/protocol/jobs.ts';
import { startGate, type Gate } from '../reliability/fixtures/gate.ts';

type Tap = {
  teardown(fn: () => unknown): void;
  same(found: unknown, wanted: unknown, msg: string): boolean;
  equal(found: unknown, wanted: unknown, msg: string): boolean;
};

export const FAULT_GRANT = 1_000_000;

export interface FaultBench {
  sys: System;
  base: string;
  nc: NatsConnection;
  key: string;
  walletId: string;
  /** The options the system was started with (a restart uses them again). */
  opts: SystemOptions & { processes: ProcessName[] };
  /** A websitepro metadata job of `url`. */
  create(url: string): Promise<HttpAnswer>;
  /** Long-poll job `id` until it is finished; its public document. */
  finished(id: string, ms?: number): Promise<any>;
  /** No job left unfinished and the money audit clean; the audit report. */
  clean(when: string): Promise<AuditReport>;
  /** A job whose converter is provably inside its task: the target holds the connection. */
  gated(): Promise<{ gate: Gate; id: string }>;
}

export async function startFaultBench(
  t: Tap,
  o: { pagesPort: number; name: string; config?: Record<string, unknown> },
): Promise<FaultBench> {
  const opts = {
    dataDir: tempDir(`payloads-${o.name}-`),
    logLevel: process.env.TEST_LOG_LEVEL ?? 'warn',
    config: testSystemConfig({ websitepro: { fetchTimeoutMs: 120000 }, ...o.config }),
    processes: ['wallet', 'job-supervisor', 'converter', 'gateway'] as ProcessName[],
  };
  let b: FaultBench | undefined;
  const sys = await startSystem(opts);
  // teardowns run last first: the connection closes, then the (current) system stops
  t.teardown(() => (b?.sys ?? sys).stop());
  const nc = await connectNats(sys.cluster.url, `${o.name}-test`);
  t.teardown(() => (b?.nc ?? nc).close().catch(() => {}));
  const { key, walletId } = await createKey(nc, 'admin');
  await wallet.grant(nc, walletId, FAULT_GRANT, 'fault test funds', o.name);
  const bench: FaultBench = {
    sys,
    base: sys.gateway()!.url!,
    nc,
    key,
    walletId,
    opts,
    create: (url) => http(bench.base, 'POST', '/v1/websitepro/jobs', { key, body: { url, outputs: ['metadata'] } }),
    finished: (id, ms = 90000) =>
      until(
        `job ${id} finished`,
        async () => {
          const r = await http(bench.base, 'GET', `/v1/jobs/${id}?wait=20`, { key, timeoutMs: 30000 });
          return r.status === 200 && isFinished(r.json.job) ? r.json.job : null;
        },
        ms,
        100,
      ),
    async clean(when) {
      const kv = await new Kvm(bench.nc).open(BUCKETS.jobs);
      const unfinished: string[] = [];
      for await (const k of await kv.keys()) {
        const e = await kv.get(k);
        if (e?.operation === 'PUT' && !isFinished(e.json<JobRecord>())) unfinished.push(k);
      }
      t.same(unfinished, [], `${when}: no job left unfinished`);
      const report = await retry(() => audit(bench.nc));
      t.same(report.violations, [], `${when}: money audit clean`);
      return report;
    },
    async gated() {
      const gate = await startGate(o.pagesPort);
      t.teardown(() => gate.close());
      const r = await bench.create(`http://127.0.0.1:${gate.port}/held`);
      t.equal(r.status, 201, 'job created');
      await until('the converter inside the task', async () => gate.working() > 0, 60000);
      return { gate, id: r.json.job.id };
    },
  };
  b = bench;
  return bench;
}
