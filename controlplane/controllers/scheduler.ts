/**
 * controlplane/controllers/scheduler: kube-scheduler for the embedded
 * control plane, in small. A Pod without spec.nodeName, not terminating and
 * not finished, whose schedulerName is `default-scheduler` (or empty), is
 * bound to a Node through the Pod's `binding` subresource, as kube-scheduler
 * binds (the API server then sets spec.nodeName and PodScheduled=True).
 *
 * Filters, in the order of upstream's default plugins, the first that fails
 * giving the node's reason:
 * - NodeUnschedulable: `spec.unschedulable` nodes, unless the Pod tolerates
 *   `node.kubernetes.io/unschedulable:NoSchedule`;
 * - TaintToleration: every NoSchedule / NoExecute taint tolerated (operator
 *   Equal or Exists, an empty key with Exists tolerates every taint, an
 *   empty effect every effect). A Node that is not Ready counts as tainted
 *   `node.kubernetes.io/not-ready` (Ready=False) or
 *   `node.kubernetes.io/unreachable` (Unknown or no condition) with
 *   NoSchedule, as the node lifecycle controller taints it upstream
 *   (TaintNodesByCondition), so a Pod tolerating that may still go there;
 * - NodeAffinity: `nodeSelector` and the required node affinity
 *   (matchExpressions In, NotIn, Exists, DoesNotExist, Gt, Lt; matchFields
 *   on metadata.name; terms ORed, a term's requirements ANDed);
 * - NodeResourcesFit, the pod count only: a Node reporting
 *   `status.allocatable.pods` takes at most that many unfinished Pods.
 *   Nothing else of capacity is modelled (no cpu or memory requests are
 *   fitted: nodenet's nodes keep no allocatable accounting).
 * Among the nodes that fit, replicas of one owner (the controller
 * ownerReference's uid) spread: the node with the fewest Pods of that
 * owner, then the fewest Pods, then the first by name (deterministic; not
 * upstream's scoring).
 *
 * A Pod that fits nowhere stays Pending with PodScheduled=False, reason
 * Unschedulable and upstream's message ("0/3 nodes are available: 1
 * node(s) didn't match Pod's node affinity/selector, 2 node(s) had
 * untolerated taint {node.kubernetes.io/unreachable: }."), written through
 * the status subresource, and a FailedScheduling Warning Event. It is
 * tried again when a Node is added or changes what scheduling reads
 * (labels, taints, unschedulable, Ready, allocatable pods), when a bound
 * Pod goes or finishes, and every `unschedulableRetryMs` (30 s, upstream's
 * unschedulable queue flush). A bound Pod gets a Scheduled Event
 * ("Successfully assigned ns/pod to node"). Pods with schedulingGates wait
 * with PodScheduled=False, reason SchedulingGated. No preemption, no
 * inter-pod affinity, no topology spread constraints.
 *
 * Watch → compare → act through the REST layer, one Pod at a time from a
 * de-duplicated queue; the watch cache is the scheduler's cache (a binding is
 * committed before the next Pod is looked at, so no "assumed" Pods).
 */
import { ErrorCode, isNodenetError } from '../../lib/errors/errors.js';
import { F } from '../../lib/log/fields.js';
import type { Logger } from '../../lib/log/log.js';
import type { Clock } from '../../lib/reconcile/clock.js';
import { deepEqual } from '../../lib/reconcile/deep-equal.js';
import { rfc3339, type RestClient } from '../api/rest.js';
import { RESOURCES } from '../api/resources.js';
import { quantityNanos } from '../kinds/kinds.js';
import type { WatchCache } from '../store/watch-cache.js';
import type { KObject, StoreEvent } from '../store/types.js';
import { NO_EVENTS, type EventRecorder } from './events.js';
import { controllerOf } from './replicaset.js';
import { WorkQueue } from './work-queue.js';
import { obj, arr, objs, str } from '../../lib/json/loose.js';
import { toleratesTaint, type Taint, type Toleration } from './taints.js';
import { bindPod } from '../registry/pod.js';

type O = Record<string, unknown>;
const meta = (o: Readonly<KObject>): O => (o.metadata ?? {}) as O;
const specOf = (o: Readonly<KObject>): O => obj(o['spec']) ?? {};
const POD = RESOURCES.find((r) => r.resource === 'pods')!;

export const SCHEDULER_NAME = 'default-scheduler';

