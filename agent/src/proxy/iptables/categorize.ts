/**
 * proxy/iptables/categorize: which endpoints a ServicePort's traffic may use
 * on this node, given its traffic policies (kube-proxy's CategorizeEndpoints,
 * without topology hints).
 *
 * "Usable" means Ready; when no endpoint is Ready, Serving-and-Terminating
 * endpoints are used instead (KEP-1669), decided separately for the Cluster
 * set and the Local set. Pure; nothing here is iptables-specific, so other
 * modes can share it.
 */
import type { EndpointInfo, ServicePortInfo } from '../types.js';
import { endpointString } from '../types.js';

export interface EndpointCategories {
  /** Endpoints for Cluster traffic policy; [] when the port never uses Cluster policy. */
  readonly cluster: readonly EndpointInfo[];
  /** Endpoints for Local traffic policy (this node's); [] when the port never uses Local policy. */
  readonly local: readonly EndpointInfo[];
  /** Union of the two: every endpoint this node may DNAT to (one SEP chain each). */
  readonly reachable: readonly EndpointInfo[];
  /** True when the Service has a usable endpoint anywhere in the cluster. */
  readonly hasAny: boolean;
}

/** NodePort or external IPs: reachable from outside through this node. */
export function externallyAccessible(s: ServicePortInfo): boolean {
  return s.nodePort !== 0 || s.externalIPs.length > 0;
}

export function externalPolicyLocal(s: ServicePortInfo): boolean {
  return externallyAccessible(s) && s.externalTrafficPolicy === 'Local';
}

export function internalPolicyLocal(s: ServicePortInfo): boolean {
  return s.internalTrafficPolicy === 'Local';
}

/** Cluster endpoints are needed for Cluster internal policy, and for any external access (the short-circuit of local traffic). */
export function usesClusterEndpoints(s: ServicePortInfo): boolean {
  return !internalPolicyLocal(s) || externallyAccessible(s);
}

export function usesLocalEndpoints(s: ServicePortInfo): boolean {
  return internalPolicyLocal(s) || externalPolicyLocal(s);
}

const servingTerminating = (e: EndpointInfo): boolean => e.serving && e.terminating;

export function categorizeEndpoints(endpoints: readonly EndpointInfo[], svc: ServicePortInfo): EndpointCategories {
  let cluster: readonly EndpointInfo[] = [];
  let hasAny = false;
  if (usesClusterEndpoints(svc)) {
    cluster = endpoints.filter((e) => e.ready);
    if (cluster.length === 0) cluster = endpoints.filter(servingTerminating);
    hasAny = cluster.length > 0;
  }
  if (!usesLocalEndpoints(svc)) return { cluster, local: [], reachable: cluster, hasAny };

  let localReady = false;
  let localTerminating = false;
  for (const e of endpoints) {
    if (e.ready) {
      hasAny = true;
      if (e.isLocal) localReady = true;
    } else if (servingTerminating(e)) {
      hasAny = true;
      if (e.isLocal) localTerminating = true;
    }
  }
  let local: readonly EndpointInfo[] = [];
  if (localReady) local = endpoints.filter((e) => e.isLocal && e.ready);
  else if (localTerminating) local = endpoints.filter((e) => e.isLocal && servingTerminating(e));

  if (!usesClusterEndpoints(svc)) return { cluster, local, reachable: local, hasAny };
  // When some endpoint is Ready, Cluster holds all Ready ones and Local only Ready ones,
  // so Local ⊆ Cluster. Otherwise Local may hold terminating endpoints: merge.
  const inCluster = new Set(cluster);
  if (local.every((l) => inCluster.has(l))) return { cluster, local, reachable: cluster, hasAny };
  const byKey = new Map<string, EndpointInfo>();
  for (const e of [...cluster, ...local]) byKey.set(endpointString(e), e);
  return { cluster, local, reachable: [...byKey.values()], hasAny };
}
