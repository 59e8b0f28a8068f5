// The contract every actor implements: one entry point that takes a NATS connection and config
// and returns a handle to stop it. The launcher (main.ts) runs one actor per process or all of them together.
import type { NatsConnection } from '@nats-io/nats-core';
import type { Config } from './config/index.ts';
import type { Logger } from './log.ts';

export interface ActorContext {
  nc: NatsConnection;
  config: Config;
  log: Logger;
  /** Unique per running instance (host, pid, random). */
  instanceId: string;
}

export interface ActorHandle {
  stop(): Promise<void>;
}

export type ActorStart = (ctx: ActorContext) => Promise<ActorHandle>;

export const ACTOR_NAMES = ['wallet', 'job-supervisor', 'converter', 'browser-pool', 'relay-prober'] as const;
export type ActorName = (typeof ACTOR_NAMES)[number];
