/**
 * controlplane/scheduler/plugins: the default plugins of kube-scheduler's profile (pkg/scheduler/framework/plugins),
 * upstream's names, order and score weights, each as upstream's:
 *
 *   plugin                           Filter                                   Score (weight)
 *   NodeUnschedulable                spec.unschedulable, unless tolerated     -
 *   TaintToleration                  NoSchedule/NoExecute taints tolerated    untolerated PreferNoSchedule taints, fewer better (3)
 *   NodeAffinity                     nodeSelector + required terms            preferred terms' weights (2)
 *   NodePorts                        hostPort conflicts                       -
 *   NodeResourcesFit                 requests against allocatable - requested LeastAllocated over cpu and memory (1)
 *   NodeResourcesBalancedAllocation  -                                        cpu and memory equally used (1)
 *
 * A Node that is not Ready counts as tainted `node.kubernetes.io/not-ready` (Ready=False) or `unreachable` (Unknown,
 * or no condition) with NoSchedule, as the node lifecycle controller taints it upstream (TaintNodesByCondition).
 * A Node that reports no `status.allocatable` at all is not fitted on resources (nothing to fit against); one that
 * reports it has 0 of what it does not list, as upstream. Pure.
 */
import type { KObject } from '../store/types.js';
import { resourceUnits, type ResourceList } from '../quota/usage.js';
import { arr, obj, objs, str } from '../../lib/json/loose.js';
import { toleratesTaint, type Taint, type Toleration } from '../controllers/taints.js';
import { defaultNormalize, hostPorts, MAX_NODE_SCORE, memo, nodeInfo, nonZeroRequests, podRequests, podRequestUnits, type HostPort, type NodeInfo, type Plugin } from './framework.js';

type O = Record<string, unknown>;
const meta = (o: Readonly<KObject>): O => (o.metadata ?? {}) as O;
const specOf = (o: Readonly<KObject>): O => obj(o['spec']) ?? {};

/** The reasons upstream's filter plugins give, as the FitError message counts them. */
export const REASON = {
  unschedulable: 'node(s) were unschedulable',
  affinity: "node(s) didn't match Pod's node affinity/selector",
  ports: "node(s) didn't have free ports for the requested pod ports",
  tooManyPods: 'Too many pods',
  insufficient: (r: string) => `Insufficient ${r}`,
  taint: (t: Taint) => `node(s) had untolerated taint {${t.key}: ${t.value ?? ''}}`,
} as const;

const taintsKept = new WeakMap<object, readonly Taint[]>();

/** A node's taints, with the NoSchedule taint its Ready condition implies when it is not Ready (once per Node object). */
export function effectiveTaints(node: Readonly<KObject>): readonly Taint[] {
  let t = taintsKept.get(node);
  if (!t) taintsKept.set(node, (t = computeTaints(node)));
  return t;
}

function computeTaints(node: Readonly<KObject>): Taint[] {
  const taints = objs(specOf(node)['taints']).map((t) => ({ key: str(t['key']), value: str(t['value']), effect: str(t['effect']) }));
  const ready = objs(obj(node['status'])?.['conditions']).find((c) => c['type'] === 'Ready')?.['status'];
  if (ready !== 'True') {
    const key = ready === 'False' ? 'node.kubernetes.io/not-ready' : 'node.kubernetes.io/unreachable';
    if (!taints.some((t) => t.key === key)) taints.push({ key, value: '', effect: 'NoSchedule' });
  }
  return taints;
}

const tolerationsOf = memo((pod): readonly Toleration[] => objs(specOf(pod)['tolerations']) as Toleration[]);
/** The tolerations PreferNoSchedule scoring counts (effect PreferNoSchedule or none). */
const preferTolerationsOf = memo((pod): readonly Toleration[] => tolerationsOf(pod).filter((t) => !t.effect || t.effect === 'PreferNoSchedule'));
const preferTaintsOf = memo((node): readonly Taint[] => effectiveTaints(node).filter((t) => t.effect === 'PreferNoSchedule'));
const nodeLabelsOf = memo((node): Readonly<Record<string, string>> => (obj(meta(node)['labels']) ?? {}) as Record<string, string>);

const unschedulableRefuses = (pod: Readonly<KObject>, node: Readonly<KObject>): boolean => {
  if (specOf(node)['unschedulable'] !== true) return false;
  const t = { key: 'node.kubernetes.io/unschedulable', effect: 'NoSchedule' };
  return !tolerationsOf(pod).some((tol) => toleratesTaint(tol, t));
};

export const nodeUnschedulable: Plugin = {
  name: 'NodeUnschedulable',
  filter: (pod, n) => (unschedulableRefuses(pod, n.node) ? [REASON.unschedulable] : null),
  // isSchedulableAfterNodeChange: the Node (now) takes it.
  hints: { node: (pod, _prev, cur) => !unschedulableRefuses(pod, cur) },
};

