import t from 'tap';
import { describeProblems, imageProblem, planPod } from './pod-spec.js';

const pod = (spec: Record<string, unknown>) => ({ metadata: { name: 'p' }, spec });
const ctr = (extra: Record<string, unknown> = {}) => ({ name: 'c', image: 'nodenet/host', command: ['sleep', '1'], ...extra });
// What the API server's defaults add to every Pod: accepted, no effect.
const DEFAULTS = { restartPolicy: 'Always', dnsPolicy: 'ClusterFirst', schedulerName: 'default-scheduler', terminationGracePeriodSeconds: 30, securityContext: {}, enableServiceLinks: true, tolerations: [{ key: 'node.kubernetes.io/not-ready', operator: 'Exists', effect: 'NoExecute', tolerationSeconds: 300 }] };
const CTR_DEFAULTS = { terminationMessagePath: '/dev/termination-log', terminationMessagePolicy: 'File', imagePullPolicy: 'Always', resources: {} };

t.test('a defaulted Pod with honoured fields is planned', async (t) => {
  const r = planPod(pod({ ...DEFAULTS, nodeName: 'n1', restartPolicy: 'OnFailure', containers: [ctr({ ...CTR_DEFAULTS, args: ['x'], workingDir: '/tmp', ports: [{ containerPort: 8080, name: 'http', protocol: 'TCP' }],
    env: [{ name: 'A', value: 'a' }, { name: 'IP', valueFrom: { fieldRef: { fieldPath: 'status.podIP' } } }],
    readinessProbe: { httpGet: { port: 'http', path: '/ready' }, periodSeconds: 2, successThreshold: 2 },
    livenessProbe: { tcpSocket: { port: 8080 } }, startupProbe: { exec: { command: ['true'] }, failureThreshold: 30 } })] }));
  t.ok(r.ok);
  if (!r.ok) return;
  t.equal(r.plan.restartPolicy, 'OnFailure');
  t.equal(r.plan.terminationGracePeriodSeconds, 30);
  const c = r.plan.containers[0]!;
  t.same(c.command, ['sleep', '1']);
  t.same(c.args, ['x']);
  t.equal(c.workingDir, '/tmp');
  t.same(c.env, [{ name: 'A', value: 'a' }, { name: 'IP', fieldRef: 'status.podIP' }]);
  t.same(c.volumeMounts, []);
  t.same(r.plan.volumes, []);
  t.equal(r.plan.serviceAccountName, 'default');
  t.equal(r.plan.enableServiceLinks, true);
  t.same(r.plan.dns, { policy: 'ClusterFirst', config: null });
  t.match(c.readiness, { action: { kind: 'httpGet', port: 8080, path: '/ready', scheme: 'HTTP' }, periodSeconds: 2, successThreshold: 2, failureThreshold: 3, timeoutSeconds: 1, initialDelaySeconds: 0 });
  t.match(c.liveness, { action: { kind: 'tcpSocket', port: 8080, host: '' }, periodSeconds: 10 });
  t.match(c.startup, { action: { kind: 'exec', command: ['true'] }, failureThreshold: 30 });
});

t.test('every field nodenet cannot honour is named', async (t) => {
  const r = planPod(pod({
    ...DEFAULTS, hostNetwork: true, hostPID: true, volumes: [{ name: 'v', hostPath: { path: '/x' } }, { name: 'ok', emptyDir: {} }], initContainers: [ctr()], securityContext: { runAsUser: 1000 }, dnsConfig: { nameservers: ['1.1.1.1'] }, dnsPolicy: 'ClusterFirst',
    containers: [ctr({ command: undefined, volumeMounts: [{ name: 'ok', mountPath: '/v', mountPropagation: 'Bidirectional' }], resources: { limits: { cpu: '1', memory: '32Mi', 'ephemeral-storage': '1Gi' } }, lifecycle: { preStop: { exec: { command: ['x'] } } }, ports: [{ containerPort: 80, hostPort: 80 }], securityContext: { privileged: true },
      env: [{ name: 'S', valueFrom: { secretKeyRef: { name: 's', key: 'k' } } }, { name: 'F', valueFrom: { fieldRef: { fieldPath: 'metadata.labels' } } }, { name: 'R', valueFrom: { resourceFieldRef: { resource: 'limits.nvidia.com/gpu' } } }], livenessProbe: { grpc: { port: 1 } } })],
  }));
  t.notOk(r.ok);
  if (r.ok) return;
  const fields = r.problems.map((p) => p.field).sort();
  t.same(fields, [
    'spec.containers[0].command', 'spec.containers[0].env[1].valueFrom.fieldRef.fieldPath', 'spec.containers[0].env[2].valueFrom.resourceFieldRef.resource', 'spec.containers[0].lifecycle',
    'spec.containers[0].livenessProbe.grpc', 'spec.containers[0].ports[0].hostPort', 'spec.containers[0].resources.limits.ephemeral-storage', 'spec.containers[0].securityContext.privileged',
    'spec.containers[0].volumeMounts[0].mountPropagation', 'spec.hostNetwork', 'spec.hostPID', 'spec.initContainers', 'spec.securityContext.runAsUser', 'spec.volumes[0].hostPath',
  ]);
  t.match(describeProblems(r.problems), /^nodenet cannot run this Pod: .*spec\.volumes\[0\]\.hostPath: nodenet projects emptyDir, configMap, secret, downwardAPI and projected volumes, not hostPath/);
});

