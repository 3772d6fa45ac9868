/**
 * proxy/iptables/fixtures: snapshots built straight from the model types, for
 * the iptables mode's tests (render goldens, proxier, tracer, root tests).
 *
 * Address conventions follow kube-proxy's proxier_test.go: pod IPs in
 * 10.0.0.0/8 (endpoints 10.180.x.x), ClusterIPs in 172.30.0.0/16, the node at
 * 192.168.0.2, an external client at 203.0.113.2.
 */
import { parseCidr, parseIPv4, type IPv4 } from '../../net/ip.js';
import { spnString, type EndpointInfo, type Protocol, type ProxyNodeConfig, type ProxySnapshot, type ServicePortInfo } from '../types.js';

export const NODE_NAME = 'node1';
export const NODE_IP = parseIPv4('192.168.0.2');
export const EXTERNAL_CLIENT = parseIPv4('203.0.113.2');
export const POD_CIDR = parseCidr('10.0.0.0/8').cidr;

export function nodeConfig(over: Partial<ProxyNodeConfig> = {}): ProxyNodeConfig {
  return { nodeName: NODE_NAME, nodeIPs: [NODE_IP], clusterCIDR: POD_CIDR, prefix: 'KUBE', masqueradeBit: 14, ...over };
}

export interface SvcOpts {
  port?: number;
  portName?: string;
  protocol?: Protocol;
  nodePort?: number;
  affinity?: number;
  etp?: 'Cluster' | 'Local';
  itp?: 'Cluster' | 'Local';
  externalIPs?: string[];
}

export function svc(ns: string, name: string, clusterIP: string, o: SvcOpts = {}): ServicePortInfo {
  const protocol = o.protocol ?? 'TCP';
  return {
    spn: { namespace: ns, name, port: o.portName ?? 'p80', protocol },
    serviceType: o.nodePort ? 'NodePort' : 'ClusterIP',
    clusterIP: parseIPv4(clusterIP),
    port: o.port ?? 80,
    protocol,
    nodePort: o.nodePort ?? 0,
    affinityTimeoutSeconds: o.affinity ?? null,
    externalTrafficPolicy: o.etp ?? 'Cluster',
    internalTrafficPolicy: o.itp ?? 'Cluster',
    externalIPs: (o.externalIPs ?? []).map(parseIPv4),
  };
}

export interface EpOpts {
  port?: number;
  ready?: boolean;
  serving?: boolean;
  terminating?: boolean;
  /** Node name; local when it is NODE_NAME. */
  node?: string | null;
}

export function ep(ip: string, o: EpOpts = {}): EndpointInfo {
  const ready = o.ready ?? true;
  const node = o.node === undefined ? 'node2' : o.node;
  return {
    ip: parseIPv4(ip) as IPv4,
    port: o.port ?? 80,
    ready,
    serving: o.serving ?? ready,
    terminating: o.terminating ?? false,
    nodeName: node,
    isLocal: node === NODE_NAME,
  };
}

/** A snapshot keyed by spnString, as proxy/types documents. */
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