const untoleratedTaint = (pod: Readonly<KObject>, node: Readonly<KObject>): Taint | undefined => {
  const tols = tolerationsOf(pod);
  return effectiveTaints(node).find((t) => (t.effect === 'NoSchedule' || t.effect === 'NoExecute') && !tols.some((tol) => toleratesTaint(tol, t)));
};

export const taintToleration: Plugin = {
  name: 'TaintToleration',
  weight: 3,
  filter(pod, n) {
    const bad = untoleratedTaint(pod, n.node);
    return bad ? [REASON.taint(bad)] : null;
  },
  // isSchedulableAfterNodeChange: the Node's taints (now) are all tolerated.
  hints: { node: (pod, _prev, cur) => untoleratedTaint(pod, cur) === undefined },
  // countIntolerableTaintsPreferNoSchedule: only the tolerations with effect PreferNoSchedule or none count.
  score(pod, n) {
    const taints = preferTaintsOf(n.node);
    if (!taints.length) return 0;
    const tols = preferTolerationsOf(pod);
    return taints.filter((t) => !tols.some((tol) => toleratesTaint(tol, t))).length;
  },
  normalize: (s) => defaultNormalize(s, true),
};

function matchesRequirement(req: O, values: Readonly<Record<string, string>>): boolean {
  const key = str(req['key']);
  const has = Object.hasOwn(values, key);
  const v = values[key];
  const want = arr(req['values']).map(String);
  switch (req['operator']) {
    case 'In': return has && want.includes(v!);
    case 'NotIn': return !has || !want.includes(v!);
    case 'Exists': return has;
    case 'DoesNotExist': return !has;
    case 'Gt':
    case 'Lt': {
      if (!has || want.length !== 1 || !/^-?\d+$/.test(v!) || !/^-?\d+$/.test(want[0]!)) return false;
      return req['operator'] === 'Gt' ? BigInt(v!) > BigInt(want[0]!) : BigInt(v!) < BigInt(want[0]!);
    }
    default: return false;
  }
}

/** A NodeSelectorTerm against a Node: its expressions on labels and fields ANDed; an empty term matches nothing. */
function termMatches(term: O, node: Readonly<KObject>): boolean {
  const labels = nodeLabelsOf(node);
  const exprs = objs(term['matchExpressions']);
  const byField = objs(term['matchFields']);
  if (!exprs.length && !byField.length) return false;
  return exprs.every((e) => matchesRequirement(e, labels)) && byField.every((f) => matchesRequirement(f, { 'metadata.name': str(meta(node)['name']) }));
}

/** What NodeAffinity reads of a Pod, once per Pod object. */
const nodeAffinityOf = memo((pod) => {
  const spec = specOf(pod);
  const na = obj(obj(spec['affinity'])?.['nodeAffinity']);
  const required = obj(na?.['requiredDuringSchedulingIgnoredDuringExecution']);
  return {
    selector: Object.entries(obj(spec['nodeSelector']) ?? {}),
    required: required ? objs(required['nodeSelectorTerms']) : null,
    preferred: objs(na?.['preferredDuringSchedulingIgnoredDuringExecution']).map((p) => ({ weight: typeof p['weight'] === 'number' ? p['weight'] : 0, term: obj(p['preference']) ?? {} })).filter((p) => p.weight !== 0),
  };
});

/** The Pod's nodeSelector and required node affinity against a Node (NodeAffinity's Filter). */
export function matchesNodeAffinity(pod: Readonly<KObject>, node: Readonly<KObject>): boolean {
  const a = nodeAffinityOf(pod);
  if (!a.selector.length && !a.required) return true;
  const labels = nodeLabelsOf(node);
  for (const [k, v] of a.selector) if (labels[k] !== v) return false;
  return !a.required || a.required.some((term) => termMatches(term, node));
}

export const nodeAffinity: Plugin = {
  name: 'NodeAffinity',
  weight: 2,
  filter: (pod, n) => (matchesNodeAffinity(pod, n.node) ? null : [REASON.affinity]),
  // isSchedulableAfterNodeChange: the Node (now) matches.
  hints: { node: (pod, _prev, cur) => matchesNodeAffinity(pod, cur) },
  // The weights of the preferred terms the Node matches.
  score(pod, n) {
    let sum = 0;
    for (const p of nodeAffinityOf(pod).preferred) if (termMatches(p.term, n.node)) sum += p.weight;
    return sum;
  },
  normalize: (s) => defaultNormalize(s, false),
};

/** HostPortInfo.CheckConflict: the same protocol and port, on the same IP or where either is 0.0.0.0. */
export function portConflict(want: HostPort, used: readonly HostPort[]): boolean {
  return used.some((u) => u.protocol === want.protocol && u.port === want.port && (want.ip === '0.0.0.0' || u.ip === '0.0.0.0' || u.ip === want.ip));
}

