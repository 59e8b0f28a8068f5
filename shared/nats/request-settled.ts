// nats.js 3.4 (@nats-io/nats-core RequestOne) ends every answered request by rejecting its promise
// once more with `new RequestError("cancelled")`: a no-op on a promise already resolved, but the
// Error captures a stack each time. On a crawl's hot path (dozens of KV and JetStream requests a
// page) that was the main thread's largest single cost in the profile (issue 42, session 31:
// ~1 s of 23 s busy over a 2,000-page crawl). Here a request that has its answer is cancelled without
// making that Error; a request cancelled before its answer (an error, a timeout, a closed
// connection) goes through the library's own cancel, unchanged. Loaded by shared/nats/connect.ts.
import { RequestOne } from '@nats-io/nats-core/internal';

interface Settling {
  settled?: boolean;
  timer?: { cancel(): void };
  mux: { cancel(r: unknown): void };
}

const proto = RequestOne.prototype as unknown as {
  resolver(this: Settling, err: Error | null, msg: unknown): void;
  cancel(this: Settling, err?: Error): void;
};
const resolver = proto.resolver;
const cancel = proto.cancel;
proto.resolver = function (err, msg) {
  this.settled = true;
  resolver.call(this, err, msg);
};
proto.cancel = function (err) {
  if (!this.settled || err) return cancel.call(this, err);
  this.timer?.cancel();
  this.mux.cancel(this);
};
