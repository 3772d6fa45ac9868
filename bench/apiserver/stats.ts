/**
 * bench/apiserver/stats: latency summaries. Pure.
 *
 * Percentiles are nearest-rank (the smallest sample with at least p% of the
 * samples at or below it), so p99 of 100 samples is the 99th, and a p99 is
 * always a latency some request really had.
 */

export interface Summary {
  readonly n: number;
  readonly mean: number;
  readonly min: number;
  readonly p50: number;
  readonly p90: number;
  readonly p99: number;
  readonly max: number;
}

/** Nearest-rank percentile of an ascending array; NaN for none. */
export function percentile(sorted: readonly number[], p: number): number {
  if (!(p >= 0 && p <= 100)) throw new RangeError(`percentile: p must be in 0..100, got ${p}`);
  if (sorted.length === 0) return NaN;
  const rank = Math.max(1, Math.ceil((p / 100) * sorted.length));
  return sorted[rank - 1]!;
}

/** Count, mean and the percentiles the tables print; all NaN (n 0) for no samples. */
export function summarize(xs: readonly number[]): Summary {
  const s = [...xs].sort((a, b) => a - b);
  let sum = 0;
  for (const x of s) sum += x;
  return {
    n: s.length,
    mean: s.length ? sum / s.length : NaN,
    min: s.length ? s[0]! : NaN,
    p50: percentile(s, 50),
    p90: percentile(s, 90),
    p99: percentile(s, 99),
    max: s.length ? s[s.length - 1]! : NaN,
  };
}

/** The median of a few repeats (nearest-rank: the lower middle of an even count). */
export function median(xs: readonly number[]): number {
  return percentile([...xs].sort((a, b) => a - b), 50);
}
