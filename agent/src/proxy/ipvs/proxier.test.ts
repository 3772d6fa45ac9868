import t from 'tap';
import { ErrorCode } from '../../../../lib/errors/errors.js';
import { silentLogger } from '../../../../lib/log/log.js';
import { FakeIpset } from '../../netfilter/iptables/ipset.fake.js';
import { FakeIptables } from '../../netfilter/iptables/iptables.fake.js';
import { FakeIpvs } from '../../netfilter/ipvs/ipvs.fake.js';
import { FakeNetlinkKernel } from '../../netlink/netlink.fake.js';
import { FakeSysctl } from '../../netns/sysctl.fake.js';
import { CFG, ep, snapshot, svc } from '../test-fixtures.js';
import { IpvsBackend } from './proxier.js';
import { parseIPv4 } from '../../../../lib/net/ip.js';

const SYSCTLS = {
  'net.ipv4.vs.conntrack': '0', 'net.ipv4.vs.conn_reuse_mode': '1', 'net.ipv4.vs.expire_nodest_conn': '0', 'net.ipv4.vs.expire_quiescent_template': '0',
  'net.ipv4.conf.all.arp_ignore': '0', 'net.ipv4.conf.all.arp_announce': '0',
};

function setup(kernelRelease = '6.1.0-57-amd64') {
  const ipvs = new FakeIpvs();
  const ipset = new FakeIpset();
  const iptables = new FakeIptables();
  const kernel = new FakeNetlinkKernel();
  const netlink = kernel.open();
  const sysctl = new FakeSysctl(SYSCTLS);
  const backend = new IpvsBackend({ ipvs, ipset, iptables, netlink, sysctl, kernelRelease, nodeConfig: CFG, log: silentLogger() });
  return { ipvs, ipset, iptables, netlink, sysctl, backend };
}

const WEB = svc('ns1', 'web', '172.30.0.41');
const DNS = svc('ns1', 'dns', '172.30.0.42', { protocol: 'UDP', port: 53 });
const addrs = async (nl: { listAddresses(n?: string): Promise<{ address: string }[]> }) => (await nl.listAddresses('kube-ipvs0')).map((a) => a.address).sort();

t.test('a full sync: sysctls, kube-ipvs0 with the VIPs, virtual and real servers, sets, rules and jumps', async (t) => {
  const f = setup();
  await f.backend.sync(snapshot([WEB, [ep('10.180.0.1'), ep('10.180.0.2')]], [DNS, [ep('10.180.0.3:5353')]]), { full: true });
  t.equal(f.ipvs.dump(), ['TCP/172.30.0.41:80 rr', '  -> 10.180.0.1:80 masq w1', '  -> 10.180.0.2:80 masq w1', 'UDP/172.30.0.42:53 rr', '  -> 10.180.0.3:5353 masq w1'].join('\n'));
  t.same(await addrs(f.netlink), ['172.30.0.41/32', '172.30.0.42/32']);
  t.equal((await f.netlink.getLink('kube-ipvs0'))?.kind, 'dummy');
  t.equal(await f.sysctl.get('net.ipv4.vs.conntrack'), '1');
  t.equal(await f.sysctl.get('net.ipv4.vs.expire_nodest_conn'), '1');
  t.equal(await f.sysctl.get('net.ipv4.vs.conn_reuse_mode'), '1', 'left as it is on a 6.1 kernel');
  t.same(f.ipset.members('KUBE-CLUSTER-IP'), ['172.30.0.41,tcp:80', '172.30.0.42,udp:53']);
  t.equal(f.ipset.names().length, 17, 'every set exists, the empty ones too');
  t.equal(f.ipvs.applyCalls, 1, 'one IPVS batch');
  t.equal(f.ipset.applyCalls, 1, 'one ipset batch');
  t.equal(f.iptables.calls.restore, 1, 'one rules restore');
  t.equal(f.iptables.calls.ensureJumps, 1, 'the jumps checked (and inserted) in one call');
  const dump = f.iptables.dump();
  t.ok(dump.tables.get('filter')!.chains.get('INPUT')!.rules.some((r) => r.target?.kind === 'chain' && r.target.chain === 'KUBE-IPVS-FILTER'), 'INPUT jumps to KUBE-IPVS-FILTER');
  t.ok(dump.tables.get('nat')!.chains.get('PREROUTING')!.rules.some((r) => r.target?.kind === 'chain' && r.target.chain === 'KUBE-SERVICES'));
  t.equal(f.backend.lastSync?.virtualServers, 2);
  t.equal(f.backend.lastSyncRuleCount(), 5);
});

