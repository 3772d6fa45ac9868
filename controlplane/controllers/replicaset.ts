/**
 * controlplane/controllers/replicaset: kube-controller-manager's ReplicaSet
 * controller for the embedded control plane: a ReplicaSet keeps
 * `spec.replicas` Pods matching its selector, made from its template and
 * owned by it (the seeds' self-healing: a Pod deleted or failed is
 * replaced). Too many: the newest, the unready and the unscheduled go
 * first, as upstream's ranking prefers. It reports `status.replicas`,
 * `readyReplicas`, `availableReplicas` (ready for `minReadySeconds`),
 * `fullyLabeledReplicas` and `observedGeneration`.
 *
 * Watch → compare → act through the REST layer, one ReplicaSet at a time
 * from a de-duplicated queue; a Pod's change queues its owner. Pods that
 * match but have another controller are never taken; orphans that match
 * are adopted (an ownerReference added), as upstream. Events as
 * upstream's: SuccessfulCreate / SuccessfulDelete per Pod, FailedCreate /
 * FailedDelete on an error (which is then retried).
 */
import { ErrorCode, isNodenetError } from '../../lib/errors/errors.js';
import { WorkQueue } from './work-queue.js';
import { NO_EVENTS, type EventRecorder } from './events.js';
import { F } from '../../lib/log/fields.js';
import type { Logger } from '../../lib/log/log.js';
import type { Clock } from '../../lib/reconcile/clock.js';
import type { RestClient } from '../api/rest.js';
import { ApiError } from '../api/errors.js';
import { RESOURCES } from '../api/resources.js';
import { labelSelectorRequirements, matchesLabels } from '../api/selectors.js';
import type { WatchCache } from '../store/watch-cache.js';
import type { KObject, StoreEvent } from '../store/types.js';
import { namespaceOf } from '../store/types.js';
import { obj, arr } from '../../lib/json/loose.js';

type O = Record<string, unknown>;

/** apierrors.HasStatusCause(err, NamespaceTerminatingCause). */
const namespaceTerminating = (e: unknown): boolean =>
  e instanceof ApiError && (e.statusDetails?.causes ?? []).some((c) => c.reason === 'NamespaceTerminating');
const meta = (o: Readonly<KObject>): O => (o.metadata ?? {}) as O;
const R = (name: string) => RESOURCES.find((r) => r.resource === name)!;
const [RS, POD] = [R('replicasets'), R('pods')];

export interface ReplicaSetControllerOptions {
  readonly rest: RestClient;
  readonly cache: WatchCache;
  readonly clock: Clock;
  readonly log: Logger;
  readonly retryMs?: number;
  /** Where its Events go (component `replicaset-controller`); none: not recorded. */
  readonly events?: EventRecorder;
}

export function controllerOf(o: Readonly<KObject>): { kind: string; name: string; uid: string } | undefined {
  const ref = arr(meta(o)['ownerReferences']).map(obj).find((r) => r?.['controller'] === true);
  return ref ? { kind: String(ref['kind']), name: String(ref['name']), uid: String(ref['uid']) } : undefined;
}

export function podReadySince(pod: Readonly<KObject>): number | null {
  const c = arr(obj(pod['status'])?.['conditions']).map(obj).find((x) => x?.['type'] === 'Ready');
  if (!c || c['status'] !== 'True') return null;
  const t = Date.parse(String(c['lastTransitionTime'] ?? ''));
  return Number.isNaN(t) ? 0 : t;
}

const isActive = (p: Readonly<KObject>) => {
  const phase = obj(p['status'])?.['phase'];
  return !meta(p)['deletionTimestamp'] && phase !== 'Succeeded' && phase !== 'Failed';
};

export class ReplicaSetController {
  private readonly handles: { stop(): void }[] = [];
  private readonly work: WorkQueue;
  private readonly events: EventRecorder;

  constructor(private readonly o: ReplicaSetControllerOptions) {
    this.events = o.events ?? NO_EVENTS;
    this.work = new WorkQueue({ name: 'replicaset controller', clock: o.clock, log: o.log, process: (k) => this.sync(k), ...(o.retryMs ? { retryMs: o.retryMs } : {}) });
  }

  start(): void {
    const st = this.o.cache;
    const rev = st.rev;
    for (const s of st.list('replicasets.apps').items) this.work.add(s.key);
    this.handles.push(st.watch({ gr: 'replicasets.apps', afterRev: rev, onEvent: (ev) => this.enqueue(ev.key) }));
    this.handles.push(st.watch({ gr: 'pods', afterRev: rev, onEvent: (ev) => this.onPod(ev) }));
  }

