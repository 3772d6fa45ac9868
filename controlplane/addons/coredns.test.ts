/**
 * The cluster DNS addon's objects (addons/coredns.ts): what kubeadm's CoreDNS addon installs, with `nodenet dns`.
 */
import t from 'tap';
import { addonKey, clusterDnsIP, coreDnsObjects, parseDisabled, type AddonObject } from './coredns.js';

type O = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any

const objs = coreDnsObjects({ serviceCIDR: '10.96.0.0/12', command: ['/usr/bin/node', '/opt/nodenet/dist/nodenet.js'] });
const find = (resource: string) => objs.find((o) => o.resource === resource)!.object as O;

t.test('the ClusterIP is the tenth address of the service CIDR, as kubeadm\'s GetDNSIP', async (t) => {
  t.equal(clusterDnsIP('10.96.0.0/12'), '10.96.0.10');
  t.equal(clusterDnsIP('10.43.0.0/16'), '10.43.0.10', 'k3s\'s service CIDR');
  t.equal(clusterDnsIP('192.168.5.0/28'), '192.168.5.10', 'a /28 still has one');
  t.throws(() => clusterDnsIP('192.168.5.0/29'), /no tenth address.*--disable coredns/);
  const k3s = coreDnsObjects({ serviceCIDR: '10.43.0.0/16', command: ['node', 'x.js'] });
  t.equal((k3s.find((o) => o.resource === 'services')!.object as O)['spec'].clusterIP, '10.43.0.10');
});

t.test('the objects, in creation order: the ServiceAccount first, the Deployment last', async (t) => {
  t.same(objs.map((o) => addonKey(o)), [
    'serviceaccounts/kube-system/coredns',
    'clusterroles.rbac.authorization.k8s.io//system:coredns',
    'clusterrolebindings.rbac.authorization.k8s.io//system:coredns',
    'services/kube-system/kube-dns',
    'deployments.apps/kube-system/coredns',
  ]);
  for (const o of objs as AddonObject[]) {
    const m = (o.object as O)['metadata'];
    t.equal(m.name, o.name);
    if (o.namespace) t.equal(m.namespace, o.namespace);
  }
});

t.test('RBAC: list and watch of what the DNS server reads, bound to kube-system:coredns', async (t) => {
  t.same(find('clusterroles')['rules'], [
    { apiGroups: [''], resources: ['endpoints', 'services', 'pods', 'namespaces'], verbs: ['list', 'watch'] },
    { apiGroups: ['discovery.k8s.io'], resources: ['endpointslices'], verbs: ['list', 'watch'] },
  ]);
  const b = find('clusterrolebindings');
  t.same(b['roleRef'], { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'system:coredns' });
  t.same(b['subjects'], [{ kind: 'ServiceAccount', name: 'coredns', namespace: 'kube-system' }]);
});

t.test('the kube-dns Service: kubeadm\'s labels, annotations, selector and three ports', async (t) => {
  const s = find('services');
  t.same(s['metadata'].labels, { 'k8s-app': 'kube-dns', 'kubernetes.io/cluster-service': 'true', 'kubernetes.io/name': 'CoreDNS' });
  t.same(s['metadata'].annotations, { 'prometheus.io/port': '9153', 'prometheus.io/scrape': 'true' });
  t.same(s['spec'].selector, { 'k8s-app': 'kube-dns' });
  t.equal(s['spec'].clusterIP, '10.96.0.10');
  t.same(s['spec'].ports.map((p: O) => [p['name'], p['port'], p['protocol'], p['targetPort']]), [['dns', 53, 'UDP', 53], ['dns-tcp', 53, 'TCP', 53], ['metrics', 9153, 'TCP', 9153]]);
});

