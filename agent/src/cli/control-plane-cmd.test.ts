/**
 * `nodenet control-plane`'s flags become the control plane's options
 * (pure), and the command prints how to reach it and stops it on a signal.
 */
import t from 'tap';
import { realpathSync } from 'node:fs';
import { parseFlags } from './flags.js';
import { addUserArgs, controlPlaneArgs, controlPlaneCommand, parseDurationMs, parseListen, type ControlPlaneArgs } from './control-plane-cmd.js';

t.test('defaults: loopback 6443, TLS, a 5-minute history, no nodes', async (t) => {
  t.same(controlPlaneArgs(new Map()), {
    dataDir: '/var/lib/nodenet/control-plane', host: '127.0.0.1', port: 6443, nodes: [], hosts: [], insecureHttp: false, historyMs: 300_000,
    serviceCIDR: '10.96.0.0/12', nodePortRange: { from: 30000, to: 32767 }, clusterCIDR: '10.244.0.0/16', nodeCIDRMaskSize: 24, nodeMonitorGracePeriodMs: 40_000, orphanPodQuarantineMs: 40_000, storage: { kind: 'sqlite', dir: null }, shutdownDelayMs: 0, eventTtlMs: 3_600_000, logLevel: 'info',
  });
});

t.test('every flag lands in its option; lists are comma-separated', async (t) => {
  const f = parseFlags(['--data-dir', '/tmp/x', '--listen', '[::1]:7443', '--node', 'n1, n2', '--host', '10.0.0.1,cp.local', '--insecure-http', '--history-seconds', '60', '--log-level', 'debug', '--log-file', '/tmp/x.log', '--service-cidr', '10.100.0.0/16', '--service-node-port-range', '31000-31999', '--cluster-cidr', '10.200.0.0/14', '--node-cidr-mask-size', '26', '--node-monitor-grace-period', '1m30s'], {
    'data-dir': { type: 'string' }, listen: { type: 'string' }, node: { type: 'string' }, host: { type: 'string' }, 'insecure-http': { type: 'boolean' }, 'history-seconds': { type: 'string' }, 'log-level': { type: 'string' }, 'log-file': { type: 'string' }, 'service-cidr': { type: 'string' }, 'service-node-port-range': { type: 'string' }, 'cluster-cidr': { type: 'string' }, 'node-cidr-mask-size': { type: 'string' }, 'node-monitor-grace-period': { type: 'string' },
  });
  t.same(controlPlaneArgs(f.flags), { dataDir: '/tmp/x', host: '::1', port: 7443, nodes: ['n1', 'n2'], hosts: ['10.0.0.1', 'cp.local'], insecureHttp: true, historyMs: 60_000, serviceCIDR: '10.100.0.0/16', nodePortRange: { from: 31000, to: 31999 }, clusterCIDR: '10.200.0.0/14', nodeCIDRMaskSize: 26, nodeMonitorGracePeriodMs: 90_000, orphanPodQuarantineMs: 40_000, storage: { kind: 'sqlite', dir: null }, shutdownDelayMs: 0, eventTtlMs: 3_600_000, logLevel: 'debug', logFile: '/tmp/x.log' });
});

t.test('--storage: sqlite:DIR or etcd:URL,... with --etcd-prefix; anything else is a usage error naming the flag', async (t) => {
  const args = (m: Record<string, string>) => controlPlaneArgs(new Map(Object.entries(m)));
  t.same(args({ storage: 'sqlite:/srv/cp' }).storage, { kind: 'sqlite', dir: '/srv/cp' });
  t.same(args({ storage: 'etcd:http://10.0.0.1:2379,http://10.0.0.2:2379' }).storage, { kind: 'etcd', endpoints: 'http://10.0.0.1:2379,http://10.0.0.2:2379', prefix: '/registry' });
  t.same(args({ storage: 'etcd:127.0.0.1:2379', 'etcd-prefix': '/nodenet' }).storage, { kind: 'etcd', endpoints: '127.0.0.1:2379', prefix: '/nodenet' });
  t.throws(() => args({ storage: 'postgres://x' }), /--storage "postgres:\/\/x": sqlite:DIR or etcd:URL/);
  t.throws(() => args({ storage: 'etcd:' }), /--storage: no etcd endpoint given/);
  t.throws(() => args({ storage: 'etcd:https://10.0.0.1:2379' }), /only http:\/\/ is supported/);
  t.throws(() => args({ storage: 'etcd:10.0.0.1:2379', 'etcd-prefix': 'registry/' }), /--etcd-prefix "registry\/": a key prefix/);
  t.throws(() => args({ 'etcd-prefix': '/x' }), /--etcd-prefix: only with --storage etcd/);
});

