/**
 * The overlay controller on the validating netlink fake, the nft fake and a
 * fake clock (no root): device, events → entries, order, no flap across a
 * restart, updates in place, removals, the periodic repair, publishing.
 */
import t from 'tap';
import { pino } from 'pino';
import { silentLogger, type Logger } from '../../../lib/log/log.js';
import { parseCidr } from '../../../lib/net/ip.js';
import { NftFake } from '../netfilter/nft/nft.fake.js';
import { FakeNetlinkKernel } from '../netlink/netlink.fake.js';
import type { NetlinkOps } from '../netlink/ops.js';
import type { NetnsPath } from '../netns/netns.js';
import { FakeClock } from '../../../lib/reconcile/clock.fake.js';
import { FakeEventRecorder } from '../../../lib/reconcile/event-recorder.fake.js';
import { A_BACKEND_DATA, A_BACKEND_TYPE, A_PUBLIC_IP, A_PUBLIC_IP_OVERWRITE } from './subnet.js';
import { leaseAnnotations, vtepMacFor } from './vxlan/lease.js';
import { OVERLAY_TABLE } from './masquerade.js';
import { Overlay } from './overlay.js';

const node = (name: string, n: number | null, annotations: Record<string, string> = {}) => ({
  apiVersion: 'v1', kind: 'Node', metadata: { name, annotations }, spec: n === null ? {} : { podCIDR: `10.244.${n}.0/24` },
});
const peer = (name: string, n: number, ip = `192.168.77.${10 + n}`) => node(name, n, leaseAnnotations({ vtepMac: vtepMacFor(name), publicIP: ip }));

/** A node namespace with eth0 (192.168.77.11/24, MTU 1500) and a default route, as a lab node has. */
async function nodeNs(kernel: FakeNetlinkKernel, name = 'n1'): Promise<{ ns: NetnsPath; nl: NetlinkOps }> {
  const ns = kernel.createNetns(name);
  const nl = kernel.open(ns);
  const ul = kernel.createNetns(`${name}-ul`);
  await nl.createVeth({ name: 'eth0', peerName: 'u', peerNetns: ul, mtu: 1500 });
  await nl.addAddress('eth0', '192.168.77.11/24');
  await nl.setUp('eth0');
  await nl.addRoute({ dst: 'default', gw: '192.168.77.1' });
  return { ns, nl };
}

function overlay(nl: NetlinkOps, nft: NftFake, clock: FakeClock, published: Record<string, string>[], opts: { fail?: () => boolean; events?: FakeEventRecorder; log?: Logger } = {}): Overlay {
  return new Overlay({
    nodeName: 'n1', podCIDR: parseCidr('10.244.1.0/24').cidr, clusterCIDR: parseCidr('10.244.0.0/16').cidr, netlink: nl, nft,
    underlayInterface: null, nodeIP: '192.168.77.11', clock, log: opts.log ?? silentLogger(), ...(opts.events ? { events: opts.events } : {}),
    publish: async (a) => {
      if (opts.fail?.()) throw new Error('API server down');
      published.push(a);
    },
  });
}

/** The kernel's entries on nodenet.1, as sorted lines. */
async function entries(nl: NetlinkOps): Promise<string[]> {
  const dev = (await nl.getLink('nodenet.1'))!;
  const neigh = (await nl.listNeighs('nodenet.1')).map((n) => `neigh ${n.ip} ${n.mac} ${n.permanent ? 'permanent' : ''}`);
  const fdb = (await nl.listFdb('nodenet.1')).map((f) => `fdb ${f.mac} ${f.dst}`);
  const routes = (await nl.listRoutes()).filter((r) => r.ifIndex === dev.index).map((r) => `route ${r.dst} via ${r.gw} ${r.onlink ? 'onlink' : ''}`);
  return [...neigh, ...fdb, ...routes].sort();
}

const ops = (kernel: FakeNetlinkKernel, from: number) => kernel.journal.slice(from).filter((l) => / (neigh|fdb|route) /.test(l)).map((l) => l.replace(/^\S+ /, ''));

