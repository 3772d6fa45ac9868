import t from 'tap';
import { NetnsNotFoundError } from '../../../lib/errors/errors.js';
import { FakeNetlinkKernel } from './netlink.fake.js';
import { netlinkContract } from './netlink.contract.js';
import { NetlinkError } from './netlink-error.js';

netlinkContract(t, async (t) => {
  const kernel = new FakeNetlinkKernel();
  const nodeNs = kernel.createNetns('node');
  const podNetns = kernel.createNetns('pod');
  const node = kernel.open(nodeNs);
  const pod = kernel.open(podNetns);
  t.teardown(() => { node.close(); pod.close(); });
  return { node, pod, podNetns };
});

t.test('fake-only: namespaces, peers across namespace deletion, journal', async (t) => {
  const k = new FakeNetlinkKernel();
  const node = k.open();
  const podNs = k.createNetns('p1');
  t.equal(k.netnsPath('/fake/netns/p1'), podNs);
  t.throws(() => k.netnsPath('/fake/netns/nope'), NetnsNotFoundError);
  await t.rejects(node.createVeth({ name: 'veth1', peerName: 'eth0', peerNetns: '/fake/netns/nope' as typeof podNs }), NetnsNotFoundError);
  t.equal(await node.getLink('veth1'), null, 'nothing created for a missing peer namespace');

  await node.createVeth({ name: 'veth1', peerName: 'eth0', peerNetns: podNs });
  const pod = k.open(podNs);
  t.ok(await pod.getLink('eth0'));
  k.deleteNetns(podNs);
  t.equal(await node.getLink('veth1'), null, 'destroying the pod namespace removes the host side');
  await t.rejects(pod.listLinks(), NetlinkError, 'a handle on a destroyed namespace fails');

  await node.ensureBridge('cbr0');
  t.same(k.journal, [
    '(init) link add veth1 type veth peer eth0 netns /fake/netns/p1',
    '(init) link add cbr0 type bridge',
  ]);
});

t.test('fake-only: names and inputs the kernel refuses', async (t) => {
  const k = new FakeNetlinkKernel();
  const node = k.open();
  await t.rejects(node.ensureBridge('a-name-longer-than-15'), NetlinkError);
  await t.rejects(node.createVeth({ name: 'bad/name', peerName: 'x' }), NetlinkError);
  await t.rejects(node.createVeth({ name: 'same', peerName: 'same' }), /exists/);
  await node.ensureBridge('cbr0');
  await t.rejects(node.addAddress('cbr0', '10.0.0.1'), TypeError);
  await t.rejects(node.addRoute({ dst: '10.0.0.0/8' }), NetlinkError, 'a route needs a gw or a dev');
  await t.rejects(node.addRoute({ dst: '10.0.0.0/8', gw: '10.1.1.1', onlink: true }), TypeError, 'onlink needs dev');
  await t.rejects(node.deleteLink('lo'), NetlinkError);
  await node.setUp('cbr0');
  await node.addAddress('cbr0', '10.1.0.1/32');
  await t.rejects(node.addRoute({ dst: 'default', gw: '10.1.0.2' }), NetlinkError, 'a /32 gives no connected route');
  await node.addRoute({ dst: '10.1.0.0/24', dev: 'cbr0' });
  await node.addRoute({ dst: 'default', gw: '10.1.0.2' });
  t.match((await node.listRoutes()).find((r) => r.dst === 'default'), { gw: '10.1.0.2', dev: 'cbr0' }, 'gw reachable through a device route');
});
