/**
 * proxy/endpoints-map: the EndpointSlice side of the proxy state. Pure.
 *
 * EndpointSlices are tracked per slice ("ns/sliceName") because endpoints
 * move between slices: dropping a Service's endpoints when one slice goes
 * away would break traffic to the endpoints that just moved to another
 * (kube-proxy's EndpointSliceCache keeps per-slice state for this reason).
 * drain() folds the pending slice changes into the applied slices and
 * returns, per Service, its merged endpoints before and after (the union of
 * its slices, see mergeSlices); Services whose merged endpoints did not
 * change are left out.
 *
 * EndpointsMap is the applied state per spnKey; apply() reports changed
 * Services and, for UDP, what conntrack must forget (kube-proxy's
 * UpdateEndpointsMapResult / detectStaleConntrackEntries):
 * - staleUDPEndpoints: endpoints that were serving and are now gone or not
 *   serving; flows DNATed to them must be deleted or they keep going there;
 * - staleUDPServices: ports that had no serving endpoint and now have one;
 *   clients whose packets met the REJECT may hold entries that would keep
 *   blackholing them.
 */
import { ChangeTracker, type Change } from '../../../lib/reconcile/change-tracker.js';
import { deepEqual } from '../../../lib/reconcile/deep-equal.js';
import { mergeSlices, type EndpointSliceInfo, type ServiceEndpoints } from './model/endpoint-slice.js';
import { parseSpnKey, type EndpointInfo, type ServiceKey, type ServicePortName, type SpnKey } from './types.js';

export class EndpointsChangeTracker {
  private readonly pending = new ChangeTracker<string, EndpointSliceInfo>();
  /**
   * Applied slices per Service: the one slice itself (nearly every Service has one, and a Map per Service
   * costs ~200 bytes: 6 MiB at 30,000), or a Map by slice key when it has more.
   */
  private readonly applied = new Map<ServiceKey, EndpointSliceInfo | Map<string, EndpointSliceInfo>>();
  /** Which Service each applied slice belongs to (a slice can be relabelled to another Service). */
  private readonly owner = new Map<string, ServiceKey>();

  /** `nodeName` marks endpoints on this node as local. */
  constructor(private readonly nodeName: string) {}

  /** Records one slice event (null = absent); returns whether the slice has a pending change afterwards. */
  update(sliceKey: string, prev: EndpointSliceInfo | null, cur: EndpointSliceInfo | null): boolean {
    return this.pending.update(sliceKey, prev, cur);
  }

  get size(): number {
    return this.pending.size;
  }

  /** Applies pending slice changes to the per-slice state; returns per-Service merged endpoint changes (null = no endpoints). */
  drain(): Map<ServiceKey, Change<ServiceEndpoints>> {
    const changes = this.pending.drain();
    // Affected: the Service each slice is applied to now (the truth, whatever the event's prev said) and its new one.
    const affected = new Set<ServiceKey>();
    for (const [sliceKey, c] of changes) {
      const was = this.owner.get(sliceKey);
      if (was !== undefined) affected.add(was);
      if (c.cur) affected.add(c.cur.serviceKey);
    }
    const before = new Map<ServiceKey, ServiceEndpoints | null>();
    for (const svc of affected) before.set(svc, this.merged(svc));
    for (const [sliceKey, c] of changes) {
      // Remove the slice from wherever it is applied (it may have moved to another Service by a label edit).
      const was = this.owner.get(sliceKey);
      if (was !== undefined) {
        this.removeSlice(was, sliceKey);
        this.owner.delete(sliceKey);
      }
      if (c.cur) {
        this.addSlice(c.cur.serviceKey, sliceKey, c.cur);
        this.owner.set(sliceKey, c.cur.serviceKey);
      }
    }
    const out = new Map<ServiceKey, Change<ServiceEndpoints>>();
    for (const svc of affected) {
      const prev = before.get(svc) ?? null;
      const cur = this.merged(svc);
      if (!deepEqual(prev, cur)) out.set(svc, { prev, cur });
    }
    return out;
  }

