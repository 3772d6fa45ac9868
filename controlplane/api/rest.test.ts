/**
 * The REST verbs against kube-apiserver's generic registry behaviour, on a real storage and watch cache over the
 * validating FakePersistence and a FakeClock: what create, update, patch, delete, list and the
 * status and scale subresources store, answer and refuse, with the Status (code, reason, message,
 * details) a client sees when they refuse.
 */
import t, { type Test } from 'tap';
import { Admission } from '../admission/admission.js';
import { makePlugins } from '../admission/plugins.js';
import { FakeClock } from '../../lib/reconcile/clock.fake.js';
import { FakePersistence } from '../store/persistence.fake.js';
import { openTestStore } from '../testing/store.js';
import type { KObject } from '../store/types.js';
import { RESOURCES, type Resource } from './resources.js';
import { Rest } from './rest.js';
import { loadSchemas } from './schema.js';
import { failure } from '../testing/control-plane.js';
import { finalizeNamespace } from '../registry/namespace.js';
import { bindPod } from '../registry/pod.js';
import { scaleOf, updateScale } from '../registry/scale.js';

type O = Record<string, unknown>;
const schemas = await loadSchemas([...RESOURCES.map((r) => r.model), 'V1Scale', 'V1Status', 'V1DeleteOptions', 'V1ListMeta']);
const R = (resource: string): Resource => RESOURCES.find((r) => r.resource === resource)!;
const NS = R('namespaces');
const NODE = R('nodes');
const SVC = R('services');
const POD = R('pods');
const DEPLOY = R('deployments');
const RS = R('replicasets');
const LEASE = R('leases');
const EVENT = R('events');
const START = Date.parse('2024-05-01T10:00:00Z');

async function setup(t: Test) {
  const clock = new FakeClock(START);
  const persistence = new FakePersistence();
  const ts = openTestStore({ persistence, clock });
  const store = ts.cache;
  let n = 0;
  const rest = new Rest({ storage: ts.storage, cache: store, schemas, admission: Admission.of(makePlugins({ cache: store, storage: ts.storage }), ['NamespaceLifecycle', 'DefaultTolerationSeconds']), clock, uid: () => `uid-${++n}` });
  t.teardown(() => ts.close());
  await rest.create(NS, '', { apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'default' } });
  return { clock, persistence, store, storage: ts.storage, rest };
}


const meta = (o: Readonly<KObject> | KObject): O => (o.metadata ?? {}) as O;
const spec = (o: Readonly<KObject> | KObject): O => (o['spec'] ?? {}) as O;

const svc = (name = 'web', s: O = {}, m: O = {}): KObject => ({ apiVersion: 'v1', kind: 'Service', metadata: { name, ...m }, spec: { selector: { app: name }, ports: [{ port: 80 }], ...s } });
const pod = (name = 'p', s: O = {}): KObject => ({ apiVersion: 'v1', kind: 'Pod', metadata: { name }, spec: { containers: [{ name: 'web', image: 'nginx:1.25' }], ...s } });
const template = (app: string) => ({ metadata: { labels: { app } }, spec: { containers: [{ name: 'web', image: 'nginx:1.25' }] } });
const deploy = (name = 'web', s: O = {}, m: O = {}): KObject => ({ apiVersion: 'apps/v1', kind: 'Deployment', metadata: { name, ...m }, spec: { selector: { matchLabels: { app: name } }, template: template(name), ...s } });
const rset = (name = 'web-1', s: O = {}): KObject => ({ apiVersion: 'apps/v1', kind: 'ReplicaSet', metadata: { name }, spec: { selector: { matchLabels: { app: 'web' } }, template: template('web'), ...s } });

t.test('create: uid, creationTimestamp, resourceVersion, and generation 1 for the kinds that count one', async (t) => {
  const { rest, store, clock } = await setup(t);
  await clock.advance(1500);
  const d = await rest.create(DEPLOY, 'default', deploy('web', {}, { uid: 'mine', creationTimestamp: '2000-01-01T00:00:00Z', generation: 9 }));
  t.equal(d.code, 201);
  t.equal(meta(d.object)['uid'], 'uid-2', 'the server picks the uid');
  t.equal(meta(d.object)['creationTimestamp'], '2024-05-01T10:00:01Z', 'the clock, in whole seconds');
  t.equal(meta(d.object)['resourceVersion'], String(store.rev));
  t.equal(meta(d.object)['generation'], 1);
  t.equal(meta(d.object)['namespace'], 'default', 'the namespace of the request');
  t.same(d.object['status'], {}, 'a Deployment starts with an empty status');
  t.same(store.get('deployments.apps/default/web')?.object, d.object, 'stored as answered');

  const s = await rest.create(SVC, 'default', svc('web', {}, { generation: 4 }));
  t.notOk('generation' in meta(s.object), 'a Service has no generation in kube-apiserver (nor does a client get to set one)');
  t.same(s.object['status'], { loadBalancer: {} });
  const p = await rest.create(POD, 'default', { ...pod(), status: { phase: 'Running', podIP: '10.0.0.1' } });
  t.same(p.object['status'], { phase: 'Pending', qosClass: 'BestEffort' }, 'a submitted status is dropped');
  t.equal(meta(p.object)['generation'], 1);
  const n = await rest.create(NODE, '', { apiVersion: 'v1', kind: 'Node', metadata: { name: 'node-1' }, status: { addresses: [{ type: 'InternalIP', address: '192.168.1.10' }] } });
  t.same(n.object['status'], { addresses: [{ type: 'InternalIP', address: '192.168.1.10' }] }, 'a Node keeps the status its kubelet registers it with');
  t.notOk('namespace' in meta(n.object), 'cluster-scoped: no namespace');

  const wrongKind = await failure(() => rest.create(SVC, 'default', { ...svc(), kind: 'Pod' }));
  t.match(wrongKind, { code: 400, reason: 'BadRequest', message: 'the kind in the data (Pod) does not match the expected kind (Service)' });
  const wrongType = await failure(() => rest.create(SVC, 'default', svc('x', { ports: [{ port: '80' }] })));
  t.match(wrongType, { code: 400, reason: 'BadRequest', message: 'Service in version "v1" cannot be handled as a Service: json: cannot unmarshal string into Go struct field ServicePort.spec.ports.port of type int32' });
  const withRV = await failure(() => rest.create(SVC, 'default', svc('x', {}, { resourceVersion: '5' })));
  t.match(withRV, { code: 400, message: 'resourceVersion should not be set on objects to be created' });
});

t.test('generateName: a name made from the prefix, kept generateName; no name at all is a 422', async (t) => {
  const { rest } = await setup(t);
  const a = await rest.create(POD, 'default', { ...pod(), metadata: { generateName: 'web-' } });
  const b = await rest.create(POD, 'default', { ...pod(), metadata: { generateName: 'web-' } });
  t.match(meta(a.object)['name'], /^web-[bcdfghjklmnpqrstvwxz2456789]{5}$/);
  t.not(meta(a.object)['name'], meta(b.object)['name']);
  t.equal(meta(a.object)['generateName'], 'web-');
  const named = await rest.create(POD, 'default', { ...pod(), metadata: { name: 'fixed', generateName: 'web-' } });
  t.equal(meta(named.object)['name'], 'fixed', 'a name wins over generateName');
  const none = await failure(() => rest.create(POD, 'default', { ...pod(), metadata: {} }));
  t.match(none, { code: 422, reason: 'Invalid', message: 'Pod "" is invalid: metadata.name: Required value: name or generateName is required', details: { causes: [{ reason: 'FieldValueRequired', field: 'metadata.name' }] } });
});

