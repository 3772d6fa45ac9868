/**
 * controlplane/scheduler/cache: the scheduler's own view of the cluster, kept up to date event by event, as
 * kube-scheduler's internal cache (pkg/scheduler/backend/cache) is: each Node with the Pods bound to it and what
 * they request, so that a scheduling cycle reads a snapshot instead of walking every Pod.
 *
 * - `setNode` / `removeNode` and `setPod` / `removePod` take the watch's objects; a Pod counts on its Node while it
 *   is bound and not finished (Succeeded, Failed). A Pod bound to a Node the cache does not know yet is kept and
 *   counted once the Node comes.
 * - `assume(key, node)`: right after a binding is accepted, the Pod counts on its Node before the watch brings the
 *   bound object (upstream's AssumePod): with etcd under the API server the watch is later than the write, and the
 *   next cycle must not give the same room away twice. An event that still shows the Pod unbound leaves the
 *   assumption in place; one that shows it bound, or its deletion, ends it.
 * - `snapshot()`: the NodeInfos sorted by Node name, the same array while nothing changed; a Node whose Pods
 *   changed gets a new NodeInfo (nodeInfo() over its Pods, their requests computed once per Pod object) in a copy
 *   of the array, the others are reused (upstream's UpdateSnapshot by generation).
 * Pure: no I/O, no clock.
 */
import type { KObject } from '../store/types.js';
import { obj, str } from '../../lib/json/loose.js';
import { finished, nodeInfo, type NodeInfo } from './framework.js';

const nameOf = (o: Readonly<KObject>) => str(obj(o.metadata)?.['name']);
const boundTo = (p: Readonly<KObject>) => str(obj(p['spec'])?.['nodeName']);

export class SchedulerCache {
  private readonly nodes = new Map<string, Readonly<KObject>>();
  /** Node name → Pod key → Pod, for the Pods that count (bound, not finished). */
  private readonly pods = new Map<string, Map<string, Readonly<KObject>>>();
  /** Pod key → the Node it counts on. */
  private readonly placed = new Map<string, string>();
  private readonly assumed = new Set<string>();
  private readonly infos = new Map<string, NodeInfo>();
  /** The Node names sorted, and each one's index (null: a Node came or went). */
  private order: { names: string[]; at: Map<string, number> } | null = null;
  private sorted: NodeInfo[] | null = null;
  /** Nodes whose NodeInfo changed since `sorted` was made. */
  private readonly stale = new Set<string>();

  setNode(node: Readonly<KObject>): void {
    const name = nameOf(node);
    if (!this.nodes.has(name)) this.order = null;
    this.nodes.set(name, node);
    this.invalidate(name);
  }

  removeNode(name: string): void {
    if (this.nodes.delete(name)) this.order = null;
    this.invalidate(name);
  }

  /** A Pod as the watch shows it now. */
  setPod(key: string, pod: Readonly<KObject>): void {
    const node = boundTo(pod);
    if (!node && this.assumed.has(key)) return; // the watch has not caught up with our binding yet
    this.assumed.delete(key);
    this.unplace(key);
    if (node && !finished(pod)) this.place(key, node, pod);
  }

  removePod(key: string): void {
    this.assumed.delete(key);
    this.unplace(key);
  }

  /** The Pod counts on `node` from now on, until the watch shows it bound, or gone. */
  assume(key: string, pod: Readonly<KObject>, node: string): void {
    if (this.placed.get(key) === node) return; // the watch was quicker: the bound object is here already
    this.unplace(key);
    this.place(key, node, { ...pod, spec: { ...(obj(pod['spec']) ?? {}), nodeName: node } });
    this.assumed.add(key);
  }

  /** The Pod is assumed: its binding written or being written, the watch not there yet. */
  isAssumed(key: string): boolean {
    return this.assumed.has(key);
  }

  /** The binding failed: the assumption goes, and the Pod counts as the watch shows it (`current`, null: gone). */
  forget(key: string, current: Readonly<KObject> | null): void {
    if (!this.assumed.delete(key)) return;
    this.unplace(key);
    if (current) this.setPod(key, current);
  }

  /** The Node's NodeInfo (undefined: no such Node). */
  node(name: string): NodeInfo | undefined {
    if (!this.nodes.has(name)) return undefined;
    return this.info(name);
  }

  /** Valid as long as the caller likes: a change makes a new array (copy on write), this one stays as it was. */
  snapshot(): readonly NodeInfo[] {
    if (!this.order) {
      const names = [...this.nodes.keys()].sort();
      this.order = { names, at: new Map(names.map((n, i) => [n, i])) };
      this.sorted = null;
    }
    if (!this.sorted) {
      this.sorted = this.order.names.map((n) => this.info(n));
    } else if (this.stale.size) {
      const next = this.sorted.slice();
      for (const n of this.stale) {
        const i = this.order.at.get(n);
        if (i !== undefined) next[i] = this.info(n);
      }
      this.sorted = next;
    }
    this.stale.clear();
    return this.sorted;
  }

  /** How many Pods count on Nodes (for tests and metrics). */
  get podCount(): number {
    return this.placed.size;
  }

  private info(name: string): NodeInfo {
    let i = this.infos.get(name);
    if (!i) {
      i = nodeInfo(this.nodes.get(name)!, [...(this.pods.get(name)?.values() ?? [])]);
      this.infos.set(name, i);
    }
    return i;
  }

  private place(key: string, node: string, pod: Readonly<KObject>): void {
    (this.pods.get(node) ?? this.pods.set(node, new Map()).get(node)!).set(key, pod);
    this.placed.set(key, node);
    this.invalidate(node);
  }

  private unplace(key: string): void {
    const was = this.placed.get(key);
    if (was === undefined) return;
    this.placed.delete(key);
    const m = this.pods.get(was);
    m?.delete(key);
    if (m && !m.size) this.pods.delete(was);
    this.invalidate(was);
  }

  private invalidate(node: string): void {
    this.infos.delete(node);
    this.stale.add(node);
  }
}
