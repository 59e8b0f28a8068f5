// The labs tests' fixture relay with a fault switched on, started for one test and closed at its
// teardown (test/labs/fixtures/mini-relay.ts says what each fault does).
import { startMiniRelay, type Faults, type MiniRelay } from '../labs/fixtures/mini-relay.ts';

type Tap = { teardown(fn: () => unknown): void };

export async function miniRelay(t: Tap, faults: Faults = {}, opts: Parameters<typeof startMiniRelay>[1] = {}): Promise<MiniRelay> {
  const relay = await startMiniRelay(faults, opts);
  t.teardown(() => relay.close());
  return relay;
}
