import t from 'tap';
import { expand, resolveEnv, serviceEnv, type EnvContext } from './env.js';
import { planPod, type PodPlan } from './pod-spec.js';

type O = Record<string, unknown>;
const svc = (ns: string, name: string, clusterIP: string, ports: O[]): O => ({ metadata: { namespace: ns, name }, spec: { clusterIP, ports } });
const KUBERNETES = svc('default', 'kubernetes', '10.96.0.1', [{ name: 'https', port: 443, protocol: 'TCP', targetPort: 6443 }]);
const SERVICES = [
  KUBERNETES,
  svc('app', 'web-api', '10.96.0.20', [{ name: 'http', port: 80, protocol: 'TCP' }, { name: 'dns', port: 53, protocol: 'UDP' }]),
  svc('app', '9lives', '10.96.0.21', [{ port: 8080 }]),
  svc('app', 'headless', 'None', [{ port: 80 }]),
  svc('other', 'elsewhere', '10.96.0.30', [{ port: 80 }]),
];

function setup(container: O, o: { spec?: O; configMaps?: Record<string, O>; secrets?: Record<string, O>; services?: O[] } = {}): { plan: PodPlan; ctx: EnvContext } {
  const pod = { metadata: { name: 'p', namespace: 'app', uid: 'u1', labels: { tier: 'front' } }, spec: { serviceAccountName: 'sa1', containers: [{ name: 'c', image: 'nodenet/host', command: ['run'], ...container }], ...o.spec } };
  const r = planPod(pod);
  if (!r.ok) throw new Error(JSON.stringify(r.problems));
  return {
    plan: r.plan,
    ctx: {
      pod, plan: r.plan, hostname: 'p', services: o.services ?? SERVICES, node: { cpu: '2', memory: '1Gi', 'ephemeral-storage': '10Gi' },
      fields: { 'metadata.name': 'p', 'metadata.namespace': 'app', 'metadata.uid': 'u1', 'spec.nodeName': 'n1', 'spec.serviceAccountName': 'sa1', 'status.hostIP': '192.168.1.1', 'status.hostIPs': '192.168.1.1', 'status.podIP': '10.244.1.5', 'status.podIPs': '10.244.1.5' },
      configMap: (n) => o.configMaps?.[n] ?? null,
      secret: (n) => o.secrets?.[n] ?? null,
    },
  };
}
const b64 = (s: string) => Buffer.from(s).toString('base64');

t.test('the Service variables: kubernetes always, the namespace\'s Services with links, in upstream\'s format', async (t) => {
  const env = serviceEnv(SERVICES, 'app', true);
  t.same(Object.fromEntries([...env].filter(([k]) => k.startsWith('KUBERNETES_'))), {
    KUBERNETES_SERVICE_HOST: '10.96.0.1', KUBERNETES_SERVICE_PORT: '443', KUBERNETES_SERVICE_PORT_HTTPS: '443',
    KUBERNETES_PORT: 'tcp://10.96.0.1:443', KUBERNETES_PORT_443_TCP: 'tcp://10.96.0.1:443', KUBERNETES_PORT_443_TCP_PROTO: 'tcp',
    KUBERNETES_PORT_443_TCP_PORT: '443', KUBERNETES_PORT_443_TCP_ADDR: '10.96.0.1',
  });
  t.equal(env.get('WEB_API_SERVICE_HOST'), '10.96.0.20', 'dashes to underscores, upper case');
  t.equal(env.get('WEB_API_SERVICE_PORT'), '80', 'the first port');
  t.equal(env.get('WEB_API_SERVICE_PORT_DNS'), '53', 'a named port');
  t.equal(env.get('WEB_API_PORT_53_UDP'), 'udp://10.96.0.20:53');
  t.equal(env.get('WEB_API_PORT_53_UDP_PROTO'), 'udp');
  t.equal(env.get('_9LIVES_SERVICE_HOST'), '10.96.0.21', 'a leading digit gets an underscore');
  t.notOk([...env.keys()].some((k) => k.startsWith('HEADLESS') || k.startsWith('ELSEWHERE')), 'no headless Service, none of another namespace');
  const off = serviceEnv(SERVICES, 'app', false);
  t.same([...off.keys()].filter((k) => !k.startsWith('KUBERNETES_')), [], 'enableServiceLinks false: the kubernetes Service only');
  t.equal(serviceEnv([KUBERNETES, svc('app', 'kubernetes', '10.96.0.99', [{ port: 1 }])], 'app', true).get('KUBERNETES_SERVICE_HOST'), '10.96.0.99', 'the namespace\'s own wins');
  t.equal(serviceEnv([svc('app', 'kubernetes', '10.96.0.99', [{ port: 1 }]), KUBERNETES], 'app', true).get('KUBERNETES_SERVICE_HOST'), '10.96.0.99', 'in either order');
});

