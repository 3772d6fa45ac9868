import t from 'tap';
import { overlayNode as node, routedNode } from '../testing/node-networks.js';
import { formatPath, lookupRoute, routedBackend, tracePath } from './path.js';

const cluster = [node(1), node(2), node(3)];
const o = { clusterCIDR: '10.244.0.0/16', pods: new Map([['10.244.2.7', 'default/web-abc']]) };

t.test('longest prefix wins; default last', async (t) => {
  t.equal(lookupRoute(cluster[0]!.routes, '10.244.2.7')?.dst, '10.244.2.0/24');
  t.equal(lookupRoute(cluster[0]!.routes, '10.244.1.9')?.dst, '10.244.1.0/24');
  t.equal(lookupRoute(cluster[0]!.routes, '8.8.8.8')?.dst, 'default');
  t.equal(lookupRoute([], '1.2.3.4'), null);
});

t.test('pod to a pod on another node: VXLAN to its node, then its bridge; the source is kept', async (t) => {
  const p = tracePath(cluster, { node: 'n1', source: '10.244.1.5', destination: '10.244.2.7', serviceMasquerade: false }, o);
  t.equal(p.end, 'pod');
  t.same(p.hops.map((h) => [h.node, h.kind]), [['n1', 'overlay'], ['n2', 'pod']]);
  t.same(p.hops[0]!.vtep, { ip: '10.244.2.0', mac: '0e:00:00:00:00:02', underlayIP: '192.168.77.12', remoteNode: 'n2' });
  t.match(p.hops[0]!.text, /route 10\.244\.2\.0\/24 via 10\.244\.2\.0 dev nodenet\.1 onlink; neighbour 10\.244\.2\.0 is 0e:00:00:00:00:02; FDB .* → 192\.168\.77\.12: encapsulated \(VNI 1, UDP 8472\)/);
  t.match(p.hops[1]!.text, /bridged on cbr0 to the pod 10\.244\.2\.7 \(default\/web-abc\)/);
  t.same(p.hops.map((h) => [h.source, h.masquerade.yes]), [['10.244.1.5', false], ['10.244.1.5', false]]);
  t.match(formatPath(p), /1\. n1: route .*\n {5}masquerade: no \(pod to pod inside the cluster network: the source is kept\)\n {2}2\. n2: .*\n.*\nend: delivered to the pod/);
});

t.test('a pod on the same node: the bridge, one hop', async (t) => {
  const p = tracePath(cluster, { node: 'n2', source: '10.244.2.3', destination: '10.244.2.7', serviceMasquerade: false }, o);
  t.same(p.hops.map((h) => h.kind), ['pod']);
});

t.test('kube-proxy masquerade on the first node changes the source the remote pod sees', async (t) => {
  const p = tracePath(cluster, { node: 'n1', source: '192.168.77.50', destination: '10.244.3.4', serviceMasquerade: true }, o);
  t.equal(p.end, 'pod');
  t.equal(p.hops[0]!.source, '10.244.1.0', 'the address of the device it leaves by');
  t.equal(p.hops[1]!.masquerade.yes, false, 'only once');
});

t.test('leaving the cluster network: the overlay masquerades a pod', async (t) => {
  const p = tracePath(cluster, { node: 'n1', source: '10.244.1.5', destination: '203.0.113.9', serviceMasquerade: false }, o);
  t.equal(p.end, 'out');
  t.same(p.hops[0]!.masquerade, { yes: true, why: "a pod's packet leaving the cluster network (the overlay's masquerade rule)" });
  t.equal(p.hops[0]!.source, '192.168.77.11');
  const noCluster = tracePath(cluster, { node: 'n1', source: '10.244.1.5', destination: '203.0.113.9', serviceMasquerade: false }, { clusterCIDR: null });
  t.equal(noCluster.hops[0]!.masquerade.yes, false);
});

