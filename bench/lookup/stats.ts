/**
 * bench/lookup/stats: latency summaries (pure), in the shape the lookup
 * results carry. Percentiles are bench/lib/stats' nearest rank on the sorted
 * samples: p99 of 1,000 samples is the 990th.
 */
import { summarize as summarizeSamples } from '../lib/stats.js';

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

/** The summary of samples in µs (the input is not modified). */
export function summarize(samples: ArrayLike<number>): LatencySummary {
  const s = summarizeSamples(samples);
  return { count: s.n, p50: s.p50, p90: s.p90, p99: s.p99, min: s.min, max: s.max, mean: s.mean };
}
