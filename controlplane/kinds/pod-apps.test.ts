/**
 * The Pod, Deployment and ReplicaSet strategies on their own (pure): the pod spec rules a template
 * patch reaches, a Pod's create and update rules, and the workloads' own, one case per rule, in
 * kube-apiserver's words (kinds.test.ts has the older ones).
 */
import t from 'tap';
import type { FieldError } from '../api/errors.js';
import { STRATEGIES } from './kinds.js';

type O = Record<string, unknown>;
const text = (errs: readonly FieldError[]) => errs.map((e) => `${e.field}: ${e.message}`);
const POD = STRATEGIES['pods']!;
const DEPLOY = STRATEGIES['deployments.apps']!;
const RS = STRATEGIES['replicasets.apps']!;

const pod = (c: O = {}, spec: O = {}): O => ({ apiVersion: 'v1', kind: 'Pod', metadata: { name: 'p', namespace: 'default' }, spec: { containers: [{ name: 'c', image: 'nginx:1.25', ...c }], ...spec } });
const defaulted = (o: O): O => {
  const c = structuredClone(o);
  POD.defaults(c);
  return c;
};
/** A Pod's create errors, defaulted as the API defaults it. */
const pv = (c: O = {}, spec: O = {}) => text(POD.validate(defaulted(pod(c, spec)), null));

t.test('pod spec: containers: names, policies, init containers', async (t) => {
  t.same(pv({}, { initContainers: [{ name: 'c', image: 'busybox' }] }), ['spec.initContainers[0].name: Duplicate value: "c"'], 'unique across regular and init');
  t.same(pv({ terminationMessagePolicy: 'Always' }), ['spec.containers[0].terminationMessagePolicy: Unsupported value: "Always": supported values: "File", "FallbackToLogsOnError"']);
  t.same(pv({ imagePullPolicy: 'Sometimes' }), ['spec.containers[0].imagePullPolicy: Unsupported value: "Sometimes": supported values: "Always", "IfNotPresent", "Never"']);
  t.same(pv({ restartPolicy: 'Always' }), ['spec.containers[0].restartPolicy: Forbidden: may not be set for non-init containers']);
  t.same(pv({}, { initContainers: [{ name: 'i', image: 'busybox', restartPolicy: 'OnFailure' }] }), ['spec.initContainers[0].restartPolicy: Unsupported value: "OnFailure": supported values: "Always"']);
  t.same(pv({}, { initContainers: [{ name: 'i', image: 'busybox', readinessProbe: { exec: { command: ['true'] } } }] }), ['spec.initContainers[0].readinessProbe: Forbidden: may not be set for init containers without restartPolicy=Always']);
  t.same(pv({}, { initContainers: [{ name: 'i', image: 'busybox', restartPolicy: 'Always', readinessProbe: { exec: { command: ['true'] } } }] }), [], 'a sidecar may have probes');
});

