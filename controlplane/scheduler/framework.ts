/**
 * controlplane/scheduler/framework: kube-scheduler's scheduling framework (pkg/scheduler/framework), in small: a
 * profile is a list of plugins, each with some of the extension points PreFilter, Filter, Score (+ NormalizeScore)
 * and a score weight; one scheduling cycle takes one Pod through them against a snapshot of the Nodes, each with
 * the Pods bound to it (NodeInfo). Pure: objects in, a decision out.
 *
 * - Filter: every plugin in order on every Node; a plugin that refuses gives its reasons (NodeResourcesFit may give
 *   several: "Insufficient cpu", "Insufficient memory") and the next plugins are not run for that Node (upstream's
 *   default, without RunAllFilters). The reasons, counted over the Nodes, make the FitError message.
 * - Score: each plugin scores every feasible Node in [0, 100] (MaxNodeScore), NormalizeScore brings its scores
 *   into that range, and a Node's score is the sum of each plugin's times its weight. The highest wins; ties go to
 *   the Node with the fewest Pods, then the first by name (upstream picks one of the tied at random; a fixed order
 *   keeps runs reproducible).
 * - How many Nodes a cycle looks at: upstream's percentageOfNodesToScore, adaptive (50% less 1% per 125 Nodes, at
 *   least 5%, at least 100 Nodes). Filtering stops once that many feasible Nodes are found, and the next cycle
 *   starts where this one stopped (nextStartNodeIndex), so every Node gets its turn. Below 100 Nodes, all are
 *   looked at.
 * - What a Pod asks for (its requests, the non-zero requests, host ports) is computed once per Pod object and kept
 *   beside it (a WeakMap: the watch cache's objects are never changed in place), as upstream's PodInfo.
 */
import type { KObject } from '../store/types.js';
import { milliUnits, podAmounts, resourceList, resourceUnits, wholeUnits, type ResourceList } from '../quota/usage.js';
import { arr, obj, str } from '../../lib/json/loose.js';

type O = Record<string, unknown>;

export const MAX_NODE_SCORE = 100;

/** A Node and what is bound to it, as the scheduler's cache holds it. */
export interface NodeInfo {
  readonly node: Readonly<KObject>;
  readonly name: string;
  /** The Pods bound to it that still count (not finished). */
  readonly pods: readonly Readonly<KObject>[];
  /** status.allocatable (absent: the Node reports none, and resources are not fitted on it). */
  readonly allocatable: ResourceList;
  /** The sum of its Pods' requests (resourcehelper.PodRequests each). */
  readonly requested: ResourceList;
  /** allocatable and requested in the units the scheduler compares (cpu milli, the rest whole): computed once. */
  readonly allocatableUnits: ReadonlyMap<string, bigint>;
  readonly requestedUnits: ReadonlyMap<string, bigint>;
  /** The same with the scheduler's non-zero defaults for cpu and memory (100m, 200Mi), for scoring. */
  readonly nonZeroRequested: { readonly cpuMilli: bigint; readonly memory: bigint };
  /** cpu (milli) and memory (bytes) as numbers, for the scores: allocatable, requested, requested non-zero. */
  readonly scalar: { readonly cpuAlloc: number; readonly memAlloc: number; readonly cpuReq: number; readonly memReq: number; readonly cpuNonZero: number; readonly memNonZero: number };
  /** The host ports its Pods hold. */
  readonly usedPorts: readonly HostPort[];
  /** Its Pods with any pod affinity or anti-affinity term (NodeInfo.PodsWithAffinity). */
  readonly podsWithAffinity: readonly Readonly<KObject>[];
  /** Its Pods with a required anti-affinity term (NodeInfo.PodsWithRequiredAntiAffinity). */
  readonly podsWithRequiredAntiAffinity: readonly Readonly<KObject>[];
}

export interface HostPort {
  readonly ip: string;
  readonly protocol: string;
  readonly port: number;
}

/** Per-cycle data the PreFilter stage computes for the Pod (upstream's CycleState). */
export type CycleState = Map<string, unknown>;

