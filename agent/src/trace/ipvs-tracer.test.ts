/**
 * trace/ipvs-tracer over IPVS mode's real output: the IpvsBackend syncs a
 * snapshot into the fakes, trace/live.ts reads `iptables-save`, `ipset
 * save`, `ipvsadm -Ln` and kube-ipvs0's addresses back through a FakeRunner
 * (testing/ipvs-node.ts), and the tracer walks packets over that.
 */
import t from 'tap';
import { parseIpvsadmList } from '../netfilter/ipvs/ipvsadm-parse.js';
import type { IpvsOptions } from '../proxy/ipvs/plan.js';
import { CFG, ep, EXTERNAL_CLIENT, NODE_IP, snapshot, svc } from '../proxy/test-fixtures.js';
import type { NftTracePacket } from './nft-tracer.js';
import { ipvsNodeRunner, ipvsNodeState } from '../testing/ipvs-node.js';
import { traceIpvs, type IpvsTraceResult } from './ipvs-tracer.js';
import { readLiveRules, type IpvsLive } from './live.js';

const NS = '/run/netns/nn-ipvs-trc';
const POD = '10.180.0.9';

const SNAP = snapshot(
  // two ready endpoints and a terminating one that still serves (weight 0)
  [svc('ns1', 'web', '172.30.0.41', { nodePort: 3001 }), [ep('10.180.0.1'), ep('10.180.0.2'), ep('10.180.0.3', { ready: false, serving: true, terminating: true })]],
  [svc('ns1', 'sticky', '172.30.0.42', { affinity: 10800 }), [ep('10.180.0.4'), ep('10.180.0.7')]],
  [svc('ns1', 'local', '172.30.0.43', { nodePort: 3003, etp: 'Local' }), [ep('10.180.0.5', { local: true }), ep('10.180.0.6')]],
  [svc('ns1', 'empty', '172.30.0.44'), []],
);

async function live(options: IpvsOptions = {}): Promise<IpvsLive> {
  const state = await ipvsNodeState(SNAP, CFG, options);
  const rules = await readLiveRules({ runner: ipvsNodeRunner(state, NS), netns: NS }, 'ipvs', 'KUBE');
  if (rules.mode !== 'ipvs') throw new Error(`read ${rules.mode}`);
  return rules;
}

const ON = await live();
const OFF = await live({ filter: false });

const tcp = (src: string, dst: string, port: number): NftTracePacket => ({ sourceIP: src, protocol: 'TCP', destIP: dst, destPort: port }) as NftTracePacket;
const ping = (src: string, dst: string): NftTracePacket => ({ sourceIP: src, protocol: 'ICMP', destIP: dst });
const trace = (l: IpvsLive, p: NftTracePacket): IpvsTraceResult => traceIpvs(l, p, { nodeIPs: [NODE_IP] });

t.test('what live.ts read: the sets, the IPVS table, the VIPs', async (t) => {
  t.same(ON.vips, ['172.30.0.41', '172.30.0.42', '172.30.0.43', '172.30.0.44']);
  t.same([...ON.ipsets.get('KUBE-CLUSTER-IP')!.entries].sort(), ['172.30.0.41,tcp:80', '172.30.0.42,tcp:80', '172.30.0.43,tcp:80', '172.30.0.44,tcp:80']);
  t.ok(ON.services.some((s) => s.address === NODE_IP && s.port === 3001), 'the NodePort on the node IP');
  t.same(parseIpvsadmList((await ipvsNodeState(SNAP, CFG)).ipvsadmList), ON.services, 'the -Ln text reads back');
});

