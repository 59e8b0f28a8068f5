// The account page (`/account`): the only place a key is made. Not part of /v1 and not in
// /openapi.json. A key costs a proof of work the page computes in the browser:
//   1. GET /account/challenge → {id, bits, expiresAt}: a random single-use challenge, kept in the
//      `limits` bucket (so any gateway instance can check it) for 10 minutes.
//   2. the page finds a nonce with sha256("<id>:<nonce>") starting with `bits` zero bits
//      (wallet.keyPowBits, default 20: about 1 million hashes on average).
//   3. POST /account/keys {id, nonce} → 201 {key, walletId}: the challenge is spent (revision-checked),
//      the key is created (stored only as its hash) and shown once.
import { readFileSync } from 'node:fs';
import { createHash, randomBytes } from 'node:crypto';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Type as T } from '@sinclair/typebox';
import QRCode from 'qrcode';
import type { Route, GatewayContext } from '../route.ts';
import { ApiError } from '../../shared/errors.ts';
import { kvCasPut, isCasConflict } from '../../shared/nats/cas.ts';
import { createKey } from '../../shared/keys.ts';
import { wallet } from '../../shared/protocol/wallet.ts';

const ASSETS = join(dirname(fileURLToPath(import.meta.url)), '..', 'account');
const asset = (name: string) => readFileSync(join(ASSETS, name));
const CHALLENGE_TTL_MS = 10 * 60 * 1000;
const powKey = (id: string) => `pow.${id}`;

const SECURITY_HEADERS = {
  'content-security-policy': "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'",
  'x-content-type-options': 'nosniff',
  'referrer-policy': 'no-referrer',
  'cache-control': 'no-store',
};

/** Leading zero bits of sha256(`<id>:<nonce>`). */
export function powBits(id: string, nonce: string): number {
  const h = createHash('sha256').update(`${id}:${nonce}`).digest();
  let bits = 0;
  for (const byte of h) {
    if (byte === 0) { bits += 8; continue; }
    bits += Math.clz32(byte) - 24;
    break;
  }
  return bits;
}

interface Challenge { bits: number; expiresAt: number; used?: boolean }

async function spendChallenge(ctx: GatewayContext, id: string, nonce: string): Promise<void> {
  if (!/^[a-f0-9]{32}$/.test(id) || !/^[0-9]{1,20}$/.test(nonce)) throw new ApiError('bad_request', 'malformed challenge or nonce');
  const e = await ctx.kv.limits.get(powKey(id));
  if (!e || e.operation !== 'PUT' || !e.value.length) throw new ApiError('bad_request', 'unknown or expired challenge; fetch a new one');
  const c = e.json<Challenge>();
  if (c.used) throw new ApiError('bad_request', 'this challenge was used already; fetch a new one');
  if (Date.now() > c.expiresAt) throw new ApiError('bad_request', 'the challenge expired; fetch a new one');
  if (powBits(id, nonce) < c.bits) throw new ApiError('bad_request', `the nonce does not give ${c.bits} leading zero bits`);
  try {
    await kvCasPut(ctx.kv.limits, powKey(id), JSON.stringify({ ...c, used: true }), e.revision);
  } catch (err) {
    if (!isCasConflict(err)) throw err;
    throw new ApiError('bad_request', 'this challenge was used already; fetch a new one');
  }
}

const staticRoute = (path: string, file: string, contentType: string): Route => {
  const body = asset(file);
  return {
    method: 'GET', path, auth: false, hidden: true, tags: ['account'], summary: `account page: ${file}`, responses: { 200: { description: file, contentType } }, errors: [],
    async handler() {
      return { body, headers: { 'content-type': contentType, ...SECURITY_HEADERS } };
    },
  };
};

