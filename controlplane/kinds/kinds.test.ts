/**
 * The kinds' strategies on their own (pure): name rules, defaults and validation in
 * kube-apiserver's field-error words, for what rest.test.ts does not already go through the REST
 * layer for: EndpointSlices, Namespaces, core/v1 Events, the fields an update may not change,
 * Pod QoS and which kinds have a generation.
 */
import t, { type Test } from 'tap';
import type { FieldError } from '../api/errors.js';
import { nameProblem, nameProblems, podQOS, quantityNanos, STRATEGIES, validateMeta } from './kinds.js';

type O = Record<string, unknown>;
const S = (gr: string) => STRATEGIES[gr]!;
/** `field: message` of each error, as kubectl prints them. */
const text = (errs: readonly FieldError[]) => errs.map((e) => `${e.field}: ${e.message}`);
const clone = <T>(v: T): T => structuredClone(v);
/** t.match on a list lets extra items through: these must be exactly the listed errors. */
function errorsAre(t: Test, got: readonly string[], want: readonly (string | RegExp)[], msg?: string): void {
  t.equal(got.length, want.length, `${msg ?? 'errors'}: ${JSON.stringify(got)}`);
  if (msg === undefined) t.match(got, want);
  else t.match(got, want, msg);
}

const LABEL = "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')";
const SUBDOMAIN = "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')";

t.test('name rules: Namespaces are DNS labels, Services DNS-1035 labels, most kinds subdomains, core Events path segments', async (t) => {
  t.equal(S('namespaces').nameRule, 'label');
  t.equal(S('services').nameRule, 'dns1035');
  for (const gr of ['pods', 'nodes', 'deployments.apps', 'replicasets.apps', 'endpointslices.discovery.k8s.io', 'leases.coordination.k8s.io']) t.equal(S(gr).nameRule, 'subdomain', gr);
  t.equal(S('events').nameRule, 'path');

  t.same(nameProblems('label', 'kube-system'), []);
  t.same(nameProblems('label', '0abc'), [], 'a label may start with a digit');
  t.same(nameProblems('label', 'team.a'), [LABEL], 'no dots in a namespace name');
  t.same(nameProblems('label', 'Team'), [LABEL]);
  t.same(nameProblems('label', 'a-'), [LABEL]);
  t.same(nameProblems('label', 'a'.repeat(63)), []);
  t.same(nameProblems('label', 'a'.repeat(64)), ['must be no more than 63 characters']);
  t.same(nameProblems('label', `A${'a'.repeat(63)}`), ['must be no more than 63 characters', LABEL], 'both problems, length first, as IsDNS1123Label');
  t.equal(nameProblem('label', `A${'a'.repeat(63)}`), 'must be no more than 63 characters');
  t.equal(nameProblem('label', 'ok'), null);

  t.same(nameProblems('dns1035', '1web'), ["a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')"]);
  t.same(nameProblems('subdomain', 'web.example.com'), []);
  t.same(nameProblems('subdomain', 'my_pod'), [SUBDOMAIN]);
  t.same(nameProblems('subdomain', `${'a'.repeat(250)}.com`), ['must be no more than 253 characters']);

  t.same(nameProblems('path', 'Web_1.17f2a'), [], 'an Event name need not be a DNS name');
  t.same(nameProblems('path', '.'), ["may not be '.'"]);
  t.same(nameProblems('path', '..'), ["may not be '..'"]);
  t.same(nameProblems('path', 'a/b%c'), ["may not contain '/'", "may not contain '%'"]);
});

t.test('metadata: labels, annotations and finalizers', async (t) => {
  t.same(validateMeta({ labels: { app: 'web', 'example.com/tier': 'fe' }, annotations: { 'kubectl.kubernetes.io/last-applied-configuration': '{}' }, finalizers: ['example.com/cleanup', 'kubernetes'] }), []);
  errorsAre(t, text(validateMeta({ labels: { app: 'bad value' } })), [/^metadata\.labels: Invalid value: "bad value": a valid label must be an empty string or consist of alphanumeric characters/]);
  t.same(text(validateMeta({ finalizers: ['ok', 'Bad/x'] })).length, 1);
  t.match(validateMeta({ finalizers: ['ok', 'Bad/x'] })[0], { field: 'metadata.finalizers[1]', reason: 'FieldValueInvalid' }, 'a finalizer is a qualified name');
  t.same(text(validateMeta({ finalizers: ['orphan', 'foregroundDeletion'] })), ['metadata.finalizers: Invalid value: ["orphan","foregroundDeletion"]: finalizer orphan and foregroundDeletion cannot be both set']);
  errorsAre(t, text(validateMeta({ annotations: { big: 'x'.repeat(256 * 1024) } })), ['metadata.annotations: Too long: may not be more than 262144 bytes']);
});

