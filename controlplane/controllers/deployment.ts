/**
 * controlplane/controllers/deployment: kube-controller-manager's Deployment
 * controller for the embedded control plane.
 *
 * A Deployment owns ReplicaSets named `<deployment>-<pod-template-hash>`,
 * one per template it has had: the hash of the template is a label on the
 * ReplicaSet, its selector and its Pods, so the ReplicaSets never select
 * each other's Pods. The ReplicaSet of the current template is the new
 * one; the others are old.
 * - RollingUpdate: the new ReplicaSet grows while all of them together stay
 *   within replicas + maxSurge, and old ones shrink while the available
 *   Pods stay at least replicas − maxUnavailable (maxSurge rounds up,
 *   maxUnavailable down, as upstream; both 0 is refused by validation).
 * - Recreate: the old ones go to 0 first, the new one grows once their
 *   Pods are gone.
 * - `deployment.kubernetes.io/revision` on the ReplicaSets and the
 *   Deployment; old ReplicaSets with no replicas beyond
 *   `revisionHistoryLimit` are deleted.
 * - Status as `kubectl rollout status` reads it: observedGeneration,
 *   replicas, updatedReplicas, readyReplicas, availableReplicas,
 *   unavailableReplicas, and the Available and Progressing conditions.
 * - Progress (pkg/controller/deployment/progress.go): Progressing's
 *   lastUpdateTime moves whenever the rollout makes progress (more updated,
 *   ready or available Pods, fewer old ones); a rollout that has made none
 *   for `progressDeadlineSeconds` (default 600) gets Progressing=False,
 *   reason ProgressDeadlineExceeded ("ReplicaSet "web-5d4f8" has timed out
 *   progressing."), which makes `kubectl rollout status` fail instead of
 *   waiting; a paused Deployment never times out.
 * - The Deployment's annotations are copied to its new ReplicaSet (but
 *   kubectl's last-applied-configuration and the controller's own), so
 *   `kubernetes.io/change-cause` shows in `kubectl rollout history`.
 *
 * Each change of a ReplicaSet's size is a ScalingReplicaSet Event on the
 * Deployment ("Scaled up replica set web-5d4f8 from 0 to 3"), as upstream.
 *
 * Without a kubelet that makes Pods ready, a rollout waits, as it would on
 * a cluster whose Pods never become ready.
 */
import { createHash } from 'node:crypto';
import { WorkQueue } from './work-queue.js';
import { NO_EVENTS, type EventRecorder } from './events.js';
import { F } from '../../lib/log/fields.js';
import type { Logger } from '../../lib/log/log.js';
import type { Clock } from '../../lib/reconcile/clock.js';
import { deepEqual } from '../../lib/reconcile/deep-equal.js';
import { rfc3339, type RestClient } from '../api/rest.js';
import { RESOURCES } from '../api/resources.js';
import { OWNER_UID, ownerUids } from './indexes.js';
import type { WatchCache } from '../store/watch-cache.js';
import type { KObject } from '../store/types.js';
import { namespaceOf } from '../store/types.js';
import { controllerOf } from './replicaset.js';
import { obj } from '../../lib/json/loose.js';

type O = Record<string, unknown>;
const meta = (o: Readonly<KObject>): O => (o.metadata ?? {}) as O;
const R = (name: string) => RESOURCES.find((r) => r.resource === name)!;
const [DEPLOY, RS] = [R('deployments'), R('replicasets')];

export const HASH_LABEL = 'pod-template-hash';
/** The annotations a Deployment does not pass on to its ReplicaSets (upstream's skipCopyAnnotation). */
const NOT_COPIED = new Set(['kubectl.kubernetes.io/last-applied-configuration', 'deployment.kubernetes.io/revision', 'deployment.kubernetes.io/revision-history', 'deployment.kubernetes.io/desired-replicas', 'deployment.kubernetes.io/max-replicas']);
const copiedAnnotations = (m: O): O => Object.fromEntries(Object.entries(obj(m['annotations']) ?? {}).filter(([k]) => !NOT_COPIED.has(k)));
export const REVISION = 'deployment.kubernetes.io/revision';

/** A template's hash, as a label value (10 lowercase alphanumerics). Pure. */
export function templateHash(template: unknown): string {
  const canon = (v: unknown): unknown => (Array.isArray(v) ? v.map(canon) : v && typeof v === 'object' ? Object.fromEntries(Object.keys(v as O).sort().map((k) => [k, canon((v as O)[k])])) : v);
  return BigInt(`0x${createHash('sha256').update(JSON.stringify(canon(template))).digest('hex').slice(0, 15)}`).toString(36).padStart(10, '0').slice(0, 10);
}

