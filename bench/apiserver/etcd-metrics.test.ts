import t from 'tap';
import { costOf, parseEtcdMetrics, sumMembers } from './etcd-metrics.js';

const text = (wal: [number, number], backend: [number, number], proposals: number) => [
  '# HELP etcd_disk_wal_fsync_duration_seconds The latency distributions of fsync called by WAL.',
  '# TYPE etcd_disk_wal_fsync_duration_seconds histogram',
  'etcd_disk_wal_fsync_duration_seconds_bucket{le="0.001"} 5',
  `etcd_disk_wal_fsync_duration_seconds_sum ${wal[0]}`,
  `etcd_disk_wal_fsync_duration_seconds_count ${wal[1]}`,
  `etcd_disk_backend_commit_duration_seconds_sum ${backend[0]}`,
  `etcd_disk_backend_commit_duration_seconds_count ${backend[1]}`,
  'etcd_server_proposals_committed_total_x 99',
  `etcd_server_proposals_committed_total ${proposals}`,
  'etcd_server_proposals_failed_total 0',
].join('\n');

t.test('parseEtcdMetrics: the sums and counts the bench uses, not their neighbours', async (t) => {
  t.same(parseEtcdMetrics(text([0.013924971999999999, 8], [0.008768972, 7], 8)), { walFsyncSeconds: 0.013924971999999999, walFsyncs: 8, backendCommitSeconds: 0.008768972, backendCommits: 7, proposalsCommitted: 8 });
  t.same(parseEtcdMetrics(`${text([1e-3, 1], [0, 0], 0)}\n`).walFsyncSeconds, 0.001, 'exponent notation');
  t.throws(() => parseEtcdMetrics('process_cpu_seconds_total 1'), /no etcd_disk_wal_fsync_duration_seconds/);
});

t.test('sumMembers and costOf: disk work summed over the members, proposals counted once; per operation', async (t) => {
  const before = sumMembers([parseEtcdMetrics(text([1, 100], [1, 10], 500)), parseEtcdMetrics(text([1, 100], [1, 10], 498))]);
  t.same(before, { walFsyncSeconds: 2, walFsyncs: 200, backendCommitSeconds: 2, backendCommits: 20, proposalsCommitted: 500 });
  const after = sumMembers([parseEtcdMetrics(text([1.5, 600], [1.2, 20], 1000)), parseEtcdMetrics(text([1.5, 600], [1.2, 20], 1000))]);
  const c = costOf(before, after, 500);
  t.equal(c.walFsyncsPerOp, 2, 'one fsync per write on each of two members');
  t.equal(c.proposalsPerOp, 1);
  t.ok(Math.abs(c.walFsyncMeanMs - 1) < 1e-9, 'mean fsync 1 ms');
  t.ok(Math.abs(c.backendCommitMeanMs - 20) < 1e-9);
  t.ok(Number.isNaN(costOf(before, before, 0).walFsyncsPerOp), 'no operations: no figure');
  t.ok(Number.isNaN(costOf(before, before, 10).walFsyncMeanMs), 'no fsync: no mean');
});
