// The one screen an operator reads first (`npm run admin -- status`): NATS servers, streams and
// buckets with their replicas, consumers with their backlog, live instances, unfinished jobs, and
// the audit's verdict. Every read goes to a stream leader or a service, so it answers with a node
// down. The NATS CLI stays the deep tool (docs/operations.md); this is the summary it lacks.
import { jetstreamManager, type StreamInfo, type ConsumerInfo } from '@nats-io/jetstream';
import { Svcm } from '@nats-io/services';
import type { NatsConnection } from '@nats-io/nats-core';
import { BUCKETS } from '../shared/names.ts';
import { audit, readBucket } from '../shared/audit.ts';
import { isLive, type CatalogueEntry } from '../shared/catalogue.ts';
import { jobsService } from '../shared/protocol/job-supervisor.ts';
import { jobDocumentInBucketMs } from '../shared/jobs/retention.ts';
import type { Config } from '../shared/config/index.ts';

/** The audit's share of the status's 12 s budget: past it the screen says how far the audit got. */
const STATUS_AUDIT_MS = 8000;
import { probeServers, type ServerProbe } from './cluster.ts';

export interface ServerStatus extends ServerProbe {
  /** Streams (buckets and stores included) and consumers whose leader this server is. */
  streamLeaders: number;
  consumerLeaders: number;
}

export interface StreamStatus {
  name: string;
  kind: 'stream' | 'bucket' | 'store';
  messages: number;
  bytes: number;
  replicas: number;
  leader: string | null;
  /** Replicas (other than the leader) that are current; lagging and offline ones by name. */
  current: number;
  lagging: { name: string; lag: number; offline: boolean }[];
}

export interface ConsumerStatus {
  stream: string;
  name: string;
  pending: number;
  ackPending: number;
  redelivered: number;
  leader: string | null;
}

export interface Status {
  at: number;
  servers: ServerStatus[];
  streams: StreamStatus[];
  consumers: ConsumerStatus[];
  /** actor → live instance ids, from the catalogue (workers) and the NATS micro services. */
  instances: Record<string, string[]>;
  jobs: { unfinished: number; oldestUnfinishedAgeSeconds: number | null; oldestUnfinishedId: string | null; total: number };
  /** ok: complete and no violation; complete false: the reads ran out of the status's time (progress says how far). */
  audit: { ok: boolean; complete: boolean; progress: string; violations: string[]; wallets: number; entries: number };
  /** Problems worth a look at first, in words. */
  warnings: string[];
}

const kindOf = (name: string): StreamStatus['kind'] => (name.startsWith('KV_') ? 'bucket' : name.startsWith('OBJ_') ? 'store' : 'stream');
const displayName = (name: string) => name.replace(/^KV_|^OBJ_/, '');

/** Micro service name → the actor that serves it (the supervisor's endpoints serve job listing). */
async function microInstances(nc: NatsConnection): Promise<Record<string, string[]>> {
  const out: Record<string, string[]> = {};
  // every instance answers the ping; collect answers for 1 s (the services package has its own nats-core types)
  try {
    const it = await new Svcm(nc as never).client({ maxWait: 1000, strategy: 'timer' } as never).ping();
    for await (const s of it) (out[s.name] ??= []).push(s.id);
  } catch (e) {
    // nobody answers the ping: no service instance runs, which is what the screen should say
    if ((e as Error).name !== 'NoResponders' && !/no responders/i.test((e as Error).message)) throw e;
  }
  return out;
}

