/**
 * The GarbageCollector as kube-controller-manager's garbage collector and namespace controller
 * behave, on a real storage and watch cache over the validating FakePersistence, a FakeClock and a real Rest: the
 * three propagation policies (Background, Foreground, Orphan) down a Deployment → ReplicaSet →
 * Pods chain, dependents with several owners and with owners that never existed, Namespace
 * termination, a start on a store that already holds garbage, and stop().
 */
import t, { type Test } from 'tap';
import { asController } from '../testing/as-controller.js';
import { Admission } from '../admission/admission.js';
import { makePlugins } from '../admission/plugins.js';
import { silentLogger } from '../../lib/log/log.js';
import { FakeClock, settle } from '../../lib/reconcile/clock.fake.js';
import { RESOURCES, type Resource } from '../api/resources.js';
import { Rest } from '../api/rest.js';
import { loadSchemas } from '../api/schema.js';
import { FakePersistence } from '../store/persistence.fake.js';
import type { WatchCache } from '../store/watch-cache.js';
import { openTestStore } from '../testing/store.js';
import type { KObject } from '../store/types.js';
import { GarbageCollector, type OwnerRef } from './garbage-collector.js';
import { failure } from '../testing/control-plane.js';

type O = Record<string, unknown>;
const schemas = await loadSchemas([...RESOURCES.map((r) => r.model), 'V1Scale', 'V1Status', 'V1DeleteOptions', 'V1ListMeta']);
const R = (resource: string): Resource => RESOURCES.find((r) => r.resource === resource)!;
const NS = R('namespaces');
const SVC = R('services');
const POD = R('pods');
const DEPLOY = R('deployments');
const RS = R('replicasets');
const START = Date.parse('2024-05-01T10:00:00Z');

interface World {
  clock: FakeClock;
  persistence: FakePersistence;
  store: WatchCache;
  rest: Rest;
  gc: GarbageCollector;
}

function build(t: Test, clock: FakeClock, persistence: FakePersistence, uidPrefix: string): Omit<World, 'gc'> & { gc: GarbageCollector } {
  const ts = openTestStore({ persistence, clock });
  const store = ts.cache;
  let n = 0;
  const rest = new Rest({ storage: ts.storage, cache: store, schemas, admission: Admission.of(makePlugins({ cache: store, storage: ts.storage }), ['NamespaceLifecycle', 'DefaultTolerationSeconds']), clock, uid: () => `${uidPrefix}${++n}` });
  const gc = new GarbageCollector({ rest: asController(rest, 'generic-garbage-collector'), cache: store, clock, log: silentLogger() });
  t.teardown(() => {
    gc.stop();
    ts.close();
  });
  return { clock, persistence, store, rest, gc };
}

/** A store with the `default` namespace and a collector (started unless told otherwise). */
async function setup(t: Test, opts: { start?: boolean } = {}): Promise<World> {
  const w = build(t, new FakeClock(START), new FakePersistence(), 'uid-');
  await w.rest.create(NS, '', { apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'default' } });
  if (opts.start !== false) w.gc.start();
  return w;
}

/**
 * Waits until the collector has nothing left to do. A write that lost a race is retried from a
 * 0 ms timer of the clock: those are fired here; longer retry delays are left to the test.
 */
async function quiet(w: World): Promise<void> {
  for (let i = 0; i < 100; i++) {
    await w.gc.idle();
    await settle();
    const next = w.clock.nextAt();
    if (next === null || next > w.clock.now()) return;
    await w.clock.advance(0);
  }
  throw new Error('the garbage collector did not settle');
}

/** The Status of a call that must fail. */

/** A reader of the DELETED events of the given resources from now on, in revision order, as `gr/ns/name`. */
function deletions(t: Test, store: WatchCache, ...rs: Resource[]): () => string[] {
  const out: { rev: number; key: string }[] = [];
  const handles = rs.map((r) =>
    store.watch({ gr: r.group ? `${r.resource}.${r.group}` : r.resource, afterRev: store.rev, onEvent: (ev) => void (ev.type === 'DELETED' && out.push({ rev: ev.rev, key: ev.key })) }),
  );
  t.teardown(() => handles.forEach((h) => h.stop()));
  return () => [...out].sort((a, b) => a.rev - b.rev).map((e) => e.key);
}

const meta = (o: Readonly<KObject> | undefined): O => (o?.metadata ?? {}) as O;
const uidOf = (o: Readonly<KObject>): string => String(meta(o)['uid']);
const refsOf = (o: Readonly<KObject> | undefined): unknown => meta(o)['ownerReferences'];

