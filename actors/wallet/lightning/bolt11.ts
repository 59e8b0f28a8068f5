// BOLT #11 payment requests, encoded and signed by hand (secp256k1 from @noble/curves, bech32 from
// @scure/base). Used by the dev backend, so its invoices are real: any wallet or decoder reads them
// and the signature recovers the dev node's public key.
import { secp256k1 } from '@noble/curves/secp256k1.js';
import { sha256 } from '@noble/hashes/sha2.js';
import { bech32 } from '@scure/base';

export type Network = 'bc' | 'tb' | 'bcrt';

export interface InvoiceFields {
  network: Network;
  msat: bigint;
  /** Unix seconds. */
  timestamp: number;
  paymentHash: Uint8Array; // 32 bytes
  paymentSecret: Uint8Array; // 32 bytes
  description: string;
  expirySeconds: number;
  minFinalCltvExpiry?: number;
}

/** Big-endian 5-bit words of a non-negative integer, at least `minWords` long. */
function intWords(n: number | bigint, minWords = 1): number[] {
  let v = BigInt(n);
  const out: number[] = [];
  while (v > 0n) {
    out.unshift(Number(v & 31n));
    v >>= 5n;
  }
  while (out.length < minWords) out.unshift(0);
  return out;
}

const CHARSET = 'qpzry9x8gf2tvdw0s3jn54khce6mua7l';

function tagged(tag: string, words: number[]): number[] {
  const code = CHARSET.indexOf(tag);
  if (words.length >= 1024) throw new Error('bolt11: tagged field too long');
  return [code, words.length >> 5, words.length & 31, ...words];
}

/** Human-readable amount: the largest multiplier that keeps the number whole. */
export function encodeAmount(msat: bigint): string {
  if (msat <= 0n) return '';
  // 1 BTC = 1e11 msat. m = 1e8 msat, u = 1e5 msat, n = 100 msat, p = 0.1 msat.
  if (msat % 100_000_000n === 0n) return `${msat / 100_000_000n}m`;
  if (msat % 100_000n === 0n) return `${msat / 100_000n}u`;
  if (msat % 100n === 0n) return `${msat / 100n}n`;
  return `${msat * 10n}p`;
}

/** Features every current payer expects: var_onion_optin (bit 8) and payment_secret (bit 14), required. */
function featureWords(): number[] {
  return intWords((1n << 8n) | (1n << 14n));
}

export function encodeInvoice(f: InvoiceFields, privateKey: Uint8Array): string {
  if (f.paymentHash.length !== 32 || f.paymentSecret.length !== 32) throw new Error('bolt11: hash and secret must be 32 bytes');
  const hrp = `ln${f.network}${encodeAmount(f.msat)}`;
  const words: number[] = [...intWords(f.timestamp, 7)];
  words.push(...tagged('p', bech32.toWords(f.paymentHash)));
  words.push(...tagged('s', bech32.toWords(f.paymentSecret)));
  words.push(...tagged('d', bech32.toWords(new TextEncoder().encode(f.description))));
  words.push(...tagged('x', intWords(f.expirySeconds)));
  words.push(...tagged('c', intWords(f.minFinalCltvExpiry ?? 18)));
  words.push(...tagged('9', featureWords()));
  // Signature over sha256(hrp bytes || data words packed to bytes, zero-padded).
  const data = packWords(words);
  const msg = new Uint8Array([...new TextEncoder().encode(hrp), ...data]);
  const hash = sha256(msg);
  const sig = secp256k1.sign(hash, privateKey, { prehash: false, format: 'recovered' });
  // noble: [recovery, r(32), s(32)]; BOLT11: r || s || recovery.
  const sigBytes = new Uint8Array(65);
  sigBytes.set(sig.subarray(1, 65), 0);
  sigBytes[64] = sig[0]!;
  words.push(...bech32.toWords(sigBytes));
  return bech32.encode(hrp, words, false);
}

/** Pack 5-bit words into bytes, padding the last byte with zero bits (BOLT11 signing rule). */
export function packWords(words: number[]): Uint8Array {
  let acc = 0;
  let bits = 0;
  const out: number[] = [];
  for (const w of words) {
    acc = (acc << 5) | w;
    bits += 5;
    while (bits >= 8) {
      bits -= 8;
      out.push((acc >> bits) & 0xff);
    }
    acc &= (1 << bits) - 1;
  }
  if (bits > 0) out.push((acc << (8 - bits)) & 0xff);
  return new Uint8Array(out);
}

/** Recover the signer's compressed public key (hex) of a payment request: checks our own signatures in tests. */
export function recoverPayee(invoice: string): string {
  const { prefix, words } = bech32.decode(invoice as `${string}1${string}`, false);
  const data = words.slice(0, -104);
  const sigBytes = bech32.fromWords(words.slice(-104));
  const msg = new Uint8Array([...new TextEncoder().encode(prefix), ...packWords(data)]);
  const recovered = new Uint8Array(65);
  recovered[0] = sigBytes[64]!;
  recovered.set(sigBytes.subarray(0, 64), 1);
  return Buffer.from(secp256k1.recoverPublicKey(recovered, sha256(msg), { prehash: false })).toString('hex');
}
