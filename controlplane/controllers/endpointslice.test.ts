/**
 * The EndpointSlice controller on a real storage (LocalStorage over the fake persistence) and watch cache and Rest:
 * the Pods a Service selects become endpoints with kube-proxy's conditions,
 * named ports resolved per Pod, at most 100 per slice, following Pod
 * changes; a Service without a selector keeps its user's slices; an edited
 * managed slice is put back; the slices go with their Service.
 */
import t, { type Test } from 'tap';
import { asController } from '../testing/as-controller.js';
import { silentLogger } from '../../lib/log/log.js';
import { FakeClock } from '../../lib/reconcile/clock.fake.js';
import { Rest } from '../api/rest.js';
import { RESOURCES } from '../api/resources.js';
import { loadSchemas } from '../api/schema.js';
import { GarbageCollector } from '../gc/garbage-collector.js';
import { FakePersistence } from '../store/persistence.fake.js';
import type { WatchCache } from '../store/watch-cache.js';
import { openTestStore } from '../testing/store.js';
import type { KObject } from '../store/types.js';
import { desiredSlices, EndpointSliceController, MANAGED_BY, rfc3339Nano, TRIGGER_TIME_ANNOTATION } from './endpointslice.js';

type O = Record<string, unknown>;
const schemas = await loadSchemas([...RESOURCES.map((r) => r.model), 'V1Scale', 'V1Status', 'V1DeleteOptions', 'V1ListMeta']);
const R = (name: string) => RESOURCES.find((r) => r.resource === name)!;
const [SVC, POD, EPS, NS] = [R('services'), R('pods'), R('endpointslices'), R('namespaces')];

async function setup(t: Test) {
  const clock = new FakeClock();
  const ts = openTestStore({ persistence: new FakePersistence(), clock });
  const store = ts.cache;
  const rest = new Rest({ storage: ts.storage, cache: store, schemas, clock });
  await rest.create(NS, '', { apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'default' } });
  const ctl = new EndpointSliceController({ rest: asController(rest, 'endpointslice-controller'), cache: store, clock, log: silentLogger() });
  const gc = new GarbageCollector({ rest: asController(rest, 'generic-garbage-collector'), cache: store, clock, log: silentLogger() });
  ctl.start();
  gc.start();
  t.teardown(() => {
    ctl.stop();
    gc.stop();
    ts.close();
  });
  const settle = async () => {
    for (let i = 0; i < 5; i++) {
      await ctl.idle();
      await gc.idle();
    }
  };
  return { store, rest, ctl, settle, clock };
}

const svc = (name: string, spec: O = {}): KObject => ({ apiVersion: 'v1', kind: 'Service', metadata: { name }, spec: { selector: { app: name }, ports: [{ name: 'http', port: 80, targetPort: 'web' }], ...spec } });
const pod = (name: string, app: string, o: { ip?: string; ready?: boolean; node?: string; port?: number } = {}): KObject => ({
  apiVersion: 'v1', kind: 'Pod', metadata: { name, labels: { app } },
  spec: { nodeName: o.node ?? 'n1', containers: [{ name: 'c', image: 'none', ports: [{ name: 'web', containerPort: o.port ?? 8080 }] }] },
});

async function runPod(rest: Rest, p: KObject, ip: string, ready = true): Promise<void> {
  const name = String(p.metadata!['name']);
  await rest.create(POD, 'default', p);
  const cur = (await rest.get(POD, 'default', name)).object as KObject;
  await rest.update(POD, 'default', name, { ...structuredClone(cur), status: { phase: 'Running', podIP: ip, conditions: [{ type: 'Ready', status: ready ? 'True' : 'False' }] } }, { sub: 'status' });
}

function slicesOf(store: WatchCache, svcName: string) {
  return store.list('endpointslices.discovery.k8s.io', 'default').items.map((s) => s.object as KObject & { endpoints: O[]; ports: O[] }).filter((s) => (s.metadata!['labels'] as O)['kubernetes.io/service-name'] === svcName);
}

