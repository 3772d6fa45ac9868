/**
 * The Endpoints controller on a real storage (LocalStorage over the fake persistence), watch cache and Rest, behind
 * the EndpointSlice controller it mirrors: ready endpoints in `addresses`, not-ready in `notReadyAddresses`,
 * terminating ones left out (unless publishNotReadyAddresses), ports, targetRef and nodeName kept, the Service's
 * labels and the slices' trigger time copied; the Endpoints put back when edited or deleted, gone with its Service
 * (at start too), a user's Endpoints of a Service without a selector left alone; the `kubernetes` Service's from the
 * API servers' slice; 1000 addresses at most, annotated over-capacity; a failed write recorded as a Warning Event.
 */
import t, { type Test } from 'tap';
import { asController } from '../testing/as-controller.js';
import { silentLogger } from '../../lib/log/log.js';
import { FakeClock } from '../../lib/reconcile/clock.fake.js';
import { Rest } from '../api/rest.js';
import { RESOURCES } from '../api/resources.js';
import { loadSchemas } from '../api/schema.js';
import { GarbageCollector } from '../gc/garbage-collector.js';
import type { KObject } from '../store/types.js';
import type { WatchCache } from '../store/watch-cache.js';
import { openTestStore } from '../testing/store.js';
import { kubernetesSlice } from './apiserver-endpoints.js';
import { EndpointSliceController, rfc3339Nano, TRIGGER_TIME_ANNOTATION } from './endpointslice.js';
import { ENDPOINTS_MANAGED_BY, EndpointsController, type EndpointSubset, OVER_CAPACITY_ANNOTATION, subsetsFromSlices, truncateSubsets } from './endpoints.js';
import type { EventRecorder } from './events.js';

type O = Record<string, unknown>;
const schemas = await loadSchemas([...RESOURCES.map((r) => r.model), 'V1Scale', 'V1Status', 'V1DeleteOptions', 'V1ListMeta']);
const R = (name: string) => RESOURCES.find((r) => r.resource === name)!;
const [SVC, POD, EPS, NS, EP] = [R('services'), R('pods'), R('endpointslices'), R('namespaces'), R('endpoints')];

interface Recorded { reason: string; type: string; message: string; name: string }

async function setup(t: Test, o: { maxAddresses?: number; rest?: (r: Rest) => Rest; start?: boolean } = {}) {
  const clock = new FakeClock(Date.parse('2026-12-01T08:00:00Z'));
  const ts = openTestStore({ clock });
  const store = ts.cache;
  const rest = new Rest({ storage: ts.storage, cache: store, schemas, clock });
  await rest.create(NS, '', { apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'default' } });
  const recorded: Recorded[] = [];
  const events: EventRecorder = { event: (o, type, reason, message) => recorded.push({ reason, type, message, name: String(o.metadata?.['name']) }) };
  const slices = new EndpointSliceController({ rest: asController(rest, 'endpointslice-controller'), cache: store, clock, log: silentLogger() });
  const make = () => new EndpointsController({ rest: o.rest ? o.rest(rest) : asController(rest, 'endpoint-controller'), cache: store, clock, log: silentLogger(), events, retryMs: 60_000, ...(o.maxAddresses ? { maxAddresses: o.maxAddresses } : {}) });
  let ctl = make();
  const gc = new GarbageCollector({ rest, cache: store, clock, log: silentLogger() });
  slices.start();
  gc.start();
  if (o.start !== false) ctl.start();
  t.teardown(() => {
    ctl.stop();
    slices.stop();
    gc.stop();
    ts.close();
  });
  const settle = async () => {
    for (let i = 0; i < 5; i++) {
      await slices.idle();
      await ctl.idle();
      await gc.idle();
    }
  };
  /** A new controller over what is stored (a restart, or a new leader). */
  const restart = () => {
    ctl.stop();
    ctl = make();
    ctl.start();
  };
  return { store, rest, settle, clock, recorded, restart };
}

const svc = (name: string, spec: O = {}, labels: O = {}): KObject => ({ apiVersion: 'v1', kind: 'Service', metadata: { name, labels }, spec: { selector: { app: name }, clusterIP: '10.96.0.10', ports: [{ name: 'http', port: 80, targetPort: 'web' }], ...spec } });
const pod = (name: string, app: string, o: { node?: string; port?: number } = {}): KObject => ({
  apiVersion: 'v1', kind: 'Pod', metadata: { name, labels: { app } },
  spec: { nodeName: o.node ?? 'n1', containers: [{ name: 'c', image: 'none', ports: [{ name: 'web', containerPort: o.port ?? 8080 }] }] },
});