const slice = (extra: O = {}): O => ({
  apiVersion: 'discovery.k8s.io/v1', kind: 'EndpointSlice', metadata: { name: 'web-abc', namespace: 'default', labels: { 'kubernetes.io/service-name': 'web' } },
  addressType: 'IPv4', endpoints: [{ addresses: ['10.244.1.5'], conditions: { ready: true }, nodeName: 'node-1' }], ports: [{ name: 'http', port: 8080, protocol: 'TCP' }],
  ...extra,
});
const esErrs = (o: O, old: O | null = null) => {
  const s = S('endpointslices.discovery.k8s.io');
  const c = clone(o);
  s.defaults(c);
  return text(s.validate(c, old));
};

t.test('EndpointSlice: defaults and a valid slice', async (t) => {
  const o = slice({ ports: [{ port: 80 }] });
  S('endpointslices.discovery.k8s.io').defaults(o);
  t.same(o['ports'], [{ port: 80, name: '', protocol: 'TCP' }], 'name "" and protocol TCP, as SetDefaults_EndpointPort');
  t.same(esErrs(slice()), []);
  t.same(esErrs(slice({ endpoints: [], ports: [] })), [], 'a slice with no endpoints (a Service without ready Pods) is valid');
  t.same(esErrs(slice({ ports: [{ name: 'all' }] })), [], 'a port without a number (every port) is valid');
});

t.test('EndpointSlice: addressType', async (t) => {
  t.same(esErrs(slice({ addressType: undefined })), ['addressType: Required value']);
  t.same(esErrs(slice({ addressType: 'IP' })), ['addressType: Unsupported value: "IP": supported values: "FQDN", "IPv4", "IPv6"']);
  t.same(text(S('endpointslices.discovery.k8s.io').validate(slice({ addressType: 'IPv6', endpoints: [] }), slice())), ['addressType: Invalid value: "IPv6": field is immutable']);
});

