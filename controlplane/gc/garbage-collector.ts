/**
 * controlplane/gc/garbage-collector: what kube-controller-manager's garbage
 * collector and namespace controller do, for the kinds served here.
 *
 * Watch → compare → act, one object at a time from a de-duplicated queue:
 * - Background (kubectl's default): the owner is gone at once; a dependent
 *   whose owners are all gone is then deleted, in the background too (so a
 *   Deployment's ReplicaSets go, then their Pods).
 * - Foreground: the owner waits with a deletionTimestamp and the
 *   `foregroundDeletion` finalizer; its dependents are deleted (those with
 *   dependents of their own in the foreground too, so the wait goes all the
 *   way down; one with another owner that stays only loses its reference),
 *   and once no dependent that blocks (`blockOwnerDeletion`) is left, the
 *   finalizer is removed and the owner goes.
 * - Orphan: the `orphan` finalizer; the dependents lose their reference to
 *   the owner, then the finalizer is removed.
 * - A Namespace being deleted (Terminating): everything in it is deleted,
 *   then its `kubernetes` finalizer is removed (the `finalize` subresource)
 *   and it goes.
 *
 * An owner is "gone" when no object of its kind and name exists in the
 * dependent's namespace with its uid: the store is asked, not the index,
 * as upstream verifies with a live GET before it deletes. References to
 * kinds this server does not serve are left alone. Every write goes
 * through the REST layer (validation, finalizers, watch events), so what
 * `kubectl get -w` shows is what the collector did.
 */
import { ErrorCode, isNodenetError } from '../../lib/errors/errors.js';
import { F } from '../../lib/log/fields.js';
import type { Logger } from '../../lib/log/log.js';
import type { Clock } from '../../lib/reconcile/clock.js';
import { FOREGROUND, ORPHAN, type RestClient } from '../api/rest.js';
import { OWNER_UID, ownerUids } from '../controllers/indexes.js';
import { WorkQueue } from '../controllers/work-queue.js';
import { grOf as resourceGr, RESOURCES, type Resource } from '../api/resources.js';
import type { WatchCache } from '../store/watch-cache.js';
import type { KObject, StoreEvent } from '../store/types.js';
import { grOf, namespaceOf } from '../store/types.js';
import { finalizeNamespace } from '../registry/namespace.js';

type O = Record<string, unknown>;

export interface OwnerRef {
  readonly apiVersion: string;
  readonly kind: string;
  readonly name: string;
  readonly uid: string;
  readonly blockOwnerDeletion?: boolean;
  readonly controller?: boolean;
}

export const NAMESPACE_FINALIZER = 'kubernetes';

const meta = (o: Readonly<KObject>): O => (o.metadata ?? {}) as O;
const list = (v: unknown): string[] => (Array.isArray(v) ? v.filter((x): x is string => typeof x === 'string') : []);

export function ownerRefs(o: Readonly<KObject>): OwnerRef[] {
  const refs = meta(o)['ownerReferences'];
  return Array.isArray(refs) ? (refs.filter((r) => r && typeof r === 'object' && typeof (r as O)['uid'] === 'string') as OwnerRef[]) : [];
}

/** The served resource for an owner reference's apiVersion and kind. */
export function resourceForKind(apiVersion: string, kind: string): Resource | undefined {
  const [group, version] = apiVersion.includes('/') ? apiVersion.split('/', 2) : ['', apiVersion];
  return RESOURCES.find((r) => r.group === group && r.version === version && r.kind === kind);
}

export interface GarbageCollectorDeps {
  readonly rest: RestClient;
  readonly cache: WatchCache;
  readonly clock: Clock;
  readonly log: Logger;
  /** Delay before a failed item is tried again (default 200 ms). */
  readonly retryMs?: number;
}

export class GarbageCollector {
  private readonly queue: WorkQueue;
  private readonly handles: { stop(): void }[] = [];

  constructor(private readonly d: GarbageCollectorDeps) {
    // Dependents by owner uid: the store's index (filed at commit), not a graph of the collector's own.
    for (const r of RESOURCES) d.cache.addIndex(resourceGr(r), OWNER_UID, ownerUids);
    this.queue = new WorkQueue({ name: 'garbage collector', clock: d.clock, log: d.log, process: (k) => this.process(k), retryMs: d.retryMs ?? 200 });
  }

