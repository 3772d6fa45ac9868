/**
 * controlplane/auth/bootstrap-policy: the ClusterRoles and ClusterRoleBindings the control plane makes at start, with
 * upstream's names and rules (plugin/pkg/auth/authorizer/rbac/bootstrappolicy: policy.go, controller_policy.go and
 * their testdata), trimmed of what no nodenet component serves or runs (CSRs, volumes, CSI, DaemonSets' and Jobs'
 * controllers). The user-facing roles keep upstream's resources whether nodenet serves them or not, so that a role
 * written for a real cluster reads the same here.
 *
 * Every object carries `kubernetes.io/bootstrapping: rbac-defaults` and `rbac.authorization.kubernetes.io/autoupdate:
 * "true"`: at each start the control plane adds back a missing rule or subject to them, unless a user set autoupdate to
 * "false" (kube-apiserver's reconciliation, additive only).
 *
 * Who runs as what (each component its own identity, under the least role, as upstream):
 * - the scheduler: User system:kube-scheduler (system:kube-scheduler);
 * - each controller of the controller manager: ServiceAccount kube-system/<controller> (system:controller:<controller>),
 *   as kube-controller-manager with --use-service-account-credentials;
 * - the API servers' own writes (the `kubernetes` Service and its EndpointSlice, the bootstrap objects): User
 *   system:apiserver in system:masters, upstream's loopback identity;
 * - agents: system:node:<name> in system:nodes, through the Node authorizer (node.ts), before RBAC.
 */
import type { PolicyRule, RoleRef, Subject } from './rbac.js';

export interface BootstrapClusterRole {
  readonly name: string;
  readonly rules: readonly PolicyRule[];
  readonly labels?: Readonly<Record<string, string>>;
  /** clusterRoleSelectors' matchLabels. */
  readonly aggregateFrom?: readonly Readonly<Record<string, string>>[];
}

export interface BootstrapClusterRoleBinding {
  readonly name: string;
  readonly roleRef: RoleRef;
  readonly subjects: readonly Subject[];
}

const READ = ['get', 'list', 'watch'];
const WRITE = ['create', 'delete', 'deletecollection', 'patch', 'update'];
const RW = ['create', 'delete', 'deletecollection', 'get', 'list', 'patch', 'update', 'watch'];
const EVENT_WRITE = ['create', 'patch', 'update'];

const r = (verbs: readonly string[], apiGroups: readonly string[], resources: readonly string[], resourceNames?: readonly string[]): PolicyRule =>
  ({ verbs, apiGroups, resources, ...(resourceNames ? { resourceNames } : {}) });
const url = (verbs: readonly string[], nonResourceURLs: readonly string[]): PolicyRule => ({ verbs, nonResourceURLs });
const events = (): PolicyRule => r(EVENT_WRITE, ['', 'events.k8s.io'], ['events']);

export const AGGREGATE_TO = (role: 'admin' | 'edit' | 'view') => `rbac.authorization.k8s.io/aggregate-to-${role}`;