t.test('the selected Pods as endpoints with ready, serving, terminating, nodeName, targetRef and resolved ports', async (t) => {
  const { rest, store, settle } = await setup(t);
  await rest.create(SVC, 'default', svc('web'));
  await settle();
  t.same(slicesOf(store, 'web').map((s) => s.endpoints.length), [0], 'a placeholder slice before there are Pods');
  await runPod(rest, pod('web-1', 'web'), '10.244.1.5');
  await runPod(rest, pod('web-2', 'web', { node: 'n2', port: 9090 }), '10.244.2.5', false);
  await runPod(rest, pod('other', 'db'), '10.244.1.9');
  await rest.create(POD, 'default', pod('no-ip', 'web'));
  await settle();
  const slices = slicesOf(store, 'web');
  t.equal(slices.length, 2, 'two port mappings (web is 8080 on one Pod, 9090 on the other): two slices');
  const all: O[] = slices.flatMap((s) => s.endpoints.map((e) => ({ ...e, ports: s.ports })));
  t.match(all.find((e) => (e['addresses'] as string[])[0] === '10.244.1.5'), {
    conditions: { ready: true, serving: true, terminating: false }, nodeName: 'n1', targetRef: { kind: 'Pod', name: 'web-1', namespace: 'default' }, ports: [{ name: 'http', port: 8080, protocol: 'TCP' }],
  });
  t.match(all.find((e) => (e['addresses'] as string[])[0] === '10.244.2.5'), { conditions: { ready: false, serving: false, terminating: false }, nodeName: 'n2', ports: [{ port: 9090 }] });
  t.equal(all.length, 2, 'the Pod without an IP and the one not selected are left out');
  t.match(slices[0]!, { addressType: 'IPv4', metadata: { labels: { [MANAGED_BY]: 'endpointslice-controller.k8s.io' }, ownerReferences: [{ kind: 'Service', name: 'web', controller: true }] } });

  // A Pod that terminates: not ready, still serving, terminating (kube-proxy's terminating endpoints).
  await rest.create(R('nodes'), '', { apiVersion: 'v1', kind: 'Node', metadata: { name: 'n1' } });
  await rest.delete(POD, 'default', 'web-1');
  await settle();
  const term = slicesOf(store, 'web').flatMap((s) => s.endpoints).find((e) => (e['addresses'] as string[])[0] === '10.244.1.5');
  t.match(term, { conditions: { ready: false, serving: true, terminating: true } });
  await rest.delete(POD, 'default', 'web-1', { gracePeriodSeconds: 0 });
  await settle();
  t.notOk(slicesOf(store, 'web').flatMap((s) => s.endpoints).some((e) => (e['addresses'] as string[])[0] === '10.244.1.5'), 'gone with the Pod');
});

t.test('at most 100 endpoints per slice', async (t) => {
  const { rest, store, settle } = await setup(t);
  await rest.create(SVC, 'default', svc('big', { ports: [{ port: 80 }] }));
  for (let i = 0; i < 250; i++) await runPod(rest, pod(`p${i}`, 'big'), `10.244.${Math.floor(i / 200)}.${(i % 200) + 1}`);
  await settle();
  t.same(slicesOf(store, 'big').map((s) => s.endpoints.length).sort(), [100, 100, 50]);
  t.equal(new Set(slicesOf(store, 'big').flatMap((s) => s.endpoints.map((e) => (e['addresses'] as string[])[0]))).size, 250);
});

