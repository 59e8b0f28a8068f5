import { connect, credsAuthenticator, type NatsConnection } from '@nats-io/transport-node';
import { readFileSync } from 'node:fs';

export type { NatsConnection };

export async function connectNats(url: string, name: string, credsFile = ''): Promise<NatsConnection> {
  const servers = url.split(',').map((s) => s.trim()).filter(Boolean);
  return connect({
    servers,
    name,
    maxReconnectAttempts: -1,
    reconnectTimeWait: 500,
    ...(credsFile ? { authenticator: credsAuthenticator(readFileSync(credsFile)) } : {}),
  });
}

/**
 * `expires` of a long-running `consume()`: its pull requests last this long and the server sends
 * an idle heartbeat every half of it. The client notices a pull lost with a consumer leader that
 * died (a NATS node killed) only after two missed heartbeats, and pulls again; with the default
 * 30 s that took 30 s per consumer, so a job crossing two consumers could wait a minute after a
 * node loss. 5 s bounds it to about 5 s, for one small pull request per consumer every 5 s.
 */
export const CONSUME_EXPIRES_MS = 5000;
