import { Type as T } from '@sinclair/typebox';

export const WalletConfig = T.Object(
  {
    lightning: T.Object(
      {
        backend: T.Union([T.Literal('dev'), T.Literal('lnd'), T.Literal('lnbits'), T.Literal('cln')], {
          default: 'dev',
          description: 'Invoice backend (env LIGHTNING_BACKEND).',
        }),
        invoiceExpirySeconds: T.Integer({ minimum: 60, default: 900, description: 'Lifetime of a top-up invoice.' }),
        url: T.String({ default: '', description: 'Backend base URL (lnd, lnbits, cln).' }),
        macaroonHex: T.String({ default: '', description: 'lnd: invoice macaroon, hex (env LND_MACAROON).' }),
        tlsCertPath: T.String({ default: '', description: 'lnd/cln: node TLS certificate file.' }),
        apiKey: T.String({ default: '', description: 'lnbits: invoice key (env LNBITS_API_KEY).' }),
        rune: T.String({ default: '', description: 'cln: rune (env CLN_RUNE).' }),
        pollMs: T.Integer({ minimum: 100, default: 2000, description: 'First poll interval for pending invoices (backs off).' }),
        maxPollMs: T.Integer({ minimum: 100, default: 60000, description: 'Longest poll interval for pending invoices.' }),
        timeoutMs: T.Integer({ minimum: 100, default: 15000, description: 'Timeout of one request to the backend.' }),
        reconcileSeconds: T.Integer({
          minimum: 1,
          default: 600,
          description:
            'How often each wallet asks the node about the top-ups made or changed since its last runs (and a slice of the older ones, reconcileSweep), credits a paid top-up the ledger lost and reports a credit without a paid invoice. `npm run admin -- audit` compares every invoice the node reports paid.',
        }),
        reconcileSweep: T.Integer({
          minimum: 0,
          default: 500,
          description:
            'Older top-ups each periodic reconciliation asks the node about, in a rolling pass over all of them (0: the audit alone looks at the history).',
        }),
        maxUnpaidTopups: T.Integer({
          minimum: 1,
          default: 5,
          description:
            'Unpaid (pending) top-ups one wallet may have at a time; one more answers 429 rate_limited with `limit: "unpaidTopups"` (each is a real invoice at the node and a document in the `topups` bucket).',
        }),
        unpaidRetentionSeconds: T.Integer({
          minimum: 1,
          default: 7 * 86400,
          description:
            'How long the document of a top-up that ended unpaid (expired, failed) is kept after it ended; then it leaves the `topups` bucket (GET /v1/topups/{id} answers 404). Paid top-ups are kept.',
        }),
        devNetwork: T.Union([T.Literal('bcrt'), T.Literal('tb'), T.Literal('bc')], {
          default: 'bcrt',
          description: 'dev: network prefix of its invoices (regtest by default, so no real wallet pays one by mistake).',
        }),
      },
      { default: {} },
    ),
    rate: T.Object(
      {
        provider: T.Union([T.Literal('fixed'), T.Literal('exchanges')], { default: 'fixed', description: 'EUR->BTC rate source.' }),
        fixedEurPerBtc: T.Number({ exclusiveMinimum: 0, default: 90000, description: 'Rate used by the fixed provider.' }),
        sources: T.Array(
          T.Object({
            kind: T.Union([T.Literal('kraken'), T.Literal('bitstamp'), T.Literal('coinbase'), T.Literal('bitfinex')], {
              description: 'Answer format of the endpoint.',
            }),
            url: T.String({ description: 'Endpoint; empty: the documented public one.' }),
          }),
          {
            default: [],
            description:
              'Exchange endpoints asked by the exchanges provider (empty: the built-in list, every kind at its public endpoint).',
          },
        ),
        cacheSeconds: T.Integer({ minimum: 1, default: 60, description: 'How long a fetched rate is reused.' }),
        timeoutMs: T.Integer({ minimum: 100, default: 4000, description: 'Timeout of one exchange request.' }),
        minSources: T.Integer({ minimum: 1, default: 2, description: 'Exchanges that must answer (sanely) for a rate to be used.' }),
        minEurPerBtc: T.Number({ exclusiveMinimum: 0, default: 1000, description: 'Rates below this are absurd and refused.' }),
        maxEurPerBtc: T.Number({ exclusiveMinimum: 0, default: 10000000, description: 'Rates above this are absurd and refused.' }),
        maxDeviationPercent: T.Number({
          exclusiveMinimum: 0,
          default: 5,
          description: 'An exchange farther than this from the median of all answers is dropped.',
        }),
        staleSeconds: T.Integer({
          minimum: 1,
          default: 600,
          description: 'An exchange quote with a timestamp older than this is refused.',
        }),
      },
      { default: {} },
    ),
    keyPowBits: T.Integer({
      minimum: 1,
      maximum: 32,
      default: 20,
      description:
        'Account page: leading zero bits of sha256(challenge:nonce) the browser must find before a key is made (20: about 1 million hashes on average, 1 to 5 seconds in a browser; each bit doubles it).',
    }),
    keysPerAddressPerDay: T.Integer({
      minimum: 1,
      default: 5,
      description: 'Account page: keys one client address may make in any 24 hours, all gateways together (429 rate_limited beyond).',
    }),
    keyInviteCodes: T.Array(T.String({ minLength: 6, maxLength: 200 }), {
      default: [],
      description: 'Account page: when not empty, making a key needs one of these codes, and each code makes one key.',
    }),
    orphanChargeGraceSeconds: T.Integer({
      minimum: 1,
      default: 120,
      description:
        "A charge whose job document does not exist this long after it is refunded in full (the gateway lost the wallet's answer).",
    }),
    bonus: T.Array(T.Object({ minEur: T.Number({ minimum: 0 }), percent: T.Number({ minimum: 0, maximum: 100 }) }), {
      default: [
        { minEur: 20, percent: 5 },
        { minEur: 50, percent: 10 },
      ],
      description: 'Bonus tiers: a top-up of at least minEur gets percent more Payloads (highest tier that applies).',
    }),
  },
  { default: {} },
);
