// The bound on open event streams (GET /v1/jobs/{id}/events) per key and per client address group,
// in this gateway's memory: a stream costs no JetStream consumer (it shares the gateway's watch,
// watch.ts) but a socket and a little memory here for as long as it is open, so a key or an address
// cannot hold an unbounded number. Counts only what is open: each entry leaves with its last stream.
import type { Config } from '../../shared/config/index.ts';
import { ApiError } from '../../shared/errors.ts';

export class OpenStreams {
  private readonly perKey = new Map<string, number>();
  private readonly perAddress = new Map<string, number>();
  private readonly server: Pick<Config['server'], 'eventStreamsPerKey' | 'eventStreamsPerAddress'>;
  constructor(server: Pick<Config['server'], 'eventStreamsPerKey' | 'eventStreamsPerAddress'>) {
    this.server = server;
  }

  /** Count one more stream of this key and address, or refuse it; the function given back ends it (once). */
  open(keyHash: string, group: string): () => void {
    const { eventStreamsPerKey: maxKey, eventStreamsPerAddress: maxAddress } = this.server;
    if ((this.perKey.get(keyHash) ?? 0) >= maxKey) throw refuse('eventStreamsPerKey', maxKey, 'this key');
    if ((this.perAddress.get(group) ?? 0) >= maxAddress) throw refuse('eventStreamsPerAddress', maxAddress, 'this address');
    add(this.perKey, keyHash, 1);
    add(this.perAddress, group, 1);
    let closed = false;
    return () => {
      if (closed) return;
      closed = true;
      add(this.perKey, keyHash, -1);
      add(this.perAddress, group, -1);
    };
  }

  /** Streams open now (tests, metrics). */
  get size(): number {
    let n = 0;
    for (const v of this.perKey.values()) n += v;
    return n;
  }
}

function add(m: Map<string, number>, k: string, d: number) {
  const n = (m.get(k) ?? 0) + d;
  if (n > 0) m.set(k, n);
  else m.delete(k);
}

const refuse = (limit: string, max: number, who: string) =>
  new ApiError(
    'rate_limited',
    `${who} has ${max} event streams open on this gateway, the most allowed; close one (or follow the job with GET /v1/jobs/{id}?wait=) and retry`,
    { limit, max, retryAfter: 5 },
    { 'retry-after': '5' },
  );

const shared = new WeakMap<object, OpenStreams>();

/** The one bound of this gateway (keyed by its config object). */
export function openStreamsOf(config: Config): OpenStreams {
  let o = shared.get(config);
  if (!o) shared.set(config, (o = new OpenStreams(config.server)));
  return o;
}
