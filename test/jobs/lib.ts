// The jobs tests' system at the NATS level: a real nats-server, the real wallet actor, the real
// job-supervisor, and the test worker speaking the documented protocol. Jobs are made from a
// hand-written plan and go through the same charge → write → publish path as the gateway's.
import { jetstream } from '@nats-io/jetstream';
import { Kvm } from '@nats-io/kv';
import { Objm } from '@nats-io/obj';
import { startTestNats, testLog, type TestNats } from '../helpers/nats.ts';
import { startTestWorker } from '../helpers/test-worker.ts';
import { start as startWallet } from '../../actors/wallet/index.ts';
import { start as startSupervisor } from '../../actors/job-supervisor/index.ts';
import { createKey } from '../../shared/keys.ts';
import { wallet } from '../../shared/protocol/wallet.ts';
import { BUCKETS, subjects, type ServiceName } from '../../shared/names.ts';
import { commitJob, newJobRecord, type JobDeps } from '../../gateway/jobs/create.ts';
import { readJob } from '../../shared/jobs/store.ts';
import { findJob } from '../../gateway/jobs/index.ts';
import { JobWatch } from '../../gateway/jobs/watch.ts';
import { audit } from '../../shared/audit.ts';
import type { JobRecord } from '../../shared/protocol/jobs.ts';
import type { PlanItem } from '../../shared/services/index.ts';
import type { ActorHandle } from '../../shared/actor.ts';

type Tap = { teardown(fn: () => unknown): void };

export interface ItemSpec {
  key: string;
  price: number;
  /** Test-worker behaviour; omit `behave` and set `task: false` for a result without work. */
  behave?: string;
  params?: Record<string, unknown>;
  task?: boolean;
  oneTime?: boolean;
  needsDataset?: boolean;
}

export async function startJobsSystem(t: Tap, overrides: Record<string, unknown> = {}) {
  const tn: TestNats = await startTestNats(t, overrides);
  const log = testLog();
  const handles: ActorHandle[] = [];
  let n = 0;
  const startActor = async (start: typeof startWallet, name: string) => {
    const nc = await tn.connect(name);
    const h = await start({ nc, config: tn.config, log, instanceId: `${name}-${++n}` });
    handles.push(h);
    return h;
  };
  await startActor(startWallet, 'wallet');
  const supervisors: ActorHandle[] = [await startActor(startSupervisor, 'supervisor')];
  const workers: { stop(): Promise<void> }[] = [];
  t.teardown(async () => {
    for (const w of workers) await w.stop().catch(() => {});
    for (const h of handles.reverse()) await h.stop().catch(() => {});
  });

  const kvm = new Kvm(tn.nc);
  const deps: JobDeps = {
    nc: tn.nc,
    js: jetstream(tn.nc),
    config: tn.config,
    log,
    kv: { jobs: await kvm.open(BUCKETS.jobs), catalogue: await kvm.open(BUCKETS.catalogue), datasets: await kvm.open(BUCKETS.datasets) },
  };

  // one watch of the bucket for every finished() of the test, as the gateway's long polls share one
  const jobWatch = new JobWatch(deps.kv.jobs, log);
  const walletOf = new Map<string, string>();
  t.teardown(() => jobWatch.stop());

  return {
    ...tn,
    deps,
    log,
    supervisors,
    async startSupervisor() {
      const h = await startActor(startSupervisor, 'supervisor');
      supervisors.push(h);
      return h;
    },
    async startWorker(opts: { consumer?: string; filterSubject?: string; concurrency?: number } = {}) {
      const nc = await tn.connect('worker');
      const w = await startTestWorker({ nc, config: tn.config, log, ...opts });
      workers.push(w);
      return w;
    },
    /** A new wallet holding `balance` Payloads. */
    async newWallet(balance = 10_000) {
      const { key, walletId } = await createKey(tn.nc, 'admin');
      if (balance) await wallet.grant(tn.nc, walletId, balance, 'test');
      return { key, walletId };
    },
    async balance(walletId: string) {
      return (await wallet.balance(tn.nc, walletId)).balance;
    },
    /** Charge, write and publish a job whose results the test worker handles as told. */
    async submit(walletId: string, items: ItemSpec[], service: ServiceName = 'websitepro') {
      const planItems: PlanItem[] = items.map((i) => ({
        key: i.key,
        price: i.price,
        ...(i.oneTime ? { oneTime: true } : {}),
        ...(i.needsDataset !== undefined ? { needsDataset: i.needsDataset } : {}),
        ...(i.task === false
          ? {}
          : { task: { subject: subjects.taskWebsitepro, params: { behave: i.behave ?? 'succeed', ...(i.params ?? {}) } } }),
      }));
      const job = newJobRecord(service, { target: '127.0.0.1', items: planItems }, walletId, { test: true }, tn.config);
      walletOf.set(job.id, walletId);
      return commitJob(deps, job);
    },
    /** The job's document in the bucket, else (archived once its results expired) as a supervisor finds it. */
    async job(id: string): Promise<JobRecord> {
      const r = await findJob(tn.nc, deps.kv.jobs, walletOf.get(id) ?? '-', id);
      if (!r) throw new Error(`no job ${id}`);
      return r.job;
    },
    /** Wait (the shared KV watch) until the job is finished; fails the test's expectations if it is not. */
    async finished(id: string, ms = 20_000): Promise<JobRecord> {
      const cur = await readJob(deps.kv.jobs, id);
      return jobWatch.wait(cur!.job, ms);
    },
    async objects(store: string): Promise<string[]> {
      const os = await new Objm(tn.nc).open(store);
      return (await os.list())
        .filter((o) => !o.deleted)
        .map((o) => o.name)
        .sort();
    },
    async violations() {
      return (await audit(tn.nc)).violations;
    },
  };
}

export type JobsSystem = Awaited<ReturnType<typeof startJobsSystem>>;
