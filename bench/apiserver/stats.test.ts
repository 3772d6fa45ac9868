import t from 'tap';
import { median, percentile, summarize } from './stats.js';

t.test('percentile: nearest rank, a value some sample really had', async (t) => {
  const xs = Array.from({ length: 100 }, (_, i) => i + 1); // 1..100
  t.equal(percentile(xs, 50), 50);
  t.equal(percentile(xs, 99), 99);
  t.equal(percentile(xs, 100), 100);
  t.equal(percentile(xs, 0), 1, 'p0 is the smallest');
  t.equal(percentile([5], 99), 5);
  t.equal(percentile([1, 2, 3], 50), 2);
  t.equal(percentile([1, 2, 3, 4], 50), 2, 'even count: the lower middle');
  t.equal(percentile([10, 20], 99), 20);
  t.ok(Number.isNaN(percentile([], 50)));
  t.throws(() => percentile(xs, 101), RangeError);
  t.throws(() => percentile(xs, NaN), RangeError);
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
  t.ok([none.mean, none.min, none.p50, none.p99, none.max].every(Number.isNaN));
  t.equal(median([30, 10, 20]), 20);
});
