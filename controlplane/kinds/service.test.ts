/**
 * The Service strategy on its own (pure): SetDefaults_Service, PrepareForUpdate and
 * ValidateService(Update) in kube-apiserver's field-error words, one case per rule a client can
 * reach by create, update or patch (the REST path is service-api.test.ts).
 */
import t from 'tap';
import type { FieldError } from '../api/errors.js';
import { STRATEGIES } from './kinds.js';

type O = Record<string, unknown>;
const S = STRATEGIES['services']!;
const text = (errs: readonly FieldError[]) => errs.map((e) => `${e.field}: ${e.message}`);
const svc = (spec: O, meta: O = {}): O => ({ apiVersion: 'v1', kind: 'Service', metadata: { name: 'web', namespace: 'default', ...meta }, spec: { ports: [{ port: 80 }], ...spec } });
/** Defaulted as the API does on create. */
function created(spec: O, meta: O = {}): O {
  const o = structuredClone(svc(spec, meta));
  S.defaults(o);
  return o;
}
/** The object an update stores: defaults, then PrepareForUpdate against the stored one. */
function updated(spec: O, old: O, meta: O = {}): O {
  const o = structuredClone(svc(spec, meta));
  S.defaults(o);
  S.prepareForUpdate!(o, old);
  return o;
}
const v = (spec: O, meta: O = {}) => text(S.validate(created(spec, meta), null));
const specOf = (o: O) => o['spec'] as O;

t.test('session affinity: the config exists only with ClientIP, defaulted to 10800 s, its timeout 1..86400', async (t) => {
  t.same(specOf(created({ sessionAffinity: 'ClientIP' }))['sessionAffinityConfig'], { clientIP: { timeoutSeconds: 10800 } });
  t.same(specOf(created({ sessionAffinity: 'ClientIP', sessionAffinityConfig: { clientIP: {} } }))['sessionAffinityConfig'], { clientIP: { timeoutSeconds: 10800 } }, 'a config without a timeout is replaced by the default');
  t.same(specOf(created({ sessionAffinity: 'ClientIP', sessionAffinityConfig: { clientIP: { timeoutSeconds: 60 } } }))['sessionAffinityConfig'], { clientIP: { timeoutSeconds: 60 } });
  t.notOk('sessionAffinityConfig' in specOf(created({ sessionAffinity: 'None', sessionAffinityConfig: { clientIP: { timeoutSeconds: 60 } } })), 'None: SetDefaults_Service drops the config');
  t.equal(specOf(created({ sessionAffinity: '' }))['sessionAffinity'], 'None', 'empty is unset');

  // The case: the stored Service has the defaulted config; the patch sets None.
  const stored = created({ sessionAffinity: 'ClientIP' });
  const patched = structuredClone(stored);
  specOf(patched)['sessionAffinity'] = 'None';
  S.defaults(patched);
  S.prepareForUpdate!(patched, stored);
  t.notOk('sessionAffinityConfig' in specOf(patched));
  t.same(text(S.validate(patched, stored)), []);

  // What validation says of objects the defaults never let through (upstream's rules, kept for any other writer).
  const raw = (spec: O) => text(S.validate({ ...svc({ clusterIP: '10.96.0.5', clusterIPs: ['10.96.0.5'], ipFamilies: ['IPv4'], ipFamilyPolicy: 'SingleStack', type: 'ClusterIP', internalTrafficPolicy: 'Cluster', ports: [{ port: 80, protocol: 'TCP', targetPort: 80 }], ...spec }) }, null));
  t.same(raw({ sessionAffinity: 'None', sessionAffinityConfig: { clientIP: { timeoutSeconds: 10800 } } }), ['spec.sessionAffinityConfig: Forbidden: must not be set when session affinity is None']);
  t.same(raw({ sessionAffinity: 'ClientIP' }), ['spec.sessionAffinityConfig: Required value: when session affinity type is ClientIP']);
  t.same(raw({ sessionAffinity: 'ClientIP', sessionAffinityConfig: {} }), ['spec.sessionAffinityConfig.clientIP: Required value: when session affinity type is ClientIP']);
  t.same(raw({ sessionAffinity: 'ClientIP', sessionAffinityConfig: { clientIP: {} } }), ['spec.sessionAffinityConfig.clientIP.timeoutSeconds: Required value: when session affinity type is ClientIP']);
  t.same(raw({}), ['spec.sessionAffinity: Required value']);

  t.same(v({ sessionAffinity: 'ClientIP', sessionAffinityConfig: { clientIP: { timeoutSeconds: 0 } } }), ['spec.sessionAffinityConfig.clientIP.timeoutSeconds: Invalid value: 0: must be greater than 0 and less than 86400']);
  t.same(v({ sessionAffinity: 'ClientIP', sessionAffinityConfig: { clientIP: { timeoutSeconds: 86401 } } }), ['spec.sessionAffinityConfig.clientIP.timeoutSeconds: Invalid value: 86401: must be greater than 0 and less than 86400']);
  t.same(v({ sessionAffinity: 'ClientIP', sessionAffinityConfig: { clientIP: { timeoutSeconds: 86400 } } }), [], 'the maximum itself');
  t.same(v({ sessionAffinity: 'ClientIP', sessionAffinityConfig: { clientIP: { timeoutSeconds: 1 } } }), []);
});

