/**
 * controlplane/api/resources: the kinds the embedded API server serves, with
 * what discovery, routing, field selectors and the OpenAPI documents need
 * to know about each. What a kind does on create and update (defaults,
 * validation) lives in controlplane/kinds/.
 */
import type { KObject } from '../store/types.js';

export type Verb = 'get' | 'list' | 'watch' | 'create' | 'update' | 'patch' | 'delete' | 'deletecollection';

export interface Resource {
  readonly group: string;
  readonly version: string;
  /** Plural, lowercase: `services`. */
  readonly resource: string;
  readonly kind: string;
  readonly singular: string;
  readonly namespaced: boolean;
  readonly shortNames: readonly string[];
  readonly categories: readonly string[];
  readonly verbs: readonly Verb[];
  /**
   * Subresources served: `status` (the spec is not written through it, the status only through it),
   * `scale`, a Pod's `binding` (create only: the scheduler's) and its `log` (get only: proxied to the node's kubelet),
   * a ServiceAccount's `token` (create only: TokenRequest).
   */
  readonly subresources: readonly ('status' | 'scale' | 'binding' | 'log' | 'token')[];
  /**
   * A review (SelfSubjectAccessReview, TokenReview, ...): created only, answered from the request and never
   * stored, as upstream's authorization.k8s.io and authentication.k8s.io kinds.
   */
  readonly virtual?: true;
  /** client-node's model name, the root of the kind's schema. */
  readonly model: string;
  /** Fields a field selector may name (metadata.name and metadata.namespace always). */
  readonly fieldSelectors: readonly string[];
  /** The values of those fields for an object. */
  fields(o: KObject): Record<string, string>;
  /** `scale`: where replicas and the selector live. */
  readonly scale?: { readonly specReplicas: readonly string[]; readonly statusReplicas: readonly string[]; readonly selector: readonly string[] };
}

/** `services`, `deployments.apps`: the store's name for a resource. */
export function grOf(r: Pick<Resource, 'group' | 'resource'>): string {
  return r.group ? `${r.resource}.${r.group}` : r.resource;
}

export function apiVersionOf(r: Pick<Resource, 'group' | 'version'>): string {
  return r.group ? `${r.group}/${r.version}` : r.version;
}

type O = Record<string, unknown>;
const at = (o: unknown, ...path: string[]): string => {
  const v = path.reduce<unknown>((x, k) => (x && typeof x === 'object' ? (x as O)[k] : undefined), o);
  return typeof v === 'string' ? v : v === undefined || v === null ? '' : String(v);
};
const metaFields = (o: KObject) => ({ 'metadata.name': at(o, 'metadata', 'name'), 'metadata.namespace': at(o, 'metadata', 'namespace') });

const ALL: readonly Verb[] = ['create', 'delete', 'deletecollection', 'get', 'list', 'patch', 'update', 'watch'];

/** A review kind: create only, never stored (it has no name, no list, no watch). */
function review(group: string, resource: string, kind: string, namespaced: boolean, model: string): Resource {
  return {
    group, version: 'v1', resource, kind, singular: kind.toLowerCase(), namespaced, shortNames: [], categories: [],
    verbs: ['create'], subresources: [], model, fieldSelectors: [], fields: () => ({}), virtual: true,
  };
}

