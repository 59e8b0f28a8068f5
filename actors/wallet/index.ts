// The wallet actor: owns every balance. Others reach it only through its NATS micro service
// endpoints (subjects.wallet.*, client in shared/protocol/wallet.ts).
import { join } from 'node:path';
import type { ActorContext, ActorHandle } from '../../shared/actor.ts';
import { addService } from '../../shared/micro.ts';
import { Kvm } from '@nats-io/kv';
import { withRetry } from '../../shared/runtime.ts';
import { BUCKETS, subjects } from '../../shared/names.ts';
import { TRANSACTIONS_PAGE, WALLET_API, type walletApi } from '../../shared/protocol/wallet.ts';
import type { RequestOf } from '../../shared/protocol/endpoint.ts';
import { Ledger, checkWalletId } from './ledger.ts';
import { Projection, rowToEntry } from './projection.ts';
import { jobDocumentInBucketMs } from '../../shared/jobs/retention.ts';
import { charge, refund, grant, tooLate } from './money.ts';
import { audit } from '../../shared/audit.ts';
import { Topups } from './topups.ts';
import { startOrphanSweep, ORPHAN_RESULT_KEY } from './orphans.ts';
import { ApiError } from '../../shared/errors.ts';
import { startReconciler } from './reconcile.ts';

export async function start(ctx: ActorContext): Promise<ActorHandle> {
  const { nc, config, log: parentLog } = ctx;
  const log = parentLog.child({ actor: 'wallet' });
  // A start that fails names its step and stops what it had started (nothing left running or growing).
  const started: (() => Promise<void> | void)[] = [];
  const step = async <T>(name: string, fn: () => Promise<T> | T): Promise<T> => {
    try {
      return await fn();
    } catch (e) {
      for (const undo of started.reverse())
        await Promise.resolve()
          .then(undo)
          .catch(() => {});
      throw new Error(`wallet start failed at "${name}": ${(e as Error)?.message ?? e}`, { cause: e });
    }
  };
  const projection = await step('open the ledger projection', () => new Projection(join(config.dataDir, 'wallet')));
  started.push(() => projection.close());
  const ledger = new Ledger(nc, projection, log);
  started.push(() => ledger.stop());
  await step('ledger projection checkpoint and consumer', () => ledger.start());
  const topups = new Topups({ nc, config, log, ledger });
  started.push(() => topups.stop());
  await step('top-ups', () => topups.start());
  const jobs = await step('jobs bucket', () => withRetry('jobs bucket', () => new Kvm(nc).open(BUCKETS.jobs), { log }));
  const orphans = startOrphanSweep({
    ledger,
    projection,
    jobs,
    graceMs: config.wallet.orphanChargeGraceSeconds * 1000,
    keptMs: jobDocumentInBucketMs(config),
    log,
  });
  started.push(() => orphans.stop());

  const reconciler = startReconciler({
    nc,
    ledger,
    topups,
    everyMs: config.wallet.lightning.reconcileSeconds * 1000,
    sweep: config.wallet.lightning.reconcileSweep,
    log,
  });
  started.push(() => reconciler.stop());

  const service = await step('wallet service', () =>
    addService(
      nc,
      {
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
          [subjects.wallet.audit]: () => audit(nc, { keptMs: jobDocumentInBucketMs(config) }),
          [subjects.wallet.reconcile]: () => reconciler.run(),
        },
      },
      log,
    ),
  );
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