t.test('create of an existing name: 409 AlreadyExists, nothing written', async (t) => {
  const { rest, store } = await setup(t);
  await rest.create(SVC, 'default', svc());
  const rev = store.rev;
  const s = await failure(() => rest.create(SVC, 'default', svc('web', { ports: [{ port: 81 }] })));
  t.same(s, { kind: 'Status', apiVersion: 'v1', metadata: {}, status: 'Failure', message: 'services "web" already exists', reason: 'AlreadyExists', details: { name: 'web', group: '', kind: 'services' }, code: 409 });
  await rest.create(DEPLOY, 'default', deploy());
  t.match(await failure(() => rest.create(DEPLOY, 'default', deploy())), { code: 409, message: 'deployments.apps "web" already exists', details: { group: 'apps', kind: 'deployments' } });
  t.equal((spec(store.get('services/default/web')!.object)['ports'] as O[])[0]!['port'], 80, 'the stored Service is unchanged');
  t.equal(store.rev, rev + 1, 'only the Deployment was written');
});

t.test('namespaces: a namespaced create needs the namespace (NamespaceLifecycle)', async (t) => {
  const { rest, store } = await setup(t);
  const rev = store.rev;
  const s = await failure(() => rest.create(SVC, 'nope', svc()));
  t.same(s, { kind: 'Status', apiVersion: 'v1', metadata: {}, status: 'Failure', message: 'namespaces "nope" not found', reason: 'NotFound', details: { name: 'nope', group: '', kind: 'namespaces' }, code: 404 });
  t.equal(store.rev, rev);
  t.match(await failure(() => rest.create(SVC, 'default', svc('web', {}, { namespace: 'other' }))), { code: 400, message: 'the namespace of the provided object does not match the namespace sent on the request' });
  const ok = await rest.create(SVC, 'default', svc('web', {}, { namespace: 'default' }));
  t.equal(meta(ok.object)['namespace'], 'default');
});

t.test('names that break the kind\'s DNS rule: 422 naming metadata.name, nothing stored', async (t) => {
  const { rest, store } = await setup(t);
  const rev = store.rev;
  const s = await failure(() => rest.create(SVC, 'default', svc('Web')));
  t.equal(s.code, 422);
  t.equal(s.message, 'Service "Web" is invalid: metadata.name: Invalid value: "Web": a DNS-1035 label must consist of lower case alphanumeric characters or \'-\', start with an alphabetic character, and end with an alphanumeric character (e.g. \'my-name\',  or \'abc-123\', regex used for validation is \'[a-z]([-a-z0-9]*[a-z0-9])?\')');
  t.same(s.details?.causes?.map((c) => c.field), ['metadata.name']);
  t.match(await failure(() => rest.create(SVC, 'default', svc('1web'))), { code: 422, details: { causes: [{ field: 'metadata.name', reason: 'FieldValueInvalid' }] } }, 'a Service name starts with a letter');
  t.match(await failure(() => rest.create(POD, 'default', pod('my_pod'))), { code: 422, message: /^Pod "my_pod" is invalid: metadata\.name: Invalid value: "my_pod": a lowercase RFC 1123 subdomain must consist of/ });
  t.ok(await rest.create(POD, 'default', pod('web.v1')), 'a Pod name may hold dots');
  t.match(await failure(() => rest.create(NS, '', { metadata: { name: 'team.a' } })), { code: 422, message: /^Namespace "team\.a" is invalid: metadata\.name: Invalid value: "team\.a": a lowercase RFC 1123 label must consist of/ });
  const long = await failure(() => rest.create(NS, '', { metadata: { name: `A${'a'.repeat(63)}` } }));
  t.match(long.details?.causes, [
    { field: 'metadata.name', message: /: must be no more than 63 characters$/ },
    { field: 'metadata.name', message: /: a lowercase RFC 1123 label must consist of/ },
    { field: 'metadata.labels', message: /: must be no more than 63 characters$/ },
  ], 'too long and the wrong characters both reported; and the kubernetes.io/metadata.name label it is copied to is too long a label value, as upstream');
  t.equal(long.details?.causes?.length, 3);
  t.equal(store.rev, rev + 1, 'only the valid Pod');
});

t.test('update: a stale resourceVersion is a 409 Conflict; none means last write wins; a foreign uid is a 409', async (t) => {
  const { rest, store } = await setup(t);
  const first = await rest.create(SVC, 'default', svc());
  const rv = String(meta(first.object)['resourceVersion']);
  const next = await rest.update(SVC, 'default', 'web', { ...svc('web', { ports: [{ port: 81 }] }), metadata: { name: 'web', resourceVersion: rv } });
  t.equal(next.code, 200);
  t.not(meta(next.object)['resourceVersion'], rv);
  const stale = await failure(() => rest.update(SVC, 'default', 'web', { ...svc('web', { ports: [{ port: 82 }] }), metadata: { name: 'web', resourceVersion: rv } }));
  t.same(stale, {
    kind: 'Status', apiVersion: 'v1', metadata: {}, status: 'Failure', reason: 'Conflict', code: 409,
    message: 'Operation cannot be fulfilled on services "web": the object has been modified; please apply your changes to the latest version and try again',
    details: { name: 'web', group: '', kind: 'services' },
  });
  t.equal((spec(store.get('services/default/web')!.object)['ports'] as O[])[0]!['port'], 81, 'the stale write changed nothing');
  const blind = await rest.update(SVC, 'default', 'web', svc('web', { ports: [{ port: 83 }] }));
  t.equal((spec(blind.object)['ports'] as O[])[0]!['port'], 83, 'no resourceVersion: an unconditional update (AllowUnconditionalUpdate)');
  t.equal(meta(blind.object)['uid'], meta(first.object)['uid'], 'server-owned metadata kept');
  t.equal(meta(blind.object)['creationTimestamp'], meta(first.object)['creationTimestamp']);
  t.match(await failure(() => rest.update(SVC, 'default', 'web', svc('web', {}, { uid: 'someone-else' }))), { code: 409, message: 'Operation cannot be fulfilled on services "web": Precondition failed: UID in precondition: someone-else, UID in object meta: uid-2' });
  t.match(await failure(() => rest.update(SVC, 'default', 'nope', svc('nope'))), { code: 404, message: 'services "nope" not found' });
  t.match(await failure(() => rest.update(SVC, 'default', 'web', svc('other'))), { code: 400, message: 'the name of the object (other) does not match the name on the URL (web)' });
  t.match(await failure(() => rest.update(SVC, 'default', 'web', svc('web', {}, { resourceVersion: 'abc' }))), { code: 400 });
});

t.test('update of a missing Lease or Event creates it (AllowCreateOnUpdate); of a missing Service it is a 404', async (t) => {
  const { rest, store } = await setup(t);
  const l = await rest.update(LEASE, 'default', 'node-1', { apiVersion: 'coordination.k8s.io/v1', kind: 'Lease', metadata: { name: 'node-1', resourceVersion: '123' }, spec: { holderIdentity: 'node-1', leaseDurationSeconds: 40 } });
  t.equal(l.code, 201);
  t.equal(meta(l.object)['uid'], 'uid-2');
  t.ok(store.get('leases.coordination.k8s.io/default/node-1'));
  const again = await rest.update(LEASE, 'default', 'node-1', { ...l.object, spec: { holderIdentity: 'node-1', leaseDurationSeconds: 41 } });
  t.equal(again.code, 200, 'then an ordinary update');
  const e = await rest.update(EVENT, 'default', 'web.1', { apiVersion: 'v1', kind: 'Event', metadata: { name: 'web.1' }, involvedObject: { kind: 'Pod', name: 'web', namespace: 'default' }, reason: 'Started', message: 'm' });
  t.equal(e.code, 201);
  t.match(await failure(() => rest.update(SVC, 'default', 'web', svc())), { code: 404 });
});

