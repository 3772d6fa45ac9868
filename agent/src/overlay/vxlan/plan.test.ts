import t from 'tap';
import { parseCidr, parseIPv4 } from '../../../../lib/net/ip.js';
import type { Lease } from './lease.js';
import { describeOp, gatewayOf, planOverlay, type DeviceState, type OverlayOp } from './plan.js';

const DEV = { index: 7, name: 'nodenet.1' };
const lease = (node: string, n: number, ip = `192.168.77.${10 + n}`, mac = `02:00:00:00:00:0${n}`): Lease => ({
  node, podCIDR: parseCidr(`10.244.${n}.0/24`).cidr, vtepMac: mac, publicIP: parseIPv4(ip),
});
const empty: DeviceState = { device: DEV, neighs: [], fdb: [], routes: [] };

/** The kernel state after a peer's entries were applied (what a right kernel lists). */
function applied(ls: readonly Lease[], extra: Partial<DeviceState> = {}): DeviceState {
  return {
    device: DEV,
    neighs: [...ls.map((l) => ({ ifIndex: DEV.index, ip: gatewayOf(l.podCIDR), mac: l.vtepMac, permanent: true })), ...(extra.neighs ?? [])],
    fdb: [...ls.map((l) => ({ ifIndex: DEV.index, mac: l.vtepMac, dst: l.publicIP })), ...(extra.fdb ?? [])],
    routes: [...ls.map((l) => ({ dst: l.podCIDR, gw: gatewayOf(l.podCIDR), ifIndex: DEV.index, onlink: true, protocol: 'boot' })), ...(extra.routes ?? [])],
  };
}
const lines = (ops: readonly OverlayOp[]) => ops.map((o) => describeOp(o, DEV.name));

t.test('a new peer: neighbour, FDB entry, then the route, last', async (t) => {
  t.same(lines(planOverlay([lease('n2', 2)], empty)), [
    'neigh replace 10.244.2.0 lladdr 02:00:00:00:00:02 dev nodenet.1 nud permanent',
    'fdb append 02:00:00:00:00:02 dev nodenet.1 dst 192.168.77.12',
    'route replace 10.244.2.0/24 via 10.244.2.0 dev nodenet.1 onlink',
  ]);
});

t.test('several peers: every route comes after every neighbour and FDB entry', async (t) => {
  const ops = planOverlay([lease('n3', 3), lease('n2', 2)], empty);
  t.equal(ops.length, 6);
  const firstRoute = ops.findIndex((o) => o.op === 'addRoute');
  t.ok(ops.slice(0, firstRoute).every((o) => o.op === 'addNeigh' || o.op === 'appendFdb'));
  t.ok(ops.slice(firstRoute).every((o) => o.op === 'addRoute'));
  t.same(ops.filter((o) => o.op === 'addRoute').map((o) => o.node), ['n2', 'n3'], 'in node-name order');
});

t.test('no flap: entries already right plan nothing', async (t) => {
  const ls = [lease('n2', 2), lease('n3', 3)];
  t.same(planOverlay(ls, applied(ls)), []);
});

t.test('a missing entry (deleted by hand) comes back alone', async (t) => {
  const ls = [lease('n2', 2), lease('n3', 3)];
  const cur = applied(ls);
  t.same(lines(planOverlay(ls, { ...cur, fdb: cur.fdb.slice(0, 1) })), ['fdb append 02:00:00:00:00:03 dev nodenet.1 dst 192.168.77.13']);
  t.same(lines(planOverlay(ls, { ...cur, routes: cur.routes.slice(0, 1) })), ['route replace 10.244.3.0/24 via 10.244.3.0 dev nodenet.1 onlink']);
  t.same(lines(planOverlay(ls, { ...cur, neighs: cur.neighs.slice(1) })), ['neigh replace 10.244.2.0 lladdr 02:00:00:00:00:02 dev nodenet.1 nud permanent']);
});

t.test('a peer gone: its route first, then its FDB entry, then its neighbour', async (t) => {
  const before = [lease('n2', 2), lease('n3', 3)];
  t.same(lines(planOverlay([lease('n2', 2)], applied(before))), [
    'route del 10.244.3.0/24 via 10.244.3.0 dev nodenet.1',
    'fdb del 02:00:00:00:00:03 dev nodenet.1 dst 192.168.77.13',
    'neigh del 10.244.3.0 dev nodenet.1',
  ]);
  t.same(lines(planOverlay([], applied(before))).filter((l) => l.startsWith('route')).length, 2);
  const all = planOverlay([], applied(before));
  t.ok(all.findLastIndex((o) => o.op === 'delRoute') < all.findIndex((o) => o.op !== 'delRoute'), 'every route goes before any other entry');
});

