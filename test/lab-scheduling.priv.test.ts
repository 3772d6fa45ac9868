/**
 * The scheduler's default plugins with the real kubectl on a lab with agents (issue 28): three virtual nodes whose
 * agents register their Nodes with a small fixed capacity (cpu=1 each, the config's `capacity`) and run, with their
 * embedded kubelets, the Pods the scheduler binds to them (`sleep` as the container). The same cases as
 * controlplane-scheduling.test.ts, where the Nodes are posted objects, but here a Pod bound is a Pod running: its
 * kubelet reports it Running and Ready, finishes a victim's graceful deletion, and runs the readiness probe that
 * keeps a rollout stuck.
 *
 * One lab for every case, each case in a Namespace of its own, deleted (and waited for: its Pods stopped by their
 * kubelets, their cpu free) by the case's teardown, also when it fails:
 * - Deployments whose cpu requests fit only partly: the Pending replica's `kubectl describe pod` says
 *   "0/3 nodes are available: 3 Insufficient cpu."; it is scheduled and runs once another Deployment scales down;
 * - preemption: a PriorityClass high Pod that fits nowhere evicts a low one (Preempted, nominatedNodeName) and runs
 *   where it ran;
 * - a topology spread constraint, maxSkew 1 over kubernetes.io/hostname: 6 replicas run 2/2/2 (a preferred node
 *   affinity for n1 pulls the other way);
 * - a stuck rollout: `kubectl rollout status` fails at progressDeadlineSeconds ("exceeded its progress deadline");
 * - last, as it adds a node: required pod anti-affinity, one replica per node, the extra one Pending ("didn't match
 *   pod anti-affinity rules") until a 4th node joins the lab (lab.addNode), where it runs.
 * The lab is destroyed by the file's teardown; a run killed before that leaves a lab whose owner is dead, which the
 * next `npm test`'s leftover sweep removes (lab/leftovers.ts).
 */
import t, { type Test } from 'tap';
import type { Lab, VNode } from '../agent/src/lab/lab.js';
import { newLab, runner } from '../agent/src/testing/lab.js';
import { waitFor } from '../agent/src/testing/wait.js';

const NODES = ['n1', 'n2', 'n3'];
/** A node's whole share: one cpu, so that requests of 600m fit once per node. */
const NODE_CONFIG = { runPods: true, proxyMode: 'none', overlay: 'none', nodeLeaseDurationSeconds: 10, capacity: 'cpu=1,memory=2Gi,ephemeral-storage=10Gi,pods=20' };

let lab: Lab;
let kubeconfig = '';

interface Result { code: number; out: string; err: string }
async function kubectl(args: readonly string[], input?: string): Promise<Result> {
  const r = await runner.run(['kubectl', '--kubeconfig', kubeconfig, '--request-timeout=20s', ...args], { allowFailure: true, timeoutMs: 120_000, ...(input === undefined ? {} : { input }) });
  return { code: r.exitCode, out: r.stdout, err: r.stderr };
}
async function ok(args: readonly string[], input?: string): Promise<string> {
  const r = await kubectl(args, input);
  if (r.code !== 0) throw new Error(`kubectl ${args.join(' ')}: ${r.err}${r.out}`);
  return r.out;
}

