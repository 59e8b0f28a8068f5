// Ledger history, fast (issue 26): entries in the project's own record format (LedgerMessage on
// `ledger.<walletId>`, shared/protocol/wallet.ts) with correct `balanceAfter` chains, published
// asynchronously in batches from one connection (so each wallet's entries keep their order).
// Each wallet starts with a grant, then charges of 10 Payloads (jobs `hj<n>` that have no job document:
// the orphan sweep would refund them, so callers that run a wallet against this history set a long
// grace, or write the job documents themselves). Used by the wallet's restart tests and by
// bench/wallet-history.ts; the general history generator (jobs, keys) is elsewhere.
import { jetstream } from '@nats-io/jetstream';
import type { NatsConnection } from '@nats-io/nats-core';
import { subjects } from '../../shared/names.ts';
import type { LedgerMessage } from '../../shared/protocol/wallet.ts';

export const GRANT = 1_000_000_000;
export const CHARGE = 10;

/** Wallet ids of a history: `<prefix><n>`. */
export const historyWallet = (prefix: string, n: number) => `${prefix}${n}`;

/**
 * Appends `entries` entries over `wallets` wallets (entry i goes to wallet i % wallets). Wallets must
 * be new (their chain starts at 0). Returns the last balance of each wallet.
 */
export async function writeLedgerHistory(
  nc: NatsConnection,
  o: { entries: number; wallets: number; prefix?: string; batch?: number; at?: number; onProgress?: (n: number) => void },
): Promise<Map<string, number>> {
  const js = jetstream(nc);
  const prefix = o.prefix ?? 'wh';
  const batch = o.batch ?? 2000;
  const balances = new Map<string, number>();
  const at = o.at ?? Date.now() - 3600_000;
  let pending: Promise<unknown>[] = [];
  for (let i = 0; i < o.entries; i++) {
    const w = historyWallet(prefix, i % o.wallets);
    const had = balances.get(w);
    const msg: LedgerMessage =
      had === undefined
        ? { v: 1, type: 'grant', amount: GRANT, balanceAfter: GRANT, at, ref: `grant:${prefix}-${i}`, reason: 'history' }
        : { v: 1, type: 'charge', amount: -CHARGE, balanceAfter: had - CHARGE, at, ref: `charge:${prefix}j${i}`, jobId: `${prefix}j${i}` };
    balances.set(w, msg.balanceAfter);
    pending.push(js.publish(subjects.ledger(w), JSON.stringify(msg)));
    if (pending.length >= batch) {
      await Promise.all(pending);
      pending = [];
      o.onProgress?.(i + 1);
    }
  }
  await Promise.all(pending);
  return balances;
}
