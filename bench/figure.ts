// One benchmark figure: a measured value beside a baseline measured in the same run, their ratio,
// and every sample behind them. Service benchmarks (bench/converter.ts, shots.ts, labs.ts) return
// these from `run()`; bench/run.ts prints them as one table and writes them as JSON.

export interface BenchFigure {
  /** What was measured, e.g. `gateway GET /v1/pricing req/s`. */
  name: string;
  /** Unit of value and baseline: `req/s`, `ms`, `MB`, `jobs/s`. */
  unit: string;
  /** Median of `samples`. */
  value: number;
  /** Median of `baselineSamples` (the same measurement of the baseline). */
  baseline: number;
  /** value / baseline. */
  ratio: number;
  samples: number[];
  baselineSamples?: number[];
  /** What the baseline is, caveats, error counts. */
  note?: string;
}

/** A figure that could not be measured in this run (a missing module, a route not yet built). */
export interface SkippedFigure {
  name: string;
  skipped: string;
}

export type BenchRow = BenchFigure | SkippedFigure;

export const isSkipped = (r: BenchRow): r is SkippedFigure => 'skipped' in r;

export function sorted(xs: readonly number[]): number[] {
  return [...xs].sort((a, b) => a - b);
}

export function min(xs: readonly number[]): number {
  return xs.length ? Math.min(...xs) : NaN;
}

export function max(xs: readonly number[]): number {
  return xs.length ? Math.max(...xs) : NaN;
}

/** Percentile with linear interpolation between closest ranks (p in 0..100). */
export function percentile(xs: readonly number[], p: number): number {
  if (!xs.length) return NaN;
  const s = sorted(xs);
  const rank = (Math.min(100, Math.max(0, p)) / 100) * (s.length - 1);
  const lo = Math.floor(rank);
  const hi = Math.ceil(rank);
  return s[lo]! + (s[hi]! - s[lo]!) * (rank - lo);
}

export function median(xs: readonly number[]): number {
  return percentile(xs, 50);
}

export function mean(xs: readonly number[]): number {
  return xs.length ? xs.reduce((a, b) => a + b, 0) / xs.length : NaN;
}

export interface Spread {
  min: number;
  median: number;
  max: number;
}

export function spread(xs: readonly number[]): Spread {
  return { min: min(xs), median: median(xs), max: max(xs) };
}

/** Build a figure from raw samples: value and baseline are medians, ratio is value / baseline. */
export function figure(o: { name: string; unit: string; samples: number[]; baselineSamples: number[]; note?: string }): BenchFigure {
  const value = median(o.samples);
  const baseline = median(o.baselineSamples);
  return {
    name: o.name,
    unit: o.unit,
    value,
    baseline,
    ratio: baseline === 0 ? NaN : value / baseline,
    samples: o.samples,
    baselineSamples: o.baselineSamples,
    ...(o.note ? { note: o.note } : {}),
  };
}

/** BENCH_QUICK=1: a short run (development, the smoke test). */
export const quick = () => process.env.BENCH_QUICK === '1' || process.env.BENCH_QUICK === 'true';