export const routes: Route[] = [
  staticRoute('/account', 'index.html', 'text/html; charset=utf-8'),
  staticRoute('/account/app.js', 'app.js', 'text/javascript; charset=utf-8'),
  staticRoute('/account/app.css', 'app.css', 'text/css; charset=utf-8'),
  {
    method: 'GET',
    path: '/account/config',
    auth: false,
    hidden: true,
    tags: ['account'],
    summary: 'What the account page needs to know',
    responses: { 200: { description: 'mode, dev payments, top-up limits, bonus tiers' } },
    errors: [],
    async handler(_req, ctx) {
      const dev = ctx.config.server.mode === 'development' && ctx.config.wallet.lightning.backend === 'dev';
      return { json: { mode: ctx.config.server.mode, devPay: dev, minEur: 0.25, maxEur: 100, bonus: ctx.config.wallet.bonus, payloadsPerEur: 10000 }, headers: SECURITY_HEADERS };
    },
  },
  {
    method: 'GET',
    path: '/account/challenge',
    auth: false,
    hidden: true,
    tags: ['account'],
    summary: 'A single-use proof-of-work challenge for key creation',
    responses: { 200: { description: '{id, bits, expiresAt}' } },
    errors: ['rate_limited'],
    async handler(_req, ctx) {
      const id = randomBytes(16).toString('hex');
      const c: Challenge = { bits: ctx.config.wallet.keyPowBits, expiresAt: Date.now() + CHALLENGE_TTL_MS };
      await kvCasPut(ctx.kv.limits, powKey(id), JSON.stringify(c), 0);
      return { json: { id, bits: c.bits, expiresAt: c.expiresAt, algorithm: 'sha256("<id>:<nonce>") with <bits> leading zero bits; nonce: decimal digits' }, headers: SECURITY_HEADERS };
    },
  },
  {
    method: 'POST',
    path: '/account/keys',
    auth: false,
    hidden: true,
    tags: ['account'],
    summary: 'Make a key for a new wallet, against a solved challenge',
    body: T.Object({ id: T.String({ maxLength: 64 }), nonce: T.String({ maxLength: 20 }) }, { additionalProperties: false }),
    responses: { 201: { description: '{key, walletId}: the key is shown once and stored only as its hash' } },
    errors: ['bad_request', 'rate_limited'],
    async handler(req, ctx) {
      await spendChallenge(ctx, req.body.id, req.body.nonce);
      const { key, walletId } = await createKey(ctx.nc, 'account');
      ctx.log.info({ walletId }, 'key created on the account page');
      return { status: 201, json: { key, walletId }, headers: SECURITY_HEADERS };
    },
  },
  {
    method: 'GET',
    path: '/account/qr.svg',
    auth: false,
    hidden: true,
    tags: ['account'],
    summary: 'QR code (SVG) of a lightning: link',
    query: T.Object({ data: T.String({ minLength: 1, maxLength: 2000, pattern: '^lightning:[A-Za-z0-9]+$' }) }, { additionalProperties: true }),
    responses: { 200: { description: 'SVG', contentType: 'image/svg+xml' } },
    errors: ['bad_request'],
    async handler(req) {
      // Upper case keeps the QR code in its compact alphanumeric mode (BOLT11 is case-insensitive).
      const svg = await QRCode.toString(String(req.query.data).toUpperCase(), { type: 'svg', errorCorrectionLevel: 'M', margin: 2 });
      return { body: svg, headers: { 'content-type': 'image/svg+xml', 'cache-control': 'private, max-age=3600', 'x-content-type-options': 'nosniff' } };
    },
  },
  {
    method: 'POST',
    path: '/account/dev-pay',
    auth: true,
    hidden: true,
    tags: ['account'],
    summary: 'Development only: settle one of this key\'s top-ups with the dev Lightning backend',
    body: T.Object({ topupId: T.String({ maxLength: 100 }) }, { additionalProperties: false }),
    responses: { 200: { description: '{topup, balance}' } },
    errors: ['not_found', 'bad_request'],
    async handler(req, ctx) {
      if (ctx.config.server.mode !== 'development' || ctx.config.wallet.lightning.backend !== 'dev') throw new ApiError('not_found', 'dev payments exist only in development mode with the dev backend');
      await wallet.topupGet(ctx.nc, req.auth!.walletId, req.body.topupId); // 404 for another wallet's top-up
      const r = await wallet.topupPay(ctx.nc, req.body.topupId);
      return { json: { topup: r.topup, balance: r.balance } };
    },
  },
];
