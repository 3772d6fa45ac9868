/**
 * controlplane/controllers/scheduler: kube-scheduler for the embedded control plane. A Pod without spec.nodeName,
 * not terminating and not finished, whose schedulerName is `default-scheduler` (or empty), goes through one
 * scheduling cycle of the default profile (controlplane/scheduler/: filter, then score, with upstream's plugins,
 * order and weights) against the Nodes and the Pods bound to them, and is bound to the best Node through the Pod's
 * `binding` subresource, as kube-scheduler binds (the API server then sets spec.nodeName and PodScheduled=True).
 *
 * Filters: NodeUnschedulable, TaintToleration (a Node that is not Ready counts as tainted not-ready / unreachable
 * NoSchedule), NodeAffinity, NodePorts, NodeResourcesFit (requests against allocatable, pods included),
 * PodTopologySpread, InterPodAffinity. Scores: TaintToleration (3), NodeAffinity (2), NodeResourcesFit
 * LeastAllocated (1), PodTopologySpread (2; with no constraints of its own, upstream's system defaults over the
 * Services and ReplicaSets that select the Pod), InterPodAffinity (2), NodeResourcesBalancedAllocation (1). Ties go
 * to the Node with the fewest Pods, then the first by name (upstream draws one at random).
 *
 * A Pod that fits nowhere stays Pending with PodScheduled=False, reason Unschedulable and upstream's message
 * ("0/3 nodes are available: 1 Insufficient cpu, 2 node(s) didn't match pod anti-affinity rules."), written through
 * the status subresource, and a FailedScheduling Warning Event. It waits in the unschedulable queue with the names
 * of the plugins that refused it, and is tried again only when an event one of them registers says it may fit now
 * (upstream's QueueingHints, scheduler/framework.ts): a Node added or changed in what scheduling reads (labels,
 * taints, unschedulable, Ready, allocatable), or a bound Pod that came, changed or went; or when its own spec
 * changes; and at the latest after `unschedulableRetryMs` (5 min, podMaxInUnschedulablePodsDuration). A bound Pod gets a Scheduled Event
 * ("Successfully assigned ns/pod to node"). Pods with schedulingGates wait with PodScheduled=False, reason
 * SchedulingGated. A Pod that fits nowhere may preempt (DefaultPreemption, scheduler/preemption.ts): the victims of
 * the best Node get DisruptionTarget and a graceful delete, the Pod status.nominatedNodeName; otherwise its message
 * ends with upstream's "preemption: 0/3 nodes are available: 3 No preemption victims found for incoming pod.".
 *
 * Watch → compare → act through the REST layer, one Pod at a time from a de-duplicated queue ordered by priority,
 * then by arrival (PrioritySort). The scheduler keeps its own cache (scheduler/cache.ts), fed by the watch: each Node
 * with its bound Pods and what they request, updated Pod by Pod, so a cycle costs what the Nodes cost, not what every
 * Pod in the cluster does. A Pod given a Node counts on it at once (assumed), and its Binding is written beside the
 * next cycles (upstream's binding cycle, at most 16 at a time); a Binding refused undoes the assumption and the Pod
 * is tried again. A
 * cycle looks at upstream's adaptive share of the Nodes (percentageOfNodesToScore), from where the last one stopped.
 */
import { ErrorCode, isNodenetError } from '../../lib/errors/errors.js';
import { F } from '../../lib/log/fields.js';
import type { Logger } from '../../lib/log/log.js';
import type { Clock } from '../../lib/reconcile/clock.js';
import { deepEqual } from '../../lib/reconcile/deep-equal.js';
import { rfc3339, type RestClient } from '../api/rest.js';
import { RESOURCES } from '../api/resources.js';
import type { WatchCache } from '../store/watch-cache.js';
import type { KObject, StoreEvent } from '../store/types.js';
import { NO_EVENTS, type EventRecorder } from './events.js';
import { WorkQueue } from './work-queue.js';
import { obj, arr, objs, str } from '../../lib/json/loose.js';
import { defaultProfile, defaultSelector } from '../scheduler/profile.js';
import { fitErrorMessage, schedule, type Plugin } from '../scheduler/framework.js';
import { SchedulerCache } from '../scheduler/cache.js';
import { effectiveTaints } from '../scheduler/plugins.js';
import { findPreemption, priorityOf, resolvable, type Preemption } from '../scheduler/preemption.js';
import { bindPod } from '../registry/pod.js';

