/**
 * The scheduler's filters and scores through the real kubectl (issue 28), against a control plane whose Nodes report
 * what they have (status.allocatable posted as a kubelet posts it; no agents: binding is the scheduler's whole job,
 * so the Pods stay bound and Pending): replicas that do not all fit leave one Pending with "Insufficient cpu" in
 * `kubectl describe pod`, scheduled once a Node with room appears; required pod anti-affinity places one replica per
 * node and says why the last waits; a topology spread constraint with maxSkew 1 over 4 nodes; a stuck rollout that
 * `kubectl rollout status` fails on at its progress deadline, and its change-cause in `rollout history`;
 * PriorityClasses and the Priority admission; preemption of a lower-priority Pod. No root needed.
 */
import t from 'tap';
import { testControlPlane } from '../controlplane/testing/control-plane.js';
import { waitFor as wait } from '../agent/src/testing/wait.js';

const env = testControlPlane(t, 'nn-sched-', { nodes: ['n1', 'n2', 'n3', 'n4'] });
const kubectl = (args: string[], input?: string) => env.kubectl(args, input === undefined ? {} : { input });
const ok = (args: string[], input?: string) => env.ok(args, input === undefined ? {} : { input });
const waitFor = (what: string, f: () => Promise<boolean>) => wait(f, what, { timeoutMs: 20_000, intervalMs: 100 });

async function addNode(name: string, zone: string): Promise<void> {
  await ok(['apply', '-f', '-'], JSON.stringify({ apiVersion: 'v1', kind: 'Node', metadata: { name, labels: { 'kubernetes.io/hostname': name, 'topology.kubernetes.io/zone': zone } } }));
  await ok(['patch', 'node', name, '--subresource=status', '--type=merge', '-p', JSON.stringify({ status: {
    capacity: { cpu: '2', memory: '4Gi', pods: '110' }, allocatable: { cpu: '2', memory: '4Gi', pods: '110' },
    conditions: [{ type: 'Ready', status: 'True', reason: 'KubeletReady', message: 'test', lastHeartbeatTime: new Date().toISOString(), lastTransitionTime: new Date().toISOString() }],
  } })]);
}
const deployment = (name: string, replicas: number, spec: object, cpu = '100m') => JSON.stringify({
  apiVersion: 'apps/v1', kind: 'Deployment', metadata: { name },
  spec: { replicas, selector: { matchLabels: { app: name } }, template: { metadata: { labels: { app: name } }, spec: { containers: [{ name: 'c', image: 'nodenet/host', command: ['sleep', '1000'], resources: { requests: { cpu } } }], ...spec } } },
});
const pods = async (app: string) => JSON.parse(await ok(['get', 'pods', '-l', `app=${app}`, '-o', 'json'])) as { items: { metadata: { name: string }; spec: { nodeName?: string } }[] };
const placement = async (app: string) => (await pods(app)).items.map((p) => p.spec.nodeName ?? '');

/** The Deployment and its Pods, at once (no kubelet here finishes a graceful deletion). */
async function remove(app: string): Promise<void> {
  await ok(['delete', 'deployment', app]);
  await ok(['delete', 'pods', '-l', `app=${app}`, '--grace-period=0', '--force']);
  await waitFor(`${app} gone`, async () => (await pods(app)).items.length === 0);
}

t.before(async () => {
  for (const [n, z] of [['n1', 'z1'], ['n2', 'z1'], ['n3', 'z2']] as const) await addNode(n, z);
});

t.test('replicas that do not all fit: one Pending, and `kubectl describe pod` says "Insufficient cpu"; scheduled when a Node with room comes', async (t) => {
  await ok(['apply', '-f', '-'], deployment('hog', 4, {}, '1500m'));
  await waitFor('three bound', async () => (await placement('hog')).filter(Boolean).length === 3 && (await placement('hog')).length === 4);
  t.same((await placement('hog')).filter(Boolean).sort(), ['n1', 'n2', 'n3'], 'one per node: 1.5 of 2 cpus each');
  const pending = (await pods('hog')).items.find((p) => !p.spec.nodeName)!.metadata.name;
  await waitFor('the FailedScheduling event', async () => /FailedScheduling/.test((await kubectl(['describe', 'pod', pending])).out));
  const describe = await ok(['describe', 'pod', pending]);
  t.match(describe, /Status:\s+Pending/);
  t.match(describe, /Warning\s+FailedScheduling\s+.*default-scheduler\s+0\/3 nodes are available: 3 Insufficient cpu\./);
  t.match(await ok(['get', 'pod', pending, '-o', 'jsonpath={.status.conditions[?(@.type=="PodScheduled")].reason}']), 'Unschedulable');
  await addNode('n4', 'z2');
  await waitFor('the Pending one scheduled on n4', async () => (await placement('hog')).filter((n) => n === 'n4').length === 1);
  t.pass('the new Node took it');
  await remove('hog');
});