const template = (app: string) => ({ metadata: { labels: { app } }, spec: { containers: [{ name: 'web', image: 'nginx:1.25' }] } });
const owner = (o: Readonly<KObject>, more: Partial<OwnerRef> = {}): OwnerRef => ({
  apiVersion: String(o.apiVersion),
  kind: String(o.kind),
  name: String(meta(o)['name']),
  uid: uidOf(o),
  controller: true,
  blockOwnerDeletion: true,
  ...more,
});
const deploy = (name = 'web'): KObject => ({ apiVersion: 'apps/v1', kind: 'Deployment', metadata: { name }, spec: { selector: { matchLabels: { app: name } }, template: template(name) } });
const rset = (name: string, refs: readonly OwnerRef[] = []): KObject => ({
  apiVersion: 'apps/v1',
  kind: 'ReplicaSet',
  metadata: { name, ...(refs.length ? { ownerReferences: refs } : {}) },
  spec: { selector: { matchLabels: { app: 'web' } }, template: template('web') },
});
const pod = (name: string, refs: readonly OwnerRef[] = [], m: O = {}): KObject => ({
  apiVersion: 'v1',
  kind: 'Pod',
  metadata: { name, ...(refs.length ? { ownerReferences: refs } : {}), ...m },
  spec: { containers: [{ name: 'web', image: 'nginx:1.25' }] },
});
const svc = (name: string): KObject => ({ apiVersion: 'v1', kind: 'Service', metadata: { name }, spec: { selector: { app: name }, ports: [{ port: 80 }] } });

/** Deployment `web` → ReplicaSet `web-1` → Pods `web-1-a`, `web-1-b` (the first with `podMeta`), in `ns`. */
async function chain(rest: Rest, ns = 'default', podMeta: O = {}) {
  const d = (await rest.create(DEPLOY, ns, deploy())).object;
  const rs = (await rest.create(RS, ns, rset('web-1', [owner(d)]))).object;
  const a = (await rest.create(POD, ns, pod('web-1-a', [owner(rs)], podMeta))).object;
  const b = (await rest.create(POD, ns, pod('web-1-b', [owner(rs)]))).object;
  return { d, rs, a, b };
}

const K = {
  d: (ns = 'default', name = 'web') => `deployments.apps/${ns}/${name}`,
  rs: (ns = 'default', name = 'web-1') => `replicasets.apps/${ns}/${name}`,
  pod: (name: string, ns = 'default') => `pods/${ns}/${name}`,
  svc: (name: string, ns = 'default') => `services/${ns}/${name}`,
};

t.test('nothing to collect: owned objects whose owners exist are left as they are', async (t) => {
  const w = await setup(t);
  await chain(w.rest);
  const rev = w.store.rev;
  await quiet(w);
  t.equal(w.store.rev, rev, 'no write at all');
  t.ok(w.store.get(K.rs()) && w.store.get(K.pod('web-1-a')) && w.store.get(K.pod('web-1-b')));
});

t.test('Background: the Deployment goes at once, then its ReplicaSet, then the Pods', async (t) => {
  const w = await setup(t);
  const { d } = await chain(w.rest);
  const gone = deletions(t, w.store, DEPLOY, RS, POD);
  const res = await w.rest.delete(DEPLOY, 'default', 'web', { propagationPolicy: 'Background' });
  t.match(res.body, { kind: 'Status', status: 'Success', details: { name: 'web', uid: uidOf(d) } });
  t.equal(w.store.get(K.d()), undefined, 'the owner does not wait');
  t.ok(w.store.get(K.rs()), 'its dependents are not gone yet: the collector deletes them after');
  await quiet(w);
  t.equal(w.store.get(K.rs()), undefined);
  t.equal(w.store.get(K.pod('web-1-a')), undefined);
  t.equal(w.store.get(K.pod('web-1-b')), undefined);
  t.same(gone(), [K.d(), K.rs(), K.pod('web-1-a'), K.pod('web-1-b')], 'owner first, then each level in turn');

  // No propagationPolicy is Background too.
  const d2 = (await w.rest.create(DEPLOY, 'default', deploy('api'))).object;
  await w.rest.create(RS, 'default', rset('api-1', [owner(d2)]));
  await w.rest.delete(DEPLOY, 'default', 'api');
  t.equal(w.store.get(K.d('default', 'api')), undefined);
  await quiet(w);
  t.equal(w.store.get(K.rs('default', 'api-1')), undefined);
});