export const nodePorts: Plugin = {
  name: 'NodePorts',
  preFilter(pod, state) {
    state.set('NodePorts', hostPorts(pod));
    return null;
  },
  filter(_pod, n, state) {
    const want = (state.get('NodePorts') as HostPort[] | undefined) ?? [];
    return want.some((w) => portConflict(w, n.usedPorts)) ? [REASON.ports] : null;
  },
  // A new Node has every port free; a Pod gone frees its ports (isSchedulableAfterPodDeleted: one the Pod wants).
  hints: {
    node: (_pod, prev) => prev === null,
    assignedPod: (pod, prev, cur) => cur === null && prev !== null && hostPorts(pod).some((w) => portConflict(w, hostPorts(prev))),
  },
};


/** NodeResourcesFit's Filter (fitsRequest): the reasons the Node's free allocatable cannot take the Pod's requests. */
export function insufficient(podRequests: ResourceList, n: NodeInfo): string[] {
  return insufficientUnits([...podRequests].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)).map(([k, v]) => [k, resourceUnits(k, v.nanos)] as const), n);
}

/** The same with the requests in the scheduler's units, sorted by name (podRequestUnits). */
export function insufficientUnits(want: readonly (readonly [string, bigint])[], n: NodeInfo): string[] {
  const out: string[] = [];
  const maxPods = n.allocatableUnits.get('pods');
  if (maxPods !== undefined && BigInt(n.pods.length + 1) > maxPods) out.push(REASON.tooManyPods);
  if (!n.allocatable.size) return out;
  for (const [r, q] of want) {
    if (r === 'pods' || q <= 0n) continue;
    const free = (n.allocatableUnits.get(r) ?? 0n) - (n.requestedUnits.get(r) ?? 0n);
    if (q > free) out.push(REASON.insufficient(r));
  }
  return out;
}

const SCORED = ['cpu', 'memory'] as const;

/** LeastAllocated: per resource (free after the Pod) / allocatable × 100, averaged (weights 1), on non-zero requests. */
export function leastAllocated(pod: Readonly<KObject>, n: NodeInfo): number {
  const nz = nonZeroScalar(pod);
  const u = n.scalar;
  // upstream's int64 arithmetic; every figure here is well inside a double's exact integers.
  let sum = 0;
  if (u.cpuAlloc > 0 && u.cpuNonZero + nz.cpu <= u.cpuAlloc) sum += Math.trunc(((u.cpuAlloc - u.cpuNonZero - nz.cpu) * MAX_NODE_SCORE) / u.cpuAlloc);
  if (u.memAlloc > 0 && u.memNonZero + nz.memory <= u.memAlloc) sum += Math.trunc(((u.memAlloc - u.memNonZero - nz.memory) * MAX_NODE_SCORE) / u.memAlloc);
  return Math.trunc(sum / SCORED.length);
}

const nonZeroScalar = memo((pod) => {
  const nz = nonZeroRequests(pod);
  return { cpu: Number(nz.cpuMilli), memory: Number(nz.memory) };
});

/** BalancedAllocation: 1 − the spread of cpu's and memory's used fractions (requests, the Pod's included), × 100. */
export function balancedAllocation(pod: Readonly<KObject>, n: NodeInfo): number {
  const req = requestScalar(pod);
  const u = n.scalar;
  if (u.cpuAlloc <= 0 || u.memAlloc <= 0) return MAX_NODE_SCORE; // fewer than two resources to balance
  const cpu = Math.min(1, (u.cpuReq + req.cpu) / u.cpuAlloc);
  const mem = Math.min(1, (u.memReq + req.memory) / u.memAlloc);
  return Math.trunc((1 - Math.abs(cpu - mem) / 2) * MAX_NODE_SCORE);
}

const requestScalar = memo((pod) => {
  const r = podRequestUnits(pod);
  return { cpu: Number(r.find(([k]) => k === 'cpu')?.[1] ?? 0n), memory: Number(r.find(([k]) => k === 'memory')?.[1] ?? 0n) };
});

export const nodeResourcesFit: Plugin = {
  name: 'NodeResourcesFit',
  weight: 1,
  filter(pod, n) {
    const why = insufficientUnits(podRequestUnits(pod), n);
    return why.length ? why : null;
  },
  score: (pod, n) => (n.allocatable.size ? leastAllocated(pod, n) : 0),
  hints: {
    // isSchedulableAfterNodeChange: the Node's allocatable (now) can hold the Pod's requests at all.
    node: (pod, _prev, cur) => insufficient(podRequests(pod), nodeInfo(cur, [])).length === 0,
    // isSchedulableAfterPodEvent: a Pod gone frees a Pod's place and what it requested.
    assignedPod: (_pod, prev, cur) => prev !== null && cur === null,
  },
};

export const nodeResourcesBalancedAllocation: Plugin = {
  name: 'NodeResourcesBalancedAllocation',
  weight: 1,
  score: (pod, n) => (n.allocatable.size ? balancedAllocation(pod, n) : 0),
};

/** The default profile, in upstream's order. */
export const DEFAULT_PLUGINS: readonly Plugin[] = [nodeUnschedulable, taintToleration, nodeAffinity, nodePorts, nodeResourcesFit, nodeResourcesBalancedAllocation];