t.test('ClusterIP TCP from a pod: both ready real servers, the draining one excluded, no masquerade', async (t) => {
  const r = trace(ON, tcp(POD, '172.30.0.41', 80));
  t.equal(r.destination, '10.180.0.1:80, 10.180.0.2:80');
  t.equal(r.masquerade, false, 'a pod source inside the cluster CIDR keeps its address');
  t.match(r.ipvs, { virtualService: 'TCP/172.30.0.41:80', scheduler: 'rr', persistentTimeout: 0, hook: 'LOCAL_IN' });
  t.same(r.ipvs.realServers.map((d) => [`${d.address}:${d.port}`, d.weight, d.draining]), [['10.180.0.1:80', 1, false], ['10.180.0.2:80', 1, false], ['10.180.0.3:80', 0, true]]);
  t.match(r.ipvs.route, /172\.30\.0\.41 is local \(on kube-ipvs0\): INPUT/);
  t.match(r.ipvs.note, /1 draining \(weight 0\) take no new connection/);
  const order = ['nat/PREROUTING', 'nat/KUBE-SERVICES', 'filter/INPUT', 'filter/KUBE-IPVS-FILTER', 'ipvs/LOCAL_IN: TCP/172.30.0.41:80 rr', 'nat/POSTROUTING', 'nat/KUBE-POSTROUTING'];
  t.same(r.visited.filter((c) => order.includes(c)), order, 'the hooks in the kernel\'s order');
  t.notOk(r.visited.includes('filter/FORWARD'), 'a VIP is local: INPUT, not FORWARD');
  t.ok(r.matched.includes('filter/KUBE-IPVS-FILTER: -m set --match-set KUBE-CLUSTER-IP dst,dst -j RETURN'), 'a service IP:port passes the filter');
});

t.test('ClusterIP from outside the cluster CIDR, and from the node itself: masqueraded', async (t) => {
  const ext = trace(ON, tcp(EXTERNAL_CLIENT, '172.30.0.41', 80));
  t.equal(ext.destination, '10.180.0.1:80, 10.180.0.2:80');
  t.equal(ext.masquerade, true);
  t.ok(ext.visited.includes('nat/KUBE-MARK-MASQ'));
  const self = trace(ON, tcp(NODE_IP, '172.30.0.41', 80));
  t.equal(self.ipvs.hook, 'LOCAL_OUT', 'the node\'s own packet: IPVS on LOCAL_OUT');
  t.equal(self.visited[0], 'nat/OUTPUT');
  t.equal(self.visited.filter((c) => c === 'nat/POSTROUTING').length, 1, 'POSTROUTING once, after IPVS rewrote the packet');
  t.equal(self.masquerade, true);
});

t.test('ClientIP affinity: the virtual service is persistent', async (t) => {
  const r = trace(ON, tcp(POD, '172.30.0.42', 80));
  t.equal(r.destination, '10.180.0.4:80, 10.180.0.7:80');
  t.equal(r.ipvs.persistentTimeout, 10800);
  t.match(r.ipvs.note, /persistent: a client keeps the real server first chosen for 10800 s/);
  t.ok(r.visited.includes('ipvs/LOCAL_IN: TCP/172.30.0.42:80 rr persistent 10800'));
});

t.test('NodePort on the node IP from outside: every real server, masqueraded', async (t) => {
  const r = trace(ON, tcp(EXTERNAL_CLIENT, NODE_IP, 3001));
  t.equal(r.destination, '10.180.0.1:80, 10.180.0.2:80');
  t.equal(r.masquerade, true);
  t.equal(r.ipvs.virtualService, `TCP/${NODE_IP}:3001`);
  t.match(r.ipvs.route, /is local \(a node address\): INPUT/);
  t.ok(r.visited.includes('nat/KUBE-NODE-PORT'));
});

t.test('externalTrafficPolicy Local: this node\'s endpoint only, the client address kept', async (t) => {
  const r = trace(ON, tcp(EXTERNAL_CLIENT, NODE_IP, 3003));
  t.equal(r.destination, '10.180.0.5:80');
  t.equal(r.masquerade, false);
  t.ok(r.matched.some((m) => m.startsWith('nat/KUBE-NODE-PORT:') && m.includes('KUBE-NODE-PORT-LOCAL-TCP') && m.endsWith('-j RETURN')));
  const cluster = trace(ON, tcp(POD, '172.30.0.43', 80));
  t.equal(cluster.destination, '10.180.0.5:80, 10.180.0.6:80', 'its ClusterIP follows the internal policy (Cluster)');
  const hairpin = trace(ON, tcp('10.180.0.5', '172.30.0.43', 80));
  t.equal(hairpin.masquerade, true, 'a local endpoint that may reach itself is masqueraded (KUBE-LOOP-BACK)');
});

