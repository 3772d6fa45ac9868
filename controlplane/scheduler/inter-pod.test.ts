/**
 * InterPodAffinity and PodTopologySpread against upstream's plugin tests
 * (interpodaffinity/filtering_test.go, scoring_test.go; podtopologyspread/filtering_test.go, scoring_test.go):
 * the same placements, the same verdicts. Each case names the upstream one it follows.
 */
import t from 'tap';
import type { KObject } from '../store/types.js';
import { nodeInfos, schedule, type NodeInfo, type Plugin } from './framework.js';
import { interPodAffinity, podTopologySpread, REASONS } from './inter-pod.js';

type O = Record<string, unknown>;
const node = (name: string, labels: Record<string, string>): KObject => ({ apiVersion: 'v1', kind: 'Node', metadata: { name, labels: { 'kubernetes.io/hostname': name, ...labels } }, spec: {}, status: { conditions: [{ type: 'Ready', status: 'True' }] } });
const pod = (name: string, labels: Record<string, string>, spec: O = {}, nodeName = '', namespace = 'default'): KObject =>
  ({ apiVersion: 'v1', kind: 'Pod', metadata: { name, namespace, labels }, spec: { containers: [{ name: 'c', image: 'i' }], ...(nodeName ? { nodeName } : {}), ...spec } });
const sel = (key: string, values: string[], operator = 'In') => ({ matchExpressions: [{ key, operator, values }] });

/** The plugin's verdict on each Node for the Pod: null (fits) or its reasons. */
function verdicts(plugin: Plugin, p: KObject, nodes: KObject[], pods: KObject[]): Record<string, readonly string[] | null> {
  const infos = nodeInfos(nodes, pods);
  const state = new Map();
  plugin.preFilter?.(p, state, infos);
  return Object.fromEntries(infos.map((n: NodeInfo) => [n.name, plugin.filter!(p, n, state)]));
}

const ipa = interPodAffinity();
const regions = [node('node1', { region: 'r1', zone: 'z11' }), node('node2', { region: 'r1', zone: 'z12' }), node('node3', { region: 'r2', zone: 'z21' })];

t.test('InterPodAffinity Filter (filtering_test.go TestRequiredAffinitySingleNode / TestRequiredAffinityMultipleNodes)', async (t) => {
  const existing = pod('e', { service: 'securityscan' }, {}, 'node1');
  t.same(verdicts(ipa, pod('p', {}), regions, [existing]), { node1: null, node2: null, node3: null }, '"A pod that has no required pod affinity scheduling rules can schedule onto a node with no existing pods"');
  const affinity = { affinity: { podAffinity: { requiredDuringSchedulingIgnoredDuringExecution: [{ labelSelector: sel('service', ['securityscan', 'value2']), topologyKey: 'region' }] } } };
  t.same(verdicts(ipa, pod('p', {}, affinity), regions, [existing]), { node1: null, node2: null, node3: [REASONS.affinity] },
    '"A pod can be scheduled onto all the nodes that have the same topology key & label value with one of them has an existing pod that matches the affinity rules"');
  t.same(verdicts(ipa, pod('p', {}, affinity), regions, [pod('e', { service: 'securityscan' }, {}, 'node1', 'other')]), { node1: [REASONS.affinity], node2: [REASONS.affinity], node3: [REASONS.affinity] },
    '"Does not satisfy the PodAffinity with labelSelector because of diff Namespace"');
  const self = { affinity: { podAffinity: { requiredDuringSchedulingIgnoredDuringExecution: [{ labelSelector: sel('service', ['securityscan']), topologyKey: 'region' }] } } };
  t.same(verdicts(ipa, pod('p', { service: 'securityscan' }, self), regions, []), { node1: null, node2: null, node3: null },
    '"verify that PodAffinity ... the pod matches its own affinity term: it may start the group"');
  t.same(verdicts(ipa, pod('p', {}, self), regions, []), { node1: [REASONS.affinity], node2: [REASONS.affinity], node3: [REASONS.affinity] }, 'but not a Pod that does not match its own term');
  const anti = { affinity: { podAntiAffinity: { requiredDuringSchedulingIgnoredDuringExecution: [{ labelSelector: sel('service', ['securityscan']), topologyKey: 'zone' }] } } };
  t.same(verdicts(ipa, pod('p', {}, anti), regions, [existing]), { node1: [REASONS.antiAffinity], node2: null, node3: null },
    '"Anti-affinity: the pod cannot go to the zone of a pod it repels"');
  const repelling = pod('e', { service: 'securityscan' }, { affinity: { podAntiAffinity: { requiredDuringSchedulingIgnoredDuringExecution: [{ labelSelector: sel('app', ['web']), topologyKey: 'region' }] } } }, 'node1');
  t.same(verdicts(ipa, pod('p', { app: 'web' }), regions, [repelling]), { node1: [REASONS.existingAnti], node2: [REASONS.existingAnti], node3: null },
    '"Verify that PodAntiAffinity of an existing pod is respected when PodAntiAffinity symmetry is not satisfied with the existing pod"');
  const missingKey = { affinity: { podAffinity: { requiredDuringSchedulingIgnoredDuringExecution: [{ labelSelector: sel('service', ['securityscan']), topologyKey: 'rack' }] } } };
  t.same(verdicts(ipa, pod('p', {}, missingKey), regions, [existing]).node1, [REASONS.affinity], 'a Node without the topology key fails affinity');
});