t.test('defaults: empty strings are unset; externalTrafficPolicy for every externally accessible Service', async (t) => {
  const s = specOf(created({ type: '', ports: [{ port: 80, protocol: '' }] }));
  t.equal(s['type'], 'ClusterIP');
  t.equal((s['ports'] as O[])[0]!['protocol'], 'TCP');
  t.equal(specOf(created({ externalIPs: ['192.0.2.7'] }))['externalTrafficPolicy'], 'Cluster', 'a ClusterIP Service with externalIPs is externally accessible');
  t.notOk('externalTrafficPolicy' in specOf(created({})));
  t.equal(specOf(created({ type: 'NodePort', externalTrafficPolicy: '' }))['externalTrafficPolicy'], 'Cluster');
  const en = specOf(created({ type: 'ExternalName', externalName: 'db.example.com' }));
  for (const k of ['internalTrafficPolicy', 'ipFamilies', 'ipFamilyPolicy']) t.notOk(k in en, `no ${k} for ExternalName`);
});

t.test('ports: names, numbers, protocols, targetPorts, appProtocol, duplicates', async (t) => {
  t.same(v({ ports: [{ name: 'a'.repeat(64), port: 80 }] }), ['spec.ports[0].name: Invalid value: "' + 'a'.repeat(64) + '": must be no more than 63 characters']);
  t.same(v({ ports: [{ port: 80, targetPort: 'a--b' }] }), ['spec.ports[0].targetPort: Invalid value: "a--b": must not contain consecutive hyphens']);
  t.same(v({ ports: [{ port: 80, targetPort: 'http-alternative' }] }), ['spec.ports[0].targetPort: Invalid value: "http-alternative": must be no more than 15 characters']);
  t.same(v({ ports: [{ port: 80, targetPort: 70000 }] }), ['spec.ports[0].targetPort: Invalid value: 70000: must be between 1 and 65535, inclusive']);
  t.same(v({ ports: [{ port: 80, appProtocol: 'kubernetes.io/h2c' }] }), []);
  t.match(v({ ports: [{ port: 80, appProtocol: 'not valid' }] }), [/^spec\.ports\[0\]\.appProtocol: Invalid value: "not valid": name part must consist of alphanumeric characters/]);
  t.same(v({ ports: [{ name: 'a', port: 80 }, { name: 'b', port: 80, protocol: 'UDP' }] }), [], 'the same port in two protocols');
  t.same(v({ type: 'NodePort', ports: [{ name: 'a', port: 80, nodePort: 30080 }, { name: 'b', port: 81, nodePort: 30080 }] }), ['spec.ports[1].nodePort: Duplicate value: 30080']);
  t.same(v({ type: 'NodePort', ports: [{ name: 'a', port: 80, nodePort: 30080 }, { name: 'b', port: 80, protocol: 'UDP', nodePort: 30080 }] }), [], 'one NodePort for TCP and UDP');
  t.same(v({ type: 'ExternalName', externalName: 'db.example.com', ports: [{ port: 80, nodePort: 30080 }] }), [], 'only a ClusterIP Service may not have a nodePort');
});

