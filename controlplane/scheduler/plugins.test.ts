/**
 * The default plugins case by case against upstream's plugin tests (pkg/scheduler/framework/plugins/*_test.go):
 * the same inputs, the filter reasons and the scores upstream's tests expect. Each case names the upstream test.
 */
import t from 'tap';
import type { KObject } from '../store/types.js';
import { fitErrorMessage, nodeInfo, schedule, type NodeInfo } from './framework.js';
import { balancedAllocation, DEFAULT_PLUGINS, insufficient, leastAllocated, nodeAffinity, nodePorts, REASON, taintToleration } from './plugins.js';
import { podAmounts } from '../quota/usage.js';

type O = Record<string, unknown>;
const node = (name: string, allocatable: O, extra: O = {}): KObject => ({
  apiVersion: 'v1', kind: 'Node', metadata: { name, labels: (extra['labels'] as O) ?? {} }, spec: (extra['spec'] as O) ?? {},
  status: { allocatable, conditions: [{ type: 'Ready', status: 'True' }] },
});
const container = (cpu?: string, memory?: string, extra: O = {}) => ({ name: 'c', image: 'i', resources: { requests: { ...(cpu ? { cpu } : {}), ...(memory ? { memory } : {}) } }, ...extra });
const pod = (containers: O[], extra: O = {}, nodeName = ''): KObject => ({ apiVersion: 'v1', kind: 'Pod', metadata: { name: 'p', namespace: 'default' }, spec: { containers, ...(nodeName ? { nodeName } : {}), ...extra } });
/** cpuAndMemory of least_allocated_test.go: two containers, 1000m + 2000m cpu and 2000 + 3000 bytes. */
const cpuAndMemory = () => pod([container('1000m', '2000'), container('2000m', '3000')]);
const info = (n: KObject, pods: KObject[] = []): NodeInfo => nodeInfo(n, pods);

t.test('NodeResourcesFit LeastAllocated (least_allocated_test.go "nothing scheduled, resources requested, differently sized machines")', async (t) => {
  t.equal(leastAllocated(cpuAndMemory(), info(node('machine1', { cpu: '4000m', memory: '10000' }))), 37);
  t.equal(leastAllocated(cpuAndMemory(), info(node('machine2', { cpu: '6000m', memory: '10000' }))), 50);
  // "nothing scheduled, nothing requested": a Pod with no containers requests nothing.
  t.equal(leastAllocated(pod([]), info(node('machine1', { cpu: '4000m', memory: '10000' }))), 100);
  // The node's requests count (3000m and 5000 in use): cpu (10000 − 3000) × 100 / 10000 = 70, memory 75, mean 72.
  t.equal(leastAllocated(pod([]), info(node('machine1', { cpu: '10000m', memory: '20000' }), [pod([container('1000m', '2000'), container('2000m', '3000')], {}, 'machine1')])), 72);
});

t.test('NodeResourcesBalancedAllocation (balanced_allocation_test.go "nothing scheduled, resources requested, differently sized nodes")', async (t) => {
  t.equal(balancedAllocation(cpuAndMemory(), info(node('node1', { cpu: '4000m', memory: '10000' }))), 87);
  t.equal(balancedAllocation(cpuAndMemory(), info(node('node2', { cpu: '6000m', memory: '10000' }))), 100);
  t.equal(balancedAllocation(pod([]), info(node('node1', { cpu: '4000m', memory: '10000' }))), 100, '"nothing scheduled, nothing requested"');
});

