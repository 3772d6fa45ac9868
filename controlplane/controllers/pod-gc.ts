/**
 * controlplane/controllers/pod-gc: kube-controller-manager's pod garbage
 * collector, the part a cluster that loses Nodes needs: a Pod bound to a
 * Node that no longer exists (an orphan) is deleted at once (grace 0), with
 * a `DisruptionTarget` condition saying why, so its endpoints leave the
 * EndpointSlices and its ReplicaSet replaces it on a Node that exists.
 *
 * As upstream, a Node must have been missing for a quarantine (40 s) before
 * its Pods go: a Pod may name a Node that is about to register, and a Node
 * deleted and registered again right away keeps its Pods. The quarantine
 * starts when the controller first sees the Pod's Node missing; every Pod
 * is looked at again when it ends (the timer may fire early: the deadline
 * is checked on the controller's clock, and the key re-armed until due).
 *
 * Watch → compare → act: Nodes and Pods from the store's event stream, the
 * writes through the REST layer (status, then a delete with the Pod's uid
 * as precondition), like any client's.
 */
import { ErrorCode, isNodenetError } from '../../lib/errors/errors.js';
import { F } from '../../lib/log/fields.js';
import type { Logger } from '../../lib/log/log.js';
import type { Clock } from '../../lib/reconcile/clock.js';
import { rfc3339, type RestClient } from '../api/rest.js';
import { RESOURCES } from '../api/resources.js';
import { POD_NODE_NAME, podNodeName } from './indexes.js';
import type { WatchCache } from '../store/watch-cache.js';
import type { KObject, StoreEvent } from '../store/types.js';
import { NO_EVENTS, type EventRecorder } from './events.js';
import { WorkQueue } from './work-queue.js';
import { obj, str } from '../../lib/json/loose.js';

type O = Record<string, unknown>;
const PODS = RESOURCES.find((r) => r.resource === 'pods')!;
const FIELD_MANAGER = 'nodenet-pod-gc';
export const POD_GC_COMPONENT = 'pod-garbage-collector';
/** Upstream's quarantine for orphaned Pods (podgc's quarantineTime). */
export const DEFAULT_ORPHAN_QUARANTINE_MS = 40_000;

export interface PodGcOptions {
  readonly rest: RestClient;
  readonly cache: WatchCache;
  readonly clock: Clock;
  readonly log: Logger;
  readonly events?: EventRecorder;
  readonly quarantineMs?: number;
  readonly retryMs?: number;
}

const nodeOf = (p: Readonly<KObject>): string => str(obj(p['spec'])?.['nodeName']);

export class PodGarbageCollector {
  private readonly quarantineMs: number;
  /** Node name → when it was first seen missing (controller clock), for Nodes Pods are bound to. */
  private readonly missingSince = new Map<string, number>();
  private watches: { stop(): void }[] = [];
  private readonly work: WorkQueue;

  constructor(private readonly o: PodGcOptions) {
    this.quarantineMs = o.quarantineMs ?? DEFAULT_ORPHAN_QUARANTINE_MS;
    o.cache.addIndex('pods', POD_NODE_NAME, podNodeName);
    this.work = new WorkQueue({ name: 'pod GC', clock: o.clock, log: o.log, process: (key) => this.process(key), retryMs: o.retryMs ?? 1000 });
  }

  start(): void {
    const pods = this.o.cache.list('pods');
    for (const s of pods.items) if (nodeOf(s.object)) this.work.add(`pods/${str(s.object.metadata?.['namespace'])}/${str(s.object.metadata?.['name'])}`);
    this.watches.push(this.o.cache.watch({ gr: 'pods', afterRev: pods.rev, onEvent: (ev) => this.onPod(ev) }));
    this.watches.push(this.o.cache.watch({ gr: 'nodes', afterRev: this.o.cache.rev, onEvent: (ev) => this.onNode(ev) }));
  }

  stop(): void {
    for (const w of this.watches) w.stop();
    this.watches = [];
    this.work.stop();
  }

  /** Resolves when nothing is queued or being worked on (tests). */
  idle(): Promise<void> {
    return this.work.idle();
  }

  private onPod(ev: StoreEvent): void {
    if (ev.type === 'DELETED' || !nodeOf(ev.cur.object)) return;
    this.work.add(ev.key);
  }

  private onNode(ev: StoreEvent): void {
    const name = str(ev.cur.object.metadata?.['name']);
    if (ev.type !== 'DELETED') {
      this.missingSince.delete(name);
      return;
    }
    for (const s of this.o.cache.byIndex('pods', POD_NODE_NAME, name)) this.work.add(`pods/${str(s.object.metadata?.['namespace'])}/${str(s.object.metadata?.['name'])}`);
  }

  private async process(key: string): Promise<void> {
    const s = this.o.cache.get(key);
    if (!s) return;
    const pod = s.object;
    const node = nodeOf(pod);
    if (!node) return;
    if (this.o.cache.get(`nodes//${node}`)) {
      this.missingSince.delete(node);
      return;
    }
    const now = this.o.clock.now();
    const since = this.missingSince.get(node) ?? now;
    this.missingSince.set(node, since);
    const wait = since + this.quarantineMs - now;
    if (wait > 0) {
      this.work.addAfter(key, wait);
      return;
    }
    const [, ns = '', name = ''] = key.split('/');
    const uid = str(pod.metadata?.['uid']);
    const status = structuredClone(obj(pod['status']) ?? {});
    const conds = (Array.isArray(status['conditions']) ? status['conditions'] : []).map(obj).filter((c): c is O => !!c && c['type'] !== 'DisruptionTarget');
    conds.push({ type: 'DisruptionTarget', status: 'True', reason: 'DeletionByPodGC', message: 'PodGC: node no longer exists', lastTransitionTime: rfc3339(now) });
    status['conditions'] = conds;
    try {
      if (!pod.metadata?.['deletionTimestamp']) await this.o.rest.update(PODS, ns, name, { ...structuredClone(pod), status }, { sub: 'status', fieldManager: FIELD_MANAGER });
      await this.o.rest.delete(PODS, ns, name, { gracePeriodSeconds: 0, preconditions: { uid } });
    } catch (e) {
      if (isNodenetError(e) && (e.code === ErrorCode.NotFound || e.code === ErrorCode.Conflict)) {
        // Gone, or changed under us (another uid, a newer status): looked at again from the store.
        if (e.code === ErrorCode.Conflict) this.work.add(key);
        return;
      }
      throw e;
    }
    this.o.log.info({ [F.node]: node, [F.namespace]: ns, [F.pod]: name }, `pod ${ns}/${name} deleted: its node ${node} no longer exists`);
    (this.o.events ?? NO_EVENTS).event(pod, 'Normal', 'PodGCOrphaned', `Deleting Pod ${ns}/${name}: node ${node} no longer exists`);
  }
}
