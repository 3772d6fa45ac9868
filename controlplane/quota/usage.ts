/**
 * controlplane/quota/usage: what an object uses, in the names a ResourceQuota's `hard` counts, as kube-apiserver's
 * quota evaluators tell it (k8s.io/apiserver/pkg/quota/v1 and pkg/quota/v1/evaluator/core):
 *
 * - Pods: `count/pods` always; while the Pod is live (not Succeeded or Failed, not past its deletion grace period)
 *   also `pods` and its compute use: `requests.cpu` (and `cpu`), `limits.cpu`, the same for memory and
 *   ephemeral-storage, `requests.hugepages-*` (and `hugepages-*`), `requests.<extended>`. A Pod's requests and limits
 *   are resourcehelper's: the containers' sum, or the largest init container's (sidecars, init containers with
 *   restartPolicy Always, add up) when that is more, plus the overhead (on limits, only those the Pod has). Scopes (Terminating, NotTerminating,
 *   BestEffort, NotBestEffort, PriorityClass, CrossNamespacePodAffinity) match Pods only.
 * - Services: `services`, `count/services`, `services.loadbalancers` (type LoadBalancer), `services.nodeports` (each
 *   port of a NodePort Service, and of a LoadBalancer unless allocateLoadBalancerNodePorts is false: then the ports
 *   that name a nodePort). Evaluated on create and update (the type may change).
 * - Every other namespaced resource: `count/<resource>[.<group>]`, and configmaps, secrets, resourcequotas,
 *   replicationcontrollers and persistentvolumeclaims also under their legacy names. Evaluated on create only.
 *
 * Amounts are exact (nano-units, bigint) with the format Quantity keeps for printing. Pure.
 */
import { arr, obj, str } from '../../lib/json/loose.js';
import { formatQuantity, parseQuantityFormat, type QuantityFormat } from '../kinds/common.js';
import { podQOS } from '../kinds/pod.js';

type O = Record<string, unknown>;

export interface Amount {
  readonly nanos: bigint;
  readonly format: QuantityFormat;
}
/** A ResourceList: resource name → amount. */
export type ResourceList = Map<string, Amount>;

const ONE: Amount = { nanos: 1_000_000_000n, format: 'dec' };
const ZERO: Amount = { nanos: 0n, format: 'dec' };
const count = (n: number): Amount => ({ nanos: BigInt(n) * 1_000_000_000n, format: 'dec' });

/** A ResourceList from an object of quantities (those that do not parse are left out: validation refused them). */
export function resourceList(m: unknown): ResourceList {
  const out: ResourceList = new Map();
  for (const [k, v] of Object.entries(obj(m) ?? {})) {
    const p = parseQuantityFormat(v);
    if (p) out.set(k, p);
  }
  return out;
}

/** Quantity.Add: the format is the first non-zero operand's. */
const plus = (a: Amount, b: Amount): Amount => ({ nanos: a.nanos + b.nanos, format: a.nanos === 0n ? b.format : a.format });

export function add(a: ResourceList, b: ResourceList): ResourceList {
  const out = new Map(a);
  for (const [k, v] of b) out.set(k, out.has(k) ? plus(out.get(k)!, v) : v);
  return out;
}

/** quota.SubtractWithNonNegativeResult. */
export function subtractNonNegative(a: ResourceList, b: ResourceList): ResourceList {
  const out: ResourceList = new Map();
  for (const [k, v] of a) {
    const d = v.nanos - (b.get(k)?.nanos ?? 0n);
    out.set(k, { nanos: d > 0n ? d : 0n, format: v.format });
  }
  return out;
}

/** Each name's larger amount. */
function maxOf(a: ResourceList, b: ResourceList): ResourceList {
  const out = new Map(a);
  for (const [k, v] of b) if (!out.has(k) || out.get(k)!.nanos < v.nanos) out.set(k, v);
  return out;
}