t.test('the coredns Deployment: 2 replicas of `nodenet dns`, kubeadm\'s scheduling, probes and requests', async (t) => {
  const d = find('deployments');
  t.same(d['metadata'].labels, { 'k8s-app': 'kube-dns' });
  t.equal(d['spec'].replicas, 2);
  t.same(d['spec'].strategy, { type: 'RollingUpdate', rollingUpdate: { maxUnavailable: 1 } });
  t.same(d['spec'].selector, { matchLabels: { 'k8s-app': 'kube-dns' } });
  const p = d['spec'].template.spec;
  t.same(d['spec'].template.metadata.labels, { 'k8s-app': 'kube-dns' });
  t.equal(p.priorityClassName, 'system-cluster-critical');
  t.equal(p.serviceAccountName, 'coredns');
  t.equal(p.dnsPolicy, 'Default', 'the DNS server does not resolve through itself');
  t.same(p.tolerations, [{ key: 'CriticalAddonsOnly', operator: 'Exists' }, { key: 'node-role.kubernetes.io/control-plane', effect: 'NoSchedule' }]);
  const anti = p.affinity.podAntiAffinity.preferredDuringSchedulingIgnoredDuringExecution;
  t.equal(anti.length, 1);
  t.equal(anti[0].podAffinityTerm.topologyKey, 'kubernetes.io/hostname');
  t.same(anti[0].podAffinityTerm.labelSelector, { matchExpressions: [{ key: 'k8s-app', operator: 'In', values: ['kube-dns'] }] });
  t.equal(p.containers.length, 1);
  const c = p.containers[0];
  t.equal(c.name, 'coredns');
  t.equal(c.image, 'nodenet/host');
  t.same(c.command, ['/usr/bin/node', '/opt/nodenet/dist/nodenet.js', 'dns']);
  t.same(c.args, ['--kubeconfig', 'in-cluster']);
  t.same(c.ports, [{ name: 'dns', containerPort: 53, protocol: 'UDP' }, { name: 'dns-tcp', containerPort: 53, protocol: 'TCP' }, { name: 'metrics', containerPort: 9153, protocol: 'TCP' }]);
  t.same(c.readinessProbe.httpGet, { path: '/ready', port: 8181, scheme: 'HTTP' });
  t.same(c.livenessProbe, { httpGet: { path: '/health', port: 8080, scheme: 'HTTP' }, initialDelaySeconds: 60, timeoutSeconds: 5, successThreshold: 1, failureThreshold: 5 });
  t.same(c.resources, { requests: { cpu: '100m', memory: '70Mi' }, limits: { memory: '300Mi' } });
  t.notOk(c.securityContext, 'none: nodenet\'s kubelet rejects what it cannot honour');
  const withDomain = coreDnsObjects({ serviceCIDR: '10.96.0.0/12', command: ['node', 'x.js'], clusterDomain: 'corp.example' });
  t.same((withDomain.at(-1)!.object as O)['spec'].template.spec.containers[0].args, ['--kubeconfig', 'in-cluster', '--cluster-domain', 'corp.example']);
});

t.test('--disable: repeatable, comma lists, unknown names refused naming the known ones', async (t) => {
  t.same([...parseDisabled([])], []);
  t.same([...parseDisabled(['coredns'])], ['coredns']);
  t.same([...parseDisabled(['coredns,coredns', ' coredns '])], ['coredns']);
  t.throws(() => parseDisabled(['traefik']), /--disable "traefik": not an addon nodenet installs \(it installs coredns\)/);
  t.throws(() => parseDisabled(['coredns,metrics-server']), /"metrics-server"/);
});

t.test('the objects are fresh each call (the caller may not share them)', async (t) => {
  const a = coreDnsObjects({ serviceCIDR: '10.96.0.0/12', command: ['n'] });
  ((a.at(-1)!.object as O)['spec'].template.metadata.labels)['x'] = 'y';
  t.same(find('deployments')['spec'].selector.matchLabels, { 'k8s-app': 'kube-dns' });
  t.notOk(find('deployments')['spec'].template.metadata.labels['x']);
});