t.test('cluster IPs and IP families (ValidateServiceClusterIPsRelatedFields, and this cluster has IPv4 only)', async (t) => {
  t.same(v({ clusterIP: '10.96.0.5', clusterIPs: ['10.96.0.6'] }), ['spec.clusterIPs: Invalid value: ["10.96.0.6"]: first value must match `clusterIP`']);
  t.same(v({ clusterIPs: ['10.96.0.6'] }), ['spec.clusterIPs: Invalid value: ["10.96.0.6"]: must be empty when `clusterIP` is not specified'], 'a client must set both fields or the singular one');
  t.same(v({ clusterIP: 'None', clusterIPs: ['None', '10.96.0.6'] }), ["spec.clusterIPs: Invalid value: [\"None\",\"10.96.0.6\"]: 'None' must be the first and only value"]);
  t.same(v({ clusterIP: '10.96.0.5', clusterIPs: ['10.96.0.5', '10.96.0.6', '10.96.0.7'] }), [
    'spec.clusterIPs: Invalid value: ["10.96.0.5","10.96.0.6","10.96.0.7"]: may only hold up to 2 values',
    'spec.clusterIPs: Invalid value: ["10.96.0.5","10.96.0.6","10.96.0.7"]: may specify no more than one IP for each IP family',
  ]);
  t.same(v({ clusterIP: 'fd00::5' }), ['spec.clusterIPs[0]: Invalid value: "fd00::5": expected an IPv4 value as indicated by `ipFamilies[0]`'], 'an IPv6 address is an IP, of the wrong family');
  t.same(v({ ipFamilies: ['IPv4', 'IPv4'] }), ['spec.ipFamilies[1]: Duplicate value: "IPv4"']);
  t.same(v({ ipFamilies: ['IPv5'] }), ['spec.ipFamilies[0]: Unsupported value: "IPv5": supported values: "IPv4", "IPv6"']);
  t.same(v({ ipFamilyPolicy: 'Dual' }), ['spec.ipFamilyPolicy: Unsupported value: "Dual": supported values: "PreferDualStack", "RequireDualStack", "SingleStack"']);
  t.same(v({ ipFamilyPolicy: 'RequireDualStack' }), ['spec.ipFamilyPolicy: Invalid value: "RequireDualStack": Cluster is not configured for dual stack services']);
  t.same(v({ ipFamilyPolicy: 'PreferDualStack' }), [], 'PreferDualStack on a single-stack cluster is single stack');
  t.same(v({ ipFamilies: ['IPv6'] }), ['spec.ipFamilies[0]: Invalid value: []: ipfamily IPv6 is not configured on cluster']);
  t.same(v({ type: 'NodePort', clusterIP: 'None' }), ["spec.clusterIPs[0]: Invalid value: \"None\": may not be set to 'None' for NodePort services"]);
  t.same(v({ type: 'LoadBalancer', clusterIP: 'None' }), ["spec.clusterIPs[0]: Invalid value: \"None\": may not be set to 'None' for LoadBalancer services"]);
  t.same(v({ clusterIP: 'None', ports: [] }), [], 'headless');
});

t.test('IP families and cluster IPs may not change on update; a single-stack downgrade keeps one of each', async (t) => {
  const stored = created({ clusterIP: '10.96.0.5' });
  t.same(text(S.validate(updated({ ipFamilies: ['IPv6'] }, stored), stored)), [
    'spec.ipFamilies[0]: Invalid value: ["IPv6"]: may not change once set',
    'spec.clusterIPs[0]: Invalid value: "10.96.0.5": expected an IPv6 value as indicated by `ipFamilies[0]`',
    'spec.ipFamilies[0]: Invalid value: ["10.96.0.5"]: ipfamily IPv6 is not configured on cluster',
  ]);
  t.same(text(S.validate(updated({ ipFamilies: [] }, stored), stored)), [], 'families left out are defaulted again');
  const headless = created({ clusterIP: 'None' });
  t.same(text(S.validate(updated({ clusterIP: 'None', ipFamilies: ['IPv4'] }, headless), headless)), [], 'headless Services keep their families');
});

