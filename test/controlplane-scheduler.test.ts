/**
 * The scheduler and the controllers' Events through the real kubectl
 * against `nodenet control-plane` on loopback (TLS, generated CA and
 * tokens; no root): a Deployment's Pods spread over the Ready nodes,
 * `kubectl get events` tells the story (ScalingReplicaSet, SuccessfulCreate,
 * Scheduled), a Pod that fits nowhere stays Pending and `kubectl describe`
 * says why, and the `binding` subresource answers as kube-apiserver's
 * (discovery, 201, 409 for a bound Pod, 403 for a node's token).
 */
import t from 'tap';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { testControlPlane } from '../controlplane/testing/control-plane.js';
import { waitFor } from '../agent/src/testing/wait.js';

const env = testControlPlane(t, 'nn-cp-sched-', { nodes: ['n1'] });
const { dir, kubectl, ok } = env;

const NODES = ['n1', 'n2', 'n3'].map((n) => `apiVersion: v1\nkind: Node\nmetadata: {name: ${n}, labels: {pool: web}}\n`).join('---\n') + '---\napiVersion: v1\nkind: Node\nmetadata: {name: n4, labels: {pool: web}}\n';
const DEPLOY = `apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec:
  replicas: 3
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      nodeSelector: {pool: web}
      containers: [{name: c, image: none}]
`;

t.test('a Deployment\'s Pods spread over the Ready nodes, and kubectl get events tells how', async (t) => {
  await ok(['apply', '-f', '-'], { input: NODES });
  // n1-n3 Ready (as their kubelets would post it); n4 never reports: no Ready condition.
  for (const n of ['n1', 'n2', 'n3']) {
    await ok(['patch', 'node', n, '--subresource=status', '--type=merge', '-p', JSON.stringify({ status: { conditions: [{ type: 'Ready', status: 'True', reason: 'KubeletReady', lastHeartbeatTime: new Date().toISOString().replace(/\.\d+Z$/, 'Z') }] } })]);
  }
  await ok(['apply', '-f', '-'], { input: DEPLOY });
  let placed: string[] = [];
  await waitFor(async () => {
    placed = (await ok(['get', 'pods', '-l', 'app=web', '-o', 'jsonpath={.items[*].spec.nodeName}'])).split(' ').filter(Boolean);
    return placed.length === 3;
  }, 'three Pods bound');
  t.same([...placed].sort(), ['n1', 'n2', 'n3'], 'one replica per Ready node, none on n4');
  t.match(await ok(['get', 'pods', '-l', 'app=web', '-o', 'wide']), /^web-\w+-\w{5}\s+0\/1\s+Pending\s+0\s+\S+\s+<none>\s+n[123]\s/m, 'kubectl shows the node; the Pods stay Pending without a kubelet');
  const conds = await ok(['get', 'pods', '-l', 'app=web', '-o', 'jsonpath={range .items[*]}{.status.conditions[?(@.type=="PodScheduled")].status}{" "}{end}']);
  t.equal(conds.trim(), 'True True True', 'PodScheduled=True, set by the binding');

  let events = '';
  await waitFor(async () => {
    events = await ok(['get', 'events', '-o', 'jsonpath={range .items[*]}{.reason}|{.involvedObject.kind}/{.involvedObject.name}|{.source.component}|{.message}{"\\n"}{end}']);
    return (events.match(/^Scheduled\|/gm) ?? []).length === 3 && (events.match(/^SuccessfulCreate\|/gm) ?? []).length === 3;
  }, 'the Events');
  const rs = (await ok(['get', 'rs', '-l', 'app=web', '-o', 'jsonpath={.items[0].metadata.name}'])).trim();
  t.match(events, new RegExp(`^ScalingReplicaSet\\|Deployment/web\\|deployment-controller\\|Scaled up replica set ${rs} from 0 to 3$`, 'm'));
  const pods = (await ok(['get', 'pods', '-l', 'app=web', '-o', 'jsonpath={range .items[*]}{.metadata.name} {.spec.nodeName}{"\\n"}{end}'])).trim().split('\n').map((l) => l.split(' '));
  for (const [pod, node] of pods) {
    t.match(events, new RegExp(`^SuccessfulCreate\\|ReplicaSet/${rs}\\|replicaset-controller\\|Created pod: ${pod}$`, 'm'), `SuccessfulCreate for ${pod}`);
    t.match(events, new RegExp(`^Scheduled\\|Pod/${pod}\\|default-scheduler\\|Successfully assigned default/${pod} to ${node}$`, 'm'), `Scheduled for ${pod}`);
  }
  const table = await ok(['get', 'events', '--field-selector', 'reason=Scheduled']);
  t.match(table, /^LAST SEEN\s+TYPE\s+REASON\s+OBJECT\s+MESSAGE$/m);
  t.match(table, /^\S+\s+Normal\s+Scheduled\s+pod\/web-\S+\s+Successfully assigned default\/web-\S+ to n[123]$/m);
});

