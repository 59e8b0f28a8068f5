import { Type as T } from '@sinclair/typebox';

export const JobsConfig = T.Object(
  {
    maxDeliver: T.Integer({ minimum: 1, default: 3, description: 'Deliveries of a task before it fails as worker_lost.' }),
    ackWaitSeconds: T.Integer({ minimum: 1, default: 30, description: 'Seconds without a heartbeat before a task is redelivered.' }),
    taskTimeoutSeconds: T.Integer({
      minimum: 1,
      default: 300,
      description:
        'Hard bound of one task in any worker: past it the result fails as `timeout` (refunded), even if the worker still heartbeats.',
    }),
    noWorkerSeconds: T.Integer({
      minimum: 1,
      default: 120,
      description:
        'A result still pending when its service has had no live worker instance in the catalogue this long fails as worker_lost and is refunded.',
    }),
    stuckSeconds: T.Integer({
      minimum: 1,
      default: 6 * 3600,
      description: 'Backstop: a result still pending this long after its task was published fails as worker_lost and is refunded.',
    }),
  },
  { default: {} },
);

export const WebsiteproConfig = T.Object(
  {
    maxBytes: T.Integer({ minimum: 1024, default: 10 * 1024 * 1024, description: 'Largest page body fetched (decompressed).' }),
    fetchTimeoutMs: T.Integer({ minimum: 100, default: 20000, description: 'Total time for fetching a page.' }),
    concurrency: T.Integer({ minimum: 1, default: 4, description: 'Tasks a converter instance works on at once.' }),
    convertTimeoutMs: T.Integer({
      minimum: 1000,
      default: 60000,
      description: 'Longest one page conversion (all text outputs, on a worker thread) may take; the thread is then replaced.',
    }),
    cacheMaxAgeSeconds: T.Integer({
      minimum: 60,
      maximum: 30 * 86400,
      default: 7 * 86400,
      description:
        "The fetch cache (`maxAge`, actors/converter/cache.ts): the largest `maxAge` a body may ask for (more is a 400), and how long a fetched page is kept (the bucket `fetch_cache`'s max age).",
    }),
    cacheMaxBytes: T.Integer({
      minimum: 1024 * 1024,
      default: 256 * 1024 * 1024,
      description: "The fetch cache's size bound (the bucket `fetch_cache`'s max bytes; the oldest pages make room).",
    }),
    cacheEntryMaxBytes: T.Integer({
      minimum: 1024,
      maximum: 1000 * 1000,
      default: 768 * 1024,
      description: "Largest fetched body the cache keeps (under NATS's 1 MB message limit); a bigger page is fetched every time.",
    }),
  },
  { default: {} },
);

export const ShotsConfig = T.Object(
  {
    browsers: T.Array(T.String(), {
      default: ['chromium', 'chromium-143', 'chromium-131', 'firefox', 'mobile'],
      description: 'Browsers this browser-pool instance launches (env BROWSERS, comma-separated).',
    }),
    concurrency: T.Integer({
      minimum: 1,
      default: 2,
      description: 'Pages worked on at once per instance (lowered when free memory is short).',
    }),
    restartAfter: T.Integer({ minimum: 1, default: 100, description: 'Pages before a browser is restarted.' }),
    pageTimeoutMs: T.Integer({ minimum: 1000, default: 45000, description: 'A page taking longer is killed and the task fails.' }),
    pageHeapMb: T.Integer({
      minimum: 64,
      default: 1024,
      description:
        'Script heap of one page (MB): a page that allocates without end fails at this size (Chromium: the renderer ends, `render_failed`; Firefox: the script gets out-of-memory errors), not the machine.',
    }),
  },
  { default: {} },
);

export const LabsConfig = T.Object(
  {
    allowedPorts: T.Array(T.Integer({ minimum: 1, maximum: 65535 }), {
      default: [443, 80, 4848, 7000, 7447, 7777, 8008, 8080, 8443, 9735],
      description: 'Relay ports that may be tested.',
    }),
    relayTestsPerHour: T.Integer({
      minimum: 1,
      default: 30,
      description: 'Tests of one relay per hour, all customers together, before 429 relay_busy.',
    }),
    moduleTimeoutMs: T.Integer({ minimum: 1000, default: 120000, description: 'Time a module may run.' }),
    // Deprecated names of webhooks.* (from when only labs sent webhooks), still read: loadConfig copies
    // each one onto its webhooks.* setting when that one is not set.
    webhookRetries: T.Optional(T.Integer({ minimum: 0, description: 'Deprecated alias of `webhooks.retries`.' })),
    webhookBackoffMs: T.Optional(T.Integer({ minimum: 1, description: 'Deprecated alias of `webhooks.backoffMs`.' })),
    webhookTimeoutMs: T.Optional(T.Integer({ minimum: 100, description: 'Deprecated alias of `webhooks.timeoutMs`.' })),
    webhookSigningKey: T.Optional(T.String({ description: 'Deprecated alias of `webhooks.signingKey`.' })),
    replyTimeoutMs: T.Integer({
      minimum: 100,
      default: 10000,
      description: 'Time a relay may take to answer a REQ, EVENT, COUNT or AUTH.',
    }),
    quietMs: T.Integer({ minimum: 10, default: 2000, description: 'How long the probe waits to be sure something does NOT arrive.' }),
    idleMs: T.Integer({ minimum: 10, default: 15000, description: 'Idle time of the connection-stability check.' }),
    latencySamples: T.Integer({ minimum: 1, maximum: 50, default: 5, description: 'Samples per latency measurement (connect, EOSE, OK).' }),
    extraCaFile: T.String({ default: '', description: 'PEM file of extra trusted CAs for relay TLS and webhooks (tests only).' }),
    concurrency: T.Integer({ minimum: 1, default: 4, description: 'Modules a relay-prober instance runs at once.' }),
  },
  { default: {} },
);

/** Webhooks of every service (labs reports, finished websitepro and shots jobs; docs/webhooks.md). */
export const WebhooksConfig = T.Object(
  {
    retries: T.Integer({ minimum: 0, default: 5, description: 'Webhook delivery retries (exponential backoff).' }),
    backoffMs: T.Integer({ minimum: 1, default: 2000, description: 'First webhook retry delay; doubles each retry.' }),
    timeoutMs: T.Integer({ minimum: 100, default: 10000, description: 'Time one webhook POST may take.' }),
    signingKey: T.String({
      default: '',
      description:
        'Ed25519 private key seed (64 hex) that signs every webhook; every supervisor, prober and gateway needs the same one. Empty: generated once into <dataDir>/labs-webhook.key.',
    }),
  },
  { default: {} },
);

/** Deprecated setting → the setting it now stands for (copied over by loadConfig). */
export const DEPRECATED_SETTINGS: Record<string, string> = {
  'labs.webhookRetries': 'webhooks.retries',
  'labs.webhookBackoffMs': 'webhooks.backoffMs',
  'labs.webhookTimeoutMs': 'webhooks.timeoutMs',
  'labs.webhookSigningKey': 'webhooks.signingKey',
};