export async function collectStatus(
  nc: NatsConnection,
  urls: string[],
  { credsFile = '', config, auditDeadline }: { credsFile?: string; config?: Pick<Config, 'retention'>; auditDeadline?: number } = {},
): Promise<Status> {
  const auditBy = Math.min(auditDeadline ?? Infinity, Date.now() + STATUS_AUDIT_MS);
  const jsm = await jetstreamManager(nc);
  const [probes, infos] = await Promise.all([
    probeServers(urls, { credsFile }),
    (async () => {
      const l: StreamInfo[] = [];
      for await (const si of jsm.streams.list()) l.push(si);
      return l;
    })(),
  ]);
  infos.sort((a, b) => a.config.name.localeCompare(b.config.name));
  const streams: StreamStatus[] = infos.map((si) => {
    const replicas = si.cluster?.replicas ?? [];
    return {
      name: displayName(si.config.name),
      kind: kindOf(si.config.name),
      messages: si.state.messages,
      bytes: si.state.bytes,
      // a single server (no cluster) names no leader: it is the leader of everything
      replicas: si.config.num_replicas,
      leader: si.cluster?.leader ?? (!si.cluster?.replicas && probes.length === 1 && probes[0]!.up ? (probes[0]!.name ?? null) : null),
      current: replicas.filter((r) => r.current && !r.offline).length,
      lagging: replicas.filter((r) => !r.current || r.offline).map((r) => ({ name: r.name, lag: r.lag ?? 0, offline: Boolean(r.offline) })),
    };
  });
  const consumerInfos: { stream: string; ci: ConsumerInfo }[] = [];
  for (const si of infos) {
    if (si.config.name.startsWith('KV_') || si.config.name.startsWith('OBJ_')) continue; // their consumers are short-lived watches
    for await (const ci of jsm.consumers.list(si.config.name)) consumerInfos.push({ stream: si.config.name, ci });
  }
  const consumers: ConsumerStatus[] = consumerInfos
    .filter(({ ci }) => ci.config.durable_name)
    .map(({ stream, ci }) => ({
      stream,
      name: ci.name,
      pending: ci.num_pending,
      ackPending: ci.num_ack_pending,
      redelivered: ci.num_redelivered,
      leader: ci.cluster?.leader ?? null,
    }));

  const servers: ServerStatus[] = probes.map((p) => ({
    ...p,
    streamLeaders: infos.filter((si) => p.name && si.cluster?.leader === p.name).length,
    consumerLeaders: consumerInfos.filter(({ ci }) => p.name && ci.cluster?.leader === p.name).length,
  }));
  // Servers known only from the peers' replica lists: not reachable at a listed URL (or not
  // listed). One such name and one listed URL down are the same server; others show apart.
  const peerNames = new Set<string>();
  for (const si of infos) for (const r of si.cluster?.replicas ?? []) if (!servers.some((s) => s.name === r.name)) peerNames.add(r.name);
  const downUnnamed = servers.filter((s) => !s.up && !s.name);
  if (peerNames.size === 1 && downUnnamed.length === 1) downUnnamed[0]!.name = [...peerNames][0]!;
  else
    for (const name of peerNames)
      servers.push({ url: '', up: false, name, error: 'not reachable at a listed URL', streamLeaders: 0, consumerLeaders: 0 });

  const [catalogue, micro, jobs, report] = await Promise.all([
    readBucket<CatalogueEntry>(nc, BUCKETS.catalogue),
    microInstances(nc),
    // counts from the supervisor's projection (index reads), not a read of every job document
    jobsService.stats(nc, {}).catch(() => null),
    audit(nc, { deadline: auditBy, ...(config ? { keptMs: jobDocumentInBucketMs(config) } : {}) }),
  ]);
  const instances: Record<string, string[]> = {};
  const now = Date.now();
  for (const e of catalogue.values()) if (e && isLive(e, now)) (instances[`${e.service} workers`] ??= []).push(e.instanceId);
  for (const [name, ids] of Object.entries(micro)) instances[name] = ids.sort();
  const oldest = jobs?.oldestUnfinished ?? null;

  const warnings: string[] = [];
  for (const s of servers) if (!s.up) warnings.push(`NATS server ${s.name ?? s.url} is down`);
  for (const s of streams) {
    if (!s.leader) warnings.push(`${s.kind} ${s.name} has no leader`);
    for (const r of s.lagging)
      warnings.push(`${s.kind} ${s.name}: replica on ${r.name} is ${r.offline ? 'offline' : `lagging by ${r.lag} operations`}`);
  }
  if (!jobs) warnings.push('no job-supervisor answered: job counts unknown');
  else if (!jobs.projection.complete)
    warnings.push(`the job-supervisor's projection is being rebuilt (${jobs.projection.reason ?? 'not complete'}): job counts are partial`);
  if (!report.complete)
    warnings.push(`the audit did not finish within the status's budget (${report.progress}): npm run admin -- audit --all`);
  if (report.violations.length) warnings.push(`the audit found ${report.violations.length} violation(s): npm run admin -- audit`);
  return {
    at: now,
    servers,
    streams,
    consumers,
    instances,
    jobs: {
      unfinished: jobs?.unfinished ?? 0,
      oldestUnfinishedAgeSeconds: oldest ? Math.round((now - oldest.createdAt) / 1000) : null,
      oldestUnfinishedId: oldest?.id ?? null,
      total: jobs?.total ?? 0,
    },
    audit: {
      ok: report.complete && report.violations.length === 0,
      complete: report.complete,
      progress: report.progress,
      violations: report.violations,
      wallets: report.wallets,
      entries: report.entries,
    },
    warnings,
  };
}

