// What the admin CLI knows about the NATS servers behind NATS_URL: which answer, and whether
// JetStream has a quorum. A command that NATS does not answer fails with this diagnosis instead
// of a bare `timeout`: with a majority of nodes down nothing can be read or written, and the
// operator should read that, not wait.
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { jetstreamManager } from '@nats-io/jetstream';
import { credsAuthenticator } from '@nats-io/nats-core';
import { readFileSync } from 'node:fs';
import { isTransientNatsError } from '../shared/nats/transient.ts';
import { ApiError } from '../shared/errors.ts';

export interface ServerProbe {
  /** As configured (`nats://host:port`). */
  url: string;
  up: boolean;
  name?: string;
  version?: string;
  /** Cluster name, when clustered. */
  cluster?: string;
  error?: string;
}

/** The configured server URLs (NATS_URL's comma-separated list), without duplicates. */
export const serverUrls = (url: string) => [
  ...new Set(
    url
      .split(',')
      .map((s) => s.trim())
      .filter(Boolean),
  ),
];

/** One short connection to each server alone: up or not, its name and version. */
export async function probeServers(urls: string[], { timeoutMs = 1500, credsFile = '' } = {}): Promise<ServerProbe[]> {
  return Promise.all(
    urls.map(async (url): Promise<ServerProbe> => {
      let nc: NatsConnection | undefined;
      try {
        nc = await connect({
          servers: [url],
          name: 'admin-probe',
          timeout: timeoutMs,
          reconnect: false,
          maxReconnectAttempts: 0,
          noRandomize: true,
          ignoreClusterUpdates: true,
          ...(credsFile ? { authenticator: credsAuthenticator(readFileSync(credsFile)) } : {}),
        });
        const info = nc.info!;
        return { url, up: true, name: info.server_name, version: info.version, ...(info.cluster ? { cluster: info.cluster } : {}) };
      } catch (e) {
        return { url, up: false, error: (e as Error).message };
      } finally {
        await nc?.close().catch(() => {});
      }
    }),
  );
}

/** Whether JetStream answers an account-info request within `timeoutMs` (a meta leader exists). */
export async function jetStreamAnswers(nc: NatsConnection, timeoutMs = 2500): Promise<boolean> {
  try {
    const jsm = await jetstreamManager(nc, { timeout: timeoutMs });
    await jsm.getAccountInfo();
    return true;
  } catch {
    return false;
  }
}

/** A failure of NATS as such (not of the request): worth trying again within the command's budget. */
export const isOutage = (e: unknown) => isTransientNatsError(e) || (e instanceof ApiError && e.code === 'service_unavailable');

export class ClusterError extends Error {
  readonly kind: 'no_quorum' | 'no_server' | 'timeout';
  constructor(kind: 'no_quorum' | 'no_server' | 'timeout', message: string) {
    super(`${kind.replace('_', ' ')}: ${message}`);
    this.kind = kind;
  }
}

const list = (ps: ServerProbe[]) =>
  ps.map((p) => (p.name ? `${p.name} (${p.url.replace('nats://', '')})` : p.url.replace('nats://', ''))).join(', ') || 'none';

/**
 * Why NATS did not answer `what`: no server up, fewer than a majority of the configured servers
 * up, or JetStream without a leader are "no quorum"; otherwise a timeout naming what did not answer.
 */
export async function diagnose(
  nc: NatsConnection | undefined,
  urls: string[],
  what: string,
  opts: { credsFile?: string; probeMs?: number; jetStreamMs?: number } = {},
): Promise<ClusterError> {
  const probes = await probeServers(urls, { credsFile: opts.credsFile ?? '', ...(opts.probeMs ? { timeoutMs: opts.probeMs } : {}) });
  const up = probes.filter((p) => p.up);
  const down = probes.filter((p) => !p.up);
  const servers = `servers answering: ${list(up)}; not answering: ${list(down)}`;
  if (!up.length) return new ClusterError('no_server', `no NATS server answers (${urls.join(', ')})`);
  const minority = urls.length >= 3 && up.length <= urls.length / 2;
  if (minority || (nc && !nc.isClosed() && !(await jetStreamAnswers(nc, opts.jetStreamMs)))) {
    return new ClusterError(
      'no_quorum',
      `the NATS cluster has no quorum: JetStream cannot elect a leader, so nothing can be read or written until a majority of its servers is back (${servers})`,
    );
  }
  return new ClusterError('timeout', `${what} did not answer in time, though JetStream has a quorum (${servers})`);
}

/** Fewer than a majority of the configured servers up: known without waiting for any timeout. */
export async function knownWithoutQuorum(urls: string[], opts: { credsFile?: string } = {}): Promise<boolean> {
  if (urls.length < 3) return false;
  const up = (await probeServers(urls, opts)).filter((p) => p.up).length;
  return up <= urls.length / 2;
}
