// TypeBox schemas of the API's documents (spec section 2). The gateway validates with them (Ajv),
// TypeScript types come from them, and /openapi.json is generated from them.
import { Type as T, type Static, type TSchema } from '@sinclair/typebox';
import { ERROR_CODES } from '../errors.ts';

const Ms = (description: string) => T.Integer({ description: `${description} (Unix time, ms)` });

export const ErrorBody = T.Object(
  {
    error: T.Object(
      {
        code: T.Union(
          ERROR_CODES.map((c) => T.Literal(c)),
          { description: 'Stable machine-readable code; see the errors page.' },
        ),
        message: T.String({ description: 'Human text; may change.' }),
        docs: T.Optional(T.String({ description: 'Link to this code on the errors page.' })),
        requestId: T.Optional(T.String()),
      },
      { additionalProperties: true },
    ),
  },
  { $id: 'Error' },
);

/** A webhook's delivery: the job's (websitepro, shots) or one labs report's (on its result). */
function webhookDelivery<S extends string>(states: S[], stateMeaning: string, description: string) {
  return T.Object(
    {
      url: T.String(),
      state: T.Union(
        states.map((s) => T.Literal(s)),
        { description: stateMeaning },
      ),
      tries: T.Integer({ description: 'Attempts made so far.' }),
      attempts: T.Array(
        T.Object({
          at: Ms('Attempt started'),
          status: T.Union([T.Integer(), T.Null()], { description: 'HTTP status of the receiver; null when none came.' }),
          error: T.Optional(T.String()),
        }),
        { description: 'The last attempts, oldest first.' },
      ),
      nextAttemptAt: T.Optional(Ms('Next retry')),
    },
    { description },
  );
}

export const Result = T.Object(
  {
    key: T.String({ description: 'Output name, module name, `custom`, `dataset`, or the screenshot file name.' }),
    status: T.Union([T.Literal('pending'), T.Literal('done'), T.Literal('failed')]),
    price: T.Integer({ description: 'Payloads' }),
    refunded: T.Boolean(),
    error: T.Optional(T.String({ description: 'Reason when not delivered.' })),
    message: T.Optional(T.String({ description: 'Human text explaining `error`.' })),
    url: T.Optional(T.String({ description: 'Download address (needs the Authorization header); only while done and not expired.' })),
    thumbUrl: T.Optional(T.String({ description: '`shots`: WebP thumbnail address.' })),
    contentType: T.Optional(T.String()),
    bytes: T.Optional(T.Integer()),
    filename: T.Optional(T.String()),
    oneTime: T.Optional(T.Boolean()),
    progress: T.Optional(T.String()),
    page: T.Optional(T.String({ description: '`websitepro`: the URL of the page the result was made of, after redirects.' })),
    source: T.Optional(
      T.String({ description: '`websitepro` batch and crawl: the URL as asked for (a batch) or as found (a crawl), before redirects.' }),
    ),
    selectors: T.Optional(
      T.Record(T.String(), T.Integer({ minimum: 0 }), {
        description: '`websitepro` with page controls: how many elements each selector of the request matched.',
      }),
    ),
    cachedAt: T.Optional(
      T.String({
        format: 'date-time',
        description:
          '`websitepro` with `maxAge`: the page was served from the fetch cache, fetched at this time (ISO 8601); absent when it was fetched for this job.',
      }),
    ),
    evidence: T.Optional(
      T.Object(
        {
          status: T.Integer({ description: 'HTTP status the page answered with.' }),
          title: T.String({ description: "The page's <title> (up to 200 characters; empty when it has none)." }),
          signature: T.String({
            description: 'Which wall signature matched, e.g. `cloudflare-challenge`, `datadome`, `recaptcha`, `login-form`, `http-auth`.',
          }),
        },
        {
          description:
            '`websitepro`, on a result failed with `blocked` or `login_required`: why the page was judged a wall (a bot challenge, a CAPTCHA or a login) rather than its content. Such a result is refunded.',
        },
      ),
    ),
    webhook: T.Optional(
      webhookDelivery(
        ['pending', 'delivered', 'failed'],
        'pending: being sent (retries with backoff); delivered: a 2xx came back; failed: retries used up, a 4xx, a refused address, or the prober stopped between attempts.',
        "labs: the delivery of this report to the job's webhook (docs/webhooks.md); absent until the report is stored.",
      ),
    ),
  },
  { $id: 'Result', additionalProperties: true },
);

