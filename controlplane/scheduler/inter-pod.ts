/**
 * controlplane/scheduler/inter-pod: the two plugins that read the Pods already placed, as kube-scheduler's
 * (pkg/scheduler/framework/plugins/interpodaffinity and podtopologyspread):
 *
 * InterPodAffinity (weight 2)
 * - Filter: the Pod's required affinity terms each need a Pod they select in the candidate Node's topology domain
 *   (the Nodes sharing its value of the term's topologyKey), unless no Pod anywhere matches the term and the Pod
 *   matches it itself (the first of a group); its required anti-affinity terms need none there; and no Pod placed
 *   there may have a required anti-affinity term selecting it. Reasons: "node(s) didn't match pod affinity rules",
 *   "node(s) didn't match pod anti-affinity rules", "node(s) didn't satisfy existing pods anti-affinity rules".
 * - Score: per topology domain, the weights of the Pod's preferred terms selecting Pods there (anti-affinity
 *   subtracts), plus the placed Pods' preferred terms selecting it, plus 1 (HardPodAffinityWeight) for each placed
 *   Pod's required affinity term selecting it; a Node scores the sum over its domains, normalized min-max to 0..100.
 * Terms select by labelSelector among the term's namespaces (its own namespace when it names none and has no
 * namespaceSelector), as upstream; matchLabelKeys / mismatchLabelKeys add the Pod's own label values.
 *
 * PodTopologySpread (weight 2)
 * - Filter (whenUnsatisfiable DoNotSchedule): among the Nodes that pass the Pod's nodeSelector and required node
 *   affinity (nodeAffinityPolicy Honor) and have the constraint's topologyKey, the Pods the constraint's selector
 *   matches (same namespace) are counted per domain; placing the Pod on a Node may not make its domain's count
 *   exceed the smallest domain's by more than maxSkew (the smallest is 0 while there are fewer domains than
 *   minDomains). A Node without the key: "node(s) didn't match pod topology spread constraints (missing required
 *   label)"; else "node(s) didn't match pod topology spread constraints".
 * - Score (ScheduleAnyway, or upstream's system defaults when the Pod has no constraints at all: hostname maxSkew 3
 *   and zone maxSkew 5, selecting the Pods of the Services and ReplicaSets that select it): per constraint the
 *   count in the Node's domain × log(domains + 2) + maxSkew − 1, reversed so that emptier domains score higher.
 * Pure.
 */
import type { KObject } from '../store/types.js';
import { arr, obj, objs, str } from '../../lib/json/loose.js';
import { matchesNodeAffinity } from './plugins.js';
import { MAX_NODE_SCORE, type NodeInfo, type Plugin } from './framework.js';

type O = Record<string, unknown>;
type Labels = Readonly<Record<string, string>>;
const meta = (o: Readonly<KObject>): O => (o.metadata ?? {}) as O;
const specOf = (o: Readonly<KObject>): O => obj(o['spec']) ?? {};
const labelsOf = (o: Readonly<KObject>): Labels => (obj(meta(o)['labels']) ?? {}) as Labels;
const nsOf = (o: Readonly<KObject>) => str(meta(o)['namespace']);

export const REASONS = {
  affinity: "node(s) didn't match pod affinity rules",
  antiAffinity: "node(s) didn't match pod anti-affinity rules",
  existingAnti: "node(s) didn't satisfy existing pods anti-affinity rules",
  spread: "node(s) didn't match pod topology spread constraints",
  spreadLabel: "node(s) didn't match pod topology spread constraints (missing required label)",
} as const;

/** A metav1.LabelSelector against labels (nil selects nothing; {} selects everything). */
export function selects(sel: unknown, labels: Labels): boolean {
  const s = obj(sel);
  if (!s) return false;
  for (const [k, v] of Object.entries(obj(s['matchLabels']) ?? {})) if (labels[k] !== v) return false;
  for (const e of objs(s['matchExpressions'])) {
    const key = str(e['key']);
    const has = Object.hasOwn(labels, key);
    const vals = arr(e['values']).map(String);
    switch (e['operator']) {
      case 'In': if (!has || !vals.includes(labels[key]!)) return false; break;
      case 'NotIn': if (has && vals.includes(labels[key]!)) return false; break;
      case 'Exists': if (!has) return false; break;
      case 'DoesNotExist': if (has) return false; break;
      default: return false;
    }
  }
  return true;
}