t.test('conn_reuse_mode=0 on a 5.4 kernel', async (t) => {
  const f = setup('5.4.0-150-generic');
  await f.backend.sync(snapshot([WEB, []]), { full: true });
  t.equal(await f.sysctl.get('net.ipv4.vs.conn_reuse_mode'), '0');
});

t.test('incremental: only what changed; a removed TCP real server drains, then goes when its connections end', async (t) => {
  const f = setup();
  await f.backend.sync(snapshot([WEB, [ep('10.180.0.1'), ep('10.180.0.2')]], [DNS, [ep('10.180.0.3:5353'), ep('10.180.0.4:5353')]]), { full: true });
  f.ipvs.setConns('TCP/172.30.0.41:80', '10.180.0.2:80', 3, 1);
  f.ipvs.setConns('UDP/172.30.0.42:53', '10.180.0.4:5353', 5, 0);
  const before = f.ipvs.journal.length;
  const restores = f.iptables.calls.restore;
  await f.backend.sync(snapshot([WEB, [ep('10.180.0.1')]], [DNS, [ep('10.180.0.3:5353')]]), { full: false, changed: new Set(['ns1/web', 'ns1/dns']) });
  t.same(f.ipvs.journal.slice(before), ['edit TCP/172.30.0.41:80 -> 10.180.0.2:80 masq weight 0', 'delete UDP/172.30.0.42:53 -> 10.180.0.4:5353'], 'TCP drained, UDP deleted at once');
  t.equal(f.iptables.calls.restore, restores, 'the rules did not change: no restore');
  t.same(f.backend.drainingServers, ['TCP/172.30.0.41:80/10.180.0.2:80']);
  t.equal(await f.backend.canaryMissing(), false);
  t.match(f.ipvs.dump(), /10\.180\.0\.2:80 masq w0/, 'still there while it has connections');
  f.ipvs.setConns('TCP/172.30.0.41:80', '10.180.0.2:80', 0, 0);
  t.equal(await f.backend.canaryMissing(), false);
  t.notMatch(f.ipvs.dump(), /10\.180\.0\.2/, 'deleted once its connections ended');
  t.same(f.backend.drainingServers, []);
});

t.test('a draining server that comes back gets its weight back; a terminating endpoint has weight 0', async (t) => {
  const f = setup();
  await f.backend.sync(snapshot([WEB, [ep('10.180.0.1'), ep('10.180.0.2')]]), { full: true });
  f.ipvs.setConns('TCP/172.30.0.41:80', '10.180.0.2:80', 1);
  await f.backend.sync(snapshot([WEB, [ep('10.180.0.1')]]), { full: false, changed: new Set(['ns1/web']) });
  await f.backend.sync(snapshot([WEB, [ep('10.180.0.1'), ep('10.180.0.2')]]), { full: false, changed: new Set(['ns1/web']) });
  t.match(f.ipvs.dump(), /10\.180\.0\.2:80 masq w1/);
  t.same(f.backend.drainingServers, []);
  await f.backend.sync(snapshot([WEB, [ep('10.180.0.1'), ep('10.180.0.2', { ready: false, serving: true, terminating: true })]]), { full: false, changed: new Set(['ns1/web']) });
  t.match(f.ipvs.dump(), /10\.180\.0\.2:80 masq w0/, 'terminating: weight 0');
});

