/**
 * The node lifecycle controller on a real storage (LocalStorage over the fake persistence) and watch cache and Rest
 * with a fake clock, with the EndpointSlice and ReplicaSet controllers where
 * the story goes through them: a Node that renews its Lease stays Ready; one
 * that goes silent for the grace period becomes Unknown, is tainted
 * unreachable, its Pods become not ready (and their endpoints neither ready
 * nor serving) with Events; the agent posting Ready again takes the taints
 * away; Pods are evicted after their tolerationSeconds and replaced; a
 * restarted controller gives every Node a full grace period.
 */
import t, { type Test } from 'tap';
import { asController } from '../testing/as-controller.js';
import { Admission } from '../admission/admission.js';
import { makePlugins } from '../admission/plugins.js';
import { silentLogger } from '../../lib/log/log.js';
import { FakeClock } from '../../lib/reconcile/clock.fake.js';
import { Rest, rfc3339 } from '../api/rest.js';
import { RESOURCES } from '../api/resources.js';
import { loadSchemas } from '../api/schema.js';
import { DEFAULT_TOLERATION_SECONDS } from '../kinds/kinds.js';
import { FakePersistence } from '../store/persistence.fake.js';
import { openTestStore } from '../testing/store.js';
import type { KObject } from '../store/types.js';
import { EndpointSliceController } from './endpointslice.js';
import { EventBroadcaster } from './events.js';
import { conditionOf, desiredTaints, evictionDelay, EVICTION_COMPONENT, NODE_COMPONENT, NodeLifecycleController, taintsOf, TAINT_NOT_READY, TAINT_UNREACHABLE } from './node-lifecycle.js';
import { toleratesTaint as tolerates } from './taints.js';
import { controllerOf, ReplicaSetController } from './replicaset.js';

type O = Record<string, unknown>;
const schemas = await loadSchemas([...RESOURCES.map((r) => r.model), 'V1Scale', 'V1Status', 'V1DeleteOptions', 'V1ListMeta']);
const R = (name: string) => RESOURCES.find((r) => r.resource === name)!;
const [NODE, POD, NS, LEASE, SVC, RS] = [R('nodes'), R('pods'), R('namespaces'), R('leases'), R('services'), R('replicasets')];
const GRACE = 40_000;
const microTime = (ms: number) => new Date(ms).toISOString().replace(/\.(\d{3})Z$/, '.$1000Z');

