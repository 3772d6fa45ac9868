/**
 * The admission chain (pure logic over a real store): the plugins' order and the flags, and each plugin's rules in
 * upstream's words: NamespaceLifecycle, ServiceAccount, NodeRestriction, DefaultTolerationSeconds (LimitRanger and
 * ResourceQuota: quota.test.ts).
 */
import t from 'tap';
import { FakeClock } from '../../lib/reconcile/clock.fake.js';
import { openTestStore as openStore } from '../testing/store.js';
import type { Test } from 'tap';
import { RESOURCES } from '../api/resources.js';
import type { User } from '../auth/authz.js';
import { Admission, enabledPlugins, PLUGIN_ORDER, type AdmissionRequest, type Operation } from './admission.js';
import { isKubeletLabel, makePlugins } from './plugins.js';

async function openTestStore(t: Test, o: { clock: FakeClock }) {
  const ts = openStore(o);
  t.teardown(() => ts.close());
  return ts;
}
const R = (resource: string) => RESOURCES.find((r) => r.resource === resource)!;
const admin: User = { name: 'admin', groups: ['system:masters'] };
const node1: User = { name: 'system:node:n1', groups: ['system:nodes', 'system:authenticated'], node: 'n1' };
const req = (operation: Operation, resource: string, o: Partial<AdmissionRequest> = {}): AdmissionRequest =>
  ({ operation, resource: R(resource), subresource: '', namespace: 'default', name: 'x', user: admin, dryRun: false, ...o });

t.test('the flags: every plugin on by default, in upstream\'s order whatever the flags\' order; unknown names refused', async (t) => {
  t.same(enabledPlugins(), [...PLUGIN_ORDER]);
  t.same(enabledPlugins([], ['ServiceAccount']), ['NamespaceLifecycle', 'LimitRanger', 'NodeRestriction', 'Priority', 'DefaultTolerationSeconds', 'ResourceQuota']);
  t.throws(() => enabledPlugins(['PodSecurity']), /--enable-admission-plugins: unknown admission plugin "PodSecurity"; nodenet has NamespaceLifecycle, LimitRanger, ServiceAccount, NodeRestriction, Priority, DefaultTolerationSeconds, ResourceQuota/);
  t.throws(() => enabledPlugins(['ServiceAccount'], ['ServiceAccount']), /cannot be both enabled and disabled/);
  const order: string[] = [];
  const mk = (name: string) => ({ name, admit: () => { order.push(`admit ${name}`); }, validate: () => { order.push(`validate ${name}`); } });
  const all = Object.fromEntries(PLUGIN_ORDER.map((n) => [n, mk(n)])) as never;
  const a = Admission.of(all, ['DefaultTolerationSeconds', 'NamespaceLifecycle']);
  t.same(a.names, ['NamespaceLifecycle', 'DefaultTolerationSeconds']);
  await a.admit(req('CREATE', 'pods'), {}, null);
  await a.validate(req('CREATE', 'pods'), {}, null);
  t.same(order, ['admit NamespaceLifecycle', 'admit DefaultTolerationSeconds', 'validate NamespaceLifecycle', 'validate DefaultTolerationSeconds']);
});

t.test('NamespaceLifecycle: the namespace must exist and not be terminating; the four system namespaces cannot go', async (t) => {
  const ts = await openTestStore(t, { clock: new FakeClock() });
  const p = makePlugins({ cache: ts.cache, storage: ts.storage }).NamespaceLifecycle;
  await t.rejects((async () => p.validate!(req('CREATE', 'services', { namespace: 'nope' }), {}, null))(), /namespaces "nope" not found/);
  await ts.storage.create('namespaces//live', { apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'live' } });
  await ts.storage.create('namespaces//dying', { apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'dying', deletionTimestamp: '2026-01-01T00:00:00Z' }, status: { phase: 'Terminating' } });
  await t.resolves((async () => p.validate!(req('CREATE', 'services', { namespace: 'live' }), {}, null))(), 'found in the storage before the cache has it');
  await t.rejects((async () => p.validate!(req('CREATE', 'services', { namespace: 'dying', name: 's' }), {}, null))(), /services "s" is forbidden: unable to create new content in namespace dying because it is being terminated/);
  await t.resolves((async () => p.validate!(req('CREATE', 'events', { namespace: 'dying' }), {}, null))(), 'Events may still be written');
  for (const ns of ['default', 'kube-system', 'kube-public', 'kube-node-lease']) {
    await t.rejects((async () => p.validate!(req('DELETE', 'namespaces', { namespace: '', name: ns }), null, {}))(), new RegExp(`namespaces "${ns}" is forbidden: this namespace may not be deleted`));
  }
  await t.resolves((async () => p.validate!(req('DELETE', 'namespaces', { namespace: '', name: 'live' }), null, {}))());
});

