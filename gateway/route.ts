// A route is a small declarative unit: method, path, auth, schemas, handler. The server validates
// with the same schemas the OpenAPI document is generated from, so the docs cannot drift.
import type { TSchema } from '@sinclair/typebox';
import type { ErrorObject } from 'ajv';
import type { NatsConnection } from '@nats-io/nats-core';
import type { KV } from '@nats-io/kv';
import type { JetStreamClient } from '@nats-io/jetstream';
import type { Config } from '../shared/config/index.ts';
import type { Logger } from '../shared/log.ts';
import type { ErrorCode } from '../shared/errors.ts';
import type { Metrics } from './metrics.ts';

/** The API's major version, in /v1 and /openapi.json. */
export const API_VERSION = '1';

export type Method = 'GET' | 'POST' | 'DELETE';

/** `jobs`: job creations per key, shared by all gateways; `key` / `address`: requests per minute per key / client address; `none`: unlimited (probes). */
export type RateLimit = 'none' | 'key' | 'address' | 'jobs';

export interface RouteRequest {
  method: Method;
  path: string;
  params: Record<string, string>;
  /** Validated and coerced against the route's query schema. */
  // biome-ignore lint/suspicious/noExplicitAny: validated against the route's query schema before the handler runs
  query: Record<string, any>;
  /** Parsed JSON, validated against the route's body schema. */
  // biome-ignore lint/suspicious/noExplicitAny: validated against the route's body schema before the handler runs
  body: any;
  headers: Record<string, string>;
  requestId: string;
  /** The client address (gateway/pipeline/address.ts: X-Forwarded-For only from trusted proxies). */
  ip: string;
  /** What per-address limits count by: `ip` for IPv4, its /64 (server.ipv6PrefixLength) for IPv6. */
  addressGroup: string;
  /**
   * The request came through a proxy: a forwarding header is present (X-Forwarded-For, Forwarded,
   * X-Real-IP, ...) or the TCP peer is in `server.trustedProxies` (gateway/dev-guard.ts).
   */
  throughProxy?: boolean;
  /** Set on routes with auth: true. */
  auth?: { walletId: string; keyHash: string };
  /** Aborted when the client goes away. */
  signal: AbortSignal;
  /**
   * Routes with `rateLimit: 'jobs'`: the shared job limit's decision (a write to the `limits`
   * bucket), still in flight when the handler starts, so that the handler's own reads go beside it.
   * The handler awaits it before anything with an effect (an outbound connection, a charge); the
   * server awaits it too, and a refusal is the answer whatever the handler answered.
   */
  limited?: Promise<void>;
}

export type Reply =
  | { status?: number; json: unknown; headers?: Record<string, string> }
  | { status?: number; body: string | Uint8Array; headers: Record<string, string> }
  | { status?: number; stream: AsyncIterable<Uint8Array>; length?: number; headers: Record<string, string> };

export interface GatewayContext {
  nc: NatsConnection;
  js: JetStreamClient;
  config: Config;
  log: Logger;
  baseUrl: string;
  accountUrl: string;
  docsUrl: string;
  kv: { keys: KV; jobs: KV; catalogue: KV; limits: KV; datasets: KV; topups: KV };
}

/** Watches what a fixed answer is built from; calls `changed` when it changed; returns the stop function. */
export type AnswerInputs = (ctx: GatewayContext, changed: () => void) => () => void;

/** What route modules that build their routes at start (ops) are given. */
export interface RouteDeps {
  metrics: Metrics;
  isReady: () => boolean;
}

export interface ResponseDoc {
  description: string;
  schema?: TSchema;
  /** Default application/json. */
  contentType?: string;
  headers?: Record<string, string>;
}

export interface Route {
  method: Method;
  /** `/v1/jobs/:id/results/:key` */
  path: string;
  auth: boolean;
  summary: string;
  description?: string;
  tags: string[];
  body?: TSchema;
  /** Maps a body schema violation to the spec's code (default bad_request). */
  bodyErrorCode?: (err: ErrorObject) => ErrorCode;
  query?: TSchema;
  /** Request headers the route reads, documented as header parameters. */
  requestHeaders?: Record<string, string>;
  responses: Record<number, ResponseDoc>;
  /** Error codes this route can answer with (401 is added for auth routes). */
  errors: ErrorCode[];
  /** Which limit a request takes a token from (gateway/pipeline/limit.ts); default `key` with auth, `address` without. */
  rateLimit?: RateLimit;
  /**
   * The answer is the same for every caller: the gateway builds its bytes and headers by running the
   * handler with no caller, and a GET then only limits, adds the request id and writes them
   * (gateway/pipeline/fixed.ts). The handler must not read the request. `true`: it follows from
   * config alone (index, price list), built once at start. `{follows}`: it follows state that
   * changes (the live catalogue); `follows` calls `changed` when it did and the answer is rebuilt,
   * GETs meanwhile getting the previous one (the route's description says how late it may be).
   */
  fixedAnswer?: true | { follows: AnswerInputs };
  /** Not in /openapi.json (HTML pages, metrics). */
  hidden?: boolean;
  handler(req: RouteRequest, ctx: GatewayContext): Promise<Reply>;
}