/** The controllers that run as ServiceAccounts in kube-system, with their roles' rules. */
export const CONTROLLER_ROLES: Readonly<Record<string, readonly PolicyRule[]>> = {
  'clusterrole-aggregation-controller': [r(['escalate', 'get', 'list', 'patch', 'update', 'watch'], ['rbac.authorization.k8s.io'], ['clusterroles'])],
  'deployment-controller': [
    r(['get', 'list', 'update', 'watch'], ['apps', 'extensions'], ['deployments']),
    r(['update'], ['apps', 'extensions'], ['deployments/status']),
    r(['update'], ['apps', 'extensions'], ['deployments/finalizers']),
    r(['create', 'delete', 'get', 'list', 'patch', 'update', 'watch'], ['apps', 'extensions'], ['replicasets']),
    r(['get', 'list', 'update', 'watch'], [''], ['pods']),
    events(),
  ],
  'replicaset-controller': [
    r(['get', 'list', 'update', 'watch'], ['apps', 'extensions'], ['replicasets']),
    r(['update'], ['apps', 'extensions'], ['replicasets/status']),
    r(['update'], ['apps', 'extensions'], ['replicasets/finalizers']),
    // nodenet's controller adopts and releases Pods with an update where upstream's patches.
    r(['create', 'delete', 'list', 'patch', 'update', 'watch'], [''], ['pods']),
    events(),
  ],
  'endpointslice-controller': [
    r(READ, [''], ['services', 'pods', 'nodes']),
    r(['update'], [''], ['services/finalizers']),
    r(['create', 'delete', 'get', 'list', 'update'], ['discovery.k8s.io'], ['endpointslices']),
    events(),
  ],
  'resourcequota-controller': [
    r(['list', 'watch'], ['*'], ['*']),
    r(['update'], [''], ['resourcequotas/status']),
    events(),
  ],
  'endpoint-controller': [
    r(READ, [''], ['services', 'pods']),
    r(['create', 'delete', 'get', 'list', 'update'], [''], ['endpoints']),
    r(['create'], [''], ['endpoints/restricted']),
    events(),
  ],
  'node-controller': [
    r(['delete', 'get', 'list', 'patch', 'update'], [''], ['nodes']),
    r(['patch', 'update'], [''], ['nodes/status']),
    r(['patch', 'update'], [''], ['pods/status']),
    r(['delete', 'list'], [''], ['pods']),
    events(),
  ],
  'node-ipam-controller': [
    r(['get', 'list', 'patch', 'update', 'watch'], [''], ['nodes']),
    r(['patch', 'update'], [''], ['nodes/status']),
    events(),
  ],
  'pod-garbage-collector': [
    r(['delete', 'list', 'watch'], [''], ['pods']),
    r(['get', 'list', 'watch'], [''], ['nodes']),
    // nodenet's pod GC writes the DisruptionTarget condition with an update where upstream's patches.
    r(['patch', 'update'], [''], ['pods/status']),
    events(),
  ],
  'generic-garbage-collector': [r(['delete', 'get', 'list', 'patch', 'update', 'watch'], ['*'], ['*'])],
  'namespace-controller': [
    r(['delete', 'get', 'list', 'watch'], [''], ['namespaces']),
    r(['update'], [''], ['namespaces/finalize', 'namespaces/status']),
    r(['delete', 'deletecollection', 'get', 'list'], ['*'], ['*']),
  ],
  'service-account-controller': [r(['create'], [''], ['serviceaccounts']), events()],
  'root-ca-cert-publisher': [r(['create', 'update'], [''], ['configmaps']), events()],
  'service-controller': [
    r(READ, [''], ['services']),
    r(['patch', 'update'], [''], ['services/status']),
    r(['get', 'list', 'watch'], [''], ['nodes']),
    events(),
  ],
  'event-ttl-controller': [r(['delete', 'list', 'watch'], [''], ['events'])],
};

export const CONTROLLER_ROLE_PREFIX = 'system:controller:';

