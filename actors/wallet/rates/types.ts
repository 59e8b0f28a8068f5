// The EUR->BTC rate contract. One file per provider; index.ts picks one by name (wallet.rate.provider).
export interface Rate {
  eurPerBtc: number;
  /** Where it came from, e.g. `fixed` or `median(kraken,bitstamp,coinbase)`. */
  source: string;
  /** Unix ms when it was obtained. */
  at: number;
}

export interface RateProvider {
  readonly name: string;
  /** A current, sane rate, or a RateError. */
  get(): Promise<Rate>;
}

export class RateError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'RateError';
  }
}

/** Satoshis for an amount in euro cents at a rate (rounded up: the invoice never asks less than the amount is worth). */
export function satsFor(eurCents: number, eurPerBtc: number): number {
  return Math.ceil((eurCents / 100 / eurPerBtc) * 1e8);
}
