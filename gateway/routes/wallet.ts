// Wallet endpoints (spec 4.4): balance, ledger, top-ups. The balance is read from the ledger the wallet
// writes (gateway/balances.ts); the rest ask the wallet actor over NATS.
import { Type as T } from '@sinclair/typebox';
import type { Route } from '../route.ts';
import { Balance, TopupWithBalance } from '../../shared/schemas/api.ts';
import { wallet, walletApi, toEur, UNIT, TRANSACTIONS_PAGE } from '../../shared/protocol/wallet.ts';
import { idempotent, idempotencyKeyOf, fingerprintOf, IDEMPOTENCY_DOC } from '../idempotency.ts';
import { readBalance } from '../balances.ts';

const Entry = T.Object(
  {
    id: T.Integer({
      description:
        'Entry id: the ledger stream sequence. Ids grow with time but are not contiguous within one wallet. Pass the smallest id of a page as `before` to get the next page.',
    }),
    type: T.Union([T.Literal('topup'), T.Literal('bonus'), T.Literal('charge'), T.Literal('refund'), T.Literal('grant')], {
      description:
        '`topup`: a paid top-up (bonus included, see `bonus`); `charge`: a job charged at creation; `refund`: one undelivered result given back; `grant`: an operator grant or correction.',
    }),
    amount: T.Integer({ description: 'Signed Payloads: negative for a charge, positive otherwise.' }),
    balanceAfter: T.Integer({ description: 'The balance in Payloads right after this entry.' }),
    at: T.Integer({ description: 'When it was written (Unix time, ms).' }),
    jobId: T.Optional(T.String({ description: '`charge`, `refund`: the job.' })),
    resultKey: T.Optional(T.String({ description: '`refund`: the result given back.' })),
    topupId: T.Optional(T.String({ description: '`topup`: the top-up.' })),
    bonus: T.Optional(T.Integer({ description: '`topup`: the bonus part of `amount`.' })),
    reason: T.Optional(T.String({ description: "`grant`: the operator's reason." })),
  },
  { additionalProperties: true },
);

export const Transactions = T.Object({
  entries: T.Array(Entry, { description: `Newest first, at most ${TRANSACTIONS_PAGE} per page.` }),
  next: T.Union([T.Integer(), T.Null()], { description: 'Pass as `before` for the next (older) page; null on the last page.' }),
  balance: T.Integer({ description: 'Current balance in Payloads.' }),
});

export const routes: Route[] = [
  {
    method: 'GET',
    path: '/v1/balance',
    auth: true,
    summary: "Balance of this key's wallet",
    description:
      "The wallet's balance in Payloads and EUR, read from the ledger as of the request: every charge, refund and paid top-up acknowledged before it is counted.",
    tags: ['wallet'],
    responses: { 200: { description: 'The balance in Payloads (10000 Payloads = 1 EUR) and in EUR.', schema: Balance } },
    errors: ['service_unavailable'],
    async handler(req, ctx) {
      // from the ledger as of now, without a wallet request (gateway/balances.ts)
      const balance = await readBalance(ctx.nc, req.auth!.walletId);
      return { json: { balance, unit: UNIT, eur: toEur(balance) } };
    },
  },
  {
    method: 'GET',
    path: '/v1/transactions',
    auth: true,
    summary: "Ledger of this key's wallet, newest first",
    description:
      `Pages of ${TRANSACTIONS_PAGE} entries, newest first. \`before\` returns only entries with an id below it; ` +
      "the answer's `next` is the value for the following page (null at the end). Each entry: `id` (ledger sequence), `type` " +
      '(`topup`, `charge`, `refund`, `grant`), `amount` (signed Payloads), `balanceAfter`, `at` (ms), and `jobId`/`resultKey` ' +
      '(charges and refunds), `topupId`/`bonus` (top-ups) or `reason` (grants). The balance always equals the sum of all entries.',
    tags: ['wallet'],
    query: T.Object(
      { before: T.Optional(T.Integer({ minimum: 1, description: 'Only entries with an id below this.' })) },
      { additionalProperties: true },
    ),
    responses: { 200: { description: 'One page of the ledger.', schema: Transactions } },
    errors: ['bad_request', 'service_unavailable'],
    async handler(req, ctx) {
      const before = req.query.before as number | undefined;
      return { json: await wallet.transactions(ctx.nc, req.auth!.walletId, before) };
    },
  },
  {
    method: 'POST',
    path: '/v1/topups',
    auth: true,
    summary: 'Top up the balance with a Lightning invoice',
    description:
      'Makes a Lightning invoice for `eur` (0.25 to 100.00, at most two decimals) at the current EUR/BTC rate. ' +
      'Once it is paid the balance is credited with `payloads` (10000 per EUR, plus the bonus of the tier the amount reaches; tiers on GET /v1/pricing). ' +
      'Poll GET /v1/topups/{id} until `status` is `paid` (or `expired`).',
    tags: ['wallet'],
    body: T.Object(
      { eur: T.Number({ minimum: 0.25, maximum: 100, description: 'Amount in EUR, 0.25 to 100.00, at most two decimals.' }) },
      { additionalProperties: false },
    ),
    responses: { 201: { description: 'The pending top-up with its invoice, and the current balance.', schema: TopupWithBalance } },
    requestHeaders: { 'Idempotency-Key': IDEMPOTENCY_DOC },
    errors: ['bad_request', 'rate_limited', 'invoice_failed', 'service_unavailable', 'idempotency_key_in_use', 'idempotency_key_reused'],
    async handler(req, ctx) {
      const walletId = req.auth!.walletId;
      // no job id: a top-up left running by a dead gateway is made anew once the wallet's answer can no longer come
      return idempotent(
        {
          nc: ctx.nc,
          walletId,
          key: idempotencyKeyOf(req.headers),
          maxRecords: ctx.config.limits.idempotencyKeysPerDay,
          fingerprint: fingerprintOf('POST', '/v1/topups', req.body),
          staleMs: 2 * walletApi.topupCreate.timeoutMs,
        },
        async () => ({ status: 201, json: await wallet.topupCreate(ctx.nc, walletId, req.body.eur) }),
      );
    },
  },
  {
    method: 'GET',
    path: '/v1/topups/:id',
    auth: true,
    summary: 'A top-up and the current balance',
    description: 'A top-up of another key answers 404. `bolt11` is set only while `pending`.',
    tags: ['wallet'],
    responses: { 200: { description: 'The top-up and the current balance.', schema: TopupWithBalance } },
    errors: ['not_found', 'service_unavailable'],
    async handler(req, ctx) {
      return { json: await wallet.topupGet(ctx.nc, req.auth!.walletId, req.params.id!) };
    },
  },
];