t.test('generation: spec changes move it on; metadata and status changes do not', async (t) => {
  const { rest, store } = await setup(t);
  const d = await rest.create(DEPLOY, 'default', deploy());
  const gen = (o: KObject) => meta(o)['generation'];
  const labelled = await rest.update(DEPLOY, 'default', 'web', { ...d.object, metadata: { ...meta(d.object), labels: { team: 'a' } } });
  t.equal(gen(labelled.object), 1, 'labels');
  t.not(meta(labelled.object)['resourceVersion'], meta(d.object)['resourceVersion'], 'a write all the same');
  const status = await rest.update(DEPLOY, 'default', 'web', { ...labelled.object, status: { replicas: 1, observedGeneration: 1 } }, { sub: 'status' });
  t.equal(gen(status.object), 1, 'status');
  const scaled = await rest.update(DEPLOY, 'default', 'web', { ...status.object, spec: { ...spec(status.object), replicas: 3 } });
  t.equal(gen(scaled.object), 2, 'spec.replicas');
  const annotated = await rest.update(DEPLOY, 'default', 'web', { ...scaled.object, metadata: { ...meta(scaled.object), annotations: { note: 'x' } } });
  t.equal(gen(annotated.object), 3, 'a Deployment counts annotation changes too (kube-apiserver: they are copied to its ReplicaSets)');
  t.equal(gen(store.get('deployments.apps/default/web')!.object), 3);
  const s = await rest.create(SVC, 'default', svc());
  const s2 = await rest.update(SVC, 'default', 'web', svc('web', { ports: [{ port: 90 }] }));
  t.notOk('generation' in meta(s2.object), 'a Service never gets one');
  t.not(meta(s2.object)['resourceVersion'], meta(s.object)['resourceVersion']);
});

t.test('a no-op update writes nothing: same resourceVersion, no commit', async (t) => {
  const { rest, store, persistence } = await setup(t);
  const d = await rest.create(DEPLOY, 'default', deploy());
  const rev = store.rev;
  const commits = persistence.commits;
  const same = await rest.update(DEPLOY, 'default', 'web', d.object);
  t.equal(meta(same.object)['resourceVersion'], meta(d.object)['resourceVersion']);
  const manifest = await rest.update(DEPLOY, 'default', 'web', deploy());
  t.equal(meta(manifest.object)['resourceVersion'], meta(d.object)['resourceVersion'], 'kubectl replace of the same manifest (no defaults, no status) changes nothing either');
  const patched = await rest.patch(DEPLOY, 'default', 'web', 'merge', { metadata: { labels: null } });
  t.equal(meta(patched.object)['resourceVersion'], meta(d.object)['resourceVersion'], 'a patch that changes nothing');
  t.equal(store.rev, rev);
  t.equal(persistence.commits, commits);
});

t.test('status subresource: /status writes only the status, the main resource never the status', async (t) => {
  const { rest, store } = await setup(t);
  const cases: [Resource, KObject, O, (o: KObject) => KObject][] = [
    [POD, pod('p'), { phase: 'Running', podIP: '10.244.0.5' }, (o) => ({ ...o, spec: { ...spec(o), activeDeadlineSeconds: 60 } })],
    [SVC, svc('web'), { loadBalancer: { ingress: [{ ip: '203.0.113.5' }] } }, (o) => ({ ...o, spec: { ...spec(o), ports: [{ port: 8080, protocol: 'TCP', targetPort: 8080 }] } })],
    [DEPLOY, deploy('web'), { replicas: 2, readyReplicas: 2 }, (o) => ({ ...o, spec: { ...spec(o), replicas: 4 } })],
  ];
  for (const [r, body, newStatus, changeSpec] of cases) {
    const created = await rest.create(r, 'default', body);
    const key = rest.key(r, 'default', String(meta(created.object)['name']));
    const viaStatus = await rest.update(r, 'default', String(meta(created.object)['name']), { ...changeSpec(created.object), status: newStatus }, { sub: 'status' });
    t.same(viaStatus.object, store.get(key)!.object, `${r.kind}: answered as stored`);
    t.match(store.get(key)!.object['status'], newStatus, `${r.kind}: /status took the status`);
    t.same(store.get(key)!.object['spec'], created.object['spec'], `${r.kind}: /status left the spec`);
    const viaMain = await rest.update(r, 'default', String(meta(created.object)['name']), { ...changeSpec(store.get(key)!.object as KObject), status: { bogus: true } });
    t.same(viaMain.object['status'], store.get(key)!.object['status']);
    t.match(store.get(key)!.object['status'], newStatus, `${r.kind}: the main resource kept the status`);
    t.notSame(store.get(key)!.object['spec'], created.object['spec'], `${r.kind}: and took the spec`);
  }
  const p = await rest.patch(POD, 'default', 'p', 'merge', { status: { phase: 'Succeeded' }, spec: { activeDeadlineSeconds: 5 } }, { sub: 'status' });
  t.equal((p.object['status'] as O)['phase'], 'Succeeded', 'a patch of /status too');
  t.equal(spec(p.object)['activeDeadlineSeconds'], 60);
});

t.test('validation: 422 Invalid with each field in the causes, in kube-apiserver\'s words; nothing stored', async (t) => {
  const { rest, store } = await setup(t);
  const rev = store.rev;
  const s = await failure(() => rest.create(SVC, 'default', svc('web', { ports: [{ port: 70000, targetPort: 8080 }] })));
  t.same(s, {
    kind: 'Status', apiVersion: 'v1', metadata: {}, status: 'Failure', reason: 'Invalid', code: 422,
    message: 'Service "web" is invalid: spec.ports[0].port: Invalid value: 70000: must be between 1 and 65535, inclusive',
    details: { name: 'web', group: '', kind: 'Service', causes: [{ reason: 'FieldValueInvalid', message: 'Invalid value: 70000: must be between 1 and 65535, inclusive', field: 'spec.ports[0].port' }] },
  });
  t.equal(store.rev, rev);
  t.match(await failure(() => rest.get(SVC, 'default', 'web')), { code: 404, message: 'services "web" not found' }, 'nothing stored');
  const defaulted = await failure(() => rest.create(SVC, 'default', svc('web', { ports: [{ port: 70000 }] })));
  t.same(defaulted.details?.causes?.map((c) => c.field), ['spec.ports[0].port', 'spec.ports[0].targetPort'], 'targetPort defaults to the port, and is validated too (upstream reports both)');
  const two = await failure(() => rest.create(SVC, 'default', svc('web', { type: 'Balanced', ports: [{ port: 80, protocol: 'ICMP' }] })));
  t.equal(two.message, 'Service "web" is invalid: [spec.type: Unsupported value: "Balanced": supported values: "ClusterIP", "ExternalName", "LoadBalancer", "NodePort", spec.ports[0].protocol: Unsupported value: "ICMP": supported values: "SCTP", "TCP", "UDP"]', 'several errors in brackets');
  t.same(two.details?.causes?.map((c) => [c.reason, c.field]), [['FieldValueNotSupported', 'spec.type'], ['FieldValueNotSupported', 'spec.ports[0].protocol']]);
  t.match(await failure(() => rest.create(DEPLOY, 'default', deploy('web', { replicas: -1 }))), { code: 422, details: { group: 'apps', kind: 'Deployment', causes: [{ field: 'spec.replicas', message: 'Invalid value: -1: must be greater than or equal to 0' }] } });
  t.match(await failure(() => rest.create(POD, 'default', { ...pod(), metadata: { name: 'p', labels: { 'bad key!': 'v' } } })), { code: 422, details: { causes: [{ field: 'metadata.labels' }] } });

  await rest.create(SVC, 'default', svc());
  const before = store.get('services/default/web')!;
  t.match(await failure(() => rest.update(SVC, 'default', 'web', svc('web', { ports: [{ port: 0 }] }))), { code: 422, details: { causes: [{ reason: 'FieldValueInvalid', field: 'spec.ports[0].port', message: 'Invalid value: 0: must be between 1 and 65535, inclusive' }] } });
  t.equal(store.get('services/default/web'), before, 'an invalid update stores nothing');
  const imm = await failure(() => rest.update(DEPLOY, 'default', 'x', deploy('x')));
  t.equal(imm.code, 404);
  await rest.create(DEPLOY, 'default', deploy());
  const sel = await failure(() => rest.update(DEPLOY, 'default', 'web', deploy('web', { selector: { matchLabels: { app: 'web', v: '2' } }, template: { ...template('web'), metadata: { labels: { app: 'web', v: '2' } } } })));
  t.match(sel, { code: 422, details: { causes: [{ field: 'spec.selector', message: /field is immutable$/ }] } }, 'apps/v1: the selector is immutable');
});