/** quota.Mask: only the names given. */
export function mask(a: ResourceList, names: Iterable<string>): ResourceList {
  const out: ResourceList = new Map();
  for (const n of names) if (a.has(n)) out.set(n, a.get(n)!);
  return out;
}

/** quota.LessThanOrEqual: the names of `a` above `b` (a name `b` lacks is not limited). */
export function exceeded(a: ResourceList, b: ResourceList): string[] {
  return [...a].filter(([k, v]) => b.has(k) && v.nanos > b.get(k)!.nanos).map(([k]) => k).sort();
}

export function equalLists(a: ResourceList, b: ResourceList): boolean {
  return a.size === b.size && [...a].every(([k, v]) => b.get(k)?.nanos === v.nanos);
}

export const amountString = (a: Amount): string => formatQuantity(a.nanos, a.format);

/** Quantity.MilliValue() and Value(): nano-units rounded up to milli-units, or to whole units. */
export const milliUnits = (nanos: bigint): bigint => (nanos + 999_999n) / 1_000_000n;
export const wholeUnits = (nanos: bigint): bigint => (nanos + 999_999_999n) / 1_000_000_000n;
/** The units kube-scheduler and the kubelet compare a resource in: cpu in milli-cores, the rest in whole units. */
export const resourceUnits = (name: string, nanos: bigint): bigint => (name === 'cpu' ? milliUnits(nanos) : wholeUnits(nanos));

/** prettyPrint: `name=amount` sorted by name, joined by ','. */
export function prettyPrint(a: ResourceList): string {
  return [...a].sort(([x], [y]) => (x < y ? -1 : x > y ? 1 : 0)).map(([k, v]) => `${k}=${amountString(v)}`).join(',');
}

/** The ResourceList as an object of quantity strings (status.used). */
export function toObject(a: ResourceList): Record<string, string> {
  const out: Record<string, string> = {};
  for (const k of [...a.keys()].sort()) out[k] = amountString(a.get(k)!);
  return out;
}

const containerRes = (c: unknown, which: 'requests' | 'limits'): ResourceList => resourceList(obj(obj(obj(c)?.['resources'])?.[which]));

/**
 * resourcehelper.PodRequests / PodLimits: the containers' sum; the init containers' largest (a sidecar's amount adds
 * to those started after it, and to the Pod's), when more; then the overhead (requests and limits alike).
 */
export function podAmounts(spec: Readonly<O>, which: 'requests' | 'limits'): ResourceList {
  let total: ResourceList = new Map();
  for (const c of arr(spec['containers'])) total = add(total, containerRes(c, which));
  let sidecars: ResourceList = new Map();
  let initMax: ResourceList = new Map();
  for (const c of arr(spec['initContainers'])) {
    let need = containerRes(c, which);
    if (obj(c)?.['restartPolicy'] === 'Always') {
      total = add(total, need);
      sidecars = add(sidecars, need);
      need = sidecars;
    } else need = add(need, sidecars);
    initMax = maxOf(initMax, need);
  }
  total = maxOf(total, initMax);
  // The overhead adds to every request, and to the limits the Pod has.
  const overhead = resourceList(spec['overhead']);
  return add(total, which === 'requests' ? overhead : mask(overhead, total.keys()));
}

const NATIVE = (n: string) => !n.includes('/') || n.includes('kubernetes.io/');
const isHugePages = (n: string) => n.startsWith('hugepages-');

/** podComputeUsageHelper: `pods` and the compute names of requests and limits. */
export function podComputeUsage(requests: ResourceList, limits: ResourceList): ResourceList {
  const out: ResourceList = new Map([['pods', ONE]]);
  for (const r of ['cpu', 'memory', 'ephemeral-storage']) {
    const q = requests.get(r);
    if (q) {
      out.set(r, q);
      out.set(`requests.${r}`, q);
    }
    const l = limits.get(r);
    if (l) out.set(`limits.${r}`, l);
  }
  // Hugepages and extended resources (no overcommit): requests only.
  for (const [r, q] of requests) {
    if (isHugePages(r)) {
      out.set(r, q);
      out.set(`requests.${r}`, q);
    } else if (!NATIVE(r)) out.set(`requests.${r}`, q);
  }
  return out;
}

