// The account page (`/account`): the only place a key is made. Not part of /v1 and not in
// /openapi.json. A key costs a proof of work the page computes in the browser:
//   1. GET /account/challenge → {id, bits, expiresAt}: a single-use challenge for 5 minutes, bound
//      to the client address it was issued to, stored nowhere: its id carries its expiry and an
//      HMAC any gateway of the deployment can check (gateway/pow.ts).
//   2. the page finds a nonce with sha256("<id>:<nonce>") starting with `bits` zero bits
//      (wallet.keyPowBits, default 20: about 1 million hashes on average).
//   3. POST /account/keys {id, nonce, invite?} → 201 {key, walletId}: from the address the challenge
//      was issued to; at most wallet.keysPerAddressPerDay keys per address in any 24 hours; with
//      wallet.keyInviteCodes set, one unused code (each makes one key). The challenge and the code
//      are spent (revision-checked), the key is created (stored only as its hash) and shown once.
// This raises the cost of scripted creation (work per key, one address per few keys, or an invite
// the operator hands out); it does not stop someone with many addresses and time: see the README.
import { readFileSync } from 'node:fs';
import { createHash } from 'node:crypto';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Type as T } from '@sinclair/typebox';
import QRCode from 'qrcode';
import type { Route, GatewayContext } from '../route.ts';
import { ApiError } from '../../shared/errors.ts';
import { kvCasPut, isCasConflict } from '../../shared/nats/cas.ts';
import { createKey } from '../../shared/keys.ts';
import { takeToken } from '../../shared/limits.ts';
import { wallet } from '../../shared/protocol/wallet.ts';
import { checkChallenge, issueChallenge, powBits, SpentChallenges } from '../pow.ts';
import { devTopupsOn } from '../dev-guard.ts';

const ASSETS = join(dirname(fileURLToPath(import.meta.url)), '..', 'account');
const asset = (name: string) => readFileSync(join(ASSETS, name));
const DAY_MS = 24 * 3600 * 1000;
const hashOf = (s: string) => createHash('sha256').update(s).digest('hex');
// Kept for good (the `keys` bucket has no max age, unlike `limits`): a used invite stays used, and
// the per-address log outlives its 24-hour window. Neither name can be a key hash (64 hex digits).
const inviteKey = (code: string) => `invite.${hashOf(code).slice(0, 40)}`;

const SECURITY_HEADERS = {
  'content-security-policy':
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'",
  'x-content-type-options': 'nosniff',
  'referrer-policy': 'no-referrer',
  'cache-control': 'no-store',
};

export { powBits };

/** The challenges this gateway spent (gateway/pow.ts), one set per gateway. */
const spentSets = new WeakMap<object, SpentChallenges>();
const spentOf = (ctx: GatewayContext) => {
  let s = spentSets.get(ctx.kv.limits);
  if (!s) spentSets.set(ctx.kv.limits, (s = new SpentChallenges()));
  return s;
};

/** With invite codes configured: the code is one of them and unused; returns a function that spends it once. */
async function checkInvite(ctx: GatewayContext, invite: string | undefined): Promise<(() => Promise<void>) | null> {
  const codes = ctx.config.wallet.keyInviteCodes;
  if (!codes.length) return null;
  if (!invite) throw new ApiError('bad_request', 'this service makes keys by invitation: give an invite code', { field: 'invite' });
  if (!codes.includes(invite)) throw new ApiError('bad_request', 'unknown invite code', { field: 'invite' });
  const used = await ctx.kv.keys.get(inviteKey(invite));
  if (used && used.operation === 'PUT' && used.value.length)
    throw new ApiError('bad_request', 'this invite code was used already', { field: 'invite' });
  return async () => {
    try {
      await kvCasPut(ctx.kv.keys, inviteKey(invite), JSON.stringify({ at: Date.now() }), used?.revision ?? 0);
    } catch (err) {
      if (!isCasConflict(err)) throw err;
      throw new ApiError('bad_request', 'this invite code was used already', { field: 'invite' });
    }
  };
}