/** An affinity term as the scheduler reads it, against the Pod that carries it. */
interface Term {
  readonly topologyKey: string;
  readonly selector: O | null;
  /** null: every namespace (an empty namespaceSelector). */
  readonly namespaces: ReadonlySet<string> | null;
  readonly nsSelector: O | null;
  readonly weight: number;
}

/** The term with its namespaces resolved and matchLabelKeys / mismatchLabelKeys merged into its selector. */
function term(t: O, owner: Readonly<KObject>, weight = 0): Term {
  let selector = obj(t['labelSelector']) ?? null;
  const own = labelsOf(owner);
  const extra: O[] = [];
  for (const k of arr(t['matchLabelKeys']).map(String)) if (own[k] !== undefined) extra.push({ key: k, operator: 'In', values: [own[k]] });
  for (const k of arr(t['mismatchLabelKeys']).map(String)) if (own[k] !== undefined) extra.push({ key: k, operator: 'NotIn', values: [own[k]] });
  if (extra.length && selector) selector = { ...selector, matchExpressions: [...objs(selector['matchExpressions']), ...extra] };
  const names = arr(t['namespaces']).map(String);
  const nsSel = obj(t['namespaceSelector']) ?? null;
  const everyNs = nsSel !== null && Object.keys(nsSel).length === 0;
  return {
    topologyKey: str(t['topologyKey']),
    selector,
    namespaces: everyNs ? null : new Set(names.length || nsSel ? names : [nsOf(owner)]),
    nsSelector: everyNs ? null : nsSel,
    weight,
  };
}

function termSelects(t: Term, pod: Readonly<KObject>, namespaceLabels: (ns: string) => Labels | undefined): boolean {
  const ns = nsOf(pod);
  if (t.namespaces !== null && !t.namespaces.has(ns)) {
    if (!t.nsSelector) return false;
    const nl = namespaceLabels(ns);
    if (!nl || !selects(t.nsSelector, nl)) return false;
  }
  return selects(t.selector, labelsOf(pod));
}

const affinityOf = (pod: Readonly<KObject>, kind: 'podAffinity' | 'podAntiAffinity') => obj(obj(specOf(pod)['affinity'])?.[kind]) ?? {};
const required = (pod: Readonly<KObject>, kind: 'podAffinity' | 'podAntiAffinity') =>
  objs(affinityOf(pod, kind)['requiredDuringSchedulingIgnoredDuringExecution']).map((t) => term(t, pod));
const preferred = (pod: Readonly<KObject>, kind: 'podAffinity' | 'podAntiAffinity') =>
  objs(affinityOf(pod, kind)['preferredDuringSchedulingIgnoredDuringExecution']).map((w) => term(obj(w['podAffinityTerm']) ?? {}, pod, typeof w['weight'] === 'number' ? w['weight'] : 0));

interface Terms {
  readonly affinity: readonly Term[];
  readonly anti: readonly Term[];
  readonly prefAffinity: readonly Term[];
  readonly prefAnti: readonly Term[];
}
const termsKept = new WeakMap<object, Terms>();
/** A Pod's four kinds of terms, resolved once per Pod object (upstream's PodInfo keeps them parsed too). */
function termsOf(pod: Readonly<KObject>): Terms {
  let t = termsKept.get(pod);
  if (!t) {
    t = { affinity: required(pod, 'podAffinity'), anti: required(pod, 'podAntiAffinity'), prefAffinity: preferred(pod, 'podAffinity'), prefAnti: preferred(pod, 'podAntiAffinity') };
    termsKept.set(pod, t);
  }
  return t;
}

const nodeLabels = (n: NodeInfo): Labels => labelsOf(n.node);
const domainKey = (key: string, value: string) => `${key}\u0000${value}`;

