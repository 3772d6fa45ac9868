/**
 * proxy/types: the model every proxy mode renders from.
 *
 * Kubernetes objects (core/v1 Service, discovery.k8s.io/v1 EndpointSlice) are
 * parsed and validated once, at the edge (proxy/model/*), into these readonly
 * shapes. Trackers, renderers and tracers only ever see these, never raw
 * objects. One ServicePort is the unit of rendering, as in kube-proxy: a
 * Service with two ports is two ServicePorts with their own chains.
 */
import type { IPv4, Cidr } from '../../../lib/net/ip.js';
import { flat } from './flat.js';

export type Protocol = 'TCP' | 'UDP' | 'SCTP';

/** Identifies one port of one Service: "ns/name:port" (port = the port's name, may be empty). */
export interface ServicePortName {
  readonly namespace: string;
  readonly name: string;
  /** The ServicePort's `name` ('' when the Service has a single unnamed port). */
  readonly port: string;
  readonly protocol: Protocol;
}

/** kube-proxy's String(): "ns/name:port" or "ns/name" when the port has no name. Used as map key and rule comment. */
export function spnString(s: ServicePortName): string {
  // Flat: it is a key of maps the proxy keeps (proxy/flat.ts).
  return s.port ? flat(s.namespace, '/', s.name, ':', s.port) : flat(s.namespace, '/', s.name);
}

/**
 * Internal map key of a ServicePortName including its protocol: "ns/name:port/UDP".
 * Endpoints match a Service port by name AND protocol (as kube-proxy's
 * ServicePortName equality), which spnString alone does not capture.
 */
export type SpnKey = string;
export function spnKey(s: ServicePortName): SpnKey {
  return s.port ? flat(s.namespace, '/', s.name, ':', s.port, '/', s.protocol) : flat(s.namespace, '/', s.name, '/', s.protocol);
}

/** The inverse of spnKey (names cannot contain '/' or ':', so it is unambiguous); null if malformed. */
export function parseSpnKey(k: SpnKey): ServicePortName | null {
  const m = /^([^/:]+)\/([^/:]+)(?::([^/:]+))?\/(TCP|UDP|SCTP)$/.exec(k);
  if (!m) return null;
  return { namespace: m[1]!, name: m[2]!, port: m[3] ?? '', protocol: m[4] as Protocol };
}

/** Key of a whole Service ("ns/name"), the unit of change tracking. */
export type ServiceKey = string;

export type TrafficPolicy = 'Cluster' | 'Local';
export type ServiceType = 'ClusterIP' | 'NodePort' | 'LoadBalancer';

export interface ServicePortInfo {
  readonly spn: ServicePortName;
  readonly serviceType: ServiceType;
  readonly clusterIP: IPv4;
  readonly port: number;
  readonly protocol: Protocol;
  /** 0 when the Service has no NodePort. */
  readonly nodePort: number;
  /** null: no session affinity; otherwise ClientIP affinity with this timeout. */
  readonly affinityTimeoutSeconds: number | null;
  readonly externalTrafficPolicy: TrafficPolicy;
  readonly internalTrafficPolicy: TrafficPolicy;
  readonly externalIPs: readonly IPv4[];
  /**
   * The `status.loadBalancer.ingress` IPs a VIP-style load balancer sends here
   * with the destination unchanged (kube-proxy's LoadBalancerVIPs): IPv4,
   * deduplicated; ingress with `ipMode: Proxy` or only a hostname is left out.
   */
  readonly loadBalancerVIPs: readonly IPv4[];
  /** `spec.loadBalancerSourceRanges` (IPv4, as networks): with VIPs, only these sources may reach them; [] = anyone. */
  readonly loadBalancerSourceRanges: readonly Cidr[];
  /** `spec.healthCheckNodePort` of a LoadBalancer Service with externalTrafficPolicy Local; 0 otherwise. */
  readonly healthCheckNodePort: number;
}

/** One endpoint of one ServicePort (the targetPort already resolved to a number). */
export interface EndpointInfo {
  readonly ip: IPv4;
  readonly port: number;
  readonly ready: boolean;
  readonly serving: boolean;
  readonly terminating: boolean;
  readonly nodeName: string | null;
  /** nodeName equals this proxy's node. */
  readonly isLocal: boolean;
}