async function setup(t: Test, o: { start?: boolean; persistence?: FakePersistence; clock?: FakeClock } = {}) {
  const clock = o.clock ?? new FakeClock(Date.UTC(2026, 11, 1, 12));
  const ts = openTestStore({ persistence: o.persistence ?? new FakePersistence(), clock });
  const store = ts.cache;
  const rest = new Rest({ storage: ts.storage, cache: store, schemas, admission: Admission.of(makePlugins({ cache: store, storage: ts.storage }), ['NamespaceLifecycle', 'DefaultTolerationSeconds']), clock });
  for (const name of ['default', 'kube-node-lease']) if (!store.get(`namespaces//${name}`)) await rest.create(NS, '', { apiVersion: 'v1', kind: 'Namespace', metadata: { name } });
  const log = silentLogger();
  const broadcaster = new EventBroadcaster({ rest, clock, log });
  const ctl = new NodeLifecycleController({ rest: asController(rest, 'node-controller'), cache: store, clock, log, gracePeriodMs: GRACE, events: broadcaster.recorder(NODE_COMPONENT), evictionEvents: broadcaster.recorder(EVICTION_COMPONENT) });
  const eps = new EndpointSliceController({ rest, cache: store, clock, log });
  const rsc = new ReplicaSetController({ rest: asController(rest, 'replicaset-controller'), cache: store, clock, log });
  const start = () => {
    ctl.start();
    eps.start();
    rsc.start();
  };
  if (o.start !== false) start();
  const stop = () => {
    ctl.stop();
    eps.stop();
    rsc.stop();
    broadcaster.stop();
    ts.close();
  };
  t.teardown(stop);
  const settle = async () => {
    for (let i = 0; i < 6; i++) {
      await ctl.idle();
      await eps.idle();
      await rsc.idle();
      await broadcaster.idle();
    }
  };
  /** What the agent does: register its Node with Ready (and what else it reports). */
  const register = async (name: string, extra: O[] = []) => {
    const now = rfc3339(clock.now());
    await rest.create(NODE, '', { apiVersion: 'v1', kind: 'Node', metadata: { name }, status: { conditions: [{ type: 'Ready', status: 'True', reason: 'KubeletReady', lastHeartbeatTime: now, lastTransitionTime: now }, ...extra] } });
  };
  /** The agent posting Ready (a heartbeat), as its strategic merge patch does. */
  const postReady = async (name: string) => {
    const now = rfc3339(clock.now());
    await rest.patch(NODE, '', name, 'strategic', { status: { conditions: [{ type: 'Ready', status: 'True', reason: 'KubeletReady', message: 'nodenet agent is posting ready status', lastHeartbeatTime: now, lastTransitionTime: now }] } }, { sub: 'status' });
  };
  const renew = async (name: string) => {
    await rest.update(LEASE, 'kube-node-lease', name, { apiVersion: 'coordination.k8s.io/v1', kind: 'Lease', metadata: { name, namespace: 'kube-node-lease' }, spec: { holderIdentity: name, leaseDurationSeconds: 40, renewTime: microTime(clock.now()) } });
  };
  /** A Pod bound to `node`, given Running, an IP and Ready by the test as a kubelet would. */
  const runPod = async (name: string, node: string, ip: string, spec: O = {}) => {
    await rest.create(POD, 'default', { apiVersion: 'v1', kind: 'Pod', metadata: { name, labels: { app: 'web' } }, spec: { nodeName: node, containers: [{ name: 'c', image: 'none', ports: [{ containerPort: 8080 }] }], ...spec } });
    const cur = (await rest.get(POD, 'default', name)).object as KObject;
    await rest.update(POD, 'default', name, { ...structuredClone(cur), status: { phase: 'Running', podIP: ip, conditions: [{ type: 'Ready', status: 'True', lastTransitionTime: rfc3339(clock.now()) }] } }, { sub: 'status' });
  };
  const node = (name: string) => store.get(`nodes//${name}`)!.object as KObject;
  const pod = (name: string) => store.get(`pods/default/${name}`)?.object as KObject | undefined;
  const events = () => store.list('events').items.map((s) => s.object as KObject & { reason: string; message: string; type: string; involvedObject: O; source: O });
  const endpoints = () => store.list('endpointslices.discovery.k8s.io', 'default').items.flatMap((s) => ((s.object as O)['endpoints'] ?? []) as { addresses: string[]; conditions: O }[]);
  const endpoint = (ip: string) => endpoints().find((e) => e.addresses[0] === ip)?.conditions;
  /** Time passes in steps; `alive` Nodes renew their Lease at each step, as the agent does every 10 s. */
  const pass = async (ms: number, alive: readonly string[] = [], step = 10_000) => {
    for (let left = ms; left > 0; left -= step) {
      await clock.advance(Math.min(step, left));
      for (const n of alive) await renew(n);
      await settle();
    }
  };
  return { clock, store, rest, ctl, start, settle, register, postReady, renew, runPod, node, pod, events, endpoints, endpoint, pass };
}

const ready = (n: KObject) => conditionOf(n, 'Ready')?.['status'];

t.test('a Node that renews its Lease stays Ready, untainted, with nothing recorded', async (t) => {
  const s = await setup(t);
  await s.register('n1');
  await s.renew('n1');
  await s.settle();
  await s.pass(5 * GRACE, ['n1']);
  t.equal(ready(s.node('n1')), 'True');
  t.same(taintsOf(s.node('n1')), []);
  t.same(s.events(), []);
});

