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
 * snapshotFromObjects is the shortcut for tests and tools: raw Service and
 * EndpointSlice JSON in, snapshot out, invalid objects throwing.
 */
import { mergeSlices, parseEndpointSlice, type EndpointSliceInfo } from './model/endpoint-slice.js';
import { parseService, type ServiceParseOptions } from './model/service.js';
import { spnKey, spnString, type EndpointInfo, type ProxySnapshot, type ServiceKey, type ServicePortInfo, type SpnKey } from './types.js';

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
