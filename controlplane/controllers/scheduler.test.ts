/**
 * The scheduler on a real storage (LocalStorage over the fake persistence) and watch cache and Rest with a fake
 * clock: which node a Pod is bound to (Ready, schedulable, nodeSelector and
 * node affinity, taints and tolerations, allocatable pods), how replicas of
 * one owner spread, what a Pod that fits nowhere says (condition, Event,
 * upstream's message), when it is tried again (a Node changes, a Pod goes,
 * every 30 s), and the Pods it leaves alone. The filters' pure pieces too.
 */
import t, { type Test } from 'tap';
import { asController } from '../testing/as-controller.js';
import { silentLogger } from '../../lib/log/log.js';
import { FakeClock } from '../../lib/reconcile/clock.fake.js';
import { Rest } from '../api/rest.js';
import { RESOURCES } from '../api/resources.js';
import { loadSchemas } from '../api/schema.js';
import { FakePersistence } from '../store/persistence.fake.js';
import { openTestStore } from '../testing/store.js';
import type { KObject } from '../store/types.js';
import { EventBroadcaster } from './events.js';
import { Scheduler } from './scheduler.js';
import { fitErrorMessage, nodeInfo, schedule } from '../scheduler/framework.js';
import { matchesNodeAffinity } from '../scheduler/plugins.js';
import { defaultProfile } from '../scheduler/profile.js';
import { toleratesTaint } from './taints.js';

type O = Record<string, unknown>;
const schemas = await loadSchemas([...RESOURCES.map((r) => r.model), 'V1Scale', 'V1Status', 'V1DeleteOptions', 'V1ListMeta']);
const R = (name: string) => RESOURCES.find((r) => r.resource === name)!;
const [NS, POD, NODE] = [R('namespaces'), R('pods'), R('nodes')];

async function setup(t: Test) {
  const clock = new FakeClock(Date.UTC(2026, 11, 1));
  const ts = openTestStore({ persistence: new FakePersistence(), clock });
  const store = ts.cache;
  const rest = new Rest({ storage: ts.storage, cache: store, schemas, clock });
  await rest.create(NS, '', { apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'default' } });
  const events = new EventBroadcaster({ rest, clock, log: silentLogger() });
  const sched = new Scheduler({ rest: asController(rest, 'scheduler'), cache: store, clock, log: silentLogger(), events: events.recorder('default-scheduler') });
  sched.start();
  t.teardown(async () => {
    sched.stop();
    await events.stop();
    ts.close();
  });
  const settle = async () => {
    for (let i = 0; i < 4; i++) {
      await sched.idle();
      await events.idle();
    }
  };
  const get = (name: string) => store.get(`pods/default/${name}`)!.object as KObject & { spec: O; status: O };
  const nodeOf = (name: string) => String(get(name).spec['nodeName'] ?? '');
  const eventsOf = (name: string) => store.list('events', 'default').items.map((s) => s.object as O).filter((e) => (e['involvedObject'] as O)['name'] === name);
  const scheduled = (name: string) => ((get(name).status['conditions'] ?? []) as O[]).find((c) => c['type'] === 'PodScheduled');
  const addNode = (name: string, o: NodeOpts = {}) => rest.create(NODE, '', nodeObj(name, o));
  const addPod = (name: string, spec: O = {}, m: O = {}) => rest.create(POD, 'default', podObj(name, spec, m));
  return { clock, store, rest, settle, get, nodeOf, eventsOf, scheduled, addNode, addPod };
}

interface NodeOpts {
  ready?: 'True' | 'False' | 'Unknown' | null;
  labels?: Record<string, string>;
  taints?: O[];
  unschedulable?: boolean;
  pods?: string;
  allocatable?: Record<string, string>;
}

function nodeObj(name: string, o: NodeOpts = {}): KObject {
  const ready = o.ready === undefined ? 'True' : o.ready;
  return {
    apiVersion: 'v1', kind: 'Node',
    metadata: { name, labels: { 'kubernetes.io/hostname': name, ...(o.labels ?? {}) } },
    spec: { ...(o.taints ? { taints: o.taints } : {}), ...(o.unschedulable ? { unschedulable: true } : {}) },
    status: { ...(ready ? { conditions: [{ type: 'Ready', status: ready }] } : {}), ...(o.pods || o.allocatable ? { allocatable: { ...(o.allocatable ?? {}), ...(o.pods ? { pods: o.pods } : {}) } } : {}) },
  };
}