interface AffinityState {
  readonly affinity: Term[];
  readonly anti: Term[];
  /** The domains of the Pods that match every required affinity term (upstream's affinityCounts). */
  readonly affinityDomains: Set<string>;
  /** The domains of the Pods some required anti-affinity term selects (antiAffinityCounts). */
  readonly antiDomains: Set<string>;
  /** Domains where a placed Pod's required anti-affinity selects the incoming Pod. */
  readonly existingAnti: Set<string>;
  /** The Pod matches all its own required affinity terms (it may start its group). */
  readonly selfMatch: boolean;
  /** Score per domain. */
  readonly scores: Map<string, number>;
}

/** The plugin; `namespaceLabels` resolves a namespace's labels for namespaceSelector terms. */
export function interPodAffinity(namespaceLabels: (ns: string) => Labels | undefined = () => undefined): Plugin {
  const nl = namespaceLabels;
  return {
    name: 'InterPodAffinity',
    weight: 2,
    preFilter(pod, state, nodes) {
      const own = termsOf(pod);
      const affinity = [...own.affinity];
      const anti = [...own.anti];
      const s: AffinityState = {
        affinity, anti, affinityDomains: new Set(), antiDomains: new Set(), existingAnti: new Set(),
        selfMatch: affinity.every((t) => termSelects(t, pod, nl)), scores: new Map(),
      };
      const bump = (key: string, labels: Labels, w: number) => {
        const v = labels[key];
        if (v === undefined || w === 0) return;
        const d = domainKey(key, v);
        s.scores.set(d, (s.scores.get(d) ?? 0) + w);
      };
      // The incoming Pod's terms are matched against every placed Pod; the placed Pods' terms only where a Pod has
      // some (NodeInfo.PodsWithAffinity), as upstream's PreFilter and PreScore.
      const incoming = affinity.length + anti.length + own.prefAffinity.length + own.prefAnti.length > 0;
      for (const n of nodes) {
        if (!incoming && !n.podsWithAffinity.length) continue;
        const labels = nodeLabels(n);
        if (incoming) {
          for (const p of n.pods) {
            if (affinity.length && affinity.every((t) => termSelects(t, p, nl))) {
              for (const t of affinity) if (labels[t.topologyKey] !== undefined) s.affinityDomains.add(domainKey(t.topologyKey, labels[t.topologyKey]!));
            }
            for (const t of anti) if (labels[t.topologyKey] !== undefined && termSelects(t, p, nl)) s.antiDomains.add(domainKey(t.topologyKey, labels[t.topologyKey]!));
            // Scores: the incoming Pod's preferred terms.
            for (const t of own.prefAffinity) if (termSelects(t, p, nl)) bump(t.topologyKey, labels, t.weight);
            for (const t of own.prefAnti) if (termSelects(t, p, nl)) bump(t.topologyKey, labels, -t.weight);
          }
        }
        for (const p of n.podsWithAffinity) {
          const theirs = termsOf(p);
          for (const t of theirs.anti) {
            if (labels[t.topologyKey] !== undefined && termSelects(t, pod, nl)) s.existingAnti.add(domainKey(t.topologyKey, labels[t.topologyKey]!));
          }
          // Scores: the placed Pods' preferred terms, and their required affinity (weight 1).
          for (const t of theirs.prefAffinity) if (termSelects(t, pod, nl)) bump(t.topologyKey, labels, t.weight);
          for (const t of theirs.prefAnti) if (termSelects(t, pod, nl)) bump(t.topologyKey, labels, -t.weight);
          for (const t of theirs.affinity) if (termSelects(t, pod, nl)) bump(t.topologyKey, labels, 1);
        }
      }
      state.set('InterPodAffinity', s);
      return null;
    },
    // Upstream's order: the Pod's affinity, its anti-affinity, then the placed Pods' anti-affinity.
    filter(_pod, n, state) {
      const s = state.get('InterPodAffinity') as AffinityState;
      // Nothing to check (upstream's PreFilter returns Skip): no terms of its own, no placed Pod's anti-affinity on it.
      if (!s.affinity.length && !s.anti.length && !s.existingAnti.size) return null;
      const labels = nodeLabels(n);
      let podsExist = true;
      for (const t of s.affinity) {
        const v = labels[t.topologyKey];
        // Every topology key must be on the Node.
        if (v === undefined) return [REASONS.affinity];
        if (!s.affinityDomains.has(domainKey(t.topologyKey, v))) podsExist = false;
      }
      // The first of a group: no Pod anywhere matches the terms, and the Pod matches them itself.
      if (!podsExist && !(s.affinityDomains.size === 0 && s.selfMatch)) return [REASONS.affinity];
      for (const t of s.anti) {
        const v = labels[t.topologyKey];
        if (v !== undefined && s.antiDomains.has(domainKey(t.topologyKey, v))) return [REASONS.antiAffinity];
      }
      for (const [k, v] of Object.entries(labels)) if (s.existingAnti.has(domainKey(k, v))) return [REASONS.existingAnti];
      return null;
    },
    hints: {
      // A Node's labels make the topology domains: a new or relabelled Node may open one.
      node: () => true,
      // isSchedulableAfterPodChange: a Pod its required affinity selects came, or one its anti-affinity selects (or
      // whose own required anti-affinity may have kept it off) went.
      assignedPod(pod, prev, cur) {
        const own = termsOf(pod);
        if (cur && own.affinity.some((t) => termSelects(t, cur, nl))) return true;
        if (prev && !cur) return own.anti.some((t) => termSelects(t, prev, nl)) || termsOf(prev).anti.some((t) => termSelects(t, pod, nl));
        return false;
      },
    },
    score(_pod, n, state) {
      const s = state.get('InterPodAffinity') as AffinityState;
      if (!s.scores.size) return 0;
      let sum = 0;
      for (const [k, v] of Object.entries(nodeLabels(n))) sum += s.scores.get(domainKey(k, v)) ?? 0;
      return sum;
    },
    normalize(scores) {
      const min = Math.min(...scores);
      const max = Math.max(...scores);
      const diff = max - min;
      return scores.map((s) => (diff > 0 ? Math.trunc(MAX_NODE_SCORE * ((s - min) / diff)) : 0));
    },
  };
}