export const Job = T.Object(
  {
    id: T.String(),
    service: T.Union([T.Literal('websitepro'), T.Literal('shots'), T.Literal('labs')]),
    status: T.Union([T.Literal('queued'), T.Literal('processing'), T.Literal('completed'), T.Literal('failed')]),
    target: T.String({ description: 'Host name of the target.' }),
    cost: T.Integer(),
    refunded: T.Integer(),
    charged: T.Integer(),
    error: T.Optional(T.String()),
    createdAt: Ms('Created'),
    finishedAt: T.Optional(Ms('Finished')),
    expiresAt: Ms('Results are deleted after this'),
    results: T.Array(T.Ref('Result'), {
      description: `Every result, or a page set's first ${1000} (then \`resultsNext\` reads on); \`GET /v1/jobs\` lists a page set with none.`,
    }),
    resultCount: T.Optional(T.Integer({ description: 'A page set (websitepro `urls`): results recorded so far.' })),
    resultsNext: T.Optional(
      T.String({
        description:
          'A page set whose results are not all in `results`: the cursor for `GET /v1/jobs/{id}/results?after=`. Absent when all are inline.',
      }),
    ),
    pages: T.Optional(
      T.Object(
        {
          total: T.Integer({ description: 'Pages to convert (a batch: its distinct URLs).' }),
          recorded: T.Integer({ description: 'Pages whose results are recorded.' }),
          slots: T.Integer({ description: 'Pages paid for; slots not used (duplicate URLs) are refunded by one entry.' }),
          done: T.Integer({ description: 'Results delivered.' }),
          failed: T.Integer({ description: 'Results failed (each refunded).' }),
        },
        { description: 'A page set: its counts.' },
      ),
    ),
    crawl: T.Optional(
      T.Object(
        {
          skipped: T.Record(T.String(), T.Object({ count: T.Integer(), sample: T.Array(T.String()) }), {
            description:
              'URLs found but not converted, per reason (robots, robots_unavailable, other_origin, excluded, depth, duplicate, limit, bad_url, deadline): how many, and up to 10 of them.',
          }),
          deadline: T.Optional(Ms('The crawl admits no page after this (`crawl.timeout`)')),
        },
        { description: 'A crawl: its report. Skipped URLs are not results and cost nothing.' },
      ),
    ),
    webhook: T.Optional(
      webhookDelivery(
        ['waiting', 'pending', 'delivered', 'failed'],
        'waiting: the job runs; pending: being sent (retries with backoff); delivered: a 2xx came back; failed: retries used up, a 4xx, or a refused address.',
        "websitepro and shots: the delivery of the job's webhook (docs/webhooks.md).",
      ),
    ),
  },
  { $id: 'Job', additionalProperties: true },
);

export const QuoteItem = T.Object(
  {
    key: T.String(),
    price: T.Integer(),
    oneTime: T.Optional(T.Boolean()),
    quantity: T.Optional(
      T.Integer({ description: 'A page set (websitepro `urls`): pages this output is paid for; `price` = `quantity` x `unitPrice`.' }),
    ),
    unitPrice: T.Optional(T.Integer({ description: 'A page set: the price of this output for one page.' })),
  },
  { additionalProperties: true },
);
export const Quote = T.Object(
  {
    service: T.String(),
    target: T.String(),
    cost: T.Integer(),
    eur: T.Number(),
    balance: T.Integer(),
    sufficient: T.Boolean(),
    items: T.Array(QuoteItem),
  },
  { $id: 'Quote' },
);

export const Balance = T.Object({ balance: T.Integer(), unit: T.String(), eur: T.Number() }, { $id: 'Balance' });

export const Topup = T.Object(
  {
    id: T.String(),
    status: T.Union([T.Literal('pending'), T.Literal('paid'), T.Literal('expired'), T.Literal('failed')]),
    eur: T.Number(),
    eurCents: T.Integer(),
    payloads: T.Integer(),
    bonusPayloads: T.Integer(),
    bolt11: T.Union([T.String(), T.Null()]),
    sats: T.Union([T.Integer(), T.Null()]),
    expiresAt: Ms('Invoice expiry'),
  },
  { $id: 'Topup', additionalProperties: true },
);

export const JobWithBalance = T.Object({ job: T.Ref('Job'), balance: T.Integer() });
export const TopupWithBalance = T.Object({ topup: T.Ref('Topup'), balance: T.Integer() });

/** Every named schema, registered once with Ajv and listed under components.schemas. */
export const COMPONENTS: TSchema[] = [ErrorBody, Result, Job, Quote, Balance, Topup];

export type ResultDoc = Static<typeof Result>;
export type JobDoc = Static<typeof Job> & { results: ResultDoc[] };
export type QuoteDoc = Static<typeof Quote>;
export type TopupDoc = Static<typeof Topup>;