const podObj = (name: string, spec: O = {}, m: O = {}): KObject => ({ apiVersion: 'v1', kind: 'Pod', metadata: { name, ...m }, spec: { containers: [{ name: 'c', image: 'none' }], ...spec } });

t.test('binds to the only node that fits: Ready and schedulable; PodScheduled=True and a Scheduled Event', async (t) => {
  const { addNode, addPod, settle, nodeOf, get, scheduled, eventsOf } = await setup(t);
  await addNode('a', { ready: 'False' });
  await addNode('b');
  await addNode('c', { unschedulable: true });
  await addNode('d', { ready: null });
  await addPod('p');
  await settle();
  t.equal(nodeOf('p'), 'b');
  t.match(scheduled('p'), { type: 'PodScheduled', status: 'True', lastTransitionTime: '2026-12-01T00:00:00Z' });
  t.equal(get('p').status['phase'], 'Pending', 'the phase is the kubelet\'s to change');
  const [ev, ...more] = eventsOf('p');
  t.equal(more.length, 0);
  t.match(ev, { type: 'Normal', reason: 'Scheduled', message: 'Successfully assigned default/p to b', source: { component: 'default-scheduler' }, reportingComponent: 'default-scheduler', involvedObject: { kind: 'Pod', name: 'p', namespace: 'default', uid: (get('p').metadata as O)['uid'] } });
});

t.test('nodeSelector and required node affinity', async (t) => {
  const { addNode, addPod, settle, nodeOf } = await setup(t);
  await addNode('hdd', { labels: { disk: 'hdd', zone: 'z1' } });
  await addNode('ssd', { labels: { disk: 'ssd', zone: 'z2', gen: '5' } });
  await addNode('plain');
  await addPod('sel', { nodeSelector: { disk: 'ssd' } });
  const affinity = (exprs: O[], fields: O[] = []) => ({ affinity: { nodeAffinity: { requiredDuringSchedulingIgnoredDuringExecution: { nodeSelectorTerms: [{ ...(exprs.length ? { matchExpressions: exprs } : {}), ...(fields.length ? { matchFields: fields } : {}) }] } } } });
  await addPod('in', affinity([{ key: 'zone', operator: 'In', values: ['z1', 'z9'] }]));
  await addPod('notin', affinity([{ key: 'disk', operator: 'Exists' }, { key: 'zone', operator: 'NotIn', values: ['z1'] }]));
  await addPod('dne', affinity([{ key: 'disk', operator: 'DoesNotExist' }]));
  await addPod('gt', affinity([{ key: 'gen', operator: 'Gt', values: ['4'] }]));
  await addPod('field', affinity([], [{ key: 'metadata.name', operator: 'In', values: ['hdd'] }]));
  await settle();
  t.same(['sel', 'in', 'notin', 'dne', 'gt', 'field'].map(nodeOf), ['ssd', 'hdd', 'ssd', 'plain', 'ssd', 'hdd']);
});

t.test('taints: NoSchedule and NoExecute keep Pods off unless tolerated; PreferNoSchedule does not', async (t) => {
  const { addNode, addPod, settle, nodeOf } = await setup(t);
  await addNode('gpu', { taints: [{ key: 'dedicated', value: 'gpu', effect: 'NoSchedule' }] });
  await addNode('drain', { taints: [{ key: 'maint', effect: 'NoExecute' }] });
  await addNode('soft', { taints: [{ key: 'spare', effect: 'PreferNoSchedule' }], pods: '1' });
  await addPod('any');
  await addPod('gpu-job', { tolerations: [{ key: 'dedicated', operator: 'Equal', value: 'gpu', effect: 'NoSchedule' }] });
  await addPod('wrong-value', { tolerations: [{ key: 'dedicated', operator: 'Equal', value: 'cpu' }, { key: 'maint', operator: 'Exists', effect: 'NoSchedule' }] });
  await settle();
  t.equal(nodeOf('any'), 'soft');
  t.equal(nodeOf('gpu-job'), 'gpu', 'soft is full (allocatable pods 1), gpu tolerated');
  t.equal(nodeOf('wrong-value'), '', 'another value, and a toleration for the wrong effect, tolerate nothing');
  await addPod('everything', { tolerations: [{ operator: 'Exists' }] });
  await settle();
  t.equal(nodeOf('everything'), 'drain', 'an empty key with Exists tolerates every taint (gpu and soft are taken: it spreads by pod count)');
});