t.test('a new public IP: the MAC\'s entry replaced in place, one operation, never without a destination; neighbour and route untouched', async (t) => {
  const ops = planOverlay([lease('n3', 3, '192.168.77.50')], applied([lease('n3', 3)]));
  t.same(lines(ops), ['fdb replace 02:00:00:00:00:03 dev nodenet.1 dst 192.168.77.50']);
  t.same(ops.map((o) => o.node), ['n3'], 'attributed to the peer (a failure skips the rest of its operations)');
  // Both destinations listed (only possible on the all-zero MAC in a kernel): the stale one still goes.
  const both = applied([lease('n3', 3, '192.168.77.50')], { fdb: [{ ifIndex: DEV.index, mac: '02:00:00:00:00:03', dst: '192.168.77.13' }] });
  t.same(lines(planOverlay([lease('n3', 3, '192.168.77.50')], both)), ['fdb del 02:00:00:00:00:03 dev nodenet.1 dst 192.168.77.13']);
});

t.test('a new VTEP MAC: the neighbour replaced in place, the FDB entry for the new MAC added, the old one removed', async (t) => {
  t.same(lines(planOverlay([lease('n3', 3, undefined, '02:00:00:00:00:99')], applied([lease('n3', 3)]))), [
    'neigh replace 10.244.3.0 lladdr 02:00:00:00:00:99 dev nodenet.1 nud permanent',
    'fdb append 02:00:00:00:00:99 dev nodenet.1 dst 192.168.77.13',
    'fdb del 02:00:00:00:00:03 dev nodenet.1 dst 192.168.77.13',
  ]);
});

t.test('a new pod CIDR: the old route goes first, the new entries are written, the old neighbour last', async (t) => {
  const moved: Lease = { ...lease('n3', 3), podCIDR: parseCidr('10.244.9.0/24').cidr };
  t.same(lines(planOverlay([moved], applied([lease('n3', 3)]))), [
    'route del 10.244.3.0/24 via 10.244.3.0 dev nodenet.1',
    'neigh replace 10.244.9.0 lladdr 02:00:00:00:00:03 dev nodenet.1 nud permanent',
    'route replace 10.244.9.0/24 via 10.244.9.0 dev nodenet.1 onlink',
    'neigh del 10.244.3.0 dev nodenet.1',
  ]);
});

t.test('a wrong route (not onlink, another gateway) or a non-permanent neighbour is rewritten', async (t) => {
  const l = lease('n2', 2);
  const cur = applied([l]);
  t.same(lines(planOverlay([l], { ...cur, routes: [{ dst: l.podCIDR, gw: '10.244.2.5', ifIndex: DEV.index, onlink: true, protocol: 'boot' }] })), ['route replace 10.244.2.0/24 via 10.244.2.0 dev nodenet.1 onlink']);
  t.same(lines(planOverlay([l], { ...cur, routes: [{ dst: l.podCIDR, gw: '10.244.2.0', ifIndex: DEV.index, onlink: false, protocol: 'boot' }] })), ['route replace 10.244.2.0/24 via 10.244.2.0 dev nodenet.1 onlink']);
  t.same(lines(planOverlay([l], { ...cur, neighs: [{ ifIndex: DEV.index, ip: '10.244.2.0', mac: l.vtepMac, permanent: false }] })), ['neigh replace 10.244.2.0 lladdr 02:00:00:00:00:02 dev nodenet.1 nud permanent']);
  // A route to the peer's CIDR on another device (a host-gw leftover) is replaced by ours (same destination).
  const other = { dst: l.podCIDR, gw: '192.168.77.12', ifIndex: 2, onlink: false, protocol: 'boot' };
  t.same(lines(planOverlay([l], { ...cur, routes: [other] })), ['route replace 10.244.2.0/24 via 10.244.2.0 dev nodenet.1 onlink']);
});

t.test('foreign entries are left alone: other devices, kernel routes, the kernel\'s own neighbours', async (t) => {
  const l = lease('n2', 2);
  const foreign = applied([l], {
    neighs: [
      { ifIndex: 3, ip: '10.244.1.5', mac: '02:aa:00:00:00:01', permanent: true },
      { ifIndex: DEV.index, ip: '10.244.7.0', permanent: false },
    ],
    fdb: [{ ifIndex: 3, mac: '02:aa:00:00:00:01' }],
    routes: [
      { dst: 'default', gw: '192.168.77.1', ifIndex: 2, onlink: false, protocol: 'boot' },
      { dst: '10.244.1.0/24', ifIndex: 3, onlink: false, protocol: 'kernel' },
      { dst: '10.99.0.0/16', gw: '192.168.77.9', ifIndex: 2, onlink: false, protocol: 'static' },
      { dst: '10.244.1.0/32', ifIndex: DEV.index, onlink: false, protocol: 'kernel' },
    ],
  });
  t.same(planOverlay([l], foreign), []);
});