t.test('setup: the device as flannel.1 is, its address, the masquerade table', async (t) => {
  const kernel = new FakeNetlinkKernel();
  const { nl } = await nodeNs(kernel);
  const nft = new NftFake();
  const o = overlay(nl, nft, new FakeClock(), []);
  await o.setup();
  const dev = (await nl.getLink('nodenet.1'))!;
  const eth0 = (await nl.getLink('eth0'))!;
  t.match(dev, { kind: 'vxlan', mtu: 1450, up: true, mac: vtepMacFor('n1'), vxlan: { vni: 1, port: 8472, dev: eth0.index, local: '192.168.77.11', learning: false } });
  t.equal(o.mtu, 1450, 'the pods\' MTU: underlay 1500 - 50');
  t.equal(o.publicIP, '192.168.77.11');
  t.same((await nl.listAddresses('nodenet.1')).map((a) => a.address), ['10.244.1.0/32']);
  const rules = nft.table('ip', OVERLAY_TABLE)!.chains.get('postrouting')!.rules;
  t.same(rules.map((r) => r.replace(/ comment .*/, '')), [
    'ip saddr 10.244.0.0/16 ip daddr 10.244.0.0/16 return',
    'ip saddr != 10.244.0.0/16 ip daddr 10.244.1.0/24 return',
    'ip saddr 10.244.0.0/16 ip daddr != 224.0.0.0/4 masquerade fully-random',
    'ip saddr != 10.244.0.0/16 ip daddr 10.244.0.0/16 masquerade fully-random',
  ]);
  await o.setup();
  t.equal(nft.table('ip', OVERLAY_TABLE)!.chains.get('postrouting')!.rules.length, 4, 'setup again: idempotent');
});

t.test('peers: nothing before the list is synced, then neighbour, FDB, route per peer; own Node published', async (t) => {
  const kernel = new FakeNetlinkKernel();
  const { nl } = await nodeNs(kernel);
  const clock = new FakeClock();
  const published: Record<string, string>[] = [];
  const o = overlay(nl, new NftFake(), clock, published);
  t.teardown(() => o.stop());
  await o.setup();
  const mark = kernel.journal.length;
  o.handler.add(node('n1', 1));
  o.handler.add(peer('n2', 2));
  o.handler.add(peer('n3', 3));
  o.handler.add(node('n4', null));
  await clock.advance(1000);
  t.same(ops(kernel, mark), [], 'no entry before the initial list is complete');
  o.synced();
  await clock.advance(0);
  t.same(ops(kernel, mark), [
    `neigh replace 10.244.2.0 lladdr ${vtepMacFor('n2')} dev nodenet.1`,
    `neigh replace 10.244.3.0 lladdr ${vtepMacFor('n3')} dev nodenet.1`,
    `fdb append ${vtepMacFor('n2')} dev nodenet.1 dst 192.168.77.12`,
    `fdb append ${vtepMacFor('n3')} dev nodenet.1 dst 192.168.77.13`,
    'route replace 10.244.2.0/24 via 10.244.2.0 dev nodenet.1 onlink',
    'route replace 10.244.3.0/24 via 10.244.3.0 dev nodenet.1 onlink',
  ]);
  t.same([...o.peers().keys()].sort(), ['n2', 'n3'], 'n4 (no podCIDR, no annotations) and n1 itself are not peers');
  t.same(published, [leaseAnnotations({ vtepMac: vtepMacFor('n1'), publicIP: '192.168.77.11' })], 'its own lease published once');

  // n4 gets its pod CIDR and annotations: it becomes a peer.
  const m2 = kernel.journal.length;
  o.handler.update(node('n4', null), peer('n4', 4));
  await clock.advance(100);
  t.same(ops(kernel, m2).length, 3, 'n4: three entries');
  t.ok(ops(kernel, m2)[2]!.startsWith('route replace 10.244.4.0/24'), 'its route last');
});

t.test('a restarted controller on the same kernel keeps the device and touches no entry', async (t) => {
  const kernel = new FakeNetlinkKernel();
  const { nl } = await nodeNs(kernel);
  const clock = new FakeClock();
  const nodes = [node('n1', 1, leaseAnnotations({ vtepMac: vtepMacFor('n1'), publicIP: '192.168.77.11' })), peer('n2', 2), peer('n3', 3)];
  const first = overlay(nl, new NftFake(), clock, []);
  await first.setup();
  for (const n of nodes) first.handler.add(n);
  first.synced();
  await clock.advance(0);
  await first.stop();
  const before = await entries(nl);
  t.equal(before.length, 6);
  const mark = kernel.journal.length;
  const published: Record<string, string>[] = [];
  const second = overlay(nl, new NftFake(), clock, published);
  t.teardown(() => second.stop());
  await second.setup();
  for (const n of nodes) second.handler.add(n);
  second.synced();
  await clock.advance(60_000);
  t.same(kernel.journal.slice(mark), [], 'no link, address, neighbour, FDB or route change');
  t.same(await entries(nl), before);
  t.same(published, [], 'its annotations were already right: no patch');
  t.ok(second.syncs >= 2, 'it synced (at start and periodically)');
  t.equal(second.applied, 0);
});