t.test('a Service removed takes its virtual server, real servers, address and set members', async (t) => {
  const f = setup();
  await f.backend.sync(snapshot([WEB, [ep('10.180.0.1')]], [DNS, [ep('10.180.0.3:5353')]]), { full: true });
  await f.backend.sync(snapshot([DNS, [ep('10.180.0.3:5353')]]), { full: false, changed: new Set(['ns1/web']) });
  t.equal(f.ipvs.dump(), 'UDP/172.30.0.42:53 rr\n  -> 10.180.0.3:5353 masq w1');
  t.same(await addrs(f.netlink), ['172.30.0.42/32']);
  t.same(f.ipset.members('KUBE-CLUSTER-IP'), ['172.30.0.42,udp:53']);
});

t.test('a full sync repairs what someone changed by hand; stale virtual services go', async (t) => {
  const f = setup();
  await f.backend.sync(snapshot([WEB, [ep('10.180.0.1')]]), { full: true });
  await f.ipvs.apply([
    { op: 'add-service', vs: { protocol: 'TCP', address: '10.1.2.3', port: 9, scheduler: 'rr', persistentTimeout: 0 } },
    { op: 'del-dest', vs: { protocol: 'TCP', address: '172.30.0.41', port: 80 }, rs: { address: '10.180.0.1', port: 80 } },
  ]);
  await f.netlink.delAddress('kube-ipvs0', '172.30.0.41/32');
  await f.backend.sync(snapshot([WEB, [ep('10.180.0.1')]]), { full: true });
  t.equal(f.ipvs.dump(), 'TCP/172.30.0.41:80 rr\n  -> 10.180.0.1:80 masq w1');
  t.same(await addrs(f.netlink), ['172.30.0.41/32']);
});

t.test('affinity and scheduler changes edit the virtual service in place', async (t) => {
  const f = setup();
  await f.backend.sync(snapshot([WEB, [ep('10.180.0.1')]]), { full: true });
  await f.backend.sync(snapshot([svc('ns1', 'web', '172.30.0.41', { affinity: 600 }), [ep('10.180.0.1')]]), { full: false, changed: new Set(['ns1/web']) });
  t.equal(f.ipvs.journal.at(-1), 'edit service TCP/172.30.0.41:80 rr persistent 600');
});

t.test('failures: a refused op forces the next sync to be full; no IPVS is NotAvailable', async (t) => {
  const f = setup();
  await f.backend.sync(snapshot([WEB, [ep('10.180.0.1')]]), { full: true });
  f.ipvs.failOn = '10.180.0.9';
  await t.rejects(f.backend.sync(snapshot([WEB, [ep('10.180.0.1'), ep('10.180.0.9')]]), { full: false, changed: new Set(['ns1/web']) }), { code: ErrorCode.RuleApply });
  const lists = f.ipvs.listCalls;
  await f.backend.sync(snapshot([WEB, [ep('10.180.0.1'), ep('10.180.0.9')]]), { full: false, changed: new Set(['ns1/web']) });
  t.equal(f.ipvs.listCalls, lists + 1, 'the next sync listed the kernel (full)');
  t.match(f.ipvs.dump(), /10\.180\.0\.9:80 masq w1/);

  const g = setup();
  g.ipvs.available = false;
  await t.rejects(g.backend.sync(snapshot([WEB, []]), { full: true }), { code: ErrorCode.NotAvailable, message: /this kernel has no IPVS \(modprobe ip_vs failed\): use iptables or nftables, or run in a VM \(test-vm\/\)/ });
});

t.test('canary: flushed rules or a deleted kube-ipvs0 force a full sync; cleanup removes everything', async (t) => {
  const f = setup();
  await f.backend.sync(snapshot([WEB, [ep('10.180.0.1')]]), { full: true });
  t.equal(await f.backend.canaryMissing(), false);
  f.iptables.flushEverything();
  t.equal(await f.backend.canaryMissing(), true);
  await f.backend.sync(snapshot([WEB, [ep('10.180.0.1')]]), { full: false, changed: new Set() });
  t.equal(await f.backend.canaryMissing(), false, 'the full sync put the rules back');
  await f.netlink.deleteLink('kube-ipvs0');
  t.equal(await f.backend.canaryMissing(), true);
  await f.backend.sync(snapshot([WEB, [ep('10.180.0.1')]]), { full: true });
  t.same(await addrs(f.netlink), ['172.30.0.41/32'], 'device and address back');

  f.ipset.inUse = (n) => [...f.iptables.dump().tables.values()].some((tb) => [...tb.chains.values()].some((c) => c.rules.some((r) => r.matchSets?.some((m) => m.name === n))));
  await f.backend.cleanup();
  t.equal(f.ipvs.serviceCount, 0);
  t.same(f.ipset.names(), [], 'sets destroyed after the rules that used them');
  t.equal(await f.netlink.getLink('kube-ipvs0'), null);
  const nat = [...f.iptables.dump().tables.get('nat')!.chains.keys()];
  t.notOk(nat.some((c) => c.startsWith('KUBE-')), 'no chain of ours left');
  await f.backend.cleanup();
  t.pass('cleanup is idempotent');
});

