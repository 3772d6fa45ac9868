/**
 * The host-gw planner against flannel's host-gw behaviour (pkg/backend/hostgw/hostgw.go and
 * pkg/backend/route_network.go): a route per lease, `Dst: lease.Subnet, Gw: lease.Attrs.PublicIP,
 * LinkIndex: extIface.Index`; a route to the same Dst that differs is replaced (routeAdd); a lease
 * removed, its route deleted (EventRemoved → RouteDel); a route missing from the kernel re-added
 * (checkSubnetExistInRoutes, every 10 s: here every sync re-reads the kernel); and, beyond flannel,
 * a peer behind a gateway is not routed half-way (flannel's ip.DirectRouting test decides).
 */
import t from 'tap';
import { describeDirectOp, directReach, planDirectRoutes, RTPROT_NODENET, type DirectPeer, type RouteView, type RoutesState } from './plan.js';

const ETH0 = { index: 2, name: 'eth0' };
const connected: RouteView = { dst: '192.168.77.0/24', ifIndex: 2, dev: 'eth0', protocol: 'kernel' };
const def: RouteView = { dst: 'default', gw: '192.168.77.1', ifIndex: 2, dev: 'eth0', protocol: 'boot' };
const cbr0: RouteView = { dst: '10.244.1.0/24', ifIndex: 5, dev: 'cbr0', protocol: 'kernel' };
const base = [def, connected, cbr0];

const peer = (n: number, ip = `192.168.77.${10 + n}`): DirectPeer => ({ node: `n${n}`, podCIDR: `10.244.${n}.0/24`, publicIP: ip });
const ours = (p: DirectPeer): RouteView => ({ dst: p.podCIDR, gw: p.publicIP, ifIndex: 2, dev: 'eth0', protocol: String(RTPROT_NODENET) });
const state = (routes: readonly RouteView[]): RoutesState => ({ underlay: ETH0, routes });
const lines = (r: { ops: Parameters<typeof describeDirectOp>[0][] }) => r.ops.map((o) => describeDirectOp(o, 'eth0'));

t.test('a route per peer: its pod CIDR via its public IP on the underlay, marked proto 78; in node order', async (t) => {
  const r = planDirectRoutes([peer(3), peer(2)], state(base));
  t.same(lines(r), [
    'route replace 10.244.2.0/24 via 192.168.77.12 dev eth0 proto 78',
    'route replace 10.244.3.0/24 via 192.168.77.13 dev eth0 proto 78',
  ]);
  t.same(r.ops.map((o) => o.node), ['n2', 'n3'], 'each attributed to its peer');
  t.same(r.notDirect, []);
});

t.test('the kernel already right: nothing (a restarted agent flaps nothing)', async (t) => {
  t.same(planDirectRoutes([peer(2), peer(3)], state([...base, ours(peer(2)), ours(peer(3))])).ops, []);
});

t.test('a route deleted by hand is added again (flannel\'s RouteCheck)', async (t) => {
  t.same(lines(planDirectRoutes([peer(2), peer(3)], state([...base, ours(peer(3))]))), ['route replace 10.244.2.0/24 via 192.168.77.12 dev eth0 proto 78']);
});

t.test('a lease gone: its route deleted, naming our protocol; the others stay', async (t) => {
  t.same(lines(planDirectRoutes([peer(2)], state([...base, ours(peer(2)), ours(peer(3))]))), ['route del 10.244.3.0/24 via 192.168.77.13 proto 78']);
  const all = planDirectRoutes([], state([...base, ours(peer(2)), ours(peer(3))]));
  t.same(all.ops.map((o) => o.op), ['delDirectRoute', 'delDirectRoute']);
});