t.test('EndpointSlice: endpoints and their addresses', async (t) => {
  t.same(esErrs(slice({ endpoints: [{ addresses: [] }] })), ['endpoints[0].addresses: Required value: must contain at least 1 address']);
  t.same(esErrs(slice({ endpoints: [{ addresses: Array.from({ length: 101 }, (_, i) => `10.0.${i >> 8}.${(i & 255) + 1}`) }] })), ['endpoints[0].addresses: Too many: 101: must have at most 100 items']);
  t.same(esErrs(slice({ endpoints: Array.from({ length: 1001 }, () => ({ addresses: ['10.0.0.1'] })) })), ['endpoints: Too many: 1001: must have at most 1000 items']);
  t.same(esErrs(slice({ endpoints: [{ addresses: ['10.0.0.256'] }] })), ['endpoints[0].addresses[0]: Invalid value: "10.0.0.256": must be a valid IPv4 address', 'endpoints[0].addresses[0]: Invalid value: "10.0.0.256": must be a valid IP address']);
  t.same(esErrs(slice({ endpoints: [{ addresses: ['fd00::1'] }] })), ['endpoints[0].addresses[0]: Invalid value: "fd00::1": must be a valid IPv4 address'], 'an IPv6 address in an IPv4 slice');
  t.same(esErrs(slice({ endpoints: [{ addresses: ['127.0.0.1', '169.254.169.254', '0.0.0.0', '224.0.0.5'] }] })), [
    'endpoints[0].addresses[0]: Invalid value: "127.0.0.1": may not be in the loopback range (127.0.0.0/8, ::1/128)',
    'endpoints[0].addresses[1]: Invalid value: "169.254.169.254": may not be in the link-local range (169.254.0.0/16, fe80::/10)',
    'endpoints[0].addresses[2]: Invalid value: "0.0.0.0": may not be unspecified (0.0.0.0)',
    'endpoints[0].addresses[3]: Invalid value: "224.0.0.5": may not be in the link-local multicast range (224.0.0.0/24, ff02::/10)',
  ]);
  t.same(esErrs(slice({ addressType: 'IPv6', endpoints: [{ addresses: ['fd00::5', '2001:db8::1'] }] })), []);
  t.same(esErrs(slice({ addressType: 'IPv6', endpoints: [{ addresses: ['10.0.0.1', '::1', 'fe80::1'] }] })), [
    'endpoints[0].addresses[0]: Invalid value: "10.0.0.1": must be a valid IPv6 address',
    'endpoints[0].addresses[1]: Invalid value: "::1": may not be in the loopback range (127.0.0.0/8, ::1/128)',
    'endpoints[0].addresses[2]: Invalid value: "fe80::1": may not be in the link-local range (169.254.0.0/16, fe80::/10)',
  ]);
  t.same(esErrs(slice({ addressType: 'FQDN', endpoints: [{ addresses: ['db.example.com', 'db.example.com.'] }] })), []);
  t.same(esErrs(slice({ addressType: 'FQDN', endpoints: [{ addresses: ['localhost', 'Bad_Name.example'] }] })), [
    'endpoints[0].addresses[0]: Invalid value: "localhost": should be a domain with at least two segments separated by dots',
    `endpoints[0].addresses[1]: Invalid value: "Bad_Name.example": ${SUBDOMAIN}`,
  ]);
  t.same(esErrs(slice({ endpoints: [{ addresses: ['10.0.0.1'], nodeName: 'Node_1', hostname: 'web.0' }] })), [
    `endpoints[0].nodeName: Invalid value: "Node_1": ${SUBDOMAIN}`,
    `endpoints[0].hostname: Invalid value: "web.0": ${LABEL}`,
  ]);
});

t.test('EndpointSlice: ports', async (t) => {
  t.same(esErrs(slice({ ports: [{ name: 'http', port: 80 }, { name: 'http', port: 81 }] })), ['ports[1].name: Duplicate value: "http"']);
  t.same(esErrs(slice({ ports: [{ port: 80 }, { port: 81 }] })), ['ports[1].name: Duplicate value: ""'], 'two unnamed ports are two ports named ""');
  t.same(esErrs(slice({ ports: [{ name: 'HTTP', port: 80 }] })), [`ports[0].name: Invalid value: "HTTP": ${LABEL}`]);
  t.same(esErrs(slice({ ports: [{ name: 'x', port: 80, protocol: 'ICMP' }] })), ['ports[0].protocol: Unsupported value: "ICMP": supported values: "SCTP", "TCP", "UDP"']);
  t.same(esErrs(slice({ ports: [{ name: 'x', port: 70000 }] })), ['ports[0].port: Invalid value: 70000: must be between 1 and 65535, inclusive'], 'stricter than upstream: the data plane could not program it');
});

const nsObj = (name: string, extra: O = {}): O => ({ apiVersion: 'v1', kind: 'Namespace', metadata: { name }, ...extra });

t.test('Namespace: the name label, the kubernetes finalizer, spec.finalizers only through finalize', async (t) => {
  const s = S('namespaces');
  const o = nsObj('team-a');
  s.defaults(o);
  s.prepareForCreate!(o);
  t.same(o, { apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'team-a', labels: { 'kubernetes.io/metadata.name': 'team-a' } }, spec: { finalizers: ['kubernetes'] } });
  t.same(s.initialStatus!(o), { phase: 'Active' });
  const custom = nsObj('b', { spec: { finalizers: ['example.com/backup'] } });
  s.prepareForCreate!(custom);
  t.same((custom['spec'] as O)['finalizers'], ['example.com/backup', 'kubernetes'], 'kubernetes is appended');
  const relabel = nsObj('team-a', { metadata: { name: 'team-a', labels: { 'kubernetes.io/metadata.name': 'other' } } });
  s.defaults(relabel);
  t.equal(((relabel['metadata'] as O)['labels'] as O)['kubernetes.io/metadata.name'], 'team-a', 'the name label cannot be changed');
  const upd = nsObj('team-a', { spec: { finalizers: [] } });
  s.prepareForUpdate!(upd, o);
  t.same((upd['spec'] as O)['finalizers'], ['kubernetes'], 'an update keeps the stored spec.finalizers');
  t.same(text(s.validate(nsObj('x', { spec: { finalizers: ['kubernetes', 'example.com/x', 'custom', 'Bad/x'] } }), null)), [
    'spec.finalizers[2]: Invalid value: "custom": name is neither a standard finalizer name nor is it fully qualified',
    ...text([{ reason: 'FieldValueInvalid', field: 'spec.finalizers[3]', message: s.validate(nsObj('x', { spec: { finalizers: ['Bad/x'] } }), null)[0]!.message }]),
  ]);
});

