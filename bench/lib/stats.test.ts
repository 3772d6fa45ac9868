import t from 'tap';
import { median, nearestRank, percentile, percentileOf, summarize } from './stats.js';

t.test('percentile: nearest rank, a value some sample really had', async (t) => {
  const xs = Array.from({ length: 100 }, (_, i) => i + 1); // 1..100
  t.equal(percentile(xs, 50), 50);
  t.equal(percentile(xs, 90), 90);
  t.equal(percentile(xs, 99), 99, 'p99 of 100 samples is the 99th, not the largest');
  t.equal(percentile(xs, 99.5), 100);
  t.equal(percentile(xs, 100), 100);
  t.equal(percentile(xs, 0), 1, 'p0 is the smallest');
  t.equal(percentile([5], 99), 5);
  t.equal(percentile([1, 2, 3], 50), 2);
  t.equal(percentile([1, 2, 3, 4], 50), 2, 'even count: the lower middle, not the mean of the two');
  t.equal(percentile([10, 20], 99), 20);
  const fifty = Array.from({ length: 50 }, (_, i) => i + 1);
  t.equal(percentile(fifty, 99), 50, 'p99 of 50 samples is the largest');
  t.equal(percentile(Array.from({ length: 5 }, (_, i) => i + 1), 90), 5, 'p90 of 5 is the 5th (rank ceil(4.5))');
  t.equal(percentile(Float64Array.from([1, 2, 3]), 50), 2, 'typed arrays too');
  t.ok(Number.isNaN(percentile([], 50)));
  t.throws(() => percentile(xs, 101), RangeError);
  t.throws(() => percentile(xs, -1), RangeError);
  t.throws(() => percentile(xs, NaN), RangeError);
  t.throws(() => percentile([], 101), RangeError, 'p is checked without samples too');
});

t.test('nearestRank: ceil(p/100 × n), at least 1', async (t) => {
  t.equal(nearestRank(100, 99), 99);
  t.equal(nearestRank(1000, 99), 990);
  t.equal(nearestRank(10, 0), 1);
  t.equal(nearestRank(10, 50), 5);
  t.equal(nearestRank(7, 50), 4);
  t.throws(() => nearestRank(0, 50), RangeError);
  t.throws(() => nearestRank(2.5, 50), RangeError);
});

t.test('percentileOf and median sort a copy', async (t) => {
  const xs = [30, 10, 20, 40];
  t.equal(percentileOf(xs, 75), 30);
  t.equal(median(xs), 20, 'the lower middle of 4');
  t.same(xs, [30, 10, 20, 40], 'the input is left alone');
  t.equal(median([30, 10, 20]), 20);
  t.equal(median([-1, -3, -2]), -2, 'numeric order, not string order');
  t.equal(median([100, 9, 20]), 20, 'numeric order, not string order');
  t.ok(Number.isNaN(median([])));
});

t.test('summarize: sorts a copy, mean over all samples', async (t) => {
  const xs = [3, 1, 4, 1, 5, 9, 2, 6];
  const s = summarize(xs);
  t.same(s, { n: 8, mean: 31 / 8, min: 1, p50: 3, p90: 9, p99: 9, max: 9 });
  t.same(xs, [3, 1, 4, 1, 5, 9, 2, 6], 'the input is left alone');
  const negative = summarize([-2, -0.5, 1]);
  t.equal(negative.min, -2);
  t.equal(negative.p50, -0.5);
  const none = summarize([]);
  t.equal(none.n, 0);
  t.ok([none.mean, none.min, none.p50, none.p90, none.p99, none.max].every(Number.isNaN));
});
