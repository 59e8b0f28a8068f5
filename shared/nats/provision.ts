// Idempotent provisioning of every stream, bucket and object store. Safe to run on every start
// of every process: missing things are created, changed limits (replicas, ages) are updated.
import {
  jetstreamManager,
  RetentionPolicy,
  StorageType,
  DiscardPolicy,
  type JetStreamManager,
  type StreamConfig,
} from '@nats-io/jetstream';
import { Kvm } from '@nats-io/kv';
import { Objm } from '@nats-io/obj';
import { nanos, type NatsConnection } from '@nats-io/nats-core';
import { STREAMS, BUCKETS, OBJECT_STORES, subjects } from '../names.ts';
import type { Config } from '../config/index.ts';

const HOUR = 3600 * 1000;
const DAY = 24 * HOUR;

/** How long a page set's results (PAGES) and a crawl's frontier and visited set are kept at most. */
const pageSetMs = (cfg: Config) => Math.max(cfg.retention.websitepro, cfg.retention.shots, cfg.retention.labs) * 1000 + DAY;

export interface Provisioned {
  streams: string[];
  buckets: string[];
  stores: string[];
}

export function streamConfigs(cfg: Config): Partial<StreamConfig>[] {
  const replicas = cfg.nats.replicas;
  const common = { storage: StorageType.File, num_replicas: replicas };
  return [
    {
      ...common,
      name: STREAMS.jobs,
      subjects: [subjects.jobsAll],
      retention: RetentionPolicy.Workqueue,
      max_age: nanos(7 * DAY),
      duplicate_window: nanos(10 * 60 * 1000),
    },
    {
      ...common,
      name: STREAMS.tasks,
      subjects: [subjects.tasksAll],
      retention: RetentionPolicy.Workqueue,
      max_age: nanos(7 * DAY),
      duplicate_window: nanos(10 * 60 * 1000),
    },
    {
      ...common,
      name: STREAMS.results,
      subjects: [subjects.resultsAll],
      retention: RetentionPolicy.Workqueue,
      max_age: nanos(7 * DAY),
      duplicate_window: nanos(10 * 60 * 1000),
    },
    // The ledger is the only copy of the money: kept forever, never discarded. Its writes are
    // idempotent by their business ref (actors/wallet/ledger.ts), not by the dedupe window, which
    // only has to outlast writes in flight (shared/nats/cas.ts). Direct gets only on one replica:
    // the gateway asks "the last sequence as of now" per batch of balance reads (gateway/balances.ts),
    // a direct get costs about half a stream-info request, and with one replica the one server that
    // stores the stream answers it. Replicated, any replica answers one, and a replica that lags
    // answers with an older sequence (nats-server#6557): off, so every answer is the leader's.
    {
      ...common,
      name: STREAMS.ledger,
      subjects: [subjects.ledgerAll],
      retention: RetentionPolicy.Limits,
      discard: DiscardPolicy.New,
      max_age: 0,
      duplicate_window: nanos(10 * 60 * 1000),
      allow_direct: replicas === 1,
    },
    {
      ...common,
      name: STREAMS.events,
      subjects: [subjects.eventsAll],
      retention: RetentionPolicy.Limits,
      max_age: nanos(DAY),
      duplicate_window: nanos(60 * 1000),
    },
    // A task whose deliveries ran out is announced once, as a core NATS advisory: a supervisor
    // that is down or reconnecting at that moment would miss it, and the job would wait for the
    // jobs.stuckSeconds backstop (hours). Stored here, it waits until a supervisor has acted on it.
    // Finished jobs whose results are deleted leave the `jobs` bucket for this stream (shared/jobs/archive.ts):
    // one subject, so nats-server holds no per-job index for them (a bucket key costs ~180 B of its
    // memory for as long as it is stored: 177 MB at 1 M jobs). A document is archived once its results
    // expired, and its record is kept retention.jobRecords after that (projection.ts `forget_due`), so
    // the stream's age limit, counted from the archiving, never removes one still listed (an hour at least:
    // 0 would mean no limit).
    {
      ...common,
      name: STREAMS.jobsArchive,
      subjects: [subjects.jobArchived],
      retention: RetentionPolicy.Limits,
      discard: DiscardPolicy.Old,
      max_age: nanos(Math.max(cfg.retention.jobRecords * 1000, HOUR)),
      duplicate_window: nanos(10 * 60 * 1000),
    },
    // A page-set job's results (shared/jobs/pages.ts): one message per page, appended by the supervisor
    // when it records the page; kept as long as the longest result retention, and a day more.
    {
      ...common,
      name: STREAMS.pages,
      subjects: [subjects.pagesAll],
      retention: RetentionPolicy.Limits,
      discard: DiscardPolicy.Old,
      max_age: nanos(pageSetMs(cfg)),
      duplicate_window: nanos(10 * 60 * 1000),
    },
    // A crawl's frontier (shared/crawl/frontier.ts): one subject per crawl, purged when the crawl ends;
    // the age limit is a backstop for a crawl that never finished, as long as its page set's results.
    {
      ...common,
      name: STREAMS.crawlFrontier,
      subjects: [subjects.crawlFrontierAll],
      retention: RetentionPolicy.Limits,
      discard: DiscardPolicy.Old,
      max_age: nanos(pageSetMs(cfg)),
      duplicate_window: nanos(10 * 60 * 1000),
    },
    {
      ...common,
      name: STREAMS.lostTasks,
      subjects: [subjects.advisoryMaxDeliveries(STREAMS.tasks, '*')],
      retention: RetentionPolicy.Workqueue,
      max_age: nanos(7 * DAY),
    },
  ];
}