const event = (extra: O = {}, ns = 'default'): O => ({
  apiVersion: 'v1', kind: 'Event', metadata: { name: 'web.17c8a', namespace: ns },
  involvedObject: { kind: 'Pod', namespace: ns, name: 'web' }, reason: 'Started', message: 'Started container web', type: 'Normal', count: 1,
  ...extra,
});

t.test('core/v1 Event: legacy validation only', async (t) => {
  const v = (o: O) => text(S('events').validate(o, null));
  t.same(v(event()), []);
  t.same(v(event({ type: 'Custom', reason: '' })), [], 'type and reason are free text for a core/v1 event without eventTime');
  t.same(v(event({ involvedObject: { kind: 'Node', name: 'n1' } })), [], 'a cluster-scoped object in "default"');
  t.same(v(event({ involvedObject: { kind: 'Node', name: 'n1' } }, 'team-a')), ['involvedObject.namespace: Invalid value: "": does not match event.namespace']);
  t.same(v(event({ involvedObject: { kind: 'Pod', namespace: 'other', name: 'p' } })), ['involvedObject.namespace: Invalid value: "other": does not match event.namespace']);
  t.same(v(event({ involvedObject: undefined })), [], 'involvedObject is a struct upstream: missing is the zero value');
  const fresh = { eventTime: '2024-05-01T10:00:00.000000Z', reportingComponent: 'nodenet/agent', reportingInstance: 'node-1', action: 'Sync', reason: 'Synced' };
  t.same(v(event(fresh)), [], 'a new-style event with who and what');
  errorsAre(t, v(event({ ...fresh, reportingComponent: '', reportingInstance: '', action: '', reason: '' })), [
    'reportingComponent: Required value',
    /^reportingComponent: Invalid value: "": name part must be non-empty/, // ValidateQualifiedName("") too, as upstream
    'reportingInstance: Required value',
    'action: Required value',
    'reason: Required value',
  ]);
  errorsAre(t, v(event({ ...fresh, reportingComponent: 'not a name' })), [/^reportingComponent: Invalid value: "not a name": name part must consist of/]);
  t.same(v(event({ ...fresh, action: 'x'.repeat(129), message: 'm'.repeat(1025) })), ['action: Invalid value: "": can have at most 128 characters', 'message: Invalid value: "": can have at most 1024 characters']);
  t.same(v(event({ ...fresh, involvedObject: { kind: 'Node', name: 'n1' } }, 'kube-system')), [], 'new-style events about cluster-scoped objects may live in kube-system');
  t.equal(S('events').allowCreateOnUpdate, true, 'a PUT of a missing Event creates it');
});

const svc = (spec: O): O => ({ apiVersion: 'v1', kind: 'Service', metadata: { name: 'web', namespace: 'default' }, spec: { ports: [{ port: 80 }], ...spec } });
function prepared(o: O, old: O | null): O {
  const s = S('services');
  const c = clone(o);
  s.defaults(c);
  if (old) s.prepareForUpdate!(c, old);
  return c;
}

