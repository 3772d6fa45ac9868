/**
 * controlplane/addons/coredns: the cluster DNS addon's objects, as kubeadm's CoreDNS addon
 * (cmd/kubeadm/app/phases/addons/dns) and k3s's manifests/coredns.yaml install them, with `nodenet dns` in
 * CoreDNS's place (issue 30). Pure: the objects are built here; the control plane creates them at start
 * (control-plane.ts, createIfAbsent below).
 *
 * What it makes, all ordinary API objects a user sees, edits, scales or deletes with kubectl:
 * - ServiceAccount kube-system/coredns;
 * - ClusterRole system:coredns (list, watch of what the DNS server reads) and its ClusterRoleBinding to that
 *   ServiceAccount. They are addon objects, not bootstrap policy: kubeadm creates them with the addon, and a
 *   cluster started with `--disable coredns` (a user bringing their own DNS) gets neither. The upstream bootstrap
 *   role system:kube-dns (auth/bootstrap-policy.ts) is a different, older one and stays as it is;
 * - Service kube-system/kube-dns on the tenth address of the service CIDR (kubeadm's GetDNSIP), ports 53/UDP,
 *   53/TCP and 9153/TCP (metrics), labels and annotations as kubeadm's;
 * - Deployment kube-system/coredns: 2 replicas of `nodenet dns`, kubeadm's strategy, tolerations, anti-affinity,
 *   probes and requests.
 *
 * Why created if absent, at each start, and never updated: a user's `kubectl scale` or edit must stick (kubeadm
 * re-applies only on `kubeadm upgrade`; k3s re-applies its manifests on restart, overwriting edits, which surprises
 * users). The other side: an object a user deleted comes back at the next start; who wants no cluster DNS, or their
 * own, starts the control plane with `--disable coredns` (k3s's flag), which creates none of these.
 *
 * Differences from CoreDNS's manifests, and why:
 * - no Corefile ConfigMap and no volume: `nodenet dns` takes its settings as flags;
 * - no securityContext (capabilities, read-only root): nodenet's kubelet runs containers as processes and rejects
 *   a Pod with a security context it cannot honour (pods/pod-spec.ts);
 * - image `nodenet/host`, command `node <the nodenet CLI> dns`: nodenet runs processes from the node's filesystem.
 */
import { nthIp, parseCidr } from '../../lib/net/ip.js';

type O = Record<string, unknown>;

/** The names `--disable` accepts (k3s's spelling). */
export const ADDONS = ['coredns'] as const;
export type Addon = (typeof ADDONS)[number];

/** The label CoreDNS's Pods, Deployment and Service carry (kept from kube-dns, so that every tool finds them). */
export const DNS_LABELS = { 'k8s-app': 'kube-dns' } as const;
export const DNS_NAMESPACE = 'kube-system';
export const DNS_SERVICE = 'kube-dns';
export const DNS_DEPLOYMENT = 'coredns';
export const DNS_SERVICE_ACCOUNT = 'coredns';
export const DNS_CLUSTER_ROLE = 'system:coredns';

export interface CoreDnsOptions {
  /** The service CIDR; the Service's ClusterIP is its tenth address. */
  readonly serviceCIDR: string;
  /** The program the Pods run and its first arguments: [node, <the nodenet CLI entry script>]. */
  readonly command: readonly string[];
  /** Given to `nodenet dns --cluster-domain` when set (its default is cluster.local). */
  readonly clusterDomain?: string;
}

/** One addon object, with where it lives in the API (group '' is core). */
export interface AddonObject {
  readonly group: string;
  readonly resource: string;
  readonly namespace: string;
  readonly name: string;
  readonly object: O;
}

/**
 * The cluster DNS Service's address: the tenth of the service CIDR (10.96.0.10 of 10.96.0.0/12), as kubeadm's
 * GetDNSIP. @throws TypeError when the CIDR has no tenth host address (smaller than a /28).
 */
export function clusterDnsIP(serviceCIDR: string): string {
  const c = parseCidr(serviceCIDR);
  // The tenth address must be a host address: below the broadcast address of the CIDR.
  if (2 ** (32 - c.prefix) < 12) throw new TypeError(`service CIDR ${c.cidr} has no tenth address for the cluster DNS Service (at most a /28; or --disable coredns)`);
  return nthIp(c.cidr, 10);
}

const PORTS = [
  { name: 'dns', port: 53, protocol: 'UDP' },
  { name: 'dns-tcp', port: 53, protocol: 'TCP' },
  { name: 'metrics', port: 9153, protocol: 'TCP' },
] as const;