t.test('ExternalName: no IPs or families of its own; the name may end in a dot', async (t) => {
  const en = (spec: O) => ({ ...svc({ type: 'ExternalName', externalName: 'db.example.com', ...spec }) });
  const raw = (spec: O) => {
    const o = structuredClone(en(spec));
    S.defaults(o);
    return text(S.validate(o, null));
  };
  t.same(raw({}), []);
  t.same(raw({ externalName: 'db.example.com.' }), [], 'a fully qualified CNAME');
  t.same(raw({ externalName: 'Db.example.com' }), [`spec.externalName: Invalid value: "Db.example.com": a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')`]);
  t.same(raw({ externalName: '.' }), ['spec.externalName: Required value']);
  t.same(raw({ clusterIP: '10.96.0.5', ipFamilies: ['IPv4'], ipFamilyPolicy: 'SingleStack' }), [
    'spec.clusterIPs: Forbidden: may not be set for ExternalName services',
    'spec.ipFamilies: Forbidden: may not be set for ExternalName services',
    'spec.ipFamilyPolicy: Forbidden: may not be set for ExternalName services',
  ]);
});

t.test('a change of type drops what only the old type used, unless the client changed it (dropTypeDependentFields)', async (t) => {
  const np = created({ type: 'NodePort', clusterIP: '10.96.0.5', ports: [{ name: 'a', port: 80, nodePort: 30080 }, { name: 'b', port: 81, nodePort: 30081 }] });
  // A client that sends the whole Service back with another type (kubectl edit, replace).
  const full = structuredClone(np);
  specOf(full)['type'] = 'ClusterIP';
  S.defaults(full);
  S.prepareForUpdate!(full, np);
  t.same((specOf(full)['ports'] as O[]).map((p) => p['nodePort']), [undefined, undefined], 'NodePorts the client kept as they were go');
  t.notOk('externalTrafficPolicy' in specOf(full));
  t.same(text(S.validate(full, np)), []);
  const fewer = structuredClone(np);
  specOf(fewer)['type'] = 'ClusterIP';
  specOf(fewer)['ports'] = [{ name: 'a', port: 80, nodePort: 30080 }];
  S.defaults(fewer);
  S.prepareForUpdate!(fewer, np);
  t.same(text(S.validate(fewer, np)), [], 'a subset of the old NodePorts goes too');
  const added = structuredClone(np);
  specOf(added)['type'] = 'ClusterIP';
  specOf(added)['ports'] = [{ name: 'a', port: 80, nodePort: 30090 }];
  S.defaults(added);
  S.prepareForUpdate!(added, np);
  t.same(text(S.validate(added, np)), ["spec.ports[0].nodePort: Forbidden: may not be used when `type` is 'ClusterIP'"], 'a new NodePort of the client\'s own is refused');

  const toEN = structuredClone(np);
  Object.assign(specOf(toEN), { type: 'ExternalName', externalName: 'db.example.com' });
  S.defaults(toEN);
  S.prepareForUpdate!(toEN, np);
  for (const k of ['clusterIP', 'clusterIPs', 'ipFamilies', 'ipFamilyPolicy']) t.notOk(k in specOf(toEN), `${k} goes to ExternalName`);
  t.same(text(S.validate(toEN, np)), []);
  const keepIP = structuredClone(np);
  Object.assign(specOf(keepIP), { type: 'ExternalName', externalName: 'db.example.com', clusterIP: '10.96.0.6', clusterIPs: ['10.96.0.6'] });
  S.defaults(keepIP);
  S.prepareForUpdate!(keepIP, np);
  t.same(text(S.validate(keepIP, np)), ['spec.clusterIPs: Forbidden: may not be set for ExternalName services'], 'IPs the client changed stay, and are refused');
});