t.test('Service: clusterIP and clusterIPs are linked, and may not change once set', async (t) => {
  const s = S('services');
  const created = prepared(svc({ clusterIP: '10.96.0.10' }), null);
  t.same((created['spec'] as O)['clusterIPs'], ['10.96.0.10'], 'an old client setting only clusterIP gets clusterIPs');
  t.same(text(s.validate(created, null)), []);

  const kept = prepared(svc({}), created);
  t.equal((kept['spec'] as O)['clusterIP'], '10.96.0.10', 'an update without the IPs keeps them (kubectl replace)');
  t.same((kept['spec'] as O)['clusterIPs'], ['10.96.0.10']);
  t.same(text(s.validate(kept, created)), []);

  const changed = prepared(svc({ clusterIP: '10.96.0.11', clusterIPs: ['10.96.0.10'] }), created);
  t.same(text(s.validate(changed, created)), ['spec.clusterIPs[0]: Invalid value: ["10.96.0.11"]: may not change once set'], 'the plural follows the singular, and is refused');
  const plural = prepared(svc({ clusterIP: '10.96.0.10', clusterIPs: ['10.96.0.12'] }), created);
  t.same(text(s.validate(plural, created)), [
    'spec.clusterIPs[0]: Invalid value: ["10.96.0.12"]: may not change once set',
    'spec.clusterIPs: Invalid value: ["10.96.0.12"]: first value must match `clusterIP`',
  ], 'the update rules first, as ValidateServiceUpdate');
  const cleared = prepared(svc({ clusterIP: '10.96.0.10', clusterIPs: [] }), created);
  t.same((cleared['spec'] as O)['clusterIPs'], ['10.96.0.10'], 'clusterIPs dropped by an old client with the same clusterIP: kept');

  const headless = prepared(svc({ clusterIP: 'None' }), null);
  t.same((headless['spec'] as O)['clusterIPs'], ['None']);
  t.same(text(s.validate(prepared(svc({ clusterIP: 'None' }), headless), headless)), []);
  const toExternal = prepared({ ...svc({ type: 'ExternalName', externalName: 'db.example.com', clusterIP: '' }), spec: { type: 'ExternalName', externalName: 'db.example.com' } }, created);
  t.same(text(s.validate(toExternal, created)), [], 'a change to ExternalName drops the IPs');
});

t.test('Service: validation in upstream words', async (t) => {
  const v = (spec: O) => text(S('services').validate(prepared(svc(spec), null), null));
  t.same(v({ ports: [] }), ['spec.ports: Required value']);
  t.same(v({ clusterIP: 'None', ports: [] }), [], 'a headless Service needs no ports');
  t.same(v({ ports: [{ port: 80 }, { port: 443 }] }), ['spec.ports[0].name: Required value', 'spec.ports[1].name: Required value']);
  t.same(v({ ports: [{ name: 'a', port: 80 }, { name: 'a', port: 80 }] }), ['spec.ports[1].name: Duplicate value: "a"', 'spec.ports[1]: Duplicate value: {"port":80,"protocol":"TCP"}']);
  t.same(v({ ports: [{ port: 0 }] }), ['spec.ports[0].port: Invalid value: 0: must be between 1 and 65535, inclusive', 'spec.ports[0].targetPort: Invalid value: 0: must be between 1 and 65535, inclusive'], 'IsValidPortNum only, as upstream (a container port of 0 is "Required"); the targetPort defaulted from it too');
  t.same(v({ ports: [{ port: 80, targetPort: 'HTTP' }] }), ['spec.ports[0].targetPort: Invalid value: "HTTP": must contain only alpha-numeric characters (a-z, 0-9), and hyphens (-)', 'spec.ports[0].targetPort: Invalid value: "HTTP": must contain at least one letter (a-z)'], 'every problem IsValidPortName finds');
  t.same(v({ ports: [{ port: 80, protocol: 'ICMP' }] }), ['spec.ports[0].protocol: Unsupported value: "ICMP": supported values: "SCTP", "TCP", "UDP"']);
  t.same(v({ ports: [{ port: 80, nodePort: 30080 }] }), ["spec.ports[0].nodePort: Forbidden: may not be used when `type` is 'ClusterIP'"]);
  t.same(v({ type: 'Balanced' }), ['spec.type: Unsupported value: "Balanced": supported values: "ClusterIP", "ExternalName", "LoadBalancer", "NodePort"']);
  t.same(v({ type: 'ExternalName' }), ['spec.externalName: Required value']);
  t.same(v({ clusterIP: '10.96.0.300' }), ['spec.clusterIPs[0]: Invalid value: "10.96.0.300": must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)'], 'checked in the plural field, which follows the singular');
  t.same(v({ sessionAffinity: 'Sticky' }), ['spec.sessionAffinity: Unsupported value: "Sticky": supported values: "ClientIP", "None"']);
});