interface Constraint {
  readonly maxSkew: number;
  readonly topologyKey: string;
  readonly when: string;
  readonly selector: O;
  readonly minDomains: number;
  readonly honorAffinity: boolean;
  readonly honorTaints: boolean;
}

const HOSTNAME = 'kubernetes.io/hostname';
const ZONE = 'topology.kubernetes.io/zone';

/** The Pod's constraints with matchLabelKeys merged into their selectors. */
function constraintsOf(pod: Readonly<KObject>): Constraint[] {
  const own = labelsOf(pod);
  return objs(specOf(pod)['topologySpreadConstraints']).map((c) => {
    let selector = obj(c['labelSelector']) ?? {};
    const keys = arr(c['matchLabelKeys']).map(String).filter((k) => own[k] !== undefined);
    if (keys.length) selector = { ...selector, matchExpressions: [...objs(selector['matchExpressions']), ...keys.map((k) => ({ key: k, operator: 'In', values: [own[k]] }))] };
    return {
      maxSkew: typeof c['maxSkew'] === 'number' ? c['maxSkew'] : 1,
      topologyKey: str(c['topologyKey']),
      when: str(c['whenUnsatisfiable']) || 'DoNotSchedule',
      selector,
      minDomains: typeof c['minDomains'] === 'number' ? c['minDomains'] : 1,
      honorAffinity: c['nodeAffinityPolicy'] !== 'Ignore',
      honorTaints: c['nodeTaintsPolicy'] === 'Honor',
    };
  });
}

interface SpreadState {
  readonly hard: Constraint[];
  readonly soft: Constraint[];
  /** Per constraint: the Pods it selects per domain, among the eligible Nodes. */
  readonly counts: Map<Constraint, Map<string, number>>;
  readonly weights: Map<Constraint, number>;
  /** The system default constraints: a Node without one of their keys is scored on the others, not ignored. */
  readonly defaulted: boolean;
}

/**
 * The plugin. `defaultSelector(pod)` gives the selector of the system default constraints (the Services' and
 * ReplicaSets' selectors that select the Pod, merged), or null when nothing selects it.
 */
