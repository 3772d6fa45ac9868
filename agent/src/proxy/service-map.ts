/**
 * proxy/service-map: the Service side of the proxy state. Pure.
 *
 * ServiceChangeTracker records parsed Services per ServiceKey ("ns/name")
 * as events arrive (first prev, latest cur, no-ops cancel). ServicePortMap
 * is the applied state, one ServicePortInfo per spnKey; apply() folds a
 * drained batch into it and reports what changed, port by port, as
 * kube-proxy's ServicePortMap.Update / UpdateServiceMapResult do. The map
 * diffs against its own applied state rather than trusting the events'
 * prev, so a change that turns out to equal what is applied is not reported.
 */
import { ChangeTracker, type Change } from '../../../lib/reconcile/change-tracker.js';
import { deepEqual } from '../../../lib/reconcile/deep-equal.js';
import { spnKey, type ServiceKey, type ServicePortInfo, type SpnKey } from './types.js';

/** A Service's ports as the tracker holds them; null = no Service (absent, ignored or invalid). */
export type ServicePorts = readonly ServicePortInfo[];

export class ServiceChangeTracker {
  private readonly tracker = new ChangeTracker<ServiceKey, ServicePorts>();

  /** Records one event; returns whether anything is pending for this key afterwards. */
  update(key: ServiceKey, prev: ServicePorts | null, cur: ServicePorts | null): boolean {
    return this.tracker.update(key, prev, cur);
  }

  get size(): number {
    return this.tracker.size;
  }

  drain(): Map<ServiceKey, Change<ServicePorts>> {
    return this.tracker.drain();
  }
}

export interface ServicePortChange {
  readonly key: SpnKey;
  readonly prev: ServicePortInfo | null;
  readonly cur: ServicePortInfo | null;
}

export interface UpdateServiceMapResult {
  /** Services with at least one port added, removed or changed. */
  readonly changedServices: Set<ServiceKey>;
  /** Every ServicePort added (prev null), removed (cur null) or changed. */
  readonly portChanges: readonly ServicePortChange[];
  /** UDP ServicePorts that are gone (kube-proxy's DeletedUDPClusterIPs, per port): their conntrack entries are stale. */
  readonly removedUDPPorts: readonly ServicePortInfo[];
}

export class ServicePortMap {
  private readonly ports = new Map<SpnKey, ServicePortInfo>();
  private readonly byService = new Map<ServiceKey, readonly SpnKey[]>();

  /** Applies a drained batch of Service changes (the cur of each is the Service's new ports; null removes it). */
  apply(changes: ReadonlyMap<ServiceKey, Change<ServicePorts>>): UpdateServiceMapResult {
    const changedServices = new Set<ServiceKey>();
    const portChanges: ServicePortChange[] = [];
    const removedUDPPorts: ServicePortInfo[] = [];
    for (const [svc, change] of changes) {
      const next = change.cur ?? [];
      const nextKeys = next.map((p) => spnKey(p.spn));
      for (const k of this.byService.get(svc) ?? []) {
        if (nextKeys.includes(k)) continue;
        const prev = this.ports.get(k);
        this.ports.delete(k);
        if (!prev) continue;
        portChanges.push({ key: k, prev, cur: null });
        if (prev.protocol === 'UDP') removedUDPPorts.push(prev);
        changedServices.add(svc);
      }
      next.forEach((port, i) => {
        const k = nextKeys[i]!;
        const prev = this.ports.get(k) ?? null;
        if (prev && deepEqual(prev, port)) return;
        this.ports.set(k, port);
        portChanges.push({ key: k, prev, cur: port });
        changedServices.add(svc);
      });
      if (nextKeys.length > 0) this.byService.set(svc, nextKeys);
      else this.byService.delete(svc);
    }
    return { changedServices, portChanges, removedUDPPorts };
  }

  get(key: SpnKey): ServicePortInfo | undefined {
    return this.ports.get(key);
  }

  /** The applied ports of one Service (spnKeys), [] when none. */
  portsOf(svc: ServiceKey): readonly SpnKey[] {
    return this.byService.get(svc) ?? [];
  }

  /** Number of ServicePorts. */
  get size(): number {
    return this.ports.size;
  }

  /** Read-only view of the applied state. */
  view(): ReadonlyMap<SpnKey, ServicePortInfo> {
    return this.ports;
  }
}