t.test('to a node address: delivered locally, on the node itself or across the underlay', async (t) => {
  t.same(tracePath(cluster, { node: 'n1', source: '10.244.1.5', destination: '192.168.77.11', serviceMasquerade: false }, o).hops.map((h) => h.kind), ['local']);
  const p = tracePath(cluster, { node: 'n1', source: '10.244.1.5', destination: '192.168.77.13', serviceMasquerade: false }, o);
  t.same(p.hops.map((h) => [h.node, h.kind]), [['n1', 'out'], ['n3', 'local']], 'the connected underlay route has no gateway: it ends out of eth0');
});

t.test('a missing neighbour or FDB entry is where the packet is lost', async (t) => {
  const noNeigh = tracePath([node(1, { skipNeigh: 2 }), node(2)], { node: 'n1', source: '10.244.1.5', destination: '10.244.2.7', serviceMasquerade: false }, o);
  t.equal(noNeigh.end, 'lost');
  t.match(noNeigh.hops[0]!.text, /no neighbour entry for the VTEP 10\.244\.2\.0 on nodenet\.1/);
  const noFdb = tracePath([node(1, { skipFdb: 2 }), node(2)], { node: 'n1', source: '10.244.1.5', destination: '10.244.2.7', serviceMasquerade: false }, o);
  t.match(noFdb.hops[0]!.text, /no FDB entry for that MAC/);
  const gone = tracePath([node(1)], { node: 'n1', source: '10.244.1.5', destination: '10.244.2.7', serviceMasquerade: false }, o);
  t.equal(gone.end, 'lost');
  t.match(gone.hops[0]!.text, /no node in this cluster has that address/);
  const noRoute = tracePath([{ ...node(1), routes: [] }], { node: 'n1', source: '10.244.1.5', destination: '10.244.9.9', serviceMasquerade: false }, o);
  t.match(noRoute.hops[0]!.text, /no route to 10\.244\.9\.9/);
  t.throws(() => tracePath(cluster, { node: 'n1', source: 'x', destination: '10.244.2.7', serviceMasquerade: false }, o));
});

const start = (node: string, source: string, destination: string, serviceMasquerade = false) => ({ node, source, destination, serviceMasquerade });

t.test('host-gw: the proto-78 route via the peer\'s underlay IP on eth0 to its node, then its bridge; no tunnel, the source kept', async (t) => {
  const hg = [routedNode(1, 'host-gw'), routedNode(2, 'host-gw'), routedNode(3, 'host-gw')];
  const p = tracePath(hg, start('n1', '10.244.1.5', '10.244.2.7'), o);
  t.equal(p.end, 'pod');
  t.same(p.hops.map((h) => [h.node, h.kind]), [['n1', 'routed'], ['n2', 'pod']]);
  t.equal(p.hops[0]!.text, 'route 10.244.2.0/24 via 192.168.77.12 dev eth0: routed via 192.168.77.12 (node n2), host-gw route (proto 78), out of eth0 with no tunnel');
  t.same(p.hops[0]!.routed, { gateway: '192.168.77.12', remoteNode: 'n2', backend: 'host-gw', protocol: '78' });
  t.notOk(p.hops[0]!.vtep, 'no VTEP');
  t.same(p.hops.map((h) => [h.source, h.masquerade.yes]), [['10.244.1.5', false], ['10.244.1.5', false]]);
  t.equal(p.hops[0]!.masquerade.why, 'pod to pod inside the cluster network: the source is kept');
  t.match(formatPath(p), /1\. n1: route 10\.244\.2\.0\/24 via 192\.168\.77\.12 dev eth0: routed via .*\n {5}masquerade: no .*\n {2}2\. n2: route 10\.244\.2\.0\/24 dev cbr0: bridged on cbr0 to the pod 10\.244\.2\.7 \(default\/web-abc\)\n.*\nend: delivered to the pod/);
});