t.test('selector, externalIPs, trafficDistribution, the topology annotations', async (t) => {
  t.match(v({ selector: { app: 'bad value' } }), [/^spec\.selector: Invalid value: "bad value": a valid label must be an empty string/], 'a label value at the selector\'s path, as ValidateLabels');
  t.match(v({ selector: { 'bad key': 'x' } }), [/^spec\.selector: Invalid value: "bad key": name part must consist of/]);
  t.same(v({ externalIPs: ['192.0.2.7', '2001:db8::7'] }), [], 'IPv6 external IPs are valid (the IPv4 proxy leaves them)');
  t.same(v({ externalIPs: ['127.0.0.1', '0.0.0.0', '169.254.1.1', '224.0.0.1', '::1', 'fe80::1', 'ff02::1', 'nope'] }), [
    'spec.externalIPs[0]: Invalid value: "127.0.0.1": may not be in the loopback range (127.0.0.0/8, ::1/128)',
    'spec.externalIPs[1]: Invalid value: "0.0.0.0": may not be unspecified (0.0.0.0)',
    'spec.externalIPs[2]: Invalid value: "169.254.1.1": may not be in the link-local range (169.254.0.0/16, fe80::/10)',
    'spec.externalIPs[3]: Invalid value: "224.0.0.1": may not be in the link-local multicast range (224.0.0.0/24, ff02::/10)',
    'spec.externalIPs[4]: Invalid value: "::1": may not be in the loopback range (127.0.0.0/8, ::1/128)',
    'spec.externalIPs[5]: Invalid value: "fe80::1": may not be in the link-local range (169.254.0.0/16, fe80::/10)',
    'spec.externalIPs[6]: Invalid value: "ff02::1": may not be in the link-local multicast range (224.0.0.0/24, ff02::/10)',
    'spec.externalIPs[7]: Invalid value: "nope": must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)',
  ]);
  t.same(v({ trafficDistribution: 'PreferClose' }), []);
  t.same(v({ trafficDistribution: 'Nearest' }), ['spec.trafficDistribution: Unsupported value: "Nearest": supported values: "PreferClose"']);
  t.same(v({}, { annotations: { 'service.kubernetes.io/topology-mode': 'Auto', 'service.kubernetes.io/topology-aware-hints': 'auto' } }), [
    'metadata.annotations[service.kubernetes.io/topology-mode]: Invalid value: "Auto": must match annotations[service.kubernetes.io/topology-aware-hints] when both are specified',
  ]);
});

t.test('traffic policies: internalTrafficPolicy required of ClusterIP, NodePort and LoadBalancer Services', async (t) => {
  const o = created({ clusterIP: '10.96.0.5' });
  delete specOf(o)['internalTrafficPolicy'];
  t.same(text(S.validate(o, null)), ['spec.internalTrafficPolicy: Required value']);
  t.same(v({ internalTrafficPolicy: 'Nearest' }), ['spec.internalTrafficPolicy: Unsupported value: "Nearest": supported values: "Cluster", "Local"']);
  t.same(v({ externalIPs: ['192.0.2.7'], externalTrafficPolicy: 'Local' }), [], 'Local for a ClusterIP Service with externalIPs');
});

t.test('the load balancer status the agents read: ingress IP, ipMode, hostname', async (t) => {
  const withStatus = (ingress: O[]) => text(S.validate({ ...created({ type: 'LoadBalancer' }), status: { loadBalancer: { ingress } } }, null));
  t.same(withStatus([{ ip: '192.0.2.10', ipMode: 'VIP' }, { ip: '192.0.2.11', ipMode: 'Proxy' }, { hostname: 'lb.example.com' }]), []);
  t.same(withStatus([{ ip: '192.0.2.300' }]), ['status.loadBalancer.ingress[0].ip: Invalid value: "192.0.2.300": must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)']);
  t.same(withStatus([{ ip: '192.0.2.10', ipMode: 'NAT' }]), ['status.loadBalancer.ingress[0].ipMode: Unsupported value: "NAT": supported values: "Proxy", "VIP"']);
  t.same(withStatus([{ hostname: 'lb.example.com', ipMode: 'VIP' }]), ['status.loadBalancer.ingress[0].ipMode: Forbidden: may not be specified when `ip` is not set']);
  t.same(withStatus([{ hostname: '192.0.2.10' }]), ['status.loadBalancer.ingress[0].hostname: Invalid value: "192.0.2.10": must be a DNS name, not an IP address']);
});