const staticRoute = (path: string, file: string, contentType: string): Route => {
  const body = asset(file);
  return {
    method: 'GET',
    path,
    auth: false,
    hidden: true,
    tags: ['account'],
    summary: `account page: ${file}`,
    responses: { 200: { description: file, contentType } },
    errors: [],
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
    async handler(req, ctx) {
      // no pay button for a visitor who came through a proxy: dev-pay refuses them
      const dev = devTopupsOn(ctx.config) && !req.throughProxy;
      return {
        json: {
          mode: ctx.config.server.mode,
          devPay: dev,
          inviteRequired: ctx.config.wallet.keyInviteCodes.length > 0,
          minEur: 0.25,
          maxEur: 100,
          bonus: ctx.config.wallet.bonus,
          payloadsPerEur: 10000,
        },
        headers: SECURITY_HEADERS,
      };
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
    async handler(req, ctx) {
      // computed, not stored: an anonymous request writes nothing (gateway/pow.ts)
      const c = await issueChallenge(ctx.kv.keys, ctx.config.wallet.keyPowBits, req.ip);
      return {
        json: {
          id: c.id,
          bits: c.bits,
          expiresAt: c.expiresAt,
          algorithm: 'sha256("<id>:<nonce>") with <bits> leading zero bits; nonce: decimal digits',
        },
        headers: SECURITY_HEADERS,
      };
    },
  },
  {
    method: 'POST',
    path: '/account/keys',
    auth: false,
    hidden: true,
    tags: ['account'],
    summary: 'Make a key for a new wallet, against a solved challenge',
    body: T.Object(
      { id: T.String({ maxLength: 64 }), nonce: T.String({ maxLength: 20 }), invite: T.Optional(T.String({ maxLength: 200 })) },
      { additionalProperties: false },
    ),
    responses: { 201: { description: '{key, walletId}: the key is shown once and stored only as its hash' } },
    errors: ['bad_request', 'rate_limited'],
    async handler(req, ctx) {
      const spendChallenge = await checkChallenge(ctx.kv, spentOf(ctx), ctx.config.wallet.keyPowBits, req.body.id, req.body.nonce, req.ip);
      const spendInvite = await checkInvite(ctx, req.body.invite);
      const d = await takeToken(ctx.kv.keys, 'addr', hashOf(req.addressGroup), ctx.config.wallet.keysPerAddressPerDay, DAY_MS);
      if (!d.allowed)
        throw new ApiError(
          'rate_limited',
          `this address made ${ctx.config.wallet.keysPerAddressPerDay} keys in the last 24 hours; retry in ${d.retryAfter} s`,
          { retryAfter: d.retryAfter },
          { 'Retry-After': String(d.retryAfter) },
        );
      await spendChallenge();
      await spendInvite?.();
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
    query: T.Object(
      { data: T.String({ minLength: 1, maxLength: 2000, pattern: '^lightning:[A-Za-z0-9]+$' }) },
      { additionalProperties: true },
    ),
    responses: { 200: { description: 'SVG', contentType: 'image/svg+xml' } },
    errors: ['bad_request'],
    async handler(req) {
      // Upper case keeps the QR code in its compact alphanumeric mode (BOLT11 is case-insensitive).
      const svg = await QRCode.toString(String(req.query.data).toUpperCase(), { type: 'svg', errorCorrectionLevel: 'M', margin: 2 });
      return {
        body: svg,
        headers: { 'content-type': 'image/svg+xml', 'cache-control': 'private, max-age=3600', 'x-content-type-options': 'nosniff' },
      };
    },
  },
  {
    method: 'POST',
    path: '/account/dev-pay',
    auth: true,
    hidden: true,
    tags: ['account'],
    summary: "Development only: settle one of this key's top-ups with the dev Lightning backend",
    body: T.Object({ topupId: T.String({ maxLength: 100 }) }, { additionalProperties: false }),
    responses: { 200: { description: '{topup, balance}' } },
    errors: ['not_found', 'bad_request'],
    async handler(req, ctx) {
      if (!devTopupsOn(ctx.config)) throw new ApiError('not_found', 'dev payments exist only in development mode with the dev backend');
      if (req.throughProxy)
        throw new ApiError(
          'not_found',
          'dev payments are made only on the machine the gateway runs on: this request came through a proxy (a forwarding header, or a peer in server.trustedProxies)',
        );
      await wallet.topupGet(ctx.nc, req.auth!.walletId, req.body.topupId); // 404 for another wallet's top-up
      const r = await wallet.topupPay(ctx.nc, req.body.topupId);
      return { json: { topup: r.topup, balance: r.balance } };
    },
  },
];