/** The default profile's reason for one Node with `podsOnNode` Pods bound to it, or null when the Pod fits. */
function unfitReason(pod: KObject, node: KObject, podsOnNode: number): string | null {
  const bound = Array.from({ length: podsOnNode }, (_, i) => podObj(`b${i}`, { nodeName: String((node.metadata as O)['name']) }));
  const d = schedule(pod, [nodeInfo(node, bound)], defaultProfile({ defaultSelector: () => null, namespaceLabels: () => undefined }));
  return d.node === null ? [...d.reasons.keys()].join('; ') : null;
}

t.test('toleratesTaint, the filters\' reasons and the FitError message (pure)', async (t) => {
  const taint = { key: 'k', value: 'v', effect: 'NoSchedule' };
  t.ok(toleratesTaint({ key: 'k', operator: 'Equal', value: 'v', effect: 'NoSchedule' }, taint));
  t.ok(toleratesTaint({ key: 'k', value: 'v' }, taint), 'operator defaults to Equal; an empty effect matches every effect');
  t.ok(toleratesTaint({ key: 'k', operator: 'Exists' }, taint));
  t.ok(toleratesTaint({ operator: 'Exists' }, taint));
  t.notOk(toleratesTaint({ key: 'k', operator: 'Equal', value: 'w' }, taint));
  t.notOk(toleratesTaint({ key: 'k', operator: 'Exists', effect: 'NoExecute' }, taint));
  t.notOk(toleratesTaint({ key: 'other', operator: 'Exists' }, taint));
  const pod = podObj('p');
  t.equal(unfitReason(pod, nodeObj('n', { ready: 'False' }), 0), 'node(s) had untolerated taint {node.kubernetes.io/not-ready: }');
  t.equal(unfitReason(pod, nodeObj('n', { ready: 'Unknown' }), 0), 'node(s) had untolerated taint {node.kubernetes.io/unreachable: }');
  t.equal(unfitReason(podObj('p', { tolerations: [{ key: 'node.kubernetes.io/not-ready', operator: 'Exists', effect: 'NoSchedule' }] }), nodeObj('n', { ready: 'False' }), 0), null, 'a Pod tolerating not-ready may go to a NotReady node, as upstream');
  t.equal(unfitReason(pod, nodeObj('n', { unschedulable: true, ready: 'False' }), 0), 'node(s) were unschedulable', 'unschedulable is looked at first');
  t.equal(unfitReason(pod, nodeObj('n', { pods: '2' }), 2), 'Too many pods');
  t.equal(unfitReason(pod, nodeObj('n', { pods: '2' }), 1), null);
  t.notOk(matchesNodeAffinity(podObj('p', { affinity: { nodeAffinity: { requiredDuringSchedulingIgnoredDuringExecution: { nodeSelectorTerms: [{}] } } } }), nodeObj('n')), 'an empty term matches nothing');
  t.equal(fitErrorMessage(3, new Map([['node(s) had untolerated taint {node.kubernetes.io/unreachable: }', 2], ["node(s) didn't match Pod's node affinity/selector", 1]])), "0/3 nodes are available: 1 node(s) didn't match Pod's node affinity/selector, 2 node(s) had untolerated taint {node.kubernetes.io/unreachable: }.");
  t.equal(fitErrorMessage(0, new Map()), 'no nodes available to schedule pods');
});

t.test('replicas spread over the nodes (PodTopologySpread\'s system defaults over their ReplicaSet); the rest to the emptier node', async (t) => {
  const { addNode, addPod, settle, nodeOf, rest } = await setup(t);
  for (const n of ['a', 'b', 'c']) await addNode(n, { allocatable: { cpu: '4', memory: '8Gi', pods: '110' } });
  const RS = RESOURCES.find((r) => r.resource === 'replicasets')!;
  for (const app of ['web', 'other']) {
    await rest.create(RS, 'default', { apiVersion: 'apps/v1', kind: 'ReplicaSet', metadata: { name: app }, spec: { replicas: 0, selector: { matchLabels: { app } }, template: { metadata: { labels: { app } }, spec: { containers: [{ name: 'c', image: 'none' }] } } } });
  }
  await addPod('other-1', { nodeName: 'a' }, { labels: { app: 'other' } });
  await addPod('other-2', { nodeName: 'a' }, { labels: { app: 'other' } });
  for (const i of [1, 2, 3]) {
    await addPod(`web-${i}`, {}, { labels: { app: 'web' } });
    await settle();
  }
  t.same([1, 2, 3].map((i) => nodeOf(`web-${i}`)).sort(), ['a', 'b', 'c'], 'one each: the spread of the ReplicaSet\'s Pods outweighs the load of a');
  await addPod('lone');
  await settle();
  t.not(nodeOf('lone'), 'a', 'no ReplicaSet: the emptier nodes score higher (LeastAllocated on the non-zero requests)');
});