interface PodView {
  readonly name: string;
  readonly uid: string;
  readonly node: string;
  readonly phase: string;
  readonly ready: boolean;
  /** The (first) container runs, as its kubelet reports it. */
  readonly running: boolean;
  readonly podIP: string;
  readonly nominated: string;
  readonly deleting: boolean;
}
interface ApiPod {
  metadata: { name: string; uid: string; deletionTimestamp?: string };
  spec: { nodeName?: string };
  status: { phase?: string; podIP?: string; nominatedNodeName?: string; conditions?: { type: string; status: string }[]; containerStatuses?: { state?: { running?: unknown } }[] };
}
async function pods(ns: string, selector?: string): Promise<PodView[]> {
  const o = JSON.parse(await ok(['get', 'pods', '-n', ns, ...(selector ? ['-l', selector] : []), '-o', 'json'])) as { items: ApiPod[] };
  return o.items.map((p) => ({
    name: p.metadata.name,
    uid: p.metadata.uid,
    node: p.spec.nodeName ?? '',
    phase: p.status.phase ?? '',
    ready: p.status.conditions?.some((c) => c.type === 'Ready' && c.status === 'True') ?? false,
    running: p.status.containerStatuses?.[0]?.state?.running !== undefined,
    podIP: p.status.podIP ?? '',
    nominated: p.status.nominatedNodeName ?? '',
    deleting: p.metadata.deletionTimestamp !== undefined,
  }));
}
/** Running on an agent: bound, phase Running, Ready, its container running, an IP from the node's CNI. */
const runs = (p: PodView) => p.node !== '' && p.phase === 'Running' && p.ready && p.running && /^10\.244\.\d+\.\d+$/.test(p.podIP) && !p.deleting;
const unbound = (p: PodView) => p.node === '' && p.phase === 'Pending' && !p.deleting;

/** What the cluster looked like, for a failure message. */
async function picture(ns: string): Promise<string> {
  const listing = await kubectl(['get', 'nodes,pods', '-n', ns, '-o', 'wide']);
  const events = await kubectl(['get', 'events', '-n', ns, '--sort-by=.lastTimestamp']);
  return `\n${listing.out}${listing.err}\nevents:\n${events.out.split('\n').slice(-15).join('\n')}`;
}
async function until(ns: string, what: string, cond: () => Promise<boolean>, timeoutMs = 60_000): Promise<void> {
  try {
    await waitFor(cond, what, { timeoutMs, intervalMs: 200 });
  } catch (e) {
    throw new Error(`${e instanceof Error ? e.message : String(e)}${await picture(ns)}`);
  }
}

/** A Namespace for one case, deleted when the case ends (passed or not) and waited for: its Pods gone from the nodes. */
async function caseNamespace(t: Test, ns: string, cleanup: () => Promise<unknown> = async () => undefined): Promise<void> {
  await ok(['create', 'namespace', ns]);
  t.teardown(async () => {
    await kubectl(['delete', 'namespace', ns, '--wait=false']);
    await cleanup();
    await until(ns, `namespace ${ns} gone`, async () => (await kubectl(['get', 'namespace', ns])).code !== 0, 90_000);
  });
}

interface Container { name: string; image: string; command: string[]; resources: { requests: { cpu: string } }; readinessProbe?: object }
const container = (cpu: string): Container => ({ name: 'c', image: 'nodenet/host', command: ['sleep', 'infinity'], resources: { requests: { cpu } } });
function deployment(ns: string, name: string, replicas: number, cpu: string, podSpec: object = {}, spec: object = {}): string {
  return JSON.stringify({
    apiVersion: 'apps/v1', kind: 'Deployment', metadata: { name, namespace: ns },
    spec: { replicas, selector: { matchLabels: { app: name } }, ...spec,
      template: { metadata: { labels: { app: name } }, spec: { terminationGracePeriodSeconds: 1, containers: [container(cpu)], ...podSpec } } },
  });
}

/** The latest FailedScheduling message `kubectl describe pod` shows for the Pod, '' while there is none. */
async function failedScheduling(ns: string, pod: string): Promise<string> {
  const d = (await kubectl(['describe', 'pod', '-n', ns, pod])).out;
  const lines = d.split('\n').filter((l) => /Warning\s+FailedScheduling\s/.test(l));
  return lines.at(-1) ?? '';
}

t.before(async () => {
  lab = await newLab('sc');
  // n4's credentials too: it joins in the last case.
  const cp = await lab.startControlPlane({ nodes: [...NODES, 'n4'] });
  kubeconfig = (await cp.localAccess()).kubeconfig;
  const nodes: VNode[] = [];
  for (const n of NODES) nodes.push(await lab.addNode(n, { clusterCIDR: '10.244.0.0/16', config: NODE_CONFIG }));
  await Promise.all(nodes.map((n) => n.startAgent()));
  await until('default', 'three Nodes Ready with cpu 1 allocatable', async () => {
    const r = await kubectl(['get', 'nodes', '-o', 'jsonpath={range .items[*]}{.metadata.name} {.status.allocatable.cpu} {.status.conditions[?(@.type=="Ready")].status}{"\\n"}{end}']);
    return r.out.trim().split('\n').sort().join(',') === 'n1 1 True,n2 1 True,n3 1 True';
  });
});
t.teardown(async () => {
  await lab?.destroy();
});