const deploy = (spec: O = {}): O => ({
  apiVersion: 'apps/v1', kind: 'Deployment', metadata: { name: 'web', namespace: 'default' },
  spec: { selector: { matchLabels: { app: 'web' } }, template: { metadata: { labels: { app: 'web', tier: 'fe' } }, spec: { containers: [{ name: 'web', image: 'nginx' }] } }, ...spec },
});
function deployErrs(o: O, old: O | null = null, gr = 'deployments.apps'): string[] {
  const s = S(gr);
  const c = clone(o);
  s.defaults(c);
  return text(s.validate(c, old));
}

t.test('Deployment and ReplicaSet: selector and template, the selector immutable in apps/v1', async (t) => {
  const stored = clone(deploy());
  S('deployments.apps').defaults(stored);
  t.same(deployErrs(deploy()), []);
  t.same(deployErrs(deploy({ selector: { matchLabels: { tier: 'fe', app: 'web' } } }), stored), ['spec.selector: Invalid value: {"matchLabels":{"tier":"fe","app":"web"}}: field is immutable']);
  t.same(deployErrs(deploy({ selector: { matchLabels: { app: 'web' } }, replicas: 5 }), stored), [], 'the same selector (another key order is the same map) with another spec');
  const reordered = clone(stored);
  ((reordered['spec'] as O)['selector'] as O) = { matchLabels: { app: 'web' } };
  t.same(deployErrs(reordered, stored), []);
  t.same(deployErrs(deploy({ selector: undefined })), ['spec.selector: Required value', 'spec.template.metadata.labels: Invalid value: {"app":"web","tier":"fe"}: `selector` does not match template `labels`'], 'a nil selector selects nothing');
  t.same(deployErrs(deploy({ selector: {} })), ['spec.selector: Invalid value: {}: empty selector is invalid for deployment']);
  t.same(deployErrs(deploy({ selector: { matchLabels: { app: 'api' } } })), ['spec.template.metadata.labels: Invalid value: {"app":"web","tier":"fe"}: `selector` does not match template `labels`']);
  t.same(deployErrs(deploy({ selector: { matchLabels: { app: 'web' }, matchExpressions: [{ key: 'tier', operator: 'In', values: ['be'] }] } })), ['spec.template.metadata.labels: Invalid value: {"app":"web","tier":"fe"}: `selector` does not match template `labels`'], 'matchExpressions count too');
  t.same(deployErrs(deploy({ selector: { matchExpressions: [{ key: 'tier', operator: 'Exists' }] } })), []);
  t.same(deployErrs(deploy({ replicas: -1 })), ['spec.replicas: Invalid value: -1: must be greater than or equal to 0']);
  t.same(deployErrs(deploy({ strategy: { type: 'Recreate', rollingUpdate: { maxSurge: 1 } } })), ["spec.strategy.rollingUpdate: Forbidden: may not be specified when strategy `type` is 'Recreate'"]);
  t.same(deployErrs(deploy({ strategy: { type: 'RollingUpdate', rollingUpdate: { maxSurge: 0, maxUnavailable: '0%' } } })), ['spec.strategy.rollingUpdate.maxUnavailable: Invalid value: "0%": may not be 0 when `maxSurge` is 0']);
  t.same(deployErrs(deploy({ strategy: { type: 'Canary' } })), ['spec.strategy: Unsupported value: {"type":"Canary"}: supported values: "Recreate", "RollingUpdate"'], 'upstream names the whole strategy');
  const tpl = deploy();
  (((tpl['spec'] as O)['template'] as O)['spec'] as O)['restartPolicy'] = 'Never';
  t.same(deployErrs(tpl), ['spec.template.spec.restartPolicy: Unsupported value: "Never": supported values: "Always"']);

  const rs: O = { ...deploy(), kind: 'ReplicaSet', metadata: { name: 'web-1', namespace: 'default' } };
  const rsStored = clone(rs);
  S('replicasets.apps').defaults(rsStored);
  t.same(deployErrs(rs, null, 'replicasets.apps'), []);
  t.same(deployErrs({ ...rs, spec: { ...(rs['spec'] as O), selector: { matchLabels: { app: 'web', tier: 'fe' } } } }, rsStored, 'replicasets.apps'), ['spec.selector: Invalid value: {"matchLabels":{"app":"web","tier":"fe"}}: field is immutable']);
});

