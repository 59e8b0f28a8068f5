// Proof that an acknowledged write is on disk: strace watches the nats-server (Debian's strace), the real wallet writes
// N ledger entries (operator grants) and the test writes N job documents; for each one the log must
// show the block-file write, then an fsync of that file, then the acknowledgement to the client.
// The same run with the nats-server default (sync_interval 2m) shows acknowledgements with no fsync
// before them: what a power cut would lose.
import t from 'tap';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Kvm } from '@nats-io/kv';
import { startNatsServer } from '../../shared/nats/server.ts';
import { connectNats } from '../../shared/nats/connect.ts';
import { provision } from '../../shared/nats/provision.ts';
import { BUCKETS, STREAMS } from '../../shared/names.ts';
import { wallet } from '../../shared/protocol/wallet.ts';
import { start as startWalletActor } from '../../actors/wallet/index.ts';
import { tempDir, testConfig, testLog } from '../helpers/nats.ts';
import { attachStrace, checkAcks } from './_fsync-trace.ts';

const N = 12;

async function run(t: { teardown(fn: () => unknown): void }, syncInterval: string) {
  const dir = tempDir('payloads-strace-');
  const log = join(dir, 'strace.log');
  const server = await startNatsServer({ storeDir: join(dir, 'store'), port: -1, syncInterval });
  t.teardown(() => server.destroy());
  const strace = await attachStrace(server.pid, log);
  const nc = await connectNats(server.url, 'test');
  const config = testConfig({}, server.url);
  await provision(nc, config);
  const wnc = await connectNats(server.url, 'wallet');
  const w = await startWalletActor({ nc: wnc, config, log: testLog(), instanceId: 'wallet-strace' });

  const ledger: { seq: number; marker: string }[] = [];
  const walletId = `w_strace_${syncInterval}`;
  for (let i = 0; i < N; i++) {
    const marker = `fsync-mark-ledger-${i}-${Math.random().toString(36).slice(2, 8)}`;
    const r = await wallet.grant(nc, walletId, 100 + i, marker);
    ledger.push({ seq: r.entryId!, marker });
  }
  const jobs = await new Kvm(nc).open(BUCKETS.jobs);
  const jobWrites: { seq: number; marker: string }[] = [];
  for (let i = 0; i < N; i++) {
    const marker = `fsync-mark-job-${i}-${Math.random().toString(36).slice(2, 8)}`;
    const seq = await jobs.put(`j_strace_${i}`, JSON.stringify({ id: `j_strace_${i}`, marker }));
    jobWrites.push({ seq, marker });
  }
  // clients first (nothing left reconnecting), then the server: strace has written all once it exits
  await w.stop();
  await wnc.close();
  await nc.close();
  await server.stop();
  await strace.exited;
  const text = readFileSync(log, 'utf8');
  return { ledger: checkAcks(text, STREAMS.ledger, ledger), jobs: checkAcks(text, `KV_${BUCKETS.jobs}`, jobWrites) };
}

t.test('sync_interval always: every acknowledged ledger entry and job document was fsynced first', async (t) => {
  const r = await run(t, 'always');
  for (const [what, checks] of Object.entries(r)) {
    t.equal(checks.filter((c) => c.written).length, N, `${what}: the ${N} writes are in the trace`);
    t.equal(checks.filter((c) => c.acked).length, N, `${what}: the ${N} acknowledgements are in the trace`);
    t.same(
      checks.filter((c) => !c.syncedBeforeAck).map((c) => c.seq),
      [],
      `${what}: no acknowledgement before its fsync`,
    );
  }
});

t.test('the nats-server default (sync_interval 2m): acknowledgements with no fsync before them', async (t) => {
  const r = await run(t, '2m');
  for (const [what, checks] of Object.entries(r)) {
    t.equal(checks.filter((c) => c.written && c.acked).length, N, `${what}: writes and acknowledgements found`);
    t.equal(
      checks.filter((c) => !c.syncedBeforeAck).length,
      N,
      `${what}: all ${N} acknowledged before any fsync (the check above can fail)`,
    );
  }
});