export const CLUSTER_ROLES: readonly BootstrapClusterRole[] = [
  { name: 'cluster-admin', rules: [r(['*'], ['*'], ['*']), url(['*'], ['*'])] },
  { name: 'admin', rules: [], aggregateFrom: [{ [AGGREGATE_TO('admin')]: 'true' }] },
  { name: 'edit', rules: [], labels: { [AGGREGATE_TO('admin')]: 'true' }, aggregateFrom: [{ [AGGREGATE_TO('edit')]: 'true' }] },
  { name: 'view', rules: [], labels: { [AGGREGATE_TO('edit')]: 'true' }, aggregateFrom: [{ [AGGREGATE_TO('view')]: 'true' }] },
  {
    name: 'system:aggregate-to-admin', labels: { [AGGREGATE_TO('admin')]: 'true' },
    rules: [
      r(['create'], ['authorization.k8s.io'], ['localsubjectaccessreviews']),
      r(RW, ['rbac.authorization.k8s.io'], ['rolebindings', 'roles']),
    ],
  },
  {
    name: 'system:aggregate-to-edit', labels: { [AGGREGATE_TO('edit')]: 'true' },
    rules: [
      r(READ, [''], ['pods/attach', 'pods/exec', 'pods/portforward', 'pods/proxy', 'secrets', 'services/proxy']),
      r(['impersonate'], [''], ['serviceaccounts']),
      r(WRITE, [''], ['pods', 'pods/attach', 'pods/exec', 'pods/portforward', 'pods/proxy']),
      r(['create'], [''], ['pods/eviction']),
      r(WRITE, [''], ['configmaps', 'events', 'persistentvolumeclaims', 'replicationcontrollers', 'replicationcontrollers/scale', 'secrets', 'serviceaccounts', 'services', 'services/proxy']),
      r(['create'], [''], ['serviceaccounts/token']),
      r(WRITE, ['apps'], ['daemonsets', 'deployments', 'deployments/rollback', 'deployments/scale', 'replicasets', 'replicasets/scale', 'statefulsets', 'statefulsets/scale']),
      r(WRITE, ['autoscaling'], ['horizontalpodautoscalers']),
      r(WRITE, ['batch'], ['cronjobs', 'jobs']),
      r(WRITE, ['policy'], ['poddisruptionbudgets']),
      r(WRITE, ['networking.k8s.io'], ['ingresses', 'networkpolicies']),
      r(RW, ['coordination.k8s.io'], ['leases']),
    ],
  },
  {
    name: 'system:aggregate-to-view', labels: { [AGGREGATE_TO('view')]: 'true' },
    rules: [
      r(READ, [''], ['configmaps', 'endpoints', 'persistentvolumeclaims', 'persistentvolumeclaims/status', 'pods', 'replicationcontrollers', 'replicationcontrollers/scale', 'serviceaccounts', 'services', 'services/status']),
      r(READ, [''], ['bindings', 'events', 'limitranges', 'namespaces/status', 'pods/log', 'pods/status', 'replicationcontrollers/status', 'resourcequotas', 'resourcequotas/status']),
      r(READ, [''], ['namespaces']),
      r(READ, ['discovery.k8s.io'], ['endpointslices']),
      r(READ, ['apps'], ['controllerrevisions', 'daemonsets', 'daemonsets/status', 'deployments', 'deployments/scale', 'deployments/status', 'replicasets', 'replicasets/scale', 'replicasets/status', 'statefulsets', 'statefulsets/scale', 'statefulsets/status']),
      r(READ, ['autoscaling'], ['horizontalpodautoscalers', 'horizontalpodautoscalers/status']),
      r(READ, ['batch'], ['cronjobs', 'cronjobs/status', 'jobs', 'jobs/status']),
      r(READ, ['policy'], ['poddisruptionbudgets', 'poddisruptionbudgets/status']),
      r(READ, ['networking.k8s.io'], ['ingresses', 'ingresses/status', 'networkpolicies']),
    ],
  },
  { name: 'system:auth-delegator', rules: [r(['create'], ['authentication.k8s.io'], ['tokenreviews']), r(['create'], ['authorization.k8s.io'], ['subjectaccessreviews'])] },
  {
    name: 'system:basic-user',
    rules: [r(['create'], ['authorization.k8s.io'], ['selfsubjectaccessreviews', 'selfsubjectrulesreviews']), r(['create'], ['authentication.k8s.io'], ['selfsubjectreviews'])],
  },
  { name: 'system:discovery', rules: [url(['get'], ['/api', '/api/*', '/apis', '/apis/*', '/healthz', '/livez', '/openapi', '/openapi/*', '/readyz', '/version', '/version/'])] },
  { name: 'system:public-info-viewer', rules: [url(['get'], ['/healthz', '/livez', '/readyz', '/version', '/version/'])] },
  { name: 'system:monitoring', rules: [url(['get'], ['/healthz', '/healthz/*', '/livez', '/livez/*', '/metrics', '/metrics/slis', '/readyz', '/readyz/*'])] },
  { name: 'system:service-account-issuer-discovery', rules: [url(['get'], ['/.well-known/openid-configuration', '/openid/v1/jwks'])] },
  {
    name: 'system:kube-scheduler',
    rules: [
      events(),
      r(['create'], ['coordination.k8s.io'], ['leases']),
      r(['get', 'update'], ['coordination.k8s.io'], ['leases'], ['kube-scheduler']),
      r(READ, [''], ['nodes']),
      r(['delete', 'get', 'list', 'watch'], [''], ['pods']),
      r(['create'], [''], ['bindings', 'pods/binding']),
      r(['patch', 'update'], [''], ['pods/status']),
      r(READ, [''], ['replicationcontrollers', 'services']),
      r(READ, ['apps', 'extensions'], ['replicasets']),
      r(READ, ['apps'], ['statefulsets']),
      r(READ, ['policy'], ['poddisruptionbudgets']),
      r(READ, [''], ['persistentvolumeclaims', 'persistentvolumes']),
      r(['create'], ['authentication.k8s.io'], ['tokenreviews']),
      r(['create'], ['authorization.k8s.io'], ['subjectaccessreviews']),
      r(READ, [''], ['namespaces']),
    ],
  },
  {
    name: 'system:kube-controller-manager',
    rules: [
      events(),
      r(['create'], ['coordination.k8s.io'], ['leases']),
      r(['get', 'update'], ['coordination.k8s.io'], ['leases'], ['kube-controller-manager']),
      r(['create'], [''], ['secrets', 'serviceaccounts']),
      r(['delete'], [''], ['secrets']),
      r(['get'], [''], ['configmaps', 'namespaces', 'secrets', 'serviceaccounts']),
      r(['update'], [''], ['secrets', 'serviceaccounts']),
      r(['create'], ['authentication.k8s.io'], ['tokenreviews']),
      r(['create'], ['authorization.k8s.io'], ['subjectaccessreviews']),
      r(['list', 'watch'], ['*'], ['*']),
      r(['create'], [''], ['serviceaccounts/token']),
    ],
  },
  {
    name: 'system:node-proxier',
    rules: [r(['list', 'watch'], [''], ['endpoints', 'services']), r(READ, [''], ['nodes']), events(), r(['list', 'watch'], ['discovery.k8s.io'], ['endpointslices'])],
  },
  { name: 'system:kube-dns', rules: [r(['list', 'watch'], [''], ['endpoints', 'services'])] },
  ...Object.entries(CONTROLLER_ROLES).map(([name, rules]) => ({ name: `${CONTROLLER_ROLE_PREFIX}${name}`, rules })),
];

