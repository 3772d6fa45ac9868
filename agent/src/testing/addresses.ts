/**
 * testing/addresses: the address conventions every proxy test uses, and
 * builders for real Kubernetes-shaped Service and EndpointSlice JSON.
 *
 * Conventions (as kube-proxy's proxier_test.go fixes its own), used only
 * inside test network namespaces:
 * - cluster pod CIDR 10.244.0.0/16; node N (1-based) has podCIDR
 *   10.244.N.0/24, its bridge gateway 10.244.N.1, pods from 10.244.N.2;
 * - Service ClusterIPs 10.96.0.0/16 (10.96.0.1 is conventionally the API);
 * - node underlay 192.168.77.0/24, node N at 192.168.77.(10+N) (as
 *   lab/plan.ts assigns them); external clients at 192.168.77.200+;
 * - NodePorts from 30000; node names "node-N".
 *
 * The builders emit what an API server would store (apiVersion, kind,
 * metadata, spec with explicit protocol), so parsers are tested against the
 * real shape, and `withField` edits one JSON path to make a bad object.
 */
import { intToIp, ipToInt, parseIPv4, type Cidr, type IPv4 } from '../../../lib/net/ip.js';
import { CLUSTER_CIDR, nodePodCIDR, nodeUnderlayIP, SERVICE_CIDR, UNDERLAY_CIDR, UNDERLAY_GATEWAY } from '../lab/plan.js';

/** The lab's plan (lab/plan.ts) is the tests' plan. */
export { CLUSTER_CIDR, SERVICE_CIDR, UNDERLAY_CIDR, UNDERLAY_GATEWAY };
export const NODE_PORT_BASE = 30000;

function checkRange(what: string, v: number, min: number, max: number): void {
  if (!Number.isInteger(v) || v < min || v > max) throw new RangeError(`${what} must be an integer in ${min}..${max}, got ${v}`);
}

export function nodeName(node: number): string {
  checkRange('node', node, 1, 254);
  return `node-${node}`;
}

/** Node N's podCIDR: 10.244.N.0/24. */
export function podCIDR(node: number): Cidr {
  return nodePodCIDR(node);
}

/** The bridge gateway of node N's pods: 10.244.N.1. */
export function podGateway(node: number): IPv4 {
  checkRange('node', node, 1, 254);
  return parseIPv4(`10.244.${node}.1`);
}

/** Pod i (1-based) on node N: 10.244.N.(i+1). */
export function podIP(node: number, i: number): IPv4 {
  checkRange('node', node, 1, 254);
  checkRange('pod', i, 1, 253);
  return parseIPv4(`10.244.${node}.${i + 1}`);
}

/** Node N's underlay address: 192.168.77.(10+N). */
export function nodeIP(node: number): IPv4 {
  return nodeUnderlayIP(node);
}

/** External client i (1-based) on the underlay: 192.168.77.(199+i). */
export function externalClientIP(i: number): IPv4 {
  checkRange('client', i, 1, 55);
  return parseIPv4(`192.168.77.${199 + i}`);
}

/** Service n's ClusterIP (1-based; 1 is 10.96.0.1): 10.96.0.0 + n. */
export function clusterIP(n: number): IPv4 {
  checkRange('service', n, 1, 65534);
  return intToIp(ipToInt('10.96.0.0') + n);
}

/** Service n's NodePort: 30000 + n. */
export function nodePort(n: number): number {
  checkRange('service', n, 0, 2767);
  return NODE_PORT_BASE + n;
}

// ---- Kubernetes-shaped JSON ----

export type Json = null | boolean | number | string | Json[] | { [k: string]: Json };
export type JsonObject = { [k: string]: Json };

export interface ServicePortSpec {
  /** Required when the Service has more than one port. */
  name?: string;
  port: number;
  protocol?: 'TCP' | 'UDP' | 'SCTP';
  /** Default: the port. */
  targetPort?: number | string;
  nodePort?: number;
}

export interface ServiceSpecInput {
  name: string;
  namespace?: string;
  type?: 'ClusterIP' | 'NodePort' | 'LoadBalancer' | 'ExternalName';
  /** An address, "None" (headless) or "" (not allocated yet). */
  clusterIP: string;
  ports: ServicePortSpec[];
  selector?: Record<string, string>;
  /** Sets sessionAffinity: ClientIP with this timeout (null: ClientIP with the default timeout). */
  affinityTimeoutSeconds?: number | null;
  externalTrafficPolicy?: 'Cluster' | 'Local';
  internalTrafficPolicy?: 'Cluster' | 'Local';
  externalIPs?: string[];
}

