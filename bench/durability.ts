// What fsync before acknowledgement costs: the same writes against two nats-servers running side by
// side, one with `sync_interval: always` (the project's setting) and one with the server's default
// (`2m`: acknowledged before the disk has it, unsafe for money). Rounds alternate between the two,
// so load from other processes hits both alike. Value: always; baseline: 2m.
//   ledger writes/s: operator grants through the real wallet actor (one ledger entry each), one
//     wallet in sequence and 8 wallets at once;
//   job creation latency: gateway/jobs commitJob (charge, job document, job.submitted: 3 stream
//     writes, each fsynced before its acknowledgement), in sequence.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { jetstream } from '@nats-io/jetstream';
import { Kvm } from '@nats-io/kv';
import { startNatsServer, type NatsServerHandle } from '../shared/nats/server.ts';
import { connectNats, type NatsConnection } from '../shared/nats/connect.ts';
import { provision } from '../shared/nats/provision.ts';
import { loadConfig } from '../shared/config/index.ts';
import { createLogger } from '../shared/log.ts';
import { BUCKETS } from '../shared/names.ts';
import { wallet } from '../shared/protocol/wallet.ts';
import { newId } from '../shared/ids.ts';
import { start as startWallet } from '../actors/wallet/index.ts';
import { commitJob, newJobRecord, type JobDeps } from '../gateway/jobs/index.ts';
import { figure, median, quick, type BenchRow } from './figure.ts';

interface Side {
  name: string;
  server: NatsServerHandle;
  nc: NatsConnection;
  wnc: NatsConnection;
  stopWallet: () => Promise<void>;
  deps: JobDeps;
  dir: string;
}

async function side(syncInterval: string): Promise<Side> {
  const dir = mkdtempSync(join(tmpdir(), `payloads-bench-sync-${syncInterval}-`));
  const server = await startNatsServer({ storeDir: join(dir, 'nats'), port: -1, syncInterval });
  const config = loadConfig({
    env: {},
    noDefaultFile: true,
    overrides: { dataDir: dir, nats: { url: server.url }, server: { logLevel: 'warn' } },
  });
  const log = createLogger('bench', 'warn');
  const nc = await connectNats(server.url, 'bench');
  await provision(nc, config);
  const wnc = await connectNats(server.url, 'wallet');
  const w = await startWallet({ nc: wnc, config, log, instanceId: `wallet-bench-${syncInterval}` });
  const kvm = new Kvm(nc);
  const deps: JobDeps = {
    nc,
    js: jetstream(nc),
    config,
    log,
    kv: { jobs: await kvm.open(BUCKETS.jobs), catalogue: await kvm.open(BUCKETS.catalogue), datasets: await kvm.open(BUCKETS.datasets) },
  };
  return { name: syncInterval, server, nc, wnc, stopWallet: () => w.stop(), deps, dir };
}

async function ledgerWritesPerSecond(s: Side, writes: number, wallets: number): Promise<number> {
  const ids = Array.from({ length: wallets }, () => newId('w'));
  const t0 = performance.now();
  await Promise.all(
    ids.map(async (id) => {
      for (let i = 0; i < writes / wallets; i++) await wallet.grant(s.nc, id, 1, 'bench');
    }),
  );
  return writes / ((performance.now() - t0) / 1000);
}

async function jobCreateMs(s: Side, jobs: number): Promise<number> {
  const walletId = newId('w');
  await wallet.grant(s.nc, walletId, 1_000_000, 'bench');
  const out: number[] = [];
  for (let i = 0; i < jobs; i++) {
    const job = newJobRecord(
      'websitepro',
      { target: 'bench.example', items: [{ key: 'metadata', price: 20, task: { subject: 'task.websitepro.bench', params: {} } }] } as never,
      walletId,
      { url: 'https://bench.example/' },
      s.deps.config,
    );
    const t0 = performance.now();
    await commitJob(s.deps, job);
    out.push(performance.now() - t0);
  }
  return median(out);
}

export async function runDurabilityBench(): Promise<{ rows: BenchRow[]; raw: unknown }> {
  const rounds = quick() ? 3 : 7;
  const writes = quick() ? 64 : 240;
  const jobs = quick() ? 20 : 80;
  const sides = [await side('always'), await side('2m')];
  const m: Record<string, { seq: number[]; par: number[]; job: number[] }> = {
    always: { seq: [], par: [], job: [] },
    '2m': { seq: [], par: [], job: [] },
  };
  try {
    for (let r = 0; r < rounds; r++) {
      for (const s of r % 2 ? [...sides].reverse() : sides) {
        m[s.name]!.seq.push(await ledgerWritesPerSecond(s, writes, 1));
        m[s.name]!.par.push(await ledgerWritesPerSecond(s, writes, 8));
        m[s.name]!.job.push(await jobCreateMs(s, jobs));
      }
    }
  } finally {
    for (const s of sides) {
      await s.stopWallet().catch(() => {});
      await s.wnc.close().catch(() => {});
      await s.nc.close().catch(() => {});
      await s.server.stop();
      rmSync(s.dir, { recursive: true, force: true });
    }
  }
  const note =
    'value: sync_interval always (fsync before every acknowledgement); baseline: sync_interval 2m (the nats-server default, unsafe for money); same machine, rounds alternated';
  return {
    rows: [
      figure({
        name: 'durability: ledger writes/s, one wallet in sequence',
        unit: 'writes/s',
        samples: m.always!.seq,
        baselineSamples: m['2m']!.seq,
        note,
      }),
      figure({
        name: 'durability: ledger writes/s, 8 wallets at once',
        unit: 'writes/s',
        samples: m.always!.par,
        baselineSamples: m['2m']!.par,
        note,
      }),
      figure({
        name: 'durability: job creation (charge + document + submit), median',
        unit: 'ms',
        samples: m.always!.job,
        baselineSamples: m['2m']!.job,
        note,
      }),
    ],
    raw: { rounds, writes, jobs, samples: m },
  };
}