t.test('a silent Node: Unknown after the grace period, tainted unreachable, its Pods not ready (and their endpoints), Events', async (t) => {
  const s = await setup(t);
  await s.register('n1', [{ type: 'MemoryPressure', status: 'False', reason: 'KubeletHasSufficientMemory', lastHeartbeatTime: rfc3339(s.clock.now()), lastTransitionTime: rfc3339(s.clock.now()) }]);
  await s.register('n2');
  await s.renew('n1');
  await s.renew('n2');
  await s.rest.create(SVC, 'default', { apiVersion: 'v1', kind: 'Service', metadata: { name: 'web' }, spec: { selector: { app: 'web' }, ports: [{ port: 80, targetPort: 8080 }] } });
  await s.runPod('a', 'n1', '10.244.1.2');
  await s.runPod('b', 'n2', '10.244.2.2');
  await s.settle();
  t.same(s.endpoint('10.244.1.2'), { ready: true, serving: true, terminating: false });
  await s.pass(30_000, ['n1', 'n2']);
  // n1 stops renewing: its last renewal was at T; Unknown at T + grace, not a moment before.
  const lastRenewal = s.clock.now();
  await s.pass(GRACE - 1_000, ['n2']);
  await s.clock.advance(999);
  await s.settle();
  t.equal(ready(s.node('n1')), 'True', 'still Ready 1 ms before the grace period ends');
  await s.clock.advance(1);
  await s.settle();
  const now = rfc3339(s.clock.now());
  t.equal(s.clock.now() - lastRenewal, GRACE);
  const n1 = s.node('n1');
  t.match(conditionOf(n1, 'Ready'), { status: 'Unknown', reason: 'NodeStatusUnknown', message: 'Kubelet stopped posting node status.', lastTransitionTime: now });
  t.match(conditionOf(n1, 'MemoryPressure'), { status: 'Unknown', reason: 'NodeStatusUnknown', lastTransitionTime: now }, 'every condition it reports');
  t.equal(conditionOf(n1, 'DiskPressure'), undefined, 'none it does not report');
  t.same(taintsOf(n1), [{ key: TAINT_UNREACHABLE, effect: 'NoSchedule', timeAdded: now }, { key: TAINT_UNREACHABLE, effect: 'NoExecute', timeAdded: now }]);
  t.equal(ready(s.node('n2')), 'True', 'the other Node is alive');
  t.same(taintsOf(s.node('n2')), []);
  t.match(conditionOf(s.pod('a')!, 'Ready'), { status: 'False', lastTransitionTime: now }, 'its Pod is not ready');
  t.equal(conditionOf(s.pod('b')!, 'Ready')?.['status'], 'True');
  t.same(s.endpoint('10.244.1.2'), { ready: false, serving: false, terminating: false }, 'its endpoint is neither ready nor serving');
  t.same(s.endpoint('10.244.2.2'), { ready: true, serving: true, terminating: false });
  const evs = s.events();
  t.match(evs.find((e) => e.involvedObject['kind'] === 'Node'), { metadata: { namespace: 'default' }, type: 'Normal', reason: 'NodeNotReady', message: 'Node n1 status is now: NodeNotReady', involvedObject: { name: 'n1' }, source: { component: 'node-controller' } });
  t.match(evs.find((e) => e.involvedObject['kind'] === 'Pod'), { metadata: { namespace: 'default' }, type: 'Warning', reason: 'NodeNotReady', message: 'Node is not ready', involvedObject: { name: 'a', namespace: 'default' } });
  t.equal(evs.length, 2);
  t.equal(s.ctl.scheduledEvictions().get('pods/default/a'), s.clock.now() + DEFAULT_TOLERATION_SECONDS * 1000, 'its Pod will be evicted after the default 300 s');
  // Nothing flaps: more time, no more writes.
  const rv = s.node('n1').metadata!['resourceVersion'];
  await s.pass(GRACE, ['n2']);
  t.equal(s.node('n1').metadata!['resourceVersion'], rv);
  t.equal(s.events().length, 2);
});