t.test('cpu requests that fit only partly: the Pending replica says "3 Insufficient cpu", the others run; it runs once another Deployment scales down', async (t) => {
  const ns = 'fit';
  await caseNamespace(t, ns);
  // `other` takes 600m of one node; `hog`'s three replicas of 600m then fit on the two other nodes only.
  await ok(['apply', '-f', '-'], deployment(ns, 'other', 1, '600m'));
  let otherNode = '';
  await until(ns, 'other running', async () => {
    const p = (await pods(ns, 'app=other')).filter(runs);
    otherNode = p[0]?.node ?? '';
    return p.length === 1;
  });
  await ok(['apply', '-f', '-'], deployment(ns, 'hog', 3, '600m'));
  let hog: PodView[] = [];
  await until(ns, 'two hog replicas running, one unbound', async () => {
    hog = await pods(ns, 'app=hog');
    return hog.length === 3 && hog.filter(runs).length === 2 && hog.filter(unbound).length === 1;
  });
  const running = hog.filter(runs);
  t.same(running.map((p) => p.node).sort(), NODES.filter((n) => n !== otherNode), `the two running replicas on the nodes other than ${otherNode}`);
  const pending = hog.find(unbound)!.name;
  await until(ns, `${pending}'s FailedScheduling event`, async () => (await failedScheduling(ns, pending)) !== '');
  const describe = await ok(['describe', 'pod', '-n', ns, pending]);
  t.match(describe, /\nStatus:\s+Pending\n/);
  t.match(describe, /Warning\s+FailedScheduling\s+.*default-scheduler\s+0\/3 nodes are available: 3 Insufficient cpu\./, describe.slice(describe.indexOf('Events:')));
  t.equal(await ok(['get', 'pod', '-n', ns, pending, '-o', 'jsonpath={.status.conditions[?(@.type=="PodScheduled")].reason}']), 'Unschedulable');
  // Room appears: `other` scales to 0, its Pod stopped by its kubelet, and the Pending replica takes its place.
  await ok(['scale', '-n', ns, 'deployment/other', '--replicas=0']);
  await until(ns, `${pending} running on ${otherNode}`, async () => (await pods(ns, 'app=hog')).some((p) => p.name === pending && runs(p)));
  const now = await pods(ns, 'app=hog');
  t.equal(now.find((p) => p.name === pending)?.node, otherNode, `${pending} runs where other ran`);
  t.same(now.filter(runs).map((p) => p.node).sort(), NODES, 'hog runs one replica per node');
  t.same((await pods(ns, 'app=other')).length, 0, 'other has no Pod left');
});