t.test('NodePorts follow the node addresses read at every sync (a new bridge address): a full sync then, none otherwise', async (t) => {
  const ipvs = new FakeIpvs();
  const kernel = new FakeNetlinkKernel();
  let nodeIPs = ['192.168.1.10'];
  const backend = new IpvsBackend({
    ipvs, ipset: new FakeIpset(), iptables: new FakeIptables(), netlink: kernel.open(), sysctl: new FakeSysctl(SYSCTLS),
    kernelRelease: '6.1.0-57-amd64', nodeConfig: CFG, log: silentLogger(),
    currentNodeIPs: async () => nodeIPs.map(parseIPv4),
  });
  const NP = svc('ns1', 'np', '172.30.0.43', { nodePort: 30080 });
  const snap = snapshot([NP, [ep('10.180.0.1')]]);
  await backend.sync(snap, { full: true });
  const nodePortVS = () => ipvs.dump().split('\n').filter((l) => /:30080 /.test(l)).map((l) => l.split(' ')[0]);
  t.same(nodePortVS(), ['TCP/192.168.1.10:30080'], 'the read address, not the configured one');
  await backend.sync(snap, { full: false, changed: new Set() });
  t.equal(backend.lastSync?.full, false, 'the same addresses: a partial sync stays partial');
  nodeIPs = ['192.168.1.10', '10.244.1.1'];
  await backend.sync(snap, { full: false, changed: new Set() });
  t.equal(backend.lastSync?.full, true, 'a new address: a full sync');
  t.same(nodePortVS(), ['TCP/10.244.1.1:30080', 'TCP/192.168.1.10:30080'], 'a virtual server on it too');
  nodeIPs = ['10.244.1.1'];
  await backend.sync(snap, { full: false, changed: new Set() });
  t.same(nodePortVS(), ['TCP/10.244.1.1:30080'], 'one gone: its virtual server too');
});

t.test('close releases the IPVS and netlink sockets, the kernel tables stay', async (t) => {
  const f = setup();
  await f.backend.sync(snapshot([WEB, [ep('10.180.0.1')]]), { full: true });
  let closed = 0;
  const ipvsClose = f.ipvs.close.bind(f.ipvs);
  f.ipvs.close = () => { closed++; ipvsClose(); };
  const nlClose = f.netlink.close.bind(f.netlink);
  f.netlink.close = () => { closed++; nlClose(); };
  f.backend.close();
  t.equal(closed, 2, 'both closed');
  t.match(f.ipvs.dump(), /TCP\/172\.30\.0\.41:80/, 'the virtual server is still there');
});

t.test('an IPVS table cleared by hand (ipvsadm -C) is noticed at the next canary check and rewritten by the full sync', async (t) => {
  const f = setup();
  const snap = snapshot([WEB, [ep('10.180.0.1')]], [DNS, [ep('10.180.0.3:5353')]]);
  await f.backend.sync(snap, { full: true });
  t.equal(await f.backend.canaryMissing(), false, 'all there');
  await f.ipvs.flush();
  t.equal(await f.backend.canaryMissing(), true, 'the table is empty: a full sync is due');
  await f.backend.sync(snap, { full: true });
  t.match(f.ipvs.dump(), /TCP\/172\.30\.0\.41:80[\s\S]*UDP\/172\.30\.0\.42:53/, 'rewritten');
  t.equal(await f.backend.canaryMissing(), false);
});