t.test('ServiceAccount: default named, the account must exist (default looked for again a while), mirror Pods name none', async (t) => {
  const ts = await openTestStore(t, { clock: new FakeClock() });
  let slept = 0;
  const p = makePlugins({ cache: ts.cache, storage: ts.storage, serviceAccountWait: { totalMs: 600, everyMs: 200 }, sleep: async (ms) => { slept += ms; } }).ServiceAccount;
  const pod = (sa?: string, annotations?: Record<string, string>) => ({ metadata: { name: 'p', ...(annotations ? { annotations } : {}) }, spec: { containers: [], ...(sa ? { serviceAccountName: sa } : {}) } });
  const o = pod();
  await p.admit!(req('CREATE', 'pods'), o, null);
  t.equal(o.spec.serviceAccountName, 'default');
  await t.rejects((async () => p.validate!(req('CREATE', 'pods', { name: 'p' }), o, null))(), /pods "p" is forbidden: error looking up service account default\/default: serviceaccount "default" not found/);
  t.equal(slept, 600, 'the default one looked for again for the wait');
  slept = 0;
  await t.rejects((async () => p.validate!(req('CREATE', 'pods', { name: 'p' }), pod('robot'), null))(), /serviceaccount "robot" not found/);
  t.equal(slept, 0, 'another one once');
  await ts.storage.create('serviceaccounts/default/robot', { apiVersion: 'v1', kind: 'ServiceAccount', metadata: { name: 'robot', namespace: 'default' } });
  await t.resolves((async () => p.validate!(req('CREATE', 'pods'), pod('robot'), null))());
  const mirror = pod(undefined, { 'kubernetes.io/config.mirror': 'x' });
  await p.admit!(req('CREATE', 'pods'), mirror, null);
  t.notOk(mirror.spec.serviceAccountName, 'a mirror Pod gets none');
  await t.rejects((async () => p.validate!(req('CREATE', 'pods', { name: 'p' }), pod('robot', { 'kubernetes.io/config.mirror': 'x' }), null))(), /a mirror pod may not reference service accounts/);
});

t.test('NodeRestriction: a node keeps to its own Node, its labels and taints, and mirror Pods', async (t) => {
  const ts = await openTestStore(t, { clock: new FakeClock() });
  const p = makePlugins({ cache: ts.cache, storage: ts.storage }).NodeRestriction;
  const node = (labels: Record<string, string>, taints: unknown[] = []) => ({ metadata: { name: 'n1', labels }, spec: { taints } });
  const run = (op: Operation, o: unknown, old: unknown, extra: Partial<AdmissionRequest> = {}) => (async () => p.validate!(req(op, 'nodes', { namespace: '', name: 'n1', user: node1, ...extra }), o as never, old as never))();
  await t.resolves(run('CREATE', node({ 'kubernetes.io/hostname': 'n1', 'topology.kubernetes.io/zone': 'a', 'example.com/x': 'y' }, [{ key: 'k', effect: 'NoSchedule' }]), null), 'its own labels and taints at registration');
  await t.rejects(run('CREATE', node({ 'node-role.kubernetes.io/control-plane': '' }), null), /is not allowed to modify labels: node-role.kubernetes.io\/control-plane/);
  await t.rejects(run('UPDATE', node({}, [{ key: 'k', effect: 'NoSchedule' }]), node({})), /node "n1" is not allowed to modify taints/);
  await t.rejects(run('UPDATE', node({ 'node-restriction.kubernetes.io/pool': 'a' }), node({})), /is not allowed to modify labels: node-restriction.kubernetes.io\/pool/);
  await t.resolves(run('UPDATE', node({ 'kubernetes.io/os': 'linux', 'mine.example/x': '1' }), node({})), 'kubelet labels and unmanaged ones');
  await t.rejects(run('UPDATE', node({}), node({}), { name: 'n2' }), /node "n1" is not allowed to modify node "n2"/);
  await t.resolves((async () => p.validate!(req('UPDATE', 'nodes', { namespace: '', name: 'n1', user: admin }), node({}, [{ key: 'k' }]), node({})))(), 'others are not restricted');
  const pod = (annotations: Record<string, string>, nodeName: string) => ({ metadata: { name: 'p', annotations }, spec: { nodeName } });
  await t.rejects((async () => p.validate!(req('CREATE', 'pods', { user: node1, name: 'p' }), pod({}, 'n1'), null))(), /node "n1" can only create mirror pods/);
  await t.rejects((async () => p.validate!(req('CREATE', 'pods', { user: node1, name: 'p' }), pod({ 'kubernetes.io/config.mirror': 'x' }, 'n2'), null))(), /can only create pods with spec.nodeName set to itself/);
  t.ok(isKubeletLabel('kubernetes.io/hostname') && isKubeletLabel('node.kubernetes.io/instance-type') && isKubeletLabel('kubelet.kubernetes.io/x'));
  t.notOk(isKubeletLabel('node-role.kubernetes.io/worker'));
});