t.test('on the device, a route or FDB entry no lease explains is removed', async (t) => {
  const l = lease('n2', 2);
  const cur = applied([l], {
    fdb: [{ ifIndex: DEV.index, mac: '00:00:00:00:00:00', dst: '192.168.77.99' }],
    routes: [{ dst: '10.55.0.0/16', ifIndex: DEV.index, onlink: false, protocol: 'boot' }],
  });
  t.same(lines(planOverlay([l], cur)), ['route del 10.55.0.0/16 dev nodenet.1', 'fdb del 00:00:00:00:00:00 dev nodenet.1 dst 192.168.77.99']);
});

t.test('two leases for one pod CIDR: the first by node name wins, the other is left out', async (t) => {
  const a = lease('n2', 2);
  const b: Lease = { ...lease('n5', 5), podCIDR: a.podCIDR };
  const ops = planOverlay([b, a], empty);
  t.same(ops.map((o) => o.node), ['n2', 'n2', 'n2']);
});

// flannel's hybrid, vxlan with DirectRouting (vxlan_network.go: directRoute when ip.DirectRouting(PublicIP), else
// the ARP entry, the FDB entry and the onlink route over the device).
const ETH0 = { index: 2, name: 'eth0' };
const underlayRoutes = [
  { dst: 'default', gw: '192.168.77.1', ifIndex: 2, onlink: false, protocol: 'boot' },
  { dst: '192.168.77.0/24', ifIndex: 2, onlink: false, protocol: 'kernel' },
];
const direct = (l: Lease) => ({ dst: l.podCIDR, gw: l.publicIP, ifIndex: 2, onlink: false, protocol: '78' });
const hybrid = (s: DeviceState): DeviceState => ({ ...s, routes: [...underlayRoutes, ...s.routes], underlay: ETH0, directRouting: true });
const hlines = (ops: readonly OverlayOp[]) => ops.map((o) => describeOp(o, DEV.name, 'eth0'));

t.test('direct routing: a peer on the L2 network gets a plain route and no tunnel entries; one behind a gateway is tunneled', async (t) => {
  const near = lease('n2', 2);
  const far = lease('n4', 4, '10.1.2.3');
  t.same(hlines(planOverlay([far, near], hybrid(empty))), [
    'route replace 10.244.2.0/24 via 192.168.77.12 dev eth0 proto 78',
    'neigh replace 10.244.4.0 lladdr 02:00:00:00:00:04 dev nodenet.1 nud permanent',
    'fdb append 02:00:00:00:00:04 dev nodenet.1 dst 10.1.2.3',
    'route replace 10.244.4.0/24 via 10.244.4.0 dev nodenet.1 onlink',
  ]);
  const right = hybrid(applied([far], { routes: [direct(near)] }));
  t.same(planOverlay([near, far], right), [], 'the kernel right: nothing');
  t.same(planOverlay([near, far], { ...right, directRouting: false }).map((o) => describeOp(o, DEV.name, 'eth0')), [
    'neigh replace 10.244.2.0 lladdr 02:00:00:00:00:02 dev nodenet.1 nud permanent',
    'fdb append 02:00:00:00:00:02 dev nodenet.1 dst 192.168.77.12',
    'route replace 10.244.2.0/24 via 10.244.2.0 dev nodenet.1 onlink',
  ], 'direct routing turned off: the direct route is replaced in place by the tunnel route, never deleted first');
});

t.test('direct routing turned on: the tunnel route replaced in place by the direct one, then the tunnel entries go', async (t) => {
  const near = lease('n2', 2);
  t.same(hlines(planOverlay([near], hybrid(applied([near])))), [
    'route replace 10.244.2.0/24 via 192.168.77.12 dev eth0 proto 78',
    'fdb del 02:00:00:00:00:02 dev nodenet.1 dst 192.168.77.12',
    'neigh del 10.244.2.0 dev nodenet.1',
  ]);
});

t.test('plain vxlan after host-gw: its routes to peers replaced in place, a gone peer\'s deleted; no one else\'s touched', async (t) => {
  const n2 = lease('n2', 2);
  const gone = lease('n3', 3);
  const admin = { dst: '10.99.0.0/16', gw: '192.168.77.9', ifIndex: 2, onlink: false, protocol: 'boot' };
  const cur: DeviceState = { ...empty, routes: [...underlayRoutes, direct(n2), direct(gone), admin], underlay: ETH0 };
  t.same(hlines(planOverlay([n2], cur)), [
    'route del 10.244.3.0/24 via 192.168.77.13 proto 78',
    'neigh replace 10.244.2.0 lladdr 02:00:00:00:00:02 dev nodenet.1 nud permanent',
    'fdb append 02:00:00:00:00:02 dev nodenet.1 dst 192.168.77.12',
    'route replace 10.244.2.0/24 via 10.244.2.0 dev nodenet.1 onlink',
  ]);
});