/** maxSurge / maxUnavailable as numbers for `replicas`: an int, or a percentage rounded up (surge) or down (unavailable). Pure. */
export function resolveFenceposts(replicas: number, maxSurge: unknown, maxUnavailable: unknown): { surge: number; unavailable: number } {
  const of = (v: unknown, up: boolean, dflt: string): number => {
    const x = v ?? dflt;
    if (typeof x === 'number') return x;
    const m = /^(\d+)%$/.exec(String(x));
    if (!m) return Number(x) || 0;
    const f = (Number(m[1]) * replicas) / 100;
    return up ? Math.ceil(f) : Math.floor(f);
  };
  const surge = of(maxSurge, true, '25%');
  let unavailable = of(maxUnavailable, false, '25%');
  if (surge === 0 && unavailable === 0) unavailable = 1; // upstream: never stuck
  return { surge, unavailable: Math.min(unavailable, replicas) };
}

export interface DeploymentControllerOptions {
  readonly rest: RestClient;
  readonly cache: WatchCache;
  readonly clock: Clock;
  readonly log: Logger;
  readonly retryMs?: number;
  /** Where its Events go (component `deployment-controller`); none: not recorded. */
  readonly events?: EventRecorder;
}

const num = (v: unknown, d = 0) => (typeof v === 'number' ? v : d);

export class DeploymentController {
  private readonly handles: { stop(): void }[] = [];
  private readonly work: WorkQueue;

  constructor(private readonly o: DeploymentControllerOptions) {
    o.cache.addIndex('replicasets.apps', OWNER_UID, ownerUids);
    this.work = new WorkQueue({ name: 'deployment controller', clock: o.clock, log: o.log, process: (k) => this.sync(k), ...(o.retryMs ? { retryMs: o.retryMs } : {}) });
  }

