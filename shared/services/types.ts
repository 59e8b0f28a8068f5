// A service module turns a validated request body into priced result items and the task each one
// becomes. The gateway's quote and job creation and the supervisor's fan-out are generic over it.
import type { TSchema } from '@sinclair/typebox';
import type { ErrorObject } from 'ajv';
import type { NatsConnection } from '@nats-io/nats-core';
import type { KV } from '@nats-io/kv';
import type { Config } from '../config/index.ts';
import type { ServiceName } from '../names.ts';
import type { ErrorCode } from '../errors.ts';
import type { PageSetRecord } from '../protocol/jobs.ts';
import type { MarkStaleness } from './dataset.ts';

export interface PlanItem {
  key: string;
  price: number;
  oneTime?: boolean;
  /** labs: this result uses the test dataset; the one-time dataset fee is kept only if one such result is delivered. */
  needsDataset?: boolean;
  /** Absent for results that need no work (the labs dataset fee): done at once. */
  /**
   * `secret`: params that ride in the task message only and are never written to the job document
   * (websitepro's request headers and cookies). A task published again from the stored job (the
   * supervisor's dispatch of a job left queued) has none, and its worker fails it (refunded).
   */
  task?: { subject: string; params: Record<string, unknown>; secret?: Record<string, unknown> };
  /** Keys of the items this one is made from: its task waits until they are done (shots compare). */
  after?: string[];
  /** A page set's item is one output for many pages: `price` = `quantity` x `unitPrice`. */
  quantity?: number;
  unitPrice?: number;
}

export interface Plan {
  /** Host name of the target. */
  target: string;
  items: PlanItem[];
  /**
   * A page-set job (websitepro `urls`): its items are priced but are not its results (those are made
   * page by page, shared/jobs/pages.ts); the job starts with this record. The precheck may add the
   * hosts it found unreachable.
   */
  pageSet?: PageSetRecord;
}

export interface PlanContext {
  config: Config;
  nc: NatsConnection;
  walletId: string;
  catalogueKv: KV;
  datasetsKv: KV;
  /** Lets the plan tell an abandoned dataset mark from a held one (shared/services/dataset.ts); without it a held mark is held. */
  datasetStale?: MarkStaleness;
}

// biome-ignore lint/suspicious/noExplicitAny: the registry holds modules of every body type; each module's plan gets its own validated body
export interface ServiceModule<B = any> {
  name: ServiceName;
  title: string;
  description: string;
  /** Request body of quote and job creation. */
  body: TSchema;
  /** Which spec code a schema violation maps to (default bad_request). */
  errorCode(err: ErrorObject): ErrorCode;
  /** Semantic checks and pricing; no contact with the target. Throws ApiError. */
  plan(body: B, ctx: PlanContext): Promise<Plan>;
  /** Checks that contact the network or shared counters before any charge (blocked_address, unreachable, relay_busy). */
  precheck?(body: B, plan: Plan, ctx: PlanContext): Promise<void>;
  /** Retention of the job's results, seconds. */
  retentionSeconds(config: Config): number;
  /** Object store for the result files. */
  store: string;
}
