/**
 * bench/programming/workload: the Services and EndpointSlices the bench
 * writes through the API, and how to tell from the agent's status file that
 * they are applied. Pure.
 *
 * Service n (1-based) is `default/svc-<n>`: ClusterIP (allocated by the API
 * server), one TCP port named `http`, 80 → 8080, no selector, so the
 * control plane's EndpointSlice controller leaves the bench's slices alone.
 * Each Service has one EndpointSlice `svc-<n>-a` with 2 ready endpoints on
 * the bench's node. Endpoint j (0-based, in Service order, as
 * bench/lib/services numbers them) is 10.160.0.0/15, 250 to a /24
 * (10.160.0.2 ... 10.161.x.251): outside the service CIDR (10.96.0.0/12),
 * the cluster CIDR (10.244.0.0/16) and the underlay, so no address is also
 * something else. The one-endpoint changes are bench/lib/services'
 * planChanges: spread over the Services, each replacing the second endpoint
 * with one after the last initial endpoint.
 */
import { ENDPOINTS_PER_SERVICE, POD_IP_POOL, SERVICE_PORT, TARGET_PORT, initialEndpoints, serviceName, type EndpointChange } from '../lib/services.js';

export const NAMESPACE = 'default';
export const SERVICES_PATH = `/api/v1/namespaces/${NAMESPACE}/services`;
export const SLICES_PATH = `/apis/discovery.k8s.io/v1/namespaces/${NAMESPACE}/endpointslices`;

export const PORT_NAME = 'http';
/** kube-proxy's annotation: when the change behind an EndpointSlice write happened (the controller sets it). */
export const TRIGGER_TIME_ANNOTATION = 'endpoints.kubernetes.io/last-change-trigger-time';

/** Endpoint j's address (see the header). */
export function endpointIP(j: number): string {
  if (!Number.isInteger(j) || j < 0 || j >= POD_IP_POOL) throw new RangeError(`endpoint index must be an integer in 0..${POD_IP_POOL - 1}, got ${j}`);
  const block = Math.floor(j / 250);
  return `10.${160 + Math.floor(block / 256)}.${block % 256}.${2 + (j % 250)}`;
}

/** Endpoint j as the status file lists it ("ip:port"). */
export function endpointString(j: number): string {
  return `${endpointIP(j)}:${TARGET_PORT}`;
}

export function sliceName(n: number): string {
  return `${serviceName(n)}-a`;
}

/** Service n's key in the status file's `applied` ("ns/name:port"). */
export function appliedKey(n: number): string {
  return `${NAMESPACE}/${serviceName(n)}:${PORT_NAME}`;
}

export function serviceObject(n: number): Record<string, unknown> {
  return {
    apiVersion: 'v1',
    kind: 'Service',
    metadata: { name: serviceName(n), namespace: NAMESPACE },
    spec: { type: 'ClusterIP', ports: [{ name: PORT_NAME, protocol: 'TCP', port: SERVICE_PORT, targetPort: TARGET_PORT }] },
  };
}

export interface SliceExtras {
  /** For an update: the revision it replaces. */
  readonly resourceVersion?: string;
  /** RFC 3339: the trigger-time annotation (what the EndpointSlice controller would write). */
  readonly triggerTime?: string;
}

/** Service n's slice with the given endpoints (indexes for endpointIP), all on `nodeName`. */
export function sliceObject(n: number, endpoints: readonly number[], nodeName: string, extras: SliceExtras = {}): Record<string, unknown> {
  return {
    apiVersion: 'discovery.k8s.io/v1',
    kind: 'EndpointSlice',
    metadata: {
      name: sliceName(n),
      namespace: NAMESPACE,
      labels: { 'kubernetes.io/service-name': serviceName(n) },
      ...(extras.triggerTime === undefined ? {} : { annotations: { [TRIGGER_TIME_ANNOTATION]: extras.triggerTime } }),
      ...(extras.resourceVersion === undefined ? {} : { resourceVersion: extras.resourceVersion }),
    },
    addressType: 'IPv4',
    endpoints: endpoints.map((j) => ({ addresses: [endpointIP(j)], conditions: { ready: true, serving: true, terminating: false }, nodeName })),
    ports: [{ name: PORT_NAME, protocol: 'TCP', port: TARGET_PORT }],
  };
}

/** The slice after `c`: Service c.service's endpoints with slot c.slot replaced. */
export function changedEndpoints(c: EndpointChange): number[] {
  const eps = initialEndpoints(c.service);
  eps[c.slot] = c.newEndpoint;
  return eps;
}

type Applied = Readonly<Record<string, readonly string[]>>;

const same = (got: readonly string[] | undefined, want: readonly string[]): boolean =>
  got !== undefined && got.length === want.length && want.every((e) => got.includes(e));

/** How many of Services 1..n the status shows with exactly their initial endpoints. */
export function countInitialApplied(applied: Applied, n: number): number {
  let ok = 0;
  for (let s = 1; s <= n; s++) if (same(applied[appliedKey(s)], initialEndpoints(s).map(endpointString))) ok++;
  return ok;
}

/** True when the status shows Service c.service with the changed endpoints, the replaced one gone. */
export function changeApplied(applied: Applied, c: EndpointChange): boolean {
  return same(applied[appliedKey(c.service)], changedEndpoints(c).map(endpointString));
}

export { ENDPOINTS_PER_SERVICE };