async function runPod(rest: Rest, p: KObject, ip: string, ready = true): Promise<void> {
  const name = String(p.metadata!['name']);
  await rest.create(POD, 'default', p);
  const cur = (await rest.get(POD, 'default', name)).object as KObject;
  await rest.update(POD, 'default', name, { ...structuredClone(cur), status: { phase: 'Running', podIP: ip, conditions: [{ type: 'Ready', status: ready ? 'True' : 'False' }] } }, { sub: 'status' });
}

const endpointsOf = (store: WatchCache, name: string, ns = 'default') => store.get(`endpoints/${ns}/${name}`)?.object as (KObject & { subsets?: EndpointSubset[] }) | undefined;
const ips = (as: { ip: string }[] | undefined) => (as ?? []).map((a) => a.ip);

t.test('a Service with Pods: ready and not-ready addresses with targetRef and nodeName, its ports, its labels, no owner', async (t) => {
  const { rest, store, settle } = await setup(t);
  await rest.create(SVC, 'default', svc('web', {}, { tier: 'front' }));
  await settle();
  t.match(endpointsOf(store, 'web'), { metadata: { name: 'web', labels: { tier: 'front', [ENDPOINTS_MANAGED_BY]: 'endpoint-controller' } } }, 'made before there are Pods');
  t.notOk(endpointsOf(store, 'web')?.subsets, 'with no subsets');
  await runPod(rest, pod('web-1', 'web'), '10.244.1.5');
  await runPod(rest, pod('web-2', 'web', { node: 'n2' }), '10.244.2.5');
  await runPod(rest, pod('web-3', 'web'), '10.244.1.6', false);
  await runPod(rest, pod('other', 'db'), '10.244.1.9');
  await settle();
  const ep = endpointsOf(store, 'web')!;
  t.equal(ep.subsets?.length, 1, 'one port mapping: one subset');
  const [ss] = ep.subsets!;
  t.same(ips(ss!.addresses), ['10.244.1.5', '10.244.2.5']);
  t.same(ips(ss!.notReadyAddresses), ['10.244.1.6']);
  t.match(ss!.addresses![1], { ip: '10.244.2.5', nodeName: 'n2', targetRef: { kind: 'Pod', namespace: 'default', name: 'web-2' } });
  t.ok(String(ss!.addresses![1]!.targetRef?.['uid']), 'the Pod\'s uid');
  t.same(ss!.ports, [{ name: 'http', port: 8080, protocol: 'TCP' }], 'the resolved target port');
  t.notOk(ep.metadata!['ownerReferences'], 'no ownerReference, as upstream');
  t.notOk((ep.metadata!['labels'] as O)['service.kubernetes.io/headless'], 'not headless');

  // A Pod that terminates leaves (the slices keep it as terminating; Endpoints do not).
  await rest.create(R('nodes'), '', { apiVersion: 'v1', kind: 'Node', metadata: { name: 'n1' } });
  await rest.delete(POD, 'default', 'web-1');
  await settle();
  t.same(ips(endpointsOf(store, 'web')!.subsets![0]!.addresses), ['10.244.2.5'], 'terminating: left out');
  // Two port mappings: two subsets.
  await runPod(rest, pod('web-4', 'web', { port: 9090 }), '10.244.1.7');
  await settle();
  t.same(endpointsOf(store, 'web')!.subsets!.map((s) => [ips(s.addresses), s.ports!.map((p) => p.port)]), [[['10.244.1.7'], [9090]], [['10.244.2.5'], [8080]]]);
  t.same(ips(endpointsOf(store, 'web')!.subsets![1]!.notReadyAddresses), ['10.244.1.6']);
});