t.test('a Service without a selector keeps its user\'s slices; an edited managed slice is put back; slices go with their Service', async (t) => {
  const { rest, store, settle } = await setup(t);
  await rest.create(SVC, 'default', { apiVersion: 'v1', kind: 'Service', metadata: { name: 'ext' }, spec: { ports: [{ port: 80 }] } });
  await rest.create(EPS, 'default', { apiVersion: 'discovery.k8s.io/v1', kind: 'EndpointSlice', metadata: { name: 'ext-1', labels: { 'kubernetes.io/service-name': 'ext' } }, addressType: 'IPv4', ports: [{ port: 80 }], endpoints: [{ addresses: ['192.0.2.1'] }] });
  await settle();
  t.same(slicesOf(store, 'ext').map((s) => s.metadata!['name']), ['ext-1'], 'left alone');
  await rest.create(SVC, 'default', svc('web', { ports: [{ port: 80 }] }));
  await runPod(rest, pod('w', 'web'), '10.244.1.7');
  await settle();
  const [s] = slicesOf(store, 'web');
  await rest.update(EPS, 'default', String(s!.metadata!['name']), { ...structuredClone(s!), endpoints: [] });
  await settle();
  t.equal(slicesOf(store, 'web')[0]!.endpoints.length, 1, 'put back');
  await rest.delete(SVC, 'default', 'web');
  await settle();
  t.same(slicesOf(store, 'web'), [], 'gone with the Service');
  t.same(slicesOf(store, 'ext').length, 1);
});

t.test('desiredSlices: finished Pods and unresolvable named ports are left out', async (t) => {
  const s = svc('x', { ports: [{ name: 'a', port: 80, targetPort: 'missing' }, { name: 'b', port: 81 }] });
  const p = (name: string, phase: string): KObject => ({ ...pod(name, 'x'), metadata: { name, namespace: 'default', uid: name, labels: { app: 'x' } }, status: { phase, podIP: `10.0.0.${name.length}` } });
  const d = desiredSlices(s, [p('ok', 'Running'), p('done1', 'Succeeded'), p('fail12', 'Failed')]);
  t.equal(d.length, 1);
  t.same(d[0]!.ports, [{ name: 'b', port: 81, protocol: 'TCP' }]);
  t.equal(d[0]!.endpoints.length, 1);
});

t.test('rfc3339Nano: Go\'s RFC3339Nano in UTC, no trailing zeros', async (t) => {
  t.equal(rfc3339Nano(Date.UTC(2026, 11, 1, 8, 30, 5)), '2026-12-01T08:30:05Z');
  t.equal(rfc3339Nano(Date.UTC(2026, 11, 1, 8, 30, 5, 120)), '2026-12-01T08:30:05.12Z');
  t.equal(rfc3339Nano(Date.UTC(2026, 11, 1, 8, 30, 5, 7)), '2026-12-01T08:30:05.007Z');
});

t.test('last-change-trigger-time: the Service\'s creation, a Pod\'s Ready transition, else when the change was seen', async (t) => {
  const { rest, store, settle, clock } = await setup(t);
  const trigger = (name: string) => slicesOf(store, name).map((s) => (s.metadata!['annotations'] as O | undefined)?.[TRIGGER_TIME_ANNOTATION]);
  await clock.advance(1500);
  const created = (await rest.create(SVC, 'default', svc('web', { ports: [{ port: 80 }] }))).object;
  await settle();
  t.same(trigger('web'), [created.metadata!['creationTimestamp']], 'a new Service: its creationTimestamp');
  // A Pod becomes Ready (its kubelet saw it 2 s before it wrote the status): the transition's time.
  await clock.advance(10_000);
  const ready = clock.now() - 2000;
  await rest.create(POD, 'default', pod('w1', 'web'));
  const cur = (await rest.get(POD, 'default', 'w1')).object as KObject;
  await rest.update(POD, 'default', 'w1', { ...structuredClone(cur), status: { phase: 'Running', podIP: '10.244.1.5', conditions: [{ type: 'Ready', status: 'True', lastTransitionTime: rfc3339Nano(ready) }] } }, { sub: 'status' });
  await settle();
  t.same(trigger('web'), [rfc3339Nano(ready)]);
  // A change without a Ready transition (a deletion): when the controller saw it.
  await clock.advance(5_250);
  const seen = clock.now();
  await rest.delete(POD, 'default', 'w1', { gracePeriodSeconds: 0 });
  await settle();
  t.same(trigger('web'), [rfc3339Nano(seen)]);
  t.match(rfc3339Nano(seen), /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d+Z$/, 'RFC 3339 with the fraction');
  // A change to the Service: when it was seen.
  await clock.advance(1000);
  await rest.patch(SVC, 'default', 'web', 'merge', { metadata: { labels: { tier: 'front' } } });
  await settle();
  t.same(trigger('web'), [rfc3339Nano(clock.now())], 'the Service\'s labels go to its slices: written, with the time');
});

