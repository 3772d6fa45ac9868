/**
 * The load-balancer controller on a real storage (LocalStorage over the fake persistence) and watch cache, Rest
 * (with the Service allocator) and event recorder: addresses from the pool,
 * the lowest first, a requested one honoured when free, never one twice
 * (across restarts too), freed with the Service or its type, Services of
 * another loadBalancerClass left alone, Events as MetalLB's.
 */
import t, { type Test } from 'tap';
import { asController } from '../testing/as-controller.js';
import { silentLogger } from '../../lib/log/log.js';
import { FakeClock } from '../../lib/reconcile/clock.fake.js';
import { ServiceAllocator } from '../alloc/service-allocator.js';
import { Rest } from '../api/rest.js';
import { RESOURCES } from '../api/resources.js';
import { loadSchemas } from '../api/schema.js';
import { FakePersistence } from '../store/persistence.fake.js';
import { openTestStore } from '../testing/store.js';
import { Claims } from '../alloc/claims.js';
import type { KObject } from '../store/types.js';
import { EventBroadcaster } from './events.js';
import { LOAD_BALANCER_CLASS, LoadBalancerController, parseLoadBalancerPool } from './loadbalancer.js';

type O = Record<string, unknown>;
const schemas = await loadSchemas([...RESOURCES.map((r) => r.model), 'V1Scale', 'V1Status', 'V1DeleteOptions', 'V1ListMeta']);
const R = (name: string) => RESOURCES.find((r) => r.resource === name)!;
const [SVC, NS] = [R('services'), R('namespaces')];

async function setup(t: Test, o: { persistence?: FakePersistence; pool?: string; start?: boolean } = {}) {
  const clock = new FakeClock(Date.UTC(2026, 11, 1));
  const ts = openTestStore({ persistence: o.persistence ?? new FakePersistence(), clock });
  const store = ts.cache;
  const alloc = new ServiceAllocator();
  alloc.start(store);
  await alloc.repair(store, ts.storage);
  const rest = new Rest({ storage: ts.storage, cache: store, schemas, clock, services: alloc });
  if (!store.get('namespaces//default')) await rest.create(NS, '', { apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'default' } });
  const events = new EventBroadcaster({ rest, clock, log: silentLogger() });
  const lb = new LoadBalancerController({ rest: asController(rest, 'service-controller'), cache: store, claims: new Claims(ts.storage, store, 'loadbalancerips.nodenet.io'), clock, log: silentLogger(), events: events.recorder('service-lb-controller'), ...(o.pool !== undefined ? { pool: o.pool } : {}) });
  if (o.start !== false) await lb.start();
  let stopped = false;
  const stop = async () => {
    if (stopped) return;
    stopped = true;
    lb.stop();
    await events.stop();
    alloc.stop();
    ts.close();
  };
  t.teardown(stop);
  const settle = async () => {
    for (let i = 0; i < 4; i++) {
      await lb.idle();
      await events.idle();
    }
  };
  const ingress = async (name: string) => (((await rest.get(SVC, 'default', name)).object['status'] as { loadBalancer?: { ingress?: { ip: string }[] } } | undefined)?.loadBalancer?.ingress ?? []).map((i) => i.ip);
  const eventsOf = (name: string) =>
    store.list('events', 'default').items.map((s) => s.object as O).filter((e) => (e['involvedObject'] as O)['name'] === name).map((e) => ({ type: e['type'], reason: e['reason'], message: e['message'] }));
  return { clock, store, rest, lb, settle, ingress, eventsOf, stop };
}

const lbSvc = (name: string, spec: O = {}): KObject => ({ apiVersion: 'v1', kind: 'Service', metadata: { name }, spec: { type: 'LoadBalancer', selector: { app: name }, ports: [{ name: 'http', port: 80 }], ...spec } });

t.test('parseLoadBalancerPool: CIDRs without their network and broadcast addresses, ranges, lists', async (t) => {
  const ip = (s: string) => s.split('.').reduce((n, x) => n * 256 + Number(x), 0);
  t.same(parseLoadBalancerPool('192.0.2.0/29'), [{ from: ip('192.0.2.1'), to: ip('192.0.2.6') }]);
  t.same(parseLoadBalancerPool('192.0.2.8/31, 192.0.2.20/32'), [{ from: ip('192.0.2.8'), to: ip('192.0.2.9') }, { from: ip('192.0.2.20'), to: ip('192.0.2.20') }]);
  t.same(parseLoadBalancerPool('10.0.0.250-10.0.1.5'), [{ from: ip('10.0.0.250'), to: ip('10.0.1.5') }]);
  t.throws(() => parseLoadBalancerPool('192.0.2.1/24'), /host bits set \(did you mean 192\.0\.2\.0\/24\?\)/);
  t.throws(() => parseLoadBalancerPool('10.0.0.9-10.0.0.1'), /not an address range/);
  t.throws(() => parseLoadBalancerPool('192.0.2.0/24,192.0.2.100-192.0.2.110'), /overlaps/);
  for (const bad of ['nope', 'fd00::/64', '10.0.0.1-', ',']) t.throws(() => parseLoadBalancerPool(bad), TypeError, bad);
});