t.test('bad service ranges are usage errors naming the flag', async (t) => {
  const args = (k: string, v: string) => controlPlaneArgs(new Map([[k, v]]));
  t.throws(() => args('service-cidr', '10.96.0.1/12'), /has host bits set \(did you mean 10\.96\.0\.0\/12\?\)/);
  t.throws(() => args('service-cidr', 'fd00::/108'), /expected an IPv4 CIDR/);
  t.throws(() => args('service-cidr', '10.96.0.0/31'), /too small/);
  t.throws(() => args('service-node-port-range', '32767-30000'), /--service-node-port-range: not a port range/);
  t.throws(() => args('cluster-cidr', '10.244.1.0/16'), /has host bits set/);
  t.throws(() => args('node-cidr-mask-size', '8'), /--node-cidr-mask-size "8": a prefix length between 16/);
});

t.test('--node-monitor-grace-period: seconds or a duration, more than 0', async (t) => {
  const grace = (v: string) => controlPlaneArgs(new Map([['node-monitor-grace-period', v]])).nodeMonitorGracePeriodMs;
  t.equal(grace('40'), 40_000, 'a bare number is seconds');
  t.equal(grace('2.5'), 2_500);
  t.equal(grace('40s'), 40_000);
  t.equal(grace('500ms'), 500);
  t.equal(grace('1m30s'), 90_000);
  t.equal(grace('1h'), 3_600_000);
  for (const bad of ['0', '0s', '', '40x', 's', '-5s', '1m 30s', '40S']) t.throws(() => grace(bad), /--node-monitor-grace-period ".*": a duration more than 0/, bad);
  t.equal(parseDurationMs('1.5m'), 90_000);
  t.equal(parseDurationMs('nope'), null);
});

t.test('--load-balancer-ip-pool: CIDRs and ranges, checked, passed on as given', async (t) => {
  const pool = (v: string) => controlPlaneArgs(new Map([['load-balancer-ip-pool', v]])).loadBalancerPool;
  t.equal(pool('192.0.2.0/28'), '192.0.2.0/28');
  t.equal(pool('192.0.2.10-192.0.2.20,198.51.100.0/30'), '192.0.2.10-192.0.2.20,198.51.100.0/30');
  t.equal(controlPlaneArgs(new Map()).loadBalancerPool, undefined, 'none by default');
  t.throws(() => pool('192.0.2.1/24'), /--load-balancer-ip-pool: 192\.0\.2\.1\/24 has host bits set/);
  t.throws(() => pool('192.0.2.9-192.0.2.1'), /--load-balancer-ip-pool: not an address range/);
  t.throws(() => pool('fd00::/64'), /--load-balancer-ip-pool: not a load-balancer IP pool/);
  const f = parseFlags(['--load-balancer-ip-pool', '10.0.0.0/29'], { 'load-balancer-ip-pool': { type: 'string' } });
  t.equal(controlPlaneArgs(f.flags).loadBalancerPool, '10.0.0.0/29');
});