t.test('updates in place, removals route first, and the periodic resync repairs a hand-deleted entry', async (t) => {
  const kernel = new FakeNetlinkKernel();
  const { nl } = await nodeNs(kernel);
  const clock = new FakeClock();
  const o = overlay(nl, new NftFake(), clock, []);
  t.teardown(() => o.stop());
  await o.setup();
  o.handler.add(peer('n2', 2));
  o.handler.add(peer('n3', 3));
  o.synced();
  await clock.advance(0);

  let mark = kernel.journal.length;
  o.handler.update(peer('n3', 3), peer('n3', 3, '192.168.77.50'));
  await clock.advance(100);
  t.same(ops(kernel, mark), [`fdb replace ${vtepMacFor('n3')} dev nodenet.1 dst 192.168.77.50`], 'new public IP: the entry replaced in place, in one request');
  t.ok((await entries(nl)).includes(`fdb ${vtepMacFor('n3')} 192.168.77.50`));
  t.notOk((await entries(nl)).includes(`fdb ${vtepMacFor('n3')} 192.168.77.13`));

  mark = kernel.journal.length;
  const newMac = '02:12:34:56:78:9a';
  o.handler.update(peer('n2', 2), node('n2', 2, leaseAnnotations({ vtepMac: newMac, publicIP: '192.168.77.12' })));
  await clock.advance(100);
  t.same(ops(kernel, mark), [`neigh replace 10.244.2.0 lladdr ${newMac} dev nodenet.1`, `fdb append ${newMac} dev nodenet.1 dst 192.168.77.12`, `fdb del ${vtepMacFor('n2')} dev nodenet.1`], 'new MAC: neighbour replaced, FDB swapped, route untouched');

  mark = kernel.journal.length;
  o.handler.delete(peer('n3', 3, '192.168.77.50'));
  await clock.advance(100);
  t.same(ops(kernel, mark), ['route del 10.244.3.0/24', `fdb del ${vtepMacFor('n3')} dev nodenet.1`, 'neigh del 10.244.3.0 dev nodenet.1'], 'a Node gone: route first');
  t.notOk((await entries(nl)).some((e) => e.includes('10.244.3.0') || e.includes(vtepMacFor('n3'))), 'nothing of n3 left');

  // By hand: the route and the FDB entry of n2 deleted; the periodic resync (60 s) brings them back.
  await nl.delRoute({ dst: '10.244.2.0/24', dev: 'nodenet.1' });
  await nl.delFdb({ dev: 'nodenet.1', mac: newMac });
  mark = kernel.journal.length;
  await clock.advance(30_000);
  t.same(ops(kernel, mark), [], 'not before the period');
  await clock.advance(30_000);
  t.same(ops(kernel, mark), [`fdb append ${newMac} dev nodenet.1 dst 192.168.77.12`, 'route replace 10.244.2.0/24 via 10.244.2.0 dev nodenet.1 onlink']);

  // The device itself deleted by hand: the next sync makes it again, with every entry.
  await nl.deleteLink('nodenet.1');
  o.request();
  await clock.advance(100);
  t.same((await entries(nl)).length, 3, 'device and entries back');
  t.match(await nl.getLink('nodenet.1'), { mtu: 1450, up: true, mac: vtepMacFor('n1') });
});