  stop(): void {
    for (const h of this.handles) h.stop();
    this.work.stop();
  }

  idle(): Promise<void> {
    return this.work.idle();
  }

  private enqueue(key: string): void {
    this.work.add(key);
  }

  private onPod(ev: StoreEvent): void {
    const ns = namespaceOf(ev.key);
    for (const o of [ev.prev?.object, ev.cur.object]) {
      if (!o) continue;
      const c = controllerOf(o);
      if (c?.kind === 'ReplicaSet') this.enqueue(`replicasets.apps/${ns}/${c.name}`);
      else if (!c) {
        // An orphan: a ReplicaSet whose selector matches may adopt it.
        for (const s of this.o.cache.list('replicasets.apps', ns).items) if (this.selects(s.object, o)) this.enqueue(s.key);
      }
    }
  }

  private selects(rs: Readonly<KObject>, pod: Readonly<KObject>): boolean {
    const sel = obj(obj(rs['spec'])?.['selector']);
    if (!sel) return false;
    return matchesLabels(labelSelectorRequirements(sel as never), (meta(pod)['labels'] ?? {}) as Record<string, string>);
  }


  private async sync(key: string): Promise<void> {
    const s = this.o.cache.get(key);
    if (!s) return; // its Pods go with it through the garbage collector
    const rs = s.object;
    const m = meta(rs);
    const ns = String(m['namespace']);
    const name = String(m['name']);
    const uid = String(m['uid']);
    const spec = obj(rs['spec']) ?? {};
    const want = typeof spec['replicas'] === 'number' ? spec['replicas'] : 1;
    const deleting = Boolean(m['deletionTimestamp']);
    const pods = this.o.cache.list('pods', ns).items.map((x) => x.object);
    const owned: Readonly<KObject>[] = [];
    for (const p of pods) {
      const c = controllerOf(p);
      if (c?.uid === uid) {
        if (this.selects(rs, p)) owned.push(p);
        else await this.release(p, uid); // its labels no longer match: released, as upstream
      } else if (!c && !deleting && this.selects(rs, p) && !meta(p)['deletionTimestamp']) {
        await this.adopt(p, rs);
        owned.push(p);
      }
    }
    const active = owned.filter(isActive);
    if (!deleting) {
      const diff = want - active.length;
      if (diff > 0) {
        for (let i = 0; i < diff; i++) {
          const made = await this.o.rest.create(POD, ns, this.podFor(rs), { fieldManager: 'replicaset-controller' }).catch((e: unknown) => {
            // A namespace being deleted refuses new Pods: expected, and not worth an Event (as upstream, which checks
            // the NamespaceTerminating cause); any other refusal (RBAC, admission, quota) is one.
            if (!namespaceTerminating(e)) this.events.event(rs, 'Warning', 'FailedCreate', `Error creating: ${e instanceof Error ? e.message : String(e)}`);
            throw e;
          });
          this.events.event(rs, 'Normal', 'SuccessfulCreate', `Created pod: ${String(made.object.metadata?.['name'])}`);
        }
        this.o.log.info({ [F.namespace]: ns, [F.name]: name, created: diff }, 'replicaset: pods created');
      } else if (diff < 0) {
        for (const p of this.rankForDeletion(active).slice(0, -diff)) await this.deletePod(rs, p);
        this.o.log.info({ [F.namespace]: ns, [F.name]: name, deleted: -diff }, 'replicaset: pods deleted');
      }
      // Failed Pods are replaced (they no longer count) and removed, as upstream's controller leaves them to the pod GC; here they go.
      for (const p of owned.filter((x) => obj(x['status'])?.['phase'] === 'Failed' && !meta(x)['deletionTimestamp'])) {
        await this.deletePod(rs, p).catch(() => undefined);
      }
    }
    await this.writeStatus(rs, active);
  }

  /** Deletes one of its Pods (this very one: its uid the precondition), with upstream's Events; gone already is fine. */
  private async deletePod(rs: Readonly<KObject>, p: Readonly<KObject>): Promise<void> {
    const name = String(meta(p)['name']);
    try {
      await this.o.rest.delete(POD, String(meta(p)['namespace']), name, { preconditions: { uid: String(meta(p)['uid']) } });
    } catch (e) {
      if (isNodenetError(e) && e.code === ErrorCode.NotFound) return;
      this.events.event(rs, 'Warning', 'FailedDelete', `Error deleting: ${e instanceof Error ? e.message : String(e)}`);
      throw e;
    }
    this.events.event(rs, 'Normal', 'SuccessfulDelete', `Deleted pod: ${name}`);
  }

