/**
 * bench/scheduler/report: the scheduler bench's results and the tables it prints, beside kube-scheduler's own
 * figure. Pure.
 *
 * Reference: scheduler_perf's SchedulingBasic/5000Nodes_10000Pods (test/integration/scheduler_perf/misc/
 * performance-config.yaml): 5,000 fake Nodes, 1,000 Pods placed first, then 10,000 Pods measured, default plugins;
 * its threshold, the throughput below which SIG-scheduling's CI fails the run, is 680 Pods/s (the figures its
 * perf-dash shows are above it). Measured there on CI machines of many cores, with the API server in the same
 * process (no network, no TLS), the filters running 16 Nodes at a time (parallelism 16), and the bindings sent
 * asynchronously; here one Node.js event loop runs the API server, the store, every controller and the scheduler,
 * on 2 cores shared with the client that creates the Pods.
 * A ratio "N× inside" is reference / nodenet, as in every bench's report.
 */
import type { MachineMeta } from '../lib/machine.js';
import { ms, ratio, table, thousands } from '../lib/report.js';
import type { Summary } from '../lib/stats.js';

export const REFERENCE_PODS_PER_SEC = 680;
export const REFERENCE = 'scheduler_perf SchedulingBasic/5000Nodes_10000Pods threshold (kubernetes test/integration/scheduler_perf/misc/performance-config.yaml)';

/** One phase's figures through the API. */
export interface ApiFigures {
  /** live: scheduled while created; backlog: every Pod created first, then scheduled. */
  readonly phase: 'live' | 'backlog';
  /** Pods created (201) and their creation rate over the creating phase. */
  readonly created: number;
  readonly createErrors: number;
  readonly firstError: string | null;
  readonly createPerSec: number;
  /** Pods seen bound through the watch. */
  readonly bound: number;
  /** live: first create → last binding; backlog: first binding → last. */
  readonly wallMs: number;
  /** bound / wall time. */
  readonly podsPerSec: number;
  /** The per-second samples (throughputCollector) over the same time. */
  readonly samples: Summary;
  /** live: create sent → bound seen in the watch, per Pod (none for backlog). */
  readonly latencyMs: Summary;
  /** The server's CPU (user + system) per Pod, from the first create to the last binding. */
  readonly serverCpuMsPerPod: number;
  /** backlog: the Lease let go → the first binding (leader election's retry period and the scheduler's start). */
  readonly startMs: number | null;
}

export interface SchedCase {
  readonly nodes: number;
  readonly pods: number;
  readonly clients: number;
  readonly live: ApiFigures;
  readonly backlog: ApiFigures;
  /** Nodes the filters ran on per cycle (percentageOfNodesToScore), from the in-process measure. */
  readonly nodesPerCycle: number;
  /** The scheduling cycle alone, in this process over the same Nodes: the framework's cost without the API. */
  readonly cycle: { readonly pods: number; readonly perSec: number; readonly usPerPod: Summary };
}

export interface SchedResult {
  readonly meta: MachineMeta;
  readonly cases: readonly SchedCase[];
}

export function formatReport(r: SchedResult): string {
  const live = r.cases.map((c) => [
    thousands(c.nodes), thousands(c.pods), thousands(c.live.bound), thousands(c.live.createPerSec), thousands(c.live.podsPerSec),
    `${thousands(c.live.samples.p50)} / ${thousands(c.live.samples.p90)} / ${thousands(c.live.samples.p99)}`,
    `${ms(c.live.latencyMs.p50)} / ${ms(c.live.latencyMs.p99)}`, c.live.serverCpuMsPerPod.toFixed(2),
  ]);
  const backlog = r.cases.map((c) => [
    thousands(c.nodes), thousands(c.pods), thousands(c.backlog.bound), thousands(c.backlog.podsPerSec),
    `${thousands(c.backlog.samples.p50)} / ${thousands(c.backlog.samples.p90)} / ${thousands(c.backlog.samples.p99)}`,
    ms(c.backlog.startMs ?? NaN), c.backlog.serverCpuMsPerPod.toFixed(2), ratio(REFERENCE_PODS_PER_SEC, c.backlog.podsPerSec),
  ]);
  const cycles = r.cases.map((c) => [
    thousands(c.nodes), thousands(c.nodesPerCycle), thousands(c.cycle.pods), thousands(c.cycle.perSec),
    `${ms(c.cycle.usPerPod.p50 / 1000)} / ${ms(c.cycle.usPerPod.p99 / 1000)}`, ratio(REFERENCE_PODS_PER_SEC, c.cycle.perSec),
  ]);
  const errors = r.cases.flatMap((c) => [c.live, c.backlog].filter((p) => p.createErrors).map((p) => `- ${c.nodes} nodes, ${p.phase}: ${p.createErrors} creates failed, the first: ${p.firstError}`));
  return [
    `## Scheduler: Pods from creation to binding (${r.meta.cpus} cores, ${r.meta.cpuModel}, ${r.meta.date.slice(0, 10)})`,
    '',
    'Each phase on a fresh control plane (SQLite) in a process of its own, its Nodes posted first; a watch sees each',
    `Pod bound. ${r.cases[0]?.clients ?? 0} concurrent clients create the Pods. The samples are Pods bound per second (scheduler_perf's`,
    'throughput collector).',
    '',
    '### Scheduled while created (first create → last binding)',
    '',
    table(['Nodes', 'Pods', 'Bound', 'Created/s', 'Scheduled/s', 'Samples p50 / p90 / p99', 'Create → bound p50 / p99 ms', 'Server CPU ms/Pod'], live, 0),
    '',
    '### A backlog drained (every Pod created first, then the scheduler let go: first binding → last)',
    '',
    table(['Nodes', 'Pods', 'Bound', 'Scheduled/s', 'Samples p50 / p90 / p99', 'Lease let go → first binding ms', 'Server CPU ms/Pod', `vs ${REFERENCE_PODS_PER_SEC}/s`], backlog, 0),
    '',
    '### The scheduling cycle alone (the framework in this process, no API)',
    '',
    table(['Nodes', 'Nodes filtered per cycle', 'Pods', 'Cycles/s', 'Cycle p50 / p99 ms', `vs ${REFERENCE_PODS_PER_SEC}/s`], cycles, 0),
    '',
    `Reference: ${REFERENCE_PODS_PER_SEC} Pods/s, ${REFERENCE}.`,
    ...(errors.length ? ['', ...errors] : []),
  ].join('\n');
}