t.test('fieldValidation: Strict refuses an unknown field (400), Warn stores without it and warns, Ignore drops it silently', async (t) => {
  const { rest, store } = await setup(t);
  const rev = store.rev;
  const body = svc('web', { foo: 1, ports: [{ port: 80, bar: true }] });
  const strict = await failure(() => rest.create(SVC, 'default', body, { fieldValidation: 'Strict' }));
  t.match(strict, { code: 400, reason: 'BadRequest', message: 'Service in version "v1" cannot be handled as a Service: strict decoding error: unknown field "spec.ports[0].bar", unknown field "spec.foo"' }, 'in the order of the document');
  t.equal(store.rev, rev, 'nothing stored');
  const warn = await rest.create(SVC, 'default', body, { fieldValidation: 'Warn' });
  t.same(warn.warnings, ['unknown field "spec.ports[0].bar"', 'unknown field "spec.foo"']);
  t.notOk('foo' in spec(store.get('services/default/web')!.object), 'dropped: a Go struct has nowhere to keep it');
  t.notOk('bar' in (spec(store.get('services/default/web')!.object)['ports'] as O[])[0]!);
  const dflt = await rest.create(SVC, 'default', svc('api', { foo: 1 }));
  t.same(dflt.warnings, ['unknown field "spec.foo"'], 'Warn is the default');
  const ignore = await rest.create(SVC, 'default', svc('db', { foo: 1 }), { fieldValidation: 'Ignore' });
  t.same(ignore.warnings, []);
  t.notOk('foo' in spec(ignore.object));
  t.match(await failure(() => rest.update(SVC, 'default', 'web', svc('web', { foo: 2 }), { fieldValidation: 'Strict' })), { code: 400, message: 'Service in version "v1" cannot be handled as a Service: strict decoding error: unknown field "spec.foo"' });
  t.match(await failure(() => rest.patch(SVC, 'default', 'web', 'merge', { spec: { foo: 2 } }, { fieldValidation: 'Strict' })), { code: 400, message: 'strict decoding error: unknown field "spec.foo"' }, 'a patch: no "cannot be handled" prefix');
  const pw = await rest.patch(SVC, 'default', 'web', 'merge', { spec: { foo: 2 } });
  t.same(pw.warnings, ['unknown field "spec.foo"']);
});

t.test('dryRun: the answer looks real, nothing is stored', async (t) => {
  const { rest, store, persistence } = await setup(t);
  const rev = store.rev;
  const commits = persistence.commits;
  const c = await rest.create(SVC, 'default', svc(), { dryRun: true });
  t.equal(c.code, 201);
  t.equal(meta(c.object)['uid'], 'uid-2');
  t.equal(meta(c.object)['creationTimestamp'], '2024-05-01T10:00:00Z');
  t.equal(spec(c.object)['type'], 'ClusterIP', 'defaulted');
  t.notOk('resourceVersion' in meta(c.object), 'as kube-apiserver: no resourceVersion on a dry-run create');
  t.equal(store.rev, rev);
  t.equal(store.get('services/default/web'), undefined);
  t.match(await failure(() => rest.create(SVC, 'default', svc('bad', { ports: [{ port: 70000 }] }), { dryRun: true })), { code: 422 }, 'validated all the same');

  const real = await rest.create(SVC, 'default', svc());
  t.match(await failure(() => rest.create(SVC, 'default', svc(), { dryRun: true })), { code: 409 });
  const stored = store.get('services/default/web')!;
  const u = await rest.update(SVC, 'default', 'web', svc('web', { ports: [{ port: 81 }] }), { dryRun: true });
  t.equal((spec(u.object)['ports'] as O[])[0]!['port'], 81);
  t.equal(meta(u.object)['resourceVersion'], meta(real.object)['resourceVersion']);
  const p = await rest.patch(SVC, 'default', 'web', 'merge', { metadata: { labels: { a: 'b' } } }, { dryRun: true });
  t.same(meta(p.object)['labels'], { a: 'b' });
  const d = await rest.delete(SVC, 'default', 'web', { dryRun: true });
  t.equal(meta(d.body as KObject)['name'], 'web');
  t.equal(store.get('services/default/web'), stored, 'update, patch and delete stored nothing');
  t.equal(persistence.commits, commits + 1, 'only the real create was committed');
});

t.test('defaults: Services, Pods, Deployments as kube-apiserver fills them', async (t) => {
  const { rest } = await setup(t);
  const s = await rest.create(SVC, 'default', svc('web', { ports: [{ port: 80 }, { name: 'metrics', port: 9090, targetPort: 'metrics' }].map((p, i) => (i === 0 ? { ...p, name: 'http' } : p)) }));
  t.same(spec(s.object), {
    selector: { app: 'web' },
    ports: [{ name: 'http', port: 80, protocol: 'TCP', targetPort: 80 }, { name: 'metrics', port: 9090, targetPort: 'metrics', protocol: 'TCP' }],
    type: 'ClusterIP', sessionAffinity: 'None', internalTrafficPolicy: 'Cluster', ipFamilyPolicy: 'SingleStack', ipFamilies: ['IPv4'],
  });
  const np = await rest.create(SVC, 'default', svc('np', { type: 'NodePort', clusterIP: '10.96.0.20' }));
  t.match(spec(np.object), { externalTrafficPolicy: 'Cluster', clusterIPs: ['10.96.0.20'] });
  const lb = await rest.create(SVC, 'default', svc('lb', { type: 'LoadBalancer', sessionAffinity: 'ClientIP' }));
  t.match(spec(lb.object), { allocateLoadBalancerNodePorts: true, externalTrafficPolicy: 'Cluster', sessionAffinityConfig: { clientIP: { timeoutSeconds: 10800 } } });
  const en = await rest.create(SVC, 'default', { ...svc('en'), spec: { type: 'ExternalName', externalName: 'db.example.com' } });
  t.same(spec(en.object), { type: 'ExternalName', externalName: 'db.example.com', sessionAffinity: 'None' }, 'no IP families for an ExternalName');

  const p = await rest.create(POD, 'default', pod('p', { containers: [{ name: 'web', image: 'nginx:1.25', ports: [{ containerPort: 80 }] }] }));
  t.match(spec(p.object), {
    restartPolicy: 'Always', dnsPolicy: 'ClusterFirst', terminationGracePeriodSeconds: 30, schedulerName: 'default-scheduler', securityContext: {}, enableServiceLinks: true,
    containers: [{ terminationMessagePath: '/dev/termination-log', terminationMessagePolicy: 'File', imagePullPolicy: 'IfNotPresent', resources: {}, ports: [{ containerPort: 80, protocol: 'TCP' }] }],
  });
  const d = await rest.create(DEPLOY, 'default', deploy());
  t.match(spec(d.object), {
    replicas: 1, strategy: { type: 'RollingUpdate', rollingUpdate: { maxUnavailable: '25%', maxSurge: '25%' } }, revisionHistoryLimit: 10, progressDeadlineSeconds: 600,
    template: { spec: { restartPolicy: 'Always', dnsPolicy: 'ClusterFirst', terminationGracePeriodSeconds: 30 } },
  });
  const r = await rest.create(RS, 'default', rset());
  t.equal(spec(r.object)['replicas'], 1);
  t.same(r.object['status'], { replicas: 0 });
});

