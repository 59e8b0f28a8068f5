import { Type as T } from '@sinclair/typebox';

export const OutboundConfig = T.Object(
  {
    allowCidrs: T.Array(T.String(), {
      default: [],
      description: 'Non-public ranges allowed anyway (tests only, e.g. ["127.0.0.0/8"]). Empty in every default configuration.',
    }),
    maxRedirects: T.Integer({
      minimum: 0,
      maximum: 20,
      default: 5,
      description: 'Redirects followed per fetch; each hop is checked again.',
    }),
    connectTimeoutMs: T.Integer({ minimum: 100, default: 10000, description: 'Connect timeout for outbound connections.' }),
    checkTimeoutMs: T.Integer({ minimum: 100, default: 5000, description: 'Timeout of the reachability check made at job creation.' }),
    browserNetns: T.Union([T.Literal('auto'), T.Literal('required'), T.Literal('off')], {
      default: 'auto',
      description:
        'Each browser in a network namespace of its own where only the guard proxy is reachable (docs/shots.md). auto: where this process can make namespaces (root, or unprivileged user namespaces), else browser flags and prefs only, said loudly at start (in production mode the browser-pool refuses to start instead: say `off` to accept flags and prefs only); required: the browser-pool does not start without it; off: flags and prefs only.',
    }),
    checksPerKeyPerMinute: T.Integer({
      minimum: 1,
      default: 60,
      description:
        'Reachability checks at job creation (a name lookup and a TCP connect, answered for free when they fail) per key and minute in one gateway; over it 429 rate_limited.',
    }),
    checksPerTargetPerMinute: T.Integer({
      minimum: 1,
      default: 300,
      description:
        'Reachability checks at job creation per target (host and port) and minute in one gateway, all keys together; over it 429 rate_limited.',
    }),
    proxyPort: T.Integer({
      minimum: 0,
      maximum: 65535,
      default: 0,
      description: 'Port of the local forward proxy browsers are forced through (0: random).',
    }),
  },
  { default: {} },
);
