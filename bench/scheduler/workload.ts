/**
 * bench/scheduler/workload: what the scheduler bench writes and how it reads the outcome, after kube-scheduler's
 * scheduler_perf (test/integration/scheduler_perf, SchedulingBasic: createNodes, createPods, collectMetrics). Pure.
 *
 * - Nodes: scheduler_perf's node-default.yaml (pods 110, Ready), with cpu 16 and memory 64Gi instead of 4 and
 *   32Gi, so that 10,000 Pods fit 100 Nodes (110 × 100m = 11 cpu, 110 × 500Mi = 55Gi); capacity and allocatable.
 * - Pods: pod-default.yaml (one container, port 80, requests = limits = 100m cpu, 500Mi memory).
 * - Throughput: scheduler_perf's throughputCollector, one sample a second of the Pods bound in that second, from
 *   the first create until the last Pod is bound; the report gives their average and percentiles, as the
 *   SchedulingThroughput metric does.
 * - The arguments.
 */
import { FlagError } from '../../agent/src/cli/flags.js';
import { benchFlags, int, ints } from '../lib/args.js';

export const NAMESPACE = 'sched-bench';

export function nodeObject(i: number): Record<string, unknown> {
  const name = `sched-node-${String(i).padStart(5, '0')}`;
  const resources = { pods: '110', cpu: '16', memory: '64Gi', 'ephemeral-storage': '100Gi' };
  return {
    apiVersion: 'v1', kind: 'Node',
    metadata: { name, labels: { 'kubernetes.io/hostname': name, 'topology.kubernetes.io/zone': `zone-${i % 3}` } },
    spec: {},
    status: { capacity: resources, allocatable: resources, conditions: [{ type: 'Ready', status: 'True', reason: 'KubeletReady', message: 'bench node' }], phase: 'Running' },
  };
}

export const podName = (i: number) => `pod-${String(i).padStart(6, '0')}`;

export function podObject(i: number): Record<string, unknown> {
  const amounts = { cpu: '100m', memory: '500Mi' };
  return {
    apiVersion: 'v1', kind: 'Pod',
    metadata: { name: podName(i), namespace: NAMESPACE },
    spec: { containers: [{ name: 'pause', image: 'registry.k8s.io/pause:3.10', ports: [{ containerPort: 80 }], resources: { limits: amounts, requests: amounts } }] },
  };
}

/**
 * The per-second samples of Pods bound (throughputCollector): `boundAt` are the times (ms) Pods were seen bound,
 * `t0` the first create. Whole seconds from t0; the last, partial second is scaled to a rate.
 */
export function throughputSamples(t0: number, boundAt: readonly number[]): number[] {
  if (!boundAt.length) return [];
  const end = Math.max(...boundAt);
  const seconds = Math.max(1, Math.ceil((end - t0) / 1000));
  const counts = new Array<number>(seconds).fill(0);
  for (const t of boundAt) counts[Math.min(seconds - 1, Math.max(0, Math.floor((t - t0) / 1000)))]!++;
  const lastLen = (end - t0) / 1000 - (seconds - 1);
  if (lastLen > 0 && lastLen < 1) counts[seconds - 1] = counts[seconds - 1]! / Math.max(lastLen, 0.1);
  return counts;
}

export interface SchedArgs {
  readonly nodes: readonly number[];
  readonly pods: number;
  readonly clients: number;
  readonly cyclePods: number;
  readonly out: string | null;
  readonly quick: boolean;
}

export const USAGE = 'usage: npm run bench:scheduler -- [--quick] [--nodes 100,1000] [--pods 10000] [--clients 16] [--cycle-pods 2000] [--out FILE]';

export function parseSchedArgs(argv: readonly string[]): SchedArgs {
  const { flags, quick } = benchFlags(argv, ['nodes', 'pods', 'clients', 'cycle-pods', 'out'], USAGE);
  const nodes = flags.has('nodes') ? ints('nodes', flags.get('nodes')!, 1, 5000) : quick ? [20] : [100, 1000];
  const pods = flags.has('pods') ? int('pods', flags.get('pods')!, 1, 100_000) : quick ? 500 : 10_000;
  for (const n of nodes) if (n * 110 < pods) throw new FlagError(`--pods ${pods} do not fit ${n} nodes of 110 pods each`);
  return {
    nodes, pods,
    clients: flags.has('clients') ? int('clients', flags.get('clients')!, 1, 256) : 16,
    cyclePods: flags.has('cycle-pods') ? int('cycle-pods', flags.get('cycle-pods')!, 1, 100_000) : quick ? 200 : 2000,
    out: flags.get('out') ?? null,
    quick,
  };
}