t.test('the Lease renewed and Ready posted by the agent: the taints go, the evictions are cancelled; the controller never sets Ready itself', async (t) => {
  const s = await setup(t);
  await s.register('n1');
  await s.register('n2'); // alive throughout: not every Node is down (that would be master disruption mode)
  await s.renew('n1');
  await s.renew('n2');
  await s.runPod('a', 'n1', '10.244.1.2');
  await s.settle();
  await s.pass(GRACE + 10_000, ['n2']);
  t.equal(ready(s.node('n1')), 'Unknown');
  await s.renew('n1');
  await s.pass(30_000, ['n1', 'n2']);
  t.equal(ready(s.node('n1')), 'Unknown', 'a renewed Lease keeps the Node from being judged, but Ready is the agent\'s to post');
  t.equal(taintsOf(s.node('n1')).length, 2, 'so the taints stay');
  await s.postReady('n1');
  await s.settle();
  t.equal(ready(s.node('n1')), 'True');
  t.same(taintsOf(s.node('n1')), [], 'the taints go');
  t.same([...s.ctl.scheduledEvictions().keys()], [], 'the eviction is cancelled');
  t.match(s.events().find((e) => e.reason === 'TaintManagerEviction'), { message: 'Cancelling deletion of Pod default/a', involvedObject: { kind: 'Pod', name: 'a' } });
  t.equal(conditionOf(s.pod('a')!, 'Ready')?.['status'], 'False', 'the Pod\'s readiness is its kubelet\'s to post again');
  await s.pass(2 * GRACE, ['n1', 'n2']);
  t.equal(ready(s.node('n1')), 'True');
  t.ok(s.pod('a'), 'not evicted');
  // Other taints are left alone.
  const n = s.node('n1');
  await s.rest.update(NODE, '', 'n1', { ...structuredClone(n), spec: { ...(n['spec'] as O), taints: [{ key: 'dedicated', value: 'db', effect: 'NoSchedule' }] } });
  await s.pass(GRACE + 10_000, ['n2']);
  t.same(taintsOf(s.node('n1')).map((x) => `${x.key}:${x.effect}`), ['dedicated:NoSchedule', `${TAINT_UNREACHABLE}:NoSchedule`, `${TAINT_UNREACHABLE}:NoExecute`]);
});

t.test('a Node that reports Ready=False is tainted not-ready; going Unknown swaps the taint', async (t) => {
  const s = await setup(t);
  await s.register('n1');
  await s.register('n2');
  await s.renew('n1');
  await s.renew('n2');
  await s.runPod('a', 'n1', '10.244.1.2');
  await s.settle();
  const now = rfc3339(s.clock.now());
  await s.rest.patch(NODE, '', 'n1', 'strategic', { status: { conditions: [{ type: 'Ready', status: 'False', reason: 'KubeletNotReady', lastHeartbeatTime: now, lastTransitionTime: now }] } }, { sub: 'status' });
  await s.settle();
  t.same(taintsOf(s.node('n1')).map((x) => `${x.key}:${x.effect}`), [`${TAINT_NOT_READY}:NoSchedule`, `${TAINT_NOT_READY}:NoExecute`]);
  t.equal(conditionOf(s.pod('a')!, 'Ready')?.['status'], 'False');
  t.notOk(s.events().some((e) => e.involvedObject['kind'] === 'Node'), 'the agent, not the controller, reports its own NotReady');
  await s.pass(GRACE, ['n2']);
  t.equal(ready(s.node('n1')), 'Unknown');
  t.same(taintsOf(s.node('n1')).map((x) => `${x.key}:${x.effect}`), [`${TAINT_UNREACHABLE}:NoSchedule`, `${TAINT_UNREACHABLE}:NoExecute`]);
});