t.test('BGP: the route BIRD learned (proto bird) with its next hop, then the remote bridge', async (t) => {
  const bgp = [routedNode(1, 'bgp'), routedNode(2, 'bgp'), routedNode(3, 'bgp')];
  const p = tracePath(bgp, start('n3', '10.244.3.9', '10.244.1.4'), o);
  t.equal(p.end, 'pod');
  t.same(p.hops.map((h) => [h.node, h.kind]), [['n3', 'routed'], ['n1', 'pod']]);
  t.equal(p.hops[0]!.text, 'route 10.244.1.0/24 via 192.168.77.11 dev eth0: BGP-learned route (proto bird) via 192.168.77.11 (node n1), out of eth0 with no tunnel');
  t.same(p.hops[0]!.routed, { gateway: '192.168.77.11', remoteNode: 'n1', backend: 'bgp', protocol: '12' });
  t.equal(routedBackend({ dst: '10.244.1.0/24', gw: '192.168.77.11', onlink: false, scope: 'universe', protocol: 'bird' }), 'bgp', 'the protocol\'s name too');
  t.equal(routedBackend({ dst: '10.244.1.0/24', gw: '192.168.77.11', onlink: false, scope: 'universe', protocol: 'boot' }), null);
});

t.test('routed: masquerade decisions as with VXLAN (kube-proxy\'s mark once, a pod leaving the cluster)', async (t) => {
  const hg = [routedNode(1, 'host-gw'), routedNode(2, 'host-gw'), routedNode(3, 'host-gw')];
  const svc = tracePath(hg, start('n1', '192.168.77.50', '10.244.3.4', true), o);
  t.same(svc.hops.map((h) => h.kind), ['routed', 'pod']);
  t.same(svc.hops[0]!.masquerade, { yes: true, why: 'the Service rules marked it (kube-proxy masquerade)' });
  t.equal(svc.hops[0]!.source, '192.168.77.11', 'the address on eth0, the device it leaves by (no VTEP address to take)');
  t.equal(svc.hops[1]!.masquerade.yes, false, 'only once');
  t.equal(svc.hops[1]!.source, '192.168.77.11');
  const node = tracePath(hg, start('n1', '192.168.77.11', '10.244.2.7'), o);
  t.same(node.hops[0]!.masquerade, { yes: false, why: 'not from the cluster network' });
  const out = tracePath(hg, start('n1', '10.244.1.5', '203.0.113.9'), o);
  t.same(out.hops.map((h) => h.kind), ['out'], 'the default route is no routed backend\'s: it leaves the cluster');
  t.equal(out.hops[0]!.source, '192.168.77.11');
});

t.test('routed: a missing route, or a gateway no node owns, is where the packet is lost', async (t) => {
  const noRoute = tracePath([routedNode(1, 'bgp', { skipRoute: 2 }), routedNode(2, 'bgp')], start('n1', '10.244.1.5', '10.244.2.7'), o);
  t.same(noRoute.hops.map((h) => h.kind), ['out'], 'BIRD has not learned it: the default route takes it out of the cluster');
  t.match(noRoute.hops[0]!.text, /route default via 192\.168\.77\.1 dev eth0: out of eth0 to the gateway 192\.168\.77\.1/);
  const stale = tracePath([routedNode(1, 'host-gw', { gateway: () => '192.168.77.99' }), routedNode(2, 'host-gw')], start('n1', '10.244.1.5', '10.244.2.7'), o);
  t.equal(stale.end, 'lost');
  t.same(stale.hops.map((h) => h.kind), ['lost']);
  t.match(stale.hops[0]!.text, /routed via 192\.168\.77\.99 \(no node in this cluster has that address\), host-gw route \(proto 78\)/);
  t.same(stale.hops[0]!.routed, { gateway: '192.168.77.99', remoteNode: null, backend: 'host-gw', protocol: '78' });
});

t.test('a plain route to the cluster network via a node\'s address (neither proto 78 nor bird): routed, no backend named', async (t) => {
  const n1 = routedNode(1, 'host-gw');
  const plain = { ...n1, routes: n1.routes.map((r) => (r.protocol === '78' ? { ...r, protocol: 'boot' } : r)) };
  const p = tracePath([plain, routedNode(2, 'host-gw')], start('n1', '10.244.1.5', '10.244.2.7'), o);
  t.same(p.hops.map((h) => [h.node, h.kind]), [['n1', 'routed'], ['n2', 'pod']]);
  t.equal(p.hops[0]!.text, 'route 10.244.2.0/24 via 192.168.77.12 dev eth0: routed via 192.168.77.12 (node n2), out of eth0 with no tunnel');
  t.equal(p.hops[0]!.routed?.backend, null);
});