t.test('last-change-trigger-time: a controller started over stored changes writes the slices without one', async (t) => {
  const { rest, store, ctl, settle } = await setup(t);
  ctl.stop();
  await rest.create(SVC, 'default', svc('late', { ports: [{ port: 80 }] }));
  await runPod(rest, pod('l1', 'late'), '10.244.1.8');
  const again = new EndpointSliceController({ rest, cache: store, clock: new FakeClock(), log: silentLogger() });
  again.start();
  t.teardown(() => again.stop());
  await again.idle();
  await settle();
  const [s] = slicesOf(store, 'late');
  t.equal(s?.endpoints.length, 1);
  t.notOk((s?.metadata!['annotations'] as O | undefined)?.[TRIGGER_TIME_ANNOTATION], 'no change was seen: no trigger time (upstream clears it then)');
});

t.test('a sync reads its own Service\'s slices, not the namespace\'s: the work per write does not grow with the store (issue 24)', async (t) => {
  const { store, rest, settle } = await setup(t);
  // A store with many user-written slices of other Services (as bench:apiserver loads it), and Services without selectors.
  for (let i = 0; i < 400; i++) {
    await rest.create(EPS, 'default', {
      apiVersion: 'discovery.k8s.io/v1', kind: 'EndpointSlice', metadata: { name: `other-${i}`, labels: { 'kubernetes.io/service-name': `other-${i % 200}` } },
      addressType: 'IPv4', endpoints: [{ addresses: [`10.244.${1 + Math.floor(i / 250)}.${2 + (i % 250)}`] }], ports: [{ name: 'http', port: 8080, protocol: 'TCP' }],
    });
  }
  await settle();
  // Count every object the store hands out (lists and index lookups) while the controller handles new Services.
  let read = 0;
  const list = store.list.bind(store);
  const byIndex = store.byIndex.bind(store);
  store.list = (gr, ns) => {
    const r = list(gr, ns);
    read += r.items.length;
    return r;
  };
  store.byIndex = (gr, name, value) => {
    const r = byIndex(gr, name, value);
    read += r.length;
    return r;
  };
  for (let i = 0; i < 20; i++) await rest.create(SVC, 'default', { apiVersion: 'v1', kind: 'Service', metadata: { name: `plain-${i}` }, spec: { ports: [{ port: 80 }] } });
  await settle();
  t.ok(read < 20 * 5, `20 Services without a selector took ${read} objects read by the controller (not the 400 slices each)`);
  read = 0;
  await rest.create(SVC, 'default', svc('web'));
  await settle();
  const readForWeb = read;
  t.equal(list('endpointslices.discovery.k8s.io', 'default').items.filter((s) => (s.object.metadata?.['labels'] as O)['kubernetes.io/service-name'] === 'web').length, 1, 'a Service with a selector still gets its slice');
  t.ok(readForWeb < 400 / 4, `and its syncs read ${readForWeb} objects`);
});

t.test('desiredSlices: a Pod\'s hostname on its endpoint only when its subdomain names the Service in its namespace (ShouldSetHostname)', async (t) => {
  const s: KObject = { apiVersion: 'v1', kind: 'Service', metadata: { name: 'sub', namespace: 'default' }, spec: { selector: { app: 'x' }, ports: [{ name: 'b', port: 81 }] } };
  const p = (name: string, spec: O): KObject => ({ apiVersion: 'v1', kind: 'Pod', metadata: { name, namespace: 'default', uid: name, labels: { app: 'x' } }, spec, status: { phase: 'Running', podIP: `10.0.0.${name.length}` } });
  const eps = desiredSlices(s, [p('a', { hostname: 'host-a', subdomain: 'sub' }), p('bb', { hostname: 'host-b', subdomain: 'other' }), p('ccc', { subdomain: 'sub' })])[0]!.endpoints;
  t.same(eps.map((e) => e['hostname'] ?? null), ['host-a', null, null]);
});