t.test('NodeResourcesFit Filter (fit_test.go TestEnoughRequests)', async (t) => {
  const n = node('n', { cpu: '10', memory: '20', pods: '32', 'example.com/aaa': '5' });
  const used = pod([container('5', '19')], {}, 'n');
  const fit = (p: KObject, on: KObject[] = [used]) => insufficient(podAmounts((p['spec'] as O), 'requests'), info(n, on));
  t.same(fit(pod([])), [], '"no resources requested always fits"');
  t.same(fit(pod([container('1', '1')])), [], '5 + 1 cpu and 19 + 1 memory fit exactly');
  t.same(fit(pod([container('8', '1')])), [REASON.insufficient('cpu')], '"too many resources fails" on cpu');
  t.same(fit(pod([container('6', '2')])), [REASON.insufficient('cpu'), REASON.insufficient('memory')], 'both counted');
  // "init container fits because it's the max, not sum, of containers and init containers"
  t.same(fit(pod([container('1', '1')], { initContainers: [container('3', '1'), container('2', '1')] })), []);
  t.same(fit(pod([container('1', '1')], { initContainers: [container('6', '1')] })), [REASON.insufficient('cpu')], '"too many resources fails due to init container cpu"');
  t.same(fit(pod([{ name: 'c', image: 'i', resources: { requests: { 'example.com/aaa': '6' } } }])), [REASON.insufficient('example.com/aaa')], '"extended resource capacity enforced"');
  t.same(fit(pod([]), Array.from({ length: 32 }, () => pod([], {}, 'n'))), [REASON.tooManyPods], '"even without specified resources, predicate fails when there\'s no space for additional pod"');
  t.same(insufficient(podAmounts(pod([container('100', '100')])['spec'] as O, 'requests'), info(node('old', {}))), [], 'a Node that reports no allocatable is not fitted');
});

t.test('TaintToleration (taint_toleration_test.go)', async (t) => {
  const tainted = node('n', {}, { spec: { taints: [{ key: 'dedicated', value: 'user1', effect: 'NoSchedule' }] } });
  t.same(taintToleration.filter!(pod([]), info(tainted), new Map()), ['node(s) had untolerated taint {dedicated: user1}'], '"A pod having no tolerations can\'t be scheduled onto a node with nonempty taints"');
  t.equal(taintToleration.filter!(pod([], { tolerations: [{ key: 'dedicated', value: 'user1', effect: 'NoSchedule' }] }), info(tainted), new Map()), null, '"A pod which can be scheduled on a dedicated node assigned to user1 with effect NoSchedule"');
  t.equal(taintToleration.filter!(pod([], { tolerations: [{ key: 'dedicated', operator: 'Exists' }] }), info(tainted), new Map()), null, 'Exists with no effect tolerates every effect');
  // Score: "the more intolerable taints a node has, the lower score it gets" (PreferNoSchedule).
  const prefer = (n: string, keys: string[]) => info(node(n, {}, { spec: { taints: keys.map((key) => ({ key, value: 'bar', effect: 'PreferNoSchedule' })) } }));
  const nodes = [prefer('nodeA', []), prefer('nodeB', ['foo']), prefer('nodeC', ['foo', 'bar'])];
  const p = pod([], { tolerations: [{ key: 'cpu-type', operator: 'Equal', value: 'arm64', effect: 'PreferNoSchedule' }] });
  t.same(taintToleration.normalize!(nodes.map((n) => taintToleration.score!(p, n, new Map()))), [100, 50, 0]);
  const tolerant = pod([], { tolerations: [{ key: 'foo', operator: 'Equal', value: 'bar', effect: 'PreferNoSchedule' }] });
  t.same(taintToleration.normalize!(nodes.map((n) => taintToleration.score!(tolerant, n, new Map()))), [100, 100, 0], 'a tolerated taint does not count');
});

t.test('NodeAffinity score (node_affinity_test.go TestNodeAffinityPriority "only machine1 matches the preferred scheduling requirements of pod")', async (t) => {
  const affinity = { nodeAffinity: { preferredDuringSchedulingIgnoredDuringExecution: [{ weight: 2, preference: { matchExpressions: [{ key: 'foo', operator: 'In', values: ['bar'] }] } }] } };
  const nodes = [info(node('machine1', {}, { labels: { foo: 'bar' } })), info(node('machine2', {}, { labels: { key: 'value' } })), info(node('machine3', {}, { labels: { az: 'az1' } }))];
  const p = pod([], { affinity });
  t.same(nodeAffinity.normalize!(nodes.map((n) => nodeAffinity.score!(p, n, new Map()))), [100, 0, 0]);
  t.same(nodeAffinity.filter!(pod([], { nodeSelector: { foo: 'bar' } }), nodes[1]!, new Map()), [REASON.affinity]);
});

