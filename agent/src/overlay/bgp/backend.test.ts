/**
 * The bgp backend's cleanup on the fake kernel: only proto bird routes inside the cluster CIDR (the blocks
 * nodenet's BIRD imports) are removed; a user's own BIRD routes elsewhere, and other protocols' routes in the
 * cluster CIDR, stay; without a cluster CIDR the registry entry removes nothing.
 */
import t from 'tap';
import { parseCidr } from '../../../../lib/net/ip.js';
import { FakeNetlinkKernel } from '../../netlink/netlink.fake.js';
import type { NetlinkOps } from '../../netlink/ops.js';
import { BGP, isClusterBirdRoute, removeBirdRoutes, RTPROT_BIRD } from './backend.js';

const CLUSTER = parseCidr('10.244.0.0/16').cidr;

async function node(): Promise<NetlinkOps> {
  const kernel = new FakeNetlinkKernel();
  const nl = kernel.open(kernel.createNetns('n1'));
  await nl.createVeth({ name: 'eth0', peerName: 'u', peerNetns: kernel.createNetns('ul'), mtu: 1500 });
  await nl.addAddress('eth0', '192.168.77.11/24');
  await nl.setUp('eth0');
  for (const dst of ['10.244.2.0/24', '10.244.3.0/24', '198.51.100.0/24', '10.245.0.0/24', '10.0.0.0/8']) await nl.addRoute({ dst, gw: '192.168.77.12', protocol: RTPROT_BIRD });
  await nl.addRoute({ dst: '10.244.9.0/24', gw: '192.168.77.12', protocol: 78 });
  return nl;
}

const left = async (nl: NetlinkOps) => (await nl.listRoutes()).filter((r) => r.protocol !== 'kernel').map((r) => `${r.dst} ${r.protocol}`).sort();

t.test('isClusterBirdRoute: proto bird, a block inside the cluster CIDR', async (t) => {
  t.ok(isClusterBirdRoute({ dst: '10.244.2.0/24', protocol: '12' }, CLUSTER));
  t.ok(isClusterBirdRoute({ dst: '10.244.2.0/24', protocol: 'bird' }, CLUSTER));
  t.notOk(isClusterBirdRoute({ dst: '10.244.2.0/24', protocol: '78' }, CLUSTER), 'another protocol');
  t.notOk(isClusterBirdRoute({ dst: '198.51.100.0/24', protocol: '12' }, CLUSTER), 'outside');
  t.notOk(isClusterBirdRoute({ dst: '10.0.0.0/8', protocol: '12' }, CLUSTER), 'wider than the cluster CIDR, though it holds it');
  t.notOk(isClusterBirdRoute({ dst: 'default', protocol: '12' }, CLUSTER), 'a default route');
});

t.test('removeBirdRoutes: the cluster CIDR\'s proto bird routes only', async (t) => {
  const nl = await node();
  t.equal(await removeBirdRoutes(nl, CLUSTER), 2);
  t.same(await left(nl), ['10.0.0.0/8 12', '10.244.9.0/24 78', '10.245.0.0/24 12', '198.51.100.0/24 12'], 'a user\'s BIRD routes and other protocols stay');
});

t.test('the registry entry: the cluster CIDR\'s proto bird routes with one, nothing without', async (t) => {
  const nl = await node();
  const before = await left(nl);
  await BGP.remove(nl);
  t.same(await left(nl), before, 'no cluster CIDR: nothing is nodenet\'s for sure');
  await BGP.remove(nl, { clusterCIDR: CLUSTER });
  t.same(await left(nl), ['10.0.0.0/8 12', '10.244.9.0/24 78', '10.245.0.0/24 12', '198.51.100.0/24 12']);
});
