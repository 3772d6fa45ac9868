/**
 * proxy/categorize: which endpoints a ServicePort's traffic may use on this
 * node, given its traffic policies. Our version of kube-proxy's
 * CategorizeEndpoints (pkg/proxy/topology.go), without topology hints; every
 * proxy mode renders from it.
 *
 * - "Usable" means Ready. When nothing is Ready, the Serving-and-Terminating
 *   endpoints are used instead (KEP-1669), so connections drain instead of
 *   failing. The fallback is decided separately for the Cluster set (any
 *   node) and the Local set (this node).
 * - A port uses Cluster endpoints with internalTrafficPolicy Cluster, and
 *   whenever it accepts external traffic: with externalTrafficPolicy Local,
 *   traffic from pods and from the node itself still short-circuits to any
 *   endpoint.
 * - A port uses Local endpoints with either policy Local (the external one
 *   only counts when the port accepts external traffic).
 *
 * Order: `cluster` and `local` keep the order of the input; `allReachable` is
 * `cluster` followed by the `local` endpoints not already in it (by
 * "ip:port"). Modes that want another order sort the input, or the result.
 * Pure.
 */
import { endpointString, type EndpointInfo, type ServicePortInfo } from './types.js';

export interface EndpointCategories {
  /** Endpoints for Cluster traffic policy; [] when the port never uses Cluster policy. */
  readonly cluster: readonly EndpointInfo[];
  /** Endpoints for Local traffic policy (this node's); [] when the port never uses Local policy. */
  readonly local: readonly EndpointInfo[];
  /** The union of the two: every endpoint some rule of this port can reach (one endpoint chain each). */
  readonly allReachable: readonly EndpointInfo[];
  /** Some usable endpoint (ready, or serving and terminating) exists somewhere in the cluster. */
  readonly hasAny: boolean;
}

/** NodePort, external IPs or load-balancer VIPs: reachable from outside through this node. */
export function externallyAccessible(svc: ServicePortInfo): boolean {
  return svc.nodePort !== 0 || svc.externalIPs.length > 0 || svc.loadBalancerVIPs.length > 0;
}

/** External traffic (if the port accepts any) goes to this node's endpoints only. */
export function externalPolicyLocal(svc: ServicePortInfo): boolean {
  return externallyAccessible(svc) && svc.externalTrafficPolicy === 'Local';
}

/** Traffic from inside the cluster goes to this node's endpoints only. */
export function internalPolicyLocal(svc: ServicePortInfo): boolean {
  return svc.internalTrafficPolicy === 'Local';
}

/** The port ever sends traffic by Cluster policy (internal Cluster, or any external access: short-circuiting needs it). */
export function usesClusterEndpoints(svc: ServicePortInfo): boolean {
  return !internalPolicyLocal(svc) || externallyAccessible(svc);
}

/** The port ever sends traffic by Local policy. */
export function usesLocalEndpoints(svc: ServicePortInfo): boolean {
  return internalPolicyLocal(svc) || externalPolicyLocal(svc);
}

const servingTerminating = (e: EndpointInfo): boolean => e.serving && e.terminating;

/** Ready endpoints that pass `keep`; if there are none, the serving-and-terminating ones that do. */
function usable(endpoints: readonly EndpointInfo[], keep: (e: EndpointInfo) => boolean): readonly EndpointInfo[] {
  const ready = endpoints.filter((e) => e.ready && keep(e));
  return ready.length > 0 ? ready : endpoints.filter((e) => servingTerminating(e) && keep(e));
}

const anyNode = (): boolean => true;
const thisNode = (e: EndpointInfo): boolean => e.isLocal;

/** Linear in the number of endpoints. */
export function categorizeEndpoints(endpoints: readonly EndpointInfo[], svc: ServicePortInfo): EndpointCategories {
  const cluster = usesClusterEndpoints(svc) ? usable(endpoints, anyNode) : [];
  if (!usesLocalEndpoints(svc)) return { cluster, local: [], allReachable: cluster, hasAny: cluster.length > 0 };

  const local = usable(endpoints, thisNode);
  const hasAny = endpoints.some((e) => e.ready || servingTerminating(e));
  if (!usesClusterEndpoints(svc)) return { cluster, local, allReachable: local, hasAny };

  // With a Ready endpoint anywhere, Cluster holds every Ready one and Local only
  // Ready ones, so Local is inside Cluster. Otherwise Local may hold this node's
  // terminating endpoints while Cluster holds Ready ones elsewhere: merge.
  const seen = new Set(cluster.map(endpointString));
  const extra = local.filter((e) => {
    const k = endpointString(e);
    if (seen.has(k)) return false;
    seen.add(k);
    return true;
  });
  return { cluster, local, allReachable: extra.length === 0 ? cluster : [...cluster, ...extra], hasAny };
}
