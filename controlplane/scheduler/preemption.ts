/**
 * controlplane/scheduler/preemption: the DefaultPreemption plugin's choice (pkg/scheduler/framework/plugins/
 * defaultpreemption and framework/preemption), for a Pod that fits nowhere. Pure.
 *
 * - A Pod with preemptionPolicy Never preempts nothing.
 * - A Node is a candidate only when what keeps the Pod off it can be removed: resources, host ports, pod
 *   anti-affinity; not taints, node affinity or unschedulable (upstream's UnschedulableAndUnresolvable).
 * - On a candidate, every Pod of lower priority is taken away; if the Pod then fits, victims are given back one by
 *   one, the highest priority first (upstream's reprieve), as long as it still fits. What stays taken are the victims.
 * - Of the candidates, upstream's pickOneNodeForPreemption order: the lowest highest-priority victim, then the
 *   lowest sum of victims' priorities, then the fewest victims, then the first by name. (PodDisruptionBudgets, the
 *   first criterion upstream, are not served here.)
 */
import type { KObject } from '../store/types.js';
import { obj, str } from '../../lib/json/loose.js';
import { nodeInfo, type NodeInfo, type Plugin, type CycleState } from './framework.js';
import { REASON } from './plugins.js';
import { REASONS } from './inter-pod.js';

export const priorityOf = (p: Readonly<KObject>): number => {
  const v = obj(p['spec'])?.['priority'];
  return typeof v === 'number' ? v : 0;
};

/** The reasons a victim's removal may cure. */
export function resolvable(reason: string): boolean {
  return reason.startsWith('Insufficient ') || reason === REASON.tooManyPods || reason === REASON.ports || reason === REASONS.antiAffinity || reason === REASONS.existingAnti || reason === REASONS.affinity;
}

export interface Preemption {
  readonly node: string;
  readonly victims: readonly Readonly<KObject>[];
}

/** Whether the Pod passes every filter on a Node holding these Pods (PreFilter run afresh over the snapshot). */
function fits(pod: Readonly<KObject>, target: NodeInfo, pods: readonly Readonly<KObject>[], nodes: readonly NodeInfo[], plugins: readonly Plugin[]): boolean {
  const n = nodeInfo(target.node, pods);
  const snapshot = nodes.map((x) => (x.name === target.name ? n : x));
  const state: CycleState = new Map();
  for (const p of plugins) if (p.preFilter?.(pod, state, snapshot)) return false;
  return plugins.every((p) => !p.filter || p.filter(pod, n, state) === null);
}

/**
 * The Node and victims a preemption would take, or null when none would make room.
 * @param unfit each Node's filter reasons from the failed cycle
 */
export function findPreemption(pod: Readonly<KObject>, nodes: readonly NodeInfo[], plugins: readonly Plugin[], unfit: ReadonlyMap<string, readonly string[]>): Preemption | null {
  if (obj(pod['spec'])?.['preemptionPolicy'] === 'Never') return null;
  const mine = priorityOf(pod);
  const candidates: Preemption[] = [];
  for (const n of nodes) {
    const why = unfit.get(n.name);
    if (!why || !why.every(resolvable)) continue;
    const lower = n.pods.filter((p) => priorityOf(p) < mine);
    if (!lower.length) continue;
    let kept = n.pods.filter((p) => priorityOf(p) >= mine);
    if (!fits(pod, n, kept, nodes, plugins)) continue;
    // The reprieve: the most important victims first, each kept if the Pod still fits.
    const victims: Readonly<KObject>[] = [];
    const order = [...lower].sort((a, b) => priorityOf(b) - priorityOf(a) || startOf(a) - startOf(b));
    for (const v of order) {
      if (fits(pod, n, [...kept, v], nodes, plugins)) kept = [...kept, v];
      else victims.push(v);
    }
    candidates.push({ node: n.name, victims });
  }
  const top = (c: Preemption) => Math.max(...c.victims.map(priorityOf));
  const sum = (c: Preemption) => c.victims.reduce((s, v) => s + priorityOf(v), 0);
  candidates.sort((a, b) => top(a) - top(b) || sum(a) - sum(b) || a.victims.length - b.victims.length || (a.node < b.node ? -1 : a.node > b.node ? 1 : 0));
  return candidates[0] ?? null;
}

const startOf = (p: Readonly<KObject>): number => {
  const t = Date.parse(str(obj(p['status'])?.['startTime']) ?? '');
  return Number.isNaN(t) ? 0 : t;
};