t.test('Foreground: the owner waits with its finalizer until its blocking dependents are gone, all the way down', async (t) => {
  const w = await setup(t);
  await w.clock.advance(3000);
  await chain(w.rest, 'default', { finalizers: ['example.com/hold'] });
  const gone = deletions(t, w.store, DEPLOY, RS, POD);
  const podFinalizers: unknown[] = [];
  const h = w.store.watch({ gr: 'pods', afterRev: w.store.rev, onEvent: (ev) => void podFinalizers.push(meta(ev.cur.object)['finalizers']) });
  t.teardown(() => h.stop());
  const res = await w.rest.delete(DEPLOY, 'default', 'web', { propagationPolicy: 'Foreground' });
  t.match(meta(res.body as KObject), { deletionTimestamp: '2024-05-01T10:00:03Z', finalizers: ['foregroundDeletion'] });
  await quiet(w);

  const d = w.store.get(K.d())?.object;
  t.match(meta(d), { deletionTimestamp: '2024-05-01T10:00:03Z', finalizers: ['foregroundDeletion'] }, 'the Deployment waits for its ReplicaSet');
  const rs = w.store.get(K.rs())?.object;
  t.match(meta(rs), { deletionTimestamp: String, finalizers: ['foregroundDeletion'] }, 'the ReplicaSet is deleted in the foreground too');
  t.equal(w.store.get(K.pod('web-1-b')), undefined, 'the Pod nothing holds is gone');
  const held = w.store.get(K.pod('web-1-a'))?.object;
  t.match(meta(held), { deletionTimestamp: String }, 'the held Pod is being deleted');
  t.same(meta(held)['finalizers'], ['example.com/hold'], 'with only its own finalizer: a Pod without dependents is deleted in the background, as upstream');
  t.same(gone(), [K.pod('web-1-b')]);
  t.notOk(podFinalizers.some((f) => Array.isArray(f) && f.includes('foregroundDeletion')), 'no Pod ever carried foregroundDeletion');

  // Its own finalizer removed, the Pod goes; then the ReplicaSet; then the Deployment.
  const cur = w.store.get(K.pod('web-1-a'))!.object as KObject;
  await w.rest.update(POD, 'default', 'web-1-a', { ...cur, metadata: { ...meta(cur), finalizers: [] } });
  await quiet(w);
  t.equal(w.store.get(K.pod('web-1-a')), undefined);
  t.equal(w.store.get(K.rs()), undefined);
  t.equal(w.store.get(K.d()), undefined);
  t.same(gone(), [K.pod('web-1-b'), K.pod('web-1-a'), K.rs(), K.d()], 'dependents first, the owner last');
});

t.test('Foreground: a dependent that does not block (blockOwnerDeletion unset) does not hold its owner', async (t) => {
  const w = await setup(t);
  const d = (await w.rest.create(DEPLOY, 'default', deploy())).object;
  await w.rest.create(RS, 'default', rset('web-1', [owner(d, { blockOwnerDeletion: false })]));
  await w.rest.create(POD, 'default', pod('p', [owner(d, { blockOwnerDeletion: false })], { finalizers: ['example.com/hold'] }));
  await w.rest.delete(DEPLOY, 'default', 'web', { propagationPolicy: 'Foreground' });
  await quiet(w);
  t.equal(w.store.get(K.d()), undefined, 'the owner went');
  t.equal(w.store.get(K.rs()), undefined, 'its dependents are deleted all the same');
  t.match(meta(w.store.get(K.pod('p'))?.object), { deletionTimestamp: String, finalizers: ['example.com/hold'] });
});

