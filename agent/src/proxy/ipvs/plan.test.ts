import t from 'tap';
import { ErrorCode } from '../../../../lib/errors/errors.js';
import { parseIPv4 } from '../../../../lib/net/ip.js';
import { parseRestore } from '../../netfilter/iptables/iptables-parse.js';
import { CFG, ep, NODE_IP, snapshot, svc } from '../test-fixtures.js';
import { ipvsNames } from './names.js';
import { ipvsSysctls, planIpvs } from './plan.js';
import { renderIpvsIptables } from './render.js';

const SNAP = snapshot(
  [svc('ns1', 'svc1', '172.30.0.41', { affinity: 10800 }), [ep('10.180.0.1'), ep('10.180.0.2', { local: true }), ep('10.180.0.3', { ready: false, serving: true, terminating: true })]],
  [svc('ns2', 'np', '172.30.0.42', { nodePort: 30080, etp: 'Local', protocol: 'UDP', port: 53 }), [ep('10.180.1.1:5353', { local: true }), ep('10.180.1.2:5353')]],
  [svc('ns3', 'lb', '172.30.0.43', { lbVIPs: ['1.2.3.4'], sourceRanges: ['203.0.113.0/25'], nodePort: 30443, healthCheckNodePort: 30999, etp: 'Local', externalIPs: ['192.168.99.11'] }), [ep('10.180.2.1', { local: true })]],
);
const NODE = { ...CFG, primaryIP: NODE_IP };

t.test('plan: addresses, virtual services with persistence, weights, policies', async (t) => {
  const p = planIpvs(SNAP, NODE);
  t.same(p.addresses, ['1.2.3.4/32', '172.30.0.41/32', '172.30.0.42/32', '172.30.0.43/32', '192.168.99.11/32'], 'every ClusterIP, external IP and LB VIP as /32');
  t.equal(p.device, 'kube-ipvs0');
  const line = (k: string) => {
    const s = p.services.get(k);
    return s ? `${s.kind} ${s.vs.scheduler} p${s.vs.persistentTimeout} ${s.dests.map((d) => `${d.address}:${d.port}/${d.forward}/w${d.weight}`).join(' ')}` : null;
  };
  t.equal(line('TCP/172.30.0.41:80'), 'cluster-ip rr p10800 10.180.0.1:80/masq/w1 10.180.0.2:80/masq/w1 10.180.0.3:80/masq/w0', 'affinity is persistence; the terminating endpoint is kept at weight 0');
  t.equal(line('UDP/172.30.0.42:53'), 'cluster-ip rr p0 10.180.1.1:5353/masq/w1 10.180.1.2:5353/masq/w1', 'the ClusterIP follows the internal policy (Cluster)');
  t.equal(line('UDP/192.168.0.2:30080'), 'node-port rr p0 10.180.1.1:5353/masq/w1', 'the NodePort with externalTrafficPolicy Local: only the local endpoint');
  t.equal(line('TCP/1.2.3.4:80'), 'load-balancer rr p0 10.180.2.1:80/masq/w1');
  t.equal(line('TCP/192.168.99.11:80'), 'external-ip rr p0 10.180.2.1:80/masq/w1');
  t.equal(line('TCP/192.168.0.2:30443'), 'node-port rr p0 10.180.2.1:80/masq/w1');
  t.equal(p.services.size, 7);
  t.same(p.byService.get('ns3/lb:p80'), ['TCP/172.30.0.43:80', 'TCP/192.168.99.11:80', 'TCP/1.2.3.4:80', 'TCP/192.168.0.2:30443']);
  t.same(p.conflicts, []);
});

