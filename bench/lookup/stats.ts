/**
 * bench/lookup/stats: latency summaries (pure). Percentiles are
 * nearest-rank on the sorted samples: p99 of 1,000 samples is the 990th.
 */
export interface LatencySummary {
  readonly count: number;
  /** Microseconds. */
  readonly p50: number;
  readonly p90: number;
  readonly p99: number;
  readonly min: number;
  readonly max: number;
  readonly mean: number;
}

/** Nearest-rank percentile of ascending `sorted` (q in 0..100); NaN when empty. */
export function percentile(sorted: ArrayLike<number>, q: number): number {
  const n = sorted.length;
  if (n === 0) return NaN;
  if (q <= 0) return sorted[0]!;
  const rank = Math.ceil((q / 100) * n);
  return sorted[Math.min(n, rank) - 1]!;
}

/** The summary of samples in µs (the input is not modified). */
export function summarize(samples: ArrayLike<number>): LatencySummary {
  const s = Float64Array.from(samples).sort();
  let sum = 0;
  for (const v of s) sum += v;
  const n = s.length;
  return {
    count: n,
    p50: percentile(s, 50),
    p90: percentile(s, 90),
    p99: percentile(s, 99),
    min: n ? s[0]! : NaN,
    max: n ? s[n - 1]! : NaN,
    mean: n ? sum / n : NaN,
  };
}
