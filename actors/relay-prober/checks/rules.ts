// The NIPs' own words behind every verdict (docs/labs.md, "Severity model"). A check's default
// basis is one of these rules; a finding judged by a softer rule (e.g. a matching event missing:
// a SHOULD, where an event outside the filter breaks a MUST) carries that rule instead, so the
// report always shows the quote that decided the level. Quotes are verbatim from
// nostr-protocol/nips (NIP-01, 09, 11, 40, 42, 45, 70, 77 as read for issue 21).
import type { BasisLevel } from '../../../shared/schemas/labs-report.ts';

export interface Rule {
  nip: string;
  section?: string;
  level: BasisLevel;
  quote: string;
  /** An optional NIP: the verdict depends on `supported_nips` (see run.ts `judge`). */
  nipOptional?: boolean;
}

/**
 * Rules judged as a MUST without the word, because they define what the thing is (docs/labs.md):
 * a relay is a WebSocket endpoint; NIP-01 defines `sig` as the signature of `id`, so a message
 * whose signature does not verify is not an event; NIP-42 and NIP-45 define AUTH and COUNT, so a
 * relay that lists the NIP and does not do what it defines does not implement it; NIP-77 likewise
 * defines the relay's NEG-MSG answer.
 */
export const DEFINITIONAL: ReadonlySet<string> = new Set(['endpoint', 'tls', 'websocket', 'signature', 'auth', 'count', 'negentropy']);

const r = (nip: string, section: string | undefined, level: BasisLevel, quote: string, nipOptional = false): Rule => ({
  nip,
  ...(section ? { section } : {}),
  level,
  quote,
  ...(nipOptional ? { nipOptional } : {}),
});

