/**
 * The overlay on the host-gw backend, over the validating netlink fake, the nft fake and a fake clock (no root):
 * routes from the Node objects, flannel's annotations (a flannel agent's Node understood), the 10 s repair, a Node
 * gone, a peer behind a gateway reported and not routed, a switch from vxlan, and cleanup.
 */
import t from 'tap';
import { silentLogger } from '../../../../lib/log/log.js';
import { parseCidr } from '../../../../lib/net/ip.js';
import { FakeClock } from '../../../../lib/reconcile/clock.fake.js';
import { FakeEventRecorder } from '../../../../lib/reconcile/event-recorder.fake.js';
import { NftFake } from '../../netfilter/nft/nft.fake.js';
import { FakeNetlinkKernel } from '../../netlink/netlink.fake.js';
import type { NetlinkOps } from '../../netlink/ops.js';
import { BACKENDS, Overlay, REASON_PEER_NOT_DIRECT, removeOverlay } from '../overlay.js';
import { A_BACKEND_DATA, A_BACKEND_TYPE, A_PUBLIC_IP, A_SUBNET_MANAGER, subnetAnnotations } from '../subnet.js';
import { VXLAN } from '../vxlan/backend.js';
import { HOSTGW, HOSTGW_RESYNC_MS } from './backend.js';

const node = (name: string, n: number, annotations: Record<string, string>) => ({ apiVersion: 'v1', kind: 'Node', metadata: { name, annotations }, spec: { podCIDR: `10.244.${n}.0/24` } });
const peer = (name: string, n: number, ip = `192.168.77.${10 + n}`) => node(name, n, subnetAnnotations({ backendType: 'host-gw', backendData: null, publicIP: ip }));

async function nodeNs(kernel: FakeNetlinkKernel): Promise<NetlinkOps> {
  const nl = kernel.open(kernel.createNetns('n1'));
  await nl.createVeth({ name: 'eth0', peerName: 'u', peerNetns: kernel.createNetns('ul'), mtu: 1500 });
  await nl.addAddress('eth0', '192.168.77.11/24');
  await nl.setUp('eth0');
  await nl.addRoute({ dst: 'default', gw: '192.168.77.1' });
  return nl;
}

function hostgw(nl: NetlinkOps, clock: FakeClock, events: FakeEventRecorder, published: Record<string, string>[], backend = HOSTGW): Overlay {
  return new Overlay({
    nodeName: 'n1', podCIDR: parseCidr('10.244.1.0/24').cidr, clusterCIDR: parseCidr('10.244.0.0/16').cidr, backend, netlink: nl, nft: new NftFake(),
    underlayInterface: null, nodeIP: '192.168.77.11', clock, log: silentLogger(), events, publish: async (a) => void published.push(a),
  });
}

/** Routes of nodenet's protocol, as lines. */
const ours = async (nl: NetlinkOps) => (await nl.listRoutes()).filter((r) => r.protocol === '78').map((r) => `${r.dst} via ${r.gw} dev ${r.dev}`).sort();

t.test('host-gw: a route per peer, full MTU, flannel\'s annotations; a route deleted by hand back within 10 s; a Node gone, its route gone', async (t) => {
  const kernel = new FakeNetlinkKernel();
  const nl = await nodeNs(kernel);
  const clock = new FakeClock();
  const published: Record<string, string>[] = [];
  const o = hostgw(nl, clock, new FakeEventRecorder(), published);
  t.teardown(() => o.stop());
  t.ok(BACKENDS.has('host-gw'), 'registered');
  await o.setup();
  t.equal(o.mtu, 1500, 'the underlay\'s MTU: no encapsulation');
  t.equal(await nl.getLink('nodenet.1'), null, 'no device');
  o.handler.add(node('n1', 1, {}));
  o.handler.add(peer('n2', 2));
  // A flannel agent's host-gw Node: backend-data "null" (what flannel writes); one without it is the same lease.
  o.handler.add(node('n3', 3, { [A_BACKEND_TYPE]: 'host-gw', [A_BACKEND_DATA]: 'null', [A_PUBLIC_IP]: '192.168.77.13', [A_SUBNET_MANAGER]: 'true' }));
  o.handler.add(node('n4', 4, { [A_BACKEND_TYPE]: 'host-gw', [A_PUBLIC_IP]: '192.168.77.14' }));
  o.synced();
  await clock.advance(0);
  t.same(published, [{ [A_BACKEND_TYPE]: 'host-gw', [A_BACKEND_DATA]: 'null', [A_PUBLIC_IP]: '192.168.77.11', [A_SUBNET_MANAGER]: 'true' }], 'flannel\'s host-gw annotations');
  t.same(await ours(nl), ['10.244.2.0/24 via 192.168.77.12 dev eth0', '10.244.3.0/24 via 192.168.77.13 dev eth0', '10.244.4.0/24 via 192.168.77.14 dev eth0']);

  await nl.delRoute({ dst: '10.244.3.0/24' });
  await clock.advance(HOSTGW_RESYNC_MS - 1);
  t.equal((await ours(nl)).length, 2, 'not yet: the period is 10 s');
  await clock.advance(1);
  t.same((await ours(nl))[1], '10.244.3.0/24 via 192.168.77.13 dev eth0', 'back at the periodic sync (flannel\'s RouteCheck, 10 s)');

  o.handler.delete(peer('n2', 2));
  await clock.advance(200);
  t.same(await ours(nl), ['10.244.3.0/24 via 192.168.77.13 dev eth0', '10.244.4.0/24 via 192.168.77.14 dev eth0'], 'n2 deleted: its route gone');
});