t.test('InterPodAffinity Score (scoring_test.go: "Affinity: pod that matches topology key & pods in nodes will get high score comparing to others")', async (t) => {
  const infos = nodeInfos(regions, [pod('e1', { security: 'S1' }, {}, 'node1'), pod('e2', { security: 'S2' }, {}, 'node3')]);
  const p = pod('p', {}, { affinity: { podAffinity: { preferredDuringSchedulingIgnoredDuringExecution: [{ weight: 5, podAffinityTerm: { labelSelector: sel('security', ['S1']), topologyKey: 'region' } }] } } });
  const state = new Map();
  ipa.preFilter!(p, state, infos);
  t.same(ipa.normalize!(infos.map((n) => ipa.score!(p, n, state))), [100, 100, 0], 'node1 and node2 share region r1 with the S1 pod');
  const anti = pod('p', {}, { affinity: { podAntiAffinity: { preferredDuringSchedulingIgnoredDuringExecution: [{ weight: 5, podAffinityTerm: { labelSelector: sel('security', ['S1']), topologyKey: 'region' } }] } } });
  const st2 = new Map();
  ipa.preFilter!(anti, st2, infos);
  t.same(ipa.normalize!(infos.map((n) => ipa.score!(anti, n, st2))), [0, 0, 100], '"Anti Affinity: pod that does not match existing pods in node will get high score"');
});

const zones = [node('node-a', { zone: 'zone1' }), node('node-b', { zone: 'zone1' }), node('node-x', { zone: 'zone2' }), node('node-y', { zone: 'zone2' })];
const spread = (maxSkew: number, key = 'zone', when = 'DoNotSchedule') => ({ topologySpreadConstraints: [{ maxSkew, topologyKey: key, whenUnsatisfiable: when, labelSelector: sel('foo', [], 'Exists') }] });
const placed = (n: string, i: number) => pod(`p-${n}-${i}`, { foo: '' }, {}, n);

t.test('PodTopologySpread Filter (filtering_test.go TestSingleConstraint)', async (t) => {
  const pts = podTopologySpread();
  t.same(verdicts(pts, pod('p', { foo: '' }, spread(1)), zones, []), { 'node-a': null, 'node-b': null, 'node-x': null, 'node-y': null }, '"no existing pods"');
  // "pods spread across zones as 3/3, all nodes fit" (maxSkew 1)
  const even = [placed('node-a', 1), placed('node-b', 1), placed('node-b', 2), placed('node-x', 1), placed('node-y', 1), placed('node-y', 2)];
  t.same(verdicts(pts, pod('p', { foo: '' }, spread(1)), zones, even), { 'node-a': null, 'node-b': null, 'node-x': null, 'node-y': null });
  // "pods spread across zones as 3/1, only zone2 nodes fit"? here 3 in zone1 and 1 in zone2.
  const uneven = [placed('node-a', 1), placed('node-b', 1), placed('node-b', 2), placed('node-x', 1)];
  t.same(verdicts(pts, pod('p', { foo: '' }, spread(1)), zones, uneven), { 'node-a': [REASONS.spread], 'node-b': [REASONS.spread], 'node-x': null, 'node-y': null });
  t.same(verdicts(pts, pod('p', { foo: '' }, spread(3)), zones, uneven), { 'node-a': null, 'node-b': null, 'node-x': null, 'node-y': null }, 'maxSkew 3 lets zone1 take one more (3 + 1 − 1)');
  t.same(verdicts(pts, pod('p', { foo: '' }, spread(2)), zones, uneven)['node-a'], [REASONS.spread], 'maxSkew 2 does not');
  t.same(verdicts(pts, pod('p', { bar: '' }, spread(2)), zones, uneven)['node-a'], null, 'a Pod its own selector does not match adds nothing to the skew (3 + 0 − 1)');
  t.same(verdicts(pts, pod('p', { foo: '' }, spread(1), '', 'other'), zones, uneven)['node-a'], null, 'Pods of another namespace do not count');
  const noLabel = [...zones, { ...node('node-z', {}), metadata: { name: 'node-z', labels: {} } } as KObject];
  t.same(verdicts(pts, pod('p', { foo: '' }, spread(1)), noLabel, [])['node-z'], [REASONS.spreadLabel], '"node that doesn\'t have the topology key" is refused');
  // hostname spread over 3 nodes, maxSkew 1: 1/1/0 lets only the empty node take the next.
  const three = zones.slice(0, 3);
  t.same(verdicts(pts, pod('p', { foo: '' }, spread(1, 'kubernetes.io/hostname')), three, [placed('node-a', 1), placed('node-b', 1)]), { 'node-a': [REASONS.spread], 'node-b': [REASONS.spread], 'node-x': null });
});