export interface Plugin {
  readonly name: string;
  /** Computes what Filter and Score reuse for every Node; may refuse the Pod outright (a reason for all Nodes). */
  preFilter?(pod: Readonly<KObject>, state: CycleState, nodes: readonly NodeInfo[]): string | null;
  /** Why the Node cannot take the Pod (one or more reasons), or null when it can. */
  filter?(pod: Readonly<KObject>, node: NodeInfo, state: CycleState): readonly string[] | null;
  /** The Node's raw score for the Pod. */
  score?(pod: Readonly<KObject>, node: NodeInfo, state: CycleState): number;
  /** Brings this plugin's raw scores (of the feasible Nodes, in order) into [0, MAX_NODE_SCORE]. */
  normalize?(scores: number[]): number[];
  /** Weight of its score (default 1). */
  readonly weight?: number;
  /** When a Pod this plugin refused may fit now (QueueingHints); an event it has no hint for does not bring it back. */
  readonly hints?: QueueingHints;
}

/**
 * Upstream's QueueingHintFn per event the plugin registers (EventsToRegister): true is Queue, false QueueSkip. A
 * Pod waits in the unschedulable queue until an event one of the plugins that refused it says Queue for.
 */
export interface QueueingHints {
  /** A Node came (`prev` null) or changed what scheduling reads of it. */
  node?(pod: Readonly<KObject>, prev: Readonly<KObject> | null, cur: Readonly<KObject>): boolean;
  /** A Pod bound to a Node came (`prev` null), changed, or went or finished (`cur` null). */
  assignedPod?(pod: Readonly<KObject>, prev: Readonly<KObject> | null, cur: Readonly<KObject> | null): boolean;
}

const spec = (o: Readonly<KObject>): O => obj(o['spec']) ?? {};

export const finished = (p: Readonly<KObject>) => ['Succeeded', 'Failed'].includes(str(obj(p['status'])?.['phase']) ?? '');

/** schedutil.DefaultMilliCPURequest and DefaultMemoryRequest: what a container that asks for none counts as in scores. */
export const DEFAULT_MILLI_CPU = 100n;
export const DEFAULT_MEMORY = 200n * 1024n * 1024n;


/** Per Pod (or Node) object, once: what is derived from it (upstream's PodInfo). */
export function memo<T>(compute: (pod: Readonly<KObject>) => T): (pod: Readonly<KObject>) => T {
  const kept = new WeakMap<object, T>();
  return (pod) => {
    let v = kept.get(pod);
    if (v === undefined) kept.set(pod, (v = compute(pod)));
    return v;
  };
}

/** resourcehelper.PodRequests of the Pod. */
export const podRequests = memo((pod): ResourceList => podAmounts(spec(pod), 'requests'));

/** The Pod's requests in the scheduler's units, sorted by name (what NodeResourcesFit compares, once per Pod). */
export const podRequestUnits = memo((pod): readonly (readonly [string, bigint])[] =>
  [...podRequests(pod)].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)).map(([k, v]) => [k, resourceUnits(k, v.nanos)] as const));

const unitsOf = (l: ResourceList): Map<string, bigint> => new Map([...l].map(([k, v]) => [k, resourceUnits(k, v.nanos)]));

/** A container's (or the Pod's) cpu in milli and memory in bytes, each its default when not requested (GetNonzeroRequests). */
export const nonZeroRequests = memo(computeNonZero);
function computeNonZero(pod: Readonly<KObject>): { cpuMilli: bigint; memory: bigint } {
  const s = spec(pod);
  // resourcehelper.PodRequests with NonMissingContainerRequests: each container without a request counts the default.
  const withDefaults: O = {
    ...s,
    containers: arr(s['containers']).map((c) => withDefaultRequests(c)),
    initContainers: arr(s['initContainers']).map((c) => withDefaultRequests(c)),
  };
  const r = podAmounts(withDefaults, 'requests');
  return { cpuMilli: milliUnits(r.get('cpu')?.nanos ?? 0n), memory: wholeUnits(r.get('memory')?.nanos ?? 0n) };
}

function withDefaultRequests(c: unknown): O {
  const ct = obj(c) ?? {};
  const res = obj(ct['resources']) ?? {};
  const req = { ...(obj(res['requests']) ?? {}) };
  if (req['cpu'] === undefined) req['cpu'] = `${DEFAULT_MILLI_CPU}m`;
  if (req['memory'] === undefined) req['memory'] = String(DEFAULT_MEMORY);
  return { ...ct, resources: { ...res, requests: req } };
}