t.test('preemption: a PriorityClass high Pod that fits nowhere evicts a low one and runs in its place', async (t) => {
  const ns = 'preempt';
  await caseNamespace(t, ns, () => kubectl(['delete', 'priorityclass', 'sched-high', 'sched-low']));
  await ok(['create', 'priorityclass', 'sched-high', '--value=1000']);
  await ok(['create', 'priorityclass', 'sched-low', '--value=10']);
  await ok(['apply', '-f', '-'], deployment(ns, 'filler', 3, '600m', { priorityClassName: 'sched-low' }));
  await until(ns, 'filler running on every node', async () => {
    const p = (await pods(ns, 'app=filler')).filter(runs);
    return p.length === 3 && new Set(p.map((x) => x.node)).size === 3;
  });
  const fillers = (await pods(ns, 'app=filler')).filter(runs);
  await ok(['apply', '-f', '-'], JSON.stringify({
    apiVersion: 'v1', kind: 'Pod', metadata: { name: 'vip', namespace: ns, labels: { app: 'vip' } },
    spec: { priorityClassName: 'sched-high', terminationGracePeriodSeconds: 1, containers: [container('600m')] },
  }));
  let nominated = '';
  let vip: PodView | undefined;
  await until(ns, 'vip running', async () => {
    vip = (await pods(ns, 'app=vip'))[0];
    if (vip?.nominated) nominated = vip.nominated;
    return vip !== undefined && runs(vip);
  });
  t.equal(await ok(['get', 'pod', '-n', ns, 'vip', '-o', 'jsonpath={.spec.priority}']), '1000', 'the Priority admission resolved its class');
  const events = (JSON.parse(await ok(['get', 'events', '-n', ns, '--field-selector', 'reason=Preempted', '-o', 'json'])) as { items: { involvedObject: { name: string }; message: string }[] }).items;
  t.equal(events.length, 1, `one victim: ${JSON.stringify(events)}`);
  const victim = events[0]?.involvedObject.name ?? '';
  const victimWas = fillers.find((p) => p.name === victim);
  t.ok(victimWas, `the victim ${victim} is one of the running fillers`);
  t.equal(events[0]?.message, `Preempted by pod ${vip!.uid} on node ${victimWas?.node}`, 'the Preempted Event names the preemptor and the node');
  t.equal(vip!.node, victimWas?.node, `vip runs on the victim's node ${victimWas?.node}`);
  if (nominated) t.equal(nominated, vip!.node, 'nominatedNodeName was the node it runs on');
  else t.comment('nominatedNodeName not caught while vip waited (the Preempted Event says the node)');
  t.not((await kubectl(['get', 'pod', '-n', ns, victim])).code, 0, `the victim ${victim} is gone (its kubelet stopped it)`);
  // The victim's replacement has nothing of lower priority to evict: it waits, and says so.
  const after = await pods(ns, 'app=filler');
  t.equal(after.filter(runs).length, 2, 'two fillers still run');
  const replacement = after.find(unbound);
  t.ok(replacement, 'the victim\'s replacement is not scheduled');
  if (replacement) {
    await until(ns, 'the replacement\'s FailedScheduling', async () => /No preemption victims/.test(await failedScheduling(ns, replacement.name)));
    t.match(await failedScheduling(ns, replacement.name), /0\/3 nodes are available: 3 Insufficient cpu\. preemption: 0\/3 nodes are available: 3 No preemption victims found for incoming pod\./);
  }
});

t.test('topologySpreadConstraints maxSkew 1 over kubernetes.io/hostname: 6 replicas run 2/2/2', async (t) => {
  const ns = 'spread';
  await caseNamespace(t, ns);
  const spec = {
    topologySpreadConstraints: [{ maxSkew: 1, topologyKey: 'kubernetes.io/hostname', whenUnsatisfiable: 'DoNotSchedule', labelSelector: { matchLabels: { app: 'even' } } }],
    // Scores alone would put them all on n1: the constraint is a filter, it wins.
    affinity: { nodeAffinity: { preferredDuringSchedulingIgnoredDuringExecution: [{ weight: 100, preference: { matchExpressions: [{ key: 'kubernetes.io/hostname', operator: 'In', values: ['n1'] }] } }] } },
  };
  await ok(['apply', '-f', '-'], deployment(ns, 'even', 6, '50m', spec));
  await until(ns, 'six replicas running', async () => (await pods(ns, 'app=even')).filter(runs).length === 6);
  // The table's columns by their header's offsets (RESTARTS may hold spaces: "1 (5s ago)").
  const [header = '', ...rows] = (await ok(['get', 'pods', '-n', ns, '-l', 'app=even', '-o', 'wide'])).trimEnd().split('\n');
  const column = (row: string, name: string) => row.slice(header.search(new RegExp(`\\b${name}\\b`))).split(/\s+/)[0] ?? '';
  const perNode = new Map<string, number>();
  for (const row of rows) {
    t.equal(column(row, 'STATUS'), 'Running', `${column(row, 'NAME')} Running in kubectl get pods -o wide`);
    perNode.set(column(row, 'NODE'), (perNode.get(column(row, 'NODE')) ?? 0) + 1);
  }
  t.same(Object.fromEntries([...perNode].sort()), { n1: 2, n2: 2, n3: 2 }, `kubectl get pods -o wide: ${JSON.stringify([...perNode])}`);
});