/** QuotaV1Pod: whether a Pod still uses what it asks for (not finished, not past its deletion's grace period). */
export function podIsLive(pod: Readonly<O>, nowMs: number): boolean {
  const phase = obj(pod['status'])?.['phase'];
  if (phase === 'Succeeded' || phase === 'Failed') return false;
  const m = obj(pod['metadata']) ?? {};
  const del = m['deletionTimestamp'];
  const grace = m['deletionGracePeriodSeconds'];
  if (typeof del === 'string' && typeof grace === 'number') {
    const t = Date.parse(del);
    if (!Number.isNaN(t) && nowMs > t + grace * 1000) return false;
  }
  return true;
}

export function podUsage(pod: Readonly<O>, nowMs: number): ResourceList {
  const usage: ResourceList = new Map([['count/pods', ONE]]);
  if (!podIsLive(pod, nowMs)) return usage;
  const spec = obj(pod['spec']) ?? {};
  return add(usage, podComputeUsage(podAmounts(spec, 'requests'), podAmounts(spec, 'limits')));
}

const POD_RESOURCES = new Set(['cpu', 'memory', 'ephemeral-storage', 'requests.cpu', 'requests.memory', 'requests.ephemeral-storage', 'limits.cpu', 'limits.memory', 'limits.ephemeral-storage', 'pods', 'count/pods']);
/** isExtendedResourceNameForQuota: `requests.<name>` of a resource outside kubernetes.io. */
const extendedForQuota = (n: string) => n.startsWith('requests.') && !NATIVE(n.slice('requests.'.length));

export const SCOPES = ['Terminating', 'NotTerminating', 'BestEffort', 'NotBestEffort', 'PriorityClass', 'CrossNamespacePodAffinity'] as const;
/** The compute names every scope but BestEffort may limit, and `pods` (IsResourceQuotaScopeValidForResource). */
const SCOPED_RESOURCES = new Set(['pods', 'cpu', 'memory', 'limits.cpu', 'limits.memory', 'requests.cpu', 'requests.memory']);
export const scopeValidFor = (scope: string, resource: string): boolean => (scope === 'BestEffort' ? resource === 'pods' : SCOPED_RESOURCES.has(resource));

/** A ScopedResourceSelectorRequirement. */
export interface ScopeRequirement {
  readonly scopeName: string;
  readonly operator: string;
  readonly values: readonly string[];
}

/** The quota's scopes and scope selector, as one list of requirements (getScopeSelectorsFromQuota). */
export function quotaScopes(quota: Readonly<O>): ScopeRequirement[] {
  const spec = obj(quota['spec']) ?? {};
  const out: ScopeRequirement[] = arr(spec['scopes']).map((s) => ({ scopeName: str(s) ?? '', operator: 'Exists', values: [] }));
  for (const e of arr(obj(spec['scopeSelector'])?.['matchExpressions'])) {
    const m = obj(e) ?? {};
    out.push({ scopeName: str(m['scopeName']) ?? '', operator: str(m['operator']) ?? '', values: arr(m['values']).map((v) => str(v) ?? '') });
  }
  return out;
}

function crossNamespaceAffinity(spec: Readonly<O>): boolean {
  const aff = obj(spec['affinity']) ?? {};
  for (const kind of ['podAffinity', 'podAntiAffinity']) {
    const a = obj(aff[kind]) ?? {};
    const terms = [...arr(a['requiredDuringSchedulingIgnoredDuringExecution']), ...arr(a['preferredDuringSchedulingIgnoredDuringExecution']).map((w) => obj(w)?.['podAffinityTerm'])];
    if (terms.some((t) => arr(obj(t)?.['namespaces']).length > 0 || obj(t)?.['namespaceSelector'] !== undefined)) return true;
  }
  return false;
}