t.test('Foreground: a blocking dependent that drops its reference releases the waiting owner', async (t) => {
  const w = await setup(t);
  const { rs } = await chain(w.rest, 'default', { finalizers: ['example.com/hold'] });
  await w.rest.delete(DEPLOY, 'default', 'web', { propagationPolicy: 'Foreground' });
  await quiet(w);
  t.ok(w.store.get(K.d()), 'the Deployment waits for the ReplicaSet (held by its Pod)');
  const cur = w.store.get(K.rs())!.object as KObject;
  const m = { ...meta(cur) };
  delete m['ownerReferences'];
  await w.rest.update(RS, 'default', 'web-1', { ...cur, metadata: m });
  await quiet(w);
  t.equal(w.store.get(K.d()), undefined, 'nothing blocks it any more: the owner goes (upstream: addUnblockedOwnersToDeleteQueue)');
  t.ok(w.store.get(K.rs()), 'the ReplicaSet still waits for its own Pod');
  t.equal(uidOf(w.store.get(K.rs())!.object), uidOf(rs));

  // The same when the reference stays but stops blocking.
  const d2 = (await w.rest.create(DEPLOY, 'default', deploy('api'))).object;
  const rs2 = (await w.rest.create(RS, 'default', rset('api-1', [owner(d2)]))).object;
  await w.rest.create(POD, 'default', pod('api-1-a', [owner(rs2)], { finalizers: ['example.com/hold'] }));
  await w.rest.delete(DEPLOY, 'default', 'api', { propagationPolicy: 'Foreground' });
  await quiet(w);
  t.ok(w.store.get(K.d('default', 'api')));
  const cur2 = w.store.get(K.rs('default', 'api-1'))!.object as KObject;
  await w.rest.update(RS, 'default', 'api-1', { ...cur2, metadata: { ...meta(cur2), ownerReferences: [owner(d2, { blockOwnerDeletion: false })] } });
  await quiet(w);
  t.equal(w.store.get(K.d('default', 'api')), undefined);
});

t.test('Orphan: the ReplicaSet stays and loses its reference; the Deployment goes; the Pods stay the ReplicaSet\'s', async (t) => {
  const w = await setup(t);
  const { rs } = await chain(w.rest);
  const res = await w.rest.delete(DEPLOY, 'default', 'web', { propagationPolicy: 'Orphan' });
  t.same(meta(res.body as KObject)['finalizers'], ['orphan']);
  await quiet(w);
  t.equal(w.store.get(K.d()), undefined, 'the Deployment went once its dependents were orphaned');
  const left = w.store.get(K.rs())?.object;
  t.ok(left, 'the ReplicaSet stays');
  t.equal(uidOf(left!), uidOf(rs), 'the same one, not recreated');
  t.notOk('ownerReferences' in meta(left), 'with no owner reference left');
  t.notOk(meta(left)['deletionTimestamp'], 'and not being deleted');
  for (const p of ['web-1-a', 'web-1-b']) {
    t.same(refsOf(w.store.get(K.pod(p))?.object), [owner(rs)], `${p} is still owned by the ReplicaSet`);
  }
  // The orphan is collected by nobody later on.
  const rev = w.store.rev;
  await quiet(w);
  t.equal(w.store.rev, rev);
});

t.test('two owners: deleting one removes only the reference to it; deleting the other collects the dependent', async (t) => {
  const w = await setup(t);
  const a = (await w.rest.create(RS, 'default', rset('a'))).object;
  const b = (await w.rest.create(RS, 'default', rset('b'))).object;
  await w.rest.create(POD, 'default', pod('shared', [owner(a), owner(b, { controller: false })]));
  await w.rest.delete(RS, 'default', 'a');
  await quiet(w);
  const p = w.store.get(K.pod('shared'))?.object;
  t.ok(p, 'the Pod stays');
  t.same(refsOf(p), [owner(b, { controller: false })], 'owned by the other one only');
  await w.rest.delete(RS, 'default', 'b');
  await quiet(w);
  t.equal(w.store.get(K.pod('shared')), undefined, 'its last owner gone, it goes');
});

t.test('two owners, one deleted in the foreground: the dependent stays with the other, and the owner goes', async (t) => {
  const w = await setup(t);
  const a = (await w.rest.create(RS, 'default', rset('a'))).object;
  const b = (await w.rest.create(RS, 'default', rset('b'))).object;
  await w.rest.create(POD, 'default', pod('shared', [owner(a), owner(b, { controller: false })]));
  await w.rest.delete(RS, 'default', 'a', { propagationPolicy: 'Foreground' });
  await quiet(w);
  const p = w.store.get(K.pod('shared'))?.object;
  t.ok(p, 'a dependent with an owner that stays is not deleted (upstream: the waiting owner\'s reference is removed)');
  t.notOk(meta(p)['deletionTimestamp']);
  t.same(refsOf(p), [owner(b, { controller: false })]);
  t.equal(w.store.get(K.rs('default', 'a')), undefined, 'the owner is not held by a dependent it no longer has');
});