t.test('plan: the sets, as `ipset save` prints their members', async (t) => {
  const p = planIpvs(SNAP, NODE);
  const m = (id: Parameters<typeof p.sets.get>[0]) => [...p.sets.get(id)!.entries];
  t.same(m('clusterIP'), ['172.30.0.41,tcp:80', '172.30.0.42,udp:53', '172.30.0.43,tcp:80']);
  t.same(m('loopBack'), ['10.180.0.2,tcp:80,10.180.0.2', '10.180.1.1,udp:5353,10.180.1.1', '10.180.2.1,tcp:80,10.180.2.1'], 'hairpin entries for local endpoints only');
  t.same(m('externalIP'), []);
  t.same(m('externalIPLocal'), ['192.168.99.11,tcp:80']);
  t.same(m('loadBalancer'), ['1.2.3.4,tcp:80']);
  t.same(m('loadBalancerLocal'), ['1.2.3.4,tcp:80']);
  t.same(m('loadBalancerFW'), ['1.2.3.4,tcp:80']);
  t.same(m('loadBalancerSourceCIDR'), ['1.2.3.4,tcp:80,203.0.113.0/25']);
  t.same(m('loadBalancerSourceIP'), [], 'the node is outside the source ranges');
  t.same(p.noNodeAccess, [{ ip: '1.2.3.4', protocol: 'tcp', port: 80 }], 'so its own connections to the VIP are to be dropped (KUBE-IPVS-OUT-FILTER)');
  t.same(m('nodePortTCP'), ['30443']);
  t.same(m('nodePortLocalTCP'), ['30443']);
  t.same(m('nodePortUDP'), ['30080']);
  t.same(m('nodePortLocalUDP'), ['30080']);
  t.same(m('healthCheckNodePort'), ['30999']);
  t.same(m('ipvsIPs'), ['1.2.3.4', '172.30.0.41', '172.30.0.42', '172.30.0.43', '192.168.99.11']);
  t.equal(p.sets.get('nodePortTCP')!.type, 'bitmap:port');
  t.equal(p.sets.get('loopBack')!.type, 'hash:ip,port,ip');
  t.equal(p.sets.get('loadBalancerSourceCIDR')!.type, 'hash:ip,port,net');
});

t.test('plan: scheduler option, source range holding the node, SCTP NodePorts, nodePortAddresses, conflicts', async (t) => {
  const snap = snapshot(
    [svc('a', 'lb', '172.30.0.50', { lbVIPs: ['1.2.3.5'], sourceRanges: ['192.168.0.0/24'] }), [ep('10.180.0.9')]],
    [svc('a', 'sctp', '172.30.0.51', { protocol: 'SCTP', nodePort: 30132 }), [ep('10.180.0.8')]],
    [svc('b', 'x1', '172.30.0.52', { externalIPs: ['192.168.99.20'] }), []],
    [svc('b', 'x2', '172.30.0.53', { externalIPs: ['192.168.99.20'] }), []],
  );
  const p = planIpvs(snap, { ...NODE, nodeIPs: [NODE_IP, parseIPv4('10.0.0.1')], nodePortAddresses: ['192.168.0.0/16' as never] }, { scheduler: 'mh' });
  t.ok([...p.services.values()].every((s) => s.vs.scheduler === 'mh'), 'the configured scheduler everywhere');
  t.same([...p.sets.get('loadBalancerSourceIP')!.entries], ['1.2.3.5,tcp:80,1.2.3.5'], 'a range holding the node lets the node reach the VIP (source = the VIP)');
  t.same(p.noNodeAccess, [], 'and nothing for KUBE-IPVS-OUT-FILTER');
  t.same([...p.sets.get('nodePortSCTP')!.entries], ['192.168.0.2,sctp:30132'], 'SCTP NodePorts by ip,port, only on the nodePortAddresses');
  t.notOk(p.services.has('SCTP/10.0.0.1:30132'), 'no NodePort on an address outside nodePortAddresses');
  t.same(p.conflicts, ['b/x2:p80: TCP/192.168.99.20:80 already served for b/x1:p80']);
  t.same(p.services.get('TCP/192.168.99.20:80')!.dests, [], 'a service without endpoints still has its virtual service');
});

t.test('names: the prefix is limited by the ipset name length', async (t) => {
  t.equal(ipvsNames('NN').sets.loadBalancerSourceCIDR, 'NN-LOAD-BALANCER-SOURCE-CIDR');
  t.throws(() => ipvsNames('ABCDEFG'), { code: ErrorCode.InvalidConfig, message: /too long for IPVS mode/ });
});

