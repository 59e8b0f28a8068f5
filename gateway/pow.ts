// The account page's proof-of-work challenges, stateless (issue 44 item 3). Issuing one writes
// nothing: the challenge id carries its expiry and a random part, and an HMAC over them, the
// difficulty and the address it was issued to, under a secret every gateway of the deployment shares
// (one record in the `keys` bucket, made once). Before, each GET /account/challenge was a fsynced KV
// write kept 2 h, and an attacker with IPv6 has a /64 for every request.
//
// A challenge is spent once: a bounded in-memory set of the ids this gateway took (until they
// expire; past MAX_SPENT the oldest go, which only costs the backstop's read), and, as the backstop
// across gateways, a revision-0 record `pow.<id>` in the `limits` bucket written when a key is made
// (after the work was checked and the address's daily key limit taken: one write per key, not per
// request).
import { createHash, createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import type { KV } from '@nats-io/kv';
import { ApiError } from '../shared/errors.ts';
import { isCasConflict, kvCasPut } from '../shared/nats/cas.ts';

export const CHALLENGE_TTL_MS = 5 * 60 * 1000;
/** Spent ids remembered per gateway; beyond it the oldest leave (the `pow.<id>` record still refuses them). */
export const MAX_SPENT = 20_000;
const SECRET_KEY = 'secret.pow';
const spentKey = (id: string) => `pow.${id}`;
// 8 hex of expiry (seconds), 8 hex random, 24 hex (96 bits) of MAC: 40 hex digits, so that
// "<id>:<nonce>" stays in the one sha256 block the account page's hasher takes (55 bytes)
const ID = /^([0-9a-f]{8})([0-9a-f]{8})([0-9a-f]{24})$/;

/** Leading zero bits of sha256(`<id>:<nonce>`). */
export function powBits(id: string, nonce: string): number {
  const h = createHash('sha256').update(`${id}:${nonce}`).digest();
  let bits = 0;
  for (const byte of h) {
    if (byte === 0) {
      bits += 8;
      continue;
    }
    bits += Math.clz32(byte) - 24;
    break;
  }
  return bits;
}

const secrets = new WeakMap<KV, Promise<Buffer>>();
/** The deployment's challenge secret: read from `keys`, or made there once (the first gateway to ask). */
function secretOf(keys: KV): Promise<Buffer> {
  let s = secrets.get(keys);
  if (!s) {
    s = (async () => {
      for (let i = 0; i < 5; i++) {
        const e = await keys.get(SECRET_KEY);
        if (e && e.operation === 'PUT' && e.value.length) return Buffer.from(e.string(), 'hex');
        try {
          const mine = randomBytes(32);
          await kvCasPut(keys, SECRET_KEY, mine.toString('hex'), e?.revision ?? 0);
          return mine;
        } catch (err) {
          if (!isCasConflict(err)) throw err; // another gateway made it: read theirs
        }
      }
      throw new ApiError('service_unavailable', 'the challenge secret could not be read; retry', {}, { 'retry-after': '1' });
    })();
    s.catch(() => secrets.delete(keys));
    secrets.set(keys, s);
  }
  return s;
}

const macOf = (secret: Buffer, head: string, bits: number, ip: string) =>
  createHmac('sha256', secret).update(`${head}|${bits}|${ip}`).digest('hex').slice(0, 24);

export interface Challenge {
  id: string;
  bits: number;
  expiresAt: number;
}

/** A new challenge for `ip`: computed, never stored. */
export async function issueChallenge(keys: KV, bits: number, ip: string, now = Date.now()): Promise<Challenge> {
  const expiresAt = Math.ceil((now + CHALLENGE_TTL_MS) / 1000) * 1000;
  const head = (expiresAt / 1000).toString(16).padStart(8, '0') + randomBytes(4).toString('hex');
  return { id: head + macOf(await secretOf(keys), head, bits, ip), bits, expiresAt };
}

/** The ids this gateway spent, each until its expiry, at most MAX_SPENT (insertion order is expiry order). */
export class SpentChallenges {
  private readonly spent = new Map<string, number>();
  private readonly max: number;
  constructor(max = MAX_SPENT) {
    this.max = max;
  }
  has(id: string): boolean {
    return this.spent.has(id);
  }
  add(id: string, expiresAt: number, now = Date.now()): void {
    for (const [old, exp] of this.spent) {
      if (exp > now && this.spent.size < this.max) break;
      this.spent.delete(old);
    }
    this.spent.set(id, expiresAt);
  }
  get size(): number {
    return this.spent.size;
  }
}

/**
 * The challenge was issued by this deployment to `ip` at `bits`, is unexpired and unspent here,
 * and the nonce solves it; returns a function that spends it once (the backstop record).
 */
export async function checkChallenge(
  kv: { keys: KV; limits: KV },
  spent: SpentChallenges,
  bits: number,
  id: string,
  nonce: string,
  ip: string,
): Promise<() => Promise<void>> {
  const m = ID.exec(id);
  if (!m || !/^[0-9]{1,20}$/.test(nonce)) throw new ApiError('bad_request', 'malformed challenge or nonce');
  const head = m[1]! + m[2]!;
  const expected = Buffer.from(macOf(await secretOf(kv.keys), head, bits, ip));
  // a MAC that does not match: not ours, altered, or issued to another address (or another difficulty)
  if (!timingSafeEqual(expected, Buffer.from(m[3]!)))
    throw new ApiError('bad_request', 'unknown challenge, or one issued to another address; fetch a new one');
  const expiresAt = Number.parseInt(m[1]!, 16) * 1000;
  if (Date.now() > expiresAt) throw new ApiError('bad_request', 'the challenge expired; fetch a new one');
  if (spent.has(id)) throw new ApiError('bad_request', 'this challenge was used already; fetch a new one');
  if (powBits(id, nonce) < bits) throw new ApiError('bad_request', `the nonce does not give ${bits} leading zero bits`);
  return async () => {
    if (spent.has(id)) throw new ApiError('bad_request', 'this challenge was used already; fetch a new one');
    try {
      await kvCasPut(kv.limits, spentKey(id), '1', 0);
    } catch (err) {
      if (!isCasConflict(err)) throw err;
      spent.add(id, expiresAt);
      throw new ApiError('bad_request', 'this challenge was used already; fetch a new one');
    }
    spent.add(id, expiresAt);
  };
}