/** The reasons upstream's filter plugins give, as the FitError message counts them. */
export const REASON = {
  unschedulable: 'node(s) were unschedulable',
  affinity: "node(s) didn't match Pod's node affinity/selector",
  tooManyPods: 'Too many pods',
  taint: (t: Taint) => `node(s) had untolerated taint {${t.key}: ${t.value ?? ''}}`,
} as const;


export interface SchedulerOptions {
  readonly rest: RestClient;
  readonly cache: WatchCache;
  readonly clock: Clock;
  readonly log: Logger;
  /** Where its Events go (component `default-scheduler`); none: not recorded. */
  readonly events?: EventRecorder;
  /** Delay before a failed sync is tried again (the queue's default otherwise). */
  readonly retryMs?: number;
  /** How often Pods that fit nowhere are tried again, whatever changed (default 30 s). */
  readonly unschedulableRetryMs?: number;
}


/** A node's taints, with the NoSchedule taint its Ready condition implies when it is not Ready. Pure. */
export function effectiveTaints(node: Readonly<KObject>): Taint[] {
  const taints = objs(specOf(node)['taints']).map((t) => ({ key: str(t['key']), value: str(t['value']), effect: str(t['effect']) }));
  const ready = objs(obj(node['status'])?.['conditions']).find((c) => c['type'] === 'Ready')?.['status'];
  if (ready !== 'True') {
    const key = ready === 'False' ? 'node.kubernetes.io/not-ready' : 'node.kubernetes.io/unreachable';
    if (!taints.some((t) => t.key === key)) taints.push({ key, value: '', effect: 'NoSchedule' });
  }
  return taints;
}

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

/** The Pod's nodeSelector and required node affinity against a Node (NodeAffinity's Filter). Pure. */
export function matchesNodeAffinity(pod: Readonly<KObject>, node: Readonly<KObject>): boolean {
  const labels = (obj(meta(node)['labels']) ?? {}) as Record<string, string>;
  const spec = specOf(pod);
  for (const [k, v] of Object.entries(obj(spec['nodeSelector']) ?? {})) if (labels[k] !== v) return false;
  const required = obj(obj(obj(spec['affinity'])?.['nodeAffinity'])?.['requiredDuringSchedulingIgnoredDuringExecution']);
  if (!required) return true;
  const fields = { 'metadata.name': str(meta(node)['name']) };
  return objs(required['nodeSelectorTerms']).some((term) => {
    const exprs = objs(term['matchExpressions']);
    const byField = objs(term['matchFields']);
    // An empty term matches nothing, as upstream's NodeSelector.
    if (!exprs.length && !byField.length) return false;
    return exprs.every((e) => matchesRequirement(e, labels)) && byField.every((f) => matchesRequirement(f, fields));
  });
}

/**
 * Why `node` cannot take `pod`, in upstream's words, or null when it fits. Pure.
 * @param podsOnNode the unfinished Pods bound to the node
 */
export function unfitReason(pod: Readonly<KObject>, node: Readonly<KObject>, podsOnNode: number): string | null {
  const tolerations = objs(specOf(pod)['tolerations']) as Toleration[];
  const tolerated = (t: Taint) => tolerations.some((tol) => toleratesTaint(tol, t));
  if (specOf(node)['unschedulable'] === true && !tolerated({ key: 'node.kubernetes.io/unschedulable', effect: 'NoSchedule' })) return REASON.unschedulable;
  const bad = effectiveTaints(node).find((t) => (t.effect === 'NoSchedule' || t.effect === 'NoExecute') && !tolerated(t));
  if (bad) return REASON.taint(bad);
  if (!matchesNodeAffinity(pod, node)) return REASON.affinity;
  const max = quantityNanos(obj(obj(node['status'])?.['allocatable'])?.['pods']);
  if (max !== null && BigInt(podsOnNode + 1) * 1_000_000_000n > max) return REASON.tooManyPods;
  return null;
}

/** FitError.Error(): "0/3 nodes are available: 1 ..., 2 ...." (the counts sorted as strings, as upstream). Pure. */
export function fitErrorMessage(nodes: number, reasons: ReadonlyMap<string, number>): string {
  if (nodes === 0) return 'no nodes available to schedule pods';
  const parts = [...reasons].map(([r, n]) => `${n} ${r}`).sort();
  return `0/${nodes} nodes are available: ${parts.join(', ')}.`;
}

interface Load {
  total: number;
  readonly byOwner: Map<string, number>;
}

