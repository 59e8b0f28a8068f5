// Per-origin politeness: the scheduler's decision whether a page of an origin may start now. Pure: the
// state is a small JSON value the runner keeps where it likes (a NATS KV entry per crawl and origin,
// written with a revision check), and every function returns a new one.
//
//   decide(state, rules, now)              → {ok: true} | {ok: false, at}   may a page of this origin start?
//   started(state, rules, now)             → state                           a page was sent
//   answered(state, rules, now, answer)    → {state, retryAt}                its answer came (or none did)
//   parseRetryAfter(header, now)           → ms to wait, or null
//
// Rules:
// - at most `concurrency` pages of one origin in flight;
// - two starts at least `gap` apart, gap = max(delayMs, crawlDelayMs): robots.txt's Crawl-delay (already
//   bounded by robots.ts) or the crawl's own `delayMs`. A site that asks for no Crawl-delay and a crawl with
//   delayMs 0 are limited by the concurrency alone;
// - a 429 or 503 holds the whole origin until its Retry-After (seconds or an HTTP date), bounded by
//   `maxRetryAfterMs`; without one, an exponential back-off (1 s, 2 s, 4 s, ... up to the same bound);
//   the page itself gets `retryAt` (the scheduler puts it back in the frontier, not in the results);
//   the back-off resets on the next answer that is neither.

export interface PolitenessRules {
  concurrency: number;
  delayMs: number;
  crawlDelayMs: number;
  maxRetryAfterMs: number;
}

export interface OriginState {
  inFlight: number;
  /** Earliest start of the next page (ms since the epoch). */
  nextAt: number;
  /** Held by a 429/503 until then. */
  holdUntil?: number;
  /** 429/503 answers in a row (the back-off's exponent). */
  strikes?: number;
}

export const NEW_ORIGIN: OriginState = { inFlight: 0, nextAt: 0 };
const BACKOFF_BASE_MS = 1000;

export const gapOf = (r: PolitenessRules) => Math.max(0, r.delayMs, r.crawlDelayMs);

export type Decision = { ok: true } | { ok: false; at: number | null };

/** May a page start now? `at`: when to ask again (null: when a page in flight ends). */
export function decide(s: OriginState, r: PolitenessRules, now: number): Decision {
  const hold = s.holdUntil ?? 0;
  if (hold > now) return { ok: false, at: hold };
  if (s.inFlight >= Math.max(1, r.concurrency)) return { ok: false, at: null };
  if (s.nextAt > now) return { ok: false, at: s.nextAt };
  return { ok: true };
}

export function started(s: OriginState, r: PolitenessRules, now: number): OriginState {
  return { ...s, inFlight: s.inFlight + 1, nextAt: Math.max(s.nextAt, now) + gapOf(r) };
}

/** Retry-After as milliseconds from now: delta-seconds or an HTTP date; null when absent or unreadable. */
export function parseRetryAfter(value: string | string[] | undefined, now: number): number | null {
  const v = (Array.isArray(value) ? value[0] : value)?.trim();
  if (!v) return null;
  if (/^\d+$/.test(v)) return Number(v) * 1000;
  if (!/[a-z]{3}/i.test(v)) return null; // an HTTP date names its day and month
  const at = Date.parse(v);
  return Number.isFinite(at) ? Math.max(0, at - now) : null;
}

export interface Answer {
  /** HTTP status, or null when no answer came (then only the slot is given back). */
  status: number | null;
  retryAfter?: string | string[];
  /** Retry-After already parsed (ms from now; the converter's `retry.retryAfterMs`), used when `retryAfter` is absent. */
  retryAfterMs?: number | null;
}

export function answered(s: OriginState, r: PolitenessRules, now: number, a: Answer): { state: OriginState; retryAt: number | null } {
  const state: OriginState = { ...s, inFlight: Math.max(0, s.inFlight - 1) };
  if (a.status === 429 || a.status === 503) {
    const strikes = (s.strikes ?? 0) + 1;
    const asked = parseRetryAfter(a.retryAfter, now) ?? a.retryAfterMs ?? null;
    const wait = Math.min(asked ?? BACKOFF_BASE_MS * 2 ** Math.min(strikes - 1, 20), r.maxRetryAfterMs);
    const holdUntil = Math.max(s.holdUntil ?? 0, now + wait);
    return { state: { ...state, strikes, holdUntil }, retryAt: holdUntil };
  }
  if (a.status !== null) delete state.strikes;
  return { state, retryAt: null };
}