t.test('only proto-78 routes are ever removed: an admin\'s, the kernel\'s, BIRD\'s and the VXLAN device\'s stay', async (t) => {
  const foreign: RouteView[] = [
    { dst: '10.99.0.0/16', gw: '192.168.77.9', ifIndex: 2, dev: 'eth0', protocol: 'boot' },
    { dst: '10.98.0.0/16', gw: '192.168.77.8', ifIndex: 2, dev: 'eth0', protocol: 'static' },
    { dst: '10.97.0.0/24', gw: '192.168.77.7', ifIndex: 2, dev: 'eth0', protocol: 'bird' },
    { dst: '10.244.9.0/24', gw: '10.244.9.0', ifIndex: 7, dev: 'nodenet.1', protocol: 'boot' },
  ];
  t.same(planDirectRoutes([], state([...base, ...foreign])).ops, []);
});

t.test('a route to a peer\'s CIDR that is not ours or not right is replaced in place (flannel\'s routeAdd)', async (t) => {
  const p = peer(2);
  const cases: [string, RouteView][] = [
    ['a vxlan leftover on nodenet.1', { dst: p.podCIDR, gw: '10.244.2.0', ifIndex: 7, dev: 'nodenet.1', protocol: 'boot' }],
    ['an admin\'s route', { dst: p.podCIDR, gw: p.publicIP, ifIndex: 2, dev: 'eth0', protocol: 'boot' }],
    ['ours, another gateway (a new public IP)', { ...ours(p), gw: '192.168.77.99' }],
    ['ours, another device (the underlay changed)', { ...ours(p), ifIndex: 3, dev: 'eth1' }],
  ];
  for (const [what, r] of cases) t.same(lines(planDirectRoutes([p], state([...base, r]))), ['route replace 10.244.2.0/24 via 192.168.77.12 dev eth0 proto 78'], what);
});

t.test('a peer behind a gateway is not routed half-way: no route, its old one removed, and why', async (t) => {
  const far = peer(4, '10.1.2.3');
  const r = planDirectRoutes([peer(2), far], state(base));
  t.same(lines(r), ['route replace 10.244.2.0/24 via 192.168.77.12 dev eth0 proto 78']);
  t.same(r.notDirect, [{ node: 'n4', publicIP: '10.1.2.3', reason: 'this node reaches 10.1.2.3 through a gateway (the default route via 192.168.77.1): not on its L2 network' }]);
  // It was direct, and its Node moved behind a router: the route goes.
  const moved = planDirectRoutes([far], state([...base, { ...ours(far), gw: '192.168.77.14' }]));
  t.same(lines(moved), ['route del 10.244.4.0/24 via 192.168.77.14 proto 78']);
  t.equal(moved.notDirect.length, 1);
});

t.test('reachability: the longest prefix decides, as the kernel\'s route lookup (flannel\'s ip.DirectRouting)', async (t) => {
  const s = state([...base, { dst: '192.168.77.128/25', gw: '192.168.77.2', ifIndex: 2, dev: 'eth0', protocol: 'static' }, { dst: '172.16.0.0/16', ifIndex: 9, dev: 'eth1', protocol: 'kernel' }]);
  t.same(directReach('192.168.77.12', s), { direct: true }, 'on the underlay\'s connected network');
  t.match(directReach('192.168.77.200', s), { direct: false, reason: /through a gateway \(the route 192\.168\.77\.128\/25 via 192\.168\.77\.2\)/ }, 'a more specific route via a router wins');
  t.match(directReach('172.16.3.4', s), { direct: false, reason: /over eth1 .*not over the underlay eth0/ }, 'connected, but on another interface');
  t.match(directReach('8.8.8.8', state([connected])), { direct: false, reason: 'this node has no route to 8.8.8.8' });
  // nodenet's own routes lead to pods, never to a node: they are not a way to a peer.
  t.match(directReach('10.244.2.7', state([def, connected, ours(peer(2))])), { direct: false, reason: /through a gateway \(the default route/ });
});

t.test('two leases for one pod CIDR: the first by node name wins', async (t) => {
  const a = peer(2);
  const b: DirectPeer = { ...peer(5), podCIDR: a.podCIDR };
  t.same(planDirectRoutes([b, a], state(base)).ops.map((o) => o.node), ['n2']);
});

t.test('keep: a direct route another planner replaces in place is not deleted first', async (t) => {
  const p = peer(2);
  t.same(planDirectRoutes([], state([...base, ours(p)]), new Set([p.podCIDR])).ops, []);
});
