import { Type as T } from '@sinclair/typebox';

export const ServerConfig = T.Object(
  {
    host: T.String({ default: '127.0.0.1', description: 'Address the gateway listens on (env HOST).' }),
    port: T.Integer({ minimum: 0, maximum: 65535, default: 8080, description: 'Gateway port (env PORT); 0 picks a free one.' }),
    baseUrl: T.String({
      default: '',
      description:
        'Public base URL (env BASE_URL): result, docs and account URLs, in answers and webhooks. Empty means http://localhost:<port>, with the port the gateway really listens on (also with PORT=0). Each job records the URL of the gateway that created it; its webhook names the results there.',
    }),
    mode: T.Union([T.Literal('development'), T.Literal('production')], {
      default: 'development',
      description: 'env MODE. Production refuses the dev Lightning backend and the fixed rate.',
    }),
    logLevel: T.String({ default: 'info', description: 'pino level (env LOG_LEVEL).' }),
    publicRequestsPerMinute: T.Integer({
      minimum: 1,
      default: 600,
      description: 'Requests per minute per client address to public endpoints.',
    }),
    keyRequestsPerMinute: T.Integer({
      minimum: 1,
      default: 1200,
      description: 'Requests per minute per key to authenticated endpoints other than job creation.',
    }),
    eventsHeartbeatSeconds: T.Number({
      exclusiveMinimum: 0,
      default: 15,
      description: "Seconds between heartbeat comments on a job's event stream (GET /v1/jobs/{id}/events).",
    }),
    eventStreamsPerKey: T.Integer({
      minimum: 1,
      default: 50,
      description:
        'Event streams (GET /v1/jobs/{id}/events) one key may have open at once on one gateway; one more answers 429 rate_limited with `limit: "eventStreamsPerKey"`.',
    }),
    eventStreamsPerAddress: T.Integer({
      minimum: 1,
      default: 200,
      description:
        'Event streams one client address group may have open at once on one gateway, all its keys together; one more answers 429 rate_limited with `limit: "eventStreamsPerAddress"`.',
    }),
    trustProxy: T.Boolean({
      default: false,
      description:
        'Shorthand for `trustedProxies: ["loopback"]` (a proxy on this machine). Before session 16 it believed the first X-Forwarded-For address, which the client writes; now only the hops the listed proxies added are read.',
    }),
    failoverRetryMs: T.Integer({
      minimum: 0,
      default: 20_000,
      description:
        'How long the gateway asks NATS again, inside one request, while it fails over (a stream electing its leader, the connection moving off a cut-off node), before it answers 503: the key lookup, the job limit, every read (GET), and a job creation with the same job id (nothing charged twice). 0 answers the first failure.',
    }),
    authCacheKeys: T.Integer({
      minimum: 1,
      default: 10_000,
      description:
        'API keys whose wallet each gateway remembers (30 s each, least recently used out first; about 250 bytes each). A key not remembered costs one read of the keys bucket.',
    }),
    balanceCopyWallets: T.Integer({
      minimum: 1,
      default: 100_000,
      description:
        'Wallets whose last ledger entry each gateway keeps, on a replicated ledger (least recently used out first; about 200 bytes each). A wallet not kept costs one read of its last entry. With one replica balances are read by direct get and the copy is not used.',
    }),
    trustedProxies: T.Array(T.String({ minLength: 1 }), {
      default: [],
      description:
        "Addresses and CIDRs of the reverse proxies in front of the gateway (also `loopback`, `private`). A request from one of them is taken to come from the right-most X-Forwarded-For address not in this list; from anywhere else, X-Forwarded-For is ignored. Empty: the connection's peer is the client.",
    }),
    ipv6PrefixLength: T.Integer({
      minimum: 32,
      maximum: 128,
      default: 64,
      description:
        'IPv6 clients are counted by this network prefix in every per-address limit (requests per minute, keys per day): one customer line usually holds a whole /64.',
    }),
    unitThreads: T.Array(T.Union([T.Literal('wallet'), T.Literal('job-supervisor'), T.Literal('converter'), T.Literal('relay-prober')]), {
      default: ['job-supervisor', 'converter'],
      uniqueItems: true,
      description:
        'env UNIT_THREADS (comma-separated; `none`: every unit on the main thread). A process that runs several units (the embedded default, `main.ts a b ...`) runs each of these on a thread of its own, with its own NATS connection and at server.unitThreadNice: their work shares no event loop with the gateway, and when a crawl keeps every core busy the API answers first (docs/performance.md, the job reads during a crawl). Each thread costs about 50-100 MB of memory. A process of one unit runs it on its main thread. The gateway and browser-pool (its browsers are killed when the process exits) always run on the main thread.',
    }),
    unitThreadNice: T.Integer({
      default: 10,
      minimum: 0,
      maximum: 19,
      description:
        'env UNIT_THREAD_NICE. The scheduling niceness (0-19, Linux) of the units in server.unitThreads and of the threads they start (the conversion threads): when a crawl keeps every core busy, the gateway and the wallet on the main thread answer first. 0: the same priority as the process.',
    }),
    unsafeDevTopupsOnPublicAddress: T.Boolean({
      default: false,
      description:
        'UNSAFE (env UNSAFE_DEV_TOPUPS_ON_PUBLIC_ADDRESS=1). With the dev Lightning backend in development mode, POST /account/dev-pay settles any top-up for free, so the gateway refuses to listen on a non-loopback HOST unless this is set (a shared demo where free money is the point).',
    }),
  },
  { default: {} },
);

