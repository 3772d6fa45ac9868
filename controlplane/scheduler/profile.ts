/**
 * controlplane/scheduler/profile: the default profile's plugins in kube-scheduler's order (filters: NodeUnschedulable,
 * TaintToleration, NodeAffinity, NodePorts, NodeResourcesFit, PodTopologySpread, InterPodAffinity; scores add
 * NodeResourcesBalancedAllocation), and what PodTopologySpread's system defaults select (helper.DefaultSelector):
 * the selectors of the Services and ReplicaSets in the Pod's namespace that select it, ANDed.
 */
import type { KObject } from '../store/types.js';
import type { WatchCache } from '../store/watch-cache.js';
import { obj, objs, str } from '../../lib/json/loose.js';
import type { Plugin } from './framework.js';
import { interPodAffinity, podTopologySpread, selects } from './inter-pod.js';
import { nodeAffinity, nodePorts, nodeResourcesBalancedAllocation, nodeResourcesFit, nodeUnschedulable, taintToleration } from './plugins.js';

type O = Record<string, unknown>;
type Labels = Readonly<Record<string, string>>;

export interface ProfileDeps {
  /** The system default constraints' selector for a Pod (null: nothing selects it). */
  readonly defaultSelector: (pod: Readonly<KObject>) => O | null;
  /** A namespace's labels, for affinity terms' namespaceSelector. */
  readonly namespaceLabels: (ns: string) => Labels | undefined;
}

export function defaultProfile(d: ProfileDeps): Plugin[] {
  return [
    nodeUnschedulable, taintToleration, nodeAffinity, nodePorts, nodeResourcesFit,
    podTopologySpread(d.defaultSelector, (pod, n) => taintToleration.filter!(pod, n, new Map()) !== null),
    interPodAffinity(d.namespaceLabels),
    nodeResourcesBalancedAllocation,
  ];
}

/** helper.DefaultSelector over the watch cache: the Services' and ReplicaSets' selectors that select the Pod. */
export function defaultSelector(cache: WatchCache, pod: Readonly<KObject>): O | null {
  const ns = str(pod.metadata?.['namespace']);
  const labels = (obj(pod.metadata?.['labels']) ?? {}) as Labels;
  const matchLabels: Record<string, string> = {};
  const matchExpressions: O[] = [];
  let any = false;
  for (const s of cache.list('services', ns).items) {
    const sel = obj(obj(s.object['spec'])?.['selector']) as Record<string, string> | undefined;
    if (!sel || !Object.keys(sel).length || !selects({ matchLabels: sel }, labels)) continue;
    Object.assign(matchLabels, sel);
    any = true;
  }
  for (const rs of cache.list('replicasets.apps', ns).items) {
    const sel = obj(obj(rs.object['spec'])?.['selector']);
    if (!sel || !selects(sel, labels)) continue;
    Object.assign(matchLabels, obj(sel['matchLabels']) ?? {});
    matchExpressions.push(...objs(sel['matchExpressions']));
    any = true;
  }
  return any ? { matchLabels, ...(matchExpressions.length ? { matchExpressions } : {}) } : null;
}