t.test('env and envFrom: sources in order, env over envFrom, prefixes, invalid keys skipped with the kubelet\'s event, $(VAR) with Service variables', async (t) => {
  const { plan, ctx } = setup({
    envFrom: [{ configMapRef: { name: 'base' } }, { prefix: 'S_', secretRef: { name: 'creds' } }, { configMapRef: { name: 'absent', optional: true } }],
    env: [
      { name: 'LEVEL', value: 'from-env' },
      { name: 'API', value: 'https://$(KUBERNETES_SERVICE_HOST):$(KUBERNETES_SERVICE_PORT)/$(LEVEL)/$(NOPE)' },
      { name: 'PASS', valueFrom: { secretKeyRef: { name: 'creds', key: 'password' } } },
      { name: 'MODE', valueFrom: { configMapKeyRef: { name: 'base', key: 'mode' } } },
      { name: 'MAYBE', valueFrom: { configMapKeyRef: { name: 'base', key: 'nokey', optional: true } } },
      { name: 'TIER', valueFrom: { fieldRef: { fieldPath: "metadata.labels['tier']" } } },
      { name: 'SA', valueFrom: { fieldRef: { fieldPath: 'spec.serviceAccountName' } } },
      { name: 'CPU', valueFrom: { resourceFieldRef: { resource: 'limits.cpu' } } },
    ],
    args: ['$(PASS)', '$(WEB_API_SERVICE_HOST)'],
  }, {
    configMaps: { base: { data: { LEVEL: 'from-cm', mode: 'fast', '1digit.first': 'ok', 'a=b': 'x', 'tab\there': 'y' } } },
    secrets: { creds: { data: { password: b64('s3cret'), user: b64('me') } } },
  });
  const r = resolveEnv(plan.containers[0]!, ctx);
  if (!r.ok) return t.fail(r.message);
  t.equal(r.env['LEVEL'], 'from-env', 'env wins over envFrom');
  t.equal(r.env['S_user'], 'me', 'a prefixed Secret key, decoded');
  t.equal(r.env['API'], 'https://10.96.0.1:443/from-env/$(NOPE)');
  t.equal(r.env['PASS'], 's3cret');
  t.equal(r.env['MODE'], 'fast');
  t.notOk('MAYBE' in r.env, 'an optional missing key leaves the variable out');
  t.equal(r.env['TIER'], 'front');
  t.equal(r.env['SA'], 'sa1');
  t.equal(r.env['CPU'], '2', 'no limit: the node\'s CPUs');
  t.equal(r.env['KUBERNETES_SERVICE_HOST'], '10.96.0.1');
  t.equal(r.env['HOSTNAME'], 'p');
  t.equal(r.env['1digit.first'], 'ok', '1.32\'s relaxed names: a leading digit, a dot');
  t.notOk('a=b' in r.env);
  t.same(r.events, [{ reason: 'InvalidEnvironmentVariableNames', message: 'Keys [a=b, tab\there] from the EnvFrom configMap app/base were skipped since they are considered invalid environment variable names.' }]);
  t.same(r.argv, ['run', 's3cret', '10.96.0.20']);
});

t.test('a missing object or key fails the start in the kubelet\'s words, unless optional', async (t) => {
  const cases: [O, string][] = [
    [{ env: [{ name: 'X', valueFrom: { configMapKeyRef: { name: 'nope', key: 'k' } } }] }, 'configmap "nope" not found'],
    [{ env: [{ name: 'X', valueFrom: { secretKeyRef: { name: 'creds', key: 'nokey' } } }] }, "couldn't find key nokey in Secret app/creds"],
    [{ env: [{ name: 'X', valueFrom: { configMapKeyRef: { name: 'base', key: 'nokey' } } }] }, "couldn't find key nokey in ConfigMap app/base"],
    [{ envFrom: [{ secretRef: { name: 'gone' } }] }, 'secret "gone" not found'],
  ];
  for (const [c, msg] of cases) {
    const { plan, ctx } = setup(c, { configMaps: { base: { data: {} } }, secrets: { creds: { data: {} } } });
    t.match(resolveEnv(plan.containers[0]!, ctx), { ok: false, message: msg }, msg);
  }
  const { plan, ctx } = setup({ env: [{ name: 'X', valueFrom: { secretKeyRef: { name: 'nope', key: 'k', optional: true } } }] });
  const r = resolveEnv(plan.containers[0]!, ctx);
  t.ok(r.ok && !('X' in r.env), 'an optional missing Secret');
  const failing = setup({ env: [{ name: 'X', valueFrom: { configMapKeyRef: { name: 'c', key: 'k' } } }] });
  t.match(resolveEnv(failing.plan.containers[0]!, { ...failing.ctx, configMap: () => { throw new Error('failed to sync configmap cache: timed out waiting for the condition'); } }), { ok: false, message: /failed to sync configmap cache/ }, 'a read that failed');
});

t.test('$(VAR) expansion as the kubelet\'s', async (t) => {
  t.equal(expand('$(A)-$(B)-$$(A)-$-$(', new Map([['A', 'x']])), 'x-$(B)-$(A)-$-$(');
  t.equal(expand('$(A)$(B)', new Map([['A', '1']]), new Map([['A', '2'], ['B', '3']])), '13', 'the first map that has it');
});