t.test('Pod: the spec may change only in the images (and a few fields)', async (t) => {
  const s = S('pods');
  const pod = (c: O = {}, spec: O = {}): O => ({ apiVersion: 'v1', kind: 'Pod', metadata: { name: 'p', namespace: 'default' }, spec: { containers: [{ name: 'web', image: 'nginx:1.25', ...c }], ...spec } });
  const stored = clone(pod());
  s.defaults(stored);
  const next = (o: O) => {
    const c = clone(o);
    s.defaults(c);
    return text(s.validate(c, stored));
  };
  t.same(next(pod({ image: 'nginx:1.26', imagePullPolicy: 'IfNotPresent' })), [], 'a new image');
  t.same(next(pod({}, { activeDeadlineSeconds: 30, tolerations: [{ key: 'k', operator: 'Exists' }] })), []);
  errorsAre(t, next(pod({ ports: [{ containerPort: 80 }] })), [/^spec: Forbidden: pod updates may not change fields other than `spec.containers\[\*\]\.image`/]);
  t.same(next(pod({}, { nodeName: 'node-1' })), [], 'binding: the node may be set once');
  const bound = clone(pod({}, { nodeName: 'node-1' }));
  s.defaults(bound);
  const moved = clone(pod({}, { nodeName: 'node-2' }));
  s.defaults(moved);
  errorsAre(t, text(s.validate(moved, bound)), [/^spec: Forbidden/], 'not moved once bound');
  const bad = pod({ name: '', image: ' ' }, { restartPolicy: 'Sometimes', dnsPolicy: 'Custom' });
  s.defaults(bad);
  t.same(text(s.validate(bad, null)), [
    'spec.containers[0].name: Required value',
    'spec.restartPolicy: Unsupported value: "Sometimes": supported values: "Always", "OnFailure", "Never"',
    'spec.dnsPolicy: Unsupported value: "Custom": supported values: "ClusterFirstWithHostNet", "ClusterFirst", "Default", "None"',
    'spec.containers[0].image: Invalid value: " ": must not have leading or trailing whitespace',
  ], 'an image of " " is not missing (templates may have one), but a Pod\'s may not be padded');
});

t.test('Pod: requests default to limits, and the QoS class is computed as kube-apiserver does', async (t) => {
  t.equal(quantityNanos('100m'), 100_000_000n);
  t.equal(quantityNanos('0.1'), quantityNanos('100m'));
  t.equal(quantityNanos('1Gi'), quantityNanos('1024Mi'));
  t.equal(quantityNanos('1G'), 1_000_000_000n * 1_000_000_000n);
  t.equal(quantityNanos('1e3'), quantityNanos('1k'));
  t.equal(quantityNanos(2), quantityNanos('2'));
  t.equal(quantityNanos('1.5n'), 2n, 'below a nano-unit rounds up');
  t.equal(quantityNanos('lots'), null);

  const s = S('pods');
  const pod = (...resources: O[]): O => ({ metadata: { name: 'p' }, spec: { containers: resources.map((r, i) => ({ name: `c${i}`, image: 'x', resources: r })) } });
  const qos = (o: O) => {
    const c = clone(o);
    s.defaults(c);
    return (s.initialStatus!(c) as O)['qosClass'];
  };
  const o = pod({ limits: { cpu: '500m', memory: '128Mi' } });
  s.defaults(o);
  t.same(((o['spec'] as O)['containers'] as O[])[0]!['resources'], { limits: { cpu: '500m', memory: '128Mi' }, requests: { cpu: '500m', memory: '128Mi' } }, 'SetDefaults_Pod');
  t.equal(qos(pod({})), 'BestEffort');
  t.equal(qos(pod({ limits: { cpu: '500m', memory: '128Mi' } })), 'Guaranteed', 'limits alone: requests default to them');
  t.equal(qos(pod({ requests: { cpu: '0.5', memory: '134217728' }, limits: { cpu: '500m', memory: '128Mi' } })), 'Guaranteed', 'the same amounts written differently');
  t.equal(qos(pod({ requests: { cpu: '250m' }, limits: { cpu: '500m', memory: '128Mi' } })), 'Burstable');
  t.equal(qos(pod({ limits: { cpu: '1' } })), 'Burstable', 'no memory limit');
  t.equal(qos(pod({ limits: { cpu: '1', memory: '1Gi' } }, {})), 'Burstable', 'one container without limits');
  t.equal(qos(pod({ requests: { 'example.com/gpu': '1' } })), 'BestEffort', 'only cpu and memory count');
  t.same(s.initialStatus!(pod({})), { phase: 'Pending', qosClass: 'BestEffort' });
  t.equal(podQOS({ containers: [{ resources: { requests: { cpu: '0' } } }] }), 'BestEffort', 'a zero request is none');
});

