import { connect, credsAuthenticator, type NatsConnection, type Server } from '@nats-io/transport-node';
import { readFileSync } from 'node:fs';

export type { NatsConnection };

/** What a connection says about itself: its moves between servers (issue 45: which server, when). */
type ConnLog = { info(o: object, m: string): void; warn(o: object, m: string): void };

/**
 * Servers a connection left because they had no quorum: not dialled again for this long while
 * another exists. Short: a server that failed during an earlier election must not keep the
 * connection on a cut-off one now (issue 45, runs 4 and 5: with 30 s a connection stayed 28 s on a
 * cut-off node). During a cluster-wide election it moves every 4-6 s at most.
 */
const AVOID_MS = 5_000;

export async function connectNats(url: string, name: string, credsFile = '', log?: ConnLog): Promise<NatsConnection> {
  const servers = url
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);
  const avoid = new Map<string, number>();
  const nc = await connect({
    servers,
    name,
    maxReconnectAttempts: -1,
    reconnectTimeWait: 500,
    // A server that does not answer a dial (a dead host) costs 2 s, not the default 20 s, and a
    // connection whose server went silent is noticed after 2 pings 5 s apart, not 2 x 2 min.
    timeout: 2000,
    pingInterval: 5000,
    maxPingOut: 2,
    // nats.js's own choice after a forced reconnect is the server being left (Servers.selectServer
    // returns the current one first): the first server of the pool not left for lack of quorum
    // within AVOID_MS is dialled instead (issue 45: it took a second round of misses, ~20 s)
    reconnectToServer: (pool: ReadonlyArray<Server>) => {
      const now = Date.now();
      for (const [k, at] of avoid) if (now - at > AVOID_MS) avoid.delete(k);
      return pool.find((s) => !avoid.has(s.listen)) ?? null;
    },
    // nats.js otherwise builds an Error (a captured stack) for every request and its timeout before
    // it is sent, in case it fails: 10-15% of the gateway's time under load (profile of
    // GET /v1/balance), on every request of every actor. A failed request still says what failed
    // (subject, timeout, no responders); only the caller's stack is left out.
    noAsyncTraces: true,
    ...(credsFile ? { authenticator: credsAuthenticator(readFileSync(credsFile)) } : {}),
  });
  if (log) watchStatus(nc, name, log);
  const listens = servers.map((s) => s.replace(/^nats:\/\//, ''));
  if (servers.length > 1)
    leaveServerWithoutQuorum(nc, (server) => {
      const now = Date.now();
      avoid.set(server, now);
      for (const [k, at] of avoid) if (now - at > AVOID_MS) avoid.delete(k);
      // every server failed the check within AVOID_MS: the whole cluster is electing its meta
      // leader (after a heal), and moving would only drop this connection's requests and pulls
      // every 2 s (issue 45, run 3): stay
      if (listens.every((l) => avoid.has(l))) {
        log?.warn({ connection: name, server }, 'NATS: no server has a JetStream quorum (an election); staying');
        return false;
      }
      log?.warn({ connection: name, server }, 'NATS: this server has no JetStream quorum; moving to another');
      return true;
    });
  return nc;
}

/** Logs every move of the connection between servers (which server, when). */
function watchStatus(nc: NatsConnection, name: string, log: ConnLog) {
  void (async () => {
    for await (const s of nc.status()) {
      if (s.type === 'disconnect' || s.type === 'reconnect' || s.type === 'forceReconnect' || s.type === 'staleConnection')
        log.info({ connection: name, status: s.type, server: (s as { server?: string }).server ?? nc.getServer() }, `NATS ${s.type}`);
    }
  })().catch(() => {});
}

/** How often a connection asks its server whether JetStream answers, and how many misses move it. */
export const QUORUM_CHECK_MS = 1000;
const QUORUM_MISSES = 2;
/** How long one check waits for the meta leader's answer. */
const QUORUM_TIMEOUT_MS = 1000;

/**
 * A server cut off from the cluster's majority by a network partition keeps its client connections
 * healthy, so the client never moves, while every JetStream request through it fails for as long
 * as the partition lasts (partition.test.ts: job creation failed for the whole 30 s 2/1 split and
 * 27 s after it healed). Every QUORUM_CHECK_MS the connection asks JetStream for the stream names
 * (only the meta leader answers them) and for two streams' info (their leader must have heard from a
 * majority of its replicas: a cut-off meta leader answers stream names for as long as the partition
 * lasts); after QUORUM_MISSES misses in a row it reconnects, to the first server of its list it did
 * not leave so within AVOID_MS. When every server failed within AVOID_MS (the whole cluster electing
 * its meta leader), it stays. Issue 45: checked every 5 s on stream names only, and nats.js
 * redialling the server being left on a process's first forced reconnect, a client stayed ~20 s
 * (or the whole fault) on a cut-off node.
 */
function leaveServerWithoutQuorum(nc: NatsConnection, leave: (server: string) => boolean) {
  let misses = 0;
  let asking = false;
  const timer = setInterval(() => {
    if (asking || nc.isClosed() || nc.isDraining()) return;
    asking = true;
    // stream names: answered by the meta leader only (account info is answered by any server,
    // a cut-off one included, so it says nothing about quorum). A cut-off meta leader answers them
    // too, from its own state, for as long as the partition lasts (issue 45, run 3: 20 s): the
    // replicas of a stream must also have been heard from (streamHeard)
    nc.request('$JS.API.STREAM.NAMES', '{"offset":0}', { timeout: QUORUM_TIMEOUT_MS })
      .then(
        async (m) => {
          const body = m.json<{ error?: { code: number; err_code?: number }; streams?: string[] | null }>();
          // JetStream not enabled for this account: nothing to watch
          if (body.error?.err_code === 10039) clearInterval(timer);
          if (body.error) return false;
          const names = [...(body.streams ?? [])].sort().slice(0, 2);
          if (!names.length) return true;
          // either of two streams answering with its replicas heard from: one stream electing its
          // leader (4-15 s) does not move every connection
          for (const name of names) if (await streamHeard(nc, name)) return true;
          return false;
        },
        () => false,
      )
      .then((answered) => {
        asking = false;
        misses = answered ? 0 : misses + 1;
        if (misses >= QUORUM_MISSES && !nc.isClosed() && !nc.isDraining()) {
          misses = 0;
          if (!leave(nc.getServer())) return;
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

/** A replica not heard from by its stream's leader for this long counts as gone. */
const REPLICA_SILENT_NS = 4e9;

/**
 * Whether `stream`'s leader answers through this connection's server and has heard from a majority
 * of its replicas lately. From a server cut off from the majority: no answer (the leader is on the
 * other side), or a leader that is cut off itself and has not heard from its followers.
 */
async function streamHeard(nc: NatsConnection, stream: string): Promise<boolean> {
  try {
    const m = await nc.request(`$JS.API.STREAM.INFO.${stream}`, '', { timeout: QUORUM_TIMEOUT_MS });
    const info = m.json<{ error?: unknown; cluster?: { replicas?: { active?: number; offline?: boolean }[] } }>();
    if (info.error) return false;
    const replicas = info.cluster?.replicas ?? [];
    const heard = replicas.filter((r) => !r.offline && (r.active ?? Infinity) < REPLICA_SILENT_NS).length;
    return heard + 1 >= Math.floor((replicas.length + 1) / 2) + 1;
  } catch {
    return false;
  }
}

/**
 * `expires` of a long-running `consume()`: its pull requests last this long and the server sends
 * an idle heartbeat every half of it. The client notices a pull lost with a consumer leader that
 * died (a NATS node killed) only after two missed heartbeats, and pulls again; with the default
 * 30 s that took 30 s per consumer, so a job crossing two consumers could wait a minute after a
 * node loss. 5 s bounds it to about 5 s, for one small pull request per consumer every 5 s.
 */
export const CONSUME_EXPIRES_MS = 5000;
