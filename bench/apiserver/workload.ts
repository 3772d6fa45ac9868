/**
 * bench/apiserver/workload: the objects the bench writes, and where. Pure.
 *
 * Everything timed goes to the `default` namespace (warm-up writes to
 * `bench-warmup`). Names carry the phase
 * (`load-`, `c16-`, `p200-`, `w100-`, ...) so no two writes of a run collide.
 * Services have no clusterIP (this server allocates none) and one port;
 * EndpointSlices have one endpoint and one port and name their Service in
 * the kubernetes.io/service-name label, as the EndpointSlice controller does.
 */

export const NAMESPACE = 'default';
export const SERVICES_PATH = `/api/v1/namespaces/${NAMESPACE}/services`;
/** Warm-up writes go here, so `default` holds exactly what the lists expect. */
export const WARMUP_NAMESPACE = 'bench-warmup';
export const WARMUP_SERVICES_PATH = `/api/v1/namespaces/${WARMUP_NAMESPACE}/services`;
export const SLICES_PATH = `/apis/discovery.k8s.io/v1/namespaces/${NAMESPACE}/endpointslices`;

export interface ServiceObject {
  readonly apiVersion: 'v1';
  readonly kind: 'Service';
  readonly metadata: { readonly name: string };
  readonly spec: { readonly ports: readonly { readonly port: number }[] };
}

export interface EndpointSliceObject {
  readonly apiVersion: 'discovery.k8s.io/v1';
  readonly kind: 'EndpointSlice';
  readonly metadata: { readonly name: string; readonly labels: Readonly<Record<string, string>> };
  readonly addressType: 'IPv4';
  readonly endpoints: readonly { readonly addresses: readonly string[] }[];
  readonly ports: readonly { readonly name: string; readonly port: number; readonly protocol: 'TCP' }[];
}

export function namespace(name: string): { apiVersion: 'v1'; kind: 'Namespace'; metadata: { name: string } } {
  return { apiVersion: 'v1', kind: 'Namespace', metadata: { name } };
}

export function service(name: string): ServiceObject {
  return { apiVersion: 'v1', kind: 'Service', metadata: { name }, spec: { ports: [{ port: 80 }] } };
}

/** Pod IP of endpoint i (0-based): 10.244.<1 + i/250>.<2 + i%250>, unique for i < 63,750. */
export function podIP(i: number): string {
  if (!Number.isInteger(i) || i < 0 || i >= 255 * 250) throw new RangeError(`podIP: index ${i} outside 0..${255 * 250 - 1}`);
  return `10.244.${1 + Math.floor(i / 250)}.${2 + (i % 250)}`;
}

export function endpointSlice(name: string, serviceName: string, i: number): EndpointSliceObject {
  return {
    apiVersion: 'discovery.k8s.io/v1',
    kind: 'EndpointSlice',
    metadata: { name, labels: { 'kubernetes.io/service-name': serviceName } },
    addressType: 'IPv4',
    endpoints: [{ addresses: [podIP(i)] }],
    ports: [{ name: 'http', port: 8080, protocol: 'TCP' }],
  };
}

/** Load phase: Service i (0-based) of `services`, zero-padded so names sort as numbers. */
export function loadServiceName(i: number): string {
  return `load-svc-${String(i).padStart(5, '0')}`;
}

/** Load phase: slice i belongs to Service i mod services (two slices per Service at 10,000 / 20,000). */
export function loadSlice(i: number, services: number): EndpointSliceObject {
  return endpointSlice(`load-eps-${String(i).padStart(5, '0')}`, loadServiceName(i % services), i);
}

/**
 * Whether an object is one the load made (`load-svc-...`, `load-eps-...`): whatever else is in `default` is the
 * server's own (the `kubernetes` Service and, once the API servers' lease reconciler has run, its EndpointSlice).
 */
export function isLoadObject(name: string | undefined): boolean {
  return name !== undefined && /^load-(svc|eps)-\d{5}$/.test(name);
}