export function podTopologySpread(defaultSelector: (pod: Readonly<KObject>) => O | null = () => null, untolerated: (pod: Readonly<KObject>, n: NodeInfo) => boolean = () => false): Plugin {
  return {
    name: 'PodTopologySpread',
    weight: 2,
    preFilter(pod, state, nodes) {
      let all = constraintsOf(pod);
      const defaulted = all.length === 0;
      if (defaulted) {
        const sel = defaultSelector(pod);
        all = sel ? [
          { maxSkew: 3, topologyKey: HOSTNAME, when: 'ScheduleAnyway', selector: sel, minDomains: 1, honorAffinity: true, honorTaints: false },
          { maxSkew: 5, topologyKey: ZONE, when: 'ScheduleAnyway', selector: sel, minDomains: 1, honorAffinity: true, honorTaints: false },
        ] : [];
      }
      const s: SpreadState = { hard: all.filter((c) => c.when === 'DoNotSchedule'), soft: all.filter((c) => c.when !== 'DoNotSchedule'), counts: new Map(), weights: new Map(), defaulted };
      for (const c of all) {
        const m = new Map<string, number>();
        for (const n of nodes) {
          const v = nodeLabels(n)[c.topologyKey];
          if (v === undefined) continue;
          if (c.honorAffinity && !matchesNodeAffinity(pod, n.node)) continue;
          if (c.honorTaints && untolerated(pod, n)) continue;
          const matching = n.pods.filter((p) => nsOf(p) === nsOf(pod) && !meta(p)['deletionTimestamp'] && selects(c.selector, labelsOf(p))).length;
          m.set(v, (m.get(v) ?? 0) + matching);
        }
        s.counts.set(c, m);
        s.weights.set(c, Math.log(m.size + 2));
      }
      state.set('PodTopologySpread', s);
      return null;
    },
    hints: {
      // A Node with the constraints' keys may be a new domain (isSchedulableAfterNodeChange).
      node: (pod, _prev, cur) => constraintsOf(pod).every((c) => labelsOf(cur)[c.topologyKey] !== undefined),
      // isSchedulableAfterPodChange: a Pod of its namespace a constraint selects came or went.
      assignedPod: (pod, prev, cur) => [prev, cur].some((p) => p !== null && nsOf(p) === nsOf(pod) && constraintsOf(pod).some((c) => selects(c.selector, labelsOf(p)))),
    },
    filter(pod, n, state) {
      const s = state.get('PodTopologySpread') as SpreadState;
      const labels = nodeLabels(n);
      for (const c of s.hard) {
        const v = labels[c.topologyKey];
        if (v === undefined) return [REASONS.spreadLabel];
        const m = s.counts.get(c)!;
        let min = m.size < c.minDomains ? 0 : Math.min(...m.values());
        if (!Number.isFinite(min)) min = 0;
        const self = selects(c.selector, labelsOf(pod)) ? 1 : 0;
        if ((m.get(v) ?? 0) + self - min > c.maxSkew) return [REASONS.spread];
      }
      return null;
    },
    score(_pod, n, state) {
      const s = state.get('PodTopologySpread') as SpreadState;
      const labels = nodeLabels(n);
      let score = 0;
      for (const c of s.soft) {
        const v = labels[c.topologyKey];
        if (v === undefined) {
          if (s.defaulted) continue;
          return -1;
        }
        score += (s.counts.get(c)!.get(v) ?? 0) * s.weights.get(c)! + (c.maxSkew - 1);
      }
      return Math.round(score);
    },
    // Reversed: the fewer matching Pods in its domains, the higher; a Node missing a key (-1) scores 0.
    normalize(scores) {
      const valid = scores.filter((x) => x >= 0);
      if (!valid.length) return scores.map(() => 0);
      const min = Math.min(...valid);
      const max = Math.max(...valid);
      return scores.map((x) => (x < 0 ? 0 : max === 0 ? MAX_NODE_SCORE : Math.trunc((MAX_NODE_SCORE * (max + min - x)) / max)));
    },
  };
}
