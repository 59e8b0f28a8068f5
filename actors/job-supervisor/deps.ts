// What every supervisor step works with: the connection, the buckets and stores, the config and the
// hooks the supervisor's index wires in.
import type { JetStreamClient, JetStreamManager } from '@nats-io/jetstream';
import type { KV } from '@nats-io/kv';
import type { Objm } from '@nats-io/obj';
import type { NatsConnection } from '@nats-io/nats-core';
import type { Config } from '../../shared/config/index.ts';
import type { Logger } from '../../shared/log.ts';
import type { JobRecord } from '../../shared/protocol/jobs.ts';
import type { StoredJob } from '../../shared/jobs/store.ts';

export interface Deps {
  nc: NatsConnection;
  js: JetStreamClient;
  jsm: JetStreamManager;
  config: Config;
  log: Logger;
  jobs: KV;
  datasets: KV;
  objm: Objm;
  /** The job as the supervisor's projection last saw it, with its revision: a guess that spares a read. */
  copyOf?: (jobId: string) => StoredJob | null;
  /** Sends finished jobs' webhooks (actors/job-supervisor/webhooks.ts); absent in tests of the steps alone. */
  webhooks?: { send(jobId: string): void };
  /** The event and webhook of a job just finished (set below; pages.ts finishes page sets through it). */
  afterFinish?: (job: JobRecord) => Promise<void>;
}