  private podFor(rs: Readonly<KObject>): KObject {
    const m = meta(rs);
    const tpl = obj(obj(rs['spec'])?.['template']) ?? {};
    const tm = obj(tpl['metadata']) ?? {};
    return {
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: {
        generateName: `${String(m['name'])}-`,
        labels: { ...((tm['labels'] ?? {}) as O) },
        ...(tm['annotations'] ? { annotations: { ...(tm['annotations'] as O) } } : {}),
        ownerReferences: [{ apiVersion: 'apps/v1', kind: 'ReplicaSet', name: String(m['name']), uid: String(m['uid']), controller: true, blockOwnerDeletion: true }],
      },
      spec: structuredClone(obj(tpl['spec']) ?? {}),
    };
  }

  /** Which Pods go first when there are too many: unscheduled, then not ready, then the most recently made. */
  private rankForDeletion(pods: readonly Readonly<KObject>[]): Readonly<KObject>[] {
    const score = (p: Readonly<KObject>) => [obj(p['spec'])?.['nodeName'] ? 1 : 0, podReadySince(p) === null ? 0 : 1, -Date.parse(String(meta(p)['creationTimestamp'] ?? 0))];
    return [...pods].sort((a, b) => {
      const x = score(a);
      const y = score(b);
      for (let i = 0; i < x.length; i++) if (x[i] !== y[i]) return x[i]! - y[i]!;
      return String(meta(a)['name']) < String(meta(b)['name']) ? 1 : -1;
    });
  }

  private async adopt(p: Readonly<KObject>, rs: Readonly<KObject>): Promise<void> {
    const next = structuredClone(p) as KObject;
    const m = next.metadata as O;
    m['ownerReferences'] = [...arr(m['ownerReferences']), { apiVersion: 'apps/v1', kind: 'ReplicaSet', name: String(meta(rs)['name']), uid: String(meta(rs)['uid']), controller: true, blockOwnerDeletion: true }];
    await this.o.rest.update(POD, String(m['namespace']), String(m['name']), next, { fieldManager: 'replicaset-controller' });
  }

  private async release(p: Readonly<KObject>, uid: string): Promise<void> {
    const next = structuredClone(p) as KObject;
    const m = next.metadata as O;
    m['ownerReferences'] = arr(m['ownerReferences']).filter((r) => obj(r)?.['uid'] !== uid);
    await this.o.rest.update(POD, String(m['namespace']), String(m['name']), next, { fieldManager: 'replicaset-controller' });
  }

  private async writeStatus(rs: Readonly<KObject>, active: readonly Readonly<KObject>[]): Promise<void> {
    const spec = obj(rs['spec']) ?? {};
    const minReady = typeof spec['minReadySeconds'] === 'number' ? spec['minReadySeconds'] : 0;
    const now = this.o.clock.now();
    const tplLabels = (obj(obj(obj(spec['template'])?.['metadata'])?.['labels']) ?? {}) as Record<string, string>;
    let ready = 0;
    let available = 0;
    let fully = 0;
    for (const p of active) {
      const since = podReadySince(p);
      if (since !== null) {
        ready++;
        if (minReady === 0 || since + minReady * 1000 <= now) available++;
      }
      const labels = (meta(p)['labels'] ?? {}) as Record<string, string>;
      if (Object.entries(tplLabels).every(([k, v]) => labels[k] === v)) fully++;
    }
    const status: O = { replicas: active.length, fullyLabeledReplicas: fully, readyReplicas: ready, availableReplicas: available, observedGeneration: meta(rs)['generation'] };
    const cur = obj(rs['status']) ?? {};
    const same = ['replicas', 'fullyLabeledReplicas', 'readyReplicas', 'availableReplicas', 'observedGeneration'].every((k) => (cur[k] ?? 0) === (status[k] ?? 0));
    if (minReady > 0 && available < ready) {
      // Look again when the next Pod becomes available, also when nothing changed now (a timer that fired
      // early, on the event loop's cached time, finds the same counts and must not be the last look).
      this.work.addAfter(`replicasets.apps/${String(meta(rs)['namespace'])}/${String(meta(rs)['name'])}`, minReady * 1000);
    }
    if (same) return;
    // kube-apiserver omits zero counts: so do we.
    for (const k of Object.keys(status)) if (status[k] === 0) delete status[k];
    await this.o.rest.update(RS, String(meta(rs)['namespace']), String(meta(rs)['name']), { ...structuredClone(rs), status }, { sub: 'status', fieldManager: 'replicaset-controller' });
  }
}