t.test('a peer behind a gateway: no route, a warning Event on its Node naming it and why, unreachable(); routed again once it is on the L2 network', async (t) => {
  const kernel = new FakeNetlinkKernel();
  const nl = await nodeNs(kernel);
  const clock = new FakeClock();
  const events = new FakeEventRecorder();
  const o = hostgw(nl, clock, events, []);
  t.teardown(() => o.stop());
  await o.setup();
  o.handler.add(peer('n2', 2));
  o.handler.add(peer('n5', 5, '10.1.2.3'));
  o.synced();
  await clock.advance(0);
  t.same(await ours(nl), ['10.244.2.0/24 via 192.168.77.12 dev eth0'], 'n5 not routed half-way');
  t.same(o.unreachable(), [{ node: 'n5', publicIP: '10.1.2.3', reason: 'this node reaches 10.1.2.3 through a gateway (the default route via 192.168.77.1): not on its L2 network' }]);
  t.match(events.events, [{ involved: { kind: 'Node', name: 'n5' }, type: 'Warning', reason: REASON_PEER_NOT_DIRECT, message: /^Node n5 \(public IP 10\.1\.2\.3\) is not on the L2 network of n1, which runs the host-gw overlay backend: this node reaches 10\.1\.2\.3 through a gateway/ }]);
  await clock.advance(HOSTGW_RESYNC_MS);
  t.equal(events.events.length, 1, 'said once, not at every sync');
  // The node gets an address on n5's network: n5 is on its L2 network now.
  await nl.addAddress('eth0', '10.1.2.1/24');
  await clock.advance(HOSTGW_RESYNC_MS);
  t.same(await ours(nl), ['10.244.2.0/24 via 192.168.77.12 dev eth0', '10.244.5.0/24 via 10.1.2.3 dev eth0']);
  t.same(o.unreachable(), []);
});

t.test('a switch: host-gw after vxlan removes the vxlan device; vxlan after host-gw takes its routes over in place and removes the rest', async (t) => {
  const kernel = new FakeNetlinkKernel();
  const nl = await nodeNs(kernel);
  const clock = new FakeClock();
  const v = hostgw(nl, clock, new FakeEventRecorder(), [], VXLAN);
  await v.setup();
  t.ok(await nl.getLink('nodenet.1'), 'vxlan ran');
  await v.stop();
  const h = hostgw(nl, clock, new FakeEventRecorder(), []);
  await h.setup();
  t.equal(await nl.getLink('nodenet.1'), null, 'host-gw\'s start removed the device (and its entries and routes with it)');
  h.handler.add(peer('n2', 2));
  h.handler.add(peer('n3', 3));
  h.synced();
  await clock.advance(0);
  await h.stop();
  t.equal((await ours(nl)).length, 2);
  const back = hostgw(nl, clock, new FakeEventRecorder(), [], VXLAN);
  t.teardown(() => back.stop());
  await back.setup();
  t.equal((await ours(nl)).length, 2, 'vxlan\'s start leaves them to its planner (no flap)');
  // n2 is a vxlan peer now; n3 is gone.
  back.handler.add(node('n2', 2, subnetAnnotations({ backendType: 'vxlan', backendData: { VNI: 1, VtepMAC: '02:00:00:00:00:02' }, publicIP: '192.168.77.12' })));
  back.synced();
  await clock.advance(0);
  t.same(await ours(nl), [], 'no host-gw route left');
  t.same((await nl.listRoutes()).filter((r) => r.dst.startsWith('10.244.')).map((r) => `${r.dst} via ${r.gw} dev ${r.dev}`), ['10.244.2.0/24 via 10.244.2.0 dev nodenet.1'], 'n2 over the tunnel');
});

t.test('cleanup removes host-gw\'s routes (and only those)', async (t) => {
  const kernel = new FakeNetlinkKernel();
  const nl = await nodeNs(kernel);
  await nl.addRoute({ dst: '10.244.2.0/24', gw: '192.168.77.12', dev: 'eth0', protocol: 78 });
  await nl.addRoute({ dst: '10.99.0.0/16', gw: '192.168.77.9', dev: 'eth0' });
  const nft = new NftFake();
  await removeOverlay(nl, nft);
  t.same(await ours(nl), []);
  t.ok((await nl.listRoutes()).some((r) => r.dst === '10.99.0.0/16'), 'an admin\'s route stays');
});