const finished = (p: Readonly<KObject>) => ['Succeeded', 'Failed'].includes(str(obj(p['status'])?.['phase']));

/** The Pod is this scheduler's to place. */
export function wantsScheduling(p: Readonly<KObject>): boolean {
  const spec = specOf(p);
  const sched = str(spec['schedulerName']);
  return !str(spec['nodeName']) && !meta(p)['deletionTimestamp'] && !finished(p) && (sched === '' || sched === SCHEDULER_NAME);
}

/** What scheduling reads of a Node: a change of it may let a waiting Pod in. */
function schedulingView(n: Readonly<KObject>): unknown {
  return [meta(n)['labels'] ?? {}, specOf(n)['taints'] ?? [], specOf(n)['unschedulable'] === true, effectiveTaints(n).map((t) => t.key), obj(obj(n['status'])?.['allocatable'])?.['pods']];
}

/** A Pod without what an update may change regardless of scheduling (status, resourceVersion, managedFields...). */
function podView(p: Readonly<KObject>): unknown {
  const m = { ...meta(p) };
  for (const k of ['resourceVersion', 'managedFields', 'generation', 'finalizers']) delete m[k];
  return [m, p['spec']];
}

export class Scheduler {
  private readonly handles: { stop(): void }[] = [];
  private readonly work: WorkQueue;
  private readonly events: EventRecorder;
  /** Pods that fit nowhere at their last try. */
  private readonly unschedulable = new Set<string>();
  private flushTimer: unknown = null;
  private stopped = false;

  constructor(private readonly o: SchedulerOptions) {
    this.events = o.events ?? NO_EVENTS;
    this.work = new WorkQueue({ name: 'scheduler', clock: o.clock, log: o.log, process: (k) => this.sync(k), ...(o.retryMs ? { retryMs: o.retryMs } : {}) });
  }

  start(): void {
    const st = this.o.cache;
    const rev = st.rev;
    for (const s of st.list('pods').items) if (wantsScheduling(s.object)) this.work.add(s.key);
    this.handles.push(st.watch({ gr: 'pods', afterRev: rev, onEvent: (ev) => this.onPod(ev) }));
    this.handles.push(st.watch({ gr: 'nodes', afterRev: rev, onEvent: (ev) => this.onNode(ev) }));
  }

  stop(): void {
    this.stopped = true;
    for (const h of this.handles) h.stop();
    if (this.flushTimer !== null) this.o.clock.clearTimeout(this.flushTimer);
    this.flushTimer = null;
    this.work.stop();
  }

  idle(): Promise<void> {
    return this.work.idle();
  }

  private onPod(ev: StoreEvent): void {
    const cur = ev.type === 'DELETED' ? null : ev.cur.object;
    const prev = ev.prev?.object ?? null;
    if (cur && wantsScheduling(cur)) {
      // Its own status (the scheduler's condition) changes nothing: upstream's isPodUpdated.
      if (!prev || !wantsScheduling(prev) || !deepEqual(podView(prev), podView(cur))) this.work.add(ev.key);
    } else if (this.unschedulable.has(ev.key)) this.work.add(ev.key); // gone or bound by someone else: forgotten in sync
    // A bound Pod gone or finished frees room (allocatable pods) and changes the spread.
    const wasBound = prev !== null && str(specOf(prev)['nodeName']) !== '' && !finished(prev);
    if (wasBound && (cur === null || finished(cur))) this.flushUnschedulable();
  }

  private onNode(ev: StoreEvent): void {
    if (ev.type === 'DELETED') return;
    if (ev.type === 'ADDED' || !ev.prev || !deepEqual(schedulingView(ev.prev.object), schedulingView(ev.cur.object))) this.flushUnschedulable();
  }

  private flushUnschedulable(): void {
    for (const k of this.unschedulable) this.work.add(k);
  }

  private markUnschedulable(key: string): void {
    this.unschedulable.add(key);
    if (this.flushTimer !== null || this.stopped) return;
    this.flushTimer = this.o.clock.setTimeout(() => {
      this.flushTimer = null;
      this.flushUnschedulable();
    }, this.o.unschedulableRetryMs ?? 30_000);
  }