t.test('DefaultTolerationSeconds: 300 s for not-ready and unreachable unless tolerated already', async (t) => {
  const ts = await openTestStore(t, { clock: new FakeClock() });
  const p = makePlugins({ cache: ts.cache, storage: ts.storage }).DefaultTolerationSeconds;
  const o = { spec: { tolerations: [{ key: 'node.kubernetes.io/unreachable', operator: 'Exists', effect: 'NoExecute', tolerationSeconds: 10 }] } };
  await p.admit!(req('CREATE', 'pods'), o, null);
  t.same(o.spec.tolerations, [
    { key: 'node.kubernetes.io/unreachable', operator: 'Exists', effect: 'NoExecute', tolerationSeconds: 10 },
    { key: 'node.kubernetes.io/not-ready', operator: 'Exists', effect: 'NoExecute', tolerationSeconds: 300 },
  ]);
  const svc = { spec: {} };
  await p.admit!(req('CREATE', 'services'), svc, null);
  t.same(svc, { spec: {} }, 'Pods only');
});

t.test('ServiceAccount: the kube-api-access projected volume, as upstream mounts it, unless automount is off', async (t) => {
  const ts = await openTestStore(t, { clock: new FakeClock() });
  const p = makePlugins({ cache: ts.cache, storage: ts.storage, projectServiceAccountToken: true }).ServiceAccount;
  await ts.storage.create('serviceaccounts/default/quiet', { apiVersion: 'v1', kind: 'ServiceAccount', metadata: { name: 'quiet', namespace: 'default' }, automountServiceAccountToken: false });
  const pod = (extra: Record<string, unknown> = {}) => ({ metadata: { name: 'p' }, spec: { containers: [{ name: 'a' }, { name: 'b', volumeMounts: [{ name: 'mine', mountPath: '/var/run/secrets/kubernetes.io/serviceaccount' }] }], initContainers: [{ name: 'i' }], ...extra } });
  const o = pod();
  await p.admit!(req('CREATE', 'pods'), o, null);
  const spec = o.spec as unknown as { volumes: { name: string; projected: unknown }[]; containers: { volumeMounts?: unknown[] }[]; initContainers: { volumeMounts?: unknown[] }[] };
  t.equal(spec.volumes.length, 1);
  t.match(spec.volumes[0]!.name, /^kube-api-access-[bcdfghjklmnpqrstvwxz2456789]{5}$/);
  t.same(spec.volumes[0]!.projected, { defaultMode: 420, sources: [
    { serviceAccountToken: { expirationSeconds: 3607, path: 'token' } },
    { configMap: { name: 'kube-root-ca.crt', items: [{ key: 'ca.crt', path: 'ca.crt' }] } },
    { downwardAPI: { items: [{ path: 'namespace', fieldRef: { apiVersion: 'v1', fieldPath: 'metadata.namespace' } }] } },
  ] });
  t.same(spec.containers[0]!.volumeMounts, [{ name: spec.volumes[0]!.name, readOnly: true, mountPath: '/var/run/secrets/kubernetes.io/serviceaccount' }]);
  t.equal(spec.containers[1]!.volumeMounts!.length, 1, 'a container mounting its own there keeps it');
  t.equal(spec.initContainers[0]!.volumeMounts!.length, 1, 'init containers too');
  for (const [what, o2] of [['automountServiceAccountToken: false on the Pod', pod({ automountServiceAccountToken: false })], ['on its ServiceAccount', pod({ serviceAccountName: 'quiet' })]] as const) {
    await p.admit!(req('CREATE', 'pods'), o2, null);
    t.notOk((o2.spec as { volumes?: unknown }).volumes, `none with ${what}`);
  }
  const off = makePlugins({ cache: ts.cache, storage: ts.storage }).ServiceAccount;
  const o3 = pod();
  await off.admit!(req('CREATE', 'pods'), o3, null);
  t.notOk((o3.spec as { volumes?: unknown }).volumes, 'none without a CA to project (no TLS)');
});
