import type { NatsConnection } from '@nats-io/nats-core';
import type { Config } from '../shared/config/index.ts';
import type { Logger } from '../shared/log.ts';

export interface AdminContext {
  nc: NatsConnection;
  config: Config;
  log: Logger;
  out: (line: string) => void;
  /**
   * Run a NATS step, tried again on an outage (a failover after a node loss: no responders,
   * "temporarily unavailable", a timeout) until the command's budget runs out. The step must be
   * safe to repeat: a write carries an id fixed before the first try.
   */
  retry<T>(what: string, f: () => Promise<T>): Promise<T>;
  /**
   * When the command must have answered (epoch ms; a watch's refresh moves it): reads that may be
   * long (the audit's) stop well before it and say how far they got.
   */
  deadline(): number;
}

/** One operator subcommand: `npm run admin -- <name words> [args]`. */
export interface AdminCommand {
  name: string; // e.g. 'key create'
  usage: string;
  run(args: string[], ctx: AdminContext): Promise<number>;
  /** Runs until stopped (`status --watch`): no overall time budget, each step still bounded. */
  watches?(args: string[]): boolean;
}
