import t from 'tap';
import { clusterIP, makeEndpointSlice, makeService, nodeName, podIP, type EndpointSpec } from '../testing/addresses.js';
import { EndpointsChangeTracker, EndpointsMap } from './endpoints-map.js';
import { parseEndpointSlice, type EndpointSliceInfo } from './model/endpoint-slice.js';
import { parseService } from './model/service.js';
import { ServiceChangeTracker, ServicePortMap, type ServicePorts } from './service-map.js';

function ports(raw: unknown): ServicePorts {
  const p = parseService(raw);
  if (p.kind !== 'service') throw new Error('not a service');
  return p.ports;
}
function slice(name: string, service: string, endpoints: EndpointSpec[], protocol: 'TCP' | 'UDP' = 'UDP'): EndpointSliceInfo {
  const p = parseEndpointSlice(makeEndpointSlice({ service, name, ports: [{ name: 'p', port: 53, protocol }], endpoints }));
  if (p.kind !== 'slice') throw new Error('not a slice');
  return p.info;
}

t.test('ServicePortMap: add, update one port, remove a port, delete; changedServices exact', async (t) => {
  const tracker = new ServiceChangeTracker();
  const map = new ServicePortMap();
  const v1 = ports(makeService({ name: 'a', clusterIP: clusterIP(1), ports: [{ name: 'x', port: 80 }, { name: 'u', port: 53, protocol: 'UDP' }] }));
  const b = ports(makeService({ name: 'b', clusterIP: clusterIP(2), ports: [{ port: 80 }] }));
  tracker.update('default/a', null, v1);
  tracker.update('default/b', null, b);
  let r = map.apply(tracker.drain());
  t.same([...r.changedServices].sort(), ['default/a', 'default/b']);
  t.equal(map.size, 3);
  t.same([...map.portsOf('default/a')], ['default/a:x/TCP', 'default/a:u/UDP']);

  const v2 = ports(makeService({ name: 'a', clusterIP: clusterIP(1), ports: [{ name: 'x', port: 8080 }] }));
  tracker.update('default/a', v1, v2);
  r = map.apply(tracker.drain());
  t.same([...r.changedServices], ['default/a']);
  t.same(r.portChanges.map((c) => [c.key, c.prev?.port ?? null, c.cur?.port ?? null]), [
    ['default/a:u/UDP', 53, null],
    ['default/a:x/TCP', 80, 8080],
  ]);
  t.same(r.removedUDPPorts.map((p) => `${p.clusterIP}:${p.port}`), ['10.96.0.1:53']);
  t.equal(map.get('default/a:x/TCP')?.port, 8080);

  tracker.update('default/b', b, null);
  r = map.apply(tracker.drain());
  t.same([...r.changedServices], ['default/b']);
  t.equal(map.get('default/b/TCP'), undefined);
  t.equal(map.size, 1);
});

t.test('ServicePortMap: a change equal to the applied state reports nothing', async (t) => {
  const map = new ServicePortMap();
  const a = ports(makeService({ name: 'a', clusterIP: clusterIP(1), ports: [{ port: 80 }] }));
  map.apply(new Map([['default/a', { prev: null, cur: a }]]));
  const r = map.apply(new Map([['default/a', { prev: null, cur: ports(makeService({ name: 'a', clusterIP: clusterIP(1), ports: [{ port: 80 }] })) }]]));
  t.equal(r.changedServices.size, 0);
  t.equal(r.portChanges.length, 0);
});

t.test('EndpointsChangeTracker: a Service is the union of its slices', async (t) => {
  const ect = new EndpointsChangeTracker('node-1');
  ect.update('default/s-a', null, slice('s-a', 's', [{ ip: podIP(1, 1), nodeName: nodeName(1) }]));
  ect.update('default/s-b', null, slice('s-b', 's', [{ ip: podIP(2, 1), nodeName: nodeName(2) }]));
  const c = ect.drain();
  t.same([...c.keys()], ['default/s']);
  const cur = c.get('default/s')!.cur!;
  t.same(cur.get('default/s:p/UDP')!.map((e) => `${e.ip}/${e.isLocal}`), ['10.244.1.2/true', '10.244.2.2/false']);
  t.equal(c.get('default/s')!.prev, null);
});

