import t from 'tap';
import { overlayNode as node } from '../testing/node-networks.js';
import { formatPath, lookupRoute, tracePath } from './path.js';

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