t.test('pod spec: container ports', async (t) => {
  t.same(pv({ ports: [{ name: 'HTTP', containerPort: 80 }] }), ['spec.containers[0].ports[0].name: Invalid value: "HTTP": must contain only alpha-numeric characters (a-z, 0-9), and hyphens (-)', 'spec.containers[0].ports[0].name: Invalid value: "HTTP": must contain at least one letter (a-z)']);
  t.same(pv({ ports: [{ name: 'http', containerPort: 80 }, { name: 'http', containerPort: 81 }] }), ['spec.containers[0].ports[1].name: Duplicate value: "http"']);
  t.same(pv({ ports: [{ containerPort: 80, hostPort: 70000 }] }), ['spec.containers[0].ports[0].hostPort: Invalid value: 70000: must be between 1 and 65535, inclusive']);
  t.same(pv({ ports: [{ containerPort: 80, protocol: 'ICMP' }] }), ['spec.containers[0].ports[0].protocol: Unsupported value: "ICMP": supported values: "SCTP", "TCP", "UDP"']);
  const two = defaulted(pod({ ports: [{ containerPort: 80, hostPort: 8080 }] }, {}));
  ((two['spec'] as O)['containers'] as O[]).push({ name: 'd', image: 'x:1', imagePullPolicy: 'IfNotPresent', terminationMessagePolicy: 'File', ports: [{ containerPort: 81, hostPort: 8080, protocol: 'TCP' }] });
  t.same(text(POD.validate(two, null)), ['spec.containers[1].ports[0].hostPort: Duplicate value: "TCP//8080"'], 'one host port per protocol and host IP');
  const hn = defaulted(pod({ ports: [{ containerPort: 80 }] }, { hostNetwork: true }));
  t.equal((((hn['spec'] as O)['containers'] as O[])[0]!['ports'] as O[])[0]!['hostPort'], 80, 'a hostNetwork Pod\'s hostPort defaults to its containerPort');
  t.same(pv({ ports: [{ containerPort: 80, hostPort: 81 }] }, { hostNetwork: true }), ['spec.containers[0].ports[0].hostPort: Invalid value: 81: must match `containerPort` when `hostNetwork` is true']);
});

t.test('pod spec: env and envFrom', async (t) => {
  t.same(pv({ env: [{ name: '', value: 'x' }] }), ['spec.containers[0].env[0].name: Required value']);
  t.same(pv({ env: [{ name: 'A=B', value: 'x' }] }), ["spec.containers[0].env[0].name: Invalid value: \"A=B\": a valid environment variable name must consist only of printable ASCII characters other than '='"]);
  t.same(pv({ env: [{ name: '1.weird-name', value: 'x' }] }), [], 'relaxed names (RelaxedEnvironmentVariableValidation)');
  t.same(pv({ env: [{ name: 'A', valueFrom: {} }] }), ['spec.containers[0].env[0].valueFrom: Invalid value: "": must specify one of: `fieldRef`, `resourceFieldRef`, `configMapKeyRef` or `secretKeyRef`']);
  t.same(pv({ env: [{ name: 'A', value: 'x', valueFrom: { fieldRef: { fieldPath: 'metadata.name' } } }] }), ['spec.containers[0].env[0].valueFrom: Invalid value: "": may not be specified when `value` is not empty']);
  t.same(pv({ env: [{ name: 'A', valueFrom: { fieldRef: { fieldPath: 'metadata.name' }, secretKeyRef: { name: 's', key: 'k' } } }] }), ['spec.containers[0].env[0].valueFrom: Invalid value: "": may not have more than one field specified at a time']);
  t.same(pv({ env: [{ name: 'A', valueFrom: { fieldRef: { fieldPath: 'metadata.labels[\'app\']' } } }, { name: 'B', valueFrom: { fieldRef: { fieldPath: 'status.podIP' } } }] }), [], 'fieldRef apiVersion defaults to v1');
  t.same(pv({ env: [{ name: 'A', valueFrom: { fieldRef: { fieldPath: 'spec.restartPolicy' } } }] }), [
    'spec.containers[0].env[0].valueFrom.fieldRef.fieldPath: Unsupported value: "spec.restartPolicy": supported values: "metadata.name", "metadata.namespace", "metadata.uid", "spec.nodeName", "spec.serviceAccountName", "status.hostIP", "status.hostIPs", "status.podIP", "status.podIPs"',
  ]);
  t.same(pv({ env: [{ name: 'A', valueFrom: { fieldRef: { fieldPath: 'spec.nope' } } }] }), ['spec.containers[0].env[0].valueFrom.fieldRef.fieldPath: Invalid value: "spec.nope": error converting fieldPath: field label not supported: spec.nope']);
  t.same(pv({ env: [{ name: 'A', valueFrom: { configMapKeyRef: { name: 'cm', key: 'a/b' } } }] }), ["spec.containers[0].env[0].valueFrom.configMapKeyRef.key: Invalid value: \"a/b\": a valid config key must consist of alphanumeric characters, '-', '_' or '.' (e.g. 'key.name',  or 'KEY_NAME',  or 'key-name', regex used for validation is '[-._a-zA-Z0-9]+')"]);
  t.same(pv({ envFrom: [{ prefix: 'P_' }] }), ['spec.containers[0].envFrom: Invalid value: "": must specify one of: `configMapRef` or `secretRef`']);
  t.same(pv({ envFrom: [{ configMapRef: { name: 'cm' } }] }), []);
});