t.test('list: label and field selectors, one namespace or all', async (t) => {
  const { rest } = await setup(t);
  await rest.create(NS, '', { metadata: { name: 'other' } });
  await rest.create(SVC, 'default', svc('web', {}, { labels: { app: 'web', tier: 'fe' } }));
  await rest.create(SVC, 'default', svc('api', { clusterIP: '10.96.0.7' }, { labels: { app: 'api', tier: 'be' } }));
  await rest.create(SVC, 'other', svc('web', {}, { labels: { app: 'web' } }));
  const names = (l: { items: readonly { key: string }[] }) => l.items.map((s) => s.key);
  t.same(names(await rest.list(SVC, 'default', {})), ['services/default/api', 'services/default/web'], 'sorted, this namespace');
  t.same(names(await rest.list(SVC, undefined, {})), ['services/default/api', 'services/default/web', 'services/other/web'], 'all namespaces');
  t.same(names(await rest.list(SVC, undefined, { labelSelector: 'app=web' })), ['services/default/web', 'services/other/web']);
  t.same(names(await rest.list(SVC, undefined, { labelSelector: 'app=web,tier' })), ['services/default/web']);
  t.same(names(await rest.list(SVC, undefined, { labelSelector: 'tier notin (fe)' })), ['services/default/api', 'services/other/web'], 'notin matches a missing label');
  t.same(names(await rest.list(SVC, undefined, { fieldSelector: 'metadata.namespace=other' })), ['services/other/web']);
  t.same(names(await rest.list(SVC, 'default', { fieldSelector: 'spec.clusterIP=10.96.0.7' })), ['services/default/api']);
  t.same(names(await rest.list(SVC, undefined, { fieldSelector: 'metadata.name!=web', labelSelector: 'tier' })), ['services/default/api']);
  t.match(await failure(() => rest.list(SVC, undefined, { labelSelector: 'app in (web' })), { code: 400, reason: 'BadRequest' });
  t.match(await failure(() => rest.list(SVC, undefined, { fieldSelector: 'spec.ports=80' })), { code: 400, reason: 'BadRequest', message: /spec\.ports/ });
});

t.test('list: limit and continue page over one consistent snapshot', async (t) => {
  const { rest } = await setup(t);
  for (let i = 0; i < 5; i++) await rest.create(SVC, 'default', svc(`s${i}`));
  const p1 = await rest.list(SVC, 'default', { limit: 2 });
  t.same(p1.items.map((s) => meta(s.object)['name']), ['s0', 's1']);
  t.ok(p1.continue);
  t.equal(p1.remaining, 3, 'remainingItemCount');
  // Writes between the pages: a new object, a deletion, a change.
  await rest.create(SVC, 'default', svc('s5'));
  await rest.delete(SVC, 'default', 's2');
  await rest.patch(SVC, 'default', 's3', 'merge', { metadata: { labels: { changed: 'yes' } } });
  const p2 = await rest.list(SVC, 'default', { limit: 2, continue: p1.continue });
  t.equal(p2.rev, p1.rev, 'the same revision');
  t.same(p2.items.map((s) => meta(s.object)['name']), ['s2', 's3'], 'the deleted s2 still in the snapshot');
  t.same(meta(p2.items[1]!.object)['labels'], undefined, 's3 as it was');
  const p3 = await rest.list(SVC, 'default', { limit: 2, continue: p2.continue });
  t.same(p3.items.map((s) => meta(s.object)['name']), ['s4'], 's5 was created after the snapshot');
  t.equal(p3.continue, undefined, 'the last page');
  t.same((await rest.list(SVC, 'default', {})).items.map((s) => meta(s.object)['name']), ['s0', 's1', 's3', 's4', 's5'], 'a fresh list sees the writes');
  const sel = await rest.list(SVC, 'default', { limit: 1, labelSelector: '!changed' });
  t.same(sel.items.map((s) => meta(s.object)['name']), ['s0']);
  t.equal(sel.remaining, undefined, 'no remainingItemCount with a selector');
  t.ok(sel.continue);
  t.match(await failure(() => rest.list(SVC, 'default', { continue: 'not-a-token' })), { code: 400, reason: 'BadRequest' });
});

t.test('list: pages within one namespace among others, and across all of them, each object once', async (t) => {
  const { rest } = await setup(t);
  for (const ns of ['a', 'b', 'c']) {
    await rest.create(NS, '', { apiVersion: 'v1', kind: 'Namespace', metadata: { name: ns } });
    for (let i = 0; i < 7; i++) await rest.create(SVC, ns, svc(`s${i}`));
  }
  const pages = async (ns: string | undefined, limit: number) => {
    const out: string[] = [];
    const remaining: (number | undefined)[] = [];
    let c: string | undefined;
    do {
      const p = await rest.list(SVC, ns, { limit, continue: c });
      out.push(...p.items.map((s) => `${String(meta(s.object)['namespace'])}/${String(meta(s.object)['name'])}`));
      remaining.push(p.remaining);
      c = p.continue;
    } while (c);
    return { out, remaining };
  };
  const b = await pages('b', 3);
  t.same(b.out, ['b/s0', 'b/s1', 'b/s2', 'b/s3', 'b/s4', 'b/s5', 'b/s6']);
  t.same(b.remaining, [4, 1, undefined], 'remainingItemCount counts only the namespace');
  t.same((await pages('c', 7)).out.length, 7, 'a limit equal to the size: one page');
  const all = (await pages(undefined, 4)).out;
  t.equal(all.length, 21);
  t.equal(new Set(all).size, 21, 'each once');
  t.same(all, [...all].sort());
  t.same((await pages('nope', 2)).out, [], 'an empty namespace');
});

t.test('list: a continue token from a compacted revision is a 410 Expired', async (t) => {
  const { rest, store, storage } = await setup(t);
  for (let i = 0; i < 3; i++) await rest.create(SVC, 'default', svc(`s${i}`));
  const p1 = await rest.list(SVC, 'default', { limit: 1 });
  await rest.create(SVC, 'default', svc('s9'));
  // As the compactor does: the storage drops the history, and the cache's ring follows.
  await storage.compact(store.rev);
  store.compacted(store.rev);
  const s = await failure(() => rest.list(SVC, 'default', { limit: 1, continue: p1.continue }));
  t.match(s, { code: 410, reason: 'Expired', message: /^The provided continue parameter is too old to display a consistent list result\. You can start a new list without the continue parameter\./ });
});