  private async sync(key: string): Promise<void> {
    const s = this.o.cache.get(key);
    if (!s || !wantsScheduling(s.object)) {
      this.unschedulable.delete(key);
      return;
    }
    const pod = s.object;
    const ns = str(meta(pod)['namespace']);
    const name = str(meta(pod)['name']);
    if (arr(specOf(pod)['schedulingGates']).length) {
      // Waits for its gates to go (a spec change, which queues it again).
      this.unschedulable.delete(key);
      await this.setScheduledCondition(pod, 'SchedulingGated', 'Scheduling is blocked due to non-empty scheduling gates');
      return;
    }
    const nodes = this.o.cache.list('nodes').items.map((x) => x.object);
    const load = this.load();
    const owner = controllerOf(pod)?.uid;
    const reasons = new Map<string, number>();
    const fits: { name: string; mine: number; total: number }[] = [];
    for (const n of nodes) {
      const nodeName = str(meta(n)['name']);
      const l = load.get(nodeName);
      const why = unfitReason(pod, n, l?.total ?? 0);
      if (why) reasons.set(why, (reasons.get(why) ?? 0) + 1);
      else fits.push({ name: nodeName, mine: owner ? (l?.byOwner.get(owner) ?? 0) : 0, total: l?.total ?? 0 });
    }
    const best = fits.sort((a, b) => a.mine - b.mine || a.total - b.total || (a.name < b.name ? -1 : a.name > b.name ? 1 : 0))[0];
    if (!best) {
      const message = fitErrorMessage(nodes.length, reasons);
      const first = !this.unschedulable.has(key);
      this.markUnschedulable(key);
      this.o.log[first ? 'info' : 'debug']({ [F.namespace]: ns, [F.name]: name, [F.reason]: message }, 'scheduler: pod fits no node');
      this.events.event(pod, 'Warning', 'FailedScheduling', message);
      await this.setScheduledCondition(pod, 'Unschedulable', message);
      return;
    }
    try {
      await bindPod(this.o.rest, ns, name, { apiVersion: 'v1', kind: 'Binding', metadata: { name, namespace: ns, uid: meta(pod)['uid'] }, target: { apiVersion: 'v1', kind: 'Node', name: best.name } });
    } catch (e) {
      // Gone: nothing to do. Bound or changed meanwhile (a Conflict): the queue tries again at once and sees it.
      if (isNodenetError(e) && e.code === ErrorCode.NotFound) {
        this.unschedulable.delete(key);
        return;
      }
      if (!(isNodenetError(e) && e.code === ErrorCode.Conflict)) this.events.event(pod, 'Warning', 'FailedScheduling', `Binding rejected: ${e instanceof Error ? e.message : String(e)}`);
      throw e;
    }
    this.unschedulable.delete(key);
    this.o.log.info({ [F.namespace]: ns, [F.name]: name, [F.node]: best.name }, 'scheduler: pod bound');
    this.events.event(pod, 'Normal', 'Scheduled', `Successfully assigned ${ns}/${name} to ${best.name}`);
  }

  /** Unfinished Pods per node, in all and per controller uid. */
  private load(): Map<string, Load> {
    const out = new Map<string, Load>();
    for (const s of this.o.cache.list('pods').items) {
      const p = s.object;
      const node = str(specOf(p)['nodeName']);
      if (!node || finished(p)) continue;
      let l = out.get(node);
      if (!l) out.set(node, (l = { total: 0, byOwner: new Map() }));
      l.total++;
      const uid = controllerOf(p)?.uid;
      if (uid) l.byOwner.set(uid, (l.byOwner.get(uid) ?? 0) + 1);
    }
    return out;
  }

  /** PodScheduled=False with `reason` and `message` through the status subresource; no write when it says so already. */
  private async setScheduledCondition(pod: Readonly<KObject>, reason: string, message: string): Promise<void> {
    const status = structuredClone(obj(pod['status']) ?? {});
    const conds = objs(status['conditions']);
    const was = conds.find((c) => c['type'] === 'PodScheduled');
    if (was && was['status'] === 'False' && was['reason'] === reason && was['message'] === message) return;
    const cond: O = { type: 'PodScheduled', status: 'False', lastProbeTime: null, lastTransitionTime: was?.['status'] === 'False' ? was['lastTransitionTime'] : rfc3339(this.o.clock.now()), reason, message };
    status['conditions'] = was ? conds.map((c) => (c === was ? cond : c)) : [...conds, cond];
    // The resourceVersion read is the precondition: a Pod changed meanwhile is a Conflict, and looked at again.
    await this.o.rest.update(POD, str(meta(pod)['namespace']), str(meta(pod)['name']), { ...structuredClone(pod), status }, { sub: 'status', fieldManager: SCHEDULER_NAME });
  }
}
