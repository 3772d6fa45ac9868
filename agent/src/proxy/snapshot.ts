/**
 * proxy/snapshot: the immutable ProxySnapshot a backend renders from. Pure.
 *
 * buildSnapshot joins the applied ServicePort and endpoint maps (both keyed
 * by spnKey, i.e. port name AND protocol) into the snapshot's spnString
 * keys. Every ServicePort gets an endpoints entry, [] when it has none, so a
 * renderer never has to tell "missing" from "empty" (both REJECT). Endpoints
 * whose ServicePort does not exist are dropped. Maps are filled in sorted
 * key order so rendered output (and golden tests) is deterministic.
 *
 * SnapshotTracker keeps the proxier's snapshot up to date as the maps
 * change: a full rebuild costs O(N log N), a partial one what changed (the
 * maps are VersionedSortedMaps, so every snapshot handed out stays as it
 * was). Both give what buildSnapshot would.
 *
 * snapshotFromObjects is the shortcut for tests and tools: raw Service and
 * EndpointSlice JSON in, snapshot out, invalid objects throwing.
 */
import { mergeSlices, parseEndpointSlice, type EndpointSliceInfo } from './model/endpoint-slice.js';
import { parseService, type ServiceParseOptions } from './model/service.js';
import { VersionedSortedMap } from './versioned-map.js';
import { parseSpnKey, spnKey, spnString, type EndpointInfo, type ProxySnapshot, type ServiceKey, type ServicePortInfo, type SpnKey } from './types.js';

export function buildSnapshot(
  services: ReadonlyMap<SpnKey, ServicePortInfo>,
  endpoints: ReadonlyMap<SpnKey, readonly EndpointInfo[]>,
): ProxySnapshot {
  const entries = [...services.entries()]
    .map(([k, info]) => ({ k, s: spnString(info.spn), info }))
    .sort((a, b) => (a.s < b.s ? -1 : a.s > b.s ? 1 : 0));
  const svcOut = new Map<string, ServicePortInfo>();
  const epOut = new Map<string, readonly EndpointInfo[]>();
  for (const { k, s, info } of entries) {
    svcOut.set(s, info);
    epOut.set(s, endpoints.get(k) ?? []);
  }
  return { services: svcOut, endpoints: epOut };
}

const PROTOCOLS = ['TCP', 'UDP', 'SCTP'] as const;
const NO_ENDPOINTS: readonly EndpointInfo[] = [];

/**
 * The snapshot of two maps keyed by spnKey (the proxier's ServicePortMap
 * and EndpointsMap views), kept current by rebuild() or update() after each
 * change to them. Snapshots it returned never change.
 */
export class SnapshotTracker {
  private services = VersionedSortedMap.empty<ServicePortInfo>();
  private endpoints = VersionedSortedMap.empty<readonly EndpointInfo[]>();
  private endpointTotal = 0;

  /** From scratch: O(N log N). */
  rebuild(services: ReadonlyMap<SpnKey, ServicePortInfo>, endpoints: ReadonlyMap<SpnKey, readonly EndpointInfo[]>): ProxySnapshot {
    const svc: [string, ServicePortInfo][] = [];
    const eps: [string, readonly EndpointInfo[]][] = [];
    let total = 0;
    for (const [k, info] of services) {
      const s = spnString(info.spn);
      const list = endpoints.get(k) ?? NO_ENDPOINTS;
      svc.push([s, info]);
      eps.push([s, list]);
      total += list.length;
    }
    this.services = VersionedSortedMap.from(svc);
    this.endpoints = VersionedSortedMap.from(eps);
    this.endpointTotal = total;
    return this.current();
  }

  /**
   * After the maps changed at the spnKeys `changed` (ServicePorts added,
   * removed or changed, endpoint lists changed): O(changed), the keys not
   * named must be unchanged.
   */
  update(
    changed: Iterable<SpnKey>,
    services: ReadonlyMap<SpnKey, ServicePortInfo>,
    endpoints: ReadonlyMap<SpnKey, readonly EndpointInfo[]>,
  ): ProxySnapshot {
    // By spnString: a port whose protocol changed is one spnString (names are unique within a Service).
    const names = new Set<string>();
    for (const k of changed) {
      const spn = parseSpnKey(k);
      if (spn) names.add(spnString(spn));
    }
    const svcUp = new Map<string, ServicePortInfo | undefined>();
    const epUp = new Map<string, readonly EndpointInfo[] | undefined>();
    for (const s of names) {
      let info: ServicePortInfo | undefined;
      let list: readonly EndpointInfo[] = NO_ENDPOINTS;
      for (const proto of PROTOCOLS) {
        const k = `${s}/${proto}`;
        info = services.get(k);
        if (info) {
          list = endpoints.get(k) ?? NO_ENDPOINTS;
          break;
        }
      }
      this.endpointTotal += list.length - (this.endpoints.get(s)?.length ?? 0);
      svcUp.set(s, info);
      epUp.set(s, info ? list : undefined);
    }
    this.services = this.services.with(svcUp);
    this.endpoints = this.endpoints.with(epUp);
    return this.current();
  }

  current(): ProxySnapshot {
    return { services: this.services, endpoints: this.endpoints };
  }

  /** Endpoints in the current snapshot, summed over its ServicePorts. */
  get endpointCount(): number {
    return this.endpointTotal;
  }
}

/**
 * Raw objects → snapshot, for tests, benches and the CLI's offline tools.
 * Throws InvalidObjectError on the first invalid object; ignored ones
 * (headless, IPv6 slices, ...) are skipped.
 */
export function snapshotFromObjects(
  services: readonly unknown[],
  slices: readonly unknown[],
  nodeName: string,
  opts: ServiceParseOptions = {},
): ProxySnapshot {
  const svcMap = new Map<SpnKey, ServicePortInfo>();
  for (const raw of services) {
    const p = parseService(raw, opts);
    if (p.kind === 'service') for (const port of p.ports) svcMap.set(spnKey(port.spn), port);
  }
  const bySvc = new Map<ServiceKey, EndpointSliceInfo[]>();
  for (const raw of slices) {
    const p = parseEndpointSlice(raw);
    if (p.kind !== 'slice') continue;
    const list = bySvc.get(p.info.serviceKey) ?? [];
    list.push(p.info);
    bySvc.set(p.info.serviceKey, list);
  }
  const epMap = new Map<SpnKey, readonly EndpointInfo[]>();
  for (const list of bySvc.values()) for (const [k, eps] of mergeSlices(list, nodeName)) epMap.set(k, eps);
  return buildSnapshot(svcMap, epMap);
}