  start(): void {
    const rev = this.d.cache.rev;
    for (const r of RESOURCES) {
      for (const s of this.d.cache.list(resourceGr(r)).items) this.queue.add(s.key);
      this.handles.push(this.d.cache.watch({ gr: resourceGr(r), afterRev: rev, onEvent: (ev) => this.onEvent(ev) }));
    }
  }

  stop(): void {
    for (const h of this.handles) h.stop();
    this.queue.stop();
  }

  /** Resolves when the queue is empty and nothing is being worked on (tests). */
  idle(): Promise<void> {
    return this.queue.idle();
  }

  private onEvent(ev: StoreEvent): void {
    const prev = ev.prev?.object ?? null;
    if (ev.type === 'DELETED') {
      const uid = String(meta(ev.cur.object)['uid'] ?? '');
      if (uid) for (const dep of this.liveDependents(uid)) this.queue.add(dep.key);
      // An owner waiting for its dependents, and a terminating namespace, look again.
      for (const ref of ownerRefs(ev.cur.object)) for (const k of this.keysOf(ref, namespaceOf(ev.key))) this.queue.add(k);
      const ns = namespaceOf(ev.key);
      if (ns) this.queue.add(`namespaces//${ns}`);
    } else {
      this.queue.add(ev.key);
      // An owner waiting in the foreground looks again when this object stops blocking it (its
      // reference removed or made non-blocking): upstream's addUnblockedOwnersToDeleteQueue.
      if (prev) {
        const blocks = new Set(ownerRefs(ev.cur.object).filter((x) => x.blockOwnerDeletion === true).map((x) => x.uid));
        for (const ref of ownerRefs(prev)) {
          if (ref.blockOwnerDeletion === true && !blocks.has(ref.uid)) for (const k of this.keysOf(ref, namespaceOf(ev.key))) this.queue.add(k);
        }
      }
    }
  }

  private keysOf(ref: OwnerRef, namespace: string): string[] {
    const r = resourceForKind(ref.apiVersion, ref.kind);
    return r ? [this.d.rest.key(r, namespace, ref.name)] : [];
  }

  private resource(key: string): Resource | undefined {
    const gr = grOf(key);
    return RESOURCES.find((r) => resourceGr(r) === gr);
  }

  /** The objects whose ownerReferences name uid, of every kind served. */
  private liveDependents(uid: string): { key: string; r: Resource; obj: Readonly<KObject> }[] {
    const out = [];
    for (const r of RESOURCES) for (const s of this.d.cache.byIndex(resourceGr(r), OWNER_UID, uid)) out.push({ key: s.key, r, obj: s.object });
    return out;
  }

  private async process(key: string): Promise<void> {
    const s = this.d.cache.get(key);
    const r = this.resource(key);
    if (!s || !r) return;
    const m = meta(s.object);
    const ns = namespaceOf(key);
    const name = String(m['name']);
    const uid = String(m['uid'] ?? '');
    const finalizers = list(m['finalizers']);
    const deleting = Boolean(m['deletionTimestamp']);

    if (deleting && finalizers.includes(ORPHAN)) {
      for (const dep of this.liveDependents(uid)) {
        await this.updateMeta(dep.r, dep.key, (dm) => {
          const rest = ownerRefs({ metadata: dm }).filter((x) => x.uid !== uid);
          if (rest.length) dm['ownerReferences'] = rest;
          else delete dm['ownerReferences'];
        });
      }
      await this.removeFinalizer(r, key, ORPHAN);
      this.d.log.info({ [F.resource]: resourceGr(r), [F.namespace]: ns, [F.name]: name }, 'dependents orphaned');
      return;
    }
    if (deleting && finalizers.includes(FOREGROUND)) {
      for (const dep of this.liveDependents(uid)) {
        if (meta(dep.obj)['deletionTimestamp']) continue;
        // Weighed against all its owners: one with another owner that stays only loses its reference to this one.
        await this.attemptToDelete(dep.r, dep.key, dep.obj);
      }
      const blocking = this.liveDependents(uid).filter((dep) => ownerRefs(dep.obj).some((x) => x.uid === uid && x.blockOwnerDeletion === true));
      if (blocking.length === 0) await this.removeFinalizer(r, key, FOREGROUND);
      return;
    }
    if (r.resource === 'namespaces' && deleting) {
      await this.finishNamespace(r, key, name, s.object);
      return;
    }
    if (!deleting) await this.attemptToDelete(r, key, s.object);
  }