t.test('EndpointsChangeTracker: an endpoint moving between slices in one batch is no change', async (t) => {
  const ect = new EndpointsChangeTracker('node-1');
  const a1 = slice('s-a', 's', [{ ip: podIP(1, 1) }, { ip: podIP(1, 2) }]);
  const b1 = slice('s-b', 's', [{ ip: podIP(1, 3) }]);
  ect.update('default/s-a', null, a1);
  ect.update('default/s-b', null, b1);
  ect.drain();
  const a2 = slice('s-a', 's', [{ ip: podIP(1, 1) }]);
  const b2 = slice('s-b', 's', [{ ip: podIP(1, 3) }, { ip: podIP(1, 2) }]);
  ect.update('default/s-a', a1, a2);
  ect.update('default/s-b', b1, b2);
  t.equal(ect.drain().size, 0);
  // Deleting one slice keeps the others' endpoints.
  ect.update('default/s-a', a2, null);
  const c = ect.drain().get('default/s')!;
  t.same(c.cur!.get('default/s:p/UDP')!.map((e) => e.ip), ['10.244.1.3', '10.244.1.4']);
  t.same(c.prev!.get('default/s:p/UDP')!.map((e) => e.ip), ['10.244.1.2', '10.244.1.3', '10.244.1.4']);
});

t.test('EndpointsChangeTracker: add then delete of a slice before a drain cancels', async (t) => {
  const ect = new EndpointsChangeTracker('node-1');
  const a = slice('s-a', 's', [{ ip: podIP(1, 1) }]);
  ect.update('default/s-a', null, a);
  ect.update('default/s-a', a, null);
  t.equal(ect.size, 0);
  t.equal(ect.drain().size, 0);
});

t.test('EndpointsChangeTracker: a slice relabelled to another Service moves its endpoints', async (t) => {
  const ect = new EndpointsChangeTracker('');
  const a = slice('x', 's1', [{ ip: podIP(1, 1) }]);
  ect.update('default/x', null, a);
  ect.drain();
  ect.update('default/x', a, slice('x', 's2', [{ ip: podIP(1, 1) }]));
  const c = ect.drain();
  t.same([...c.keys()].sort(), ['default/s1', 'default/s2']);
  t.equal(c.get('default/s1')!.cur, null);
  t.ok(c.get('default/s2')!.cur);
});

t.test('EndpointsChangeTracker: one slice, then several, then one again, across drains (single-slice Services are held without a Map)', async (t) => {
  const ect = new EndpointsChangeTracker('');
  const ips = (c: ReturnType<EndpointsChangeTracker['drain']>, svc: string) => c.get(svc)?.cur?.get(`${svc}:p/UDP`)?.map((e) => e.ip) ?? null;
  const a = slice('s-a', 's', [{ ip: podIP(1, 1) }]);
  const b = slice('s-b', 's', [{ ip: podIP(1, 2) }]);
  const c = slice('s-c', 's', [{ ip: podIP(1, 3) }]);
  ect.update('default/s-a', null, a);
  t.same(ips(ect.drain(), 'default/s'), ['10.244.1.2'], 'one slice');
  ect.update('default/s-b', null, b);
  t.same(ips(ect.drain(), 'default/s'), ['10.244.1.2', '10.244.1.3'], 'a second slice joins the first');
  ect.update('default/s-c', null, c);
  t.same(ips(ect.drain(), 'default/s'), ['10.244.1.2', '10.244.1.3', '10.244.1.4'], 'a third');
  ect.update('default/s-a', a, null);
  ect.update('default/s-c', c, null);
  t.same(ips(ect.drain(), 'default/s'), ['10.244.1.3'], 'back to one: the remaining slice only');
  const b2 = slice('s-b', 's', [{ ip: podIP(1, 5) }]);
  ect.update('default/s-b', b, b2);
  t.same(ips(ect.drain(), 'default/s'), ['10.244.1.6'], 'the one slice replaced in place');
  // A slice relabelled from another Service joins this one-slice Service, and leaves again.
  const x = slice('x', 'other', [{ ip: podIP(1, 7) }]);
  ect.update('default/x', null, x);
  ect.drain();
  const xs = slice('x', 's', [{ ip: podIP(1, 7) }]);
  ect.update('default/x', x, xs);
  const moved = ect.drain();
  t.same(ips(moved, 'default/s'), ['10.244.1.6', '10.244.1.8'], 'the relabelled slice joined');
  t.equal(moved.get('default/other')!.cur, null, 'and left its old Service empty');
  ect.update('default/s-b', b2, null);
  t.same(ips(ect.drain(), 'default/s'), ['10.244.1.8'], 'the original slice gone: the moved one remains');
  ect.update('default/x', xs, null);
  const last = ect.drain().get('default/s')!;
  t.equal(last.cur, null, 'no slices: no endpoints');
  t.same(last.prev!.get('default/s:p/UDP')!.map((e) => e.ip), ['10.244.1.8']);
});

