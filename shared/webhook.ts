// Webhooks of every service (labs reports from the relay-prober, finished websitepro and shots jobs
// from the job-supervisor): a signed JSON POST to the customer's https URL, through the outbound
// guard (connects to the checked address; redirects are not followed), retried with exponential
// backoff. Signed as Standard Webhooks (standardwebhooks.com) prescribes: `webhook-id`,
// `webhook-timestamp`, `webhook-signature` over `<id>.<timestamp>.<body>`, with `v1,` an HMAC-SHA256
// under the key owner's own secret (`whsec_...`, derived from the deployment's signing seed and the
// wallet, so a delivery signed for one customer verifies for no other) and `v1a,` the deployment's
// Ed25519 signature (its public half in the catalogues) for receivers that want a public key. The
// old `X-Payloads-*` (and labs' `X-Labs-*`) headers are sent too, for one deprecation period.
import { createHmac, createPrivateKey, createPublicKey, sign, verify, randomBytes, timingSafeEqual, type KeyObject } from 'node:crypto';
import { existsSync, readFileSync, writeFileSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { request } from 'node:https';
import type { SecureContextOptions } from 'node:tls';
import type { Config } from './config/index.ts';
import { Type as T } from '@sinclair/typebox';
import { ApiError } from './errors.ts';
import { resolvePinned, toApiError } from './outbound/index.ts';
import type { WebhookAttempt } from './protocol/jobs.ts';
import { sleep } from './runtime.ts';

export const WEBHOOK_HEADERS = {
  signature: 'X-Payloads-Signature',
  timestamp: 'X-Payloads-Timestamp',
  publicKey: 'X-Payloads-Key',
  delivery: 'X-Payloads-Delivery',
  attempt: 'X-Payloads-Attempt',
} as const;

/** What a catalogue publishes about the webhooks of its service. */
export const webhookInfo = (key: WebhookKey, config: Config) => ({
  publicKey: key.publicKeyHex,
  algorithm: 'ed25519',
  standard: 'https://www.standardwebhooks.com/',
  signature:
    'webhook-signature: v1,<HMAC-SHA256 under your secret (GET /v1/webhooks/secret)> v1a,<Ed25519 under publicKey>, both over <webhook-id>.<webhook-timestamp>.<body>',
  signed: `<${WEBHOOK_HEADERS.timestamp}>.<body>`,
  headers: WEBHOOK_HEADERS,
  retries: config.webhooks.retries,
  docs: 'docs/webhooks.md',
});

/** The `webhook` field of every service's job body. */
export const WebhookField = T.String({
  maxLength: 2048,
  description: 'Public https URL that receives a signed POST when the job is finished (labs: each finished report). See docs/webhooks.md.',
});

/** A webhook address as the API accepts it: https, a host, no credentials (bad_webhook otherwise). */
export function parseWebhook(raw: string): URL {
  let u: URL;
  try {
    u = new URL(raw);
  } catch {
    throw new ApiError('bad_webhook', 'webhook is not a valid URL');
  }
  if (u.protocol !== 'https:' || !u.hostname || u.username || u.password)
    throw new ApiError('bad_webhook', 'webhook must be a public https:// URL without credentials');
  return u;
}

/** Job creation's check of a webhook host: it resolves to public addresses only (not contacted). */
export async function precheckWebhook(raw: string, config: Config): Promise<void> {
  try {
    await checkWebhookAddress(parseWebhook(raw).hostname, config);
  } catch (e) {
    if (e instanceof ApiError) throw new ApiError('bad_webhook', `webhook: ${e.message}`);
    throw e;
  }
}

async function checkWebhookAddress(hostname: string, config: Config) {
  try {
    return await resolvePinned(hostname, { allowCidrs: config.outbound.allowCidrs, timeoutMs: config.outbound.checkTimeoutMs });
  } catch (e) {
    throw toApiError(e);
  }
}

export interface WebhookKey {
  privateKey: KeyObject;
  /** Raw 32-byte Ed25519 public key, hex. */
  publicKeyHex: string;
  /** The seed, from which every key owner's signing secret is derived (webhookSecret). */
  seed: Buffer;
}

const PKCS8_ED25519 = Buffer.from('302e020100300506032b657004220420', 'hex');
const SPKI_ED25519 = Buffer.from('302a300506032b6570032100', 'hex');

export function keyFromSeed(seedHex: string): WebhookKey {
  if (!/^[0-9a-f]{64}$/i.test(seedHex)) throw new Error('webhooks.signingKey must be 64 hex characters (an Ed25519 seed)');
  const privateKey = createPrivateKey({ key: Buffer.concat([PKCS8_ED25519, Buffer.from(seedHex, 'hex')]), format: 'der', type: 'pkcs8' });
  const spki = createPublicKey(privateKey).export({ format: 'der', type: 'spki' });
  return { privateKey, publicKeyHex: Buffer.from(spki.subarray(-32)).toString('hex'), seed: Buffer.from(seedHex, 'hex') };
}

const loaded = new WeakMap<Config, WebhookKey>();
/** loadWebhookKey, once per configuration (the gateway's routes). */
export function webhookKeyOf(config: Config): WebhookKey {
  let k = loaded.get(config);
  if (!k) loaded.set(config, (k = loadWebhookKey(config)));
  return k;
}

/**
 * The key owner's Standard Webhooks signing secret: 32 bytes derived from the deployment's seed and
 * the wallet (one key, one wallet), so nothing is stored and every supervisor, prober and gateway
 * with the same `webhooks.signingKey` computes the same one. Rotating the seed rotates them all.
 */
export function webhookSecret(key: WebhookKey, walletId: string): string {
  return `whsec_${createHmac('sha256', key.seed).update(`payloads webhook secret v1:${walletId}`).digest('base64')}`;
}

/** The Standard Webhooks headers of one attempt (the content signed: `<id>.<timestamp>.<body>`). */
export function standardHeaders(key: WebhookKey, walletId: string, id: string, timestamp: number, body: string): Record<string, string> {
  const content = Buffer.from(`${id}.${timestamp}.${body}`);
  const hmac = createHmac('sha256', Buffer.from(webhookSecret(key, walletId).slice('whsec_'.length), 'base64'))
    .update(content)
    .digest('base64');
  const ed = sign(null, content, key.privateKey).toString('base64');
  return { 'webhook-id': id, 'webhook-timestamp': String(timestamp), 'webhook-signature': `v1,${hmac} v1a,${ed}` };
}

/**
 * A receiver's check, as the `standardwebhooks` package makes it: a `v1,` signature under the
 * secret, or, given an Ed25519 public key (hex) instead, a `v1a,` one; a timestamp within
 * `toleranceSeconds`. (client/src verifyWebhook is the same.)
 */
export function verifyStandardWebhook(
  secretOrPublicKeyHex: string,
  headers: Record<string, string | undefined>,
  body: string,
  toleranceSeconds = 300,
  now = Date.now(),
): boolean {
  const id = headers['webhook-id'];
  const ts = headers['webhook-timestamp'];
  const sigs = headers['webhook-signature'];
  if (!id || !ts || !sigs || !/^\d+$/.test(ts) || Math.abs(now / 1000 - Number(ts)) > toleranceSeconds) return false;
  const content = Buffer.from(`${id}.${ts}.${body}`);
  const list = sigs.split(' ').map((x) => x.split(',') as [string, string | undefined]);
  if (secretOrPublicKeyHex.startsWith('whsec_')) {
    const want = createHmac('sha256', Buffer.from(secretOrPublicKeyHex.slice(6), 'base64'))
      .update(content)
      .digest();
    return list.some(
      ([v, sig]) => v === 'v1' && !!sig && ((b) => b.length === want.length && timingSafeEqual(b, want))(Buffer.from(sig, 'base64')),
    );
  }
  const pub = createPublicKey({
    key: Buffer.concat([SPKI_ED25519, Buffer.from(secretOrPublicKeyHex, 'hex')]),
    format: 'der',
    type: 'spki',
  });
  return list.some(([v, sig]) => v === 'v1a' && !!sig && verify(null, content, pub, Buffer.from(sig, 'base64')));
}

/** The configured key, or one generated once into the data folder (single-machine setups). */
export function loadWebhookKey(config: Config): WebhookKey {
  if (config.webhooks.signingKey) return keyFromSeed(config.webhooks.signingKey);
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

/** The deprecated X-Payloads-Signature check (docs/webhooks.md, "Deprecated headers"). */
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

export const retryableStatus = (status: number) => status >= 500 || status === 408 || status === 429;

/**
 * Headers of one signed attempt: the Standard Webhooks ones under the owner's secret when the
 * wallet is known, and the deprecated X-Payloads-* ones.
 */
export function signedHeaders(
  key: WebhookKey,
  body: string,
  deliveryId: string,
  attempt: number,
  now = Date.now(),
  walletId?: string,
): Record<string, string> {
  const ts = Math.floor(now / 1000);
  return {
    ...(walletId ? standardHeaders(key, walletId, deliveryId, ts, body) : {}),
    [WEBHOOK_HEADERS.signature]: signBody(key, ts, body),
    [WEBHOOK_HEADERS.timestamp]: String(ts),
    [WEBHOOK_HEADERS.publicKey]: key.publicKeyHex,
    [WEBHOOK_HEADERS.delivery]: deliveryId,
    [WEBHOOK_HEADERS.attempt]: String(attempt),
  };
}

/** One POST through the outbound guard; the HTTP status, or throws (network, TLS, blocked_address). */
export async function postWebhook(
  url: URL,
  body: string,
  headers: Record<string, string>,
  config: Config,
  ca?: SecureContextOptions['ca'],
): Promise<number> {
  const address = await checkWebhookAddress(url.hostname, config);
  return new Promise((resolve, reject) => {
    const req = request(
      url,
      {
        method: 'POST',
        headers: {
          'Content-Type': 'application/json',
          'Content-Length': String(Buffer.byteLength(body)),
          'User-Agent': 'payloads webhook',
          ...headers,
        },
        lookup: ((_h: string, o: { all?: boolean }, cb: (...a: unknown[]) => void) =>
          o?.all ? cb(null, [{ address: address.address, family: address.family }]) : cb(null, address.address, address.family)) as never,
        ca,
        timeout: config.webhooks.timeoutMs,
      },
      (res) => {
        res.resume();
        res.on('end', () => resolve(res.statusCode ?? 0));
        res.on('error', reject);
      },
    );
    req.on('timeout', () => req.destroy(new Error(`no answer within ${config.webhooks.timeoutMs} ms`)));
    req.on('error', reject);
    req.end(body);
  });
}

/** The header names labs webhooks carried before every service had webhooks; labs deliveries send
 *  them too, with the same values, so receivers written against them keep verifying. */
const LEGACY_LABS_HEADERS: Record<string, string> = {
  [WEBHOOK_HEADERS.signature]: 'X-Labs-Signature',
  [WEBHOOK_HEADERS.timestamp]: 'X-Labs-Timestamp',
  [WEBHOOK_HEADERS.publicKey]: 'X-Labs-Key',
  [WEBHOOK_HEADERS.delivery]: 'X-Labs-Delivery',
  [WEBHOOK_HEADERS.attempt]: 'X-Labs-Attempt',
};

export const withLegacyLabsHeaders = (headers: Record<string, string>): Record<string, string> => ({
  ...headers,
  ...Object.fromEntries(
    Object.entries(headers)
      .filter(([k]) => k in LEGACY_LABS_HEADERS)
      .map(([k, v]) => [LEGACY_LABS_HEADERS[k], v]),
  ),
});

/** A labs report's delivery with retries (the supervisor delivers websitepro and shots jobs). */
export async function deliverWebhook(o: {
  url: string;
  payload: unknown;
  deliveryId: string;
  key: WebhookKey;
  /** The wallet the delivery is for: its own secret signs the Standard Webhooks `v1,` signature. */
  walletId?: string;
  config: Config;
  ca?: SecureContextOptions['ca'];
  signal?: AbortSignal;
  /** After each attempt: what it got, and when the next one is due (absent: none follows). */
  onAttempt?: (attempt: WebhookAttempt, result: DeliveryResult, nextAt: number | undefined) => Promise<void>;
}): Promise<DeliveryResult> {
  const url = new URL(o.url);
  const body = JSON.stringify(o.payload);
  const tries = 1 + o.config.webhooks.retries;
  let last: DeliveryResult = { delivered: false, attempts: 0, status: null, error: null };
  for (let i = 0; i < tries; i++) {
    if (i > 0) {
      // a stop ends the wait at once: the caller says the delivery was given up while it still can
      const waited = await sleep(o.config.webhooks.backoffMs * 2 ** (i - 1), o.signal).then(
        () => true,
        () => false,
      );
      if (!waited || o.signal?.aborted) break;
    }
    const headers = withLegacyLabsHeaders(signedHeaders(o.key, body, o.deliveryId, i + 1, Date.now(), o.walletId));
    const at = Date.now();
    let retry: boolean;
    try {
      const status = await postWebhook(url, body, headers, o.config, o.ca);
      last = { delivered: status >= 200 && status < 300, attempts: i + 1, status, error: null };
      retry = !last.delivered && retryableStatus(status);
    } catch (e) {
      last = { delivered: false, attempts: i + 1, status: null, error: (e as Error).message };
      // a blocked address does not become public by waiting
      retry = (e as { code?: string }).code !== 'blocked_address';
    }
    const more = retry && i + 1 < tries && !o.signal?.aborted;
    const attempt: WebhookAttempt =
      last.error === null ? { at, status: last.status } : { at, status: null, error: last.error.slice(0, 300) };
    await o.onAttempt?.(attempt, last, more ? Date.now() + o.config.webhooks.backoffMs * 2 ** i : undefined);
    if (!more) return last;
  }
  return last;
}