type O = Record<string, unknown>;
const meta = (o: Readonly<KObject>): O => (o.metadata ?? {}) as O;
const specOf = (o: Readonly<KObject>): O => obj(o['spec']) ?? {};
const POD = RESOURCES.find((r) => r.resource === 'pods')!;

export const SCHEDULER_NAME = 'default-scheduler';
/** Bindings written at once at most; the next cycle waits for one to finish beyond that. */
const MAX_BINDINGS = 16;

export interface SchedulerOptions {
  readonly rest: RestClient;
  readonly cache: WatchCache;
  readonly clock: Clock;
  readonly log: Logger;
  /** Where its Events go (component `default-scheduler`); none: not recorded. */
  readonly events?: EventRecorder;
  /** Delay before a failed sync is tried again (the queue's default otherwise). */
  readonly retryMs?: number;
  /** How long a Pod that fits nowhere waits at most for an event that may help it (default 5 min, upstream's). */
  readonly unschedulableRetryMs?: number;
  /** percentageOfNodesToScore (0 or absent: upstream's adaptive default). */
  readonly percentageOfNodesToScore?: number;
}


const finished = (p: Readonly<KObject>) => ['Succeeded', 'Failed'].includes(str(obj(p['status'])?.['phase']));
/** Bound to a Node and still counting there. */
const bound = (p: Readonly<KObject>) => str(specOf(p)['nodeName']) !== '' && !finished(p);

/** The Pod is this scheduler's to place. */
export function wantsScheduling(p: Readonly<KObject>): boolean {
  const spec = specOf(p);
  const sched = str(spec['schedulerName']);
  return !str(spec['nodeName']) && !meta(p)['deletionTimestamp'] && !finished(p) && (sched === '' || sched === SCHEDULER_NAME);
}

/** What scheduling reads of a Node: a change of it may let a waiting Pod in. */
function schedulingView(n: Readonly<KObject>): unknown {
  return [meta(n)['labels'] ?? {}, specOf(n)['taints'] ?? [], specOf(n)['unschedulable'] === true, effectiveTaints(n).map((t) => t.key), obj(n['status'])?.['allocatable'] ?? null];
}

/** A Pod without what an update may change regardless of scheduling (status, resourceVersion, managedFields...). */
function podView(p: Readonly<KObject>): unknown {
  const m = { ...meta(p) };
  for (const k of ['resourceVersion', 'managedFields', 'generation', 'finalizers']) delete m[k];
  return [m, p['spec']];
}

/** The PostFilter's part of the FitError when no preemption helps, in upstream's words. */
function preemptionMessage(pod: Readonly<KObject>, nodes: number, unfit: ReadonlyMap<string, readonly string[]>): string {
  if (specOf(pod)['preemptionPolicy'] === 'Never') return 'preemption: not eligible due to preemptionPolicy=Never.';
  let helpless = 0;
  for (const why of unfit.values()) if (!why.every(resolvable)) helpless++;
  const parts = [...(helpless ? [`${helpless} Preemption is not helpful for scheduling`] : []), ...(nodes - helpless ? [`${nodes - helpless} No preemption victims found for incoming pod`] : [])].sort();
  return `preemption: 0/${nodes} nodes are available: ${parts.join(', ')}.`;
}

