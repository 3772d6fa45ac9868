/**
 * proxy/nftables/endpoints: the nftables mode's endpoint order over the
 * shared categorization (proxy/categorize.ts).
 *
 * nftables renders endpoints sorted numerically (IP, then port), so a render
 * is deterministic whatever order the EndpointSlices arrived in, and the
 * merged `allReachable` list is sorted too. (The iptables mode sorts by the
 * "ip:port" string instead, kube-proxy's order, and keeps the shared
 * module's merge order.) Pure.
 */
import { ipToInt } from '../../../../lib/net/ip.js';
import { categorizeEndpoints, type EndpointCategories } from '../categorize.js';
import type { EndpointInfo, ServicePortInfo } from '../types.js';

export function sortEndpoints(eps: readonly EndpointInfo[]): EndpointInfo[] {
  if (eps.length < 2) return [...eps];
  // Each address parsed once, not once per comparison.
  const keyed = eps.map((ep) => ({ ep, ip: ipToInt(ep.ip) }));
  keyed.sort((a, b) => a.ip - b.ip || a.ep.port - b.ep.port);
  return keyed.map((k) => k.ep);
}

/** categorizeEndpoints with every list in nftables order. */
export function categorizeSorted(svc: ServicePortInfo, endpoints: readonly EndpointInfo[]): EndpointCategories {
  const cat = categorizeEndpoints(sortEndpoints(endpoints), svc);
  return { ...cat, allReachable: sortEndpoints(cat.allReachable) };
}