t.test('required pod anti-affinity: one replica per node; the replica with no node left says why', async (t) => {
  const anti = { affinity: { podAntiAffinity: { requiredDuringSchedulingIgnoredDuringExecution: [{ labelSelector: { matchLabels: { app: 'solo' } }, topologyKey: 'kubernetes.io/hostname' }] } } };
  await ok(['apply', '-f', '-'], deployment('solo', 5, anti));
  await waitFor('four bound', async () => (await placement('solo')).filter(Boolean).length === 4 && (await placement('solo')).length === 5);
  t.same((await placement('solo')).filter(Boolean).sort(), ['n1', 'n2', 'n3', 'n4']);
  const pending = (await pods('solo')).items.find((p) => !p.spec.nodeName)!.metadata.name;
  await waitFor('the FailedScheduling event', async () => /FailedScheduling/.test((await kubectl(['describe', 'pod', pending])).out));
  const d = await ok(['describe', 'pod', pending]);
  t.match(d, /0\/4 nodes are available: 4 node\(s\) didn't match pod anti-affinity rules\./, d.slice(d.indexOf('Events:')));
  await remove('solo');
});

t.test('topologySpreadConstraints maxSkew 1 over the hostname: 8 replicas on 4 nodes, two each', async (t) => {
  const spread = { topologySpreadConstraints: [{ maxSkew: 1, topologyKey: 'kubernetes.io/hostname', whenUnsatisfiable: 'DoNotSchedule', labelSelector: { matchLabels: { app: 'even' } } }] };
  await ok(['apply', '-f', '-'], deployment('even', 8, spread));
  await waitFor('all bound', async () => { const p = await placement('even'); return p.length === 8 && p.every(Boolean); });
  const per = new Map<string, number>();
  for (const n of await placement('even')) per.set(n, (per.get(n) ?? 0) + 1);
  t.same([...per.values()], [2, 2, 2, 2], `two per node: ${JSON.stringify([...per])}`);
  // By zone, maxSkew 1 over z1 (n1, n2) and z2 (n3, n4): a DoNotSchedule zone spread of 3 replicas splits 2 / 1.
  const zoned = { topologySpreadConstraints: [{ maxSkew: 1, topologyKey: 'topology.kubernetes.io/zone', whenUnsatisfiable: 'DoNotSchedule', labelSelector: { matchLabels: { app: 'zoned' } } }] };
  await ok(['apply', '-f', '-'], deployment('zoned', 3, zoned));
  await waitFor('zoned bound', async () => { const p = await placement('zoned'); return p.length === 3 && p.every(Boolean); });
  const zones = (await placement('zoned')).map((n) => (n === 'n1' || n === 'n2' ? 'z1' : 'z2'));
  t.ok(Math.abs(zones.filter((z) => z === 'z1').length - zones.filter((z) => z === 'z2').length) <= 1, `zones ${zones.join(',')}`);
});

t.test('a stuck rollout: `kubectl rollout status` fails once progressDeadlineSeconds pass; `rollout history` shows the change-cause', async (t) => {
  // No kubelet here: no Pod ever becomes ready, the rollout makes no progress.
  const d = JSON.parse(deployment('stuck', 1, {})) as { metadata: Record<string, unknown>; spec: Record<string, unknown> };
  d.metadata['annotations'] = { 'kubernetes.io/change-cause': 'kubectl apply stuck v1' };
  d.spec['progressDeadlineSeconds'] = 2;
  await ok(['apply', '-f', '-'], JSON.stringify(d));
  const r = await kubectl(['rollout', 'status', 'deployment/stuck', '--timeout=60s']);
  t.not(r.code, 0, 'rollout status fails');
  t.match(r.err, /deployment "stuck" exceeded its progress deadline/, 'for the deadline, not its own --timeout ("timed out waiting for the condition")');
  t.match(await ok(['rollout', 'history', 'deployment/stuck']), /REVISION\s+CHANGE-CAUSE\n1\s+kubectl apply stuck v1/);
  await remove('stuck');
});

t.test('PriorityClasses: the system ones at start, `kubectl create priorityclass`, one global default, and the Priority admission resolving a Pod\'s class', async (t) => {
  t.match(await ok(['get', 'priorityclasses']), /NAME\s+VALUE\s+GLOBAL-DEFAULT\s+AGE\nsystem-cluster-critical\s+2000000000\s+false\s+\S+\nsystem-node-critical\s+2000001000\s+false/);
  await ok(['create', 'priorityclass', 'gold', '--value=1000', '--global-default=true', '--description=the default']);
  const second = await kubectl(['create', 'priorityclass', 'silver', '--value=500', '--global-default=true']);
  t.match(second.err, /priorityclasses.scheduling.k8s.io "silver" is forbidden: PriorityClass gold is already marked as default. Only one default can exist/);
  await ok(['create', 'priorityclass', 'low', '--value=10', '--preemption-policy=Never']);
  t.match((await kubectl(['create', 'priorityclass', 'huge', '--value=1000000001'])).err, /value: Forbidden: maximum allowed value of a user defined priority is 1000000000/);
  t.match((await kubectl(['create', 'priorityclass', 'system-mine', '--value=1'])).err, /priority class names with 'system-' prefix are reserved for system use only/);
  const pod = (name: string, spec: object = {}) => JSON.stringify({ apiVersion: 'v1', kind: 'Pod', metadata: { name }, spec: { containers: [{ name: 'c', image: 'nodenet/host', command: ['sleep', '1'] }], ...spec } });
  await ok(['apply', '-f', '-'], pod('p-low', { priorityClassName: 'low' }));
  t.equal(await ok(['get', 'pod', 'p-low', '-o', 'jsonpath={.spec.priority} {.spec.preemptionPolicy}']), '10 Never');
  await ok(['apply', '-f', '-'], pod('p-default'));
  t.equal(await ok(['get', 'pod', 'p-default', '-o', 'jsonpath={.spec.priorityClassName} {.spec.priority}']), 'gold 1000', 'the global default');
  t.match((await kubectl(['apply', '-f', '-'], pod('p-none', { priorityClassName: 'platinum' }))).err, /pods "p-none" is forbidden: no PriorityClass with name platinum was found/);
  t.match((await kubectl(['apply', '-f', '-'], pod('p-forged', { priorityClassName: 'low', priority: 99 }))).err, /the integer value of priority \(99\) must not be provided in pod spec; priority admission controller computed 10 from the given PriorityClass name/);
  await ok(['delete', 'pods', 'p-low', 'p-default', '--grace-period=0', '--force']);
  await ok(['delete', 'priorityclass', 'gold', 'low']);
});

t.test('preemption: a higher-priority Pod that fits nowhere evicts a lower one (DisruptionTarget, Preempted, nominatedNodeName) and takes its place', async (t) => {
  await ok(['create', 'priorityclass', 'high', '--value=1000']);
  await ok(['create', 'priorityclass', 'low', '--value=10']);
  const low = JSON.parse(deployment('filler', 4, { priorityClassName: 'low' }, '1500m')) as object;
  await ok(['apply', '-f', '-'], JSON.stringify(low));
  await waitFor('every node filled', async () => { const p = await placement('filler'); return p.length === 4 && p.every(Boolean); });
  const vip = JSON.stringify({ apiVersion: 'v1', kind: 'Pod', metadata: { name: 'vip' }, spec: { priorityClassName: 'high', containers: [{ name: 'c', image: 'nodenet/host', command: ['sleep', '1000'], resources: { requests: { cpu: '1500m' } } }] } });
  await ok(['apply', '-f', '-'], vip);
  await waitFor('a victim', async () => /Preempted/.test(await ok(['get', 'events', '--field-selector', 'reason=Preempted', '-o', 'name'])) || (await ok(['get', 'events', '--field-selector', 'reason=Preempted'])).includes('Preempted'));
  const nominated = await ok(['get', 'pod', 'vip', '-o', 'jsonpath={.status.nominatedNodeName}']);
  t.match(nominated, /^n[1-4]$/, `nominated on ${nominated}`);
  const victims = (JSON.parse(await ok(['get', 'pods', '-l', 'app=filler', '-o', 'json'])) as { items: { metadata: { name: string; deletionTimestamp?: string }; spec: { nodeName?: string }; status: { conditions?: { type: string; reason?: string }[] } }[] }).items.filter((p) => p.metadata.deletionTimestamp);
  t.equal(victims.length, 1, 'one victim');
  t.equal(victims[0]!.spec.nodeName, nominated, 'on the nominated node');
  t.match(victims[0]!.status.conditions?.find((c) => c.type === 'DisruptionTarget'), { type: 'DisruptionTarget', reason: 'PreemptionByScheduler' });
  t.match(await ok(['get', 'events', '--field-selector', `involvedObject.name=${victims[0]!.metadata.name}`]), new RegExp(`Preempted\\s+pod/${victims[0]!.metadata.name}\\s+Preempted by pod \\S+ on node ${nominated}`));
  // No kubelet here: finish the victim's graceful deletion as its kubelet would.
  await ok(['delete', 'pod', victims[0]!.metadata.name, '--grace-period=0', '--force']);
  await waitFor('vip bound', async () => (await ok(['get', 'pod', 'vip', '-o', 'jsonpath={.spec.nodeName}'])) === nominated);
  t.pass(`vip bound to ${nominated}`);
  // The ReplicaSet's replacement has nothing of lower priority to preempt: it waits, and says so.
  await waitFor('the replacement Pending with its message', async () => /preemption: 0\/4 nodes are available: 4 No preemption victims found for incoming pod\./.test(await ok(['get', 'events', '--field-selector', 'reason=FailedScheduling'])));
  t.pass('the replacement: "preemption: 0/4 nodes are available: 4 No preemption victims found for incoming pod."');
  await ok(['delete', 'pod', 'vip', '--grace-period=0', '--force']);
  await remove('filler');
  await ok(['delete', 'priorityclass', 'high', 'low']);
});