t.test('defaults of templates and of Pods', async (t) => {
  const d = deploy();
  S('deployments.apps').defaults(d);
  t.same(d['spec'], {
    selector: { matchLabels: { app: 'web' } },
    template: {
      metadata: { labels: { app: 'web', tier: 'fe' } },
      spec: {
        containers: [{ name: 'web', image: 'nginx', terminationMessagePath: '/dev/termination-log', terminationMessagePolicy: 'File', imagePullPolicy: 'Always', resources: {} }],
        restartPolicy: 'Always', dnsPolicy: 'ClusterFirst', schedulerName: 'default-scheduler', terminationGracePeriodSeconds: 30, securityContext: {}, enableServiceLinks: true,
      },
    },
    replicas: 1,
    strategy: { type: 'RollingUpdate', rollingUpdate: { maxUnavailable: '25%', maxSurge: '25%' } },
    revisionHistoryLimit: 10,
    progressDeadlineSeconds: 600,
  });
  const r = deploy({ strategy: { type: 'Recreate' } });
  S('deployments.apps').defaults(r);
  t.same((r['spec'] as O)['strategy'], { type: 'Recreate' }, 'no rollingUpdate for Recreate');
  const pull = (image: string) => {
    const p: O = { spec: { containers: [{ name: 'c', image }] } };
    S('pods').defaults(p);
    return (((p['spec'] as O)['containers'] as O[])[0]!)['imagePullPolicy'];
  };
  t.equal(pull('nginx'), 'Always');
  t.equal(pull('nginx:latest'), 'Always');
  t.equal(pull('nginx:1.25'), 'IfNotPresent');
  t.equal(pull('registry:5000/nginx'), 'Always', 'a registry port is not a tag');
  t.equal(pull('nginx@sha256:abc'), 'IfNotPresent');
});

t.test('which kinds have a generation, and what moves it', async (t) => {
  for (const gr of ['services', 'namespaces', 'nodes', 'events', 'leases.coordination.k8s.io']) t.equal(S(gr).bumpsGeneration, undefined, `${gr}: none`);
  const d = S('deployments.apps').bumpsGeneration!;
  const base = deploy();
  t.equal(d(clone(base), base), false);
  t.equal(d(deploy({ replicas: 3 }), base), true, 'spec');
  t.equal(d({ ...base, metadata: { ...(base['metadata'] as O), labels: { a: 'b' } } }, base), false, 'labels do not');
  t.equal(d({ ...base, metadata: { ...(base['metadata'] as O), annotations: { a: 'b' } } }, base), true, 'annotations do (copied to the ReplicaSets)');
  t.equal(d({ ...base, metadata: { ...(base['metadata'] as O), annotations: {} } }, base), false, 'no annotations and empty annotations are the same');
  t.equal(d({ ...base, status: { replicas: 3 } }, base), false, 'status does not');
  const rs = S('replicasets.apps').bumpsGeneration!;
  t.equal(rs({ ...base, metadata: { ...(base['metadata'] as O), annotations: { a: 'b' } } }, base), false, 'a ReplicaSet counts only its spec');
  const es = S('endpointslices.discovery.k8s.io').bumpsGeneration!;
  const e = slice();
  t.equal(es(slice({ endpoints: [] }), e), true, 'endpoints');
  t.equal(es({ ...e, metadata: { ...(e['metadata'] as O), labels: { x: 'y' } } }, e), true, 'labels too');
  t.equal(es({ ...e, metadata: { ...(e['metadata'] as O), annotations: { x: 'y' } } }, e), false);
  t.ok(S('pods').bumpsGeneration, 'Pods count spec changes');
});