/** A core/v1 Service as the API server stores it (defaults filled in: protocol, targetPort, sessionAffinity, policies). */
export function makeService(o: ServiceSpecInput): JsonObject {
  const type = o.type ?? 'ClusterIP';
  const spec: JsonObject = {
    type,
    clusterIP: o.clusterIP,
    ports: o.ports.map((p) => {
      const port: JsonObject = {};
      if (p.name !== undefined) port['name'] = p.name;
      port['protocol'] = p.protocol ?? 'TCP';
      port['port'] = p.port;
      port['targetPort'] = p.targetPort ?? p.port;
      if (p.nodePort !== undefined) port['nodePort'] = p.nodePort;
      return port;
    }),
    selector: o.selector ?? { app: o.name },
    sessionAffinity: o.affinityTimeoutSeconds === undefined ? 'None' : 'ClientIP',
    internalTrafficPolicy: o.internalTrafficPolicy ?? 'Cluster',
  };
  if (o.clusterIP !== '') spec['clusterIPs'] = [o.clusterIP];
  if (o.affinityTimeoutSeconds !== undefined) {
    spec['sessionAffinityConfig'] = { clientIP: { timeoutSeconds: o.affinityTimeoutSeconds ?? 10800 } };
  }
  if (o.externalIPs) spec['externalIPs'] = [...o.externalIPs];
  if (type === 'NodePort' || type === 'LoadBalancer' || (o.externalIPs?.length ?? 0) > 0 || o.externalTrafficPolicy) {
    spec['externalTrafficPolicy'] = o.externalTrafficPolicy ?? 'Cluster';
  }
  return {
    apiVersion: 'v1',
    kind: 'Service',
    metadata: { name: o.name, namespace: o.namespace ?? 'default', uid: `uid-svc-${o.namespace ?? 'default'}-${o.name}`, resourceVersion: '1' },
    spec,
  };
}

export interface EndpointSpec {
  ip: string;
  /** Default true; null omits the condition (the API's "unknown"). */
  ready?: boolean | null;
  serving?: boolean | null;
  terminating?: boolean | null;
  nodeName?: string;
}

export interface EndpointSliceInput {
  /** The owning Service's name (the kubernetes.io/service-name label). */
  service: string;
  namespace?: string;
  /** Default `${service}-abcde`. */
  name?: string;
  addressType?: 'IPv4' | 'IPv6' | 'FQDN';
  ports: { name?: string; port: number; protocol?: 'TCP' | 'UDP' | 'SCTP' }[];
  endpoints: EndpointSpec[];
}

/** A discovery.k8s.io/v1 EndpointSlice as the EndpointSlice controller writes it. */
export function makeEndpointSlice(o: EndpointSliceInput): JsonObject {
  const ns = o.namespace ?? 'default';
  return {
    apiVersion: 'discovery.k8s.io/v1',
    kind: 'EndpointSlice',
    metadata: {
      name: o.name ?? `${o.service}-abcde`,
      namespace: ns,
      labels: { 'kubernetes.io/service-name': o.service, 'endpointslice.kubernetes.io/managed-by': 'endpointslice-controller.k8s.io' },
      resourceVersion: '1',
    },
    addressType: o.addressType ?? 'IPv4',
    endpoints: o.endpoints.map((e) => {
      const conditions: JsonObject = {};
      const ready = e.ready === undefined ? true : e.ready;
      if (ready !== null) conditions['ready'] = ready;
      const serving = e.serving === undefined ? ready : e.serving;
      if (serving !== null) conditions['serving'] = serving;
      const terminating = e.terminating === undefined ? false : e.terminating;
      if (terminating !== null) conditions['terminating'] = terminating;
      const ep: JsonObject = { addresses: [e.ip], conditions };
      if (e.nodeName !== undefined) ep['nodeName'] = e.nodeName;
      return ep;
    }),
    ports: o.ports.map((p) => ({ name: p.name ?? '', protocol: p.protocol ?? 'TCP', port: p.port })),
  };
}

/**
 * A deep copy of `obj` with the value at `path` (the InvalidObjectError
 * field syntax: `spec.ports[1].port`) replaced; `undefined` deletes it.
 * Intermediate objects must exist.
 */
export function withField(obj: JsonObject, path: string, value: Json | undefined): JsonObject {
  const copy = structuredClone(obj);
  const steps = [...path.matchAll(/([^.[\]]+)|\[(\d+)\]/g)].map((m) => (m[2] !== undefined ? Number(m[2]) : m[1]!));
  if (steps.length === 0) throw new Error(`withField: empty path`);
  let cur: Json = copy;
  for (const s of steps.slice(0, -1)) {
    const next: Json | undefined = typeof s === 'number' ? (Array.isArray(cur) ? cur[s] : undefined) : cur && typeof cur === 'object' && !Array.isArray(cur) ? cur[s] : undefined;
    if (next === undefined || next === null || typeof next !== 'object') throw new Error(`withField: ${path}: no object at ${String(s)}`);
    cur = next;
  }
  const last = steps[steps.length - 1]!;
  if (typeof last === 'number') {
    if (!Array.isArray(cur)) throw new Error(`withField: ${path}: not an array`);
    if (value === undefined) cur.splice(last, 1);
    else cur[last] = value;
  } else {
    if (!cur || typeof cur !== 'object' || Array.isArray(cur)) throw new Error(`withField: ${path}: not an object`);
    if (value === undefined) delete cur[last];
    else cur[last] = value;
  }
  return copy;
}
