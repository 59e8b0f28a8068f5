// The wallet actor: owns every balance. Others reach it only through its NATS micro service
// endpoints (subjects.wallet.*, client in shared/protocol/wallet.ts).
import { join } from 'node:path';
import type { ActorContext, ActorHandle } from '../../shared/actor.ts';
import { addService } from '../../shared/micro.ts';
import { Kvm } from '@nats-io/kv';
import { withRetry } from '../../shared/runtime.ts';
import { BUCKETS, subjects, token } from '../../shared/names.ts';
import { TRANSACTIONS_PAGE, WALLET_API, type walletApi } from '../../shared/protocol/wallet.ts';
import type { RequestOf } from '../../shared/protocol/endpoint.ts';
import { Ledger, checkWalletId } from './ledger.ts';
import { Projection, rowToEntry } from './projection.ts';
import { jobRecordKeptMs } from '../../shared/jobs/retention.ts';
import { charge, refund, grant, tooLate } from './money.ts';
import { audit } from '../../shared/audit.ts';
import { Topups } from './topups.ts';
import { startOrphanSweep, ORPHAN_RESULT_KEY } from './orphans.ts';
import { ApiError } from '../../shared/errors.ts';
import { startReconciler } from './reconcile.ts';

export async function start(ctx: ActorContext): Promise<ActorHandle> {
  const { nc, config, log: parentLog, instanceId } = ctx;
  const log = parentLog.child({ actor: 'wallet' });
  const projection = new Projection(join(config.dataDir, 'wallet', `ledger-${token(instanceId).replace(/[^A-Za-z0-9_-]/g, '_')}.sqlite`));
  const ledger = new Ledger(nc, projection, log);
  await ledger.start();
  const topups = new Topups({ nc, config, log, ledger });
  await topups.start();
  const orphans = startOrphanSweep({ ledger, projection, jobs: await withRetry('jobs bucket', () => new Kvm(nc).open(BUCKETS.jobs), { log }), graceMs: config.wallet.orphanChargeGraceSeconds * 1000, keptMs: jobRecordKeptMs(config), log });

  const reconciler = startReconciler({ nc, ledger, topups, everyMs: config.wallet.lightning.reconcileSeconds * 1000, log });

  const service = await addService(nc, {
    api: WALLET_API,
    version: '1.0.0',
    endpoints: {
      [subjects.wallet.charge]: async (r: { walletId: unknown; jobId: unknown; amount: unknown; answerBy?: number }) => {
        if (r.answerBy !== undefined && Date.now() > r.answerBy) throw tooLate();
        const res = await charge(ledger, checkWalletId(r.walletId), r.jobId, r.amount, r.answerBy);
        return { balance: res.balance, entryId: res.entry?.id ?? null, duplicate: res.duplicate };
      },
      [subjects.wallet.refund]: async (r: { walletId: unknown; jobId: unknown; resultKey: unknown; amount: unknown }) => {
        const res = await refund(ledger, checkWalletId(r.walletId), r.jobId, r.resultKey, r.amount);
        return { balance: res.balance, entryId: res.entry?.id ?? null, duplicate: res.duplicate };
      },
      [subjects.wallet.chargeOf]: async (r: { walletId: unknown; jobId: unknown }) => {
        const walletId = checkWalletId(r.walletId);
        if (typeof r.jobId !== 'string' || !r.jobId) throw new ApiError('bad_request', 'jobId is missing');
        await ledger.synced(walletId); // every entry of the wallet up to its head
        const rows = projection.forJob(walletId, r.jobId);
        return {
          charged: -rows.filter((x) => x.type === 'charge').reduce((s, x) => s + x.amount, 0),
          refunded: rows.filter((x) => x.type === 'refund').reduce((s, x) => s + x.amount, 0),
          orphaned: rows.some((x) => x.type === 'refund' && x.resultKey === ORPHAN_RESULT_KEY),
        };
      },
      [subjects.wallet.balance]: async (r: { walletId: unknown }) => {
        const head = await ledger.head(checkWalletId(r.walletId));
        return { balance: head.balance };
      },
      [subjects.wallet.transactions]: async (r: RequestOf<typeof walletApi.transactions>) => {
        const walletId = checkWalletId(r.walletId);
        const head = await ledger.synced(walletId);
        const page = projection.page(walletId, r.before ?? undefined, r.limit ?? TRANSACTIONS_PAGE);
        return { entries: page.entries.map(rowToEntry), next: page.next, balance: head.balance };
      },
      [subjects.wallet.grant]: async (r: { walletId: unknown; amount: unknown; reason: unknown; grantId?: unknown }) => {
        const res = await grant(ledger, checkWalletId(r.walletId), r.amount, r.reason, r.grantId);
        return { balance: res.balance, entryId: res.entry?.id ?? null, duplicate: res.duplicate };
      },
      [subjects.wallet.topupCreate]: (r: { walletId: unknown; eur: unknown }) => topups.create(checkWalletId(r.walletId), r.eur),
      [subjects.wallet.topupGet]: (r: { walletId: unknown; topupId: unknown }) => topups.get(checkWalletId(r.walletId), r.topupId),
      [subjects.wallet.topupPay]: (r: { topupId: unknown }) => topups.devPay(r.topupId),
      [subjects.wallet.audit]: () => audit(nc, { keptMs: jobRecordKeptMs(config) }),
      [subjects.wallet.reconcile]: () => reconciler.run(),
    },
  }, log);
  // The endpoints' subscriptions reach the server before we report "started" (no early no-responders).
  await nc.flush();
  log.info({ projection: projection.file }, 'wallet started');

  return {
    async stop() {
      await service.stop();
      await orphans.stop();
      await reconciler.stop();
      await topups.stop();
      await ledger.stop();
      projection.close();
    },
  };
}