t.test('HA flags: --advertise-address, --control-plane-endpoint, --shutdown-delay-duration, checked', async (t) => {
  const args = (m: Record<string, string>) => controlPlaneArgs(new Map(Object.entries(m)));
  const a = args({ 'advertise-address': '192.168.77.241', 'control-plane-endpoint': '192.168.77.1:6443', 'shutdown-delay-duration': '3s' });
  t.equal(a.advertiseAddress, '192.168.77.241');
  t.equal(a.controlPlaneEndpoint, '192.168.77.1:6443');
  t.equal(a.shutdownDelayMs, 3000);
  t.equal(args({ 'control-plane-endpoint': 'api.example:443' }).controlPlaneEndpoint, 'api.example:443', 'a name is fine');
  t.throws(() => args({ 'advertise-address': 'api.example' }), /--advertise-address "api.example": an IP address/);
  t.throws(() => args({ 'advertise-address': '0.0.0.0' }), /not 0.0.0.0/);
  t.throws(() => args({ 'control-plane-endpoint': '192.168.77.1' }), /--control-plane-endpoint "192.168.77.1": expected HOST:PORT/);
  t.throws(() => args({ 'control-plane-endpoint': 'x:70000' }), /expected HOST:PORT/);
  t.throws(() => args({ 'shutdown-delay-duration': 'soon' }), /--shutdown-delay-duration "soon": a duration/);
});

t.test('--event-ttl: a duration more than 0, 1h by default (kube-apiserver\'s)', async (t) => {
  const args = (m: Record<string, string>) => controlPlaneArgs(new Map(Object.entries(m)));
  t.equal(args({}).eventTtlMs, 3_600_000);
  t.equal(args({ 'event-ttl': '30m' }).eventTtlMs, 1_800_000);
  t.equal(args({ 'event-ttl': '90' }).eventTtlMs, 90_000, 'a number is seconds');
  t.throws(() => args({ 'event-ttl': '0s' }), /--event-ttl "0s": a duration more than 0/);
  t.throws(() => args({ 'event-ttl': 'forever' }), /--event-ttl "forever": a duration/);
});

t.test('--listen forms', async (t) => {
  t.same(parseListen('0.0.0.0:0'), { host: '0.0.0.0', port: 0 });
  t.same(parseListen('localhost:6443'), { host: 'localhost', port: 6443 });
  t.throws(() => parseListen('::1:6443'), /expected ADDR:PORT/);
  t.throws(() => parseListen('[::1]'), /expected ADDR:PORT/);
});

t.test('the command starts the control plane with the version, prints the kubeconfig, stops on the signal', async (t) => {
  let got: (ControlPlaneArgs & { version: string }) | undefined;
  let stopped = false;
  let out = '';
  let signal!: () => void;
  const done = controlPlaneCommand(['--data-dir', '/tmp/d', '--node', 'a'], {
    version: '9.9.9',
    stdout: (s) => void (out += s),
    startControlPlane: async (a) => {
      got = a;
      return { url: 'https://127.0.0.1:6443', kubeconfig: '/tmp/d/admin.kubeconfig', stop: async () => void (stopped = true) };
    },
    untilSignal: () => new Promise<void>((r) => (signal = r)),
  });
  await new Promise((r) => setImmediate(r));
  t.equal(got?.version, '9.9.9');
  t.same(got?.nodes, ['a']);
  t.match(out, /serving at https:\/\/127\.0\.0\.1:6443\n {2}export KUBECONFIG=\/tmp\/d\/admin\.kubeconfig\n/);
  t.notOk(stopped, 'runs until the signal');
  signal();
  t.equal(await done, 0);
  t.ok(stopped);
});

t.test('control-plane migrate: the subcommand runs the migration with its flags and prints the report; no server starts', async (t) => {
  let out = '';
  let asked: unknown = null;
  const code = await controlPlaneCommand(['migrate', '--from', 'sqlite:/tmp/d', '--to', 'etcd:http://127.0.0.1:2379'], {
    version: '9.9.9',
    stdout: (s) => void (out += s),
    startControlPlane: async () => { throw new Error('no server for migrate'); },
    migrate: async (a) => {
      asked = { dir: a.dir, endpoints: a.endpoints, prefix: a.prefix };
      return { sourceRev: 42, targetRevBefore: 1, targetRev: 3, copied: 7, skipped: 0, extra: 0, verified: 7, transactions: 1, resources: [{ resource: 'services', copied: 7, skipped: 0 }], ms: 120 };
    },
  });
  t.equal(code, 0);
  t.same(asked, { dir: '/tmp/d', endpoints: 'http://127.0.0.1:2379', prefix: '/registry' });
  t.match(out, /migrated 7 object\(s\) from sqlite:\/tmp\/d \(revision 42\)/);
  t.match(out, /services\s+7/);
});

