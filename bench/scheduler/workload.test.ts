/**
 * The scheduler bench's pure parts: its arguments, scheduler_perf's templates as it writes them, the per-second
 * throughput samples, and the report's tables.
 */
import t from 'tap';
import { FlagError } from '../../agent/src/cli/flags.js';
import { summarize } from '../lib/stats.js';
import { formatReport, REFERENCE_PODS_PER_SEC, type ApiFigures, type SchedCase } from './report.js';
import { nodeObject, parseSchedArgs, podObject, throughputSamples } from './workload.js';

t.test('arguments: defaults, --quick, and what cannot fit is refused', async (t) => {
  t.match(parseSchedArgs([]), { nodes: [100, 1000], pods: 10_000, clients: 16, cyclePods: 2000, out: null, quick: false });
  t.match(parseSchedArgs(['--quick']), { nodes: [20], pods: 500, quick: true });
  t.match(parseSchedArgs(['--nodes', '5', '--pods', '50', '--cycle-pods', '20']), { nodes: [5], pods: 50, cyclePods: 20 });
  t.throws(() => parseSchedArgs(['--nodes', '10', '--pods', '2000']), FlagError, '10 nodes of 110 pods hold 1,100');
  t.throws(() => parseSchedArgs(['--pods', 'many']), FlagError);
  t.throws(() => parseSchedArgs(['extra']), FlagError);
});

t.test('the templates: node-default (larger) and pod-default', async (t) => {
  const n = nodeObject(7) as { metadata: { name: string }; status: { allocatable: Record<string, string>; conditions: { type: string; status: string }[] } };
  t.equal(n.metadata.name, 'sched-node-00007');
  t.same(n.status.allocatable, { pods: '110', cpu: '16', memory: '64Gi', 'ephemeral-storage': '100Gi' });
  t.match(n.status.conditions, [{ type: 'Ready', status: 'True' }]);
  const p = podObject(3) as { metadata: { name: string }; spec: { containers: { resources: unknown; ports: unknown }[] } };
  t.equal(p.metadata.name, 'pod-000003');
  t.same(p.spec.containers[0]!.resources, { limits: { cpu: '100m', memory: '500Mi' }, requests: { cpu: '100m', memory: '500Mi' } });
  t.same(p.spec.containers[0]!.ports, [{ containerPort: 80 }]);
});

t.test('throughput samples: Pods bound in each whole second from the first create; the last partial second as a rate', async (t) => {
  t.same(throughputSamples(0, []), []);
  t.same(throughputSamples(1000, [1100, 1200, 1900, 2100, 2500, 3000]), [3, 3], 'two whole seconds, the last binding in the last');
  t.same(throughputSamples(0, [100, 200, 1100, 1500]), [2, 4], 'the last 0.5 s holds 2 Pods: 4/s');
});

t.test('the report: the figures in the table, the ratio to the reference, errors listed', async (t) => {
  const phase = (p: 'live' | 'backlog', perSec: number): ApiFigures => ({
    phase: p, created: 2000, createErrors: 0, firstError: null, createPerSec: 444, bound: 2000, wallMs: 8475, podsPerSec: perSec,
    samples: summarize([207, 518, 100]), latencyMs: summarize(p === 'live' ? [3582, 3987] : []), serverCpuMsPerPod: 2.79, startMs: p === 'live' ? null : 1850,
  });
  const c: SchedCase = {
    nodes: 100, pods: 2000, clients: 16, live: phase('live', 236), backlog: phase('backlog', 340),
    nodesPerCycle: 100, cycle: { pods: 2000, perSec: 1730, usPerPod: summarize([240, 6700]) },
  };
  const meta = { date: '2026-12-05T00:00:00Z', kernel: 'k', cpus: 2, cpuModel: 'AMD EPYC', memTotalMiB: 1, node: 'v20', loadavgBefore: [0], loadavgAfter: [0] };
  const out = formatReport({ meta, cases: [c, { ...c, backlog: { ...phase('backlog', 340), createErrors: 3, firstError: '500 boom' } }] });
  t.match(out, /\| 100 \| 2,000 \| 2,000 \| 444 \| 236 \| 207 \/ 518 \/ 518 \| 3,582 \/ 3,987 \| 2\.79 \|/, 'the live row');
  t.match(out, new RegExp(`\\| 100 \\| 2,000 \\| 2,000 \\| 340 \\| 207 / 518 / 518 \\| 1,850 \\| 2\\.79 \\| ${(REFERENCE_PODS_PER_SEC / 340).toFixed(1)}× inside \\|`), 'the backlog row, beside the reference');
  t.match(out, /\| 100 \| 100 \| 2,000 \| 1,730 \| 0\.24 \/ 6\.7 \| 2\.5× over \|/);
  t.match(out, /100 nodes, backlog: 3 creates failed, the first: 500 boom/);
  t.match(out, /SchedulingBasic\/5000Nodes_10000Pods/);
});