t.test('patch: JSON patch, merge patch, strategic merge patch', async (t) => {
  const { rest, store } = await setup(t);
  await rest.create(SVC, 'default', svc('web', { ports: [{ name: 'http', port: 80 }] }));
  const smp = await rest.patch(SVC, 'default', 'web', 'strategic', { spec: { ports: [{ name: 'https', port: 443 }] } });
  // Both kept (the order of a merged list is strategic-merge.ts's business: upstream puts the patch's new items first without $setElementOrder).
  const merged = (spec(smp.object)['ports'] as O[]).map((p) => [p['name'], p['port'], p['targetPort'], p['protocol']]).sort((a, b) => Number(a[1]) - Number(b[1]));
  t.same(merged, [['http', 80, 80, 'TCP'], ['https', 443, 443, 'TCP']], 'strategic: ports merge by port (80 is kept), and the new one is defaulted');
  const ordered = await rest.patch(SVC, 'default', 'web', 'strategic', { spec: { '$setElementOrder/ports': [{ port: 80 }, { port: 443 }], ports: [{ port: 80, name: 'http' }] } });
  t.same((spec(ordered.object)['ports'] as O[]).map((p) => p['port']), [80, 443], 'with $setElementOrder (what kubectl apply sends), in that order');
  const merge = await rest.patch(SVC, 'default', 'web', 'merge', { metadata: { labels: { a: '1', b: '2' } }, spec: { ports: [{ name: 'https', port: 443 }] } });
  t.same((spec(merge.object)['ports'] as O[]).map((p) => p['port']), [443], 'merge: a list is replaced');
  const unlabel = await rest.patch(SVC, 'default', 'web', 'merge', { metadata: { labels: { a: null } } });
  t.same(meta(unlabel.object)['labels'], { b: '2' }, 'null removes');
  const json = await rest.patch(SVC, 'default', 'web', 'json', [{ op: 'replace', path: '/spec/ports/0/port', value: 8443 }, { op: 'add', path: '/metadata/labels/c', value: '3' }]);
  t.equal((spec(json.object)['ports'] as O[])[0]!['port'], 8443);
  t.same(meta(json.object)['labels'], { b: '2', c: '3' });
  t.same(store.get('services/default/web')!.object, json.object, 'stored');
  const rev = store.rev;
  t.match(await failure(() => rest.patch(SVC, 'default', 'web', 'json', [{ op: 'test', path: '/spec/type', value: 'NodePort' }])), { code: 422 }, 'a failing test op');
  t.match(await failure(() => rest.patch(SVC, 'default', 'web', 'merge', { spec: { ports: [{ port: 70000 }] } })), { code: 422, details: { causes: [{ field: 'spec.ports[0].port' }] } }, 'the patched object is validated');
  t.match(await failure(() => rest.patch(SVC, 'default', 'web', 'merge', { metadata: { resourceVersion: '1' }, spec: { type: 'NodePort' } })), { code: 409 }, 'a resourceVersion in a patch is a precondition');
  t.match(await failure(() => rest.patch(SVC, 'default', 'nope', 'merge', {})), { code: 404, message: 'services "nope" not found' });
  t.equal(store.rev, rev, 'none of them stored anything');
});

t.test('server-side apply: creates what is missing, and records the operation as Apply in managedFields', async (t) => {
  const { rest } = await setup(t);
  const c = await rest.patch(DEPLOY, 'default', 'web', 'apply', deploy(), { fieldManager: 'kubectl' });
  t.equal(c.code, 201);
  t.match(meta(c.object)['managedFields'], [{ manager: 'kubectl', operation: 'Apply', apiVersion: 'apps/v1' }]);
  const u = await rest.patch(DEPLOY, 'default', 'web', 'apply', deploy('web', { replicas: 2 }), { fieldManager: 'kubectl' });
  t.equal(u.code, 200);
  t.equal(spec(u.object)['replicas'], 2);
  t.match(meta(u.object)['managedFields'], [{ manager: 'kubectl', operation: 'Apply' }]);
  const m = await rest.patch(DEPLOY, 'default', 'web', 'merge', { spec: { replicas: 3 } }, { fieldManager: 'kubectl-edit' });
  t.match(meta(m.object)['managedFields'], [{ manager: 'kubectl', operation: 'Apply' }, { manager: 'kubectl-edit', operation: 'Update' }], 'one entry per manager and operation');
  const again = await rest.patch(DEPLOY, 'default', 'web', 'merge', { spec: { replicas: 4 } }, { fieldManager: 'kubectl-edit' });
  t.equal((meta(again.object)['managedFields'] as unknown[]).length, 2, 'the same manager again replaces its entry');
  const st = await rest.update(DEPLOY, 'default', 'web', { ...structuredClone(again.object), status: { replicas: 1 } }, { sub: 'status', fieldManager: 'kubectl-edit' });
  t.match(meta(st.object)['managedFields'], [{}, {}, { manager: 'kubectl-edit', operation: 'Update', subresource: 'status' }], 'a status write has its own entry');
  t.match(await failure(() => rest.patch(DEPLOY, 'default', 'api', 'apply', deploy('api', { foo: 1 }), { fieldManager: 'kubectl' })), { code: 400, message: /unknown field "spec\.foo"/ }, 'apply decodes strictly by default');
});

t.test('delete: finalizers hold the object with a deletionTimestamp until the last one goes', async (t) => {
  const { rest, store, clock } = await setup(t);
  await rest.create(SVC, 'default', svc('web', {}, { finalizers: ['example.com/hold'] }));
  await clock.advance(5000);
  const d = await rest.delete(SVC, 'default', 'web');
  t.equal(d.code, 200, 'kube-apiserver answers 200 (not 202) when finalizers hold the object');
  t.match(meta(d.body as KObject), { deletionTimestamp: '2024-05-01T10:00:05Z', deletionGracePeriodSeconds: 0, finalizers: ['example.com/hold'] });
  t.ok(store.get('services/default/web'), 'still there');
  const rev = store.rev;
  const again = await rest.delete(SVC, 'default', 'web');
  t.equal(meta(again.body as KObject)['deletionTimestamp'], '2024-05-01T10:00:05Z', 'a second delete changes nothing');
  t.equal(store.rev, rev);
  const cur = store.get('services/default/web')!.object as KObject;
  const add = await failure(() => rest.update(SVC, 'default', 'web', { ...cur, metadata: { ...meta(cur), finalizers: ['example.com/hold', 'example.com/more'] } }));
  t.match(add, { code: 422, details: { causes: [{ field: 'metadata.finalizers', reason: 'FieldValueForbidden', message: 'Forbidden: no new finalizers can be added if the object is being deleted, found new finalizers []string{"example.com/more"}' }] } });
  const gone = await rest.update(SVC, 'default', 'web', { ...cur, metadata: { ...meta(cur), finalizers: [] } });
  t.equal(gone.code, 200);
  t.equal(store.get('services/default/web'), undefined, 'the last finalizer removed: the object goes');

  await rest.create(DEPLOY, 'default', deploy());
  const fg = await rest.delete(DEPLOY, 'default', 'web', { propagationPolicy: 'Foreground' });
  t.same(meta(fg.body as KObject)['finalizers'], ['foregroundDeletion'], 'Foreground: the garbage collector\'s finalizer');
  await rest.create(RS, 'default', rset());
  const or = await rest.delete(RS, 'default', 'web-1', { propagationPolicy: 'Orphan' });
  t.same(meta(or.body as KObject)['finalizers'], ['orphan']);
});