t.test('pod spec: resources', async (t) => {
  t.same(pv({ resources: { requests: { cpu: '2' }, limits: { cpu: '0.5' } } }), ['spec.containers[0].resources.requests: Invalid value: "2": must be less than or equal to cpu limit of 500m']);
  t.same(pv({ resources: { requests: { memory: '3Gi' }, limits: { memory: '2048Mi' } } }), ['spec.containers[0].resources.requests: Invalid value: "3Gi": must be less than or equal to memory limit of 2Gi']);
  t.same(pv({ resources: { limits: { cpu: '-1' } } }), [
    'spec.containers[0].resources.limits[cpu]: Invalid value: "-1": must be greater than or equal to 0',
    'spec.containers[0].resources.requests[cpu]: Invalid value: "-1": must be greater than or equal to 0',
  ], 'a Pod\'s requests default to its limits');
  t.same(pv({ resources: { requests: { 'example.com/gpu': '1' } } }), ['spec.containers[0].resources.limits: Required value: Limit must be set for non overcommitable resources']);
  t.same(pv({ resources: { requests: { 'example.com/gpu': '1' }, limits: { 'example.com/gpu': '2' } } }), ['spec.containers[0].resources.requests: Invalid value: "1": must be equal to example.com/gpu limit of 2']);
  t.same(pv({ resources: { limits: { 'example.com/gpu': '500m' } } }), [
    'spec.containers[0].resources.limits[example.com/gpu]: Invalid value: "500m": must be an integer',
    'spec.containers[0].resources.requests[example.com/gpu]: Invalid value: "500m": must be an integer',
  ]);
  t.same(pv({ resources: { limits: { gpu: '1' } } }), [
    'spec.containers[0].resources.limits[gpu]: Invalid value: "gpu": must be a standard resource type or fully qualified',
    'spec.containers[0].resources.requests[gpu]: Invalid value: "gpu": must be a standard resource type or fully qualified',
  ]);
  t.same(pv({ resources: { requests: { pods: '1' } } }), ['spec.containers[0].resources.requests[pods]: Invalid value: "pods": must be a standard resource for containers']);
  t.same(pv({ resources: { limits: { 'hugepages-2Mi': '4Mi' } } }), ['spec.containers[0].resources: Forbidden: HugePages require cpu or memory']);
  t.same(pv({ resources: { limits: { cpu: 'lots' } } }).slice(0, 1), ["spec.containers[0].resources.limits[cpu]: Invalid value: \"lots\": quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"]);
});

