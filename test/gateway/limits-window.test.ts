// "600 jobs per hour and key" to the letter (issue 20 item 7): over ANY rolling hour at most 600
// creations are accepted, and Retry-After says when the next one is. Real NATS KV, simulated clock.
import t from 'tap';
import { Kvm } from '@nats-io/kv';
import { startTestNats } from '../helpers/nats.ts';
import { takeToken } from '../../shared/limits.ts';
import { BUCKETS } from '../../shared/names.ts';

const HOUR = 3600_000;

/** Most accepted times inside any half-open window [s, s + period). */
function maxInWindow(times: number[], period: number): number {
  const s = [...times].sort((a, b) => a - b);
  let best = 0;
  for (let i = 0, j = 0; i < s.length; i++) {
    while (s[i]! - s[j]! >= period) j++;
    best = Math.max(best, i - j + 1);
  }
  return best;
}

// xorshift: a seeded schedule, so a failure can be replayed
function rng(seed: number) {
  let x = seed >>> 0 || 1;
  return () => {
    x ^= x << 13;
    x >>>= 0;
    x ^= x >>> 17;
    x ^= x << 5;
    x >>>= 0;
    return x / 2 ** 32;
  };
}

t.test('property: 2000 random creations over simulated hours never exceed 600 in any 3600 s window', async (t) => {
  const { nc } = await startTestNats(t);
  const kv = await new Kvm(nc).open(BUCKETS.limits);
  let refusedTotal = 0;
  const badRetry: number[] = [];
  for (const seed of [1, 2, 3]) {
    const rand = rng(seed * 7919);
    let now = 10_000_000 + seed * 100 * HOUR;
    const accepted: number[] = [];
    let bursty = 0;
    for (let i = 0; i < 2000; i++) {
      // bursts (many at one instant), short gaps and long pauses mixed
      const r = rand();
      now += r < 0.5 ? 0 : r < 0.997 ? Math.floor(rand() * 8000) : Math.floor(rand() * HOUR);
      if (r < 0.5) bursty++;
      const d = await takeToken(kv, 'prop', `k${seed}`, 600, HOUR, now);
      if (d.allowed) accepted.push(now);
      else if (!(d.retryAfter >= 1 && d.retryAfter <= 3600)) badRetry.push(d.retryAfter);
    }
    const worst = maxInWindow(accepted, HOUR);
    t.ok(
      worst <= 600 && (accepted.length === 2000 || worst === 600),
      `seed ${seed}: at most 600 in any hour (worst ${worst}, ${accepted.length} accepted, ${bursty} in bursts)`,
    );
    refusedTotal += 2000 - accepted.length;
  }
  t.ok(refusedTotal > 1000, `the schedules do reach the limit (${refusedTotal} refused)`);
  t.same(badRetry, [], 'every Retry-After is within 1..3600 s');
});

t.test('a full hour refuses; Retry-After names the moment the oldest creation leaves the window', async (t) => {
  const { nc } = await startTestNats(t);
  const kv = await new Kvm(nc).open(BUCKETS.limits);
  const start = 50_000_000;
  for (let i = 0; i < 10; i++) t.ok((await takeToken(kv, 'w', 'k', 10, HOUR, start + i * 60_000)).allowed);
  const at = start + 30 * 60_000;
  const refused = await takeToken(kv, 'w', 'k', 10, HOUR, at);
  t.notOk(refused.allowed, 'the 11th inside one hour is refused');
  t.equal(refused.retryAfter, 1800, 'the first creation leaves the window 30 minutes later');
  t.notOk((await takeToken(kv, 'w', 'k', 10, HOUR, at + 1800_000 - 1)).allowed, 'refused a millisecond before');
  t.ok((await takeToken(kv, 'w', 'k', 10, HOUR, at + 1800_000)).allowed, 'allowed at Retry-After');
  t.notOk((await takeToken(kv, 'w', 'k', 10, HOUR, at + 1800_000)).allowed, 'and only one: the window is full again');
});