t.test('sysctls: conn_reuse_mode only on 4.1 to 5.8 kernels; strict ARP', async (t) => {
  t.same(ipvsSysctls('6.1.0-57-amd64', false), [['net.ipv4.vs.conntrack', '1'], ['net.ipv4.vs.expire_nodest_conn', '1'], ['net.ipv4.vs.expire_quiescent_template', '1']]);
  t.same(ipvsSysctls('5.4.0-100-generic', true).map(([k]) => k), ['net.ipv4.vs.conntrack', 'net.ipv4.vs.conn_reuse_mode', 'net.ipv4.vs.expire_nodest_conn', 'net.ipv4.vs.expire_quiescent_template', 'net.ipv4.conf.all.arp_ignore', 'net.ipv4.conf.all.arp_announce']);
});

const GOLDEN = `*filter
:KUBE-FORWARD - [0:0]
:KUBE-NODE-PORT - [0:0]
:KUBE-PROXY-FIREWALL - [0:0]
:KUBE-SOURCE-RANGES-FIREWALL - [0:0]
:KUBE-IPVS-FILTER - [0:0]
:KUBE-IPVS-OUT-FILTER - [0:0]
:KUBE-PROXY-CANARY - [0:0]
-A KUBE-PROXY-FIREWALL -m comment --comment "Kubernetes service load balancer ip + port for load balancer with sourceRange" -m set --match-set KUBE-LOAD-BALANCER-FW dst,dst -j KUBE-SOURCE-RANGES-FIREWALL
-A KUBE-SOURCE-RANGES-FIREWALL -m comment --comment "Kubernetes service load balancer ip + port + source cidr for packet filter purpose" -m set --match-set KUBE-LOAD-BALANCER-SOURCE-CIDR dst,dst,src -j RETURN
-A KUBE-SOURCE-RANGES-FIREWALL -j DROP
-A KUBE-IPVS-OUT-FILTER -s 1.2.3.4 -m ipvs --vaddr 1.2.3.4 --vproto tcp --vport 80 -j DROP
-A KUBE-FORWARD -m comment --comment "kubernetes forwarding rules" -m mark --mark 0x4000/0x4000 -j ACCEPT
-A KUBE-FORWARD -m comment --comment "kubernetes forwarding conntrack rule" -m conntrack --ctstate RELATED,ESTABLISHED -j ACCEPT
-A KUBE-NODE-PORT -m comment --comment "Kubernetes health check node port" -m set --match-set KUBE-HEALTH-CHECK-NODE-PORT dst -j ACCEPT
-A KUBE-IPVS-FILTER -m set --match-set KUBE-LOAD-BALANCER dst,dst -j RETURN
-A KUBE-IPVS-FILTER -m set --match-set KUBE-CLUSTER-IP dst,dst -j RETURN
-A KUBE-IPVS-FILTER -m set --match-set KUBE-EXTERNAL-IP dst,dst -j RETURN
-A KUBE-IPVS-FILTER -m set --match-set KUBE-EXTERNAL-IP-LOCAL dst,dst -j RETURN
-A KUBE-IPVS-FILTER -m set --match-set KUBE-HEALTH-CHECK-NODE-PORT dst -j RETURN
-A KUBE-IPVS-FILTER -m conntrack --ctstate NEW -m set --match-set KUBE-IPVS-IPS dst -j REJECT
COMMIT
*nat
:KUBE-SERVICES - [0:0]
:KUBE-POSTROUTING - [0:0]
:KUBE-NODE-PORT - [0:0]
:KUBE-LOAD-BALANCER - [0:0]
:KUBE-MARK-MASQ - [0:0]
:KUBE-PROXY-CANARY - [0:0]
-A KUBE-SERVICES -s 127.0.0.0/8 -j RETURN
-A KUBE-POSTROUTING -m comment --comment "Kubernetes endpoints dst ip:port, source ip for solving hairpin purpose" -m set --match-set KUBE-LOOP-BACK dst,dst,src -j MASQUERADE
-A KUBE-SERVICES -m comment --comment "Kubernetes service lb portal" -m set --match-set KUBE-LOAD-BALANCER dst,dst -j KUBE-LOAD-BALANCER
-A KUBE-LOAD-BALANCER -m comment --comment "Kubernetes service load balancer ip + port with externalTrafficPolicy=local" -m set --match-set KUBE-LOAD-BALANCER-LOCAL dst,dst -j RETURN
-A KUBE-NODE-PORT -p tcp -m comment --comment "Kubernetes nodeport TCP port with externalTrafficPolicy=local" -m set --match-set KUBE-NODE-PORT-LOCAL-TCP dst -j RETURN
-A KUBE-NODE-PORT -p tcp -m comment --comment "Kubernetes nodeport TCP port for masquerade purpose" -m set --match-set KUBE-NODE-PORT-TCP dst -j KUBE-MARK-MASQ
-A KUBE-NODE-PORT -p udp -m comment --comment "Kubernetes nodeport UDP port with externalTrafficPolicy=local" -m set --match-set KUBE-NODE-PORT-LOCAL-UDP dst -j RETURN
-A KUBE-NODE-PORT -p udp -m comment --comment "Kubernetes nodeport UDP port for masquerade purpose" -m set --match-set KUBE-NODE-PORT-UDP dst -j KUBE-MARK-MASQ
-A KUBE-SERVICES -m comment --comment "Kubernetes service cluster ip + port for masquerade purpose" -m set --match-set KUBE-CLUSTER-IP dst,dst ! -s 10.0.0.0/8 -j KUBE-MARK-MASQ
-A KUBE-SERVICES -m comment --comment "Kubernetes service external ip + port with externalTrafficPolicy=local" -m set --match-set KUBE-EXTERNAL-IP-LOCAL dst,dst -m addrtype --dst-type LOCAL -j ACCEPT
-A KUBE-SERVICES -m addrtype --dst-type LOCAL -j KUBE-NODE-PORT
-A KUBE-LOAD-BALANCER -j KUBE-MARK-MASQ
-A KUBE-SERVICES -m set --match-set KUBE-CLUSTER-IP dst,dst -j ACCEPT
-A KUBE-SERVICES -m set --match-set KUBE-LOAD-BALANCER dst,dst -j ACCEPT
-A KUBE-POSTROUTING -m mark ! --mark 0x4000/0x4000 -j RETURN
-A KUBE-POSTROUTING -j MARK --xor-mark 0x4000
-A KUBE-POSTROUTING -m comment --comment "kubernetes service traffic requiring SNAT" -j MASQUERADE --random-fully
-A KUBE-MARK-MASQ -j MARK --or-mark 0x4000
COMMIT
`;