t.test('delete: what the answer is; preconditions; a missing object', async (t) => {
  const { rest, store } = await setup(t);
  const s = await rest.create(SVC, 'default', svc());
  const d = await rest.delete(SVC, 'default', 'web');
  t.equal(d.code, 200);
  t.equal((d.body as KObject)['kind'], 'Service', 'a Service answers with the deleted object');
  t.equal(meta(d.body as KObject)['uid'], meta(s.object)['uid']);
  const dep = await rest.create(DEPLOY, 'default', deploy());
  t.same((await rest.delete(DEPLOY, 'default', 'web')).body, { kind: 'Status', apiVersion: 'v1', metadata: {}, status: 'Success', details: { name: 'web', group: 'apps', kind: 'deployments', uid: meta(dep.object)['uid'] } }, 'a Deployment with a Status');
  t.match(await failure(() => rest.delete(SVC, 'default', 'web')), { code: 404, message: 'services "web" not found' });

  const again = await rest.create(SVC, 'default', svc());
  const rv = String(meta(again.object)['resourceVersion']);
  await rest.patch(SVC, 'default', 'web', 'merge', { metadata: { labels: { x: 'y' } } });
  const now = String(meta(store.get('services/default/web')!.object)['resourceVersion']);
  t.match(await failure(() => rest.delete(SVC, 'default', 'web', { preconditions: { resourceVersion: rv } })), {
    code: 409, reason: 'Conflict', message: `Operation cannot be fulfilled on services "web": Precondition failed: ResourceVersion in precondition: ${rv}, ResourceVersion in object meta: ${now}`,
  });
  t.match(await failure(() => rest.delete(SVC, 'default', 'web', { preconditions: { uid: meta(s.object)['uid'] as string } })), { code: 409, message: /UID in precondition: uid-2, UID in object meta: / }, 'the uid of the object deleted before');
  t.ok(store.get('services/default/web'), 'neither deleted it');
  await rest.delete(SVC, 'default', 'web', { preconditions: { resourceVersion: now, uid: meta(again.object)['uid'] as string } });
  t.equal(store.get('services/default/web'), undefined, 'matching preconditions');
});

t.test('deleteCollection: the objects a selector picks, answered as a list of them', async (t) => {
  const { rest, store } = await setup(t);
  await rest.create(DEPLOY, 'default', deploy('a', {}, { labels: { tier: 'fe' } }));
  await rest.create(DEPLOY, 'default', deploy('b', {}, { labels: { tier: 'fe' } }));
  await rest.create(DEPLOY, 'default', deploy('c', {}, { labels: { tier: 'be' } }));
  const d = await rest.deleteCollection(DEPLOY, 'default', { labelSelector: 'tier=fe' }, {});
  t.equal(d.code, 200);
  t.equal(d.body['kind'], 'DeploymentList');
  t.equal(d.body['apiVersion'], 'apps/v1');
  t.same((d.body['items'] as KObject[]).map((o) => [o.kind, meta(o)['name']]), [['Deployment', 'a'], ['Deployment', 'b']], 'the objects, not Statuses');
  t.same(store.list('deployments.apps').items.map((s) => s.key), ['deployments.apps/default/c']);
});

t.test('scale: get and update for Deployments and ReplicaSets', async (t) => {
  const { rest, store } = await setup(t);
  const d = await rest.create(DEPLOY, 'default', deploy('web', { replicas: 3, selector: { matchLabels: { app: 'web' }, matchExpressions: [{ key: 'track', operator: 'NotIn', values: ['canary'] }] } }));
  const sc = scaleOf(DEPLOY, store.get('deployments.apps/default/web')!);
  t.same(sc, {
    kind: 'Scale', apiVersion: 'autoscaling/v1',
    metadata: { name: 'web', namespace: 'default', uid: meta(d.object)['uid'], resourceVersion: meta(d.object)['resourceVersion'], creationTimestamp: '2024-05-01T10:00:00Z' },
    spec: { replicas: 3 }, status: { replicas: 0, selector: 'app=web,track notin (canary)' },
  });
  const up = await updateScale(rest, DEPLOY, 'default', 'web', (s) => ({ ...s, spec: { replicas: 5 } }), {});
  t.equal(up.object['kind'], 'Scale');
  t.same(up.object['spec'], { replicas: 5 });
  t.not(meta(up.object)['resourceVersion'], meta(d.object)['resourceVersion']);
  const stored = store.get('deployments.apps/default/web')!.object;
  t.equal(spec(stored)['replicas'], 5);
  t.equal(meta(stored)['generation'], 2, 'a scale is a spec change');
  t.equal(meta(up.object)['resourceVersion'], meta(stored)['resourceVersion']);
  const rev = store.rev;
  t.match(await failure(() => updateScale(rest, DEPLOY, 'default', 'web', () => ({ spec: { replicas: -1 } }), {})), {
    code: 422, message: 'Scale "web" is invalid: spec.replicas: Invalid value: -1: must be greater than or equal to 0', details: { group: 'autoscaling', kind: 'Scale' },
  });
  t.match(await failure(() => updateScale(rest, DEPLOY, 'default', 'web', () => ({ metadata: { resourceVersion: String(meta(d.object)['resourceVersion']) }, spec: { replicas: 2 } }), {})), { code: 409 }, 'a stale resourceVersion');
  t.match(await failure(() => updateScale(rest, DEPLOY, 'default', 'nope', () => ({ spec: { replicas: 2 } }), {})), { code: 404 });
  t.equal(store.rev, rev);

  await rest.create(RS, 'default', rset('web-1', { replicas: 2 }));
  await rest.update(RS, 'default', 'web-1', { ...store.get('replicasets.apps/default/web-1')!.object, status: { replicas: 2 } }, { sub: 'status' });
  t.same(scaleOf(RS, store.get('replicasets.apps/default/web-1')!)['status'], { replicas: 2, selector: 'app=web' });
  const rsUp = await updateScale(rest, RS, 'default', 'web-1', () => ({ spec: { replicas: 0 } }), {});
  t.same(rsUp.object['spec'], { replicas: 0 }, 'to zero');
  t.equal(spec(store.get('replicasets.apps/default/web-1')!.object)['replicas'], 0);
});

t.test('namespaces: deletion terminates them; finalize lets them go', async (t) => {
  const { rest, store } = await setup(t);
  const ns = await rest.create(NS, '', { metadata: { name: 'team' } });
  t.same(spec(ns.object), { finalizers: ['kubernetes'] });
  t.same(ns.object['status'], { phase: 'Active' });
  t.same(meta(ns.object)['labels'], { 'kubernetes.io/metadata.name': 'team' });
  t.notOk('generation' in meta(ns.object));
  await rest.create(SVC, 'team', svc());
  const d = await rest.delete(NS, '', 'team');
  t.equal(d.code, 200);
  t.match(d.body, { kind: 'Namespace', metadata: { deletionTimestamp: '2024-05-01T10:00:00Z' }, status: { phase: 'Terminating' } });
  t.ok(store.get('namespaces//team'), 'kept until its controller has emptied it');
  const forbidden = await failure(() => rest.create(SVC, 'team', svc('api')));
  t.same(forbidden, {
    kind: 'Status', apiVersion: 'v1', metadata: {}, status: 'Failure', reason: 'Forbidden', code: 403,
    message: 'services "api" is forbidden: unable to create new content in namespace team because it is being terminated',
    details: { name: 'api', group: '', kind: 'services', causes: [{ reason: 'NamespaceTerminating', message: 'namespace team is being terminated', field: 'metadata.namespace' }] },
  });
  const cur = store.get('namespaces//team')!.object as KObject;
  const relabel = await rest.update(NS, '', 'team', { ...cur, metadata: { ...meta(cur), labels: { ...(meta(cur)['labels'] as O), x: 'y' } }, spec: { finalizers: [] } });
  t.same(spec(relabel.object), { finalizers: ['kubernetes'] }, 'an update does not touch spec.finalizers');
  t.ok(store.get('namespaces//team'), 'and an update of a terminating namespace does not delete it');
  const rv = String(meta(relabel.object)['resourceVersion']);
  t.match(await failure(() => finalizeNamespace(rest, 'team', [], String(Number(rv) - 1))), { code: 409 });
  await finalizeNamespace(rest, 'team', [], rv);
  t.equal(store.get('namespaces//team'), undefined, 'finalized and terminating: gone');

  await rest.create(NS, '', { metadata: { name: 'plain' } });
  const f = await finalizeNamespace(rest, 'plain', []);
  t.same(spec(f.object), { finalizers: [] });
  t.ok(store.get('namespaces//plain'), 'finalize alone does not delete');
  await rest.delete(NS, '', 'plain');
  t.equal(store.get('namespaces//plain'), undefined, 'a namespace without finalizers goes at once');
});