t.test('EndpointsMap: stale UDP endpoints and Services going from 0 to 1 serving endpoint', async (t) => {
  const ect = new EndpointsChangeTracker('node-1');
  const em = new EndpointsMap();
  // Nothing serving at first: one not-ready endpoint.
  const s0 = slice('u-1', 'u', [{ ip: podIP(1, 1), ready: false }]);
  ect.update('default/u-1', null, s0);
  let r = em.apply(ect.drain());
  t.same([...r.changedServices], ['default/u']);
  t.same(r.staleUDPServices, [], 'no serving endpoint yet');
  t.same(r.staleUDPEndpoints, []);

  const s1 = slice('u-1', 'u', [{ ip: podIP(1, 1) }, { ip: podIP(1, 2) }]);
  ect.update('default/u-1', s0, s1);
  r = em.apply(ect.drain());
  t.same(r.staleUDPServices.map((s) => s.key), ['default/u:p/UDP'], '0 → 2 serving');
  t.same(r.staleUDPEndpoints, [], 'the not-ready endpoint had no traffic');

  const s2 = slice('u-1', 'u', [{ ip: podIP(1, 1), ready: false, serving: true, terminating: true }]);
  ect.update('default/u-1', s1, s2);
  r = em.apply(ect.drain());
  t.same(r.staleUDPEndpoints.map((s) => `${s.key} ${s.endpoint.ip}:${s.endpoint.port}`), ['default/u:p/UDP 10.244.1.3:53'], 'removed; the terminating-but-serving one is not stale');
  t.same(r.staleUDPServices, []);

  const s3 = slice('u-1', 'u', [{ ip: podIP(1, 1), ready: false, serving: false, terminating: true }]);
  ect.update('default/u-1', s2, s3);
  r = em.apply(ect.drain());
  t.same(r.staleUDPEndpoints.map((s) => s.endpoint.ip), ['10.244.1.2'], 'serving → not serving is stale');

  ect.update('default/u-1', s3, null);
  r = em.apply(ect.drain());
  t.same(r.staleUDPEndpoints, [], 'it was no longer serving');
  t.equal(em.size, 0);
  t.same([...r.changedServices], ['default/u']);
});

t.test('EndpointsMap: TCP changes produce no conntrack work', async (t) => {
  const ect = new EndpointsChangeTracker('node-1');
  const em = new EndpointsMap();
  const a = slice('t-1', 't', [{ ip: podIP(1, 1) }], 'TCP');
  ect.update('default/t-1', null, a);
  em.apply(ect.drain());
  ect.update('default/t-1', a, null);
  const r = em.apply(ect.drain());
  t.same(r.staleUDPEndpoints, []);
  t.same(r.staleUDPServices, []);
  t.equal(r.portChanges.length, 1);
});
