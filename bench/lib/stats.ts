/**
 * bench/lib/stats: the one definition of a percentile and a median that every
 * bench uses, and the latency summary built on it. Pure.
 *
 * Percentiles are nearest-rank (Hyndman and Fan's definition 1, numpy's
 * `method='inverted_cdf'`): the p-th percentile of n samples is the smallest
 * sample with at least p% of the samples at or below it, i.e. the sample of
 * rank ceil(p/100 × n) in ascending order (1-based; rank 1 for p = 0). So p99
 * of 100 samples is the 99th, p99 of 50 samples is the largest, and the median
 * (p50) of an even count is the lower of the two middle samples. Every figure
 * a bench prints is then a value some sample really had (a latency some
 * request had, a run that happened), never an interpolation between two;
 * with few samples (a median of 3 or 5 repeats) the difference from numpy's
 * default (linear interpolation) is at most the gap between two neighbours.
 */

/** The 1-based rank of the p-th percentile among n samples (p in 0..100, n ≥ 1). @throws RangeError */
export function nearestRank(n: number, p: number): number {
  if (!(p >= 0 && p <= 100)) throw new RangeError(`percentile: p must be in 0..100, got ${p}`);
  if (!Number.isInteger(n) || n < 1) throw new RangeError(`percentile: the sample count must be a positive integer, got ${n}`);
  return Math.max(1, Math.ceil((p / 100) * n));
}

/** The p-th percentile of an ascending array; NaN for none. @throws RangeError for p outside 0..100 */
export function percentile(sorted: ArrayLike<number>, p: number): number {
  if (sorted.length === 0) {
    nearestRank(1, p); // p is checked even without samples
    return NaN;
  }
  return sorted[nearestRank(sorted.length, p) - 1]!;
}

/** The p-th percentile of samples in any order (a sorted copy; the input is left alone); NaN for none. */
export function percentileOf(xs: readonly number[], p: number): number {
  return percentile([...xs].sort((a, b) => a - b), p);
}

/** The median: the p50 above (an even count gives the lower middle sample); NaN for none. */
export function median(xs: readonly number[]): number {
  return percentileOf(xs, 50);
}

export interface Summary {
  readonly n: number;
  readonly mean: number;
  readonly min: number;
  readonly p50: number;
  readonly p90: number;
  readonly p99: number;
  readonly max: number;
}

/** Count, mean, extremes and the percentiles the tables print; all NaN (n 0) for no samples. The input is left alone. */
export function summarize(xs: ArrayLike<number>): Summary {
  const s = Float64Array.from(xs).sort();
  let sum = 0;
  for (const x of s) sum += x;
  const n = s.length;
  return {
    n,
    mean: n ? sum / n : NaN,
    min: n ? s[0]! : NaN,
    p50: percentile(s, 50),
    p90: percentile(s, 90),
    p99: percentile(s, 99),
    max: n ? s[n - 1]! : NaN,
  };
}
