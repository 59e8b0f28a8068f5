// One JetStream client per connection, made on first use: a client is only a view of its connection,
// so every module that publishes on a connection shares it.
import { jetstream, type JetStreamClient } from '@nats-io/jetstream';
import type { NatsConnection } from '@nats-io/nats-core';

const clients = new WeakMap<NatsConnection, JetStreamClient>();

export function jetstreamOf(nc: NatsConnection): JetStreamClient {
  let js = clients.get(nc);
  if (!js) clients.set(nc, (js = jetstream(nc)));
  return js;
}