t.test('render: the iptables rules, golden', async (t) => {
  const r = renderIpvsIptables(planIpvs(SNAP, NODE), CFG);
  t.equal(r.text, GOLDEN);
  t.equal(r.ruleCount, 31);
  t.doesNotThrow(() => parseRestore(r.text), 'iptables-restore input the parser accepts');
});

t.test('render: KUBE-IPVS-OUT-FILTER drops the node\'s own connections to a VIP whose source ranges leave the node out', async (t) => {
  const r = renderIpvsIptables(planIpvs(SNAP, NODE), CFG);
  const out = r.text.split('\n').filter((l) => l.startsWith('-A KUBE-IPVS-OUT-FILTER'));
  t.same(out, ['-A KUBE-IPVS-OUT-FILTER -s 1.2.3.4 -m ipvs --vaddr 1.2.3.4 --vproto tcp --vport 80 -j DROP'], "kube-proxy's rule, one per VIP:port");
  const { FakeIptables } = await import('../../netfilter/iptables/iptables.fake.js');
  const ipt = new FakeIptables();
  await ipt.restore(r.text, { noflush: true });
  t.match(await ipt.save('filter'), /-A KUBE-IPVS-OUT-FILTER -s 1\.2\.3\.4(\/32)? -m ipvs --vaddr 1\.2\.3\.4(\/32)? --vproto tcp --vport 80 -j DROP/, 'the restore takes it');
  const allowed = planIpvs(snapshot([svc('a', 'lb', '172.30.0.50', { lbVIPs: ['1.2.3.5'], sourceRanges: ['192.168.0.0/24'] }), [ep('10.180.0.9')]]), NODE);
  t.notMatch(renderIpvsIptables(allowed, CFG).text, /-A KUBE-IPVS-OUT-FILTER/, 'a range holding the node: no rule');
});