/** "ip:port", kube-proxy's endpoint string; the SEP chain hash input together with the spn. */
export function endpointString(e: Pick<EndpointInfo, 'ip' | 'port'>): string {
  return `${e.ip}:${e.port}`;
}

/** Everything a renderer needs, immutable for the duration of one sync. */
export interface ProxySnapshot {
  /** Keyed by spnString. */
  readonly services: ReadonlyMap<string, ServicePortInfo>;
  /** Keyed by spnString; endpoints merged from all slices of the Service, deduplicated by ip:port. */
  readonly endpoints: ReadonlyMap<string, readonly EndpointInfo[]>;
}

/** Node-level facts and options a renderer needs besides the snapshot. */
export interface ProxyNodeConfig {
  readonly nodeName: string;
  /** The node's own addresses (NodePorts are served on these). */
  readonly nodeIPs: readonly IPv4[];
  /** The cluster's pod CIDR: traffic to a ClusterIP from outside it is masqueraded (kube-proxy --cluster-cidr). */
  readonly clusterCIDR: Cidr | null;
  /** Chain/table name prefix; 'KUBE' gives kube-proxy's names (KUBE-SERVICES, table kube-proxy). */
  readonly prefix: string;
  /** The masquerade mark bit (kube-proxy: 14 → 0x4000). */
  readonly masqueradeBit: number;
  /**
   * Which of the node's addresses serve NodePorts (kube-proxy
   * --nodeport-addresses, resolved by proxy/node-port-addresses.ts): the
   * local addresses inside these CIDRs. null or absent: every local address
   * (nftables mode leaves out 127.0.0.0/8 whatever the list says).
   */
  readonly nodePortAddresses?: readonly Cidr[] | null;
  /**
   * The node's primary IP (kube-proxy's nodeIP). A loadBalancerSourceRanges
   * entry that holds it also admits the LB IPs as sources, so the node can
   * reach a VIP that is one of its own addresses.
   */
  readonly primaryIP?: IPv4 | null;
  /** The Service CIDRs: nftables mode drops traffic to an address in them that no Service has (unallocated ClusterIPs). */
  readonly serviceCIDRs?: readonly Cidr[];
}

/** What a sync is asked to do: everything, or only the chains of these Services plus the top-level dispatch. */
export type SyncScope = { readonly full: true } | { readonly full: false; readonly changed: ReadonlySet<ServiceKey> };

/** The result of tracing one packet through rendered rules. */
export interface TraceResult {
  /** Chains (or rule descriptions) visited in order. */
  readonly visited: readonly string[];
  /** "ip:port" of the chosen endpoint(s), comma-joined when a random choice remains, or REJECT / DROP / ACCEPT. */
  readonly destination: string;
  readonly masquerade: boolean;
}

export interface TracePacket {
  readonly sourceIP: IPv4;
  readonly protocol: Protocol;
  readonly destIP: IPv4;
  readonly destPort: number;
}

/**
 * One proxy mode's kernel side (iptables, nftables, ipvs). The core's sync
 * runner calls it with a fresh snapshot; it renders (pure) and applies in one
 * atomic call.
 */
export interface ProxyBackend {
  readonly mode: 'iptables' | 'nftables' | 'ipvs';
  /**
   * Renders and applies. With a partial scope, rewrites only the changed
   * Services' chains/elements plus the top-level dispatch, and removes chains
   * no Service uses any more. Precondition for a partial scope: a full sync
   * succeeded before and nothing failed since (the runner guarantees it).
   * Throws NodenetError(RuleApply) on failure; the runner then forces a full sync.
   */
  sync(snapshot: ProxySnapshot, scope: SyncScope): Promise<void>;
  /** True when the canary chain/table is gone (someone flushed our rules): the runner forces a full sync. */
  canaryMissing(): Promise<boolean>;
  /** Removes everything this mode installed. Idempotent. */
  cleanup(): Promise<void>;
  /**
   * Optional, for sync stats (CLI, benches): how many rules (or set/map
   * elements, or IPVS entries) the last successful sync wrote; null if unknown.
   */
  lastSyncRuleCount?(): number | null;
  /** Releases what the backend holds open (IPVS mode's netlink sockets); the rules stay. Optional, idempotent. */
  close?(): void;
}