t.test('NodePorts (node_ports_test.go TestNodePorts)', async (t) => {
  const hp = (port: number, protocol = 'TCP', hostIP = '') => pod([{ name: 'c', image: 'i', ports: [{ containerPort: port, hostPort: port, protocol, ...(hostIP ? { hostIP } : {}) }] }], {}, 'n');
  const run = (want: KObject, existing: KObject[]) => {
    const state = new Map();
    nodePorts.preFilter!(want, state, []);
    return nodePorts.filter!(want, info(node('n', {}), existing), state);
  };
  t.equal(run(hp(8080), []), null, '"nothing running"');
  t.equal(run(hp(8080, 'UDP'), [hp(8080, 'TCP')]), null, '"other protocol"');
  t.same(run(hp(8080), [hp(8080)]), [REASON.ports], '"same port"');
  t.equal(run(hp(8080, 'TCP', '127.0.0.1'), [hp(8080, 'TCP', '127.0.0.2')]), null, '"second ip"');
  t.same(run(hp(8001, 'TCP', '127.0.0.1'), [hp(8001, 'TCP', '0.0.0.0')]), [REASON.ports], '"first ip but 0.0.0.0 in use"');
});

t.test('a cycle: the filters\' reasons counted in upstream\'s FitError words; the scores pick the emptier node', async (t) => {
  const big = pod([container('3', '1Gi')]);
  const nodes = [
    info(node('a', { cpu: '2', memory: '4Gi', pods: '110' })),
    info(node('b', { cpu: '4', memory: '4Gi', pods: '110' }), [pod([container('2', '1Gi')], {}, 'b')]),
    info(node('c', { cpu: '4', memory: '4Gi', pods: '110' }, { spec: { unschedulable: true } })),
  ];
  const d = schedule(big, nodes, DEFAULT_PLUGINS);
  t.equal(d.node, null);
  if (d.node === null) t.equal(fitErrorMessage(d.nodes, d.reasons), '0/3 nodes are available: 1 node(s) were unschedulable, 2 Insufficient cpu.');
  const small = pod([container('500m', '256Mi')]);
  const ok = schedule(small, [...nodes, info(node('d', { cpu: '4', memory: '4Gi', pods: '110' }))], DEFAULT_PLUGINS);
  t.equal(ok.node, 'd', 'the empty 4-cpu node outscores the 2-cpu one and the busy one');
});

t.test('queueing hints (noderesources/fit_test.go TestFitScore isSchedulableAfter*, nodeports, tainttoleration, nodeaffinity, nodeunschedulable plugin tests)', async (t) => {
  const big = pod([container('3', '1Gi')]);
  const fit = DEFAULT_PLUGINS.find((p) => p.name === 'NodeResourcesFit')!.hints!;
  t.equal(fit.node!(big, null, node('n', { cpu: '4', memory: '8Gi' })), true, 'a Node that can hold it: Queue');
  t.equal(fit.node!(big, null, node('n', { cpu: '2', memory: '8Gi' })), false, 'a Node too small for it even empty: QueueSkip');
  t.equal(fit.assignedPod!(big, pod([container('1')], {}, 'n'), null), true, 'a bound Pod went: Queue');
  t.equal(fit.assignedPod!(big, null, pod([container('1')], {}, 'n')), false, 'a Pod bound: QueueSkip');
  const withPort = pod([container('1', undefined, { ports: [{ containerPort: 80, hostPort: 8080 }] })]);
  t.equal(nodePorts.hints!.assignedPod!(withPort, pod([container('1', undefined, { ports: [{ containerPort: 80, hostPort: 8080 }] })], {}, 'n'), null), true, 'the Pod holding its port went: Queue');
  t.equal(nodePorts.hints!.assignedPod!(withPort, pod([container('1', undefined, { ports: [{ containerPort: 80, hostPort: 9090 }] })], {}, 'n'), null), false, 'another port freed: QueueSkip');
  const tainted = node('n', {}, { spec: { taints: [{ key: 'k', value: 'v', effect: 'NoSchedule' }] } });
  t.equal(taintToleration.hints!.node!(pod([]), null, tainted), false, 'still an untolerated taint: QueueSkip');
  t.equal(taintToleration.hints!.node!(pod([]), tainted, node('n', {})), true, 'the taint gone: Queue');
  const selecting = pod([], { nodeSelector: { role: 'edge' } });
  t.equal(nodeAffinity.hints!.node!(selecting, null, node('n', {}, { labels: { role: 'core' } })), false);
  t.equal(nodeAffinity.hints!.node!(selecting, null, node('n', {}, { labels: { role: 'edge' } })), true);
});