  /**
   * A dependent weighed against its owners (upstream's attemptToDeleteItem): with no owner left that
   * stays, it is deleted (in the foreground when an owner waits for it and it has dependents of its own,
   * so the wait goes all the way down); otherwise the references to owners that are gone, or that wait
   * for their dependents in the foreground, are removed (else such an owner would wait forever).
   */
  private async attemptToDelete(r: Resource, key: string, o: Readonly<KObject>): Promise<void> {
    const refs = ownerRefs(o);
    if (refs.length === 0) return;
    const ns = namespaceOf(key);
    let solid = 0;
    const dangling: string[] = [];
    const waiting: string[] = [];
    for (const ref of refs) {
      const refRes = resourceForKind(ref.apiVersion, ref.kind);
      if (!refRes) {
        solid++; // a kind not served here: never collected on its account
        continue;
      }
      const owner = this.d.cache.get(this.d.rest.key(refRes, refRes.namespaced ? ns : '', ref.name));
      if (!owner || meta(owner.object)['uid'] !== ref.uid) dangling.push(ref.uid);
      else if (meta(owner.object)['deletionTimestamp'] && list(meta(owner.object)['finalizers']).includes(FOREGROUND)) waiting.push(ref.uid);
      else solid++;
    }
    if (solid === 0) {
      // Every owner is gone (or waiting for its dependents in the foreground): the dependent goes.
      const foreground = waiting.length > 0 && this.liveDependents(String(meta(o)['uid'] ?? '')).length > 0;
      await this.deleteObject(r, key, foreground ? 'Foreground' : 'Background');
      this.d.log.info({ [F.resource]: resourceGr(r), [F.namespace]: ns, [F.name]: String(meta(o)['name']) }, 'garbage collected: its owners are gone');
    } else if (dangling.length || waiting.length) {
      const drop = new Set([...dangling, ...waiting]);
      await this.updateMeta(r, key, (dm) => {
        dm['ownerReferences'] = ownerRefs({ metadata: dm }).filter((x) => !drop.has(x.uid));
      });
    }
  }

  private async finishNamespace(nsRes: Resource, key: string, name: string, ns: Readonly<KObject>): Promise<void> {
    let left = 0;
    for (const r of RESOURCES) {
      if (!r.namespaced) continue;
      const { items } = this.d.cache.list(resourceGr(r), name);
      left += items.length;
      for (const s of items) {
        if (meta(s.object)['deletionTimestamp']) continue;
        await this.deleteObject(r, s.key, 'Background');
      }
    }
    if (left > 0) return; // each deletion brings the namespace back to the queue
    const spec = (ns['spec'] ?? {}) as O;
    if (list(spec['finalizers']).includes(NAMESPACE_FINALIZER)) {
      await finalizeNamespace(this.d.rest, name, list(spec['finalizers']).filter((f) => f !== NAMESPACE_FINALIZER), String(meta(ns)['resourceVersion']));
      this.d.log.info({ [F.resource]: resourceGr(nsRes), [F.name]: name }, 'namespace emptied and finalized');
    }
  }

  private async deleteObject(r: Resource, key: string, propagationPolicy: 'Background' | 'Foreground'): Promise<void> {
    const s = this.d.cache.get(key);
    if (!s) return;
    const m = meta(s.object);
    try {
      await this.d.rest.delete(r, namespaceOf(key), String(m['name']), { propagationPolicy, preconditions: { uid: String(m['uid']) } });
    } catch (e) {
      if (isNodenetError(e) && e.code === ErrorCode.NotFound) return;
      throw e;
    }
  }

  private async updateMeta(r: Resource, key: string, change: (m: O) => void): Promise<void> {
    const s = this.d.cache.get(key);
    if (!s) return;
    const next = structuredClone(s.object) as KObject;
    change(next.metadata as O);
    await this.d.rest.update(r, namespaceOf(key), String(meta(s.object)['name']), next, { fieldManager: 'nodenet-garbage-collector' });
  }

  private async removeFinalizer(r: Resource, key: string, f: string): Promise<void> {
    await this.updateMeta(r, key, (m) => {
      m['finalizers'] = list(m['finalizers']).filter((x) => x !== f);
    });
  }
}
