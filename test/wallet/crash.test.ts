// The wallet as its own process (actors/run.ts), killed with SIGKILL between steps; a restarted
// instance finishes the work: nothing lost, nothing counted twice.
import t from 'tap';
import { spawn, type ChildProcess } from 'node:child_process';
import { Kvm } from '@nats-io/kv';
import { decode } from 'light-bolt11-decoder';
import { setTimeout as sleep } from 'node:timers/promises';
import { startTestNats, tempDir, type TestNats } from '../helpers/nats.ts';
import { walletId, fund } from './_helpers.ts';
import { wallet } from '../../shared/protocol/wallet.ts';
import { audit } from '../../shared/audit.ts';
import { ApiError } from '../../shared/errors.ts';
import { BUCKETS } from '../../shared/names.ts';
import { ROOT } from '../../shared/config/index.ts';

type Tap = { teardown(fn: () => unknown): void };

async function spawnWallet(t: Tap, tn: TestNats, dataDir: string, fault = ''): Promise<ChildProcess> {
  const child = spawn(process.execPath, ['--import', 'tsx', 'actors/run.ts', 'wallet'], {
    cwd: ROOT,
    env: { ...process.env, NATS_URL: tn.server.url, DATA_DIR: dataDir, LOG_LEVEL: 'warn', WALLET_FAULT: fault, CONFIG_FILE: '' },
    stdio: ['ignore', 'ignore', 'inherit', 'ipc'],
  });
  t.teardown(() => { if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL'); });
  await new Promise<void>((resolve, reject) => {
    child.once('message', () => resolve());
    child.once('exit', (code) => reject(new Error(`wallet process exited early (${code})`)));
  });
  return child;
}

const exited = (c: ChildProcess) => new Promise<NodeJS.Signals | null>((r) => (c.exitCode !== null || c.signalCode !== null ? r(c.signalCode) : c.once('exit', (_code, sig) => r(sig))));

/** A client that retries a wallet call until some instance answers it, as the gateway and supervisor do. */
async function retry<T>(fn: () => Promise<T>): Promise<T> {
  for (let i = 0; ; i++) {
    try {
      return await fn();
    } catch (e) {
      if (!(e instanceof ApiError && e.code === 'service_unavailable') || i > 200) throw e;
      await sleep(100);
    }
  }
}

t.test('killed right after writing a charge, before answering: the retried charge counts once', async (t) => {
  const tn = await startTestNats(t);
  const dataDir = tempDir('payloads-wallet-');
  const w = walletId();
  const first = await spawnWallet(t, tn, dataDir, 'after-ledger-write');
  const done = exited(first);
  // The grant is the first write: the process dies right after it.
  const grant = wallet.grant(tn.nc, w, 1000, 'crash test', 'g-1').catch((e) => e);
  t.equal(await done, 'SIGKILL', 'the wallet process died after the write');
  t.ok((await grant) instanceof ApiError, 'the caller got no answer');
  await spawnWallet(t, tn, dataDir);
  const g = await retry(() => wallet.grant(tn.nc, w, 1000, 'crash test', 'g-1'));
  t.equal(g.balance, 1000, 'the retried grant (same id) is not added again');
  const c = await retry(() => wallet.charge(tn.nc, { walletId: w, jobId: 'j-1', amount: 300 }));
  t.equal(c.balance, 700);
  t.equal((await retry(() => wallet.charge(tn.nc, { walletId: w, jobId: 'j-1', amount: 300 }))).balance, 700);
  t.equal((await wallet.transactions(tn.nc, w)).entries.length, 2);
});

t.test('charges in flight when the process dies: every retried job is charged exactly once', async (t) => {
  const tn = await startTestNats(t);
  const dataDir = tempDir('payloads-wallet-');
  const w = walletId();
  const a = await spawnWallet(t, tn, dataDir);
  await fund(tn.nc, w, 10_000);
  const jobs = Array.from({ length: 40 }, (_, i) => `job-${i}`);
  const calls = jobs.map((jobId, i) => sleep(i * 5).then(() => retry(() => wallet.charge(tn.nc, { walletId: w, jobId, amount: 100 }))));
  await sleep(60);
  a.kill('SIGKILL');
  await exited(a);
  await spawnWallet(t, tn, dataDir);
  await Promise.all(calls);
  t.same(await wallet.balance(tn.nc, w), { balance: 10_000 - 40 * 100 });
  const entries = (await wallet.transactions(tn.nc, w)).entries;
  t.equal(entries.filter((e) => e.type === 'charge').length, 40, 'one charge per job');
  const r = await audit(tn.nc);
  t.same(r.violations.filter((v) => !/no job document/.test(v)), []);
});

t.test('killed between crediting a top-up and marking it paid: the restart finishes it, credited once', async (t) => {
  const tn = await startTestNats(t);
  const dataDir = tempDir('payloads-wallet-');
  const w = walletId();
  const a = await spawnWallet(t, tn, dataDir, 'after-credit');
  const { topup } = await wallet.topupCreate(tn.nc, w, 10);
  const done = exited(a);
  // The operator pays; the process credits and dies before the document says paid.
  const hash = decode(topup.bolt11!).sections.find((s) => s.name === 'payment_hash')!.value as string;
  const kv = await new Kvm(tn.nc).open(BUCKETS.devInvoices);
  const inv = (await kv.get(hash))!.json<Record<string, unknown>>();
  await kv.put(hash, JSON.stringify({ ...inv, state: 'paid', paidAt: Date.now() }));
  t.equal(await done, 'SIGKILL');
  const topups = await new Kvm(tn.nc).open(BUCKETS.topups);
  t.equal((await topups.get(topup.id))!.json<{ status: string }>().status, 'pending', 'document still pending');
  t.same(await wallet.balance(tn.nc, w).catch(() => null), null, 'no wallet running');
  await spawnWallet(t, tn, dataDir);
  let status = 'pending';
  for (let i = 0; i < 100 && status === 'pending'; i++) {
    await sleep(100);
    status = (await topups.get(topup.id))!.json<{ status: string }>().status;
  }
  t.equal(status, 'paid', 'the restarted wallet found the pending top-up and finished it');
  t.same(await wallet.balance(tn.nc, w), { balance: 100_000 }, 'credited once');
  t.same((await audit(tn.nc)).violations, []);
});
