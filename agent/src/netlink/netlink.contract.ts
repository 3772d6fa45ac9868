/**
 * netlink.contract: behaviour every NetlinkOps must show, run against the
 * real kernel (netlink.priv.test.ts) and against the fake (netlink.fake.test.ts).
 * This is what keeps the fake honest: each rejection the fake makes is one
 * the kernel was seen to make here, with the same error class and errno.
 *
 * Test-support code: imported by tests only.
 */
import type tap from 'tap';
import { ErrorCode, LinkNotFoundError, NodenetError } from '../../../lib/errors/errors.js';
import type { NetnsPath } from '../netns/netns.js';
import { NetlinkError } from './netlink-error.js';
import type { NetlinkOps } from './ops.js';

type Tap = Parameters<Parameters<typeof tap.test>[0]>[0];

export interface ContractEnv {
  /** Bound to a fresh "node" namespace (only lo). */
  node: NetlinkOps;
  /** Bound to a fresh "pod" namespace (only lo). */
  pod: NetlinkOps;
  podNetns: NetnsPath;
}

function isNetlinkErrno(errno: string) {
  return (e: unknown): boolean => e instanceof NetlinkError && e.errno === errno;
}

async function rejectsWith(t: Tap, p: Promise<unknown>, check: (e: unknown) => boolean, msg: string): Promise<void> {
  try {
    await p;
    t.fail(`${msg}: resolved`);
  } catch (e) {
    t.ok(check(e), `${msg} (got ${e instanceof Error ? `${e.name}: ${e.message}` : String(e)})`);
  }
}

const isLinkExists = (e: unknown): boolean => e instanceof NodenetError && e.code === ErrorCode.LinkExists;
const isLinkNotFound = (e: unknown): boolean => e instanceof LinkNotFoundError;