t.test('volumes and mounts: each kind planned with its defaults; what the kubelet relies on is checked', async (t) => {
  const r = planPod(pod({ serviceAccountName: 'reader', enableServiceLinks: false, hostAliases: [{ ip: '10.1.2.3', hostnames: ['a.local'] }], volumes: [
    { name: 'cache', emptyDir: { medium: 'Memory', sizeLimit: '64Mi' } },
    { name: 'cfg', configMap: { name: 'app', items: [{ key: 'k', path: 'dir/k', mode: 0o400 }], optional: true } },
    { name: 'sec', secret: { secretName: 's', defaultMode: 0o600 } },
    { name: 'info', downwardAPI: { items: [{ path: 'labels', fieldRef: { fieldPath: 'metadata.labels' } }, { path: 'cpu', resourceFieldRef: { containerName: 'c', resource: 'limits.cpu', divisor: '1m' } }] } },
    { name: 'kube-api-access-abcde', projected: { defaultMode: 420, sources: [{ serviceAccountToken: { expirationSeconds: 3607, path: 'token' } }, { configMap: { name: 'kube-root-ca.crt', items: [{ key: 'ca.crt', path: 'ca.crt' }] } }, { downwardAPI: { items: [{ path: 'namespace', fieldRef: { apiVersion: 'v1', fieldPath: 'metadata.namespace' } }] } }] } },
  ], containers: [ctr({ volumeMounts: [{ name: 'cfg', mountPath: '/etc/app/', readOnly: true }, { name: 'cache', mountPath: '/cache', subPathExpr: '$(POD)' }, { name: 'kube-api-access-abcde', mountPath: '/var/run/secrets/kubernetes.io/serviceaccount', readOnly: true }],
    envFrom: [{ prefix: 'P_', configMapRef: { name: 'app' } }] })] }));
  if (!r.ok) return t.fail(JSON.stringify(r.problems));
  t.equal(r.plan.serviceAccountName, 'reader');
  t.equal(r.plan.enableServiceLinks, false);
  t.same(r.plan.hostAliases, [{ ip: '10.1.2.3', hostnames: ['a.local'] }]);
  t.same(r.plan.volumes.map((v) => v.source), [
    { kind: 'emptyDir', medium: 'Memory', sizeLimit: '64Mi' },
    { kind: 'configMap', name: 'app', items: [{ key: 'k', path: 'dir/k', mode: 0o400 }], defaultMode: 0o644, optional: true },
    { kind: 'secret', name: 's', items: [], defaultMode: 0o600, optional: false },
    { kind: 'downwardAPI', items: [{ path: 'labels', fieldRef: 'metadata.labels', resourceFieldRef: null, mode: null }, { path: 'cpu', fieldRef: null, resourceFieldRef: { containerName: 'c', resource: 'limits.cpu', divisor: '1m' }, mode: null }], defaultMode: 0o644 },
    { kind: 'projected', defaultMode: 420, sources: [{ kind: 'serviceAccountToken', audience: '', expirationSeconds: 3607, path: 'token' }, { kind: 'configMap', name: 'kube-root-ca.crt', items: [{ key: 'ca.crt', path: 'ca.crt', mode: null }], optional: false }, { kind: 'downwardAPI', items: [{ path: 'namespace', fieldRef: 'metadata.namespace', resourceFieldRef: null, mode: null }] }] },
  ]);
  const c = r.plan.containers[0]!;
  t.same(c.volumeMounts.map((m) => [m.mountPath, m.readOnly, m.subPathExpr]), [['/etc/app', true, ''], ['/cache', false, '$(POD)'], ['/var/run/secrets/kubernetes.io/serviceaccount', true, '']], 'mountPath normalised');
  t.same(c.envFrom, [{ prefix: 'P_', kind: 'configMap', name: 'app', optional: false }]);

  const bad = planPod(pod({ volumes: [
    { name: 'Bad_Name', emptyDir: {} }, { name: 'two', emptyDir: {}, configMap: { name: 'x' } }, { name: 'dup', emptyDir: {} }, { name: 'dup', emptyDir: {} },
    { name: 'items', configMap: { name: 'x', items: [{ key: 'k', path: '../escape' }, { key: 'k', path: '/abs' }, { key: 'k', path: '..data/x' }], defaultMode: 0o1777 } },
    { name: 'tok', projected: { sources: [{ serviceAccountToken: { path: 't', expirationSeconds: 60 } }, { clusterTrustBundle: { name: 'b', path: 'b' } }] } },
    { name: 'mem', emptyDir: { medium: 'HugePages' } },
    { name: 'dn', downwardAPI: { items: [{ path: 'x', fieldRef: { fieldPath: 'spec.nodeName' } }, { path: 'y', resourceFieldRef: { resource: 'limits.cpu' } }] } },
  ], containers: [ctr({ volumeMounts: [{ name: 'nope', mountPath: '/x' }, { name: 'dup', mountPath: 'relative' }, { name: 'dup', mountPath: '/' }, { name: 'dup', mountPath: '/m', subPath: '../up' }, { name: 'dup', mountPath: '/m/' }, { name: 'dup', mountPath: '/n', recursiveReadOnly: 'Enabled' }], envFrom: [{ configMapRef: { name: 'a' }, secretRef: { name: 'b' } }] })] }));
  if (bad.ok) return t.fail('refused');
  t.same(bad.problems.map((p) => p.field), [
    'spec.volumes[0].name', 'spec.volumes[1]', 'spec.volumes[4].configMap.defaultMode', 'spec.volumes[4].configMap.items[0].path', 'spec.volumes[4].configMap.items[1].path', 'spec.volumes[4].configMap.items[2].path',
    'spec.volumes[5].projected.sources[0].serviceAccountToken.expirationSeconds', 'spec.volumes[5].projected.sources[1].clusterTrustBundle', 'spec.volumes[6].emptyDir.medium',
    'spec.volumes[7].downwardAPI.items[0].fieldRef.fieldPath', 'spec.volumes[3].name',
    'spec.containers[0].envFrom[0]', 'spec.containers[0].volumeMounts[0].name', 'spec.containers[0].volumeMounts[1].mountPath', 'spec.containers[0].volumeMounts[2].mountPath', 'spec.containers[0].volumeMounts[3].subPath',
    'spec.containers[0].volumeMounts[4].mountPath', 'spec.containers[0].volumeMounts[5].recursiveReadOnly', 'spec.volumes[7]',
  ]);
});