t.test('eviction: at once without a toleration, after tolerationSeconds (300 s by default) with one, never without seconds; the ReplicaSet replaces its Pod', async (t) => {
  const s = await setup(t);
  await s.register('n1');
  await s.register('n2');
  await s.renew('n1');
  await s.renew('n2');
  const tol = (seconds?: number) => ({ tolerations: [{ key: TAINT_UNREACHABLE, operator: 'Exists', effect: 'NoExecute', ...(seconds === undefined ? {} : { tolerationSeconds: seconds }) }] });
  await s.runPod('zero', 'n1', '10.244.1.2', tol(0));
  await s.runPod('sixty', 'n1', '10.244.1.3', tol(60));
  await s.runPod('forever', 'n1', '10.244.1.4', tol());
  await s.runPod('default', 'n1', '10.244.1.5');
  await s.runPod('elsewhere', 'n2', '10.244.2.2');
  t.match(s.pod('default')!['spec'], { tolerations: [
    { key: TAINT_NOT_READY, operator: 'Exists', effect: 'NoExecute', tolerationSeconds: 300 },
    { key: TAINT_UNREACHABLE, operator: 'Exists', effect: 'NoExecute', tolerationSeconds: 300 },
  ] }, 'DefaultTolerationSeconds');
  t.equal((s.pod('sixty')!['spec'] as { tolerations: unknown[] }).tolerations.length, 2, 'its own unreachable toleration kept, not-ready added');
  // A ReplicaSet's Pod, bound to n1 as the scheduler would.
  await s.rest.create(RS, 'default', { apiVersion: 'apps/v1', kind: 'ReplicaSet', metadata: { name: 'rs' }, spec: { replicas: 1, selector: { matchLabels: { app: 'rs' } }, template: { metadata: { labels: { app: 'rs' } }, spec: { containers: [{ name: 'c', image: 'none' }] } } } });
  await s.settle();
  const owned = () => s.store.list('pods', 'default').items.map((x) => x.object as KObject).filter((p) => controllerOf(p)?.name === 'rs');
  const first = owned()[0]!;
  await s.rest.update(POD, 'default', String(first.metadata!['name']), { ...structuredClone(first), spec: { ...(first['spec'] as O), nodeName: 'n1' } });
  await s.settle();
  const alive = async (ms: number) => s.pass(ms, ['n2'], 5_000);
  await alive(GRACE);
  t.equal(ready(s.node('n1')), 'Unknown');
  const gone = (name: string) => Boolean(s.pod(name)?.metadata?.['deletionTimestamp']) || !s.pod(name);
  t.ok(gone('zero'), 'tolerationSeconds 0: evicted at once');
  t.match(s.pod('zero')?.['status'], { conditions: [{ type: 'Ready', status: 'False' }, { type: 'DisruptionTarget', status: 'True', reason: 'DeletionByTaintManager', message: 'Taint manager: deleting due to NoExecute taint' }] });
  t.match(s.events().find((e) => e.reason === 'TaintManagerEviction'), { type: 'Normal', message: 'Marking for deletion Pod default/zero', source: { component: 'taint-eviction-controller' } });
  t.notOk(gone('sixty'));
  await alive(55_000);
  t.notOk(gone('sixty'), 'not before 60 s');
  await alive(5_000);
  t.ok(gone('sixty'), 'after 60 s');
  await alive(300_000 - 60_000 - 5_000);
  t.notOk(gone('default'), 'not before 300 s');
  t.equal(owned().length, 1, 'the ReplicaSet\'s Pod is still there');
  await alive(5_000);
  t.ok(gone('default'), 'after 300 s');
  t.ok(owned().some((p) => p.metadata!['deletionTimestamp']), 'the ReplicaSet\'s Pod is evicted ...');
  t.ok(owned().some((p) => !p.metadata!['deletionTimestamp'] && !(p['spec'] as O)['nodeName']), '... and replaced by a new one for the scheduler to place');
  await alive(3_600_000);
  t.notOk(gone('forever'), 'no tolerationSeconds: tolerated for ever');
  t.notOk(gone('elsewhere'));
  t.same([...s.ctl.scheduledEvictions().keys()], []);
});