/** podMatchesScopeFunc. */
function podMatchesScope(pod: Readonly<O>, s: ScopeRequirement): boolean {
  const spec = obj(pod['spec']) ?? {};
  const ads = spec['activeDeadlineSeconds'];
  const terminating = typeof ads === 'number' && ads >= 0;
  switch (s.scopeName) {
    case 'Terminating': return terminating;
    case 'NotTerminating': return !terminating;
    case 'BestEffort': return podQOS(spec) === 'BestEffort';
    case 'NotBestEffort': return podQOS(spec) !== 'BestEffort';
    case 'CrossNamespacePodAffinity': return crossNamespaceAffinity(spec);
    case 'PriorityClass': {
      const pc = str(spec['priorityClassName']) ?? '';
      switch (s.operator) {
        case 'In': return pc !== '' && s.values.includes(pc);
        case 'NotIn': return pc === '' || !s.values.includes(pc);
        case 'Exists': return pc !== '';
        case 'DoesNotExist': return pc === '';
        default: return false;
      }
    }
    default: return false;
  }
}

/** The resource an admission request or a list names, as the evaluators need it. */
export interface QuotaResource {
  readonly group: string;
  readonly resource: string;
}

const LEGACY: Record<string, string> = { configmaps: 'configmaps', secrets: 'secrets', resourcequotas: 'resourcequotas', replicationcontrollers: 'replicationcontrollers', persistentvolumeclaims: 'persistentvolumeclaims' };
/** The group-resource's count name: `count/pods`, `count/deployments.apps`. */
export const countName = (r: QuotaResource): string => `count/${r.group ? `${r.resource}.${r.group}` : r.resource}`;

/** One kind's evaluator (quota.Evaluator, in small). */
export interface Evaluator {
  /** Whether a write of this operation on the main resource is charged (Handles). */
  handles(operation: 'CREATE' | 'UPDATE'): boolean;
  /** The names among `names` this evaluator counts (MatchingResources). */
  matching(names: Iterable<string>): string[];
  /** What the object uses. */
  usage(o: Readonly<O>, nowMs: number): ResourceList;
  /** Whether the quota's scopes select the object (an unscoped quota selects everything). */
  matchesScopes(quota: Readonly<O>, o: Readonly<O>): boolean;
  /** Constraints: what the object must state for a quota tracking `required`; a message, or null. */
  constraints?(required: readonly string[], o: Readonly<O>): string | null;
}

/** The compute names a quota forces every container to state (backward compatibility, as upstream). */
const MUST_STATE = new Set(['cpu', 'memory', 'requests.cpu', 'requests.memory', 'limits.cpu', 'limits.memory']);

const podEvaluator: Evaluator = {
  handles: (op) => op === 'CREATE',
  matching: (names) => [...names].filter((n) => POD_RESOURCES.has(n) || n.startsWith('hugepages-') || n.startsWith('requests.hugepages-') || extendedForQuota(n)),
  usage: podUsage,
  matchesScopes: (quota, o) => quotaScopes(quota).every((s) => podMatchesScope(o, s)),
  constraints(required, o) {
    const need = required.filter((r) => MUST_STATE.has(r));
    if (!need.length) return null;
    const spec = obj(o['spec']) ?? {};
    const missing = new Map<string, Set<string>>();
    for (const c of [...arr(spec['containers']), ...arr(spec['initContainers'])]) {
      const has = podComputeUsage(containerRes(c, 'requests'), containerRes(c, 'limits'));
      for (const r of need) {
        if (has.has(r)) continue;
        if (!missing.has(r)) missing.set(r, new Set());
        missing.get(r)!.add(str(obj(c)?.['name']) ?? '');
      }
    }
    if (!missing.size) return null;
    return `must specify ${[...missing.keys()].sort().map((r) => `${r} for: ${[...missing.get(r)!].sort().join(',')}`).join('; ')}`;
  },
};