t.test('pod spec: probes and lifecycle handlers (defaults: timeout 1, period 10, thresholds 1 and 3, path /, scheme HTTP)', async (t) => {
  const d = defaulted(pod({ livenessProbe: { httpGet: { port: 8080 } } }));
  t.same((((d['spec'] as O)['containers'] as O[])[0]!)['livenessProbe'], { httpGet: { port: 8080, path: '/', scheme: 'HTTP' }, timeoutSeconds: 1, periodSeconds: 10, successThreshold: 1, failureThreshold: 3 });
  t.same(pv({ readinessProbe: { periodSeconds: 5 } }), ['spec.containers[0].readinessProbe: Required value: must specify a handler type']);
  t.same(pv({ readinessProbe: { exec: { command: ['true'] }, tcpSocket: { port: 80 } } }), ['spec.containers[0].readinessProbe.tcpSocket: Forbidden: may not specify more than 1 handler type']);
  t.same(pv({ livenessProbe: { exec: { command: ['true'] }, successThreshold: 2 } }), ['spec.containers[0].livenessProbe.successThreshold: Invalid value: 2: must be 1']);
  t.same(pv({ readinessProbe: { exec: { command: ['true'] }, initialDelaySeconds: -1 } }), ['spec.containers[0].readinessProbe.initialDelaySeconds: Invalid value: -1: must be greater than or equal to 0']);
  t.same(pv({ readinessProbe: { exec: { command: [] } } }), ['spec.containers[0].readinessProbe.exec.command: Required value']);
  t.same(pv({ readinessProbe: { httpGet: { port: 'HTTP', scheme: 'FTP' } } }), [
    'spec.containers[0].readinessProbe.httpGet.port: Invalid value: "HTTP": must contain only alpha-numeric characters (a-z, 0-9), and hyphens (-)',
    'spec.containers[0].readinessProbe.httpGet.port: Invalid value: "HTTP": must contain at least one letter (a-z)',
    'spec.containers[0].readinessProbe.httpGet.scheme: Unsupported value: "FTP": supported values: "HTTP", "HTTPS"',
  ]);
  t.same(pv({ readinessProbe: { exec: { command: ['true'] }, terminationGracePeriodSeconds: 5 } }), ['spec.containers[0].readinessProbe.terminationGracePeriodSeconds: Invalid value: 5: must not be set for readinessProbes']);
  t.same(pv({ lifecycle: { preStop: { sleep: { seconds: 60 } } } }), ['spec.containers[0].lifecycle.preStop.sleep: Invalid value: 60: must be greater than 0 and less than terminationGracePeriodSeconds (30). Enable AllowPodLifecycleSleepActionZeroValue feature gate for zero sleep.']);
  t.same(pv({ lifecycle: { postStart: { exec: { command: ['true'] } } } }), []);
});