t.test('addresses from the pool, lowest first; an exhausted pool is a Warning and the Service waits for a freed address', async (t) => {
  const { rest, lb, settle, ingress, eventsOf } = await setup(t, { pool: '192.0.2.10-192.0.2.11' });
  for (const n of ['a', 'b', 'c']) {
    await rest.create(SVC, 'default', lbSvc(n));
    await settle();
  }
  t.same(await Promise.all(['a', 'b', 'c'].map(ingress)), [['192.0.2.10'], ['192.0.2.11'], []]);
  t.equal(lb.free, 0);
  t.same(eventsOf('a'), [{ type: 'Normal', reason: 'IPAllocated', message: 'Assigned IP ["192.0.2.10"]' }]);
  t.same(eventsOf('c'), [{ type: 'Warning', reason: 'AllocationFailed', message: 'Failed to allocate IP for "default/c": no available IPs in the pool 192.0.2.10-192.0.2.11' }]);
  await rest.patch(SVC, 'default', 'c', 'merge', { metadata: { labels: { touched: 'yes' } } });
  await settle();
  t.equal(eventsOf('c').length, 1, 'not told again on every change');
  t.same(await ingress('a'), ['192.0.2.10'], 'a change of a Service keeps its address');
  await rest.delete(SVC, 'default', 'a');
  await settle();
  t.same(await ingress('c'), ['192.0.2.10'], 'the deleted Service\'s address went to the waiting one');
  t.match(eventsOf('c')[1], { reason: 'IPAllocated', message: 'Assigned IP ["192.0.2.10"]' });
  t.not((await ingress('b'))[0], (await ingress('c'))[0]);
});

t.test('spec.loadBalancerIP: given when in the pool and free; taken or outside: none, and a Warning', async (t) => {
  const { rest, settle, ingress, eventsOf } = await setup(t, { pool: '192.0.2.0/28' });
  await rest.create(SVC, 'default', lbSvc('want', { loadBalancerIP: '192.0.2.7' }));
  await rest.create(SVC, 'default', lbSvc('any'));
  await settle();
  t.same(await ingress('want'), ['192.0.2.7']);
  t.same(await ingress('any'), ['192.0.2.1'], 'the lowest free');
  await rest.create(SVC, 'default', lbSvc('dup', { loadBalancerIP: '192.0.2.7' }));
  await rest.create(SVC, 'default', lbSvc('far', { loadBalancerIP: '198.51.100.1' }));
  await settle();
  t.same(await ingress('dup'), []);
  t.same(eventsOf('dup'), [{ type: 'Warning', reason: 'AllocationFailed', message: 'Failed to allocate IP for "default/dup": 192.0.2.7 is already in use by default/want' }]);
  t.same(await ingress('far'), []);
  t.match(eventsOf('far'), [{ reason: 'AllocationFailed', message: 'Failed to allocate IP for "default/far": "198.51.100.1" is not allowed in config: the pool is 192.0.2.1-192.0.2.14' }]);
  // Moving a Service to another requested address frees its first.
  await rest.patch(SVC, 'default', 'want', 'merge', { spec: { loadBalancerIP: '192.0.2.9' } });
  await settle();
  t.same(await ingress('want'), ['192.0.2.9']);
  t.same(await ingress('dup'), ['192.0.2.7'], 'the one waiting for .7 got it once it was free');
  // Asking for a taken one drops the address a Service had.
  await rest.patch(SVC, 'default', 'any', 'merge', { spec: { loadBalancerIP: '192.0.2.9' } });
  await settle();
  t.same(await ingress('any'), [], 'no ingress while what it asks for is taken');
});

t.test('released when the Service stops being a LoadBalancer; other loadBalancerClasses are left alone', async (t) => {
  const { rest, settle, ingress, eventsOf, lb } = await setup(t, { pool: '192.0.2.10/32' });
  await rest.create(SVC, 'default', lbSvc('a'));
  await settle();
  t.same(await ingress('a'), ['192.0.2.10']);
  await rest.create(SVC, 'default', lbSvc('other', { loadBalancerClass: 'example.com/cloud' }));
  await rest.create(SVC, 'default', lbSvc('ours', { loadBalancerClass: LOAD_BALANCER_CLASS }));
  await settle();
  t.same(await ingress('other'), [], 'another implementation\'s');
  t.same(eventsOf('other'), [], 'not even an Event');
  t.same(await ingress('ours'), [], 'ours, waiting');
  const cur = (await rest.get(SVC, 'default', 'other')).object as KObject;
  await rest.update(SVC, 'default', 'other', { ...structuredClone(cur), status: { loadBalancer: { ingress: [{ ip: '203.0.113.9' }] } } }, { sub: 'status' });
  await settle();
  t.same(await ingress('other'), ['203.0.113.9'], 'its status is its implementation\'s');
  const back = await rest.patch(SVC, 'default', 'a', 'merge', { spec: { type: 'ClusterIP' } });
  await settle();
  t.same((back.object['status'] as O)['loadBalancer'], {}, 'the load-balancer status goes with the type');
  t.same(await ingress('ours'), ['192.0.2.10'], 'and the address to the next');
  t.equal(lb.free, 0);
});