t.test('the Service\'s labels follow; headless and publishNotReadyAddresses as upstream', async (t) => {
  const { rest, store, settle } = await setup(t);
  await rest.create(SVC, 'default', svc('db', { clusterIP: 'None', publishNotReadyAddresses: true }));
  await runPod(rest, pod('db-0', 'db'), '10.244.1.5', false);
  await runPod(rest, pod('db-1', 'db'), '10.244.1.6');
  await rest.create(R('nodes'), '', { apiVersion: 'v1', kind: 'Node', metadata: { name: 'n1' } });
  await rest.delete(POD, 'default', 'db-1');
  await settle();
  const ep = endpointsOf(store, 'db')!;
  t.match(ep.metadata!['labels'], { 'service.kubernetes.io/headless': '' });
  t.same(ips(ep.subsets![0]!.addresses), ['10.244.1.5', '10.244.1.6'], 'not ready and terminating: both published as ready');
  await rest.patch(SVC, 'default', 'db', 'merge', { metadata: { labels: { team: 'data' } } });
  await settle();
  t.match(endpointsOf(store, 'db')!.metadata!['labels'], { team: 'data', [ENDPOINTS_MANAGED_BY]: 'endpoint-controller' });
});

t.test('put back when edited or deleted; gone with the Service; a user\'s Endpoints of a Service without a selector stays', async (t) => {
  const { rest, store, settle } = await setup(t);
  await rest.create(SVC, 'default', svc('web'));
  await runPod(rest, pod('w', 'web'), '10.244.1.7');
  await settle();
  const ep = endpointsOf(store, 'web')!;
  await rest.update(EP, 'default', 'web', { ...structuredClone(ep), subsets: [{ addresses: [{ ip: '192.0.2.1' }], ports: [{ port: 1 }] }] });
  await settle();
  t.same(ips(endpointsOf(store, 'web')!.subsets![0]!.addresses), ['10.244.1.7'], 'an edit is put back');
  await rest.delete(EP, 'default', 'web');
  await settle();
  t.same(ips(endpointsOf(store, 'web')?.subsets?.[0]?.addresses), ['10.244.1.7'], 'a deletion is put back');

  await rest.create(SVC, 'default', { apiVersion: 'v1', kind: 'Service', metadata: { name: 'ext' }, spec: { ports: [{ port: 80 }] } });
  await rest.create(EP, 'default', { apiVersion: 'v1', kind: 'Endpoints', metadata: { name: 'ext' }, subsets: [{ addresses: [{ ip: '192.0.2.10' }], ports: [{ port: 80 }] }] });
  await settle();
  t.same(ips(endpointsOf(store, 'ext')!.subsets![0]!.addresses), ['192.0.2.10'], 'a Service without a selector: its user\'s Endpoints');

  await rest.delete(SVC, 'default', 'web');
  await settle();
  t.notOk(endpointsOf(store, 'web'), 'gone with the Service');
});

t.test('at start, the Endpoints it wrote for a Service that went meanwhile is deleted; a user\'s without a Service is not', async (t) => {
  const { rest, store, settle, restart } = await setup(t, { start: false });
  await rest.create(EP, 'default', { apiVersion: 'v1', kind: 'Endpoints', metadata: { name: 'gone', labels: { [ENDPOINTS_MANAGED_BY]: 'endpoint-controller' } }, subsets: [{ addresses: [{ ip: '10.244.1.1' }] }] });
  await rest.create(EP, 'default', { apiVersion: 'v1', kind: 'Endpoints', metadata: { name: 'mine' }, subsets: [{ addresses: [{ ip: '10.244.1.2' }] }] });
  restart();
  await settle();
  t.notOk(endpointsOf(store, 'gone'));
  t.ok(endpointsOf(store, 'mine'));
});