t.test('pod spec: DNS, node selection, affinity, tolerations, spread', async (t) => {
  t.same(pv({}, { dnsPolicy: 'None' }), ['spec.dnsConfig: Required value: must provide `dnsConfig` when `dnsPolicy` is None']);
  t.same(pv({}, { dnsPolicy: 'None', dnsConfig: { nameservers: ['10.0.0.1', '10.0.0.2', '10.0.0.3', '10.0.0.4'] } }), ['spec.dnsConfig.nameservers: Invalid value: ["10.0.0.1","10.0.0.2","10.0.0.3","10.0.0.4"]: must not have more than 3 nameservers']);
  t.same(pv({}, { dnsConfig: { searches: ['svc.cluster.local.', 'Bad_Domain'], options: [{ value: '2' }] } }), [
    `spec.dnsConfig.searches[1]: Invalid value: "Bad_Domain": a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')`,
    'spec.dnsConfig.options[0]: Required value: must not be empty',
  ]);
  t.match(pv({}, { nodeSelector: { disk: 'fast ssd' } }), [/^spec\.nodeSelector: Invalid value: "fast ssd": a valid label must be/]);
  const na = (req: O) => pv({}, { affinity: { nodeAffinity: { requiredDuringSchedulingIgnoredDuringExecution: req } } });
  t.same(na({ nodeSelectorTerms: [] }), ['spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms: Required value: must have at least one node selector term']);
  t.same(na({ nodeSelectorTerms: [{ matchExpressions: [{ key: 'zone', operator: 'In' }, { key: 'zone', operator: 'Near', values: ['a'] }, { key: 'cpus', operator: 'Gt', values: ['1', '2'] }] }] }), [
    "spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0].matchExpressions[0].values: Required value: must be specified when `operator` is 'In' or 'NotIn'",
    'spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0].matchExpressions[1].operator: Invalid value: "Near": not a valid selector operator',
    "spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0].matchExpressions[2].values: Required value: must be specified single value when `operator` is 'Lt' or 'Gt'",
  ]);
  t.same(na({ nodeSelectorTerms: [{ matchFields: [{ key: 'metadata.uid', operator: 'In', values: ['x'] }] }] }), ['spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0].matchFields[0].key: Invalid value: "metadata.uid": not a valid field selector key']);
  t.same(pv({}, { affinity: { nodeAffinity: { preferredDuringSchedulingIgnoredDuringExecution: [{ weight: 0, preference: { matchExpressions: [{ key: 'zone', operator: 'Exists' }] } }] } } }), ['spec.affinity.nodeAffinity.preferredDuringSchedulingIgnoredDuringExecution[0].weight: Invalid value: 0: must be in the range 1-100']);
  t.same(pv({}, { affinity: { podAntiAffinity: { requiredDuringSchedulingIgnoredDuringExecution: [{ labelSelector: { matchLabels: { app: 'p' } } }] } } }), [
    'spec.affinity.podAntiAffinity.requiredDuringSchedulingIgnoredDuringExecution[0].topologyKey: Required value: can not be empty',
    'spec.affinity.podAntiAffinity.requiredDuringSchedulingIgnoredDuringExecution[0].topologyKey: Invalid value: "": name part must be non-empty',
    "spec.affinity.podAntiAffinity.requiredDuringSchedulingIgnoredDuringExecution[0].topologyKey: Invalid value: \"\": name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')",
  ], 'IsQualifiedName reports both for an empty name');
  const tol = (tl: O) => pv({}, { tolerations: [tl] }).filter((e) => !e.includes('not-ready') && !e.includes('unreachable'));
  t.same(tol({ operator: 'Equal', value: 'x' }), ['spec.tolerations[0].operator: Invalid value: "Equal": operator must be Exists when `key` is empty, which means "match all values and all keys"']);
  t.same(tol({ key: 'k', operator: 'Exists', effect: 'NoSchedule', tolerationSeconds: 10 }), ["spec.tolerations[0].effect: Invalid value: \"NoSchedule\": effect must be 'NoExecute' when `tolerationSeconds` is set"]);
  t.same(tol({ key: 'k', operator: 'Exists', value: 'v' }), ["spec.tolerations[0].operator: Invalid value: \"v\": value must be empty when `operator` is 'Exists'"]);
  t.same(tol({ key: 'k', operator: 'Near' }), ['spec.tolerations[0].operator: Unsupported value: "Near": supported values: "Equal", "Exists"']);
  t.same(tol({ key: 'k', operator: 'Exists', effect: 'Evict' }), ['spec.tolerations[0].effect: Unsupported value: "Evict": supported values: "NoSchedule", "PreferNoSchedule", "NoExecute"']);
  const sp = { topologyKey: 'zone', maxSkew: 1, whenUnsatisfiable: 'DoNotSchedule' };
  t.same(pv({}, { topologySpreadConstraints: [{ ...sp, maxSkew: 0 }, { ...sp, whenUnsatisfiable: 'Maybe' }, sp] }), [
    'spec.topologySpreadConstraints[0].maxSkew: Invalid value: 0: must be greater than zero',
    'spec.topologySpreadConstraints[0].{topologyKey, whenUnsatisfiable}: Duplicate value: "{zone, DoNotSchedule}"',
    'spec.topologySpreadConstraints[1].whenUnsatisfiable: Unsupported value: "Maybe": supported values: "DoNotSchedule", "ScheduleAnyway"',
  ]);
});