async function ensureStream(jsm: JetStreamManager, sc: Partial<StreamConfig>): Promise<void> {
  try {
    const info = await jsm.streams.info(sc.name!);
    const cur = info.config;
    const drift = (Object.keys(sc) as (keyof StreamConfig)[]).some((k) => JSON.stringify(cur[k]) !== JSON.stringify(sc[k]));
    if (drift) await jsm.streams.update(sc.name!, { ...cur, ...sc } as StreamConfig);
  } catch (e) {
    if (!/stream not found/i.test(String((e as Error).message))) throw e;
    await jsm.streams.add(sc as StreamConfig);
  }
}

/** Make the underlying stream of a bucket or store match age and replicas (and, for buckets, leader reads). */
async function alignStream(jsm: JetStreamManager, name: string, maxAgeMs: number, replicas: number, extra: Partial<StreamConfig> = {}) {
  const info = await jsm.streams.info(name);
  const want = { max_age: nanos(maxAgeMs), num_replicas: replicas, ...extra };
  if (
    (Object.keys(want) as (keyof StreamConfig)[]).some(
      (k) => JSON.stringify(info.config[k] ?? false) !== JSON.stringify(want[k as keyof typeof want]),
    )
  ) {
    await jsm.streams.update(name, { ...info.config, ...want } as StreamConfig);
  }
}

/**
 * Buckets refuse direct gets, so every reader gets the stream leader's answer: on a replicated bucket any
 * replica answers a direct get, and a replica that lags answers with an older revision or "no such
 * key" (no read-after-write on nats-server 2.9: nats-server#4162, #6557). Every bucket here is
 * read-modify-written (jobs, top-ups, limits) or read right after it is written (a new API key, a
 * job just created), so a stale read would be a lost outcome or a wrong 401/404. (The service's
 * handles, `kvm.open`, use direct gets only when asked.)
 *
 * The one exception: with one replica the `jobs` bucket allows them, and the gateway's reads of a job
 * use them (`jobsReads`, the bucket's `direct`). The one server that stores the stream answers, after every write it
 * acknowledged, as the ledger's direct get (above); a direct get skips the JetStream API's request
 * queue, which a crawl keeps busy with its own requests (the crawl bench's job reads).
 */
