// The wallet actor's service endpoints: request and reply shapes, and the typed client every other
// actor and the gateway use. Only the wallet writes the ledger.
import type { NatsConnection } from '@nats-io/nats-core';
import { call } from '../micro.ts';
import { subjects } from '../names.ts';

export const PAYLOADS_PER_EUR = 10000;
export const UNIT = 'payloads';
export const toEur = (payloads: number) => Math.round(payloads) / PAYLOADS_PER_EUR;

export type LedgerType = 'topup' | 'bonus' | 'charge' | 'refund' | 'grant';

export interface LedgerEntry {
  id: number; // stream sequence
  type: LedgerType;
  amount: number; // signed Payloads
  balanceAfter: number;
  at: number; // unix ms
  jobId?: string;
  resultKey?: string;
  topupId?: string;
  reason?: string;
  /** topup: the bonus part of `amount`. */
  bonus?: number;
}

/** The body of one LEDGER message (subject `ledger.<walletId>`); its stream sequence is the entry id. */
export interface LedgerMessage {
  v: 1;
  type: LedgerType;
  amount: number;
  balanceAfter: number;
  at: number;
  /** The business event it records, at most once per wallet: `charge:<jobId>`, `refund:<jobId>:<resultKey>`, `topup:<topupId>`, `grant:<id>`. */
  ref: string;
  jobId?: string;
  resultKey?: string;
  topupId?: string;
  reason?: string;
  /** topup: the bonus part of `amount`. */
  bonus?: number;
}

export const ledgerRef = {
  charge: (jobId: string) => `charge:${jobId}`,
  refund: (jobId: string, resultKey: string) => `refund:${jobId}:${resultKey}`,
  topup: (topupId: string) => `topup:${topupId}`,
  grant: (grantId: string) => `grant:${grantId}`,
};

/** Entries per page of wallet.transactions and GET /v1/transactions. */
export const TRANSACTIONS_PAGE = 50;

export type TopupStatus = 'pending' | 'paid' | 'expired' | 'failed';

export interface Topup {
  id: string;
  status: TopupStatus;
  eur: number;
  eurCents: number;
  payloads: number;
  bonusPayloads: number;
  bolt11: string | null;
  sats: number | null;
  expiresAt: number;
  createdAt: number;
  paidAt?: number;
}

/** The document of a top-up in the `topups` bucket (key: top-up id). Only the wallet writes it, with revision checks. */
export interface TopupRecord extends Topup {
  walletId: string;
  backend: string;
  paymentHash: string;
  /** The EUR->BTC rate quoted when the invoice was made. */
  rate: { eurPerBtc: number; source: string; at: number };
  updatedAt: number;
  /** Ledger entry of the credit, once paid. */
  entryId?: number;
  failedReason?: string;
}

/** The public view of a top-up (spec 2.5 plus createdAt/paidAt). */
export function publicTopup(r: TopupRecord): Topup {
  const t: Topup = {
    id: r.id, status: r.status, eur: r.eur, eurCents: r.eurCents, payloads: r.payloads, bonusPayloads: r.bonusPayloads,
    bolt11: r.status === 'pending' ? r.bolt11 : null, sats: r.sats, expiresAt: r.expiresAt, createdAt: r.createdAt,
  };
  if (r.paidAt) t.paidAt = r.paidAt;
  return t;
}

export interface ChargeRequest { walletId: string; jobId: string; amount: number }
export interface RefundRequest { walletId: string; jobId: string; resultKey: string; amount: number }

export const wallet = {
  /** Debit a job's full cost; idempotent per jobId. Throws insufficient_funds with needed/balance/topup. */
  charge: (nc: NatsConnection, r: ChargeRequest) => call<{ balance: number; entryId: number }>(nc, subjects.wallet.charge, r),
  /** Give back one undelivered result; idempotent per (jobId, resultKey). */
  refund: (nc: NatsConnection, r: RefundRequest) => call<{ balance: number; entryId: number | null }>(nc, subjects.wallet.refund, r),
  balance: (nc: NatsConnection, walletId: string) => call<{ balance: number }>(nc, subjects.wallet.balance, { walletId }),
  transactions: (nc: NatsConnection, walletId: string, before?: number, limit?: number) =>
    call<{ entries: LedgerEntry[]; next: number | null }>(nc, subjects.wallet.transactions, { walletId, before, limit }),
  /** Operator grant; the same `grantId` again is the same grant (a retry), not a second one. */
  grant: (nc: NatsConnection, walletId: string, amount: number, reason: string, grantId?: string) =>
    call<{ balance: number; entryId: number }>(nc, subjects.wallet.grant, { walletId, amount, reason, grantId }),
  topupCreate: (nc: NatsConnection, walletId: string, eur: number) =>
    call<{ topup: Topup; balance: number }>(nc, subjects.wallet.topupCreate, { walletId, eur }, 30000),
  topupGet: (nc: NatsConnection, walletId: string, topupId: string) =>
    call<{ topup: Topup; balance: number }>(nc, subjects.wallet.topupGet, { walletId, topupId }),
  /** dev Lightning backend only: the operator settles a top-up's invoice. */
  topupPay: (nc: NatsConnection, topupId: string) =>
    call<{ topup: Topup; balance: number; alreadyPaid: boolean }>(nc, subjects.wallet.topupPay, { topupId }, 30000),
  /** Every money invariant across all wallets, jobs and top-ups (shared/audit.ts). */
  audit: (nc: NatsConnection) => call<{ violations: string[]; wallets: number; entries: number; jobs: number; topups: number }>(nc, subjects.wallet.audit, {}, 60000),
  /** Compare the Lightning node's paid invoices with the ledger now; credits what is missing (actors/wallet/reconcile.ts). */
  reconcile: (nc: NatsConnection) => call<ReconcileReport>(nc, subjects.wallet.reconcile, {}, 120000),
};

/** What one reconciliation of the ledger with the Lightning node found and did. */
export interface ReconcileReport {
  backend: string;
  /** Invoices the node lists as paid, and top-up documents looked at. */
  paidInvoices: number;
  topups: number;
  /** Paid at the node, not in the ledger: credited now (once, ref `topup:<id>`). */
  credited: { topupId: string; walletId: string; payloads: number; paymentHash: string }[];
  /** Paid at the node, but no top-up has that payment hash (another use of the node, or a lost top-up document). */
  unknownPaid: { paymentHash: string; paidMsat?: number }[];
  /** Credited in the ledger, but the node does not list the invoice as paid. Reported, never taken back automatically. */
  unpaidCredits: { topupId: string; walletId: string; entryId: number; payloads: number; paymentHash: string | null }[];
}