t.test('a pre-existing nodenet.1 with other settings is made again; one with the right ones is kept', async (t) => {
  const kernel = new FakeNetlinkKernel();
  const { nl } = await nodeNs(kernel);
  await nl.createVxlan({ name: 'nodenet.1', vni: 1, port: 8472, dev: 'eth0', local: '192.168.77.11', learning: true });
  const mark = kernel.journal.length;
  const o = overlay(nl, new NftFake(), new FakeClock(), []);
  await o.setup();
  t.match(kernel.journal.slice(mark).join('\n'), /link del nodenet\.1\n.*link add nodenet\.1 type vxlan/, 'learning on: deleted and made again');
  t.equal((await nl.getLink('nodenet.1'))!.vxlan!.learning, false);
  // Right settings but a wrong MTU and a stray address: fixed in place.
  await nl.setMtu('nodenet.1', 1400);
  await nl.addAddress('nodenet.1', '10.9.9.9/32');
  const m2 = kernel.journal.length;
  await o.setup();
  const changes = kernel.journal.slice(m2).map((l) => l.replace(/^\S+ /, ''));
  t.notOk(changes.some((l) => l.startsWith('link add') || l.startsWith('link del')), 'kept');
  t.same(changes, ['link set nodenet.1 mtu 1450', 'addr del 10.9.9.9/32 dev nodenet.1']);
});

t.test('own Node: published at start, re-published when the backend annotations go, an admin public-ip change kept', async (t) => {
  const kernel = new FakeNetlinkKernel();
  const { nl } = await nodeNs(kernel);
  const clock = new FakeClock();
  const published: Record<string, string>[] = [];
  let down = true;
  const o = overlay(nl, new NftFake(), clock, published, { fail: () => down });
  t.teardown(() => o.stop());
  await o.setup();
  const mine = leaseAnnotations({ vtepMac: vtepMacFor('n1'), publicIP: '192.168.77.11' });
  o.handler.add(node('n1', 1));
  o.synced();
  await clock.advance(0);
  t.same(published, [], 'the API server refused');
  down = false;
  await clock.advance(1000);
  t.same(published, [mine], 'retried a second later');
  o.handler.update(node('n1', 1), node('n1', 1, mine));
  o.handler.update(node('n1', 1, mine), node('n1', 1, { ...mine, [A_PUBLIC_IP]: '192.168.77.50' }));
  await clock.advance(100);
  t.equal(published.length, 1, 'an admin changed public-ip: not undone');
  const { [A_BACKEND_TYPE]: _gone, ...rest } = mine;
  o.handler.update(node('n1', 1, mine), node('n1', 1, { ...rest, [A_PUBLIC_IP]: '192.168.77.50' }));
  await clock.advance(100);
  t.equal(published.length, 2, 'backend-type removed: published again');
  t.equal(published[1]![A_BACKEND_TYPE], 'vxlan');
  t.notOk(A_PUBLIC_IP in published[1]!, 'public-ip left as the admin set it');

  // A fresh start with public-ip-overwrite: that address is published.
  const p2: Record<string, string>[] = [];
  const o2 = overlay(nl, new NftFake(), clock, p2);
  t.teardown(() => o2.stop());
  await o2.setup();
  o2.handler.add(node('n1', 1, { [A_PUBLIC_IP_OVERWRITE]: '192.168.77.60' }));
  o2.synced();
  await clock.advance(0);
  t.equal(p2[0]?.[A_PUBLIC_IP], '192.168.77.60');
});

t.test('a peer claiming this node\'s pod CIDR is not followed; cleanup removes the device and the table', async (t) => {
  const kernel = new FakeNetlinkKernel();
  const { nl } = await nodeNs(kernel);
  const clock = new FakeClock();
  const nft = new NftFake();
  const o = overlay(nl, nft, clock, []);
  await o.setup();
  o.handler.add(peer('n9', 1));
  o.handler.add(peer('n2', 2));
  o.synced();
  await clock.advance(0);
  t.same([...o.peers().keys()], ['n2']);
  await o.cleanup();
  t.equal(await nl.getLink('nodenet.1'), null);
  t.equal(nft.table('ip', OVERLAY_TABLE), null);
  t.same((await nl.listRoutes()).map((r) => r.dst), ['default', '192.168.77.0/24'], 'only the node\'s own routes left');
  await o.cleanup();
});