t.test('pod spec: names, deadlines, gates and the rest', async (t) => {
  t.same(pv({}, { activeDeadlineSeconds: 0 }), ['spec.activeDeadlineSeconds: Invalid value: 0: must be between 1 and 2147483647, inclusive']);
  t.match(pv({}, { hostname: 'web.0', subdomain: 'Sub', serviceAccountName: 'sa_1', priorityClassName: 'High' }), [/^spec\.serviceAccountName: Invalid value: "sa_1"/, /^spec\.hostname: Invalid value: "web\.0"/, /^spec\.subdomain: Invalid value: "Sub"/, /^spec\.priorityClassName: Invalid value: "High"/]);
  t.same(pv({}, { preemptionPolicy: 'Always' }), ['spec.preemptionPolicy: Unsupported value: "Always": supported values: "PreemptLowerPriority", "Never"']);
  t.same(pv({}, { os: { name: 'plan9' } }), ['spec.os: Unsupported value: "plan9": supported values: "linux", "windows"']);
  t.same(pv({}, { imagePullSecrets: [{ name: 'r', namespace: 'x' }] }), ['spec.imagePullSecrets[0]: Invalid value: {"name":"r","namespace":"x"}: only name may be set']);
  t.same(pv({}, { schedulingGates: [{ name: 'example.com/wait' }, { name: 'example.com/wait' }] }), ['spec.schedulingGates[1]: Duplicate value: "example.com/wait"']);
  t.same(pv({}, { hostAliases: [{ ip: 'x', hostnames: ['a.example'] }] }), ['spec.hostAliases[0].ip: Invalid value: "x": must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)']);
});

t.test('Pod create: no ephemeral containers, no node while scheduling gates remain', async (t) => {
  t.same(pv({}, { ephemeralContainers: [{ name: 'debug', image: 'busybox' }] }), ['spec.ephemeralContainers: Forbidden: cannot be set on create']);
  t.same(pv({}, { nodeName: 'n1', schedulingGates: [{ name: 'example.com/wait' }] }), ['spec.nodeName: Forbidden: cannot be set until all schedulingGates have been cleared']);
});

t.test('Pod update: what may change, and how', async (t) => {
  const stored = defaulted(pod({}, { activeDeadlineSeconds: 60, tolerations: [{ key: 'k', operator: 'Exists', effect: 'NoExecute', tolerationSeconds: 10 }], schedulingGates: [{ name: 'example.com/a' }, { name: 'example.com/b' }], terminationGracePeriodSeconds: -1 }));
  const upd = (f: (spec: O) => void) => {
    const o = structuredClone(stored);
    f(o['spec'] as O);
    return text(POD.validate(o, stored));
  };
  t.same(upd((s) => (s['containers'] as O[]).push({ name: 'd', image: 'x:1', imagePullPolicy: 'IfNotPresent', terminationMessagePolicy: 'File' })), ['spec.containers: Forbidden: pod updates may not add or remove containers']);
  t.same(upd((s) => (s['activeDeadlineSeconds'] = 30)), [], 'lowered');
  t.same(upd((s) => (s['activeDeadlineSeconds'] = 90)), ['spec.activeDeadlineSeconds: Invalid value: 90: must be less than or equal to previous value']);
  t.same(upd((s) => delete s['activeDeadlineSeconds']), ['spec.activeDeadlineSeconds: Invalid value: null: must not update from a positive integer to nil value']);
  t.same(upd((s) => ((s['tolerations'] as O[])[0]!['tolerationSeconds'] = 20)), [], 'tolerationSeconds may change');
  t.same(upd((s) => (s['tolerations'] as O[]).push({ key: 'other', operator: 'Exists' })), [], 'added');
  t.same(upd((s) => (s['tolerations'] = [])), ['spec.tolerations: Forbidden: existing toleration can not be modified except its tolerationSeconds']);
  t.same(upd((s) => (s['schedulingGates'] = [{ name: 'example.com/b' }])), [], 'a gate removed');
  t.same(upd((s) => (s['schedulingGates'] as O[]).push({ name: 'example.com/c' })), ["spec.schedulingGates[2].name: Forbidden: only deletion is allowed, but found new scheduling gate 'example.com/c'"]);
  t.same(upd((s) => (s['terminationGracePeriodSeconds'] = 1)), [], 'a negative grace period may become 1');
  t.match(upd((s) => (s['terminationGracePeriodSeconds'] = 5)), [/^spec: Forbidden: pod updates may not change fields other than/]);
  t.match(upd((s) => (s['dnsPolicy'] = 'Default')), [/^spec: Forbidden: pod updates may not change fields other than/]);
});