t.test('owners that do not exist: a reference to a missing uid is collected; one to a kind not served is left alone', async (t) => {
  const w = await setup(t);
  const d = (await w.rest.create(DEPLOY, 'default', deploy())).object;
  await w.rest.create(RS, 'default', rset('impostor', [owner(d, { uid: 'not-the-uid' })]));
  await w.rest.create(RS, 'default', rset('orphaned', [{ apiVersion: 'apps/v1', kind: 'Deployment', name: 'gone', uid: 'gone-uid', controller: true }]));
  const cm = { apiVersion: 'v1', kind: 'ReplicationController', name: 'settings', uid: 'rc-uid' };
  await w.rest.create(POD, 'default', pod('by-configmap', [cm]));
  await w.rest.create(POD, 'default', pod('by-widget', [{ apiVersion: 'example.com/v1', kind: 'Widget', name: 'w', uid: 'w-uid' }]));
  await quiet(w);
  t.equal(w.store.get(K.rs('default', 'impostor')), undefined, 'same name, another uid: the owner is gone');
  t.equal(w.store.get(K.rs('default', 'orphaned')), undefined, 'no object of that name at all');
  t.ok(w.store.get(K.d()), 'the Deployment its impostor named is untouched');
  t.same(refsOf(w.store.get(K.pod('by-configmap'))?.object), [cm], 'a ReplicationController is not served here: never collected on its account');
  t.ok(w.store.get(K.pod('by-widget')), 'nor on a custom kind\'s account');

  // A reference added later to an object that exists is checked as well.
  const cur = w.store.get(K.pod('by-configmap'))!.object as KObject;
  await w.rest.update(POD, 'default', 'by-configmap', { ...cur, metadata: { ...meta(cur), ownerReferences: [cm, owner(d, { uid: 'stale', controller: false })] } });
  await quiet(w);
  t.same(refsOf(w.store.get(K.pod('by-configmap'))?.object), [cm], 'with an owner kept, only the dangling reference goes');
});

t.test('a namespaced owner is looked up in its dependent\'s namespace', async (t) => {
  const w = await setup(t);
  await w.rest.create(NS, '', { metadata: { name: 'other' } });
  const d = (await w.rest.create(DEPLOY, 'other', deploy())).object;
  await w.rest.create(RS, 'default', rset('web-1', [owner(d)]));
  await w.rest.create(RS, 'other', rset('web-1', [owner(d)]));
  await quiet(w);
  t.equal(w.store.get(K.rs()), undefined, 'no such Deployment in its own namespace: collected');
  t.ok(w.store.get(K.rs('other')), 'the one beside its owner stays');
});

t.test('namespace deletion: Terminating, emptied, finalized, gone; other namespaces untouched; no creates meanwhile', async (t) => {
  const w = await setup(t);
  await w.clock.advance(2000);
  await w.rest.create(NS, '', { metadata: { name: 'team' } });
  await w.rest.create(SVC, 'team', svc('web'));
  await w.rest.create(SVC, 'team', svc('db'));
  await w.rest.create(POD, 'team', pod('loose'));
  await w.rest.create(POD, 'team', pod('held', [], { finalizers: ['example.com/hold'] }));
  await chain(w.rest, 'team');
  await w.rest.create(SVC, 'default', svc('web'));
  await chain(w.rest, 'default');
  const before = new Map([K.svc('web'), K.d(), K.rs(), K.pod('web-1-a'), K.pod('web-1-b')].map((k) => [k, w.store.get(k)!.rev]));
  await quiet(w);

  const res = await w.rest.delete(NS, '', 'team');
  t.match(res.body, { kind: 'Namespace', metadata: { deletionTimestamp: '2024-05-01T10:00:02Z' }, spec: { finalizers: ['kubernetes'] }, status: { phase: 'Terminating' } });
  await quiet(w);
  const ns = w.store.get('namespaces//team')?.object;
  t.match(ns, { metadata: { deletionTimestamp: String }, spec: { finalizers: ['kubernetes'] }, status: { phase: 'Terminating' } }, 'kept while something in it remains');
  for (const k of [K.svc('web', 'team'), K.svc('db', 'team'), K.pod('loose', 'team'), K.d('team'), K.rs('team'), K.pod('web-1-a', 'team'), K.pod('web-1-b', 'team')]) {
    t.equal(w.store.get(k), undefined, `${k} deleted`);
  }
  t.match(meta(w.store.get(K.pod('held', 'team'))?.object), { deletionTimestamp: String, finalizers: ['example.com/hold'] }, 'the held Pod is being deleted');
  t.match(await failure(() => w.rest.create(SVC, 'team', svc('late'))), { code: 403, reason: 'Forbidden', details: { causes: [{ reason: 'NamespaceTerminating' }] } }, 'no new content while it terminates');
  t.equal(w.store.get(K.svc('late', 'team')), undefined);

  const cur = w.store.get(K.pod('held', 'team'))!.object as KObject;
  await w.rest.update(POD, 'team', 'held', { ...cur, metadata: { ...meta(cur), finalizers: [] } });
  await quiet(w);
  t.equal(w.store.get(K.pod('held', 'team')), undefined);
  t.equal(w.store.get('namespaces//team'), undefined, 'emptied, its `kubernetes` finalizer removed: gone');
  for (const [k, rev] of before) t.equal(w.store.get(k)?.rev, rev, `${k} in default untouched`);
  t.ok(w.store.get('namespaces//default'));
});

