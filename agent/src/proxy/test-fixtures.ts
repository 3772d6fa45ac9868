/**
 * proxy/test-fixtures: snapshots built straight from the proxy model types,
 * for every proxy mode's tests (render goldens, packet flows through the
 * tracers, proxiers, root tests).
 *
 * Addresses follow kube-proxy's proxier_test.go, which the goldens and
 * packet-flow cases spell out: pod IPs in 10.0.0.0/8 (endpoints 10.180.x.y),
 * ClusterIPs in 172.30.0.0/16, the node at 192.168.0.2, external IPs in
 * 192.168.99.0/24, clients outside the cluster in 203.0.113.0/24. Tests that
 * build Kubernetes objects use testing/addresses.ts instead (10.244.0.0/16,
 * 10.96.0.0/16, node-N); the two sets do not mix within one test.
 *
 * Endpoints are on another node (NODE_NAME is this one) unless `node` or
 * `local` says otherwise.
 */
import { parseCidr, parseIPv4 } from '../../../lib/net/ip.js';
import { spnString, type EndpointInfo, type Protocol, type ProxyNodeConfig, type ProxySnapshot, type ServicePortInfo } from './types.js';

export const NODE_NAME = 'node1';
export const OTHER_NODE_NAME = 'node2';
export const NODE_IP = parseIPv4('192.168.0.2');
export const EXTERNAL_CLIENT = parseIPv4('203.0.113.2');
export const POD_CIDR = parseCidr('10.0.0.0/8').cidr;

export function nodeConfig(over: Partial<ProxyNodeConfig> = {}): ProxyNodeConfig {
  return { nodeName: NODE_NAME, nodeIPs: [NODE_IP], clusterCIDR: POD_CIDR, prefix: 'KUBE', masqueradeBit: 14, ...over };
}

/** This node's default config (prefix KUBE, masquerade bit 14). */
export const CFG: ProxyNodeConfig = nodeConfig();

export interface SvcOpts {
  port?: number;
  portName?: string;
  protocol?: Protocol;
  /** A NodePort makes the Service type NodePort. */
  nodePort?: number;
  /** ClientIP affinity timeout; null or absent: no affinity. */
  affinity?: number | null;
  etp?: 'Cluster' | 'Local';
  itp?: 'Cluster' | 'Local';
  externalIPs?: string[];
  /** status.loadBalancer.ingress VIPs; any makes the Service type LoadBalancer. */
  lbVIPs?: string[];
  /** spec.loadBalancerSourceRanges. */
  sourceRanges?: string[];
  healthCheckNodePort?: number;
  /** Overrides the type the other options imply. */
  type?: 'ClusterIP' | 'NodePort' | 'LoadBalancer';
}

/** One ServicePort; the port name defaults to "p80" (kube-proxy's tests' naming). */
export function svc(ns: string, name: string, clusterIP: string, o: SvcOpts = {}): ServicePortInfo {
  const protocol = o.protocol ?? 'TCP';
  return {
    spn: { namespace: ns, name, port: o.portName ?? 'p80', protocol },
    serviceType: o.type ?? (o.lbVIPs || o.sourceRanges || o.healthCheckNodePort ? 'LoadBalancer' : o.nodePort ? 'NodePort' : 'ClusterIP'),
    clusterIP: parseIPv4(clusterIP),
    port: o.port ?? 80,
    protocol,
    nodePort: o.nodePort ?? 0,
    affinityTimeoutSeconds: o.affinity ?? null,
    externalTrafficPolicy: o.etp ?? 'Cluster',
    internalTrafficPolicy: o.itp ?? 'Cluster',
    externalIPs: (o.externalIPs ?? []).map(parseIPv4),
    loadBalancerVIPs: (o.lbVIPs ?? []).map(parseIPv4),
    loadBalancerSourceRanges: (o.sourceRanges ?? []).map((c) => parseCidr(c).cidr),
    healthCheckNodePort: o.healthCheckNodePort ?? 0,
  };
}

export interface EpOpts {
  /** The port, when the address has none ("ip"); default 80. */
  port?: number;
  ready?: boolean;
  /** Default: ready. */
  serving?: boolean;
  terminating?: boolean;
  /** The endpoint's node (null: none); local when it is NODE_NAME. Default OTHER_NODE_NAME. */
  node?: string | null;
  /** Shorthand: true puts the endpoint on this node (NODE_NAME), false on OTHER_NODE_NAME. */
  local?: boolean;
}

/** One endpoint at "ip" or "ip:port". */
export function ep(address: string, o: EpOpts = {}): EndpointInfo {
  const colon = address.indexOf(':');
  if (colon >= 0 && o.port !== undefined) throw new Error(`ep(${address}): a port in the address and in the options`);
  if (o.local !== undefined && o.node !== undefined) throw new Error(`ep(${address}): both node and local`);
  const ip = parseIPv4(colon >= 0 ? address.slice(0, colon) : address);
  const port = colon >= 0 ? Number(address.slice(colon + 1)) : (o.port ?? 80);
  if (!Number.isInteger(port) || port < 1 || port > 65535) throw new Error(`ep(${address}): bad port`);
  const node = o.local !== undefined ? (o.local ? NODE_NAME : OTHER_NODE_NAME) : o.node === undefined ? OTHER_NODE_NAME : o.node;
  const ready = o.ready ?? true;
  return {
    ip,
    port,
    ready,
    serving: o.serving ?? ready,
    terminating: o.terminating ?? false,
    nodeName: node,
    isLocal: node === NODE_NAME,
  };
}

/** A snapshot keyed by spnString, as proxy/types documents; a Service given [] has no endpoints entry. */
export function snapshot(...entries: [ServicePortInfo, EndpointInfo[]][]): ProxySnapshot {
  const services = new Map<string, ServicePortInfo>();
  const endpoints = new Map<string, readonly EndpointInfo[]>();
  for (const [s, eps] of entries) {
    const k = spnString(s.spn);
    services.set(k, s);
    if (eps.length) endpoints.set(k, eps);
  }
  return { services, endpoints };
}