  start(): void {
    const st = this.o.cache;
    const rev = st.rev;
    for (const s of st.list('deployments.apps').items) this.work.add(s.key);
    this.handles.push(st.watch({ gr: 'deployments.apps', afterRev: rev, onEvent: (ev) => this.enqueue(ev.key) }));
    this.handles.push(st.watch({
      gr: 'replicasets.apps', afterRev: rev, onEvent: (ev) => {
        for (const x of [ev.prev?.object, ev.cur.object]) {
          const c = x && controllerOf(x);
          if (c?.kind === 'Deployment') this.enqueue(`deployments.apps/${namespaceOf(ev.key)}/${c.name}`);
        }
      },
    }));
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


  private async scale(d: Readonly<KObject>, rs: Readonly<KObject>, replicas: number): Promise<void> {
    const was = num(obj(rs['spec'])?.['replicas'], 1);
    if (was === replicas) return;
    const next = structuredClone(rs) as KObject;
    (next['spec'] as O)['replicas'] = replicas;
    await this.o.rest.update(RS, String(meta(rs)['namespace']), String(meta(rs)['name']), next, { fieldManager: 'deployment-controller' });
    (this.o.events ?? NO_EVENTS).event(d, 'Normal', 'ScalingReplicaSet', `Scaled ${was < replicas ? 'up' : 'down'} replica set ${String(meta(rs)['name'])} from ${was} to ${replicas}`);
  }

  private async sync(key: string): Promise<void> {
    const s = this.o.cache.get(key);
    if (!s) return; // its ReplicaSets go with it through the garbage collector
    const d = s.object;
    const m = meta(d);
    if (m['deletionTimestamp']) return;
    const ns = String(m['namespace']);
    const name = String(m['name']);
    const spec = obj(d['spec']) ?? {};
    const replicas = num(spec['replicas'], 1);
    const template = obj(spec['template']) ?? {};
    const hash = templateHash(template);
    const all = this.o.cache.byIndex('replicasets.apps', OWNER_UID, String(m['uid'])).map((x) => x.object).filter((x) => controllerOf(x)?.uid === m['uid']);
    const rev = (x: Readonly<KObject>) => Number((meta(x)['annotations'] as O | undefined)?.[REVISION] ?? 0);
    let current = all.find((x) => (meta(x)['labels'] as O | undefined)?.[HASH_LABEL] === hash);
    const old = all.filter((x) => x !== current).sort((a, b) => rev(a) - rev(b));
    const maxRev = Math.max(0, ...all.map(rev));
    const paused = spec['paused'] === true;

    if (!current && !paused) {
      const labels = { ...((obj(template['metadata'])?.['labels'] ?? {}) as O), [HASH_LABEL]: hash };
      const sel = structuredClone(obj(spec['selector']) ?? {});
      sel['matchLabels'] = { ...((sel['matchLabels'] ?? {}) as O), [HASH_LABEL]: hash };
      const tpl = structuredClone(template);
      tpl['metadata'] = { ...(obj(tpl['metadata']) ?? {}), labels };
      const created = await this.o.rest.create(RS, ns, {
        apiVersion: 'apps/v1',
        kind: 'ReplicaSet',
        metadata: {
          name: `${name}-${hash}`,
          labels,
          annotations: { ...copiedAnnotations(m), [REVISION]: String(maxRev + 1) },
          ownerReferences: [{ apiVersion: 'apps/v1', kind: 'Deployment', name, uid: String(m['uid']), controller: true, blockOwnerDeletion: true }],
        },
        // It starts empty and grows below, within maxSurge (the first one at once to full size).
        spec: { replicas: 0, minReadySeconds: num(spec['minReadySeconds']), selector: sel, template: tpl },
      }, { fieldManager: 'deployment-controller' });
      current = created.object;
      this.o.log.info({ [F.namespace]: ns, [F.name]: name, replicaset: `${name}-${hash}` }, 'deployment: new ReplicaSet');
    } else if (current && rev(current) < maxRev) {
      // A rollback to an older template: that ReplicaSet becomes the newest revision.
      const next = structuredClone(current) as KObject;
      (next.metadata as O)['annotations'] = { ...((meta(current)['annotations'] ?? {}) as O), [REVISION]: String(maxRev + 1) };
      current = (await this.o.rest.update(RS, ns, String(meta(current)['name']), next, { fieldManager: 'deployment-controller' })).object;
    }
    if (!current) return this.writeStatus(d, all, undefined);

    if (!paused) {
      const st = (x: Readonly<KObject>) => obj(x['status']) ?? {};
      const specReplicas = (x: Readonly<KObject>) => num(obj(x['spec'])?.['replicas'], 1);
      const strategy = obj(spec['strategy']) ?? {};
      if (strategy['type'] === 'Recreate') {
        for (const x of old) await this.scale(d, x, 0);
        const oldPods = old.reduce((n, x) => n + num(st(x)['replicas']), 0);
        if (oldPods === 0) await this.scale(d, current, replicas);
      } else {
        const ru = obj(strategy['rollingUpdate']) ?? {};
        const { surge, unavailable } = resolveFenceposts(replicas, ru['maxSurge'], ru['maxUnavailable']);
        // Scale up the new one within maxSurge.
        const total = [current, ...old].reduce((n, x) => n + specReplicas(x), 0);
        const cur = specReplicas(current);
        if (cur > replicas) await this.scale(d, current, replicas);
        else if (cur < replicas) {
          const room = replicas + surge - total;
          if (room > 0) await this.scale(d, current, cur + Math.min(room, replicas - cur));
        }
        // Scale down old ones while enough stay available: unhealthy old Pods first (they cost no availability).
        const minAvailable = replicas - unavailable;
        // A ReplicaSet being scaled down keeps at most its spec's Pods, whatever its status says yet.
        const avail = (x: Readonly<KObject>) => Math.min(num(st(x)['availableReplicas']), specReplicas(x));
        const available = [current, ...old].reduce((n, x) => n + avail(x), 0);
        let canRemove = available - minAvailable;
        for (const x of old) {
          const want = specReplicas(x);
          if (want === 0) continue;
          const unhealthy = Math.max(0, want - avail(x));
          const take = Math.min(want, unhealthy + Math.max(0, canRemove));
          if (take <= 0) continue;
          canRemove -= Math.max(0, take - unhealthy);
          await this.scale(d, x, want - take);
        }
      }
      // History: old ReplicaSets without replicas beyond the limit go, oldest first.
      const limit = num(spec['revisionHistoryLimit'], 10);
      const idle = old.filter((x) => specReplicas(x) === 0 && num(st(x)['replicas']) === 0);
      for (const x of idle.slice(0, Math.max(0, idle.length - limit))) await this.o.rest.delete(RS, ns, String(meta(x)['name'])).catch(() => undefined);
    }
    await this.writeStatus(d, [current, ...old], current);
  }

  private async writeStatus(d: Readonly<KObject>, sets: readonly Readonly<KObject>[], current: Readonly<KObject> | undefined): Promise<void> {
    const m = meta(d);
    const spec = obj(d['spec']) ?? {};
    const replicas = num(spec['replicas'], 1);
    const st = (x: Readonly<KObject>) => obj(x['status']) ?? {};
    const sum = (k: string) => sets.reduce((n, x) => n + num(st(x)[k]), 0);
    const updated = current ? num(st(current)['replicas']) : 0;
    const available = sum('availableReplicas');
    const ru = obj(obj(spec['strategy'])?.['rollingUpdate']) ?? {};
    const { unavailable } = resolveFenceposts(replicas, ru['maxSurge'], ru['maxUnavailable']);
    const total = sum('replicas');
    const complete = current !== undefined && updated === replicas && total === replicas && available >= replicas && num(obj(current['spec'])?.['replicas'], 1) === replicas;
    const now = rfc3339(this.o.clock.now());
    const prevConds = ((obj(d['status'])?.['conditions'] ?? []) as O[]).filter((c) => c && typeof c === 'object');
    const cond = (type: string, status: string, reason: string, message: string): O => {
      const was = prevConds.find((c) => c['type'] === type);
      const changed = !was || was['status'] !== status;
      return { type, status, lastUpdateTime: was && !changed && was['reason'] === reason ? was['lastUpdateTime'] : now, lastTransitionTime: changed ? now : was!['lastTransitionTime'], reason, message };
    };
    const rsName = current ? String(meta(current)['name']) : '';
    // Progress: the rollout moved since the status last written (DeploymentProgressing).
    const prev = obj(d['status']) ?? {};
    const moved = updated > num(prev['updatedReplicas']) || sum('readyReplicas') > num(prev['readyReplicas']) || available > num(prev['availableReplicas']) || total - updated < num(prev['replicas']) - num(prev['updatedReplicas']);
    const wasProgressing = prevConds.find((c) => c['type'] === 'Progressing');
    const deadlineS = typeof spec['progressDeadlineSeconds'] === 'number' ? spec['progressDeadlineSeconds'] : null;
    let progressing: O;
    if (complete) progressing = cond('Progressing', 'True', 'NewReplicaSetAvailable', `ReplicaSet "${rsName}" has successfully progressed.`);
    else if (moved || !wasProgressing || wasProgressing['reason'] === 'NewReplicaSetAvailable' || (wasProgressing['status'] === 'False' && moved)) {
      progressing = { ...cond('Progressing', 'True', 'ReplicaSetUpdated', `ReplicaSet "${rsName}" is progressing.`), lastUpdateTime: now };
    } else {
      const since = Date.parse(String(wasProgressing['lastUpdateTime'] ?? ''));
      const due = deadlineS === null || spec['paused'] === true || Number.isNaN(since) ? null : since + deadlineS * 1000;
      if (due !== null && this.o.clock.now() > due) progressing = cond('Progressing', 'False', 'ProgressDeadlineExceeded', `ReplicaSet "${rsName}" has timed out progressing.`);
      else {
        progressing = { ...wasProgressing };
        // Looked at again once the deadline has passed (progress.go's requeue).
        if (due !== null) this.work.addAfter(`deployments.apps/${String(m['namespace'])}/${String(m['name'])}`, due - this.o.clock.now() + 1000);
      }
    }
    const conditions = [
      available >= replicas - unavailable ? cond('Available', 'True', 'MinimumReplicasAvailable', 'Deployment has minimum availability.') : cond('Available', 'False', 'MinimumReplicasUnavailable', 'Deployment does not have minimum availability.'),
      progressing,
    ];
    const status: O = {
      observedGeneration: m['generation'],
      replicas: total,
      updatedReplicas: updated,
      readyReplicas: sum('readyReplicas'),
      availableReplicas: available,
      unavailableReplicas: Math.max(0, replicas - available),
      conditions,
    };
    for (const k of ['replicas', 'updatedReplicas', 'readyReplicas', 'availableReplicas', 'unavailableReplicas']) if (status[k] === 0) delete status[k];
    const old = obj(d['status']) ?? {};
    const strip = (x: O) => ({ ...x, conditions: ((x['conditions'] ?? []) as O[]).map((c) => ({ type: c['type'], status: c['status'], reason: c['reason'], message: c['message'] })) });
    const revision = current ? (meta(current)['annotations'] as O | undefined)?.[REVISION] : undefined;
    const annotations = (m['annotations'] ?? {}) as O;
    if (revision !== undefined && annotations[REVISION] !== revision) {
      const next = structuredClone(d) as KObject;
      (next.metadata as O)['annotations'] = { ...annotations, [REVISION]: revision };
      await this.o.rest.update(DEPLOY, String(m['namespace']), String(m['name']), next, { fieldManager: 'deployment-controller' });
      return; // the update brings it back to the queue for its status
    }
    if (deepEqual(strip(status), strip(old))) return;
    await this.o.rest.update(DEPLOY, String(m['namespace']), String(m['name']), { ...structuredClone(d), status }, { sub: 'status', fieldManager: 'deployment-controller' });
  }
}
