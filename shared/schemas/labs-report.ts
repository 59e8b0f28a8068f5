// labs.report/1: the JSON document a relay-prober module produces (spec 2.7). One definition: the
// prober validates against it before storing, tests validate against it, /openapi.json embeds it.
import { Type as T, type Static } from '@sinclair/typebox';

export const LABS_REPORT_SCHEMA_ID = 'labs.report/1';

export const CHECK_STATUSES = ['pass', 'fail', 'warn', 'skip', 'info'] as const;
export type CheckStatus = (typeof CHECK_STATUSES)[number];

// The level comes from the NIP's own words (docs/labs.md, "Severity model"): MUST → required,
// SHOULD / "expected" / "recommended" → recommended, a definition or a relay's own NIP-11 claim
// without a keyword → convention, MAY → optional. `essential` is no longer produced (kept so
// reports written before the severity model still validate).
export const BASIS_LEVELS = ['required', 'recommended', 'convention', 'optional', 'measurement', 'essential'] as const;
export type BasisLevel = (typeof BASIS_LEVELS)[number];

export const Basis = T.Object(
  {
    nip: T.String({ description: 'NIP number (e.g. "01"), or "transport" for DNS/TCP/TLS/WebSocket.' }),
    section: T.Optional(T.String({ description: 'Section or rule of the NIP.' })),
    level: T.Union(
      BASIS_LEVELS.map((l) => T.Literal(l)),
      {
        description:
          '`required` (a MUST in the NIP): a deviation fails. `recommended` (SHOULD, "expected", "recommended") and `convention` (a definition or NIP-11 claim without a keyword): a deviation warns. `optional` (MAY): reported as info. `measurement`: info. `essential`: not produced any more.',
      },
    ),
    quote: T.Optional(T.String({ description: 'The words of the NIP the level comes from, quoted verbatim.' })),
    nipOptional: T.Optional(
      T.Boolean({
        description:
          'The NIP is optional for a relay: when `supported_nips` does not list it, a deviation is at most `warn` ("offered but broken") and a feature not offered is `skip`.',
      }),
    ),
  },
  { additionalProperties: false },
);

export const Percentiles = T.Object(
  {
    samples: T.Integer({ minimum: 0 }),
    min: T.Number(),
    max: T.Number(),
    p50: T.Number(),
    p90: T.Number(),
    p99: T.Number(),
  },
  { additionalProperties: false, description: 'Milliseconds (nearest-rank percentiles).' },
);

export const ReportCheck = T.Object(
  {
    id: T.String(),
    title: T.String(),
    status: T.Union(CHECK_STATUSES.map((s) => T.Literal(s))),
    message: T.String(),
    details: T.Record(T.String(), T.Unknown()),
    basis: Basis,
    advertised: T.Optional(
      T.Union([T.Boolean(), T.Null()], {
        description: 'For a check of an optional NIP: whether NIP-11 `supported_nips` lists it (null: no document or no list).',
      }),
    ),
    durationMs: T.Integer({ minimum: 0 }),
  },
  { additionalProperties: false },
);

export const AdvertisedObserved = T.Object(
  {
    claim: T.String({ description: 'NIP-11 field, e.g. `supported_nips: 45` or `limitation.max_limit`.' }),
    advertised: T.Unknown({ description: 'What the NIP-11 document says (null: not stated).' }),
    observed: T.Unknown({ description: 'What the probe saw (null: not observed).' }),
    agrees: T.Union([T.Boolean(), T.Null()], { description: 'null when the probe could not tell.' }),
    checkId: T.Optional(T.String()),
  },
  { additionalProperties: false },
);

export const LabsReport = T.Object(
  {
    schema: T.Literal(LABS_REPORT_SCHEMA_ID),
    module: T.Union([T.Literal('quick'), T.Literal('conformance'), T.Literal('custom')]),
    relay: T.Object(
      {
        url: T.String({ description: 'Normalised relay URL that was tested.' }),
        name: T.Union([T.String(), T.Null()]),
        software: T.Union([T.String(), T.Null()], { description: 'NIP-11 `software`.' }),
        version: T.Union([T.String(), T.Null()], { description: 'NIP-11 `version`.' }),
        supportedNips: T.Union([T.Array(T.Integer()), T.Null()]),
      },
      { additionalProperties: false },
    ),
    startedAt: T.String({ format: 'date-time' }),
    finishedAt: T.String({ format: 'date-time' }),
    durationMs: T.Integer({ minimum: 0 }),
    summary: T.Object(
      {
        total: T.Integer({ minimum: 0 }),
        pass: T.Integer({ minimum: 0 }),
        fail: T.Integer({ minimum: 0 }),
        warn: T.Integer({ minimum: 0 }),
        skip: T.Integer({ minimum: 0 }),
        info: T.Integer({ minimum: 0 }),
      },
      { additionalProperties: false },
    ),
    score: T.Integer({
      minimum: 0,
      maximum: 100,
      description: 'round(100 * (pass + 0.5 * warn) / (pass + warn + fail)); 0 when nothing was judged. skip and info do not count.',
    }),
    checks: T.Array(ReportCheck),
    latency: T.Object(
      {
        connect: T.Union([Percentiles, T.Null()]),
        eose: T.Union([Percentiles, T.Null()]),
        ok: T.Union([Percentiles, T.Null()]),
      },
      { additionalProperties: false },
    ),
    advertisedVsObserved: T.Array(AdvertisedObserved),
    testData: T.Object(
      {
        pubkeys: T.Array(T.String(), { description: 'Throwaway keys the test events were signed with.' }),
        marker: T.Array(T.String(), { description: 'Tag every test event carries.' }),
        eventsSent: T.Integer({ minimum: 0 }),
        eventsDeleted: T.Integer({ minimum: 0, description: 'Test events named in NIP-09 deletion requests.' }),
        deletionHonoured: T.Union([T.Boolean(), T.Null()], {
          description: 'Whether the stored test events were gone after deletion; null when nothing was stored or the probe could not tell.',
        }),
      },
      { additionalProperties: false },
    ),
    usage: T.Object(
      {
        connections: T.Integer({ minimum: 0 }),
        subscriptions: T.Integer({ minimum: 0 }),
        roundTrips: T.Integer({
          minimum: 0,
          description: 'Client messages that waited for an answer (REQ, EVENT, COUNT, AUTH) plus HTTP requests and connection handshakes.',
        }),
      },
      { additionalProperties: false },
    ),
  },
  { $id: 'LabsReport', additionalProperties: false, description: 'labs.report/1: the JSON report of a labs module.' },
);

export type LabsReport = Static<typeof LabsReport>;
export type ReportCheck = Static<typeof ReportCheck>;
export type BasisT = Static<typeof Basis>;
export type PercentilesT = Static<typeof Percentiles>;