export const NatsConfig = T.Object(
  {
    url: T.String({ default: '', description: 'env NATS_URL: comma-separated servers. Empty starts the embedded nats-server.' }),
    embeddedPort: T.Integer({
      minimum: 0,
      maximum: 65535,
      default: 4222,
      description: 'Client port of the embedded nats-server (env NATS_PORT; 0: random).',
    }),
    replicas: T.Integer({
      minimum: 1,
      maximum: 5,
      default: 1,
      description: 'Replicas of every stream, bucket and store (env NATS_REPLICAS; 3 on a cluster).',
    }),
    credsFile: T.String({ default: '', description: 'NATS credentials file (env NATS_CREDS), if the cluster needs one.' }),
    syncInterval: T.String({
      pattern: '^(always|[0-9]+(ms|s|m|h))$',
      default: 'always',
      description:
        'JetStream sync_interval of the nats-servers this project starts (embedded, npm run cluster; env NATS_SYNC_INTERVAL). `always`: every write is on disk before it is acknowledged. A duration (e.g. `2m`, the nats-server default) acknowledges writes a power cut can lose: UNSAFE for money, benchmarks only.',
    }),
  },
  { default: {} },
);

export const RetentionConfig = T.Object(
  {
    websitepro: T.Number({ exclusiveMinimum: 0, default: 24 * 3600, description: 'Seconds websitepro results are kept.' }),
    shots: T.Number({ exclusiveMinimum: 0, default: 24 * 3600, description: 'Seconds shots results are kept.' }),
    labs: T.Number({ exclusiveMinimum: 0, default: 30 * 24 * 3600, description: 'Seconds labs reports are kept.' }),
    sweepSeconds: T.Number({ exclusiveMinimum: 0, default: 60, description: 'How often expired results are deleted.' }),
    jobRecords: T.Number({
      minimum: 0,
      default: 30 * 24 * 3600,
      description:
        "Seconds a finished job's record (GET /v1/jobs/{id}, the job list) is kept after its results expired (in the archive of finished jobs, the JOBS_ARCHIVE stream, whose age limit it is); then the job answers 404 not_found. Default 30 days (a websitepro or shots job: 31 days after creation; labs: 60).",
    }),
  },
  { default: {} },
);

export const LimitsConfig = T.Object(
  {
    jobsPerHour: T.Integer({
      minimum: 1,
      default: 600,
      description:
        'Jobs created per hour and key, shared by all gateways. A creation refused (400, 402, 503 ...) gives its token back: only jobs that exist (or may, after a charge) count.',
    }),
    jobRequestsPerMinute: T.Integer({
      minimum: 1,
      default: 120,
      description:
        'Job creation requests per minute and key in one gateway, whatever their answer (the looser bound on refused creations, which `jobsPerHour` no longer counts).',
    }),
    idempotencyKeysPerDay: T.Integer({
      minimum: 1,
      default: 15000,
      description:
        'New Idempotency-Key records per wallet in 24 hours (each is kept 24 h), shared by all gateways; over it 429 rate_limited with `limit: "idempotencyKeys"`. The default is above 24 x `jobsPerHour`, so a client that sends a key with every creation is never refused for it; what it bounds is records of refused requests.',
    }),
    bodyBytes: T.Integer({ minimum: 1024, default: 65536, description: 'Largest request body.' }),
    maxWaitSeconds: T.Integer({ minimum: 0, default: 25, description: 'Cap of the `wait` query.' }),
    queueMax: T.Integer({
      minimum: 1,
      default: 1000,
      description:
        "Unfinished tasks of one wallet (taken by workers or held past its share) before that wallet's job creation answers 503 busy; other wallets are not refused for it.",
    }),
    walletTasks: T.Integer({
      minimum: 1,
      default: 2,
      description:
        "Tasks of one wallet that workers of one kind may have at once (the converters, one browser version's pool, the relay-probers, compare): a share of each pool, so a lone customer still uses every pool at once; its further tasks of that kind wait, held in order, until its own finish. Keep it below the concurrency of the smallest worker pool (converter `websitepro.concurrency` x instances, a browser's `shots.concurrency` x instances): then one wallet's stalling tasks never hold every worker of a kind.",
    }),
  },
  { default: {} },
);