t.test('a stuck rollout: `kubectl rollout status` fails with "exceeded its progress deadline"', async (t) => {
  const ns = 'rollout';
  await caseNamespace(t, ns);
  await ok(['apply', '-f', '-'], deployment(ns, 'web', 2, '50m'));
  const first = await kubectl(['rollout', 'status', '-n', ns, 'deployment/web', '--timeout=90s']);
  t.equal(first.code, 0, `the first rollout completes: ${first.err}`);
  t.match(first.out, /deployment "web" successfully rolled out/);
  // The new template's readiness probe never passes on its kubelet: the rollout makes no progress.
  await ok(['patch', '-n', ns, 'deployment/web', '--type=merge', '-p', JSON.stringify({ spec: { progressDeadlineSeconds: 3, template: { spec: { containers: [{ ...container('50m'), readinessProbe: { exec: { command: ['false'] }, periodSeconds: 1 } }] } } } })]);
  const stuck = await kubectl(['rollout', 'status', '-n', ns, 'deployment/web', '--timeout=90s']);
  t.not(stuck.code, 0, 'rollout status fails');
  t.match(stuck.err, /error: deployment "web" exceeded its progress deadline/, `for the deadline, not its own --timeout: ${stuck.err}`);
  t.equal(await ok(['get', 'deployment', '-n', ns, 'web', '-o', 'jsonpath={.status.conditions[?(@.type=="Progressing")].reason}']), 'ProgressDeadlineExceeded');
  const now = await pods(ns, 'app=web');
  t.equal(now.filter(runs).length, 2, 'the old replicas still run and serve');
  t.equal(now.filter((p) => p.node !== '' && p.phase === 'Running' && p.running && !p.ready).length, 1, 'the new one runs on its node, never Ready');
});

t.test('required pod anti-affinity: one replica per node, the extra one Pending until a 4th node joins the lab', async (t) => {
  const ns = 'anti';
  await caseNamespace(t, ns);
  const anti = { affinity: { podAntiAffinity: { requiredDuringSchedulingIgnoredDuringExecution: [{ labelSelector: { matchLabels: { app: 'solo' } }, topologyKey: 'kubernetes.io/hostname' }] } } };
  await ok(['apply', '-f', '-'], deployment(ns, 'solo', 4, '50m', anti));
  let solo: PodView[] = [];
  await until(ns, 'three replicas running, one unbound', async () => {
    solo = await pods(ns, 'app=solo');
    return solo.length === 4 && solo.filter(runs).length === 3 && solo.filter(unbound).length === 1;
  });
  t.same(solo.filter(runs).map((p) => p.node).sort(), NODES, 'one per node');
  const pending = solo.find(unbound)!.name;
  await until(ns, `${pending}'s FailedScheduling event`, async () => (await failedScheduling(ns, pending)) !== '');
  const describe = await ok(['describe', 'pod', '-n', ns, pending]);
  t.match(describe, /Warning\s+FailedScheduling\s+.*default-scheduler\s+0\/3 nodes are available: 3 node\(s\) didn't match pod anti-affinity rules\./, describe.slice(describe.indexOf('Events:')));
  const n4 = await lab.addNode('n4', { clusterCIDR: '10.244.0.0/16', config: NODE_CONFIG });
  await n4.startAgent();
  await until(ns, `${pending} running on n4`, async () => (await pods(ns, 'app=solo')).some((p) => p.name === pending && runs(p)), 90_000);
  const now = await pods(ns, 'app=solo');
  t.equal(now.find((p) => p.name === pending)?.node, 'n4', `${pending} runs on the new node`);
  t.same(now.filter(runs).map((p) => p.node).sort(), [...NODES, 'n4'], 'one replica per node, four nodes');
});