t.test('images: only nodenet/host; others never pull', async (t) => {
  t.equal(imageProblem('nodenet/host'), null);
  t.equal(imageProblem('nodenet/host:latest'), null);
  t.match(imageProblem('busybox:1.36'), { reason: 'ErrImageNeverPull', message: /cannot pull images; use image nodenet\/host/ });
});

t.test('limits on cpu and memory are planned (the kubelet enforces them with cgroups); one that is no quantity is refused', async (t) => {
  const r = planPod(pod({ ...DEFAULTS, containers: [ctr({ resources: { requests: { cpu: '100m' }, limits: { cpu: '100m', memory: '32Mi' } } })] }));
  t.ok(r.ok);
  if (r.ok) t.same(r.plan.containers[0]!.resources, { requests: { cpu: '100m' }, limits: { cpu: '100m', memory: '32Mi' } });
  const bad = planPod(pod({ ...DEFAULTS, containers: [ctr({ resources: { limits: { memory: 'lots' } } })] }));
  t.match(bad, { ok: false, problems: [{ field: 'spec.containers[0].resources.limits.memory', message: '"lots" is not a quantity' }] });
});

t.test('dnsPolicy and dnsConfig: planned for resolv-conf.ts; checked as the API server checks them', async (t) => {
  const plan = (spec: Record<string, unknown>) => planPod(pod({ containers: [ctr()], ...spec }));
  const fields = (spec: Record<string, unknown>) => {
    const r = plan(spec);
    return r.ok ? [] : r.problems.map((p) => `${p.field}: ${p.message}`);
  };
  const ok = plan({ dnsPolicy: 'None', dnsConfig: { nameservers: ['1.2.3.4', 'fd00::53'], searches: ['ns1.svc.cluster-domain.example', 'my.dns.search.suffix.'], options: [{ name: 'ndots', value: '2' }, { name: 'edns0' }] } });
  if (!ok.ok) return t.fail(JSON.stringify(ok.problems));
  t.same(ok.plan.dns, { policy: 'None', config: { nameservers: ['1.2.3.4', 'fd00::53'], searches: ['ns1.svc.cluster-domain.example', 'my.dns.search.suffix.'], options: [{ name: 'ndots', value: '2' }, { name: 'edns0', value: null }] } });
  for (const p of ['ClusterFirst', 'ClusterFirstWithHostNet', 'Default']) {
    const r = plan({ dnsPolicy: p });
    t.same(r.ok && r.plan.dns, { policy: p, config: null }, p);
  }
  t.same(plan({}).ok && (plan({}) as { plan: { dns: unknown } }).plan.dns, { policy: 'ClusterFirst', config: null }, 'absent: ClusterFirst, the API server\'s default');
  t.same(plan({ dnsConfig: { searches: ['extra.example'] } }).ok, true, 'a dnsConfig with any policy');

  t.same(fields({ dnsPolicy: 'Cluster' }), ['spec.dnsPolicy: Unsupported value: "Cluster": supported values: "ClusterFirst", "ClusterFirstWithHostNet", "Default", "None"']);
  t.same(fields({ dnsPolicy: 'None' }), ['spec.dnsConfig: must provide `dnsConfig` when `dnsPolicy` is None']);
  t.same(fields({ dnsPolicy: 'None', dnsConfig: { searches: ['a.example'] } }), ['spec.dnsConfig.nameservers: must provide at least one DNS nameserver when `dnsPolicy` is None']);
  t.same(fields({ dnsConfig: { nameservers: ['1.1.1.1', '1.1.1.2', '1.1.1.3', 'dns.example'] } }), [
    'spec.dnsConfig.nameservers: must not have more than 3 nameservers',
    'spec.dnsConfig.nameservers[3]: "dns.example": must be a valid IP address',
  ]);
  const many = Array.from({ length: 33 }, (_, i) => `d${i}.example`);
  t.same(fields({ dnsConfig: { searches: many } }), ['spec.dnsConfig.searches: must not have more than 32 search paths']);
  const wide = Array.from({ length: 11 }, (_, i) => `${String(i % 10).repeat(63)}.${String(i % 10).repeat(63)}.${String(i % 10).repeat(63)}.example`);
  t.same(fields({ dnsConfig: { searches: wide } }), ['spec.dnsConfig.searches: must not have more than 2048 characters (including spaces) in the search list']);
  t.same(fields({ dnsConfig: { searches: ['Upper.example', 'a..b', 'ok.example.', '-x.example'] } }), [
    'spec.dnsConfig.searches[0]: "Upper.example": must be a lowercase RFC 1123 subdomain (at most 253 characters)',
    'spec.dnsConfig.searches[1]: "a..b": must be a lowercase RFC 1123 subdomain (at most 253 characters)',
    'spec.dnsConfig.searches[3]: "-x.example": must be a lowercase RFC 1123 subdomain (at most 253 characters)',
  ]);
  t.same(fields({ dnsConfig: { options: [{ value: '2' }, { name: 'ndots', value: 2 }], extra: 1 } }), [
    'spec.dnsConfig.options[0].name: Required value',
    'spec.dnsConfig.options[1].value: must be a string',
    'spec.dnsConfig.extra: unknown field',
  ]);
  t.same(fields({ dnsConfig: { nameservers: '1.1.1.1' } }), ['spec.dnsConfig.nameservers: must be a list of strings']);
});