t.test('delete: a Pod on a node terminates gracefully; unbound, finished or node-less Pods go at once', async (t) => {
  const { rest, store, clock } = await setup(t);
  await rest.create(NODE, '', { apiVersion: 'v1', kind: 'Node', metadata: { name: 'n1' } });
  await rest.create(POD, 'default', pod('bound', { nodeName: 'n1', terminationGracePeriodSeconds: 20 }));
  const d = await rest.delete(POD, 'default', 'bound');
  t.equal(d.code, 200);
  const m = meta(d.body as KObject);
  t.equal(m['deletionGracePeriodSeconds'], 20, 'the Pod\'s own grace period');
  t.equal(m['deletionTimestamp'], new Date(clock.now() + 20_000).toISOString().replace(/\.\d{3}Z$/, 'Z'), 'deletionTimestamp: now + the grace');
  t.ok(store.get('pods/default/bound'), 'still there, Terminating, for its kubelet to stop');
  const again = await rest.delete(POD, 'default', 'bound');
  t.equal(meta(again.body as KObject)['resourceVersion'], m['resourceVersion'], 'a second delete with the same grace changes nothing');
  const shorter = await rest.delete(POD, 'default', 'bound', { gracePeriodSeconds: 5 });
  t.equal(meta(shorter.body as KObject)['deletionGracePeriodSeconds'], 5, 'a shorter grace shortens it');
  await rest.delete(POD, 'default', 'bound', { gracePeriodSeconds: 0 });
  t.notOk(store.get('pods/default/bound'), 'the kubelet\'s final delete (grace 0) removes it');

  await rest.create(POD, 'default', pod('unbound'));
  await rest.delete(POD, 'default', 'unbound');
  t.notOk(store.get('pods/default/unbound'), 'no node: nobody to wait for');
  await rest.create(POD, 'default', pod('ghost', { nodeName: 'gone' }));
  await rest.delete(POD, 'default', 'ghost');
  t.notOk(store.get('pods/default/ghost'), 'bound to a Node that does not exist: at once');
  await rest.create(POD, 'default', pod('done', { nodeName: 'n1' }));
  const cur = (await rest.get(POD, 'default', 'done')).object as KObject;
  await rest.update(POD, 'default', 'done', { ...structuredClone(cur), status: { phase: 'Succeeded' } }, { sub: 'status' });
  await rest.delete(POD, 'default', 'done');
  t.notOk(store.get('pods/default/done'), 'a finished Pod goes at once');
  await rest.create(POD, 'default', pod('dflt', { nodeName: 'n1' }));
  t.equal(meta((await rest.delete(POD, 'default', 'dflt')).body as KObject)['deletionGracePeriodSeconds'], 30, 'the default grace: 30 s');
});

t.test('binding: sets spec.nodeName once with PodScheduled=True; a bound, deleted or missing Pod is refused as kube-apiserver refuses it', async (t) => {
  const { rest, clock } = await setup(t);
  await rest.create(POD, 'default', pod('p'));
  const before = (await rest.get(POD, 'default', 'p')).object as KObject;
  const binding = (name: string, node: string, m: O = {}) => ({ apiVersion: 'v1', kind: 'Binding', metadata: { name, ...m }, target: { apiVersion: 'v1', kind: 'Node', name: node } });
  await clock.advance(3_000);
  const b = await bindPod(rest, 'default', 'p', binding('p', 'n1', { annotations: { 'example.com/why': 'test' } }));
  t.equal(b.code, 201);
  t.match(b.body, { kind: 'Status', apiVersion: 'v1', status: 'Success', code: 201 });
  const after = (await rest.get(POD, 'default', 'p')).object as KObject;
  t.equal(spec(after)['nodeName'], 'n1');
  t.same((after['status'] as O)['conditions'], [{ type: 'PodScheduled', status: 'True', lastProbeTime: null, lastTransitionTime: '2024-05-01T10:00:03Z' }]);
  t.equal((after['status'] as O)['phase'], 'Pending');
  t.equal((meta(after)['annotations'] as O)['example.com/why'], 'test', 'the Binding\'s annotations are merged in');
  t.equal(meta(after)['generation'], meta(before)['generation'], 'no generation bump (the storage is written directly upstream)');
  t.same(meta(after)['managedFields'], meta(before)['managedFields'], 'nor a managedFields entry');
  const { nodeName: _n, ...specAfter } = spec(after);
  t.same(specAfter, spec(before), 'nothing else in the spec changed');

  const again = await failure(() => bindPod(rest, 'default', 'p', binding('p', 'n2')));
  t.match(again, { code: 409, reason: 'Conflict', message: 'Operation cannot be fulfilled on pods/binding "p": pod p is already assigned to node "n1"', details: { name: 'p', kind: 'pods/binding' } });
  t.equal(spec((await rest.get(POD, 'default', 'p')).object as KObject)['nodeName'], 'n1', 'still on n1');
  t.match(await failure(() => bindPod(rest, 'default', 'missing', binding('missing', 'n1'))), { code: 404, reason: 'NotFound', message: 'pods "missing" not found' });

  await rest.create(POD, 'default', pod('q'));
  t.match(await failure(() => bindPod(rest, 'default', 'q', binding('other', 'n1'))), { code: 400, message: 'name in URL does not match name in Binding object' });
  t.match(await failure(() => bindPod(rest, 'default', 'q', { ...binding('q', 'n1'), kind: 'Pod' })), { code: 400 });
  t.match(await failure(() => bindPod(rest, 'default', 'q', { metadata: { name: 'q' }, target: { kind: 'Service' } })), {
    code: 422, reason: 'Invalid', message: 'Binding "q" is invalid: [target.kind: Unsupported value: "Service": supported values: "Node", "<empty>", target.name: Required value]',
  });
  t.match(await failure(() => bindPod(rest, 'default', 'q', binding('q', 'n1', { uid: 'not-its-uid' }))), { code: 409, message: /Precondition failed: UID in precondition: not-its-uid/ });
  const dry = await bindPod(rest, 'default', 'q', binding('q', 'n1', { uid: meta((await rest.get(POD, 'default', 'q')).object as KObject)['uid'] }), { dryRun: true });
  t.equal(dry.code, 201);
  t.notOk(spec((await rest.get(POD, 'default', 'q')).object as KObject)['nodeName'], 'dryRun: not bound');

  await rest.create(POD, 'default', { ...pod('r'), metadata: { name: 'r', finalizers: ['example.com/hold'] } });
  await rest.delete(POD, 'default', 'r');
  t.match(await failure(() => bindPod(rest, 'default', 'r', binding('r', 'n1'))), { code: 409, message: 'Operation cannot be fulfilled on pods/binding "r": pod r is being deleted, cannot be assigned to a host' });
  await rest.create(POD, 'default', pod('gated', { schedulingGates: [{ name: 'example.com/wait' }] }));
  t.match(await failure(() => bindPod(rest, 'default', 'gated', binding('gated', 'n1'))), { code: 409, message: /pod gated has non-empty \.spec\.schedulingGates/ });
});
