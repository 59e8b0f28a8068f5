// The business operations on the ledger: charge a job, refund a result, grant, credit a paid top-up.
// Each one is idempotent per business event and decided atomically with its write (see ledger.ts).
import { ApiError } from '../../shared/errors.ts';
import { ledgerRef, PAYLOADS_PER_EUR } from '../../shared/protocol/wallet.ts';
import { newId } from '../../shared/ids.ts';
import type { Ledger, AppendResult } from './ledger.ts';

export const TOPUP_MIN_CENTS = 25;
export const TOPUP_MAX_CENTS = 10000;

/**
 * The top-up suggested by `insufficient_funds`: the smallest amount in whole cents, within the
 * top-up limits (0.25..100.00 EUR), whose Payloads (bonus not counted) cover the shortfall. A
 * shortfall above 100 EUR gets the 100 EUR maximum (more than one top-up is needed then).
 */
export function suggestTopup(shortfall: number): { eur: number; url: string } {
  const cents = Math.min(TOPUP_MAX_CENTS, Math.max(TOPUP_MIN_CENTS, Math.ceil(shortfall / (PAYLOADS_PER_EUR / 100))));
  return { eur: cents / 100, url: '/v1/topups' };
}

function amountOf(v: unknown, what: string, min: number): number {
  if (typeof v !== 'number' || !Number.isSafeInteger(v) || v < min)
    throw new ApiError('bad_request', `${what} must be an integer >= ${min}`);
  return v;
}

function idOf(v: unknown, what: string): string {
  if (typeof v !== 'string' || !v || v.length > 200 || /[\s]/.test(v)) throw new ApiError('bad_request', `${what} is missing or malformed`);
  return v;
}

/** A charge that reached its write after its caller stopped waiting. */
export const tooLate = () =>
  new ApiError(
    'service_unavailable',
    'the charge arrived after its caller stopped waiting (the wallet was paused or overloaded); nothing was charged',
  );

/**
 * `answerBy` (epoch ms): the caller stops waiting then. It is checked at each write attempt, after
 * the wallet's lock and the ledger's catch-up: a wallet resumed with a backlog of charges for one
 * wallet works through them one by one, and one that reaches its turn too late is refused instead
 * of charging a creation its caller has answered 503 (the orphan sweep would refund it later).
 */
export function charge(ledger: Ledger, walletId: string, jobIdIn: unknown, amountIn: unknown, answerBy?: number): Promise<AppendResult> {
  const jobId = idOf(jobIdIn, 'jobId');
  const amount = amountOf(amountIn, 'amount', 0);
  const ref = ledgerRef.charge(jobId);
  return ledger.append(walletId, (head) => {
    const existing = ledger.projection.byRef(walletId, ref);
    if (existing) return { done: existing };
    if (answerBy !== undefined && Date.now() > answerBy) throw tooLate();
    if (head.balance < amount) {
      throw new ApiError('insufficient_funds', `The balance (${head.balance} Payloads) is lower than the cost (${amount} Payloads).`, {
        needed: amount,
        balance: head.balance,
        topup: suggestTopup(amount - head.balance),
      });
    }
    return { write: { type: 'charge', amount: -amount, ref, jobId } };
  });
}

export function refund(ledger: Ledger, walletId: string, jobIdIn: unknown, resultKeyIn: unknown, amountIn: unknown): Promise<AppendResult> {
  const jobId = idOf(jobIdIn, 'jobId');
  const resultKey = idOf(resultKeyIn, 'resultKey');
  const amount = amountOf(amountIn, 'amount', 0);
  const ref = ledgerRef.refund(jobId, resultKey);
  return ledger.append(walletId, () => {
    const existing = ledger.projection.byRef(walletId, ref);
    if (existing) return { done: existing };
    const rows = ledger.projection.forJob(walletId, jobId);
    const chargeRow = rows.find((r) => r.type === 'charge');
    if (!chargeRow) throw new ApiError('bad_request', `no charge of job ${jobId} in this wallet`);
    const refunded = rows.filter((r) => r.type === 'refund').reduce((s, r) => s + r.amount, 0);
    if (refunded + amount > -chargeRow.amount)
      throw new ApiError(
        'bad_request',
        `refund of ${amount} would give back more than job ${jobId} was charged (${-chargeRow.amount}, ${refunded} refunded)`,
      );
    if (amount === 0) return { done: null };
    return { write: { type: 'refund', amount, ref, jobId, resultKey } };
  });
}

/** Operator grant (positive) or correction (negative, never below zero). `grantId` makes a retry idempotent. */
export function grant(ledger: Ledger, walletId: string, amountIn: unknown, reasonIn: unknown, grantId?: unknown): Promise<AppendResult> {
  if (typeof amountIn !== 'number' || !Number.isSafeInteger(amountIn) || amountIn === 0)
    throw new ApiError('bad_request', 'amount must be a non-zero integer');
  const amount = amountIn;
  if (typeof reasonIn !== 'string' || !reasonIn.trim()) throw new ApiError('bad_request', 'a grant needs a reason');
  const reason = reasonIn.trim().slice(0, 500);
  const ref = ledgerRef.grant(grantId === undefined ? newId('g') : idOf(grantId, 'grantId'));
  return ledger.append(walletId, (head) => {
    const existing = ledger.projection.byRef(walletId, ref);
    if (existing) return { done: existing };
    if (head.balance + amount < 0)
      throw new ApiError('bad_request', `a correction of ${amount} would make the balance (${head.balance}) negative`);
    return { write: { type: 'grant', amount, ref, reason } };
  });
}

/** Credit a paid top-up: once, whatever number of times the payment is reported. */
export function creditTopup(ledger: Ledger, walletId: string, topupId: string, payloads: number, bonus: number): Promise<AppendResult> {
  const ref = ledgerRef.topup(topupId);
  return ledger.append(walletId, () => {
    const existing = ledger.projection.byRef(walletId, ref);
    if (existing) return { done: existing };
    return { write: { type: 'topup', amount: payloads, ref, topupId, bonus } };
  });
}