/** The addon's objects, in the order they are created (the Deployment last, once its ServiceAccount exists). */
export function coreDnsObjects(o: CoreDnsOptions): AddonObject[] {
  const ns = DNS_NAMESPACE;
  const clusterIP = clusterDnsIP(o.serviceCIDR);
  const rbac = 'rbac.authorization.k8s.io';
  const args = ['--kubeconfig', 'in-cluster', ...(o.clusterDomain ? ['--cluster-domain', o.clusterDomain] : [])];
  return [
    {
      group: '', resource: 'serviceaccounts', namespace: ns, name: DNS_SERVICE_ACCOUNT,
      object: { apiVersion: 'v1', kind: 'ServiceAccount', metadata: { name: DNS_SERVICE_ACCOUNT, namespace: ns } },
    },
    {
      group: rbac, resource: 'clusterroles', namespace: '', name: DNS_CLUSTER_ROLE,
      object: {
        apiVersion: `${rbac}/v1`, kind: 'ClusterRole', metadata: { name: DNS_CLUSTER_ROLE },
        // What `nodenet dns` lists and watches: Services and their EndpointSlices, Pods (pod records), Namespaces;
        // endpoints as CoreDNS's role still grants it.
        rules: [
          { apiGroups: [''], resources: ['endpoints', 'services', 'pods', 'namespaces'], verbs: ['list', 'watch'] },
          { apiGroups: ['discovery.k8s.io'], resources: ['endpointslices'], verbs: ['list', 'watch'] },
        ],
      },
    },
    {
      group: rbac, resource: 'clusterrolebindings', namespace: '', name: DNS_CLUSTER_ROLE,
      object: {
        apiVersion: `${rbac}/v1`, kind: 'ClusterRoleBinding', metadata: { name: DNS_CLUSTER_ROLE },
        roleRef: { apiGroup: rbac, kind: 'ClusterRole', name: DNS_CLUSTER_ROLE },
        subjects: [{ kind: 'ServiceAccount', name: DNS_SERVICE_ACCOUNT, namespace: ns }],
      },
    },
    {
      group: '', resource: 'services', namespace: ns, name: DNS_SERVICE,
      object: {
        apiVersion: 'v1', kind: 'Service',
        metadata: {
          name: DNS_SERVICE, namespace: ns,
          labels: { ...DNS_LABELS, 'kubernetes.io/cluster-service': 'true', 'kubernetes.io/name': 'CoreDNS' },
          annotations: { 'prometheus.io/port': '9153', 'prometheus.io/scrape': 'true' },
        },
        spec: { type: 'ClusterIP', clusterIP, selector: { ...DNS_LABELS }, ports: PORTS.map((p) => ({ ...p, targetPort: p.port })) },
      },
    },
    {
      group: 'apps', resource: 'deployments', namespace: ns, name: DNS_DEPLOYMENT,
      object: {
        apiVersion: 'apps/v1', kind: 'Deployment',
        metadata: { name: DNS_DEPLOYMENT, namespace: ns, labels: { ...DNS_LABELS } },
        spec: {
          replicas: 2,
          strategy: { type: 'RollingUpdate', rollingUpdate: { maxUnavailable: 1 } },
          selector: { matchLabels: { ...DNS_LABELS } },
          template: {
            metadata: { labels: { ...DNS_LABELS } },
            spec: {
              priorityClassName: 'system-cluster-critical',
              serviceAccountName: DNS_SERVICE_ACCOUNT,
              tolerations: [
                { key: 'CriticalAddonsOnly', operator: 'Exists' },
                { key: 'node-role.kubernetes.io/control-plane', effect: 'NoSchedule' },
              ],
              // Replicas on different nodes where there are several: one node lost keeps DNS answering.
              affinity: {
                podAntiAffinity: {
                  preferredDuringSchedulingIgnoredDuringExecution: [{
                    weight: 100,
                    podAffinityTerm: {
                      labelSelector: { matchExpressions: [{ key: 'k8s-app', operator: 'In', values: ['kube-dns'] }] },
                      topologyKey: 'kubernetes.io/hostname',
                    },
                  }],
                },
              },
              nodeSelector: { 'kubernetes.io/os': 'linux' },
              // The DNS server resolves names outside the cluster through the node's resolvers, not through itself.
              dnsPolicy: 'Default',
              containers: [{
                name: 'coredns',
                image: 'nodenet/host',
                imagePullPolicy: 'IfNotPresent',
                command: [...o.command, 'dns'],
                args,
                ports: PORTS.map((p) => ({ name: p.name, containerPort: p.port, protocol: p.protocol })),
                // kubeadm's requests; its memory limit is 170Mi for CoreDNS, a Go binary of ~20 MiB RSS at rest. A
                // Node.js process starts at ~50-60 MiB RSS and its heap grows with the watched Services,
                // EndpointSlices and Pods before the collector runs: 170Mi would get it OOM-killed in a cluster of
                // a few thousand Services, so the limit is 300Mi.
                resources: { requests: { cpu: '100m', memory: '70Mi' }, limits: { memory: '300Mi' } },
                livenessProbe: {
                  httpGet: { path: '/health', port: 8080, scheme: 'HTTP' },
                  initialDelaySeconds: 60, timeoutSeconds: 5, successThreshold: 1, failureThreshold: 5,
                },
                readinessProbe: { httpGet: { path: '/ready', port: 8181, scheme: 'HTTP' } },
              }],
            },
          },
        },
      },
    },
  ];
}

/** The cache key of an addon object (the store's `<resource>[.<group>]/<namespace>/<name>`). */
export const addonKey = (a: Pick<AddonObject, 'group' | 'resource' | 'namespace' | 'name'>): string =>
  `${a.resource}${a.group ? `.${a.group}` : ''}/${a.namespace}/${a.name}`;

/**
 * The `--disable` names checked (repeatable and comma lists, k3s's): the set of addons turned off.
 * @throws TypeError naming an unknown one and the known ones.
 */
export function parseDisabled(values: readonly string[]): Set<Addon> {
  const out = new Set<Addon>();
  for (const v of values.flatMap((x) => x.split(',')).map((x) => x.trim()).filter(Boolean)) {
    if (!(ADDONS as readonly string[]).includes(v)) throw new TypeError(`--disable ${JSON.stringify(v)}: not an addon nodenet installs (it installs ${ADDONS.join(', ')})`);
    out.add(v as Addon);
  }
  return out;
}