export function netlinkContract(t: Tap, makeEnv: (t: Tap) => Promise<ContractEnv>): void {
  t.test('bridge: idempotent, up, mtu; a non-bridge name is LinkExists', async (t) => {
    const { node } = await makeEnv(t);
    const br = await node.ensureBridge('cbr0', { mtu: 1450 });
    t.equal(br.kind, 'bridge');
    t.equal(br.up, true);
    t.equal(br.mtu, 1450);
    const again = await node.ensureBridge('cbr0', { mtu: 1450 });
    t.equal(again.index, br.index, 'same bridge');
    t.equal((await node.listLinks()).filter((l) => l.name === 'cbr0').length, 1);
    await node.createVeth({ name: 'vx-not-br', peerName: 'vx-peer' });
    await rejectsWith(t, node.ensureBridge('vx-not-br'), isLinkExists, 'ensureBridge over a veth');
    t.equal(await node.getLink('nope0'), null);
    t.same(await node.getLinkByIndex(br.index), await node.getLink('cbr0'));
  });

  t.test('veth: peer born in the pod namespace under its final name; clashes create nothing', async (t) => {
    const { node, pod, podNetns } = await makeEnv(t);
    await node.createVeth({ name: 'veth-a', peerName: 'eth0', peerNetns: podNetns, mtu: 1400 });
    const host = (await node.getLink('veth-a'))!;
    t.equal(host.kind, 'veth');
    t.equal(host.mtu, 1400);
    t.equal(host.up, false);
    t.equal(await node.getLink('eth0'), null, 'the peer is not in the node namespace');
    const eth0 = await pod.getLink('eth0');
    t.ok(eth0, 'eth0 exists in the pod');
    t.equal(eth0?.mtu, 1400);
    t.match(eth0?.mac, /^[0-9a-f]{2}(:[0-9a-f]{2}){5}$/);

    await rejectsWith(t, node.createVeth({ name: 'veth-b', peerName: 'eth0', peerNetns: podNetns }), isLinkExists, 'peer name taken in the pod');
    t.equal(await node.getLink('veth-b'), null, 'host side of the failed pair was not left behind');
    await rejectsWith(t, node.createVeth({ name: 'veth-a', peerName: 'eth1', peerNetns: podNetns }), isLinkExists, 'host name taken');
    t.equal(await pod.getLink('eth1'), null);

    await node.deleteLink('veth-a');
    t.equal(await pod.getLink('eth0'), null, 'deleting the host side removes the peer');
    await rejectsWith(t, node.deleteLink('veth-a'), isLinkNotFound, 'deleteLink of a missing link');
    await rejectsWith(t, node.setUp('veth-a'), isLinkNotFound, 'setUp of a missing link');
  });

  t.test('veth in one request: master, the host end up, both MACs', async (t) => {
    const { node, pod, podNetns } = await makeEnv(t);
    const br = await node.ensureBridge('cbr0', { mac: '02:aa:00:00:00:01' });
    await node.createVeth({ name: 'veth-1r', peerName: 'eth0', peerNetns: podNetns, master: 'cbr0', up: true, mac: '02:aa:00:00:00:02', peerMac: '02:aa:00:00:00:03' });
    const host = (await node.getLink('veth-1r'))!;
    t.match(host, { master: br.index, up: true, mac: '02:aa:00:00:00:02' });
    t.match(await pod.getLink('eth0'), { up: false, mac: '02:aa:00:00:00:03' });
    await pod.setUp('eth0');
    t.equal((await pod.getLink('eth0'))?.up, true, 'up by name');
    t.equal((await node.getLink('cbr0'))!.mac, '02:aa:00:00:00:01', 'a bridge whose MAC was set keeps it when ports come');
    await rejectsWith(t, node.createVeth({ name: 'veth-1s', peerName: 'eth1', peerNetns: podNetns, master: 'nobr0' }), isLinkNotFound, 'a missing master');
    t.equal(await pod.getLink('eth1'), null, 'nothing created');
    await node.setHairpin('veth-1r', true);
    t.equal((await node.getLink('veth-1r'))?.hairpin, true, 'hairpin by name');
    await node.deleteLink('veth-1r');
    t.equal(await pod.getLink('eth0'), null);
    await rejectsWith(t, node.setHairpin('veth-1r', true), isLinkNotFound, 'a link change on a missing link');
  });

  t.test('master, hairpin, promisc, mtu', async (t) => {
    const { node, podNetns } = await makeEnv(t);
    const br = await node.ensureBridge('cbr0');
    await node.createVeth({ name: 'veth-p', peerName: 'eth0', peerNetns: podNetns });
    await node.createVeth({ name: 'veth-q', peerName: 'veth-q2' });
    await rejectsWith(t, node.setHairpin('veth-p', true), isNetlinkErrno('EOPNOTSUPP'), 'hairpin on a non-port');
    await rejectsWith(t, node.setMaster('veth-p', 'veth-q'), isNetlinkErrno('EOPNOTSUPP'), 'master that is not a bridge');
    await node.ensureBridge('cbr1');
    await rejectsWith(t, node.setMaster('cbr1', 'cbr0'), isNetlinkErrno('ELOOP'), 'bridge into a bridge');
    await rejectsWith(t, node.setMaster('veth-p', 'nobr0'), isLinkNotFound, 'missing bridge');
    await node.setMaster('veth-p', 'cbr0');
    await node.setMaster('veth-p', 'cbr0');
    await node.setHairpin('veth-p', true);
    let p = await node.getLink('veth-p');
    t.equal(p?.master, br.index);
    t.equal(p?.hairpin, true);
    await node.setHairpin('veth-p', false);
    t.equal((await node.getLink('veth-p'))?.hairpin, false);
    await node.setPromisc('cbr0', true);
    t.equal((await node.getLink('cbr0'))?.promisc, true);
    await node.setPromisc('cbr0', false);
    t.equal((await node.getLink('cbr0'))?.promisc, false);
    await node.setMtu('veth-p', 1300);
    t.equal((await node.getLink('veth-p'))?.mtu, 1300);
    await rejectsWith(t, node.setMtu('veth-p', 70000), isNetlinkErrno('EINVAL'), 'mtu above the maximum');
    await rejectsWith(t, node.setMtu('veth-p', 60), isNetlinkErrno('EINVAL'), 'mtu below the minimum');
    await node.setNoMaster('veth-p');
    p = await node.getLink('veth-p');
    t.equal(p?.master, undefined);
    await node.setUp('veth-p');
    t.equal((await node.getLink('veth-p'))?.up, true);
    await node.setDown('veth-p');
    t.equal((await node.getLink('veth-p'))?.up, false);
  });

  t.test('addresses and routes', async (t) => {
    const { node, pod, podNetns } = await makeEnv(t);
    await node.ensureBridge('cbr0');
    await node.addAddress('cbr0', '10.244.1.1/24');
    await node.addAddress('cbr0', '10.244.1.1/24');
    t.same(await node.listAddresses('cbr0'), [{ ifIndex: (await node.getLink('cbr0'))?.index, address: '10.244.1.1/24' }], 'one address after two adds');
    await rejectsWith(t, node.addAddress('nope0', '10.1.1.1/24'), isLinkNotFound, 'address on a missing link');

    await node.createVeth({ name: 'veth-r', peerName: 'eth0', peerNetns: podNetns });
    await pod.addAddress('eth0', '10.244.1.5/24');
    await rejectsWith(t, pod.addRoute({ dst: 'default', gw: '10.244.1.1' }), isNetlinkErrno('ENETUNREACH'), 'gw unreachable while eth0 is down');
    await rejectsWith(t, pod.addRoute({ dst: '10.9.0.0/16', dev: 'eth0' }), isNetlinkErrno('ENETDOWN'), 'dev route on a down device');
    await pod.setUp('eth0');
    await rejectsWith(t, pod.addRoute({ dst: 'default', gw: '10.99.0.1' }), isNetlinkErrno('ENETUNREACH'), 'gw outside every connected route');
    await rejectsWith(t, pod.addRoute({ dst: '10.8.0.1/16', gw: '10.244.1.1' }), (e) => e instanceof TypeError, 'host bits in dst');
    await pod.addRoute({ dst: 'default', gw: '10.244.1.1' });
    await pod.addRoute({ dst: 'default', gw: '10.244.1.1' });
    await pod.addRoute({ dst: '10.96.0.0/12', gw: '10.244.1.1', dev: 'eth0' });
    await pod.addRoute({ dst: '10.50.0.0/16', gw: '10.77.0.1', dev: 'eth0', onlink: true });
    const routes = await pod.listRoutes();
    const byDst = new Map(routes.map((r) => [r.dst, r]));
    t.equal(routes.filter((r) => r.dst === 'default').length, 1, 'default route once');
    t.match(byDst.get('default'), { gw: '10.244.1.1', dev: 'eth0', onlink: false });
    t.match(byDst.get('10.96.0.0/12'), { gw: '10.244.1.1', dev: 'eth0' });
    t.match(byDst.get('10.50.0.0/16'), { gw: '10.77.0.1', dev: 'eth0', onlink: true });
    t.match(byDst.get('10.244.1.0/24'), { dev: 'eth0', scope: 'link', protocol: 'kernel', src: '10.244.1.5' }, 'connected route');
    // replace: the same destination via another gateway replaces the route
    await pod.addAddress('eth0', '10.244.1.6/24');
    await pod.addRoute({ dst: 'default', gw: '10.244.1.254' });
    const defaults = (await pod.listRoutes()).filter((r) => r.dst === 'default');
    t.same(defaults.map((r) => r.gw), ['10.244.1.254'], 'replaced, not added');

    // A route marked with a protocol number of its own: listed with it; a delete naming another protocol leaves it.
    await pod.addRoute({ dst: '10.60.0.0/16', gw: '10.244.1.1', dev: 'eth0', protocol: 78 });
    t.match((await pod.listRoutes()).find((r) => r.dst === '10.60.0.0/16'), { gw: '10.244.1.1', dev: 'eth0', protocol: '78' }, 'its protocol listed');
    t.equal((await pod.listRoutes()).find((r) => r.dst === '10.96.0.0/12')?.protocol, 'boot', 'the default protocol is boot');
    await pod.delRoute({ dst: '10.60.0.0/16', protocol: 4 });
    t.ok((await pod.listRoutes()).some((r) => r.dst === '10.60.0.0/16'), 'a delete of another protocol leaves it');
    await pod.delRoute({ dst: '10.60.0.0/16', gw: '10.244.1.1', protocol: 78 });
    t.notOk((await pod.listRoutes()).some((r) => r.dst === '10.60.0.0/16'), 'a delete of its protocol removes it');
    await pod.delRoute({ dst: '10.50.0.0/16' });
    await pod.delRoute({ dst: '10.50.0.0/16' });
    await pod.delRoute({ dst: '10.51.0.0/16', dev: 'nope0' });
    t.notOk((await pod.listRoutes()).some((r) => r.dst === '10.50.0.0/16'), 'route deleted, twice is fine');

    await pod.setDown('eth0');
    t.notOk((await pod.listRoutes()).some((r) => r.dev === 'eth0'), 'routes through a down link are gone');
    t.equal((await pod.listAddresses('eth0')).length, 2, 'addresses stay');
    await pod.delAddress('eth0', '10.244.1.6/24');
    await pod.delAddress('eth0', '10.244.1.6/24');
    t.same((await pod.listAddresses('eth0')).map((a) => a.address), ['10.244.1.5/24']);
  });

  t.test('vxlan, neighbours, fdb', async (t) => {
    const { node } = await makeEnv(t);
    const uplink = await node.ensureBridge('uplink0', { mtu: 1500 });
    await node.addAddress('uplink0', '192.168.50.2/24');
    const vx = await node.createVxlan({ name: 'vxlan0', vni: 1, port: 8472, dev: 'uplink0', local: '192.168.50.2', learning: false });
    t.equal(vx.kind, 'vxlan');
    t.equal(vx.mtu, 1450, 'mtu: underlay - 50');
    t.same(vx.vxlan, { vni: 1, port: 8472, dev: uplink.index, local: '192.168.50.2', learning: false });
    await rejectsWith(t, node.createVxlan({ name: 'vxlan0', vni: 2, port: 8472, dev: 'uplink0', local: '192.168.50.2', learning: false }), isLinkExists, 'name clash');
    await rejectsWith(t, node.createVxlan({ name: 'vxlan1', vni: 1, port: 8472, dev: 'uplink0', local: '192.168.50.2', learning: false }), isNetlinkErrno('EEXIST'), 'same VNI and port');
    await rejectsWith(t, node.createVxlan({ name: 'vxlan1', vni: 3, port: 8472, dev: 'nope0', local: '192.168.50.2', learning: false }), isLinkNotFound, 'missing underlay');
    await rejectsWith(t, node.setMtu('vxlan0', 1500), isNetlinkErrno('EINVAL'), 'vxlan mtu above underlay - 50');
    await node.setUp('vxlan0');
    await node.addAddress('vxlan0', '10.244.1.0/32');

    const mac = '02:00:00:aa:bb:01';
    await node.appendFdb({ dev: 'vxlan0', mac, dst: '192.168.50.3' });
    await node.appendFdb({ dev: 'vxlan0', mac, dst: '192.168.50.3' });
    t.same((await node.listFdb('vxlan0')).map((f) => [f.mac, f.dst, f.permanent]), [[mac, '192.168.50.3', true]], 'one fdb entry after two appends');
    await node.appendFdb({ dev: 'vxlan0', mac, dst: '192.168.50.4' });
    t.same((await node.listFdb('vxlan0')).map((f) => f.dst), ['192.168.50.3'], 'another destination appended to a unicast MAC changes nothing');
    await node.replaceFdb({ dev: 'vxlan0', mac, dst: '192.168.50.4' });
    await node.replaceFdb({ dev: 'vxlan0', mac, dst: '192.168.50.4' });
    t.same((await node.listFdb('vxlan0')).map((f) => [f.mac, f.dst]), [[mac, '192.168.50.4']], 'replace moves the entry to the new destination in one request (twice: the same)');
    await node.replaceFdb({ dev: 'vxlan0', mac, dst: '192.168.50.3' });
    await node.addNeigh({ dev: 'vxlan0', ip: '10.244.2.0', mac, permanent: true });
    await node.addNeigh({ dev: 'vxlan0', ip: '10.244.2.0', mac, permanent: true });
    t.same((await node.listNeighs('vxlan0')).map((n) => [n.ip, n.mac, n.permanent]), [['10.244.2.0', mac, true]]);
    await node.addRoute({ dst: '10.244.2.0/24', gw: '10.244.2.0', dev: 'vxlan0', onlink: true });
    t.match((await node.listRoutes()).find((r) => r.dst === '10.244.2.0/24'), { gw: '10.244.2.0', dev: 'vxlan0', onlink: true });

    await node.delRoute({ dst: '10.244.2.0/24', gw: '10.244.2.0', dev: 'vxlan0' });
    await node.delNeigh({ dev: 'vxlan0', ip: '10.244.2.0' });
    await node.delNeigh({ dev: 'vxlan0', ip: '10.244.2.0' });
    await node.delFdb({ dev: 'vxlan0', mac, dst: '192.168.50.3' });
    await node.delFdb({ dev: 'vxlan0', mac, dst: '192.168.50.3' });
    t.same(await node.listFdb('vxlan0'), []);
    t.same(await node.listNeighs('vxlan0'), []);
    t.notOk((await node.listRoutes()).some((r) => r.dst === '10.244.2.0/24'));
    await rejectsWith(t, node.addNeigh({ dev: 'nope0', ip: '10.0.0.1', mac, permanent: true }), isLinkNotFound, 'neigh on a missing link');

    await node.deleteLink('uplink0');
    t.equal(await node.getLink('vxlan0'), null, 'a vxlan goes with its underlay device');
  });

  t.test('closed handle', async (t) => {
    const { node } = await makeEnv(t);
    node.close();
    node.close();
    await rejectsWith(t, node.listLinks(), (e) => e instanceof NodenetError && e.code === ErrorCode.Netlink, 'calls after close fail');
  });
}
