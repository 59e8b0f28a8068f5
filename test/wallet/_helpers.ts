// Shared by the wallet tests: start real wallet actor instances against a test nats-server.
import { randomBytes } from 'node:crypto';
import type { NatsConnection } from '@nats-io/nats-core';
import { start } from '../../actors/wallet/index.ts';
import { tempDir, testLog, type TestNats } from '../helpers/nats.ts';
import type { Config } from '../../shared/config/index.ts';
import { newId } from '../../shared/ids.ts';
import { wallet } from '../../shared/protocol/wallet.ts';
import { Ledger } from '../../actors/wallet/ledger.ts';
import { Projection } from '../../actors/wallet/projection.ts';
import { Topups } from '../../actors/wallet/topups.ts';

type Tap = { teardown(fn: () => unknown): void };

export async function startWallet(t: Tap, tn: TestNats, opts: { nc?: NatsConnection; config?: Config } = {}) {
  const nc = opts.nc ?? (await tn.connect('wallet'));
  const handle = await start({
    nc,
    config: opts.config ?? tn.config,
    log: testLog(),
    instanceId: `wallet-test-${randomBytes(4).toString('hex')}`,
  });
  let stopped = false;
  const stop = async () => {
    if (stopped) return;
    stopped = true;
    await handle.stop();
  };
  t.teardown(stop);
  return { nc, stop };
}

/** A ledger of its own in this process (its consumer and projection), as another wallet instance has. */
export async function ledgerOn(t: Tap, nc: NatsConnection, name: string): Promise<Ledger> {
  const ledger = new Ledger(nc, new Projection(tempDir(`payloads-ledger-${name}-`)), testLog());
  await ledger.start();
  t.teardown(async () => {
    await ledger.stop();
    ledger.projection.close();
  });
  return ledger;
}

/** The wallet's ledger and top-ups without its service, on a projection file in `dir` (kept across opens). */
export async function openTopups(tn: TestNats, dir: string) {
  const projection = new Projection(dir);
  const ledger = new Ledger(tn.nc, projection, testLog());
  await ledger.start();
  const topups = new Topups({ nc: tn.nc, config: tn.config, log: testLog(), ledger });
  await topups.start();
  return {
    topups,
    ledger,
    async stop() {
      await topups.stop();
      await ledger.stop();
      projection.close();
    },
  };
}

export const walletId = () => newId('w');

/** Give a wallet money through an operator grant. */
export async function fund(nc: NatsConnection, w: string, amount: number) {
  return wallet.grant(nc, w, amount, 'test funds');
}

/** Write a job document as the supervisor would, so the audit can match it with the ledger. */
export async function putJob(nc: NatsConnection, w: string, id: string, results: { key: string; price: number; refunded?: boolean }[]) {
  const { Kvm } = await import('@nats-io/kv');
  const { BUCKETS } = await import('../../shared/names.ts');
  const kv = await new Kvm(nc).open(BUCKETS.jobs);
  const cost = results.reduce((s, r) => s + r.price, 0);
  const refunded = results.filter((r) => r.refunded).reduce((s, r) => s + r.price, 0);
  const job = {
    id,
    service: 'websitepro',
    status: 'completed',
    walletId: w,
    target: 'example.org',
    request: {},
    cost,
    refunded,
    createdAt: Date.now(),
    expiresAt: Date.now() + 3600_000,
    results: results.map((r) => ({ key: r.key, status: r.refunded ? 'failed' : 'done', price: r.price, refunded: !!r.refunded })),
  };
  await kv.put(id, JSON.stringify(job));
}