  private removeSlice(svc: ServiceKey, sliceKey: string): void {
    const v = this.applied.get(svc);
    if (v === undefined) return;
    if (!(v instanceof Map)) {
      if (v.key === sliceKey) this.applied.delete(svc);
      return;
    }
    v.delete(sliceKey);
    if (v.size === 0) this.applied.delete(svc);
    else if (v.size === 1) {
      const [k, only] = v.entries().next().value as [string, EndpointSliceInfo];
      if (k === only.key) this.applied.set(svc, only);
    }
  }

  private addSlice(svc: ServiceKey, sliceKey: string, info: EndpointSliceInfo): void {
    const v = this.applied.get(svc);
    if (v === undefined) this.applied.set(svc, sliceKey === info.key ? info : new Map([[sliceKey, info]]));
    else if (v instanceof Map) v.set(sliceKey, info);
    else if (v.key === sliceKey) this.applied.set(svc, info);
    else this.applied.set(svc, new Map([[v.key, v], [sliceKey, info]]));
  }

  private merged(svc: ServiceKey): ServiceEndpoints | null {
    const v = this.applied.get(svc);
    if (v === undefined) return null;
    const m = mergeSlices(v instanceof Map ? v.values() : [v], this.nodeName);
    return m.size > 0 ? m : null;
  }
}

export interface EndpointsPortChange {
  readonly key: SpnKey;
  readonly prev: readonly EndpointInfo[];
  readonly cur: readonly EndpointInfo[];
}

export interface StaleUDPEndpoint {
  readonly key: SpnKey;
  readonly spn: ServicePortName;
  readonly endpoint: EndpointInfo;
}

export interface UpdateEndpointsMapResult {
  readonly changedServices: Set<ServiceKey>;
  readonly portChanges: readonly EndpointsPortChange[];
  readonly staleUDPEndpoints: readonly StaleUDPEndpoint[];
  readonly staleUDPServices: readonly { readonly key: SpnKey; readonly spn: ServicePortName }[];
}

export function servingCount(list: readonly EndpointInfo[]): number {
  let n = 0;
  for (const e of list) if (e.serving) n++;
  return n;
}

export class EndpointsMap {
  private readonly eps = new Map<SpnKey, readonly EndpointInfo[]>();
  private readonly byService = new Map<ServiceKey, readonly SpnKey[]>();

  apply(changes: ReadonlyMap<ServiceKey, Change<ServiceEndpoints>>): UpdateEndpointsMapResult {
    const changedServices = new Set<ServiceKey>();
    const portChanges: EndpointsPortChange[] = [];
    const staleUDPEndpoints: StaleUDPEndpoint[] = [];
    const staleUDPServices: { key: SpnKey; spn: ServicePortName }[] = [];
    for (const [svc, change] of changes) {
      const next: ServiceEndpoints = change.cur ?? new Map();
      const keys = new Set<SpnKey>([...(this.byService.get(svc) ?? []), ...next.keys()]);
      for (const k of keys) {
        const prev = this.eps.get(k) ?? [];
        const cur = next.get(k) ?? [];
        if (deepEqual(prev, cur)) continue;
        if (cur.length > 0) this.eps.set(k, cur);
        else this.eps.delete(k);
        portChanges.push({ key: k, prev, cur });
        changedServices.add(svc);
        const spn = parseSpnKey(k);
        if (!spn || spn.protocol !== 'UDP') continue;
        for (const e of prev) {
          if (!e.serving) continue; // no traffic went to it, nothing to forget
          const now = cur.find((c) => c.ip === e.ip && c.port === e.port);
          if (!now || !now.serving) staleUDPEndpoints.push({ key: k, spn, endpoint: e });
        }
        if (servingCount(prev) === 0 && servingCount(cur) > 0) staleUDPServices.push({ key: k, spn });
      }
      const nextKeys = [...next.keys()];
      if (nextKeys.length > 0) this.byService.set(svc, nextKeys);
      else this.byService.delete(svc);
    }
    return { changedServices, portChanges, staleUDPEndpoints, staleUDPServices };
  }

  get(key: SpnKey): readonly EndpointInfo[] | undefined {
    return this.eps.get(key);
  }

  get size(): number {
    return this.eps.size;
  }

  view(): ReadonlyMap<SpnKey, readonly EndpointInfo[]> {
    return this.eps;
  }
}
