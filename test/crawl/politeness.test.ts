// Per-origin politeness as the scheduler sees it: concurrency, the gap between starts, Retry-After.
import t from 'tap';
import {
  NEW_ORIGIN,
  answered,
  decide,
  parseRetryAfter,
  started,
  type OriginState,
  type PolitenessRules,
} from '../../shared/crawl/politeness.ts';

const rules = (p: Partial<PolitenessRules> = {}): PolitenessRules => ({
  concurrency: 2,
  delayMs: 0,
  crawlDelayMs: 0,
  maxRetryAfterMs: 60000,
  ...p,
});

t.test('no delay asked: limited by the concurrency alone', async (t) => {
  const r = rules({ concurrency: 3 });
  let s: OriginState = NEW_ORIGIN;
  const now = 1000;
  for (let i = 0; i < 3; i++) {
    t.same(decide(s, r, now), { ok: true }, `page ${i + 1} starts at once`);
    s = started(s, r, now);
  }
  t.same(decide(s, r, now), { ok: false, at: null }, 'the fourth waits for a slot');
  s = answered(s, r, now + 5, { status: 200 }).state;
  t.same(decide(s, r, now + 5), { ok: true }, 'a slot back, no delay');
});

t.test('a delay spaces the starts: the larger of delayMs and Crawl-delay', async (t) => {
  const r = rules({ concurrency: 4, delayMs: 200, crawlDelayMs: 1000 });
  let s = started(NEW_ORIGIN, r, 0);
  t.same(decide(s, r, 500), { ok: false, at: 1000 });
  t.same(decide(s, r, 1000), { ok: true });
  s = started(s, r, 1200);
  t.equal(s.nextAt, 2200);
  // starts planned back to back never bunch up: the next slot counts from the later of nextAt and now
  const r2 = rules({ concurrency: 4, delayMs: 100 });
  let q = NEW_ORIGIN;
  const starts: number[] = [];
  for (let now = 0; now <= 1000 && starts.length < 5; now += 10) {
    if (decide(q, r2, now).ok) {
      starts.push(now);
      q = started(q, r2, now);
      q = answered(q, r2, now, { status: 200 }).state;
    }
  }
  t.same(starts, [0, 100, 200, 300, 400]);
});

t.test('429/503 hold the origin, Retry-After bounded, back-off without one', async (t) => {
  const r = rules({ maxRetryAfterMs: 30000 });
  let s = started(NEW_ORIGIN, r, 0);
  let a = answered(s, r, 0, { status: 429, retryAfter: '5' });
  t.equal(a.retryAt, 5000, 'Retry-After seconds');
  t.same(decide(a.state, r, 1000), { ok: false, at: 5000 }, 'the whole origin waits');
  t.same(decide(a.state, r, 5000), { ok: true });
  s = started(a.state, r, 5000);
  a = answered(s, r, 5000, { status: 503, retryAfter: '86400' });
  t.equal(a.retryAt, 35000, 'bounded by maxRetryAfterMs');
  s = started(a.state, r, 35000);
  a = answered(s, r, 35000, { status: 503 });
  t.equal(a.state.strikes, 3);
  t.equal(a.retryAt, 35000 + 4000, 'no Retry-After: 1 s, 2 s, 4 s, ...');
  s = started(a.state, r, 39000);
  a = answered(s, r, 39000, { status: 200 });
  t.equal(a.retryAt, null);
  t.notOk(a.state.strikes, 'back-off reset by a good answer');
  const none = answered(started(NEW_ORIGIN, r, 0), r, 0, { status: null });
  t.same(none, { state: { inFlight: 0, nextAt: 0 }, retryAt: null }, 'no answer: the slot comes back');
  t.equal(answered(NEW_ORIGIN, r, 0, { status: 200 }).state.inFlight, 0, 'never negative');
});

t.test('parseRetryAfter', async (t) => {
  const now = Date.parse('2026-11-28T05:00:00Z');
  t.equal(parseRetryAfter('120', now), 120000);
  t.equal(parseRetryAfter('Sat, 28 Nov 2026 05:01:00 GMT', now), 60000);
  t.equal(parseRetryAfter('Sat, 28 Nov 2026 04:00:00 GMT', now), 0, 'a date past is now');
  t.equal(parseRetryAfter(['7', '9'], now), 7000);
  t.equal(parseRetryAfter('soon', now), null);
  t.equal(parseRetryAfter('-5', now), null);
  t.equal(parseRetryAfter(undefined, now), null);
});

t.test('the state is plain JSON (the runner keeps it in NATS)', async (t) => {
  const r = rules();
  const s = answered(started(NEW_ORIGIN, r, 0), r, 0, { status: 429, retryAfter: '3' }).state;
  t.same(JSON.parse(JSON.stringify(s)), s);
});