/** The host ports a Pod asks for (containers and init containers; 0 is none). */
export const hostPorts = memo(computeHostPorts);
function computeHostPorts(pod: Readonly<KObject>): readonly HostPort[] {
  const s = spec(pod);
  const out: HostPort[] = [];
  for (const c of [...arr(s['containers']), ...arr(s['initContainers'])]) {
    for (const p of arr(obj(c)?.['ports'])) {
      const port = obj(p) ?? {};
      const hp = port['hostPort'];
      if (typeof hp === 'number' && hp > 0) out.push({ ip: str(port['hostIP']) || '0.0.0.0', protocol: str(port['protocol']) || 'TCP', port: hp });
    }
  }
  return out;
}

/** The NodeInfos of the Nodes, each with the unfinished Pods bound to it. */
export function nodeInfos(nodes: readonly Readonly<KObject>[], pods: readonly Readonly<KObject>[]): NodeInfo[] {
  const byNode = new Map<string, Readonly<KObject>[]>();
  for (const p of pods) {
    const n = str(spec(p)['nodeName']);
    if (!n || finished(p)) continue;
    (byNode.get(n) ?? byNode.set(n, []).get(n)!).push(p);
  }
  return nodes.map((node) => nodeInfo(node, byNode.get(str(obj(node.metadata)?.['name'])) ?? []));
}

const affinityOf = (p: Readonly<KObject>) => obj(spec(p)['affinity']);
/** The Pod has a pod affinity or anti-affinity term. */
export const hasPodAffinity = (p: Readonly<KObject>): boolean => {
  const a = affinityOf(p);
  return !!a && (obj(a['podAffinity']) !== undefined || obj(a['podAntiAffinity']) !== undefined);
};
/** The Pod has a required anti-affinity term. */
export const hasRequiredAntiAffinity = (p: Readonly<KObject>): boolean =>
  arr(obj(affinityOf(p)?.['podAntiAffinity'])?.['requiredDuringSchedulingIgnoredDuringExecution']).length > 0;

export function nodeInfo(node: Readonly<KObject>, pods: readonly Readonly<KObject>[]): NodeInfo {
  const requested: ResourceList = new Map();
  let cpu = 0n;
  let mem = 0n;
  const usedPorts: HostPort[] = [];
  for (const p of pods) {
    for (const [k, v] of podRequests(p)) {
      const was = requested.get(k);
      requested.set(k, was ? { nanos: was.nanos + v.nanos, format: was.nanos === 0n ? v.format : was.format } : v);
    }
    const nz = nonZeroRequests(p);
    cpu += nz.cpuMilli;
    mem += nz.memory;
    usedPorts.push(...hostPorts(p));
  }
  const allocatable = allocatableOf(node);
  const au = allocatableUnitsOf(node);
  const ru = unitsOf(requested);
  return {
    node, name: str(obj(node.metadata)?.['name']), pods,
    allocatable, requested, allocatableUnits: au, requestedUnits: ru,
    nonZeroRequested: { cpuMilli: cpu, memory: mem }, usedPorts,
    scalar: {
      cpuAlloc: Number(au.get('cpu') ?? 0n), memAlloc: Number(au.get('memory') ?? 0n), cpuReq: Number(ru.get('cpu') ?? 0n), memReq: Number(ru.get('memory') ?? 0n),
      cpuNonZero: Number(cpu), memNonZero: Number(mem),
    },
    podsWithAffinity: pods.filter(hasPodAffinity),
    podsWithRequiredAntiAffinity: pods.filter(hasRequiredAntiAffinity),
  };
}

const allocatableOf = memo((node): ResourceList => resourceList(obj(node['status'])?.['allocatable']));
const allocatableUnitsOf = memo((node): ReadonlyMap<string, bigint> => unitsOf(allocatableOf(node)));

/** What a scheduling cycle decided: the Node, or the reasons counted over the Nodes. */
export type Decision = (
  | { readonly node: string; readonly scores: ReadonlyMap<string, number> }
  | {
    readonly node: null; readonly reasons: ReadonlyMap<string, number>; readonly nodes: number; readonly unfit: ReadonlyMap<string, readonly string[]>;
    /** The plugins that refused a Node (or the Pod at PreFilter): what the queue waits on (UnschedulablePlugins). */
    readonly plugins: ReadonlySet<string>;
  }
) & {
  /** How many Nodes the filters ran on: the next cycle starts that far on. */
  readonly evaluated: number;
};