const BUCKET_READS = { allow_direct: false };
/** How the `jobs` bucket is made and how the gateway opens it: direct gets with one replica only. */
export const jobsReads = (cfg: Config) => ({ allow_direct: cfg.nats.replicas === 1 });

export function bucketConfigs(cfg: Config): { name: string; ttlMs: number; history: number; maxBytes?: number; direct?: boolean }[] {
  return [
    { name: BUCKETS.keys, ttlMs: 0, history: 1 },
    { name: BUCKETS.jobs, ttlMs: 0, history: 1, direct: true },
    { name: BUCKETS.topups, ttlMs: 0, history: 1 },
    { name: BUCKETS.limits, ttlMs: 2 * HOUR, history: 1 },
    // Live catalogue entries: an instance that stops refreshing vanishes after this.
    { name: BUCKETS.catalogue, ttlMs: 30 * 1000, history: 1 },
    { name: BUCKETS.datasets, ttlMs: 0, history: 1 },
    // Stripe's window: the same Idempotency-Key within 24 h answers the first answer again
    { name: BUCKETS.idempotency, ttlMs: 24 * HOUR, history: 1 },
    // a clean-up not finished within this is given up (the relay keeps the test events)
    { name: BUCKETS.labsCleanups, ttlMs: HOUR, history: 1 },
    // a crawl's visited set, cursor and page records (shared/jobs/crawl.ts): dropped at its end
    { name: BUCKETS.crawlVisited, ttlMs: pageSetMs(cfg), history: 1 },
    // fetched pages for websitepro `maxAge` (actors/converter/cache.ts): bounded in size and age
    {
      name: BUCKETS.fetchCache,
      ttlMs: cfg.websitepro.cacheMaxAgeSeconds * 1000,
      history: 1,
      maxBytes: cfg.websitepro.cacheMaxBytes,
    },
  ].map((b) => ({ ...b, replicas: cfg.nats.replicas }));
}

export function storeConfigs(cfg: Config): { name: string; ttlMs: number }[] {
  const r = cfg.retention;
  // The stores' max age is a backstop a little past the retention; the supervisor deletes at expiresAt.
  return [
    { name: OBJECT_STORES.results, ttlMs: Math.max(r.websitepro, r.shots) * 1000 + HOUR },
    { name: OBJECT_STORES.reports, ttlMs: r.labs * 1000 + HOUR },
  ];
}

export async function provision(nc: NatsConnection, cfg: Config): Promise<Provisioned> {
  const jsm = await jetstreamManager(nc);
  for (const sc of streamConfigs(cfg)) await ensureStream(jsm, sc);
  const kvm = new Kvm(nc);
  for (const b of bucketConfigs(cfg)) {
    const size = b.maxBytes ? { max_bytes: b.maxBytes } : {};
    const reads = b.direct ? jobsReads(cfg) : BUCKET_READS;
    await kvm
      .create(b.name, { history: b.history, ttl: b.ttlMs, replicas: cfg.nats.replicas, ...size, ...reads })
      .catch(async (e: Error) => {
        if (!/already in use/i.test(e.message)) throw e;
      });
    // a bucket with a size bound is a cache: when full, the oldest entries make room (a KV refuses new writes by default)
    await alignStream(jsm, `KV_${b.name}`, b.ttlMs, cfg.nats.replicas, {
      ...reads,
      ...(b.maxBytes ? { max_bytes: b.maxBytes, discard: DiscardPolicy.Old } : {}),
    });
  }
  const objm = new Objm(nc);
  for (const s of storeConfigs(cfg)) {
    await objm.create(s.name, { ttl: nanos(s.ttlMs), replicas: cfg.nats.replicas }).catch((e: Error) => {
      if (!/already in use/i.test(e.message)) throw e;
    });
    await alignStream(jsm, `OBJ_${s.name}`, s.ttlMs, cfg.nats.replicas);
  }
  return {
    streams: streamConfigs(cfg).map((s) => s.name!),
    buckets: bucketConfigs(cfg).map((b) => b.name),
    stores: storeConfigs(cfg).map((s) => s.name),
  };
}
