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