t.test('a Node update the overlay cannot use keeps the peer\'s entries; the next good one is taken; a delete removes them', async (t) => {
  const kernel = new FakeNetlinkKernel();
  const { nl } = await nodeNs(kernel);
  const clock = new FakeClock();
  const events = new FakeEventRecorder();
  const lines: Record<string, unknown>[] = [];
  const log = pino({ level: 'info' }, { write: (x: string) => void lines.push(JSON.parse(x) as Record<string, unknown>) });
  const warnings = () => lines.filter((l) => l['level'] === 40);
  const o = overlay(nl, new NftFake(), clock, [], { events, log });
  t.teardown(() => o.stop());
  await o.setup();
  const at = (n: ReturnType<typeof node>, rv: number, uid = 'uid-n2') => ({ ...n, metadata: { ...n.metadata, uid, resourceVersion: String(rv) } });
  const v1 = at(peer('n2', 2), 5);
  o.handler.add(v1);
  o.synced();
  await clock.advance(0);
  const before = await entries(nl);
  t.equal(before.length, 3, 'n2: neighbour, FDB entry, route');

  // Garbage in public-ip: nothing changes in the kernel.
  const v2 = at(node('n2', 2, { ...leaseAnnotations({ vtepMac: vtepMacFor('n2'), publicIP: '192.168.77.12' }), [A_PUBLIC_IP]: 'not-an-ip' }), 6);
  let mark = kernel.journal.length;
  o.handler.update(v1, v2);
  await clock.advance(100);
  t.same(ops(kernel, mark), [], 'no entry touched');
  t.same(await entries(nl), before);
  t.same([...o.peers().keys()], ['n2'], 'still a peer');
  t.same(o.rejected(), [{ kind: 'Node', key: 'n2', field: `metadata.annotations[${A_PUBLIC_IP}]`, message: `${A_PUBLIC_IP} "not-an-ip" is not an IPv4 address`, servedFromLastGood: true, lastGoodResourceVersion: '5' }]);
  t.same(o.rejectionCounts(), { kind: 'Node', rejected: 1, servedFromLastGood: 1 });
  t.equal(warnings().length, 1, 'one warning');
  t.match(warnings()[0], { node: 'n2', kind: 'Node', msg: /cannot use this update .*still serving the route, FDB entry and neighbour of its last usable version \(resourceVersion 5\)/ });
  t.match(events.events, [{ involved: { kind: 'Node', apiVersion: 'v1', name: 'n2', uid: 'uid-n2', resourceVersion: '6' }, type: 'Warning', reason: 'InvalidObjectKeptLastGood' }]);
  t.notOk('namespace' in events.events[0]!.involved, 'a Node is cluster-scoped');

  // Delivered again, then the pod CIDR removed too (the API forbids it): still kept, nothing more said but the Event's count.
  o.handler.update(v2, v2);
  const { [A_PUBLIC_IP]: _gone, ...noIP } = leaseAnnotations({ vtepMac: vtepMacFor('n2'), publicIP: '192.168.77.12' });
  const v3 = at(node('n2', null, noIP), 7);
  mark = kernel.journal.length;
  o.handler.update(v2, v3);
  await clock.advance(60_000);
  t.same(ops(kernel, mark), [], 'a periodic resync later: no entry touched');
  t.same(await entries(nl), before);
  t.match(o.rejected(), [{ key: 'n2', field: 'spec.podCIDR', servedFromLastGood: true, lastGoodResourceVersion: '5' }]);
  t.equal(warnings().length, 2, 'a new fault: a second warning');
  t.equal(events.events.length, 2);

  // The next good version is taken (a new public IP: the FDB entry's destination replaced).
  const v4 = at(peer('n2', 2, '192.168.77.50'), 8);
  mark = kernel.journal.length;
  o.handler.update(v3, v4);
  await clock.advance(100);
  t.same(ops(kernel, mark), [`fdb replace ${vtepMacFor('n2')} dev nodenet.1 dst 192.168.77.50`]);
  t.same(o.rejected(), []);
  t.same(o.rejectionCounts(), { kind: 'Node', rejected: 2, servedFromLastGood: 0 });

  // Broken again, then deleted: the delete removes the kept entries.
  const v5 = at({ ...v4, spec: { podCIDR: '10.244.2.7/24' } }, 9);
  o.handler.update(v4, v5);
  await clock.advance(100);
  t.equal((await entries(nl)).length, 3, 'kept');
  mark = kernel.journal.length;
  o.handler.delete(v5);
  await clock.advance(100);
  t.same(ops(kernel, mark), ['route del 10.244.2.0/24', `fdb del ${vtepMacFor('n2')} dev nodenet.1`, 'neigh del 10.244.2.0 dev nodenet.1'], 'a Node gone: its entries go');
  t.same(o.rejected(), []);
  t.same(o.rejectionCounts(), { kind: 'Node', rejected: 3, servedFromLastGood: 0 });
});