t.test('namespace deletion: an empty namespace goes as soon as the collector sees it', async (t) => {
  const w = await setup(t);
  await w.rest.create(NS, '', { metadata: { name: 'empty' } });
  await w.rest.delete(NS, '', 'empty');
  t.ok(w.store.get('namespaces//empty'), 'Terminating first');
  await quiet(w);
  t.equal(w.store.get('namespaces//empty'), undefined);
});

t.test('start: garbage left while no collector ran is collected at start', async (t) => {
  const clock = new FakeClock(START);
  const persistence = new FakePersistence();
  {
    const ts = openTestStore({ persistence, clock });
  const store = ts.cache;
    const rest = new Rest({ storage: ts.storage, cache: store, schemas, admission: Admission.of(makePlugins({ cache: store, storage: ts.storage }), ['NamespaceLifecycle', 'DefaultTolerationSeconds']), clock, uid: (() => { let n = 0; return () => `old-${++n}`; })() });
    await rest.create(NS, '', { apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'default' } });
    await chain(rest);
    const keep = (await rest.create(DEPLOY, 'default', deploy('api'))).object;
    await rest.create(RS, 'default', rset('api-1', [owner(keep)]));
    await rest.delete(DEPLOY, 'default', 'web');
    t.ok(store.get(K.rs()), 'no collector: the ReplicaSet is left dangling');
    ts.close();
  }
  const w = build(t, clock, persistence, 'new-');
  t.ok(w.store.get(K.rs()), 'still there after the restart');
  w.gc.start();
  await quiet(w);
  t.equal(w.store.get(K.rs()), undefined, 'collected at start');
  t.equal(w.store.get(K.pod('web-1-a')), undefined, 'and its Pods after it');
  t.equal(w.store.get(K.pod('web-1-b')), undefined);
  t.ok(w.store.get(K.rs('default', 'api-1')), 'a dependent whose owner exists stays');
});

t.test('a failed write is retried after retryMs on the clock', async (t) => {
  const w = await setup(t);
  await chain(w.rest);
  await quiet(w);
  await w.rest.delete(DEPLOY, 'default', 'web');
  // The collector's delete of the ReplicaSet is accepted and waits for the next commit: make it fail.
  w.persistence.failNext = 1;
  await quiet(w);
  t.ok(w.store.get(K.rs()), 'the commit failed: the ReplicaSet is still there');
  await w.clock.advance(199);
  await quiet(w);
  t.ok(w.store.get(K.rs()), 'not retried before retryMs (200 ms)');
  await w.clock.advance(1);
  await quiet(w);
  t.equal(w.store.get(K.rs()), undefined, 'retried');
  t.equal(w.store.get(K.pod('web-1-a')), undefined);
});

t.test('stop: nothing is collected after it', async (t) => {
  const w = await setup(t);
  await chain(w.rest);
  w.gc.stop();
  await w.gc.idle();
  await w.rest.delete(DEPLOY, 'default', 'web');
  await settle();
  await w.clock.advance(1000);
  t.equal(w.store.get(K.d()), undefined);
  t.ok(w.store.get(K.rs()), 'the dangling ReplicaSet stays');
  t.ok(w.store.get(K.pod('web-1-a')));
  t.notOk(meta(w.store.get(K.rs())?.object)['deletionTimestamp']);

  // Stopped with a retry pending: the retry does not run either.
  const w2 = await setup(t);
  await chain(w2.rest);
  await quiet(w2);
  await w2.rest.delete(DEPLOY, 'default', 'web');
  w2.persistence.failNext = 1;
  await quiet(w2);
  w2.gc.stop();
  await w2.clock.advance(1000);
  t.ok(w2.store.get(K.rs()), 'the pending retry was cancelled');
});