const SERVICE_RESOURCES = new Set(['services', 'count/services', 'services.loadbalancers', 'services.nodeports']);
const serviceEvaluator: Evaluator = {
  handles: () => true,
  matching: (names) => [...names].filter((n) => SERVICE_RESOURCES.has(n)),
  usage(o) {
    const spec = obj(o['spec']) ?? {};
    const ports = arr(spec['ports']);
    const out: ResourceList = new Map([['services', ONE], ['count/services', ONE], ['services.loadbalancers', ZERO], ['services.nodeports', ZERO]]);
    if (spec['type'] === 'NodePort') out.set('services.nodeports', count(ports.length));
    if (spec['type'] === 'LoadBalancer') {
      out.set('services.loadbalancers', ONE);
      out.set('services.nodeports', count(spec['allocateLoadBalancerNodePorts'] === false ? ports.filter((p) => typeof obj(p)?.['nodePort'] === 'number' && obj(p)!['nodePort'] !== 0).length : ports.length));
    }
    return out;
  },
  matchesScopes: (quota) => quotaScopes(quota).length === 0,
};

/** generic.NewObjectCountEvaluator: `count/<gr>` (and the legacy name) for every create. */
function objectCountEvaluator(r: QuotaResource): Evaluator {
  const names = [countName(r), ...(!r.group && LEGACY[r.resource] ? [LEGACY[r.resource]!] : [])];
  return {
    handles: (op) => op === 'CREATE',
    matching: (input) => [...input].filter((n) => names.includes(n)),
    usage: () => new Map(names.map((n) => [n, ONE])),
    matchesScopes: (quota) => quotaScopes(quota).length === 0,
  };
}

export function evaluatorFor(r: QuotaResource): Evaluator {
  if (!r.group && r.resource === 'pods') return podEvaluator;
  if (!r.group && r.resource === 'services') return serviceEvaluator;
  return objectCountEvaluator(r);
}

/**
 * The group-resources a quota's names count, for its controller: pods and services for theirs, the legacy names'
 * kinds, and each `count/<resource>[.<group>]`.
 */
export function resourcesCounted(names: Iterable<string>): QuotaResource[] {
  const out = new Map<string, QuotaResource>();
  const put = (r: QuotaResource) => out.set(`${r.resource}.${r.group}`, r);
  for (const n of names) {
    if (podEvaluator.matching([n]).length) put({ group: '', resource: 'pods' });
    else if (SERVICE_RESOURCES.has(n)) put({ group: '', resource: 'services' });
    else if (LEGACY[n]) put({ group: '', resource: n });
    else if (n.startsWith('count/')) {
      const gr = n.slice('count/'.length);
      const dot = gr.indexOf('.');
      put(dot < 0 ? { group: '', resource: gr } : { group: gr.slice(dot + 1), resource: gr.slice(0, dot) });
    }
  }
  return [...out.values()];
}

/**
 * What the objects of a namespace use, for the names a quota counts (the controller's recalculation): each name the
 * quota's `hard` has, 0 when nothing uses it.
 */
export function namespaceUsage(quota: Readonly<O>, hard: ResourceList, objectsOf: (r: QuotaResource) => readonly Readonly<O>[], nowMs: number): ResourceList {
  let used: ResourceList = new Map([...hard.keys()].map((k) => [k, { nanos: 0n, format: hard.get(k)!.format }]));
  for (const r of resourcesCounted(hard.keys())) {
    const ev = evaluatorFor(r);
    const names = ev.matching(hard.keys());
    for (const o of objectsOf(r)) {
      if (!ev.matchesScopes(quota, o)) continue;
      used = add(used, mask(ev.usage(o, nowMs), names));
    }
  }
  return used;
}