t.test('a ping to a ClusterIP: rejected with the filter on, answered by the node with it off', async (t) => {
  const on = trace(ON, ping(POD, '172.30.0.41'));
  t.equal(on.destination, 'REJECT');
  t.ok(on.matched.some((m) => m.startsWith('filter/KUBE-IPVS-FILTER:') && m.includes('KUBE-IPVS-IPS') && m.endsWith('-j REJECT')));
  t.equal(on.ipvs.hook, null, 'IPVS never sees it');
  const off = trace(OFF, ping(POD, '172.30.0.41'));
  t.equal(off.destination, 'LOCAL');
  t.match(off.ipvs.note, /IPVS does not balance ICMP: the node takes the packet itself \(kube-ipvs0 holds 172\.30\.0\.41\)/);
  t.notOk(OFF.dump.tables.get('filter')!.chains.get('KUBE-IPVS-FILTER')!.rules.length, 'the filter chain is declared, empty');
});

t.test('a VIP port that is not a service port: REJECT with the filter on; the node\'s own socket with it off', async (t) => {
  const on = trace(ON, tcp(POD, '172.30.0.41', 22));
  t.equal(on.destination, 'REJECT');
  t.ok(on.visited.includes('filter/KUBE-IPVS-FILTER'));
  const off = trace(OFF, tcp(POD, '172.30.0.41', 22));
  t.equal(off.destination, 'LOCAL');
  t.match(off.ipvs.note, /no virtual service TCP\/172\.30\.0\.41:22/);
});

t.test('a Service without endpoints: IPVS has the virtual service but no real server, and refuses', async (t) => {
  const r = trace(ON, tcp(POD, '172.30.0.44', 80));
  t.equal(r.destination, 'REJECT');
  t.match(r.ipvs, { virtualService: 'TCP/172.30.0.44:80', realServers: [] });
  t.match(r.ipvs.note, /no real servers: IPVS answers with ICMP port unreachable/);
});

t.test('a pod address: not local, not IPVS\'s', async (t) => {
  const r = trace(ON, tcp(POD, '10.180.0.1', 80));
  t.equal(r.destination, '');
  t.equal(r.ipvs.virtualService, null);
  t.match(r.ipvs.route, /not local: FORWARD/);
  t.ok(r.visited.includes('filter/FORWARD'));
});

t.test("the node's own connection to a LB VIP whose source ranges leave it out: KUBE-IPVS-OUT-FILTER drops it", async (t) => {
  const snap = snapshot(
    [svc('ns2', 'fw', '172.30.0.60', { lbVIPs: ['1.2.3.4'], sourceRanges: ['203.0.113.0/25'] }), [ep('10.180.0.1')]],
    [svc('ns2', 'ok', '172.30.0.61', { lbVIPs: ['1.2.3.5'], sourceRanges: ['192.168.0.0/24'] }), [ep('10.180.0.2')]],
  );
  const cfg = { ...CFG, primaryIP: NODE_IP };
  const state = await ipvsNodeState(snap, cfg, {});
  const l = await readLiveRules({ runner: ipvsNodeRunner(state, NS), netns: NS }, 'ipvs', 'KUBE');
  if (l.mode !== 'ipvs') throw new Error(`read ${l.mode}`);
  t.ok(l.dump.tables.get('filter')!.chains.get('KUBE-IPVS-OUT-FILTER')!.rules.some((r) => r.ipvs?.vport?.value === 80 && r.ipvs.vproto?.value === 6), 'the rule reads back from iptables-save');
  // The node reaches a VIP on kube-ipvs0 from the VIP itself (the source the kernel picks for a local address).
  const blocked = trace(l, tcp('1.2.3.4', '1.2.3.4', 80));
  t.equal(blocked.destination, 'DROP', 'dropped in filter OUTPUT');
  t.ok(blocked.matched.some((m) => m.startsWith('filter/KUBE-IPVS-OUT-FILTER: -s 1.2.3.4')), 'by KUBE-IPVS-OUT-FILTER');
  const allowed = trace(l, tcp('1.2.3.5', '1.2.3.5', 80));
  t.equal(allowed.destination, '10.180.0.2:80', 'a range that holds the node: IPVS takes it');
  t.equal(allowed.ipvs.hook, 'LOCAL_OUT', 'on LOCAL_OUT, as a packet the node sends');
  t.equal(trace(l, tcp('203.0.113.9', '1.2.3.4', 80)).destination, '10.180.0.1:80', 'a client inside the ranges still gets through');
});