export const RULES = {
  // ------------------------------------------------------------------ transport and NIP-01 basics
  endpoint: r(
    'transport',
    'Communication between clients and relays',
    'required',
    'Relays expose a websocket endpoint to which clients can connect.',
  ),
  tls: r('transport', 'TLS (wss://)', 'required', 'Relays expose a websocket endpoint to which clients can connect.'),
  websocket: r(
    '01',
    'Communication between clients and relays',
    'required',
    'Relays expose a websocket endpoint to which clients can connect.',
  ),
  connectionsMay: r(
    '01',
    'Communication between clients and relays',
    'optional',
    'Relays MAY limit number of connections from specific IP/client/etc.',
  ),
  killSubscriptionMay: r(
    '01',
    'CLOSED',
    'optional',
    'It can also be sent when a relay decides to kill a subscription on its side before a client has disconnected or sent a `CLOSE`.',
  ),
  measurement: r('01', undefined, 'measurement', 'No rule: a measurement, reported as info.'),

  // ------------------------------------------------------------------ NIP-11
  nip11Document: r(
    '11',
    undefined,
    'recommended',
    'When a relay receives an HTTP(s) request with an `Accept` header of `application/nostr+json` to a URI supporting WebSocket upgrades, they SHOULD return a document with the following structure.',
  ),
  nip11Cors: r(
    '11',
    'Cross-Origin Resource Sharing',
    'required',
    'Relays MUST accept CORS requests by sending `Access-Control-Allow-Origin`, `Access-Control-Allow-Headers`, and `Access-Control-Allow-Methods` headers.',
  ),

  // ------------------------------------------------------------------ NIP-01 messages
  reqAnswered: r('01', 'CLOSED', 'required', '`CLOSED` messages MUST be sent in response to a `REQ` when the relay refuses to fulfill it.'),
  okSent: r('01', 'OK', 'required', '`OK` messages MUST be sent in response to `EVENT` messages received from clients'),
  okFormat: r(
    '01',
    'OK',
    'required',
    'The 4th parameter MUST always be present, but MAY be an empty string when the 3rd is `true`, otherwise it MUST be a string formed by a machine-readable single-word prefix followed by a `:` and then a human-readable message.',
  ),
  closedPrefix: r(
    '01',
    'CLOSED',
    'required',
    'This message uses the same pattern of `OK` messages with the machine-readable prefix and human-readable message. [OK:] otherwise it MUST be a string formed by a machine-readable single-word prefix followed by a `:` and then a human-readable message.',
  ),
  standardPrefixes: r(
    '01',
    'OK and CLOSED prefixes',
    'convention',
    'The standardized machine-readable prefixes for `OK` and `CLOSED` are: `duplicate`, `pow`, `blocked`, `rate-limited`, `invalid`, and `error` for when none of that fits.',
  ),
  duplicateOk: r('01', 'OK', 'convention', '`["OK", "b1a649ebe8...", true, "duplicate: already have this event"]`'),
  eventSubid: r(
    '01',
    'EVENT',
    'required',
    '`EVENT` messages MUST be sent only with a subscription ID related to a subscription previously initiated by the client (using the `REQ` message above).',
  ),
  subidPerConn: r(
    '01',
    'REQ (subscription_id)',
    'required',
    'Relays MUST manage `<subscription_id>`s independently for each WebSocket connection.',
  ),
  subidLength: r(
    '01',
    'REQ (subscription_id)',
    'convention',
    '`<subscription_id>` is an arbitrary, non-empty string of max length 64 chars.',
  ),
  liveDelivery: r(
    '01',
    'REQ',
    'recommended',
    'Any new events it receives SHOULD be sent to that same websocket until the connection is closed, a `CLOSE` event is received with the same `<subscription_id>`, or a new `REQ` is sent using the same `<subscription_id>` (in which case a new subscription is created, replacing the old one).',
  ),
  reqReturns: r('01', 'REQ', 'recommended', 'Upon receiving a `REQ` message, the relay SHOULD return events that match the filter.'),

  // ------------------------------------------------------------------ NIP-01 events
  eventId: r(
    '01',
    'Events and signatures',
    'required',
    'To prevent implementation differences from creating a different event ID for the same event, the following rules MUST be followed while serializing',
  ),
  signature: r(
    '01',
    'Events and signatures',
    'required',
    '"sig": <64-bytes lowercase hex of the signature of the sha256 hash of the serialized event data, which is the same as the "id" field>',
  ),
  escapes: r(
    '01',
    'Serialization',
    'required',
    'The following characters in the content field must be escaped as shown, and all other characters must be included verbatim',
  ),
  tagsShape: r('01', 'Events and signatures', 'convention', '"tags": [ [<arbitrary string>...], // ... ]'),

  // ------------------------------------------------------------------ NIP-01 filters
  filterAnd: r(
    '01',
    'Filters',
    'required',
    'All conditions of a filter that are specified must match for an event for it to pass the filter, i.e., multiple conditions are interpreted as `&&` conditions.',
  ),
  filterList: r(
    '01',
    'Filters',
    'required',
    "At least one of the arrays' values must match the relevant field in an event for the condition to be considered a match.",
  ),
  filterTime: r(
    '01',
    'Filters',
    'required',
    '"since": <an integer unix timestamp in seconds. Events must have a created_at >= to this to pass>, "until": <an integer unix timestamp in seconds. Events must have a created_at <= to this to pass>',
  ),
  tagIndex: r(
    '01',
    'Tags',
    'recommended',
    'As a convention, all single-letter (only english alphabet letters: a-z, A-Z) key tags are expected to be indexed by relays',
  ),
  limitNewest: r(
    '01',
    'Filters (limit)',
    'recommended',
    'When `limit: n` is present it is assumed that the events returned in the initial query will be the last `n` events ordered by the `created_at`. Newer events should appear first',
  ),
  limitCount: r('01', 'Filters (limit)', 'recommended', '"limit": <maximum number of events relays SHOULD return in the initial query>'),
  limitOrder: r(
    '01',
    'Filters (limit)',
    'recommended',
    'Newer events should appear first, and in the case of ties the event with the lowest id (first in lexical order) should be first.',
  ),
  limitLive: r(
    '01',
    'Filters (limit)',
    'required',
    'The `limit` property of a filter is only valid for the initial query and MUST be ignored afterwards.',
  ),

  // ------------------------------------------------------------------ NIP-01 kinds
  regularStored: r('01', 'Kinds', 'recommended', "events are **regular**, which means they're all expected to be stored by relays."),
  replaceableStored: r(
    '01',
    'Kinds (replaceable)',
    'required',
    'events are **replaceable**, which means that, for each combination of `pubkey` and `kind`, only the latest event MUST be stored by relays, older versions MAY be discarded.',
  ),
  addressableStored: r(
    '01',
    'Kinds (addressable)',
    'required',
    'for each combination of `kind`, `pubkey` and the `d` tag value, only the latest event MUST be stored by relays, older versions MAY be discarded.',
  ),
  replaceableServed: r(
    '01',
    'Kinds (replaceable)',
    'recommended',
    'When answering to `REQ` messages for replaceable events such as `{"kinds":[0],"authors":[<hex-key>]}`, even if the relay has more than one version stored, it SHOULD return just the latest one.',
  ),
  ephemeral: r(
    '01',
    'Kinds (ephemeral)',
    'recommended',
    'events are **ephemeral**, which means they are not expected to be stored by relays.',
  ),

  // ------------------------------------------------------------------ NIP-09
  deletion: r(
    '09',
    undefined,
    'recommended',
    'Relays SHOULD delete or stop publishing any referenced events that have an identical `pubkey` as the deletion request.',
    true,
  ),
  deletionKept: r(
    '09',
    undefined,
    'recommended',
    "Relays SHOULD continue to publish/share the deletion request events indefinitely, as clients may already have the event that's intended to be deleted.",
    true,
  ),
  deletionA: r(
    '09',
    'a tags',
    'recommended',
    'When an `a` tag is used, relays SHOULD delete all versions of the replaceable event up to the `created_at` timestamp of the deletion request event.',
    true,
  ),

  // ------------------------------------------------------------------ NIP-11 limitation (the relay's own claims)
  maxSubscriptions: r(
    '11',
    'limitation.max_subscriptions',
    'convention',
    '`max_subscriptions`: total number of subscriptions that may be active on a single websocket connection to this relay.',
  ),
  maxSubidLength: r(
    '11',
    'limitation.max_subid_length',
    'convention',
    '`max_subid_length`: maximum length of subscription id as a string.',
  ),
  maxLimit: r(
    '11',
    'limitation.max_limit',
    'convention',
    "`max_limit`: the relay server will clamp each filter's `limit` value to this number.",
  ),
  maxContentLength: r(
    '11',
    'limitation.max_content_length',
    'convention',
    '`max_content_length`: maximum number of characters in the `content` field of any event.',
  ),
  maxMessageLength: r(
    '11',
    'limitation.max_message_length',
    'convention',
    '`max_message_length`: this is the maximum number of bytes for incoming JSON that the relay will attempt to decode and act upon.',
  ),
  maxEventTags: r(
    '11',
    'limitation.max_event_tags',
    'convention',
    '`max_event_tags`: in any event, this is the maximum number of elements in the `tags` list.',
  ),
  createdAtLimits: r(
    '11',
    'limitation.created_at_lower_limit / created_at_upper_limit',
    'convention',
    'Your client should expect that requests which exceed these *practical* limitations are rejected or fail immediately.',
  ),
  minPow: r(
    '13',
    'limitation.min_pow_difficulty',
    'convention',
    '`min_pow_difficulty`: new events will require at least this difficulty of PoW, based on [NIP-13](13.md), or they will be rejected by this server.',
  ),
  authWrites: r(
    '11',
    'limitation.auth_required / restricted_writes',
    'convention',
    '`auth_required`: this relay requires [NIP-42](42.md) authentication to happen before a new connection may perform any other action.',
  ),

  // ------------------------------------------------------------------ optional NIPs
  expiration: r('40', 'Relay Behavior', 'recommended', 'Relays SHOULD NOT send expired events to clients, even if they are stored.', true),
  auth: r(
    '42',
    'Definitions',
    'required',
    'This NIP defines a new message, `AUTH`, which relays can send when they support authentication and clients can send to relays when they want to authenticate.',
    true,
  ),
  authOk: r(
    '42',
    'Definitions',
    'recommended',
    '`AUTH` messages sent by clients should be answered with an `OK` message, like any `EVENT` message.',
    true,
  ),
  authVerify: r(
    '42',
    'Signed Event Verification',
    'required',
    'To verify `AUTH` messages, relays must ensure: that the `kind` is `22242`; that the event `created_at` is close (e.g. within ~10 minutes) of the current time; that the `"challenge"` tag matches the challenge sent before; that the `"relay"` tag matches the relay URL',
    true,
  ),
  count: r(
    '45',
    undefined,
    'required',
    "This NIP defines the verb `COUNT`, which accepts a subscription id and filters as specified in [NIP 01](01.md) for the verb `REQ`. Multiple filters are OR'd together and aggregated into a single count result.",
    true,
  ),
  countRefusal: r(
    '45',
    undefined,
    'required',
    'Whenever the relay decides to refuse to fulfill the `COUNT` request, it MUST return a `CLOSED` message.',
    true,
  ),
  hll: r(
    '45',
    'HyperLogLog',
    'recommended',
    'This section describes the steps a relay should take in order to return HLL values to clients.',
    true,
  ),
  negentropy: r(
    '77',
    'High-Level Protocol Description',
    'required',
    '(3) Relay selects the set of events that it has locally that match the filter (or uses a cache). (4) Relay constructs a response and returns it to the client in a `NEG-MSG` message.',
    true,
  ),
  negentropyError: r(
    '77',
    'Nostr Messages',
    'recommended',
    'Error reasons are the same format as in NIP-01. They should begin with a machine-readable single-word prefix, followed by a `:` and then a human-readable message with more information.',
    true,
  ),
  protectedDefault: r(
    '70',
    undefined,
    'required',
    'The default behavior of a relay MUST be to reject any event that contains `["-"]`.',
    true,
  ),
  protectedAuthor: r(
    '70',
    undefined,
    'required',
    'Relays that want to accept such events MUST first require that the client perform the [NIP-42](42.md) `AUTH` flow and then check if the authenticated client has the same pubkey as the event being published and only accept the event in that case.',
    true,
  ),
} satisfies Record<string, Rule>;

export type RuleName = keyof typeof RULES;