t.test('PodTopologySpread Score (scoring_test.go: fewer matching Pods in the domain score higher) and the system defaults', async (t) => {
  const pts = podTopologySpread((p) => ((p.metadata?.['labels'] as O | undefined)?.['app'] ? { matchLabels: { app: 'web' } } : null));
  const pods = [pod('w1', { app: 'web' }, {}, 'node-a'), pod('w2', { app: 'web' }, {}, 'node-a'), pod('w3', { app: 'web' }, {}, 'node-b')];
  const p = pod('p', { app: 'web' });
  const d = schedule(p, nodeInfos(zones, pods), [pts]);
  t.equal(d.node, 'node-x', 'with no constraints of its own, a replica goes where fewer of its kind are (system defaults: hostname and zone)');
  const soft = pod('p', { foo: '' }, spread(1, 'kubernetes.io/hostname', 'ScheduleAnyway'));
  const infos = nodeInfos(zones, [placed('node-a', 1), placed('node-a', 2), placed('node-b', 1)]);
  const plugin = podTopologySpread();
  const st = new Map();
  plugin.preFilter!(soft, st, infos);
  const scores = plugin.normalize!(infos.map((n) => plugin.score!(soft, n, st)));
  t.ok(scores[0]! < scores[1]! && scores[1]! < scores[2]! && scores[2] === scores[3], `scores ${scores.join(',')}: 2 pods < 1 pod < 0 pods`);
});

t.test('queueing hints (interpodaffinity/plugin_test.go, podtopologyspread/plugin_test.go TestPodTopologySpread_isSchedulableAfter*)', async (t) => {
  const wantsAffinity = pod('p', { app: 'web' }, { affinity: { podAffinity: { requiredDuringSchedulingIgnoredDuringExecution: [{ topologyKey: 'zone', labelSelector: { matchLabels: { app: 'db' } } }] } } });
  const wantsAnti = pod('p', { app: 'web' }, { affinity: { podAntiAffinity: { requiredDuringSchedulingIgnoredDuringExecution: [{ topologyKey: 'zone', labelSelector: { matchLabels: { app: 'web' } } }] } } });
  const h = ipa.hints!;
  t.equal(h.assignedPod!(wantsAffinity, null, pod('d', { app: 'db' }, {}, 'node1')), true, 'a Pod its affinity selects came: Queue');
  t.equal(h.assignedPod!(wantsAffinity, null, pod('o', { app: 'other' }, {}, 'node1')), false, 'an unrelated Pod came: QueueSkip');
  t.equal(h.assignedPod!(wantsAnti, pod('w', { app: 'web' }, {}, 'node1'), null), true, 'a Pod its anti-affinity selects went: Queue');
  t.equal(h.assignedPod!(wantsAnti, pod('o', { app: 'other' }, {}, 'node1'), null), false, 'an unrelated Pod went: QueueSkip');
  const blocker = pod('b', { app: 'x' }, { affinity: { podAntiAffinity: { requiredDuringSchedulingIgnoredDuringExecution: [{ topologyKey: 'zone', labelSelector: { matchLabels: { app: 'web' } } }] } } }, 'node1');
  t.equal(h.assignedPod!(pod('p', { app: 'web' }), blocker, null), true, 'a Pod whose own anti-affinity kept it off went: Queue');

  const spread = podTopologySpread();
  const constrained = pod('p', { app: 'even' }, { topologySpreadConstraints: [{ maxSkew: 1, topologyKey: 'zone', whenUnsatisfiable: 'DoNotSchedule', labelSelector: { matchLabels: { app: 'even' } } }] });
  t.equal(spread.hints!.assignedPod!(constrained, pod('e', { app: 'even' }, {}, 'node1'), null), true, 'a matching Pod went: Queue');
  t.equal(spread.hints!.assignedPod!(constrained, pod('e', { app: 'even' }, {}, 'node1', 'other-ns'), null), false, 'another namespace: QueueSkip');
  t.equal(spread.hints!.assignedPod!(constrained, null, pod('o', { app: 'odd' }, {}, 'node1')), false, 'not selected: QueueSkip');
  t.equal(spread.hints!.node!(constrained, null, node('n9', { zone: 'z9' })), true, 'a Node with the key: Queue');
  t.equal(spread.hints!.node!(constrained, null, node('n9', {})), false, 'a Node without the key: QueueSkip');
});
