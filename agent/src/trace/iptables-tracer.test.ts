import t from 'tap';
import { parseIPv4 } from '../../../lib/net/ip.js';
import { FakeIptables } from '../netfilter/iptables/iptables.fake.js';
import { parseSave } from '../netfilter/iptables/iptables-parse.js';
import type { Protocol } from '../proxy/types.js';
import { traceIptables } from './iptables-tracer.js';

// Hand-written rules (not from our renderer), so the tracer is tested on its own.
const RULES = `*filter
:KUBE-SERVICES - [0:0]
:KUBE-EXTERNAL-SERVICES - [0:0]
:KUBE-FORWARD - [0:0]
-A INPUT -m conntrack --ctstate NEW -j KUBE-EXTERNAL-SERVICES
-A FORWARD -j KUBE-FORWARD
-A FORWARD -m conntrack --ctstate NEW -j KUBE-SERVICES
-A FORWARD -m conntrack --ctstate NEW -j KUBE-EXTERNAL-SERVICES
-A OUTPUT -m conntrack --ctstate NEW -j KUBE-SERVICES
-A KUBE-SERVICES -m comment --comment "ns6/svc6:p80 has no endpoints" -m tcp -p tcp -d 172.30.0.46 --dport 80 -j REJECT
-A KUBE-EXTERNAL-SERVICES -m comment --comment "ns2/svc2:p80 has no local endpoints" -m addrtype --dst-type LOCAL -m tcp -p tcp --dport 3001 -j DROP
-A KUBE-FORWARD -m mark --mark 0x4000/0x4000 -j ACCEPT
COMMIT
*nat
:KUBE-SERVICES - [0:0]
:KUBE-NODEPORTS - [0:0]
:KUBE-POSTROUTING - [0:0]
:KUBE-MARK-MASQ - [0:0]
:SVC1 - [0:0]
:SVC4 - [0:0]
:SVC7 - [0:0]
:EXT3 - [0:0]
:SEP1 - [0:0]
:SEP4A - [0:0]
:SEP4B - [0:0]
:SEP7 - [0:0]
-A PREROUTING -j KUBE-SERVICES
-A OUTPUT -j KUBE-SERVICES
-A POSTROUTING -j KUBE-POSTROUTING
-A KUBE-SERVICES -m tcp -p tcp -d 172.30.0.41 --dport 80 -j SVC1
-A KUBE-SERVICES -m tcp -p tcp -d 172.30.0.44 --dport 80 -j SVC4
-A KUBE-SERVICES -m udp -p udp -d 172.30.0.47 --dport 53 -j SVC7
-A KUBE-SERVICES -m addrtype --dst-type LOCAL -j KUBE-NODEPORTS
-A KUBE-NODEPORTS -m tcp -p tcp --dport 3003 -j EXT3
-A EXT3 -j KUBE-MARK-MASQ
-A EXT3 -j SVC1
-A KUBE-MARK-MASQ -j MARK --or-mark 0x4000
-A KUBE-POSTROUTING -m mark ! --mark 0x4000/0x4000 -j RETURN
-A KUBE-POSTROUTING -j MARK --xor-mark 0x4000
-A KUBE-POSTROUTING -j MASQUERADE --random-fully
-A SVC1 ! -s 10.0.0.0/8 -j KUBE-MARK-MASQ
-A SVC1 -j SEP1
-A SEP1 -s 10.180.0.1 -j KUBE-MARK-MASQ
-A SEP1 -m tcp -p tcp -j DNAT --to-destination 10.180.0.1:80
-A SVC4 -m recent --name SEP4B --rcheck --seconds 60 --reap -j SEP4B
-A SVC4 -m statistic --mode random --probability 0.5000000000 -j SEP4A
-A SVC4 -j SEP4B
-A SEP4A -m tcp -p tcp -j DNAT --to-destination 10.180.0.4:80
-A SEP4B -m tcp -p tcp -j DNAT --to-destination 10.180.0.5:8080
-A SVC7 -j RETURN
-A SVC7 -j SEP7
-A SEP7 -m udp -p udp -j DNAT --to-destination 10.180.0.7:53
COMMIT
`;

const NODE = '192.168.0.2';

async function loaded(): Promise<FakeIptables> {
  const f = new FakeIptables();
  await f.restore(RULES, { noflush: true });
  return f;
}

function trace(f: FakeIptables, src: string, dst: string, port: number, protocol: Protocol = 'TCP') {
  return traceIptables(f.dump(), { sourceIP: parseIPv4(src), destIP: parseIPv4(dst), destPort: port, protocol }, { nodeIPs: [NODE] });
}