export class Scheduler {
  private readonly handles: { stop(): void }[] = [];
  private readonly work: WorkQueue;
  private readonly events: EventRecorder;
  /** Pods that fit nowhere at their last try, with the plugins that refused them. */
  private readonly unschedulable = new Map<string, ReadonlySet<string>>();
  private flushTimer: unknown = null;
  private stopped = false;
  private readonly plugins: readonly Plugin[];
  private readonly byName: ReadonlyMap<string, Plugin>;
  private readonly nodes = new SchedulerCache();
  /** nextStartNodeIndex. */
  private nextStart = 0;
  /** The bindings being written. */
  private readonly inflight = new Set<Promise<void>>();

  constructor(private readonly o: SchedulerOptions) {
    this.events = o.events ?? NO_EVENTS;
    this.plugins = defaultProfile({
      defaultSelector: (pod) => defaultSelector(o.cache, pod),
      namespaceLabels: (ns) => (obj(o.cache.get(`namespaces//${ns}`)?.object.metadata?.['labels']) ?? undefined) as Record<string, string> | undefined,
    });
    this.byName = new Map(this.plugins.map((p) => [p.name, p]));
    this.work = new WorkQueue({
      name: 'scheduler', clock: o.clock, log: o.log, process: (k) => this.sync(k), ...(o.retryMs ? { retryMs: o.retryMs } : {}),
      // PrioritySort: spec.priority, higher first; then the order they came in.
      priority: (k) => {
        const p = this.o.cache.get(k)?.object;
        return p ? priorityOf(p) : 0;
      },
    });
  }

