/**
 * bench/programming/metrics: one histogram out of a Prometheus text
 * exposition (the agent's /metrics), the difference of two scrapes, and
 * what a histogram can say about percentiles. Pure.
 *
 * A histogram knows only its bucket bounds, so a percentile from it is
 * "at most le": the upper bound of the first bucket whose cumulative count
 * reaches the rank (bench/lib/stats' nearestRank, the one definition). kube-proxy's
 * network-programming buckets start at 0.25 s, so below that it says
 * "≤ 0.25 s"; the mean (sum / count) is exact.
 */
import { nearestRank } from '../lib/stats.js';

export interface Histogram {
  /** Cumulative counts by upper bound, ascending; the last bound is +Inf. */
  readonly buckets: readonly (readonly [number, number])[];
  readonly sum: number;
  readonly count: number;
}

function value(s: string): number {
  if (s === '+Inf') return Infinity;
  if (s === '-Inf') return -Infinity;
  return Number(s);
}

/** The unlabelled (but for `le`) histogram `name`, or null when the text has none. */
export function parseHistogram(text: string, name: string): Histogram | null {
  const buckets: [number, number][] = [];
  let sum: number | null = null;
  let count: number | null = null;
  for (const line of text.split('\n')) {
    if (!line.startsWith(name)) continue;
    const rest = line.slice(name.length);
    let m = /^_bucket\{le="([^"]+)"\}\s+(\S+)/.exec(rest);
    if (m) {
      buckets.push([value(m[1]!), value(m[2]!)]);
      continue;
    }
    m = /^_(sum|count)\s+(\S+)/.exec(rest);
    if (m) {
      if (m[1] === 'sum') sum = value(m[2]!);
      else count = value(m[2]!);
    }
  }
  if (sum === null || count === null || buckets.length === 0) return null;
  buckets.sort((a, b) => a[0] - b[0]);
  return { buckets, sum, count };
}

/** What happened between two scrapes of one histogram. @throws RangeError when the buckets differ or a count went down (a restart) */
export function histogramDiff(before: Histogram, after: Histogram): Histogram {
  if (before.buckets.length !== after.buckets.length || before.buckets.some(([le], i) => after.buckets[i]![0] !== le)) {
    throw new RangeError('histogramDiff: the two scrapes have different buckets');
  }
  if (after.count < before.count) throw new RangeError('histogramDiff: the count went down (the process restarted between the scrapes?)');
  return {
    buckets: after.buckets.map(([le, c], i) => [le, c - before.buckets[i]![1]] as const),
    sum: after.sum - before.sum,
    count: after.count - before.count,
  };
}

/** The upper bound of the bucket holding the p-th percentile (nearest rank); NaN for an empty histogram. */
export function histogramPercentileBound(h: Histogram, p: number): number {
  if (!(p >= 0 && p <= 100)) throw new RangeError(`p must be in 0..100, got ${p}`);
  if (h.count === 0) return NaN;
  const rank = nearestRank(h.count, p);
  for (const [le, c] of h.buckets) if (c >= rank) return le;
  return Infinity;
}

export interface HistogramSummary {
  readonly count: number;
  /** Seconds. */
  readonly mean: number;
  /** Upper bounds (seconds) of the buckets holding p50 and p99 (Infinity: above every finite bucket). */
  readonly p50AtMost: number;
  readonly p99AtMost: number;
  /** The largest finite bucket bound: what "above every bucket" means. */
  readonly topBound: number;
}

export function summarizeHistogram(h: Histogram): HistogramSummary {
  const finite = h.buckets.filter(([le]) => Number.isFinite(le));
  return {
    count: h.count, mean: h.count ? h.sum / h.count : NaN, p50AtMost: histogramPercentileBound(h, 50), p99AtMost: histogramPercentileBound(h, 99),
    topBound: finite.length ? finite[finite.length - 1]![0] : NaN,
  };
}