t.test('a Pod that fits nowhere: Pending, PodScheduled=False Unschedulable with upstream\'s message, a FailedScheduling Event', async (t) => {
  const { addNode, addPod, settle, get, nodeOf, scheduled, eventsOf } = await setup(t);
  await addPod('early');
  await settle();
  t.match(scheduled('early'), { status: 'False', reason: 'Unschedulable', message: 'no nodes available to schedule pods' });
  await addNode('x', { labels: { disk: 'hdd' } });
  await addNode('y', { ready: null });
  await addNode('z', { ready: 'Unknown' });
  await addPod('p', { nodeSelector: { disk: 'ssd' } });
  await settle();
  const message = "0/3 nodes are available: 1 node(s) didn't match Pod's node affinity/selector, 2 node(s) had untolerated taint {node.kubernetes.io/unreachable: }.";
  t.equal(nodeOf('p'), '');
  t.equal(get('p').status['phase'], 'Pending');
  t.match(scheduled('p'), { type: 'PodScheduled', status: 'False', reason: 'Unschedulable', message, lastTransitionTime: '2026-12-01T00:00:00Z' });
  t.match(eventsOf('p'), [{ type: 'Warning', reason: 'FailedScheduling', message, count: 1, source: { component: 'default-scheduler' } }]);
  t.equal(eventsOf('p').length, 1, 'its own status update does not make it try again');
  t.equal(nodeOf('early'), 'x', 'the early Pod went to the node that came');
});

t.test('tried again only when something that may help changes (queueing hints), and after 5 min at the latest', async (t) => {
  const { addNode, addPod, settle, nodeOf, rest, clock, eventsOf, scheduled } = await setup(t);
  await addNode('n1', { ready: 'False' });
  await addPod('p');
  await settle();
  t.equal(nodeOf('p'), '');
  await clock.advance(30_000);
  await settle();
  t.match(eventsOf('p'), [{ reason: 'FailedScheduling', count: 1 }], 'nothing changed: not tried again after 30 s');
  await clock.advance(270_000);
  await settle();
  t.match(eventsOf('p'), [{ reason: 'FailedScheduling', count: 2 }], 'tried again after 5 min (podMaxInUnschedulablePodsDuration)');
  await rest.patch(NODE, '', 'n1', 'merge', { status: { conditions: [{ type: 'Ready', status: 'True' }] } }, { sub: 'status' });
  await settle();
  t.equal(nodeOf('p'), 'n1', 'bound once the node is Ready (TaintToleration\'s hint)');
  t.match(scheduled('p'), { status: 'True' });

  await addPod('q', { nodeSelector: { role: 'edge' } });
  await settle();
  t.equal(nodeOf('q'), '');
  await rest.patch(NODE, '', 'n1', 'merge', { metadata: { labels: { role: 'core' } } });
  await settle();
  t.match(eventsOf('q'), [{ reason: 'FailedScheduling', count: 1 }], 'a label that still does not match: NodeAffinity\'s hint says skip');
  await rest.delete(POD, 'default', 'p', { gracePeriodSeconds: 0 });
  await settle();
  t.match(eventsOf('q'), [{ reason: 'FailedScheduling', count: 1 }], 'a bound Pod gone does not help a Pod NodeAffinity refused');
  await rest.patch(NODE, '', 'n1', 'merge', { metadata: { labels: { role: 'edge' } } });
  await settle();
  t.equal(nodeOf('q'), 'n1', 'bound once the labels match');

  await addNode('small', { pods: '1', labels: { size: 's' } });
  await addPod('s1', { nodeSelector: { size: 's' } });
  await addPod('s2', { nodeSelector: { size: 's' } });
  await settle();
  t.same([nodeOf('s1'), nodeOf('s2')], ['small', '']);
  t.match(scheduled('s2'), { reason: 'Unschedulable', message: '0/2 nodes are available: 1 Too many pods, 1 node(s) didn\'t match Pod\'s node affinity/selector.' });
  await rest.delete(POD, 'default', 's1', { gracePeriodSeconds: 0 });
  await settle();
  t.equal(nodeOf('s2'), 'small', 'room again once the bound Pod went (NodeResourcesFit\'s hint)');
});