const deploy = (spec: O = {}, tplSpec: O = {}, tplMeta: O = {}): O => ({
  apiVersion: 'apps/v1', kind: 'Deployment', metadata: { name: 'web', namespace: 'default' },
  spec: { selector: { matchLabels: { app: 'web' } }, template: { metadata: { labels: { app: 'web' }, ...tplMeta }, spec: { containers: [{ name: 'web', image: 'nginx' }], ...tplSpec } }, ...spec },
});
const dv = (o: O, s = DEPLOY) => {
  const c = structuredClone(o);
  s.defaults(c);
  return text(s.validate(c, null));
};

t.test('Deployment: selector, template, strategy and the counts', async (t) => {
  t.same(dv(deploy({ selector: { matchExpressions: [{ key: 'app', operator: 'Maybe', values: ['web'] }] } })), [
    'spec.selector.matchExpressions[0].operator: Invalid value: "Maybe": not a valid selector operator',
    'spec.selector: Invalid value: {"matchExpressions":[{"key":"app","operator":"Maybe","values":["web"]}]}: invalid label selector',
  ]);
  t.match(dv(deploy({ selector: { matchLabels: { app: 'bad value' } } })), [/^spec\.selector\.matchLabels: Invalid value: "bad value": a valid label must be/, /^spec\.selector: Invalid value: .*: invalid label selector$/]);
  t.same(dv(deploy({ selector: { matchExpressions: [{ key: 'app', operator: 'Exists', values: ['web'] }] } })).slice(0, 1), ["spec.selector.matchExpressions[0].values: Forbidden: may not be specified when `operator` is 'Exists' or 'DoesNotExist'"]);
  t.match(dv(deploy({}, {}, { labels: { app: 'web', 'bad key': 'x' } })), [/^spec\.template\.labels: Invalid value: "bad key": name part must consist of/], 'upstream\'s path for template labels');
  t.same(dv(deploy({}, { activeDeadlineSeconds: 10 })), ['spec.template.spec.activeDeadlineSeconds: Forbidden: activeDeadlineSeconds in ReplicaSet is not Supported']);
  t.same(dv(deploy({}, { containers: [{ name: 'web', image: 'nginx', ports: [{ containerPort: 0 }] }] })), ['spec.template.spec.containers[0].ports[0].containerPort: Required value']);
  t.same(dv(deploy({}, { ephemeralContainers: [{ name: 'd', image: 'busybox' }] })), ['spec.template.spec.ephemeralContainers: Forbidden: ephemeral containers not allowed in pod template']);
  t.same(dv(deploy({}, { containers: [{ name: 'web', image: ' ' }] })), [], 'a template\'s image may be padded (a special token in some templates)');
  const ru = (r: O) => dv(deploy({ strategy: { type: 'RollingUpdate', rollingUpdate: r } }));
  t.same(ru({ maxSurge: 'lots', maxUnavailable: 1 }), ["spec.strategy.rollingUpdate.maxSurge: Invalid value: \"lots\": a valid percent string must be a numeric string followed by an ending '%' (e.g. '1%',  or '93%', regex used for validation is '[0-9]+%')"]);
  t.same(ru({ maxSurge: -1, maxUnavailable: 1 }), ['spec.strategy.rollingUpdate.maxSurge: Invalid value: -1: must be greater than or equal to 0']);
  t.same(ru({ maxSurge: 1, maxUnavailable: '150%' }), ['spec.strategy.rollingUpdate.maxUnavailable: Invalid value: "150%": must not be greater than 100%']);
  t.same(ru({ maxSurge: 0, maxUnavailable: '0' }), [
    "spec.strategy.rollingUpdate.maxUnavailable: Invalid value: \"0\": a valid percent string must be a numeric string followed by an ending '%' (e.g. '1%',  or '93%', regex used for validation is '[0-9]+%')",
    'spec.strategy.rollingUpdate.maxUnavailable: Invalid value: "0": may not be 0 when `maxSurge` is 0',
  ]);
  t.same(dv(deploy({ minReadySeconds: -1, revisionHistoryLimit: -1 })), [
    'spec.minReadySeconds: Invalid value: -1: must be greater than or equal to 0',
    'spec.revisionHistoryLimit: Invalid value: -1: must be greater than or equal to 0',
  ]);
  t.same(dv(deploy({ minReadySeconds: 600 })), ['spec.progressDeadlineSeconds: Invalid value: 600: must be greater than minReadySeconds']);
  t.same(dv(deploy({ progressDeadlineSeconds: -5 })), ['spec.progressDeadlineSeconds: Invalid value: -5: must be greater than or equal to 0', 'spec.progressDeadlineSeconds: Invalid value: -5: must be greater than minReadySeconds']);
});