t.test('render: --ipvs-filter=false leaves KUBE-IPVS-FILTER empty; no cluster CIDR masquerades by source VIP', async (t) => {
  const r = renderIpvsIptables(planIpvs(SNAP, NODE, { filter: false }), { ...CFG, clusterCIDR: null });
  t.notMatch(r.text, /-A KUBE-IPVS-FILTER/);
  t.match(r.text, /:KUBE-IPVS-FILTER - \[0:0\]/, 'the chain is still declared (its jump stays valid)');
  t.match(r.text, /--match-set KUBE-CLUSTER-IP src,dst -j KUBE-MARK-MASQ/);
});

t.test('packets through the rules and sets (iptables tracer with ipset membership): the ping to a ClusterIP', async (t) => {
  const { FakeIptables } = await import('../../netfilter/iptables/iptables.fake.js');
  const { traceIptables } = await import('../../trace/iptables-tracer.js');
  const trace = async (filter: boolean, pkt: Parameters<typeof traceIptables>[1]) => {
    const plan = planIpvs(SNAP, NODE, { filter });
    const ipt = new FakeIptables();
    await ipt.restore(renderIpvsIptables(plan, CFG).text, { noflush: true });
    for (const j of (await import('./render.js')).ipvsBuiltinJumps(plan.names)) await ipt.ensureJump(j.table, j.builtinChain, j.target, j.comment, j.position);
    const ipsets = new Map([...plan.sets.values()].map((s) => [s.name, { name: s.name, type: s.type, entries: s.entries }]));
    return traceIptables(ipt.dump(), pkt, { nodeIPs: [NODE_IP], localAddrs: plan.addresses.map((a) => a.slice(0, -3)), ipsets });
  };
  const pod = parseIPv4('10.180.0.7');
  t.equal((await trace(true, { sourceIP: pod, protocol: 'ICMP', destIP: parseIPv4('172.30.0.41') })).verdict, 'REJECT', 'KUBE-IPVS-FILTER rejects a ping to a VIP');
  t.equal((await trace(false, { sourceIP: pod, protocol: 'ICMP', destIP: parseIPv4('172.30.0.41') })).verdict, 'ACCEPT', 'without the filter the node answers it');
  t.equal((await trace(true, { sourceIP: pod, protocol: 'TCP', destIP: parseIPv4('172.30.0.41'), destPort: 80 })).verdict, 'ACCEPT', 'the service port passes');
  t.equal((await trace(true, { sourceIP: pod, protocol: 'TCP', destIP: parseIPv4('172.30.0.41'), destPort: 22 })).verdict, 'REJECT', 'another port on the VIP is rejected');
  const ext = await trace(true, { sourceIP: parseIPv4('203.0.113.9'), protocol: 'TCP', destIP: parseIPv4('172.30.0.41'), destPort: 80 });
  // The iptables tracer stops before POSTROUTING for a local destination; IPVS forwards from LOCAL_IN, which
  // the IPVS tracer (not written yet) must model. What is checked here: the masquerade mark is set or not.
  t.ok(ext.matched.some((m) => m.startsWith('nat/KUBE-MARK-MASQ')), 'ClusterIP traffic from outside the cluster CIDR is marked for masquerade');
  const fromPod = await trace(true, { sourceIP: pod, protocol: 'TCP', destIP: parseIPv4('172.30.0.41'), destPort: 80 });
  t.notOk(fromPod.matched.some((m) => m.startsWith('nat/KUBE-MARK-MASQ')), 'from a pod it is not marked: it keeps its source');
});