t.test('packet flows through hand-written rules', async (t) => {
  const f = await loaded();
  const cases: { name: string; src: string; dst: string; port: number; proto?: Protocol; dest: string; masq: boolean }[] = [
    { name: 'no match', src: '10.0.0.2', dst: '10.0.0.3', port: 80, dest: '', masq: false },
    { name: 'single endpoint, pod source: no masquerade', src: '10.0.0.2', dst: '172.30.0.41', port: 80, dest: '10.180.0.1:80', masq: false },
    { name: 'off-cluster source is marked, then masqueraded in POSTROUTING', src: '203.0.113.2', dst: '172.30.0.41', port: 80, dest: '10.180.0.1:80', masq: true },
    { name: 'hairpin: the endpoint itself', src: '10.180.0.1', dst: '172.30.0.41', port: 80, dest: '10.180.0.1:80', masq: true },
    { name: 'wrong port', src: '10.0.0.2', dst: '172.30.0.41', port: 81, dest: '', masq: false },
    { name: 'wrong protocol', src: '10.0.0.2', dst: '172.30.0.41', port: 80, proto: 'UDP', dest: '', masq: false },
    { name: 'statistic branches collect every endpoint; rcheck never matches', src: '10.0.0.2', dst: '172.30.0.44', port: 80, dest: '10.180.0.4:80, 10.180.0.5:8080', masq: false },
    { name: 'RETURN leaves the chain before the endpoint', src: '10.0.0.2', dst: '172.30.0.47', port: 53, proto: 'UDP', dest: '', masq: false },
    { name: 'NodePort on the node IP from outside', src: '203.0.113.2', dst: NODE, port: 3003, dest: '10.180.0.1:80', masq: true },
    { name: 'NodePort on localhost from the node (nat OUTPUT)', src: '127.0.0.1', dst: '127.0.0.1', port: 3003, dest: '10.180.0.1:80', masq: true },
    { name: 'REJECT in filter', src: '10.0.0.2', dst: '172.30.0.46', port: 80, dest: 'REJECT', masq: false },
    { name: 'DROP in filter INPUT for a local destination', src: '203.0.113.2', dst: NODE, port: 3001, dest: 'DROP', masq: false },
  ];
  for (const c of cases) {
    const r = trace(f, c.src, c.dst, c.port, c.proto);
    t.equal(r.destination, c.dest, `${c.name}: destination`);
    t.equal(r.masquerade, c.masq, `${c.name}: masquerade`);
  }
});

t.test('visited chains and matched rules are reported in order', async (t) => {
  const r = trace(await loaded(), '203.0.113.2', '172.30.0.41', 80);
  t.same(r.visited, ['nat/PREROUTING', 'nat/KUBE-SERVICES', 'nat/SVC1', 'nat/KUBE-MARK-MASQ', 'nat/SEP1', 'filter/FORWARD', 'filter/KUBE-FORWARD', 'nat/POSTROUTING', 'nat/KUBE-POSTROUTING']);
  t.equal(r.verdict, 'ACCEPT');
  t.match(r.matched, ['nat/PREROUTING: -j KUBE-SERVICES']);
});

t.test('the mark matters: without a marked packet POSTROUTING returns early', async (t) => {
  const f = await loaded();
  const r = trace(f, '10.0.0.2', '172.30.0.41', 80);
  t.notOk(r.masquerade);
  t.ok(r.matched.includes('nat/KUBE-POSTROUTING: -m mark ! --mark 0x4000/0x4000 -j RETURN'));
});

t.test('a DROP policy on the filter hook drops what nothing accepted', async (t) => {
  const d = parseSave('*filter\n:INPUT ACCEPT [0:0]\n:FORWARD DROP [0:0]\n:OUTPUT ACCEPT [0:0]\nCOMMIT\n');
  const r = traceIptables(d, { sourceIP: parseIPv4('10.0.0.2'), destIP: parseIPv4('10.0.0.3'), destPort: 80, protocol: 'TCP' }, { nodeIPs: [NODE] });
  t.equal(r.destination, 'DROP');
  t.equal(r.verdict, 'DROP');
});

t.test('ctstate DNAT is set after a DNAT (the martian localhost rule lets DNATed packets through)', async (t) => {
  const f = new FakeIptables();
  await f.restore(`*filter
:FW - [0:0]
-A OUTPUT -j FW
-A FW -d 127.0.0.0/8 ! -s 127.0.0.0/8 -m conntrack ! --ctstate RELATED,ESTABLISHED,DNAT -j DROP
COMMIT
*nat
:S - [0:0]
-A OUTPUT -j S
-A S -m tcp -p tcp -d 127.0.0.1 --dport 3003 -j DNAT --to-destination 10.180.0.1:80
COMMIT
`, { noflush: true });
  t.equal(trace(f, NODE, '127.0.0.1', 3003).destination, '10.180.0.1:80');
  t.equal(trace(f, NODE, '127.0.0.1', 3004).destination, 'DROP', 'not DNATed: a martian to localhost is dropped');
});
