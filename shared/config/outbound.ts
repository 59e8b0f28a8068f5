import { Type as T } from '@sinclair/typebox';

export const OutboundConfig = T.Object({
  allowCidrs: T.Array(T.String(), { default: [], description: 'Non-public ranges allowed anyway (tests only, e.g. ["127.0.0.0/8"]). Empty in every default configuration.' }),
  maxRedirects: T.Integer({ minimum: 0, maximum: 20, default: 5, description: 'Redirects followed per fetch; each hop is checked again.' }),
  connectTimeoutMs: T.Integer({ minimum: 100, default: 10000, description: 'Connect timeout for outbound connections.' }),
  checkTimeoutMs: T.Integer({ minimum: 100, default: 5000, description: 'Timeout of the reachability check made at job creation.' }),
  checksPerKeyPerMinute: T.Integer({ minimum: 1, default: 60, description: 'Reachability checks at job creation (a name lookup and a TCP connect, answered for free when they fail) per key and minute in one gateway; over it 429 rate_limited.' }),
  checksPerTargetPerMinute: T.Integer({ minimum: 1, default: 300, description: 'Reachability checks at job creation per target (host and port) and minute in one gateway, all keys together; over it 429 rate_limited.' }),
  proxyPort: T.Integer({ minimum: 0, maximum: 65535, default: 0, description: 'Port of the local forward proxy browsers are forced through (0: random).' }),
}, { default: {} });