t.test('last-change-trigger-time: the slices\' time for a Pod change, the Service\'s creation, cleared by a resync', async (t) => {
  const { rest, store, settle, clock, restart } = await setup(t);
  const trigger = (name: string) => (endpointsOf(store, name)?.metadata!['annotations'] as O | undefined)?.[TRIGGER_TIME_ANNOTATION];
  const sliceTrigger = (name: string) => store.list('endpointslices.discovery.k8s.io', 'default').items.map((s) => s.object).filter((s) => (s.metadata!['labels'] as O)['kubernetes.io/service-name'] === name).map((s) => (s.metadata!['annotations'] as O | undefined)?.[TRIGGER_TIME_ANNOTATION]);
  await clock.advance(1500);
  const created = (await rest.create(SVC, 'default', svc('web'))).object;
  await settle();
  t.equal(trigger('web'), created.metadata!['creationTimestamp'], 'a new Service: its creationTimestamp');
  await clock.advance(10_000);
  const ready = clock.now() - 2000;
  await rest.create(POD, 'default', pod('w1', 'web'));
  const cur = (await rest.get(POD, 'default', 'w1')).object as KObject;
  await rest.update(POD, 'default', 'w1', { ...structuredClone(cur), status: { phase: 'Running', podIP: '10.244.1.5', conditions: [{ type: 'Ready', status: 'True', lastTransitionTime: rfc3339Nano(ready) }] } }, { sub: 'status' });
  await settle();
  t.equal(trigger('web'), rfc3339Nano(ready), 'the Pod\'s Ready transition');
  t.same(sliceTrigger('web'), [trigger('web')], 'the same time its slice carries');
  // A restarted controller: nothing changed since, so nothing is written and the annotation stays ...
  restart();
  await settle();
  t.equal(trigger('web'), rfc3339Nano(ready));
  // ... until a write without a change behind it (an edit put back): cleared, as upstream's resync clears it.
  await rest.patch(EP, 'default', 'web', 'merge', { subsets: null });
  await settle();
  t.equal(endpointsOf(store, 'web')!.subsets?.length, 1, 'put back');
  t.notOk(trigger('web'), 'no trigger time');
});

t.test('the kubernetes Service: the API servers from their EndpointSlice', async (t) => {
  const { rest, store, settle } = await setup(t);
  await rest.create(SVC, 'default', { apiVersion: 'v1', kind: 'Service', metadata: { name: 'kubernetes', labels: { component: 'apiserver', provider: 'kubernetes' } }, spec: { ports: [{ name: 'https', port: 443, targetPort: 6443 }] } });
  await rest.create(EPS, 'default', kubernetesSlice(['192.0.2.1', '192.0.2.2'], 6443));
  await settle();
  t.same(endpointsOf(store, 'kubernetes')!.subsets, [{ addresses: [{ ip: '192.0.2.1' }, { ip: '192.0.2.2' }], ports: [{ name: 'https', port: 6443, protocol: 'TCP' }] }]);
  t.same(endpointsOf(store, 'kubernetes')!.metadata!['labels'], { 'endpointslice.kubernetes.io/skip-mirror': 'true' }, 'kube-apiserver\'s label, not the controller\'s');
  // A server leaves.
  const cur = store.get('endpointslices.discovery.k8s.io/default/kubernetes')!.object;
  await rest.update(EPS, 'default', 'kubernetes', { ...kubernetesSlice(['192.0.2.2'], 6443), metadata: { ...cur.metadata } });
  await settle();
  t.same(ips(endpointsOf(store, 'kubernetes')!.subsets![0]!.addresses), ['192.0.2.2']);
});

t.test('over 1000 addresses: truncated, ready ones first, annotated; the annotation goes when under again', async (t) => {
  const { rest, store, settle } = await setup(t, { maxAddresses: 5 });
  await rest.create(SVC, 'default', svc('big', { ports: [{ port: 80 }] }));
  for (let i = 0; i < 4; i++) await runPod(rest, pod(`r${i}`, 'big'), `10.244.1.${10 + i}`);
  for (let i = 0; i < 3; i++) await runPod(rest, pod(`n${i}`, 'big'), `10.244.2.${10 + i}`, false);
  await settle();
  const ep = endpointsOf(store, 'big')!;
  t.equal((ep.metadata!['annotations'] as O)[OVER_CAPACITY_ANNOTATION], 'truncated');
  t.same(ips(ep.subsets![0]!.addresses), ['10.244.1.10', '10.244.1.11', '10.244.1.12', '10.244.1.13'], 'every ready one');
  t.equal(ep.subsets![0]!.notReadyAddresses?.length, 1, 'and what room is left of the not ready');
  for (let i = 0; i < 3; i++) await rest.delete(POD, 'default', `n${i}`, { gracePeriodSeconds: 0 });
  await settle();
  t.notOk((endpointsOf(store, 'big')!.metadata!['annotations'] as O | undefined)?.[OVER_CAPACITY_ANNOTATION], 'under capacity: no annotation');
});