  start(): void {
    const st = this.o.cache;
    const rev = st.rev;
    for (const n of st.list('nodes').items) this.nodes.setNode(n.object);
    for (const s of st.list('pods').items) this.nodes.setPod(s.key, s.object);
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

  /** Resolves when no Pod waits, no cycle runs and no binding is being written. */
  async idle(): Promise<void> {
    do {
      await this.work.idle();
      await Promise.all([...this.inflight]);
    } while (this.inflight.size || this.work.length);
  }

  private onPod(ev: StoreEvent): void {
    const cur = ev.type === 'DELETED' ? null : ev.cur.object;
    const prev = ev.prev?.object ?? null;
    if (cur) this.nodes.setPod(ev.key, cur);
    else this.nodes.removePod(ev.key);
    if (cur && wantsScheduling(cur)) {
      // Its own status (the scheduler's condition) changes nothing: upstream's isPodUpdated.
      if (!prev || !wantsScheduling(prev) || !deepEqual(podView(prev), podView(cur))) this.work.add(ev.key);
    } else if (this.unschedulable.has(ev.key)) this.work.add(ev.key); // gone or bound by someone else: forgotten in sync
    // A bound Pod that came, changed what scheduling reads of it, or went: the hints say whom it may help.
    const was = prev !== null && bound(prev) ? prev : null;
    const now = cur !== null && bound(cur) ? cur : null;
    if (!was && !now) return;
    if (was && now && deepEqual(podView(was), podView(now))) return;
    this.requeue((p) => p.hints?.assignedPod?.bind(p.hints), (pod, hint) => hint(pod, was, now));
  }

  private onNode(ev: StoreEvent): void {
    if (ev.type === 'DELETED') {
      this.nodes.removeNode(str(meta(ev.prev?.object ?? ev.cur.object)['name']));
      return;
    }
    this.nodes.setNode(ev.cur.object);
    const prev = ev.type === 'ADDED' ? null : (ev.prev?.object ?? null);
    if (prev && deepEqual(schedulingView(prev), schedulingView(ev.cur.object))) return;
    // No plugin refused (no Nodes at all): any Node may help.
    this.requeue((p) => p.hints?.node?.bind(p.hints), (pod, hint) => hint(pod, prev, ev.cur.object), true);
  }

  /** Brings back the unschedulable Pods for which a refusing plugin's hint says Queue (or, `noPlugins`, none refused). */
  private requeue<H>(hintOf: (p: Plugin) => H | undefined, ask: (pod: Readonly<KObject>, hint: H) => boolean, noPlugins = false): void {
    for (const [key, plugins] of this.unschedulable) {
      const pod = this.o.cache.get(key)?.object;
      if (!pod) {
        this.work.add(key);
        continue;
      }
      if (!plugins.size) {
        if (noPlugins) this.work.add(key);
        continue;
      }
      for (const name of plugins) {
        const p = this.byName.get(name);
        const hint = p ? hintOf(p) : undefined;
        if (hint && ask(pod, hint)) {
          this.work.add(key);
          break;
        }
      }
    }
  }

  private flushUnschedulable(): void {
    for (const k of this.unschedulable.keys()) this.work.add(k);
  }

  private markUnschedulable(key: string, plugins: ReadonlySet<string>): void {
    this.unschedulable.set(key, plugins);
    if (this.flushTimer !== null || this.stopped) return;
    this.flushTimer = this.o.clock.setTimeout(() => {
      this.flushTimer = null;
      this.flushUnschedulable();
    }, this.o.unschedulableRetryMs ?? 300_000);
  }

  private async sync(key: string): Promise<void> {
    const s = this.o.cache.get(key);
    if (!s || !wantsScheduling(s.object)) {
      this.unschedulable.delete(key);
      return;
    }
    // Its binding is being written (or written and not yet seen in the watch).
    if (this.nodes.isAssumed(key)) return;
    const pod = s.object;
    const ns = str(meta(pod)['namespace']);
    const name = str(meta(pod)['name']);
    if (arr(specOf(pod)['schedulingGates']).length) {
      // Waits for its gates to go (a spec change, which queues it again).
      this.unschedulable.delete(key);
      await this.setScheduledCondition(pod, 'SchedulingGated', 'Scheduling is blocked due to non-empty scheduling gates');
      return;
    }
    const infos = this.nodes.snapshot();
    const d = schedule(pod, infos, this.plugins, { start: this.nextStart, ...(this.o.percentageOfNodesToScore ? { percentage: this.o.percentageOfNodesToScore } : {}) });
    this.nextStart = infos.length ? (this.nextStart + d.evaluated) % infos.length : 0;
    if (d.node === null) {
      let message = fitErrorMessage(d.nodes, d.reasons);
      // PostFilter: DefaultPreemption.
      // PodEligibleToPreemptOthers: not again while the victims of its last preemption are still going.
      const nominated = str(obj(pod['status'])?.['nominatedNodeName']);
      const waiting = nominated !== '' && (infos.find((n) => n.name === nominated)?.pods ?? []).some((p) => meta(p)['deletionTimestamp'] && priorityOf(p) < priorityOf(pod));
      const pre = d.nodes && !waiting ? findPreemption(pod, infos, this.plugins, d.unfit) : null;
      if (pre) await this.preempt(pod, pre);
      else if (d.nodes && !waiting) message += ` ${preemptionMessage(pod, d.nodes, d.unfit)}`;
      const first = !this.unschedulable.has(key);
      this.markUnschedulable(key, d.plugins);
      this.o.log[first ? 'info' : 'debug']({ [F.namespace]: ns, [F.name]: name, [F.reason]: message }, 'scheduler: pod fits no node');
      this.events.event(pod, 'Warning', 'FailedScheduling', message);
      await this.setScheduledCondition(this.o.cache.get(key)?.object ?? pod, 'Unschedulable', message);
      return;
    }
    // The binding cycle runs beside the next scheduling cycles, as upstream's: the Pod counts on its Node from now
    // on (assumed), and the next Pod is looked at while the binding is written.
    this.nodes.assume(key, pod, d.node);
    this.unschedulable.delete(key);
    const b: Promise<void> = this.bind(key, pod, d.node).finally(() => this.inflight.delete(b));
    this.inflight.add(b);
    if (this.inflight.size >= MAX_BINDINGS) await Promise.race(this.inflight);
  }

  /** The binding cycle: the Binding written; on failure the assumption is forgotten and the Pod tried again. */
  private async bind(key: string, pod: Readonly<KObject>, node: string): Promise<void> {
    const ns = str(meta(pod)['namespace']);
    const name = str(meta(pod)['name']);
    try {
      await bindPod(this.o.rest, ns, name, { apiVersion: 'v1', kind: 'Binding', metadata: { name, namespace: ns, uid: meta(pod)['uid'] }, target: { apiVersion: 'v1', kind: 'Node', name: node } });
    } catch (e) {
      this.nodes.forget(key, this.o.cache.get(key)?.object ?? null);
      // Gone: nothing to do. Bound or changed meanwhile (a Conflict): tried again at once, on what the watch shows.
      if (isNodenetError(e) && e.code === ErrorCode.NotFound) return;
      const conflict = isNodenetError(e) && e.code === ErrorCode.Conflict;
      if (!conflict) {
        this.o.log.warn({ [F.namespace]: ns, [F.name]: name, [F.node]: node, [F.err]: e }, 'scheduler: binding failed, will retry');
        this.events.event(pod, 'Warning', 'FailedScheduling', `Binding rejected: ${e instanceof Error ? e.message : String(e)}`);
      }
      if (!this.stopped) this.work.addAfter(key, conflict ? 0 : (this.o.retryMs ?? 500));
      return;
    }
    this.o.log.info({ [F.namespace]: ns, [F.name]: name, [F.node]: node }, 'scheduler: pod bound');
    this.events.event(pod, 'Normal', 'Scheduled', `Successfully assigned ${ns}/${name} to ${node}`);
  }

  /** PodScheduled=False with `reason` and `message` through the status subresource; no write when it says so already. */
  /**
   * Preemption's work, as upstream's: each victim gets the DisruptionTarget condition (PreemptionByScheduler) and a
   * Preempted Event, and is deleted with its grace period; the preemptor gets status.nominatedNodeName. It is bound
   * once the victims are gone (their deletion brings it back to the queue).
   */
  private async preempt(pod: Readonly<KObject>, pre: Preemption): Promise<void> {
    const uid = str(meta(pod)['uid']);
    for (const chosen of pre.victims) {
      const vns = str(meta(chosen)['namespace']);
      const vname = str(meta(chosen)['name']);
      // The watch's object, not the scheduler cache's (which may be the copy it assumed at binding).
      const v = this.o.cache.get(`pods/${vns}/${vname}`)?.object;
      if (!v || meta(v)['uid'] !== meta(chosen)['uid']) continue;
      const status = structuredClone(obj(v['status']) ?? {});
      const conds = objs(status['conditions']).filter((c) => c['type'] !== 'DisruptionTarget');
      status['conditions'] = [...conds, { type: 'DisruptionTarget', status: 'True', lastProbeTime: null, lastTransitionTime: rfc3339(this.o.clock.now()), reason: 'PreemptionByScheduler', message: `${SCHEDULER_NAME}: preempting to accommodate a higher priority pod` }];
      try {
        await this.o.rest.update(POD, vns, vname, { ...structuredClone(v), status }, { sub: 'status', fieldManager: SCHEDULER_NAME });
        await this.o.rest.delete(POD, vns, vname);
      } catch (e) {
        if (isNodenetError(e) && e.code === ErrorCode.NotFound) continue;
        throw e;
      }
      this.events.event(v, 'Normal', 'Preempted', `Preempted by pod ${uid} on node ${pre.node}`);
      this.o.log.info({ [F.namespace]: vns, [F.name]: vname, [F.node]: pre.node, preemptor: `${str(meta(pod)['namespace'])}/${str(meta(pod)['name'])}` }, 'scheduler: pod preempted');
    }
    const cur = this.o.cache.get(`pods/${str(meta(pod)['namespace'])}/${str(meta(pod)['name'])}`)?.object ?? pod;
    if (obj(cur['status'])?.['nominatedNodeName'] !== pre.node) {
      await this.o.rest.update(POD, str(meta(cur)['namespace']), str(meta(cur)['name']), { ...structuredClone(cur), status: { ...(obj(cur['status']) ?? {}), nominatedNodeName: pre.node } }, { sub: 'status', fieldManager: SCHEDULER_NAME });
    }
  }

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