t.test('no flapping at start: every Node gets a full grace period from the controller\'s start; a Node that never posted anything becomes Unknown too', async (t) => {
  const persistence = new FakePersistence();
  const clock = new FakeClock(Date.UTC(2026, 11, 1, 12));
  const before = await setup(t, { start: false, persistence, clock });
  await before.register('old');
  await before.renew('old');
  await before.register('alive');
  await before.renew('alive');
  await before.rest.create(NODE, '', { apiVersion: 'v1', kind: 'Node', metadata: { name: 'bare' } });
  // The control plane was down for an hour: every heartbeat and Lease is stale.
  await clock.advance(3_600_000);
  const s = before;
  s.start();
  await s.settle();
  for (const n of ['old', 'alive']) t.equal(ready(s.node(n)), 'True', `${n}: not judged at start`);
  t.same(taintsOf(s.node('bare')), []);
  await s.pass(GRACE - 5_000, ['alive'], 5_000);
  await s.clock.advance(4_999);
  await s.settle();
  t.equal(ready(s.node('old')), 'True', 'still within the grace period counted from the start');
  await s.clock.advance(1);
  await s.renew('alive');
  await s.settle();
  t.equal(ready(s.node('old')), 'Unknown', 'no renewal since the start: Unknown');
  t.equal(ready(s.node('alive')), 'True', 'renewed since the start: Ready');
  t.match(conditionOf(s.node('bare'), 'Ready'), { status: 'Unknown', reason: 'NodeStatusNeverUpdated', message: 'Kubelet never posted node status.', lastHeartbeatTime: s.node('bare').metadata!['creationTimestamp'] });
  t.same(taintsOf(s.node('bare')).map((x) => x.key), [TAINT_UNREACHABLE, TAINT_UNREACHABLE]);
  const rv = s.node('bare').metadata!['resourceVersion'];
  await s.pass(2 * GRACE, ['alive']);
  t.equal(s.node('bare').metadata!['resourceVersion'], rv, 'the heartbeat it was given is not a sign of life: no flapping');
});

t.test('pure parts: tolerations, eviction delays, condition taints; bad grace periods', async (t) => {
  const taint = { key: TAINT_UNREACHABLE, effect: 'NoExecute' };
  t.ok(tolerates({ operator: 'Exists' }, taint), 'empty key with Exists: everything');
  // An empty key with Equal: upstream's ToleratesTaint matches an empty value (pod validation refuses such a toleration).
  t.ok(tolerates({ key: '', operator: 'Equal' }, taint), 'the scheduler\'s and the taint manager\'s answer are one');
  t.ok(tolerates({ key: TAINT_UNREACHABLE, operator: 'Exists' }, taint), 'no effect: every effect');
  t.notOk(tolerates({ key: TAINT_UNREACHABLE, operator: 'Exists', effect: 'NoSchedule' }, taint));
  t.ok(tolerates({ key: 'k', value: 'v', effect: 'NoExecute' }, { key: 'k', value: 'v', effect: 'NoExecute' }), 'Equal by default');
  t.notOk(tolerates({ key: 'k', operator: 'Equal', value: 'v' }, { key: 'k', value: 'w', effect: 'NoExecute' }));
  const other = { key: TAINT_NOT_READY, effect: 'NoExecute' };
  t.equal(evictionDelay([], []), 'never');
  t.equal(evictionDelay([taint], []), 'now');
  t.equal(evictionDelay([taint, other], [{ key: TAINT_UNREACHABLE, operator: 'Exists' }]), 'now', 'one taint not tolerated');
  t.equal(evictionDelay([taint, other], [{ key: TAINT_UNREACHABLE, operator: 'Exists', tolerationSeconds: 30 }, { operator: 'Exists', tolerationSeconds: 90 }]), 30, 'the smallest of those used');
  t.equal(evictionDelay([taint], [{ operator: 'Exists' }, { key: TAINT_UNREACHABLE, operator: 'Exists', tolerationSeconds: 5 }]), 'never', 'the first matching toleration is the one used');
  t.equal(evictionDelay([taint], [{ operator: 'Exists', tolerationSeconds: -1 }]), 0);
  t.same(desiredTaints('True'), []);
  t.same(desiredTaints(undefined), []);
  t.same(desiredTaints('False').map((x) => `${x.key}:${x.effect}`), [`${TAINT_NOT_READY}:NoSchedule`, `${TAINT_NOT_READY}:NoExecute`]);
  const ts = openTestStore({ persistence: new FakePersistence(), clock: new FakeClock() });
  const store = ts.cache;
  t.teardown(() => ts.close());
  const rest = new Rest({ storage: ts.storage, cache: store, schemas, admission: Admission.of(makePlugins({ cache: store, storage: ts.storage }), ['NamespaceLifecycle', 'DefaultTolerationSeconds']), clock: new FakeClock() });
  for (const g of [0, -1, Number.NaN]) t.throws(() => new NodeLifecycleController({ rest, cache: store, clock: new FakeClock(), log: silentLogger(), gracePeriodMs: g }), { code: 'NN_ERR_INVALID_CONFIG' });
});