t.test('truncateSubsets: upstream\'s shares per subset, ready before not ready, at most 1000', async (t) => {
  const addrs = (n: number, net: number) => Array.from({ length: n }, (_, i) => ({ ip: `10.${net}.${Math.floor(i / 250)}.${(i % 250) + 1}` }));
  const a = truncateSubsets([{ addresses: addrs(600, 1), ports: [{ port: 80, protocol: 'TCP' }] }, { addresses: addrs(600, 2), notReadyAddresses: addrs(10, 3), ports: [{ port: 81, protocol: 'TCP' }] }]);
  t.ok(a.truncated);
  t.same(a.subsets.map((s) => [s.addresses?.length, s.notReadyAddresses?.length]), [[500, undefined], [500, undefined]], 'ready over capacity: half each, no not-ready');
  const b = truncateSubsets([{ addresses: addrs(900, 1), notReadyAddresses: addrs(150, 2), ports: [{ port: 80, protocol: 'TCP' }] }, { notReadyAddresses: addrs(50, 3), ports: [{ port: 81, protocol: 'TCP' }] }]);
  t.same(b.subsets.map((s) => [s.addresses?.length ?? 0, s.notReadyAddresses?.length ?? 0]), [[900, 75], [0, 25]], 'the 100 left for not-ready, shared 3:1');
  const c = truncateSubsets([{ addresses: addrs(1000, 1), ports: [{ port: 80, protocol: 'TCP' }] }]);
  t.notOk(c.truncated, '1000 is not over');
});

t.test('subsetsFromSlices: packed as RepackSubsets packs (an address on several ports, not ready trumps ready, headless without ports)', async (t) => {
  const slice = (ports: O[], endpoints: O[], addressType = 'IPv4'): KObject => ({ addressType, ports, endpoints });
  const e = (ip: string, ready = true, uid = ip): O => ({ addresses: [ip], conditions: { ready, serving: ready, terminating: false }, targetRef: { kind: 'Pod', name: uid, uid } });
  const got = subsetsFromSlices([
    slice([{ name: 'a', port: 80, protocol: 'TCP' }], [e('10.0.0.2'), e('10.0.0.1')]),
    slice([{ name: 'b', port: 81, protocol: 'TCP' }], [e('10.0.0.1'), e('10.0.0.2', false)]),
    slice([{ name: 'c', port: 82, protocol: 'UDP' }], [e('10.0.0.1'), e('10.0.0.2')]),
    slice([{ name: 'a', port: 80, protocol: 'TCP' }], [e('2001:db8::1')], 'IPv6'),
  ]);
  t.same(got.map((s) => [ips(s.addresses), ips(s.notReadyAddresses), s.ports!.map((p) => p.name)]), [
    [['10.0.0.1', '10.0.0.2'], [], ['a', 'c']],
    [['10.0.0.1'], ['10.0.0.2'], ['b']],
  ], 'ports a and c share their addresses; b has 10.0.0.2 not ready; the IPv6 slice is of another family');
  const headless = subsetsFromSlices([slice([], [e('10.0.0.3'), e('10.0.0.4', false)])], { servicePorts: false });
  t.same(headless, [{ addresses: [{ ip: '10.0.0.3', targetRef: { kind: 'Pod', name: '10.0.0.3', uid: '10.0.0.3' } }], notReadyAddresses: [{ ip: '10.0.0.4', targetRef: { kind: 'Pod', name: '10.0.0.4', uid: '10.0.0.4' } }] }], 'no ports key');
  t.same(subsetsFromSlices([slice([], [e('10.0.0.3')])]), [], 'a Service with ports: an endpoint that has none of them is left out');
});

t.test('a write that fails: a Warning Event as upstream\'s, and retried', async (t) => {
  let fail = true;
  const { rest, store, settle, clock, recorded } = await setup(t, {
    rest: (r) => {
      const wrapped = Object.create(r) as Rest;
      wrapped.create = async (...a: Parameters<Rest['create']>) => {
        if (fail && a[0] === EP) throw new Error('disk full');
        return r.create(...a);
      };
      return wrapped;
    },
  });
  await rest.create(SVC, 'default', svc('web'));
  await settle();
  t.notOk(endpointsOf(store, 'web'));
  t.match(recorded, [{ type: 'Warning', reason: 'FailedToCreateEndpoint', name: 'web', message: 'Failed to create endpoint for service default/web: disk full' }]);
  fail = false;
  await clock.advance(60_000);
  await settle();
  t.ok(endpointsOf(store, 'web'), 'written on the retry');
});