/** numFeasibleNodesToFind with the adaptive percentageOfNodesToScore (the default, 0). */
export function feasibleNodesToFind(all: number, percentage = 0): number {
  const MIN = 100;
  if (all < MIN || percentage >= 100) return all;
  let pct = percentage;
  if (pct <= 0) pct = Math.max(5, 50 - Math.trunc(all / 125));
  return Math.max(MIN, Math.trunc((all * pct) / 100));
}

export interface CycleOptions {
  /** Where filtering starts (nextStartNodeIndex). */
  readonly start?: number;
  /** percentageOfNodesToScore (0 or absent: adaptive). */
  readonly percentage?: number;
}

/** One scheduling cycle. */
export function schedule(pod: Readonly<KObject>, nodes: readonly NodeInfo[], plugins: readonly Plugin[], opts: CycleOptions = {}): Decision {
  const state: CycleState = new Map();
  for (const p of plugins) {
    const why = p.preFilter?.(pod, state, nodes);
    if (why) return { node: null, reasons: new Map([[why, nodes.length]]), nodes: nodes.length, unfit: new Map(nodes.map((n) => [n.name, [why]])), plugins: new Set([p.name]), evaluated: 0 };
  }
  const reasons = new Map<string, number>();
  const unfit = new Map<string, readonly string[]>();
  const refusing = new Set<string>();
  const feasible: NodeInfo[] = [];
  const filters = plugins.filter((p) => p.filter);
  const want = feasibleNodesToFind(nodes.length, opts.percentage);
  const start = nodes.length ? (opts.start ?? 0) % nodes.length : 0;
  let evaluated = 0;
  for (; evaluated < nodes.length && feasible.length < want; evaluated++) {
    const n = nodes[(start + evaluated) % nodes.length]!;
    let refused: readonly string[] | null = null;
    for (const p of filters) {
      refused = p.filter!(pod, n, state);
      if (refused) {
        refusing.add(p.name);
        break;
      }
    }
    if (refused) {
      unfit.set(n.name, refused);
      for (const r of refused) reasons.set(r, (reasons.get(r) ?? 0) + 1);
    } else feasible.push(n);
  }
  if (!feasible.length) return { node: null, reasons, nodes: nodes.length, unfit, plugins: refusing, evaluated };
  const total = new Float64Array(feasible.length);
  if (feasible.length > 1) {
    for (const p of plugins) {
      if (!p.score) continue;
      let raw = feasible.map((n) => p.score!(pod, n, state));
      if (p.normalize) raw = p.normalize(raw);
      const w = p.weight ?? 1;
      for (let i = 0; i < raw.length; i++) total[i]! += raw[i]! * w;
    }
  }
  // The highest score; among equals the Node with the fewest Pods, then the first by name.
  let best = 0;
  for (let i = 1; i < feasible.length; i++) {
    const n = feasible[i]!;
    const b = feasible[best]!;
    const d = total[i]! - total[best]! || b.pods.length - n.pods.length || (n.name < b.name ? 1 : n.name > b.name ? -1 : 0);
    if (d > 0) best = i;
  }
  return { node: feasible[best]!.name, scores: new Map(feasible.map((n, i) => [n.name, total[i]!])), evaluated };
}

/** helper.DefaultNormalizeScore: scale to [0, max] by the highest; reversed, the highest is 0 (all max when all 0). */
export function defaultNormalize(scores: number[], reverse: boolean): number[] {
  const top = Math.max(0, ...scores);
  if (top === 0) return scores.map(() => (reverse ? MAX_NODE_SCORE : 0));
  return scores.map((s) => {
    const v = Math.trunc((MAX_NODE_SCORE * s) / top);
    return reverse ? MAX_NODE_SCORE - v : v;
  });
}

/** FitError.Error(): "0/3 nodes are available: 1 ..., 2 ...." (the counts sorted as strings, as upstream). */
export function fitErrorMessage(nodes: number, reasons: ReadonlyMap<string, number>): string {
  if (nodes === 0) return 'no nodes available to schedule pods';
  const parts = [...reasons].map(([r, n]) => `${n} ${r}`).sort();
  return `0/${nodes} nodes are available: ${parts.join(', ')}.`;
}
