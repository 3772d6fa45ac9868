/**
 * proxy/nftables/endpoints: which endpoints a ServicePort's traffic may use,
 * following kube-proxy's CategorizeEndpoints (pkg/proxy/topology.go) without
 * topology hints:
 *
 * - "Cluster" policy uses the ready endpoints; if none is ready anywhere, the
 *   serving-and-terminating ones (so connections drain instead of failing).
 * - "Local" policy uses this node's ready endpoints; if none, this node's
 *   serving-and-terminating ones.
 * - A Service that accepts external traffic with externalTrafficPolicy Local
 *   still needs its Cluster endpoints, to short-circuit traffic from pods and
 *   from the node itself.
 *
 * Pure. Endpoints come out sorted (IP, then port) so a render is deterministic
 * whatever order the EndpointSlices arrived in.
 */
import { ipToInt } from '../../net/ip.js';
import type { EndpointInfo, ServicePortInfo } from '../types.js';

export function externallyAccessible(svc: ServicePortInfo): boolean {
  return svc.nodePort !== 0 || svc.externalIPs.length > 0;
}

export function externalPolicyLocal(svc: ServicePortInfo): boolean {
  return externallyAccessible(svc) && svc.externalTrafficPolicy === 'Local';
}

export function internalPolicyLocal(svc: ServicePortInfo): boolean {
  return svc.internalTrafficPolicy === 'Local';
}

/** The port ever sends traffic by "Cluster" policy (internal Cluster, or any external traffic: short-circuiting needs it). */
export function usesClusterEndpoints(svc: ServicePortInfo): boolean {
  return !internalPolicyLocal(svc) || externallyAccessible(svc);
}

/** The port ever sends traffic by "Local" policy. */
export function usesLocalEndpoints(svc: ServicePortInfo): boolean {
  return internalPolicyLocal(svc) || externalPolicyLocal(svc);
}

export interface CategorizedEndpoints {
  /** Endpoints for "Cluster" policy (empty when the port never uses it). */
  readonly cluster: readonly EndpointInfo[];
  /** Endpoints for "Local" policy (empty when the port never uses it). */
  readonly local: readonly EndpointInfo[];
  /** The union: every endpoint some rule of this port can reach (one endpoint chain each). */
  readonly allReachable: readonly EndpointInfo[];
  /** Some usable endpoint exists somewhere in the cluster (ready, or serving and terminating). */
  readonly hasAny: boolean;
}

export function sortEndpoints(eps: readonly EndpointInfo[]): EndpointInfo[] {
  return [...eps].sort((a, b) => ipToInt(a.ip) - ipToInt(b.ip) || a.port - b.port);
}

const servingTerminating = (e: EndpointInfo) => e.serving && e.terminating;

export function categorizeEndpoints(svc: ServicePortInfo, endpoints: readonly EndpointInfo[]): CategorizedEndpoints {
  const eps = sortEndpoints(endpoints);
  let cluster: EndpointInfo[] = [];
  let hasAny = false;
  if (usesClusterEndpoints(svc)) {
    cluster = eps.filter((e) => e.ready);
    if (cluster.length === 0) cluster = eps.filter(servingTerminating);
    hasAny = cluster.length > 0;
  }
  if (!usesLocalEndpoints(svc)) return { cluster, local: [], allReachable: cluster, hasAny };

  let local: EndpointInfo[] = [];
  if (eps.some((e) => e.ready || servingTerminating(e))) hasAny = true;
  if (eps.some((e) => e.isLocal && e.ready)) local = eps.filter((e) => e.isLocal && e.ready);
  else local = eps.filter((e) => e.isLocal && servingTerminating(e));

  if (!usesClusterEndpoints(svc)) return { cluster, local, allReachable: local, hasAny };
  const seen = new Set(cluster.map((e) => `${e.ip}:${e.port}`));
  const union = sortEndpoints([...cluster, ...local.filter((e) => !seen.has(`${e.ip}:${e.port}`))]);
  return { cluster, local, allReachable: union, hasAny };
}