t.test('a Pod that fits nowhere stays Pending, and kubectl describe says why', async (t) => {
  await ok(['apply', '-f', '-'], { input: 'apiVersion: v1\nkind: Pod\nmetadata: {name: lonely}\nspec:\n  nodeSelector: {disk: ssd}\n  containers: [{name: c, image: none}]\n' });
  // With upstream's PostFilter part: no eviction can cure a taint or a selector.
  const why = "0/4 nodes are available: 1 node(s) had untolerated taint {node.kubernetes.io/unreachable: }, 3 node(s) didn't match Pod's node affinity/selector. preemption: 0/4 nodes are available: 4 Preemption is not helpful for scheduling.";
  await waitFor(async () => (await ok(['get', 'pod', 'lonely', '-o', 'jsonpath={.status.conditions[?(@.type=="PodScheduled")].reason}'])) === 'Unschedulable', 'the Unschedulable condition');
  t.match(await ok(['get', 'pod', 'lonely']), /^lonely\s+0\/1\s+Pending\s+0\s+/m);
  t.equal(await ok(['get', 'pod', 'lonely', '-o', 'jsonpath={.spec.nodeName}']), '');
  t.equal(await ok(['get', 'pod', 'lonely', '-o', 'jsonpath={.status.conditions[?(@.type=="PodScheduled")].message}']), why);
  let desc = '';
  await waitFor(async () => /FailedScheduling/.test((desc = await ok(['describe', 'pod', 'lonely']))), 'the Event in describe');
  t.match(desc, /^Node:\s+<none>$/m);
  t.match(desc, /^Status:\s+Pending$/m);
  t.match(desc, /^\s+PodScheduled\s+False\s*$/m, 'the condition in describe');
  t.match(desc, /^Node-Selectors:\s+disk=ssd$/m);
  t.ok(desc.includes(`Warning  FailedScheduling  `) && desc.includes(`default-scheduler  ${why}`), desc.slice(desc.indexOf('Events:')));

  // A node that matches comes: the Pod is tried again and bound.
  await ok(['label', 'node', 'n2', 'disk=ssd']);
  await waitFor(async () => (await ok(['get', 'pod', 'lonely', '-o', 'jsonpath={.spec.nodeName}'])) === 'n2', 'bound once a node matches');
  t.pass('bound to n2 once it was labelled disk=ssd');
});

t.test('the binding subresource: in discovery, 201 once, 409 for a bound Pod, 403 for a node', async (t) => {
  const discovery = JSON.parse(await ok(['get', '--raw', '/api/v1'])) as { resources: { name: string; kind: string; verbs: string[] }[] };
  t.same(discovery.resources.find((r) => r.name === 'pods/binding'), { name: 'pods/binding', singularName: '', namespaced: true, kind: 'Binding', verbs: ['create'] });
  // Another scheduler's Pod: nodenet's leaves it, so the test binds it.
  await ok(['apply', '-f', '-'], { input: 'apiVersion: v1\nkind: Pod\nmetadata: {name: manual}\nspec:\n  schedulerName: my-scheduler\n  containers: [{name: c, image: none}]\n' });
  const binding = join(dir, 'binding.json');
  writeFileSync(binding, JSON.stringify({ apiVersion: 'v1', kind: 'Binding', metadata: { name: 'manual' }, target: { apiVersion: 'v1', kind: 'Node', name: 'n3' } }));
  const path = '/api/v1/namespaces/default/pods/manual/binding';
  const denied = await kubectl(['create', '--raw', path, '-f', binding], { kubeconfig: env.cp.nodeKubeconfig('n1') });
  t.not(denied.code, 0);
  t.match(denied.err, /pods "manual" is forbidden: User "system:node:n1" cannot create resource "pods\/binding" in API group "" in the namespace "default"\n/, 'a node may not bind');
  t.equal(await ok(['get', 'pod', 'manual', '-o', 'jsonpath={.spec.nodeName}']), '', 'not bound by the refused request');
  const made = JSON.parse(await ok(['create', '--raw', path, '-f', binding])) as Record<string, unknown>;
  t.match(made, { kind: 'Status', status: 'Success', code: 201 });
  t.equal(await ok(['get', 'pod', 'manual', '-o', 'jsonpath={.spec.nodeName}']), 'n3');
  const again = await kubectl(['create', '--raw', path, '-f', binding]);
  t.not(again.code, 0);
  t.match(again.err, /Operation cannot be fulfilled on pods\/binding "manual": pod manual is already assigned to node "n3"/);
  const mismatch = await kubectl(['create', '--raw', '/api/v1/namespaces/default/pods/nope/binding', '-f', binding]);
  t.match(mismatch.err, /BadRequest.*name in URL does not match name in Binding object/);
  writeFileSync(binding, JSON.stringify({ apiVersion: 'v1', kind: 'Binding', metadata: { name: 'nope' }, target: { kind: 'Node', name: 'n3' } }));
  const missing = await kubectl(['create', '--raw', '/api/v1/namespaces/default/pods/nope/binding', '-f', binding]);
  t.match(missing.err, /NotFound.*pods "nope" not found/);
});