t.test('a peer that says it left (another backend or VNI) is withdrawn; a Node never usable is skipped; a joining one is not a peer yet', async (t) => {
  const kernel = new FakeNetlinkKernel();
  const { nl } = await nodeNs(kernel);
  const clock = new FakeClock();
  const events = new FakeEventRecorder();
  const o = overlay(nl, new NftFake(), clock, [], { events });
  t.teardown(() => o.stop());
  await o.setup();
  o.handler.add(peer('n2', 2));
  o.handler.add(peer('n3', 3));
  o.handler.add(node('n4', 4, { ...leaseAnnotations({ vtepMac: vtepMacFor('n4'), publicIP: '192.168.77.14' }), [A_PUBLIC_IP]: '999.1.1.1' }));
  o.handler.add(node('n5', null));
  o.synced();
  await clock.advance(0);
  t.same([...o.peers().keys()].sort(), ['n2', 'n3']);
  t.match(o.rejected(), [{ key: 'n4', servedFromLastGood: false }], 'n4 never had a usable version: skipped');
  t.same(events.events.map((e) => [e.involved.name, e.reason]), [['n4', 'InvalidObjectSkipped']], 'n5 (no pod CIDR yet) is not a rejection');

  let mark = kernel.journal.length;
  o.handler.update(peer('n2', 2), node('n2', 2, { ...leaseAnnotations({ vtepMac: vtepMacFor('n2'), publicIP: '192.168.77.12' }), [A_BACKEND_TYPE]: 'udp' }));
  o.handler.update(peer('n3', 3), node('n3', 3, { ...leaseAnnotations({ vtepMac: vtepMacFor('n3'), publicIP: '192.168.77.13' }), [A_BACKEND_DATA]: `{"VNI":4,"VtepMAC":"${vtepMacFor('n3')}"}` }));
  await clock.advance(100);
  t.same([...o.peers().keys()], [], 'both left this network');
  t.equal(ops(kernel, mark).filter((l) => l.startsWith('route del')).length, 2, 'their routes removed');
  // Leaving for another VXLAN network is a departure, not a rejection: no Event. Another backend type is
  // reported (issue 25: never silently skipped), as a backend mismatch, not as a rejection.
  t.same(events.events.slice(1).map((e) => [e.involved.name, e.type, e.reason]), [['n2', 'Warning', 'OverlayBackendMismatch']], 'one Event, for the Node on another backend');
  t.match(events.events[1]!.message, /Node n2 announces the overlay backend "udp", which nodenet does not have \(this node runs vxlan\)/);
  t.same(o.foreignNodes(), [{ node: 'n2', backendType: 'udp', known: false }]);
  t.same(o.rejected().map((r) => r.key), ['n4'], 'a departure is not a rejection (n4 is, from before)');
  o.handler.update(node('n2', 2, { [A_BACKEND_TYPE]: 'udp' }), node('n2', 2, { ...leaseAnnotations({ vtepMac: vtepMacFor('n2'), publicIP: '192.168.77.12' }), [A_BACKEND_TYPE]: 'udp' }));
  t.equal(events.events.length, 2, 'delivered again: nothing more said');

  mark = kernel.journal.length;
  o.handler.update(node('n5', null), peer('n5', 5));
  await clock.advance(100);
  t.same([...o.peers().keys()], ['n5'], 'n5 joined');

  // n2 back on vxlan: a peer again, no longer foreign; a Node on a backend gone from the list with its delete.
  o.handler.update(node('n2', 2, { [A_BACKEND_TYPE]: 'udp' }), peer('n2', 2));
  o.handler.add(node('n6', 6, { ...leaseAnnotations({ vtepMac: vtepMacFor('n6'), publicIP: '192.168.77.16' }), [A_BACKEND_TYPE]: 'wireguard' }));
  await clock.advance(100);
  t.same([...o.peers().keys()].sort(), ['n2', 'n5']);
  t.same(o.foreignNodes().map((f) => f.node), ['n6']);
  o.handler.delete(node('n6', 6));
  t.same(o.foreignNodes(), []);
});
