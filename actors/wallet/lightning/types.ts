// The invoice-backend contract. One file per backend implements it; index.ts picks one by name
// from config (wallet.lightning.backend).
import type { NatsConnection } from '@nats-io/nats-core';
import type { Config } from '../../../shared/config/index.ts';
import type { Logger } from '../../../shared/log.ts';

export type InvoiceState = 'open' | 'paid' | 'expired' | 'failed';

export interface CreatedInvoice {
  bolt11: string;
  /** hex */
  paymentHash: string;
  /** Unix ms. */
  expiresAt: number;
}

export interface InvoiceStatus {
  state: InvoiceState;
  /** What the payer paid, when the backend says. */
  paidMsat?: number;
  reason?: string;
}

/** An invoice the node says was paid (reconciliation, actors/wallet/reconcile.ts). */
export interface PaidInvoice {
  /** hex */
  paymentHash: string;
  paidMsat?: number;
}

export interface InvoiceBackend {
  readonly name: string;
  createInvoice(sats: number, description: string, expirySeconds: number): Promise<CreatedInvoice>;
  lookupInvoice(paymentHash: string): Promise<InvoiceStatus>;
  /** Every paid invoice the node knows (of this wallet/key), page by page: the node's record of money received. */
  listPaid(): AsyncIterable<PaidInvoice>;
  /** Where the backend can push settlements: calls onSettled(paymentHash) (possibly more than once per invoice). */
  subscribe?(onSettled: (paymentHash: string) => void): { stop(): void };
  /** dev only: the operator's "this invoice was paid". */
  pay?(paymentHash: string): Promise<{ alreadyPaid: boolean }>;
  close?(): Promise<void>;
}

export interface BackendContext {
  config: Config;
  nc: NatsConnection;
  log: Logger;
}

/** The backend answered with an error or not at all. Maps to 502 invoice_failed at top-up creation. */
export class LightningError extends Error {
  readonly status?: number;
  constructor(message: string, status?: number) {
    super(message);
    this.status = status;
    this.name = 'LightningError';
  }
}
