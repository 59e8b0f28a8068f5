// Webhook delivery of finished reports: a signed JSON POST to the customer's https URL, through the
// outbound check (connects to the checked address; redirects are not followed), retried with
// exponential backoff. Signature: Ed25519 over `<timestamp>.<body>` with the service key whose
// public half is published in the labs catalogue (webhook.publicKey).
import { createPrivateKey, createPublicKey, sign, verify, randomBytes, type KeyObject } from 'node:crypto';
import { existsSync, readFileSync, writeFileSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { request } from 'node:https';
import type { SecureContextOptions } from 'node:tls';
import type { Config } from '../../shared/config/index.ts';
import { checkAddress } from '../../shared/services/index.ts';

export const WEBHOOK_HEADERS = {
  signature: 'X-Labs-Signature',
  timestamp: 'X-Labs-Timestamp',
  publicKey: 'X-Labs-Key',
  delivery: 'X-Labs-Delivery',
  attempt: 'X-Labs-Attempt',
} as const;

export interface WebhookKey {
  privateKey: KeyObject;
  /** Raw 32-byte Ed25519 public key, hex. */
  publicKeyHex: string;
}

const PKCS8_ED25519 = Buffer.from('302e020100300506032b657004220420', 'hex');
const SPKI_ED25519 = Buffer.from('302a300506032b6570032100', 'hex');

export function keyFromSeed(seedHex: string): WebhookKey {
  if (!/^[0-9a-f]{64}$/i.test(seedHex)) throw new Error('labs.webhookSigningKey must be 64 hex characters (an Ed25519 seed)');
  const privateKey = createPrivateKey({ key: Buffer.concat([PKCS8_ED25519, Buffer.from(seedHex, 'hex')]), format: 'der', type: 'pkcs8' });
  const spki = createPublicKey(privateKey).export({ format: 'der', type: 'spki' });
  return { privateKey, publicKeyHex: Buffer.from(spki.subarray(-32)).toString('hex') };
}

/** The configured key, or one generated once into the data folder (single-machine setups). */
export function loadWebhookKey(config: Config): WebhookKey {
  if (config.labs.webhookSigningKey) return keyFromSeed(config.labs.webhookSigningKey);
  const file = join(config.dataDir, 'labs-webhook.key');
  if (!existsSync(file)) {
    mkdirSync(config.dataDir, { recursive: true });
    try {
      writeFileSync(file, randomBytes(32).toString('hex') + '\n', { mode: 0o600, flag: 'wx' });
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== 'EEXIST') throw e;
    }
  }
  return keyFromSeed(readFileSync(file, 'utf8').trim());
}

export function signBody(key: WebhookKey, timestamp: number, body: string): string {
  return sign(null, Buffer.from(`${timestamp}.${body}`), key.privateKey).toString('hex');
}

/** What a receiver does (documented in docs/labs.md). */
export function verifyWebhook(publicKeyHex: string, timestamp: string, body: string, signatureHex: string): boolean {
  const pub = createPublicKey({ key: Buffer.concat([SPKI_ED25519, Buffer.from(publicKeyHex, 'hex')]), format: 'der', type: 'spki' });
  return verify(null, Buffer.from(`${timestamp}.${body}`), pub, Buffer.from(signatureHex, 'hex'));
}

export interface DeliveryResult {
  delivered: boolean;
  attempts: number;
  status: number | null;
  error: string | null;
}

const retryable = (status: number) => status >= 500 || status === 408 || status === 429;

async function postOnce(url: URL, body: string, headers: Record<string, string>, config: Config, ca?: SecureContextOptions['ca']): Promise<number> {
  const address = await checkAddress(url.hostname, config);
  return new Promise((resolve, reject) => {
    const req = request(url, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json', 'Content-Length': String(Buffer.byteLength(body)), 'User-Agent': 'payloads-labs webhook', ...headers },
      lookup: ((_h: string, o: { all?: boolean }, cb: (...a: unknown[]) => void) => (o?.all ? cb(null, [{ address: address.address, family: address.family }]) : cb(null, address.address, address.family))) as never,
      ca,
      timeout: config.labs.webhookTimeoutMs,
    }, (res) => {
      res.resume();
      res.on('end', () => resolve(res.statusCode ?? 0));
      res.on('error', reject);
    });
    req.on('timeout', () => req.destroy(new Error(`no answer within ${config.labs.webhookTimeoutMs} ms`)));
    req.on('error', reject);
    req.end(body);
  });
}

export async function deliverWebhook(o: {
  url: string;
  payload: unknown;
  deliveryId: string;
  key: WebhookKey;
  config: Config;
  ca?: SecureContextOptions['ca'];
  signal?: AbortSignal;
}): Promise<DeliveryResult> {
  const url = new URL(o.url);
  const body = JSON.stringify(o.payload);
  const tries = 1 + o.config.labs.webhookRetries;
  let last: DeliveryResult = { delivered: false, attempts: 0, status: null, error: null };
  for (let i = 0; i < tries; i++) {
    if (i > 0) {
      await new Promise((r) => setTimeout(r, o.config.labs.webhookBackoffMs * 2 ** (i - 1)));
      if (o.signal?.aborted) break;
    }
    const ts = Math.floor(Date.now() / 1000);
    const headers = {
      [WEBHOOK_HEADERS.signature]: signBody(o.key, ts, body),
      [WEBHOOK_HEADERS.timestamp]: String(ts),
      [WEBHOOK_HEADERS.publicKey]: o.key.publicKeyHex,
      [WEBHOOK_HEADERS.delivery]: o.deliveryId,
      [WEBHOOK_HEADERS.attempt]: String(i + 1),
    };
    try {
      const status = await postOnce(url, body, headers, o.config, o.ca);
      last = { delivered: status >= 200 && status < 300, attempts: i + 1, status, error: null };
      if (last.delivered || !retryable(status)) return last;
    } catch (e) {
      last = { delivered: false, attempts: i + 1, status: null, error: (e as Error).message };
      // a blocked address does not become public by waiting
      if ((e as { code?: string }).code === 'blocked_address') return last;
    }
  }
  return last;
}
