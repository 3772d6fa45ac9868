/**
 * bench/lib/services: the numbered Services and EndpointSlices the Service
 * benches share (bench:proxy feeds them to a Proxier, bench:cni loads them
 * into an agent, bench:programming numbers its endpoints and changes the
 * same way), as Kubernetes-shaped JSON (testing/addresses.ts builders and
 * address conventions). Pure.
 *
 * Service n (1-based) is `bench/svc-<n>`: ClusterIP 10.96.0.0+n, TCP port 80
 * to targetPort 8080; every 10th one (n = 10, 20, ...) is type NodePort with
 * NodePort 30000 + n/10 - 1. Each has one EndpointSlice with 2 ready
 * endpoints. Endpoint IPs are unique across the cluster: endpoint j (0-based,
 * in Service order) is pod (j mod 253) + 1 on node floor(j / 253) + 1, i.e.
 * 10.244.N.x; the IPs after the last endpoint are the spare pool the
 * one-endpoint changes draw from. That caps a workload at ~32,000 Services.
 */
import { NODE_PORT_BASE, clusterIP, makeEndpointSlice, makeService, nodeName, podIP, type JsonObject } from '../../agent/src/testing/addresses.js';
import type { PortRange } from '../../agent/src/proxy/model/service.js';

export const NAMESPACE = 'bench';
export const SERVICE_PORT = 80;
export const TARGET_PORT = 8080;
export const ENDPOINTS_PER_SERVICE = 2;
/** Every NODEPORT_EVERY-th Service is also a NodePort. */
export const NODEPORT_EVERY = 10;
const PODS_PER_NODE = 253;
const MAX_NODES = 254;
/** Unique pod IPs the address conventions give (10.244.1.2 .. 10.244.254.254). */
export const POD_IP_POOL = PODS_PER_NODE * MAX_NODES;
/** The most Services a workload may have: 2 endpoints each and a spare pool within POD_IP_POOL. */
export const MAX_SERVICES = 32_000;

/** Endpoint j (0-based): node floor(j/253)+1, pod (j mod 253)+1, on that node. */
export function endpointAt(j: number): { ip: string; nodeName: string } {
  if (!Number.isInteger(j) || j < 0 || j >= POD_IP_POOL) throw new RangeError(`endpoint index must be an integer in 0..${POD_IP_POOL - 1}, got ${j}`);
  const node = Math.floor(j / PODS_PER_NODE) + 1;
  return { ip: podIP(node, (j % PODS_PER_NODE) + 1), nodeName: nodeName(node) };
}

/** The NodePort of Service n, or 0 when it is a plain ClusterIP Service. */
export function nodePortOf(n: number): number {
  return n % NODEPORT_EVERY === 0 ? NODE_PORT_BASE + n / NODEPORT_EVERY - 1 : 0;
}

/**
 * The NodePort range the Proxier must accept for `services` Services (kube-apiserver
 * --service-node-port-range): the default 30000-32767, widened when more than 2,768
 * NodePorts are needed (30,000 Services give 3,000).
 */
export function nodePortRangeFor(services: number): PortRange {
  const needed = NODE_PORT_BASE + Math.floor(services / NODEPORT_EVERY) - 1;
  return { min: NODE_PORT_BASE, max: Math.max(32767, needed) };
}

export function serviceName(n: number): string {
  return `svc-${n}`;
}

export function service(n: number): JsonObject {
  const np = nodePortOf(n);
  return makeService({
    name: serviceName(n),
    namespace: NAMESPACE,
    type: np ? 'NodePort' : 'ClusterIP',
    clusterIP: clusterIP(n),
    ports: [{ port: SERVICE_PORT, targetPort: TARGET_PORT, ...(np ? { nodePort: np } : {}) }],
  });
}

/** Service n's slice with the given endpoint indexes (see endpointAt). */
export function slice(n: number, endpointIndexes: readonly number[]): JsonObject {
  return makeEndpointSlice({
    service: serviceName(n),
    namespace: NAMESPACE,
    ports: [{ port: TARGET_PORT }],
    endpoints: endpointIndexes.map((j) => endpointAt(j)),
  });
}

/** Service n's initial endpoint indexes: 2(n-1) and 2(n-1)+1. */
export function initialEndpoints(n: number): number[] {
  return Array.from({ length: ENDPOINTS_PER_SERVICE }, (_, k) => (n - 1) * ENDPOINTS_PER_SERVICE + k);
}

export interface EndpointChange {
  /** The Service whose slice changes (1-based). */
  readonly service: number;
  /** Which of its endpoints is replaced (0 or 1). */
  readonly slot: number;
  /** Index (endpointAt) of the new endpoint: from the spare pool. */
  readonly newEndpoint: number;
}

/**
 * `repeat` one-endpoint changes over `services` Services: each to a different
 * Service, spread evenly over the list (not always the first or last one),
 * replacing the second endpoint with a fresh IP from the spare pool.
 */
export function planChanges(services: number, repeat: number): EndpointChange[] {
  if (!Number.isInteger(services) || services < 1) throw new RangeError(`services must be a positive integer, got ${services}`);
  if (!Number.isInteger(repeat) || repeat < 0) throw new RangeError(`repeat must be a non-negative integer, got ${repeat}`);
  if (repeat > services) throw new RangeError(`repeat (${repeat}) must not exceed the number of Services (${services})`);
  const spare = services * ENDPOINTS_PER_SERVICE;
  if (spare + repeat > POD_IP_POOL) {
    throw new RangeError(`${services} Services with ${ENDPOINTS_PER_SERVICE} endpoints and ${repeat} changes need ${spare + repeat} pod IPs; the address conventions give ${POD_IP_POOL}`);
  }
  const out: EndpointChange[] = [];
  const used = new Set<number>();
  for (let r = 0; r < repeat; r++) {
    let n = Math.max(1, Math.min(services, Math.round(((r + 1) * services) / (repeat + 1))));
    while (used.has(n)) n = (n % services) + 1;
    used.add(n);
    out.push({ service: n, slot: ENDPOINTS_PER_SERVICE - 1, newEndpoint: spare + r });
  }
  return out;
}
