// The wallet actor's service endpoints: request and reply schemas, declared once, and the typed
// client every other actor and the gateway use. Only the wallet writes the ledger.
import type { NatsConnection } from '@nats-io/nats-core';
import { Type as T, type Static } from '@sinclair/typebox';
import { MICRO, subjects } from '../names.ts';
import { client } from '../micro.ts';
import { endpoint, stored, type RequestOf, type ServiceApi } from './endpoint.ts';

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
    id: r.id,
    status: r.status,
    eur: r.eur,
    eurCents: r.eurCents,
    payloads: r.payloads,
    bonusPayloads: r.bonusPayloads,
    bolt11: r.status === 'pending' ? r.bolt11 : null,
    sats: r.sats,
    expiresAt: r.expiresAt,
    createdAt: r.createdAt,
  };
  if (r.paidAt) t.paidAt = r.paidAt;
  return t;
}

const WalletId = T.String({ description: 'w_…' });
const Moved = T.Object({ balance: T.Integer(), entryId: T.Union([T.Integer(), T.Null()]), duplicate: T.Boolean() });
const TopupReply = T.Object({ topup: stored<Topup>('Topup'), balance: T.Integer() });

/** What one reconciliation of the ledger with the Lightning node found and did (actors/wallet/reconcile.ts). */
const ReconcileReportSchema = T.Object({
  backend: T.String(),
  /** Invoices the node lists as paid, and top-up documents looked at. */
  paidInvoices: T.Integer(),
  topups: T.Integer(),
  /** Paid at the node, not in the ledger: credited now (once, ref `topup:<id>`). */
  credited: T.Array(T.Object({ topupId: T.String(), walletId: T.String(), payloads: T.Integer(), paymentHash: T.String() })),
  /** Paid at the node, but no top-up has that payment hash (another use of the node, or a lost top-up document). */
  unknownPaid: T.Array(T.Object({ paymentHash: T.String(), paidMsat: T.Optional(T.Number()) })),
  /** Credited in the ledger, but the node does not list the invoice as paid. Reported, never taken back. */
  unpaidCredits: T.Array(
    T.Object({
      topupId: T.String(),
      walletId: T.String(),
      entryId: T.Integer(),
      payloads: T.Integer(),
      paymentHash: T.Union([T.String(), T.Null()]),
    }),
  ),
});
export type ReconcileReport = Static<typeof ReconcileReportSchema>;

export const walletApi = {
  charge: endpoint({
    subject: subjects.wallet.charge,
    summary: "Debit a job's full cost; idempotent per jobId; insufficient_funds with needed/balance/topup",
    // answerBy: epoch ms after which the caller no longer waits for the answer. A wallet that gets
    // the request later (it was paused, or the request sat in a queue) refuses it uncharged, so a
    // creation answered 503 is not charged behind the caller's back (clocks kept by NTP).
    request: T.Object({ walletId: WalletId, jobId: T.String(), amount: T.Integer(), answerBy: T.Optional(T.Integer()) }),
    reply: Moved,
  }),
  refund: endpoint({
    subject: subjects.wallet.refund,
    summary: 'Give back one undelivered result; idempotent per (jobId, resultKey)',
    request: T.Object({ walletId: WalletId, jobId: T.String(), resultKey: T.String(), amount: T.Integer() }),
    reply: Moved,
  }),
  chargeOf: endpoint({
    subject: subjects.wallet.chargeOf,
    summary:
      'What the ledger holds for one job: charged, refunded, and whether the charge was refunded whole as an orphan (no job document in its grace)',
    request: T.Object({ walletId: WalletId, jobId: T.String() }),
    reply: T.Object({ charged: T.Integer(), refunded: T.Integer(), orphaned: T.Boolean() }),
  }),
  balance: endpoint({
    subject: subjects.wallet.balance,
    summary: "A wallet's balance",
    request: T.Object({ walletId: WalletId }),
    reply: T.Object({ balance: T.Integer() }),
  }),
  transactions: endpoint({
    subject: subjects.wallet.transactions,
    summary: `A page of ledger entries, newest first (at most ${TRANSACTIONS_PAGE})`,
    request: T.Object({
      walletId: WalletId,
      before: T.Optional(T.Union([T.Integer({ minimum: 0 }), T.Null()])),
      limit: T.Optional(T.Union([T.Integer({ minimum: 1, maximum: TRANSACTIONS_PAGE }), T.Null()])),
    }),
    reply: T.Object({ entries: T.Array(stored<LedgerEntry>('LedgerEntry')), next: T.Union([T.Integer(), T.Null()]), balance: T.Integer() }),
  }),
  grant: endpoint({
    subject: subjects.wallet.grant,
    summary: 'Operator grant; the same grantId again is a retry, not a second grant',
    request: T.Object({ walletId: WalletId, amount: T.Integer(), reason: T.String(), grantId: T.Optional(T.String()) }),
    reply: Moved,
  }),
  topupCreate: endpoint({
    subject: subjects.wallet.topupCreate,
    summary: 'A Lightning invoice for a top-up in EUR',
    request: T.Object({ walletId: WalletId, eur: T.Number() }),
    reply: TopupReply,
    timeoutMs: 30_000,
  }),
  topupGet: endpoint({
    subject: subjects.wallet.topupGet,
    summary: "A top-up of this wallet (not_found for another's)",
    request: T.Object({ walletId: WalletId, topupId: T.String() }),
    reply: TopupReply,
  }),
  topupPay: endpoint({
    subject: subjects.wallet.topupPay,
    summary: "dev Lightning backend only: settle a top-up's invoice",
    request: T.Object({ topupId: T.String() }),
    reply: T.Object({ topup: stored<Topup>('Topup'), balance: T.Integer(), alreadyPaid: T.Boolean() }),
    timeoutMs: 30_000,
  }),
  audit: endpoint({
    subject: subjects.wallet.audit,
    summary: 'Every money invariant across all wallets, jobs and top-ups (shared/audit.ts)',
    request: T.Object({}),
    reply: T.Object({
      violations: T.Array(T.String()),
      wallets: T.Integer(),
      entries: T.Integer(),
      jobs: T.Integer(),
      topups: T.Integer(),
    }),
    timeoutMs: 60_000,
  }),
  reconcile: endpoint({
    subject: subjects.wallet.reconcile,
    summary:
      'Compare every invoice the Lightning node reports paid with the ledger: credit a lost top-up credit once, report a credit without a paid invoice',
    request: T.Object({}),
    reply: ReconcileReportSchema,
    timeoutMs: 120_000,
  }),
};

