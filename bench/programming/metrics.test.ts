import t from 'tap';
import { histogramDiff, histogramPercentileBound, parseHistogram, summarizeHistogram } from './metrics.js';

const NAME = 'kubeproxy_network_programming_duration_seconds';
const scrape = (counts: [string, number][], sum: number, count: number) => [
  '# HELP kubeproxy_sync_proxy_rules_duration_seconds SyncProxyRules latency in seconds',
  'kubeproxy_sync_proxy_rules_duration_seconds_bucket{le="0.001"} 7',
  `# HELP ${NAME} In Cluster Network Programming Latency in seconds`,
  `# TYPE ${NAME} histogram`,
  ...counts.map(([le, c]) => `${NAME}_bucket{le="${le}"} ${c}`),
  `${NAME}_sum ${sum}`,
  `${NAME}_count ${count}`,
  'kubeproxy_sync_proxy_rules_last_timestamp_seconds 1796140520.7',
].join('\n');

const before = scrape([['0.25', 3], ['0.5', 3], ['1', 4], ['+Inf', 4]], 1.5, 4);
const after = scrape([['0.25', 50], ['0.5', 52], ['1', 53], ['+Inf', 54]], 9.5, 54);

t.test('parseHistogram reads one histogram, buckets ascending, +Inf last', async (t) => {
  t.same(parseHistogram(before, NAME), { buckets: [[0.25, 3], [0.5, 3], [1, 4], [Infinity, 4]], sum: 1.5, count: 4 });
  t.equal(parseHistogram(before, 'kubeproxy_missing_seconds'), null);
  t.equal(parseHistogram(`${NAME}_sum 1\n`, NAME), null, 'no buckets, no histogram');
});

t.test('the difference of two scrapes is what happened between them', async (t) => {
  const d = histogramDiff(parseHistogram(before, NAME)!, parseHistogram(after, NAME)!);
  t.same(d, { buckets: [[0.25, 47], [0.5, 49], [1, 49], [Infinity, 50]], sum: 8, count: 50 });
  t.same(summarizeHistogram(d), { count: 50, mean: 0.16, p50AtMost: 0.25, p99AtMost: Infinity, topBound: 1 }, 'the 50th of 50 is above every finite bucket');
  t.throws(() => histogramDiff(parseHistogram(after, NAME)!, parseHistogram(before, NAME)!), /went down/);
  t.throws(() => histogramDiff(parseHistogram(before, NAME)!, { buckets: [[1, 0]], sum: 0, count: 0 }), /different buckets/);
});

t.test('percentile bounds are nearest-rank over the buckets', async (t) => {
  const h = { buckets: [[0.25, 98], [0.5, 99], [1, 99], [Infinity, 100]] as [number, number][], sum: 1, count: 100 };
  t.equal(histogramPercentileBound(h, 50), 0.25);
  t.equal(histogramPercentileBound(h, 99), 0.5, 'the 99th sample is in the second bucket');
  t.equal(histogramPercentileBound(h, 100), Infinity);
  t.ok(Number.isNaN(histogramPercentileBound({ buckets: [[Infinity, 0]], sum: 0, count: 0 }, 50)));
  t.ok(Number.isNaN(summarizeHistogram({ buckets: [[Infinity, 0]], sum: 0, count: 0 }).mean));
  t.throws(() => histogramPercentileBound(h, 101), RangeError);
});