t.test('control-plane add-user: one NAME, groups comma-separated, the data directory', async (t) => {
  t.same(addUserArgs(['alice', '--group', 'system:masters, dev']), { name: 'alice', groups: ['system:masters', 'dev'], dataDir: '/var/lib/nodenet/control-plane' });
  t.same(addUserArgs(['bob', '--data-dir', '/tmp/d']), { name: 'bob', groups: [], dataDir: '/tmp/d' });
  t.equal(addUserArgs(['--help']), 'help');
  t.throws(() => addUserArgs([]), { name: 'FlagError', message: /add-user takes one NAME/ });
  t.throws(() => addUserArgs(['a', 'b']), { name: 'FlagError', message: /add-user takes one NAME/ });
  t.throws(() => addUserArgs(['a/b']), { name: 'FlagError', message: /no slash/ });
});

t.test('admission, anonymous and token flags: named plugins only, refused when unknown', async (t) => {
  const args = (flags: Record<string, string>) => controlPlaneArgs(new Map(Object.entries(flags)));
  t.same(args({ 'disable-admission-plugins': 'ServiceAccount,NodeRestriction' }).disableAdmissionPlugins, ['ServiceAccount', 'NodeRestriction']);
  t.same(args({ 'enable-admission-plugins': 'NamespaceLifecycle' }).enableAdmissionPlugins, ['NamespaceLifecycle']);
  t.throws(() => args({ 'enable-admission-plugins': 'PodSecurity' }), /unknown admission plugin "PodSecurity"; nodenet has NamespaceLifecycle, LimitRanger, ServiceAccount, NodeRestriction, Priority, DefaultTolerationSeconds, ResourceQuota/);
  t.equal(args({ 'anonymous-auth': 'false' }).anonymousAuth, false);
  t.equal(args({}).anonymousAuth, undefined, 'on by default');
  t.throws(() => args({ 'anonymous-auth': 'maybe' }), /--anonymous-auth "maybe": true or false/);
  t.equal(args({ 'service-account-max-token-expiration': '24h' }).maxTokenExpirationSeconds, 86_400);
  t.throws(() => args({ 'service-account-max-token-expiration': '1m' }), /at least 10m/);
});

t.test('--disable ADDON: repeatable and comma lists (k3s\'s), unknown names refused; the entry script reaches the control plane', async (t) => {
  const SPECS = { disable: { type: 'string', multiple: true } } as const;
  const disable = (argv: string[]) => controlPlaneArgs(parseFlags(argv, SPECS).flags).disable;
  t.equal(disable([]), undefined, 'every addon by default');
  t.same(disable(['--disable', 'coredns']), ['coredns']);
  t.same(disable(['--disable', 'coredns', '--disable', 'coredns,coredns']), ['coredns'], 'given twice, and as a list');
  t.throws(() => disable(['--disable', 'coredns', '--disable', 'servicelb']), /--disable "servicelb": not an addon nodenet installs \(it installs coredns\)/);
  let got: { nodenetEntry?: string; disable?: readonly string[] } | undefined;
  let signal!: () => void;
  const start = (entry?: string) => controlPlaneCommand(['--disable', 'coredns'], {
    version: '9.9.9', stdout: () => {}, ...(entry ? { entry } : {}),
    startControlPlane: async (a) => { got = a; return { url: 'https://127.0.0.1:6443', kubeconfig: '/tmp/k', stop: async () => {} }; },
    untilSignal: () => new Promise<void>((r) => (signal = r)),
  });
  let done = start('/opt/nodenet/dist/nodenet.js');
  await new Promise((r) => setImmediate(r));
  t.equal(got?.nodenetEntry, '/opt/nodenet/dist/nodenet.js');
  t.same(got?.disable, ['coredns']);
  signal();
  await done;
  done = start();
  await new Promise((r) => setImmediate(r));
  t.equal(got?.nodenetEntry, realpathSync(process.argv[1]!), 'by default this process\'s own entry script, its real path');
  signal();
  await done;
  await t.rejects(controlPlaneCommand(['--disable', 'nope'], { version: '1', stdout: () => {}, startControlPlane: async () => { throw new Error('not started'); } }), /--disable "nope"/);
});