t.test('ReplicaSet: minReadySeconds, and the template as a Deployment\'s', async (t) => {
  const rs = (spec: O = {}, tplSpec: O = {}): O => ({ ...deploy(spec, tplSpec), kind: 'ReplicaSet', metadata: { name: 'web-1', namespace: 'default' } });
  t.same(dv(rs(), RS), []);
  t.same(dv(rs({ minReadySeconds: -1 }), RS), ['spec.minReadySeconds: Invalid value: -1: must be greater than or equal to 0']);
  t.same(dv(rs({}, { restartPolicy: 'OnFailure' }), RS), ['spec.template.spec.restartPolicy: Unsupported value: "OnFailure": supported values: "Always"']);
  t.same(dv(rs({ selector: { matchLabels: { app: 'web' }, matchExpressions: [{ key: 'tier', operator: 'In' }] } }), RS).slice(0, 1), ["spec.selector.matchExpressions[0].values: Required value: must be specified when `operator` is 'In' or 'NotIn'"]);
});

t.test('a Pod stored before the new defaults passes a /status write, which keeps its spec undefaulted', async (t) => {
  // As an older nodenet stored it: its defaults, none of the probe, httpGet, fieldRef or hostPort ones.
  const old = defaulted(pod({ ports: [{ containerPort: 80 }], env: [{ name: 'N', valueFrom: { fieldRef: { fieldPath: 'metadata.name' } } }] }, { hostNetwork: true }));
  const c = ((old['spec'] as O)['containers'] as O[])[0]!;
  c['livenessProbe'] = { httpGet: { port: 80 } };
  c['startupProbe'] = { exec: { command: ['true'] } };
  delete (c['ports'] as O[])[0]!['hostPort'];
  delete ((((c['env'] as O[])[0]!['valueFrom'] as O)['fieldRef']) as O)['apiVersion'];
  // What rest.ts stores for /status: the stored object with the new status, no defaults applied.
  const next: O = { ...structuredClone(old), status: { phase: 'Running' } };
  t.same(text(POD.validate(next, old)), [], 'absent fields are judged at their defaults, as kube-apiserver defaults what it reads');
  const explicit = structuredClone(next);
  ((((explicit['spec'] as O)['containers'] as O[])[0]!)['livenessProbe'] as O)['successThreshold'] = 3;
  t.same(text(POD.validate(explicit, old)).slice(0, 1), ['spec.containers[0].livenessProbe.successThreshold: Invalid value: 3: must be 1'], 'a value that is set is still checked');
});
