/**
 * controlplane/controllers/resource-quota: kube-controller-manager's ResourceQuota controller
 * (pkg/controller/resourcequota): each quota's `status.hard` is its `spec.hard`, and `status.used` what the objects
 * of its namespace that its scopes select use now (quota/usage.ts), counted from the watch cache after it has caught
 * up with the store.
 *
 * The ResourceQuota admission plugin raises `used` as it admits; this controller is what lowers it, and what fills
 * a new quota's status (until then the quota refuses what it limits: "status unknown"). A quota is counted again:
 * - when it is made or its spec changes (status.hard differs from spec.hard, or used lacks a name);
 * - on replenishment, when an object a quota may count is deleted, or a Pod stops using what it asked for (it
 *   finished): every quota of that namespace;
 * - every `resyncMs` (upstream's --resource-quota-sync-period, 5 min), all of them.
 * A new object does not trigger a count: admission charged it already, and a count racing the object's write could
 * miss it. The write is a status update conditional on the quota's resourceVersion: a charge made meanwhile makes it
 * a Conflict, and the quota is counted again.
 */
import { obj, str } from '../../lib/json/loose.js';
import { F } from '../../lib/log/fields.js';
import type { Logger } from '../../lib/log/log.js';
import type { Clock } from '../../lib/reconcile/clock.js';
import type { RestClient } from '../api/rest.js';
import { RESOURCES, type Resource } from '../api/resources.js';
import type { KObject } from '../store/types.js';
import type { WatchCache } from '../store/watch-cache.js';
import { equalLists, namespaceUsage, podIsLive, resourceList, toObject } from '../quota/usage.js';
import { WorkQueue } from './work-queue.js';

type O = Record<string, unknown>;

const QUOTAS = RESOURCES.find((r) => r.resource === 'resourcequotas')!;
/** --resource-quota-sync-period's default. */
export const DEFAULT_QUOTA_RESYNC_MS = 5 * 60_000;
const CONTROLLER = 'resourcequota-controller';

const grOf = (r: { group: string; resource: string }) => (r.group ? `${r.resource}.${r.group}` : r.resource);

export interface ResourceQuotaControllerOptions {
  readonly rest: RestClient;
  readonly cache: WatchCache;
  readonly clock: Clock;
  readonly log: Logger;
  readonly resyncMs?: number;
}

export class ResourceQuotaController {
  private watches: { stop(): void }[] = [];
  private timer: unknown = null;
  private readonly work: WorkQueue;

  constructor(private readonly o: ResourceQuotaControllerOptions) {
    this.work = new WorkQueue({ name: 'resourcequota controller', clock: o.clock, log: o.log, process: (k) => this.sync(k) });
  }

  start(): void {
    const quotas = this.o.cache.list('resourcequotas');
    for (const q of quotas.items) this.work.add(keyOf(q.object));
    this.watches.push(this.o.cache.watch({
      gr: 'resourcequotas', afterRev: quotas.rev,
      onEvent: (ev) => {
        if (ev.type !== 'DELETED' && needsCount(ev.cur.object)) this.work.add(keyOf(ev.cur.object));
      },
    }));
    // Replenishment: what a quota may count, given back.
    for (const r of RESOURCES.filter((x: Resource) => x.namespaced && x.resource !== 'events' && !(x.group === 'events.k8s.io'))) {
      this.watches.push(this.o.cache.watch({
        gr: grOf(r), afterRev: quotas.rev,
        onEvent: (ev) => {
          const pod = !r.group && r.resource === 'pods';
          const released = ev.type === 'DELETED' || (pod && ev.type === 'MODIFIED' && ev.prev !== null && podIsLive(ev.prev.object, this.o.clock.now()) && !podIsLive(ev.cur.object, this.o.clock.now()));
          const svcChanged = !r.group && r.resource === 'services' && ev.type === 'MODIFIED' && obj(ev.prev?.object['spec'])?.['type'] !== obj(ev.cur.object['spec'])?.['type'];
          if (released || svcChanged) this.namespace(str(ev.cur.object.metadata?.['namespace']) ?? '');
        },
      }));
    }
    const every = this.o.resyncMs ?? DEFAULT_QUOTA_RESYNC_MS;
    const tick = () => {
      for (const q of this.o.cache.list('resourcequotas').items) this.work.add(keyOf(q.object));
      this.timer = this.o.clock.setTimeout(tick, every);
    };
    this.timer = this.o.clock.setTimeout(tick, every);
  }

  stop(): void {
    for (const w of this.watches) w.stop();
    this.watches = [];
    if (this.timer !== null) this.o.clock.clearTimeout(this.timer);
    this.timer = null;
    this.work.stop();
  }

  idle(): Promise<void> {
    return this.work.idle();
  }

  private namespace(ns: string): void {
    for (const q of this.o.cache.list('resourcequotas', ns).items) this.work.add(keyOf(q.object));
  }

  private async sync(key: string): Promise<void> {
    // Counted from a cache that holds every write acknowledged before now.
    await this.o.cache.fresh();
    const [ns, name] = key.split('/') as [string, string];
    const q = this.o.cache.get(`resourcequotas/${ns}/${name}`);
    if (!q || q.object.metadata?.['deletionTimestamp']) return;
    const quota = q.object as O;
    const hard = resourceList(obj(quota['spec'])?.['hard']);
    const used = namespaceUsage(quota, hard, (r) => this.o.cache.list(grOf(r), ns).items.map((s) => s.object as O), this.o.clock.now());
    const status = obj(quota['status']) ?? {};
    if (equalLists(resourceList(status['hard']), hard) && equalLists(resourceList(status['used']), used) && Object.keys(obj(status['used']) ?? {}).length === used.size) return;
    const next: KObject = {
      ...q.object,
      metadata: { ...q.object.metadata, resourceVersion: String(q.rev) },
      status: { hard: { ...(obj(obj(quota['spec'])?.['hard']) ?? {}) }, used: toObject(used) },
    };
    await this.o.rest.update(QUOTAS, ns, name, next, { sub: 'status', fieldManager: CONTROLLER });
    this.o.log.debug({ [F.namespace]: ns, [F.name]: name, used: toObject(used) }, 'quota counted');
  }
}

const keyOf = (o: Readonly<KObject>) => `${str(o.metadata?.['namespace']) ?? ''}/${str(o.metadata?.['name']) ?? ''}`;

/** A quota whose status does not yet say what its spec limits. */
function needsCount(o: Readonly<KObject>): boolean {
  const hard = resourceList(obj(o['spec'])?.['hard']);
  const status = obj(o['status']) ?? {};
  const used = obj(status['used']) ?? {};
  return !equalLists(resourceList(status['hard']), hard) || [...hard.keys()].some((k) => !(k in used));
}