export const RESOURCES: readonly Resource[] = [
  {
    group: '', version: 'v1', resource: 'namespaces', kind: 'Namespace', singular: 'namespace', namespaced: false, shortNames: ['ns'], categories: [],
    verbs: ['create', 'delete', 'get', 'list', 'patch', 'update', 'watch'], subresources: ['status'], model: 'V1Namespace',
    fieldSelectors: ['metadata.name', 'status.phase'], fields: (o) => ({ ...metaFields(o), 'status.phase': at(o, 'status', 'phase') }),
  },
  {
    group: '', version: 'v1', resource: 'nodes', kind: 'Node', singular: 'node', namespaced: false, shortNames: ['no'], categories: [],
    verbs: ALL, subresources: ['status'], model: 'V1Node',
    fieldSelectors: ['metadata.name', 'spec.unschedulable'], fields: (o) => ({ ...metaFields(o), 'spec.unschedulable': at(o, 'spec', 'unschedulable') || 'false' }),
  },
  {
    group: '', version: 'v1', resource: 'pods', kind: 'Pod', singular: 'pod', namespaced: true, shortNames: ['po'], categories: ['all'],
    verbs: ALL, subresources: ['status', 'binding', 'log'], model: 'V1Pod',
    fieldSelectors: ['metadata.name', 'metadata.namespace', 'spec.nodeName', 'spec.restartPolicy', 'spec.schedulerName', 'spec.serviceAccountName', 'spec.hostNetwork', 'status.phase', 'status.podIP', 'status.nominatedNodeName'],
    fields: (o) => ({
      ...metaFields(o),
      'spec.nodeName': at(o, 'spec', 'nodeName'),
      'spec.restartPolicy': at(o, 'spec', 'restartPolicy'),
      'spec.schedulerName': at(o, 'spec', 'schedulerName'),
      'spec.serviceAccountName': at(o, 'spec', 'serviceAccountName'),
      'spec.hostNetwork': at(o, 'spec', 'hostNetwork') || 'false',
      'status.phase': at(o, 'status', 'phase'),
      'status.podIP': at(o, 'status', 'podIP'),
      'status.nominatedNodeName': at(o, 'status', 'nominatedNodeName'),
    }),
  },
  {
    group: '', version: 'v1', resource: 'services', kind: 'Service', singular: 'service', namespaced: true, shortNames: ['svc'], categories: ['all'],
    verbs: ALL, subresources: ['status'], model: 'V1Service',
    fieldSelectors: ['metadata.name', 'metadata.namespace', 'spec.clusterIP', 'spec.type'],
    fields: (o) => ({ ...metaFields(o), 'spec.clusterIP': at(o, 'spec', 'clusterIP'), 'spec.type': at(o, 'spec', 'type') }),
  },
  {
    group: '', version: 'v1', resource: 'events', kind: 'Event', singular: 'event', namespaced: true, shortNames: ['ev'], categories: [],
    verbs: ALL, subresources: [], model: 'CoreV1Event',
    fieldSelectors: ['metadata.name', 'metadata.namespace', 'involvedObject.kind', 'involvedObject.namespace', 'involvedObject.name', 'involvedObject.uid', 'involvedObject.apiVersion', 'involvedObject.resourceVersion', 'involvedObject.fieldPath', 'reason', 'reportingComponent', 'source', 'type'],
    fields: (o) => ({
      ...metaFields(o),
      'involvedObject.kind': at(o, 'involvedObject', 'kind'),
      'involvedObject.namespace': at(o, 'involvedObject', 'namespace'),
      'involvedObject.name': at(o, 'involvedObject', 'name'),
      'involvedObject.uid': at(o, 'involvedObject', 'uid'),
      'involvedObject.apiVersion': at(o, 'involvedObject', 'apiVersion'),
      'involvedObject.resourceVersion': at(o, 'involvedObject', 'resourceVersion'),
      'involvedObject.fieldPath': at(o, 'involvedObject', 'fieldPath'),
      reason: at(o, 'reason'),
      reportingComponent: at(o, 'reportingComponent'),
      source: at(o, 'source', 'component') || at(o, 'reportingComponent'),
      type: at(o, 'type'),
    }),
  },
  {
    group: 'discovery.k8s.io', version: 'v1', resource: 'endpointslices', kind: 'EndpointSlice', singular: 'endpointslice', namespaced: true, shortNames: [], categories: [],
    verbs: ALL, subresources: [], model: 'V1EndpointSlice',
    fieldSelectors: ['metadata.name', 'metadata.namespace'], fields: metaFields,
  },
  {
    group: 'apps', version: 'v1', resource: 'deployments', kind: 'Deployment', singular: 'deployment', namespaced: true, shortNames: ['deploy'], categories: ['all'],
    verbs: ALL, subresources: ['status', 'scale'], model: 'V1Deployment',
    fieldSelectors: ['metadata.name', 'metadata.namespace'], fields: metaFields,
    scale: { specReplicas: ['spec', 'replicas'], statusReplicas: ['status', 'replicas'], selector: ['spec', 'selector'] },
  },
  {
    group: 'apps', version: 'v1', resource: 'replicasets', kind: 'ReplicaSet', singular: 'replicaset', namespaced: true, shortNames: ['rs'], categories: ['all'],
    verbs: ALL, subresources: ['status', 'scale'], model: 'V1ReplicaSet',
    fieldSelectors: ['metadata.name', 'metadata.namespace', 'status.replicas'], fields: (o) => ({ ...metaFields(o), 'status.replicas': at(o, 'status', 'replicas') || '0' }),
    scale: { specReplicas: ['spec', 'replicas'], statusReplicas: ['status', 'replicas'], selector: ['spec', 'selector'] },
  },
  {
    group: 'coordination.k8s.io', version: 'v1', resource: 'leases', kind: 'Lease', singular: 'lease', namespaced: true, shortNames: [], categories: [],
    verbs: ALL, subresources: [], model: 'V1Lease',
    fieldSelectors: ['metadata.name', 'metadata.namespace'], fields: metaFields,
  },
  {
    group: '', version: 'v1', resource: 'configmaps', kind: 'ConfigMap', singular: 'configmap', namespaced: true, shortNames: ['cm'], categories: [],
    verbs: ALL, subresources: [], model: 'V1ConfigMap',
    fieldSelectors: ['metadata.name', 'metadata.namespace'], fields: metaFields,
  },
  {
    group: '', version: 'v1', resource: 'secrets', kind: 'Secret', singular: 'secret', namespaced: true, shortNames: [], categories: [],
    verbs: ALL, subresources: [], model: 'V1Secret',
    fieldSelectors: ['metadata.name', 'metadata.namespace', 'type'], fields: (o) => ({ ...metaFields(o), type: at(o, 'type') }),
  },
  {
    group: '', version: 'v1', resource: 'serviceaccounts', kind: 'ServiceAccount', singular: 'serviceaccount', namespaced: true, shortNames: ['sa'], categories: [],
    verbs: ALL, subresources: ['token'], model: 'V1ServiceAccount',
    fieldSelectors: ['metadata.name', 'metadata.namespace'], fields: metaFields,
  },
  {
    group: '', version: 'v1', resource: 'endpoints', kind: 'Endpoints', singular: 'endpoints', namespaced: true, shortNames: ['ep'], categories: [],
    verbs: ALL, subresources: [], model: 'V1Endpoints',
    fieldSelectors: ['metadata.name', 'metadata.namespace'], fields: metaFields,
  },
  {
    group: '', version: 'v1', resource: 'limitranges', kind: 'LimitRange', singular: 'limitrange', namespaced: true, shortNames: ['limits'], categories: [],
    verbs: ALL, subresources: [], model: 'V1LimitRange',
    fieldSelectors: ['metadata.name', 'metadata.namespace'], fields: metaFields,
  },
  {
    group: '', version: 'v1', resource: 'resourcequotas', kind: 'ResourceQuota', singular: 'resourcequota', namespaced: true, shortNames: ['quota'], categories: [],
    verbs: ALL, subresources: ['status'], model: 'V1ResourceQuota',
    fieldSelectors: ['metadata.name', 'metadata.namespace'], fields: metaFields,
  },
  {
    group: 'rbac.authorization.k8s.io', version: 'v1', resource: 'clusterroles', kind: 'ClusterRole', singular: 'clusterrole', namespaced: false, shortNames: [], categories: [],
    verbs: ALL, subresources: [], model: 'V1ClusterRole',
    fieldSelectors: ['metadata.name'], fields: metaFields,
  },
  {
    group: 'rbac.authorization.k8s.io', version: 'v1', resource: 'clusterrolebindings', kind: 'ClusterRoleBinding', singular: 'clusterrolebinding', namespaced: false, shortNames: [], categories: [],
    verbs: ALL, subresources: [], model: 'V1ClusterRoleBinding',
    fieldSelectors: ['metadata.name'], fields: metaFields,
  },
  {
    group: 'rbac.authorization.k8s.io', version: 'v1', resource: 'roles', kind: 'Role', singular: 'role', namespaced: true, shortNames: [], categories: [],
    verbs: ALL, subresources: [], model: 'V1Role',
    fieldSelectors: ['metadata.name', 'metadata.namespace'], fields: metaFields,
  },
  {
    group: 'rbac.authorization.k8s.io', version: 'v1', resource: 'rolebindings', kind: 'RoleBinding', singular: 'rolebinding', namespaced: true, shortNames: [], categories: [],
    verbs: ALL, subresources: [], model: 'V1RoleBinding',
    fieldSelectors: ['metadata.name', 'metadata.namespace'], fields: metaFields,
  },
  review('authorization.k8s.io', 'selfsubjectaccessreviews', 'SelfSubjectAccessReview', false, 'V1SelfSubjectAccessReview'),
  review('authorization.k8s.io', 'selfsubjectrulesreviews', 'SelfSubjectRulesReview', false, 'V1SelfSubjectRulesReview'),
  review('authorization.k8s.io', 'subjectaccessreviews', 'SubjectAccessReview', false, 'V1SubjectAccessReview'),
  review('authorization.k8s.io', 'localsubjectaccessreviews', 'LocalSubjectAccessReview', true, 'V1LocalSubjectAccessReview'),
  review('authentication.k8s.io', 'selfsubjectreviews', 'SelfSubjectReview', false, 'V1SelfSubjectReview'),
  review('authentication.k8s.io', 'tokenreviews', 'TokenReview', false, 'V1TokenReview'),
  {
    group: 'scheduling.k8s.io', version: 'v1', resource: 'priorityclasses', kind: 'PriorityClass', singular: 'priorityclass', namespaced: false, shortNames: ['pc'], categories: [],
    verbs: ALL, subresources: [], model: 'V1PriorityClass',
    fieldSelectors: ['metadata.name'], fields: metaFields,
  },
  {
    // The ClusterIP allocator's objects (KEP-1880, alloc/service-allocator.ts), one per address a Service holds:
    // served for reading; the allocator alone writes them, in its Service's transaction.
    group: 'networking.k8s.io', version: 'v1', resource: 'ipaddresses', kind: 'IPAddress', singular: 'ipaddress', namespaced: false, shortNames: [], categories: [],
    verbs: ['get', 'list', 'watch'], subresources: [], model: 'V1IPAddress',
    fieldSelectors: ['metadata.name'], fields: metaFields,
  },
];

/** The API groups served, in discovery order, with their versions. */
export function groups(): { name: string; versions: string[] }[] {
  const out: { name: string; versions: string[] }[] = [];
  for (const r of RESOURCES) {
    if (!r.group) continue;
    let g = out.find((x) => x.name === r.group);
    if (!g) out.push((g = { name: r.group, versions: [] }));
    if (!g.versions.includes(r.version)) g.versions.push(r.version);
  }
  return out;
}

export function findResource(group: string, version: string, resource: string): Resource | undefined {
  return RESOURCES.find((r) => r.group === group && r.version === version && r.resource === resource);
}
