import t from 'tap';
import { bareUnderlayIP, barePodIP, bareSubnet, bareVtepIP, bareVtepMac, CONNTRACK_NFT, hostScript, peerFdb, peerScript, podScript, routedHostScript, routedPeerScript, routedPodScript, type BareHost } from './bare.js';

const h1: BareHost = { index: 1, hostNs: 'nn-bo1-h1', podNs: 'nn-bo1-hp1' };
const h2: BareHost = { index: 2, hostNs: 'nn-bo1-h2', podNs: 'nn-bo1-hp2' };

t.test('addresses: hosts after the lab\'s clients, pod subnets outside the cluster and Service CIDRs', async (t) => {
  t.same([bareUnderlayIP(1), bareSubnet(1), bareVtepIP(1), barePodIP(1), bareVtepMac(1)], ['192.168.77.221', '10.250.1.0/24', '10.250.1.0', '10.250.1.2', '0e:6e:6e:00:00:01']);
  t.equal(bareUnderlayIP(4), '192.168.77.224');
  t.throws(() => bareSubnet(0), RangeError);
  t.throws(() => bareVtepMac(10), /1\.\.9/, 'a MAC digit per host');
});

t.test('a host: flannel\'s VXLAN device (VNI 1, port 8472, no learning) with the underlay MTU − 50, the bridge, the pod\'s veth', async (t) => {
  t.equal(hostScript(h1, 1500), [
    'link add vx0 address 0e:6e:6e:00:00:01 type vxlan id 1 dstport 8472 local 192.168.77.221 dev eth0 nolearning',
    'link set vx0 mtu 1450',
    'addr add 10.250.1.0/32 dev vx0',
    'link set vx0 up',
    'link add br0 type bridge',
    'link set br0 mtu 1450',
    'addr add 10.250.1.1/24 dev br0',
    'link set br0 up',
    'link add vp1 mtu 1450 type veth peer name eth0 netns nn-bo1-hp1',
    'link set vp1 master br0',
    'link set vp1 up',
    '',
  ].join('\n'));
  t.match(hostScript(h2, 9000), /link set vx0 mtu 8950\n/, 'the MTU follows the underlay\'s');
});

t.test('a pod: the same MTU, its address, the default route through the bridge', async (t) => {
  t.equal(podScript(h2, 1500), 'link set eth0 mtu 1450\naddr add 10.250.2.2/24 dev eth0\nlink set eth0 up\nroute add default via 10.250.2.1\n');
});

t.test('a peer: neighbour before the onlink route (the kernel never ARPs for the gateway), FDB to its underlay address', async (t) => {
  t.equal(peerScript(h2), 'neigh add 10.250.2.0 lladdr 0e:6e:6e:00:00:02 dev vx0 nud permanent\nroute add 10.250.2.0/24 via 10.250.2.0 dev vx0 onlink\n');
  t.same(peerFdb(h2), ['fdb', 'append', '0e:6e:6e:00:00:02', 'dev', 'vx0', 'dst', '192.168.77.222']);
});

t.test('conntrack on: flannel\'s masquerade for pods leaving the cluster network, which never matches pod to pod; nothing dropped', async (t) => {
  t.match(CONNTRACK_NFT, /type nat hook postrouting priority srcnat; policy accept;\n\s+ip saddr 10\.250\.0\.0\/16 ip daddr != 10\.250\.0\.0\/16 masquerade\n/);
  t.notMatch(CONNTRACK_NFT, /drop|reject|dnat|hook prerouting|hook forward/, 'no rule on every packet');
});

t.test('the routed path by hand (cases g, h): a bridge and a route via the peer, the underlay MTU, no tunnel', async (t) => {
  const h = { index: 5, hostNs: 'nn-bo-h5', podNs: 'nn-bo-hp5' };
  const host = routedHostScript(h, 1500);
  t.match(host, /link set br0 mtu 1500/);
  t.match(host, /link add vp5 mtu 1500 type veth peer name eth0 netns nn-bo-hp5/);
  t.notMatch(host, /vxlan/, 'no tunnel device');
  t.match(routedPodScript(h, 1500), /link set eth0 mtu 1500\naddr add 10\.250\.5\.2\/24 dev eth0/);
  t.equal(routedPeerScript({ index: 6, hostNs: 'a', podNs: 'b' }), 'route add 10.250.6.0/24 via 192.168.77.226 dev eth0\n');
});