t.test('PrioritySort: when room appears, the waiting Pod of higher priority takes it, whatever came first', async (t) => {
  const { addNode, addPod, settle, nodeOf, rest } = await setup(t);
  await addNode('one', { pods: '1' });
  await addPod('first');
  await settle();
  t.equal(nodeOf('first'), 'one');
  await addPod('low', { priority: 0, preemptionPolicy: 'Never' });
  await addPod('high', { priority: 100, preemptionPolicy: 'Never' });
  await settle();
  t.same([nodeOf('low'), nodeOf('high')], ['', '']);
  await rest.delete(POD, 'default', 'first', { gracePeriodSeconds: 0 });
  await settle();
  t.same([nodeOf('low'), nodeOf('high')], ['', 'one'], 'high came later and was placed first');
});

t.test('Pods it leaves alone: bound already, another scheduler\'s, terminating, finished', async (t) => {
  const { addNode, addPod, settle, get, nodeOf, eventsOf, rest } = await setup(t);
  await addPod('bound', { nodeName: 'elsewhere' });
  await addPod('theirs', { schedulerName: 'my-scheduler' });
  await addPod('terminating', {}, { finalizers: ['example.com/hold'] });
  await addPod('finished');
  await settle();
  await rest.delete(POD, 'default', 'terminating');
  await rest.patch(POD, 'default', 'finished', 'merge', { status: { phase: 'Failed' } }, { sub: 'status' });
  const names = ['bound', 'theirs', 'terminating', 'finished'];
  const rv = (n: string) => (get(n).metadata as O)['resourceVersion'];
  const before = names.map(rv);
  await addNode('n1');
  await settle();
  t.same(names.map(rv), before, 'not written once a node came');
  t.same(names.map(nodeOf), ['elsewhere', '', '', '']);
  t.same([...eventsOf('bound'), ...eventsOf('theirs')], [], 'no Events for a bound Pod or another scheduler\'s');
  t.ok(get('terminating').metadata!['deletionTimestamp']);
});

t.test('preemption: victims get DisruptionTarget and a graceful delete, the preemptor nominatedNodeName, then the Node', async (t) => {
  const { addNode, addPod, settle, nodeOf, get, rest, eventsOf } = await setup(t);
  const cpu = (c: string) => ({ containers: [{ name: 'c', image: 'none', resources: { requests: { cpu: c } } }] });
  await addNode('a', { allocatable: { cpu: '2' } });
  await addNode('b', { allocatable: { cpu: '2' } });
  await addPod('low1', { ...cpu('1500m'), priority: 10 }, { finalizers: ['example.com/hold'] });
  await addPod('low2', { ...cpu('1500m'), priority: 10 }, { finalizers: ['example.com/hold'] });
  await settle();
  t.same([nodeOf('low1'), nodeOf('low2')].sort(), ['a', 'b']);
  await addPod('vip', { ...cpu('1500m'), priority: 1000 });
  await settle();
  const nominated = String((get('vip').status as O)['nominatedNodeName'] ?? '');
  t.match(nominated, /^[ab]$/, 'nominated');
  const victim = nodeOf('low1') === nominated ? 'low1' : 'low2';
  t.ok(get(victim).metadata!['deletionTimestamp'], 'the victim is being deleted');
  t.ok(eventsOf(victim).some((e) => e['reason'] === 'Preempted'), 'a Preempted Event on the victim');
  t.equal(nodeOf('vip'), '', 'not bound while the victim terminates');
  // Its kubelet finishes it: the finalizer goes.
  await rest.patch(POD, 'default', victim, 'merge', { metadata: { finalizers: null } });
  await settle();
  t.equal(nodeOf('vip'), nominated, 'bound where room was made');
});
