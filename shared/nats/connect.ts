import { connect, credsAuthenticator, type NatsConnection } from '@nats-io/transport-node';
import { readFileSync } from 'node:fs';

export type { NatsConnection };

export async function connectNats(url: string, name: string, credsFile = ''): Promise<NatsConnection> {
  const servers = url
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);
  const nc = await connect({
    servers,
    name,
    maxReconnectAttempts: -1,
    reconnectTimeWait: 500,
    // nats.js otherwise builds an Error (a captured stack) for every request and its timeout before
    // it is sent, in case it fails: 10-15% of the gateway's time under load (profile of
    // GET /v1/balance), on every request of every actor. A failed request still says what failed
    // (subject, timeout, no responders); only the caller's stack is left out.
    noAsyncTraces: true,
    ...(credsFile ? { authenticator: credsAuthenticator(readFileSync(credsFile)) } : {}),
  });
  if (servers.length > 1) leaveServerWithoutQuorum(nc);
  return nc;
}

/** How often a connection asks its server whether JetStream answers, and how many misses move it. */
export const QUORUM_CHECK_MS = 5000;
const QUORUM_MISSES = 2;

/**
 * A server cut off from the cluster's majority by a network partition keeps its client connections
 * healthy, so the client never moves, while every JetStream request through it fails for as long
 * as the partition lasts (partition.test.ts: job creation failed for the whole 30 s 2/1 split and
 * 27 s after it healed). Every QUORUM_CHECK_MS the connection asks JetStream for the stream names
 * (only the meta leader answers them); after QUORUM_MISSES misses in a row it reconnects, to the next server
 * of its list. A cluster-wide outage only makes it rotate through the servers every ~10 s.
 */
function leaveServerWithoutQuorum(nc: NatsConnection) {
  let misses = 0;
  let asking = false;
  const timer = setInterval(() => {
    if (asking || nc.isClosed() || nc.isDraining()) return;
    asking = true;
    // stream names: answered by the meta leader only (account info is answered by any server,
    // a cut-off one included, so it says nothing about quorum)
    nc.request('$JS.API.STREAM.NAMES', '{"offset":0}', { timeout: 2000 })
      .then(
        (m) => {
          const body = m.json<{ error?: { code: number; err_code?: number } }>();
          // JetStream not enabled for this account: nothing to watch
          if (body.error?.err_code === 10039) clearInterval(timer);
          return !body.error;
        },
        () => false,
      )
      .then((answered) => {
        asking = false;
        misses = answered ? 0 : misses + 1;
        if (misses >= QUORUM_MISSES && !nc.isClosed() && !nc.isDraining()) {
          misses = 0;
          nc.reconnect().catch(() => {
            /* closed meanwhile */
          });
        }
      })
      .catch(() => {
        asking = false;
      });
  }, QUORUM_CHECK_MS);
  timer.unref();
  void nc.closed().then(() => clearInterval(timer));
}

/**
 * `expires` of a long-running `consume()`: its pull requests last this long and the server sends
 * an idle heartbeat every half of it. The client notices a pull lost with a consumer leader that
 * died (a NATS node killed) only after two missed heartbeats, and pulls again; with the default
 * 30 s that took 30 s per consumer, so a job crossing two consumers could wait a minute after a
 * node loss. 5 s bounds it to about 5 s, for one small pull request per consumer every 5 s.
 */
export const CONSUME_EXPIRES_MS = 5000;
