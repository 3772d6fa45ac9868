/**
 * bench/apiserver/etcd-metrics: what the bench reads from etcd's own
 * Prometheus metrics (`GET /metrics` on a member's client URL), parsed.
 * Pure: the caller fetches the text.
 *
 * - `etcd_disk_wal_fsync_duration_seconds` (sum, count): every fsync of a
 *   member's write-ahead log, the durable step of each raft Ready batch;
 * - `etcd_disk_backend_commit_duration_seconds` (sum, count): bbolt commits
 *   (batched, every 100 ms or 10,000 writes by default; not on a write's path);
 * - `etcd_server_proposals_committed_total`: raft entries committed, the
 *   same on every member that keeps up (the bench takes the largest).
 * A write's cost is read from the difference of two snapshots, summed over
 * the members.
 */

export interface EtcdCounters {
  readonly walFsyncSeconds: number;
  readonly walFsyncs: number;
  readonly backendCommitSeconds: number;
  readonly backendCommits: number;
  readonly proposalsCommitted: number;
}

const ZERO: EtcdCounters = { walFsyncSeconds: 0, walFsyncs: 0, backendCommitSeconds: 0, backendCommits: 0, proposalsCommitted: 0 };

/** One member's counters from its /metrics text. @throws TypeError when the WAL fsync histogram is missing (not an etcd). */
export function parseEtcdMetrics(text: string): EtcdCounters {
  const value = (name: string): number | undefined => {
    const m = new RegExp(`^${name}(?:\\{[^}]*\\})? ([0-9.eE+-]+)$`, 'm').exec(text);
    return m ? Number(m[1]) : undefined;
  };
  const walSum = value('etcd_disk_wal_fsync_duration_seconds_sum');
  const walCount = value('etcd_disk_wal_fsync_duration_seconds_count');
  if (walSum === undefined || walCount === undefined) throw new TypeError('no etcd_disk_wal_fsync_duration_seconds in the metrics: is this an etcd member?');
  return {
    walFsyncSeconds: walSum,
    walFsyncs: walCount,
    backendCommitSeconds: value('etcd_disk_backend_commit_duration_seconds_sum') ?? 0,
    backendCommits: value('etcd_disk_backend_commit_duration_seconds_count') ?? 0,
    proposalsCommitted: value('etcd_server_proposals_committed_total') ?? 0,
  };
}

/** The members together: disk figures summed, proposals the largest member's. */
export function sumMembers(members: readonly EtcdCounters[]): EtcdCounters {
  return members.reduce((a, m) => ({
    walFsyncSeconds: a.walFsyncSeconds + m.walFsyncSeconds, walFsyncs: a.walFsyncs + m.walFsyncs,
    backendCommitSeconds: a.backendCommitSeconds + m.backendCommitSeconds, backendCommits: a.backendCommits + m.backendCommits,
    proposalsCommitted: Math.max(a.proposalsCommitted, m.proposalsCommitted),
  }), ZERO);
}

/** Per operation, between two snapshots of the members together. */
export interface EtcdCost {
  /** WAL fsyncs of all members per operation. */
  readonly walFsyncsPerOp: number;
  /** The mean WAL fsync (ms), over all members. */
  readonly walFsyncMeanMs: number;
  /** Raft entries per operation: below 1 when etcd batched several operations into one entry's Ready. */
  readonly proposalsPerOp: number;
  /** The mean bbolt commit (ms). */
  readonly backendCommitMeanMs: number;
}

export function costOf(before: EtcdCounters, after: EtcdCounters, ops: number): EtcdCost {
  const fsyncs = after.walFsyncs - before.walFsyncs;
  const commits = after.backendCommits - before.backendCommits;
  const per = (x: number) => (ops > 0 ? x / ops : NaN);
  return {
    walFsyncsPerOp: per(fsyncs),
    walFsyncMeanMs: fsyncs > 0 ? ((after.walFsyncSeconds - before.walFsyncSeconds) * 1000) / fsyncs : NaN,
    proposalsPerOp: per(after.proposalsCommitted - before.proposalsCommitted),
    backendCommitMeanMs: commits > 0 ? ((after.backendCommitSeconds - before.backendCommitSeconds) * 1000) / commits : NaN,
  };
}