const pad = (s: string | number, n: number) => String(s).padEnd(n);

/** The screen: plain text, one section per question an operator asks first. */
export function renderStatus(s: Status): string[] {
  const lines: string[] = [];
  lines.push(`Payloads status at ${new Date(s.at).toISOString()}`);
  lines.push('', 'NATS servers');
  for (const v of s.servers) {
    lines.push(
      `  ${pad(v.name ?? '?', 18)} ${pad(v.up ? 'up' : 'down', 5)} ${pad(v.version ?? '', 8)} ${pad(v.url.replace('nats://', ''), 22)} leader of ${v.streamLeaders} streams/buckets, ${v.consumerLeaders} consumers`,
    );
  }
  lines.push('', 'Streams, buckets and stores (replicas current)');
  for (const st of s.streams) {
    const rep =
      st.replicas > 1
        ? `${st.current + (st.leader ? 1 : 0)}/${st.replicas} current${st.lagging.length ? ` (${st.lagging.map((r) => `${r.name} ${r.offline ? 'offline' : `lag ${r.lag}`}`).join(', ')})` : ''}`
        : '1 replica';
    lines.push(`  ${pad(st.kind, 6)} ${pad(st.name, 12)} ${pad(st.messages + ' msgs', 14)} leader ${pad(st.leader ?? 'NONE', 18)} ${rep}`);
  }
  lines.push('', 'Consumers (pending / waiting for ack / redelivered)');
  for (const c of s.consumers) lines.push(`  ${pad(c.stream, 10)} ${pad(c.name, 34)} ${c.pending} / ${c.ackPending} / ${c.redelivered}`);
  lines.push('', 'Live instances');
  for (const [name, ids] of Object.entries(s.instances).sort()) lines.push(`  ${pad(name, 20)} ${ids.length}  ${ids.join(', ')}`);
  if (!Object.keys(s.instances).length) lines.push('  none');
  lines.push(
    '',
    `Jobs: ${s.jobs.total} stored, ${s.jobs.unfinished} unfinished${s.jobs.oldestUnfinishedId ? `, oldest ${s.jobs.oldestUnfinishedId} is ${s.jobs.oldestUnfinishedAgeSeconds} s old` : ''}`,
  );
  lines.push(
    !s.audit.complete
      ? `Audit: not finished in time (${s.audit.progress}); npm run admin -- audit --all`
      : `Audit: ${s.audit.ok ? 'ok: no violation' : `${s.audit.violations.length} violation(s)`} (${s.audit.wallets} wallets, ${s.audit.entries} ledger entries)`,
  );
  lines.push('', s.warnings.length ? 'Look at first:' : 'Nothing needs a look.');
  for (const w of s.warnings) lines.push(`  - ${w}`);
  return lines;
}