t.test('disruption modes (node_lifecycle_controller_test.go TestMonitorNodeHealthEvictPodsWithDisruption): every Node down is master disruption, no NoExecute, no eviction; a zone mostly down evicts nothing; otherwise one Node per 10 s', async (t) => {
  const noExecute = (s: Awaited<ReturnType<typeof setup>>, n: string) => taintsOf(s.node(n)).some((x) => x.effect === 'NoExecute');
  await t.test('the only Node goes silent: NoSchedule only, nothing evicted; a Ready Node appears: out of master disruption, NoExecute', async (t) => {
    const s = await setup(t);
    await s.register('n1');
    await s.renew('n1');
    await s.runPod('a', 'n1', '10.244.1.2');
    await s.settle();
    await s.pass(GRACE + 10_000);
    t.equal(ready(s.node('n1')), 'Unknown');
    t.same(taintsOf(s.node('n1')).map((x) => `${x.key}:${x.effect}`), [`${TAINT_UNREACHABLE}:NoSchedule`], 'no NoExecute: the control plane may be the one cut off');
    t.same([...s.ctl.scheduledEvictions().keys()], [], 'no eviction scheduled');
    await s.register('n2');
    await s.renew('n2');
    await s.settle();
    t.ok(noExecute(s, 'n1'), 'a Ready Node again: n1 gets its NoExecute taint');
    t.same([...s.ctl.scheduledEvictions().keys()], ['pods/default/a'], 'and its Pod its eviction');
  });
  await t.test('three of four Nodes of a zone down (PartialDisruption, a small zone): no NoExecute', async (t) => {
    const s = await setup(t);
    for (const n of ['n1', 'n2', 'n3', 'n4']) {
      await s.register(n);
      await s.renew(n);
    }
    await s.settle();
    await s.pass(GRACE + 10_000, ['n4']);
    for (const n of ['n1', 'n2', 'n3']) t.equal(ready(s.node(n)), 'Unknown', `${n} Unknown`);
    t.notOk(['n1', 'n2', 'n3'].some((n) => noExecute(s, n)), 'none tainted NoExecute');
  });
  await t.test('two of five Nodes down (Normal): NoExecute on one at once, the other 10 s later (--node-eviction-rate 0.1)', async (t) => {
    const s = await setup(t);
    for (const n of ['n1', 'n2', 'n3', 'n4', 'n5']) {
      await s.register(n);
      await s.renew(n);
    }
    await s.settle();
    await s.pass(GRACE, ['n3', 'n4', 'n5'], 10_000);
    await s.clock.advance(1);
    await s.settle();
    t.same(['n1', 'n2'].map((n) => noExecute(s, n)), [true, false], 'one at once');
    await s.pass(10_000, ['n3', 'n4', 'n5']);
    t.same(['n1', 'n2'].map((n) => noExecute(s, n)), [true, true], 'the other at its turn');
  });
});