export const WALLET_API: ServiceApi = {
  service: MICRO.wallet,
  description: 'Balances, the ledger, top-ups and the Lightning backend',
  endpoints: Object.values(walletApi),
};

export type ChargeRequest = RequestOf<typeof walletApi.charge>;
export type RefundRequest = RequestOf<typeof walletApi.refund>;

const c = {
  charge: client(walletApi.charge),
  refund: client(walletApi.refund),
  chargeOf: client(walletApi.chargeOf),
  balance: client(walletApi.balance),
  transactions: client(walletApi.transactions),
  grant: client(walletApi.grant),
  topupCreate: client(walletApi.topupCreate),
  topupGet: client(walletApi.topupGet),
  topupPay: client(walletApi.topupPay),
  audit: client(walletApi.audit),
  reconcile: client(walletApi.reconcile),
};

export const wallet = {
  /** Debit a job's full cost; idempotent per jobId. Throws insufficient_funds with needed/balance/topup. */
  charge: (nc: NatsConnection, r: ChargeRequest) => c.charge(nc, r),
  /** Give back one undelivered result; idempotent per (jobId, resultKey). */
  refund: (nc: NatsConnection, r: RefundRequest) => c.refund(nc, r),
  /** The ledger's view of one job's money; `orphaned`: its charge was given back whole by the orphan sweep. */
  chargeOf: (nc: NatsConnection, walletId: string, jobId: string) => c.chargeOf(nc, { walletId, jobId }),
  balance: (nc: NatsConnection, walletId: string) => c.balance(nc, { walletId }),
  transactions: (nc: NatsConnection, walletId: string, before?: number, limit?: number) => c.transactions(nc, { walletId, before, limit }),
  /** Operator grant; the same `grantId` again is the same grant (a retry), not a second one. */
  grant: (nc: NatsConnection, walletId: string, amount: number, reason: string, grantId?: string) =>
    c.grant(nc, { walletId, amount, reason, grantId }),
  topupCreate: (nc: NatsConnection, walletId: string, eur: number) => c.topupCreate(nc, { walletId, eur }),
  topupGet: (nc: NatsConnection, walletId: string, topupId: string) => c.topupGet(nc, { walletId, topupId }),
  /** dev Lightning backend only: the operator settles a top-up's invoice. */
  topupPay: (nc: NatsConnection, topupId: string) => c.topupPay(nc, { topupId }),
  audit: (nc: NatsConnection) => c.audit(nc, {}),
  /** Compare the Lightning node's paid invoices with the ledger now; credits what is missing (actors/wallet/reconcile.ts). */
  reconcile: (nc: NatsConnection) => c.reconcile(nc, {}),
};
