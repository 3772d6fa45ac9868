/**
 * Test fixtures for the nftables mode: snapshots built straight from the
 * proxy model types, with kube-proxy's test address conventions:
 * pod IPs in 10.0.0.0/8 (endpoints 10.180.x.y), ClusterIPs in 172.30.0.0/16,
 * the node at 192.168.0.2, external IPs in 192.168.99.0/24, clients outside
 * the cluster in 203.0.113.0/24.
 */
import { parseCidr, parseIPv4 } from '../../net/ip.js';
import type { EndpointInfo, ProxyNodeConfig, ProxySnapshot, Protocol, ServicePortInfo } from '../types.js';
import { spnString } from '../types.js';

export const NODE_NAME = 'node-a';
export const NODE_IP = '192.168.0.2';
export const CLUSTER_CIDR = '10.0.0.0/8';

export const CFG: ProxyNodeConfig = {
  nodeName: NODE_NAME,
  nodeIPs: [parseIPv4(NODE_IP)],
  clusterCIDR: parseCidr(CLUSTER_CIDR).cidr,
  prefix: 'KUBE',
  masqueradeBit: 14,
};

export interface SvcOpts {
  portName?: string;
  protocol?: Protocol;
  port?: number;
  nodePort?: number;
  affinity?: number | null;
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
  ready?: boolean;
  serving?: boolean;
  terminating?: boolean;
  /** The endpoint runs on this node (NODE_NAME). */
  local?: boolean;
}

export function ep(ipPort: string, o: EpOpts = {}): EndpointInfo {
  const [ip, port] = ipPort.split(':');
  const ready = o.ready ?? true;
  return {
    ip: parseIPv4(ip ?? ''),
    port: Number(port ?? '80'),
    ready,
    serving: o.serving ?? ready,
    terminating: o.terminating ?? false,
    nodeName: o.local ? NODE_NAME : 'node-b',
    isLocal: o.local ?? false,
  };
}

export function snapshot(...entries: [ServicePortInfo, EndpointInfo[]][]): ProxySnapshot {
  const services = new Map<string, ServicePortInfo>();
  const endpoints = new Map<string, readonly EndpointInfo[]>();
  for (const [s, eps] of entries) {
    services.set(spnString(s.spn), s);
    if (eps.length) endpoints.set(spnString(s.spn), eps);
  }
  return { services, endpoints };
}
