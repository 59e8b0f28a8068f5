import type { NatsConnection } from '@nats-io/nats-core';
import type { Config } from '../shared/config/index.ts';
import type { Logger } from '../shared/log.ts';

export interface AdminContext {
  nc: NatsConnection;
  config: Config;
  log: Logger;
  out: (line: string) => void;
}

/** One operator subcommand: `npm run admin -- <name words> [args]`. */
export interface AdminCommand {
  name: string; // e.g. 'key create'
  usage: string;
  run(args: string[], ctx: AdminContext): Promise<number>;
}