t.test('restarts: the table is rebuilt from the Services\' statuses, so no address is given twice', async (t) => {
  const persistence = new FakePersistence();
  const first = await setup(t, { persistence, pool: '192.0.2.1-192.0.2.3' });
  await first.rest.create(SVC, 'default', lbSvc('a'));
  await first.rest.create(SVC, 'default', lbSvc('b'));
  await first.settle();
  t.same([await first.ingress('a'), await first.ingress('b')], [['192.0.2.1'], ['192.0.2.2']]);
  await first.stop();
  // While no controller ran: a deletion, a new Service, and one whose status claims a's address.
  const second = await setup(t, { persistence, pool: '192.0.2.1-192.0.2.3', start: false });
  await second.rest.delete(SVC, 'default', 'b');
  second.clock.advance(2000);
  await second.rest.create(SVC, 'default', lbSvc('c'));
  second.clock.advance(2000);
  const d = (await second.rest.create(SVC, 'default', lbSvc('d'))).object;
  await second.rest.update(SVC, 'default', 'd', { ...structuredClone(d), status: { loadBalancer: { ingress: [{ ip: '192.0.2.1' }] } } }, { sub: 'status' });
  await second.lb.start();
  await second.settle();
  const got = await Promise.all(['a', 'c', 'd'].map(async (n) => (await second.ingress(n))[0]));
  t.equal(got[0], '192.0.2.1', 'the oldest keeps its address');
  t.equal(new Set(got).size, 3, `distinct: ${got.join(', ')}`);
  t.ok(got.includes('192.0.2.2'), 'b\'s address, free since its deletion, was given again');
});

t.test('no pool: LoadBalancer Services stay pending, and an Event says so', async (t) => {
  const { rest, settle, ingress, eventsOf } = await setup(t);
  await rest.create(SVC, 'default', lbSvc('a'));
  await rest.create(SVC, 'default', { apiVersion: 'v1', kind: 'Service', metadata: { name: 'plain' }, spec: { ports: [{ port: 80 }] } });
  await settle();
  t.same(await ingress('a'), []);
  t.same(eventsOf('a'), [{ type: 'Warning', reason: 'AllocationFailed', message: 'Failed to allocate IP for "default/a": no load-balancer IP pool is configured (nodenet control-plane --load-balancer-ip-pool): the Service stays pending' }]);
  t.same(eventsOf('plain'), [], 'nothing about other Services');
});

import { MemoryStorage } from '../store/memory-storage.js';
import { WatchCache } from '../store/watch-cache.js';

t.test('two controllers at once on one backend (a leader change that overlaps) never give two Services one address', async (t) => {
  const storage = new MemoryStorage();
  const make = async () => {
    const clock = new FakeClock(Date.UTC(2026, 11, 1));
    const cache = new WatchCache({ storage, clock });
    await cache.start();
    const alloc = new ServiceAllocator();
    alloc.start(cache);
    await alloc.repair(cache, storage);
    const rest = new Rest({ storage, cache, schemas, clock, services: alloc });
    const lb = new LoadBalancerController({ rest, cache, claims: new Claims(storage, cache, 'loadbalancerips.nodenet.io'), clock, log: silentLogger(), pool: '192.0.2.10-192.0.2.12' });
    t.teardown(() => {
      lb.stop();
      alloc.stop();
      cache.close();
    });
    return { cache, rest, lb };
  };
  const one = await make();
  const two = await make();
  await one.rest.create(NS, '', { apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'default' } });
  await Promise.all([one.lb.start(), two.lb.start()]);
  for (const n of ['a', 'b', 'c']) await one.rest.create(SVC, 'default', lbSvc(n));
  for (let i = 0; i < 20; i++) {
    await Promise.all([one.cache.fresh(), two.cache.fresh()]);
    await Promise.all([one.lb.idle(), two.lb.idle()]);
  }
  const ips = await Promise.all(['a', 'b', 'c'].map(async (n) => ((await one.rest.get(SVC, 'default', n)).object['status'] as { loadBalancer?: { ingress?: { ip: string }[] } }).loadBalancer?.ingress?.[0]?.ip));
  t.equal(ips.filter(Boolean).length, 3, `each has one: ${ips.join(' ')}`);
  t.equal(new Set(ips).size, 3, 'all different');
  t.same([...new Claims(storage, one.cache, 'loadbalancerips.nodenet.io').all()].sort(), ['a', 'b', 'c'].map((n, i) => [ips[i]!, `services/default/${n}`]).sort(), 'one claim per address, naming its Service');
});