const crb = (name: string, role: string, ...subjects: Subject[]): BootstrapClusterRoleBinding => ({ name, roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: role }, subjects });
const group = (name: string): Subject => ({ apiGroup: 'rbac.authorization.k8s.io', kind: 'Group', name });
const user = (name: string): Subject => ({ apiGroup: 'rbac.authorization.k8s.io', kind: 'User', name });

export const CLUSTER_ROLE_BINDINGS: readonly BootstrapClusterRoleBinding[] = [
  crb('cluster-admin', 'cluster-admin', group('system:masters')),
  crb('system:basic-user', 'system:basic-user', group('system:authenticated')),
  crb('system:discovery', 'system:discovery', group('system:authenticated')),
  crb('system:public-info-viewer', 'system:public-info-viewer', group('system:authenticated'), group('system:unauthenticated')),
  crb('system:monitoring', 'system:monitoring', group('system:monitoring')),
  crb('system:service-account-issuer-discovery', 'system:service-account-issuer-discovery', group('system:serviceaccounts')),
  crb('system:kube-scheduler', 'system:kube-scheduler', user('system:kube-scheduler')),
  crb('system:kube-controller-manager', 'system:kube-controller-manager', user('system:kube-controller-manager')),
  crb('system:node-proxier', 'system:node-proxier', user('system:kube-proxy')),
  crb('system:kube-dns', 'system:kube-dns', { kind: 'ServiceAccount', name: 'kube-dns', namespace: 'kube-system' }),
  ...Object.keys(CONTROLLER_ROLES).map((name) => crb(`${CONTROLLER_ROLE_PREFIX}${name}`, `${CONTROLLER_ROLE_PREFIX}${name}`, { kind: 'ServiceAccount', name, namespace: 'kube-system' })),
];

/** The user a controller of the controller manager runs as. */
export const controllerUser = (controller: string) => ({
  name: `system:serviceaccount:kube-system:${controller}`,
  groups: ['system:serviceaccounts', 'system:serviceaccounts:kube-system', 'system:authenticated'],
});
export const SCHEDULER_USER = { name: 'system:kube-scheduler', groups: ['system:authenticated'] };
/** The controller manager's own identity: its leader election Lease and the Events its controllers record. */
export const CONTROLLER_MANAGER_USER = { name: 'system:kube-controller-manager', groups: ['system:authenticated'] };
export const APISERVER_USER = { name: 'system:apiserver', groups: ['system:masters', 'system:authenticated'] };
