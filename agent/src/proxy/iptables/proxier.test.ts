import t, { type Test } from 'tap';
import { ErrorCode, NodenetError } from '../../../../lib/errors/errors.js';
import { silentLogger } from '../../../../lib/log/log.js';
import { parseCidr, parseIPv4 } from '../../../../lib/net/ip.js';
import { FakeIptables } from '../../netfilter/iptables/iptables.fake.js';
import { formatDump, getChain } from '../../netfilter/iptables/iptables-parse.js';
import { traceIptables } from '../../trace/iptables-tracer.js';
import type { Protocol, ProxySnapshot } from '../types.js';
import { EXTERNAL_CLIENT, NODE_IP, ep, nodeConfig, snapshot, svc } from '../test-fixtures.js';
import { IptablesBackend } from './proxier.js';

function setup(over: Parameters<typeof nodeConfig>[0] = {}): { f: FakeIptables; b: IptablesBackend } {
  const f = new FakeIptables();
  return { f, b: new IptablesBackend({ iptables: f, nodeConfig: nodeConfig(over), log: silentLogger() }) };
}

interface Flow {
  name: string;
  src: string;
  dst: string;
  port: number;
  proto?: Protocol;
  dest: string;
  masq: boolean;
}

function flows(t: Test, f: FakeIptables, cases: readonly Flow[]): void {
  const dump = f.dump();
  for (const c of cases) {
    const r = traceIptables(dump, { sourceIP: parseIPv4(c.src), destIP: parseIPv4(c.dst), destPort: c.port, protocol: c.proto ?? 'TCP' }, { nodeIPs: [NODE_IP] });
    t.equal(r.destination, c.dest, `${c.name}: destination`);
    t.equal(r.masquerade, c.masq, `${c.name}: masquerade`);
  }
}

const FULL = { full: true } as const;
const POD = '10.0.0.2';

async function synced(snap: ProxySnapshot, over: Parameters<typeof nodeConfig>[0] = {}): Promise<FakeIptables> {
  const { f, b } = setup(over);
  await b.sync(snap, FULL);
  return f;
}

t.test('packet flows: ClusterIP with 1 and 3 endpoints, and no endpoints', async (t) => {
  const f = await synced(
    snapshot(
      [svc('ns1', 'svc1', '172.30.0.41'), [ep('10.180.0.1')]],
      [svc('ns2', 'svc2', '172.30.0.42'), [ep('10.180.0.2'), ep('10.180.0.3'), ep('10.180.0.4')]],
      [svc('ns6', 'svc6', '172.30.0.46'), []],
    ),
  );
  flows(t, f, [
    { name: 'pod to 1-endpoint ClusterIP', src: POD, dst: '172.30.0.41', port: 80, dest: '10.180.0.1:80', masq: false },
    { name: 'pod to 3-endpoint ClusterIP', src: POD, dst: '172.30.0.42', port: 80, dest: '10.180.0.2:80, 10.180.0.3:80, 10.180.0.4:80', masq: false },
    { name: 'off-cluster client to ClusterIP is masqueraded', src: EXTERNAL_CLIENT, dst: '172.30.0.41', port: 80, dest: '10.180.0.1:80', masq: true },
    { name: 'node to ClusterIP (nat OUTPUT) is masqueraded', src: NODE_IP, dst: '172.30.0.41', port: 80, dest: '10.180.0.1:80', masq: true },
    { name: 'wrong port', src: POD, dst: '172.30.0.41', port: 81, dest: '', masq: false },
    { name: 'UDP to a TCP service', src: POD, dst: '172.30.0.41', port: 80, proto: 'UDP', dest: '', masq: false },
    { name: 'no endpoints: REJECT', src: POD, dst: '172.30.0.46', port: 80, dest: 'REJECT', masq: false },
    { name: 'no endpoints, from the node: REJECT', src: NODE_IP, dst: '172.30.0.46', port: 80, dest: 'REJECT', masq: false },
  ]);
});

t.test('packet flows: hairpin, affinity, named ports', async (t) => {
  const f = await synced(
    snapshot(
      [svc('ns1', 'svc1', '172.30.0.41', { affinity: 10800 }), [ep('10.180.0.1'), ep('10.180.0.2')]],
      [svc('ns1', 'web', '172.30.0.43', { portName: 'http', port: 80 }), [ep('10.180.0.5', { port: 8080 })]],
      [svc('ns1', 'web', '172.30.0.43', { portName: 'https', port: 443 }), [ep('10.180.0.5', { port: 8443 })]],
      [svc('ns1', 'dns', '172.30.0.10', { portName: '', port: 53, protocol: 'UDP' }), [ep('10.180.0.9', { port: 53 })]],
    ),
  );
  flows(t, f, [
    { name: 'affinity service, first packet: any endpoint', src: POD, dst: '172.30.0.41', port: 80, dest: '10.180.0.1:80, 10.180.0.2:80', masq: false },
    { name: 'hairpin: an endpoint reaching its own Service is masqueraded', src: '10.180.0.1', dst: '172.30.0.41', port: 80, dest: '10.180.0.1:80, 10.180.0.2:80', masq: true },
    { name: 'named port http → targetPort 8080', src: POD, dst: '172.30.0.43', port: 80, dest: '10.180.0.5:8080', masq: false },
    { name: 'named port https → targetPort 8443', src: POD, dst: '172.30.0.43', port: 443, dest: '10.180.0.5:8443', masq: false },
    { name: 'unnamed UDP port', src: POD, dst: '172.30.0.10', port: 53, proto: 'UDP', dest: '10.180.0.9:53', masq: false },
  ]);
});

t.test('packet flows: NodePort with Cluster and Local policy', async (t) => {
  const f = await synced(
    snapshot(
      [svc('ns1', 'cluster', '172.30.0.41', { nodePort: 30001 }), [ep('10.180.0.1'), ep('10.180.0.2', { node: 'node1' })]],
      [svc('ns1', 'local', '172.30.0.42', { nodePort: 30002, etp: 'Local' }), [ep('10.180.0.3'), ep('10.180.0.4', { node: 'node1' })]],
      [svc('ns1', 'nolocal', '172.30.0.43', { nodePort: 30003, etp: 'Local', externalIPs: ['192.168.99.3'] }), [ep('10.180.0.5')]],
      [svc('ns1', 'empty', '172.30.0.44', { nodePort: 30004 }), []],
    ),
  );
  flows(t, f, [
    { name: 'Cluster: external client to NodePort, any endpoint, masqueraded', src: EXTERNAL_CLIENT, dst: NODE_IP, port: 30001, dest: '10.180.0.1:80, 10.180.0.2:80', masq: true },
    { name: 'Cluster: NodePort on localhost from the node', src: '127.0.0.1', dst: '127.0.0.1', port: 30001, dest: '10.180.0.1:80, 10.180.0.2:80', masq: true },
    { name: 'Local: external client reaches only the local endpoint, source kept', src: EXTERNAL_CLIENT, dst: NODE_IP, port: 30002, dest: '10.180.0.4:80', masq: false },
    { name: 'Local: a pod short-circuits to all endpoints', src: POD, dst: NODE_IP, port: 30002, dest: '10.180.0.3:80, 10.180.0.4:80', masq: false },
    { name: 'Local: the node short-circuits to all endpoints, masqueraded', src: NODE_IP, dst: NODE_IP, port: 30002, dest: '10.180.0.3:80, 10.180.0.4:80', masq: true },
    { name: 'Local without local endpoints: external client dropped', src: EXTERNAL_CLIENT, dst: NODE_IP, port: 30003, dest: 'DROP', masq: false },
    { name: 'Local without local endpoints: external IP from outside dropped', src: EXTERNAL_CLIENT, dst: '192.168.99.3', port: 80, dest: 'DROP', masq: false },
    { name: 'Local without local endpoints: a pod still gets through', src: POD, dst: NODE_IP, port: 30003, dest: '10.180.0.5:80', masq: false },
    { name: 'Local without local endpoints: ClusterIP unaffected', src: POD, dst: '172.30.0.43', port: 80, dest: '10.180.0.5:80', masq: false },
    { name: 'no endpoints: NodePort rejected', src: EXTERNAL_CLIENT, dst: NODE_IP, port: 30004, dest: 'REJECT', masq: false },
    { name: 'an unused port on the node is left alone', src: EXTERNAL_CLIENT, dst: NODE_IP, port: 30099, dest: '', masq: false },
  ]);
});

t.test('packet flows: internalTrafficPolicy Local and terminating endpoints', async (t) => {
  const f = await synced(
    snapshot(
      [svc('ns1', 'itp', '172.30.0.41', { itp: 'Local' }), [ep('10.180.0.1'), ep('10.180.0.2', { node: 'node1' })]],
      [svc('ns1', 'itpnone', '172.30.0.42', { itp: 'Local' }), [ep('10.180.0.3')]],
      [svc('ns1', 'term', '172.30.0.43'), [ep('10.180.0.4', { ready: false, serving: true, terminating: true }), ep('10.180.0.5', { ready: false, serving: false, terminating: true })]],
      [svc('ns1', 'mixed', '172.30.0.44'), [ep('10.180.0.6', { ready: false, serving: true, terminating: true }), ep('10.180.0.7')]],
    ),
  );
  flows(t, f, [
    { name: 'ITP Local: only the local endpoint', src: POD, dst: '172.30.0.41', port: 80, dest: '10.180.0.2:80', masq: false },
    { name: 'ITP Local with no local endpoint: DROP (not REJECT)', src: POD, dst: '172.30.0.42', port: 80, dest: 'DROP', masq: false },
    { name: 'no ready endpoint: the serving terminating one is used', src: POD, dst: '172.30.0.43', port: 80, dest: '10.180.0.4:80', masq: false },
    { name: 'a ready endpoint exists: the terminating one is not used', src: POD, dst: '172.30.0.44', port: 80, dest: '10.180.0.7:80', masq: false },
  ]);
});

t.test('packet flows: LoadBalancer VIP, source ranges, externalTrafficPolicy Local, health check port', async (t) => {
  const VIP = '1.2.3.4';
  const f = await synced(
    snapshot(
      // Source ranges: the external client's /25 and the node's own /24; endpoints: one here, one elsewhere.
      [svc('ns5', 'svc5', '172.30.0.45', { nodePort: 3002, lbVIPs: [VIP], sourceRanges: ['203.0.113.0/25', '192.168.0.0/24'], etp: 'Local', healthCheckNodePort: 30000 }), [ep('10.180.0.5', { local: true }), ep('10.180.0.6')]],
      [svc('ns6', 'svc6', '172.30.0.46', { lbVIPs: ['1.2.3.6'] }), [ep('10.180.0.6')]],
    ),
    { primaryIP: NODE_IP },
  );
  flows(t, f, [
    { name: 'allowed source to the VIP: local endpoint only, source kept', src: EXTERNAL_CLIENT, dst: VIP, port: 80, dest: '10.180.0.5:80', masq: false },
    { name: 'source outside the ranges: dropped', src: '203.0.113.200', dst: VIP, port: 80, dest: 'DROP', masq: false },
    { name: 'a pod outside the ranges: dropped too (as kube-proxy)', src: POD, dst: VIP, port: 80, dest: 'DROP', masq: false },
    { name: 'the node (in a range): short-circuit to every endpoint, masqueraded', src: NODE_IP, dst: VIP, port: 80, dest: '10.180.0.5:80, 10.180.0.6:80', masq: true },
    { name: 'NodePorts are not subject to the source ranges', src: '203.0.113.200', dst: NODE_IP, port: 3002, dest: '10.180.0.5:80', masq: false },
    { name: 'the VIP on another port', src: EXTERNAL_CLIENT, dst: VIP, port: 81, dest: '', masq: false },
    { name: 'health check port accepted', src: '203.0.113.200', dst: NODE_IP, port: 30000, dest: 'ACCEPT', masq: false },
    { name: 'no ranges: anyone, masqueraded (Cluster policy)', src: '203.0.113.200', dst: '1.2.3.6', port: 80, dest: '10.180.0.6:80', masq: true },
  ]);
});

t.test('packet flows: nodePortAddresses picks which local addresses serve NodePorts', async (t) => {
  const BRIDGE = '10.0.0.1'; // a local address that is not the primary one (a bridge's)
  const snap = snapshot([svc('ns1', 'svc1', '172.30.0.41', { nodePort: 30080 }), [ep('10.180.0.1')]]);
  const trace = (f: FakeIptables, dst: string) =>
    traceIptables(f.dump(), { sourceIP: EXTERNAL_CLIENT, destIP: parseIPv4(dst), destPort: 30080, protocol: 'TCP' }, { nodeIPs: [NODE_IP], localAddrs: [BRIDGE] }).destination;
  const all = await synced(snap);
  t.equal(trace(all, NODE_IP), '10.180.0.1:80', 'default: the node IP');
  t.equal(trace(all, BRIDGE), '10.180.0.1:80', 'default: every local address, the bridge too');
  t.equal(trace(all, '127.0.0.1'), '10.180.0.1:80', 'default: 127.0.0.1 too (route_localnet)');
  const primary = await synced(snap, { nodePortAddresses: [parseCidr(`${NODE_IP}/32`).cidr] });
  t.equal(trace(primary, NODE_IP), '10.180.0.1:80', 'primary: the node IP');
  t.equal(trace(primary, BRIDGE), '', 'primary: not the bridge address');
  t.equal(trace(primary, '127.0.0.1'), 'DROP', 'primary: not localhost (not DNATed, so the martian-localhost rule drops it)');
  const wide = await synced(snap, { nodePortAddresses: [parseCidr('10.0.0.0/8').cidr] });
  t.equal(trace(wide, BRIDGE), '10.180.0.1:80', 'a CIDR: its local addresses');
  t.equal(trace(wide, NODE_IP), '', 'a CIDR: not the addresses outside it');
});

t.test('a full sync installs the jumps once; re-syncing is idempotent', async (t) => {
  const { f, b } = setup();
  const snap = snapshot([svc('ns1', 'svc1', '172.30.0.41'), [ep('10.180.0.1')]]);
  await b.sync(snap, FULL);
  t.equal(b.lastSync?.jumpsInserted, 14);
  const pre = getChain(f.dump(), 'nat', 'PREROUTING')!.rules.map((r) => r.args);
  t.same(pre, ['-m comment --comment "kubernetes service portals" -j KUBE-SERVICES']);
  const fwd = getChain(f.dump(), 'filter', 'FORWARD')!.rules.map((r) => r.args);
  t.same(fwd, [
    '-m conntrack --ctstate NEW -m comment --comment "kubernetes load balancer firewall" -j KUBE-PROXY-FIREWALL',
    '-m comment --comment "kubernetes forwarding rules" -j KUBE-FORWARD',
    '-m conntrack --ctstate NEW -m comment --comment "kubernetes service portals" -j KUBE-SERVICES',
    '-m conntrack --ctstate NEW -m comment --comment "kubernetes externally-visible service portals" -j KUBE-EXTERNAL-SERVICES',
  ]);
  const input = getChain(f.dump(), 'filter', 'INPUT')!.rules.map((r) => r.args);
  t.same(input, [
    '-m conntrack --ctstate NEW -m comment --comment "kubernetes load balancer firewall" -j KUBE-PROXY-FIREWALL',
    '-j KUBE-FIREWALL',
    '-m comment --comment "kubernetes health check service ports" -j KUBE-NODEPORTS',
    '-m conntrack --ctstate NEW -m comment --comment "kubernetes externally-visible service portals" -j KUBE-EXTERNAL-SERVICES',
  ], 'INPUT: the load-balancer firewall first, then the health check ports before the external services');
  t.equal(f.calls.restore, 1, 'the jumps went in with the ruleset: one restore');
  t.equal(f.calls.ensureJumps, 0, 'no separate jump check');
  t.equal(f.calls.save, 2, 'one iptables-save each of nat and filter');
  t.match(f.restores[0]!, /-I FORWARD 1 -m conntrack --ctstate NEW -m comment --comment "kubernetes load balancer firewall" -j KUBE-PROXY-FIREWALL\nCOMMIT\n\*nat\n/, 'filter jumps last in their block');
  t.match(f.restores[0]!, /-I POSTROUTING 1 -m comment --comment "kubernetes postrouting rules" -j KUBE-POSTROUTING\nCOMMIT\n\*mangle\n/, 'nat jumps last in theirs');
  const before = formatDump(f.dump());
  await b.sync(snap, FULL);
  t.equal(b.lastSync?.jumpsInserted, 0);
  t.notMatch(f.restores.at(-1)!, / -I (INPUT|FORWARD|OUTPUT|PREROUTING|POSTROUTING) /, 'nothing inserted the second time');
  t.equal(formatDump(f.dump()), before, 'a second full sync of the same snapshot changes nothing');
  t.same([...b.appliedChains!].sort(), ['KUBE-SEP-SXIVWICOYRO3J4NJ', 'KUBE-SVC-XPGD46QRK7WJZT7O']);
});

t.test('partial sync rewrites only changed Services and deletes their stale chains', async (t) => {
  const { f, b } = setup();
  const s1 = svc('ns1', 'svc1', '172.30.0.41');
  const s2 = svc('ns2', 'svc2', '172.30.0.42');
  const s3 = svc('ns3', 'svc3', '172.30.0.43');
  await b.sync(snapshot([s1, [ep('10.180.0.1')]], [s2, [ep('10.180.0.2')]], [s3, [ep('10.180.0.3')]]), FULL);
  const listsBefore = f.calls.listChains;
  const savesBefore = f.calls.save;
  const jumpsBefore = f.calls.ensureJumps;
  // svc2's endpoint moves, svc3 is deleted.
  await b.sync(snapshot([s1, [ep('10.180.0.1')]], [s2, [ep('10.180.0.9')]]), { full: false, changed: new Set(['ns2/svc2', 'ns3/svc3']) });
  t.equal(f.calls.listChains, listsBefore, 'no listing on a partial sync');
  t.equal(f.calls.save, savesBefore, 'no save on a partial sync');
  t.equal(f.calls.ensureJumps, jumpsBefore, 'no jump checks on a partial sync');
  t.equal(b.lastSync?.full, false);
  t.equal(b.lastSync?.deletedChains, 3, "svc2's old SEP, svc3's SVC and SEP");
  const last = f.restores.at(-1)!;
  t.notMatch(last, 'KUBE-SVC-XPGD46QRK7WJZT7O - [0:0]', 'svc1 untouched');
  t.notMatch(last, ':KUBE-PROXY-CANARY', 'no canary declared on a partial sync');
  t.match(last, /^\*filter\n-S KUBE-PROXY-CANARY\n[^]*\*nat\n-S KUBE-PROXY-CANARY\n/, 'each block first checks that its canary is there');
  t.match(last, ':KUBE-SVC-GNZBNJ2PO5MGZ6GT - [0:0]');
  const nat = [...(await f.listChains('nat'))].filter((c) => /-(SVC|SEP)-/.test(c)).sort();
  t.same(nat, [...b.appliedChains!].sort(), 'kernel and applied state agree');
  t.equal(nat.length, 4);
  flows(t, f, [
    { name: 'svc1 still works', src: POD, dst: '172.30.0.41', port: 80, dest: '10.180.0.1:80', masq: false },
    { name: 'svc2 goes to its new endpoint', src: POD, dst: '172.30.0.42', port: 80, dest: '10.180.0.9:80', masq: false },
    { name: 'svc3 is gone', src: POD, dst: '172.30.0.43', port: 80, dest: '', masq: false },
  ]);
});

t.test('a full sync deletes stale chains left by an earlier run', async (t) => {
  const { f } = setup();
  const first = new IptablesBackend({ iptables: f, nodeConfig: nodeConfig(), log: silentLogger() });
  await first.sync(snapshot([svc('ns1', 'old', '172.30.0.40'), [ep('10.180.0.40')]]), FULL);
  const second = new IptablesBackend({ iptables: f, nodeConfig: nodeConfig(), log: silentLogger() });
  await second.sync(snapshot([svc('ns1', 'new', '172.30.0.41'), [ep('10.180.0.41')]]), { full: false, changed: new Set() });
  t.equal(second.lastSync?.full, true, 'a partial sync without applied state becomes full');
  t.equal(second.lastSync?.deletedChains, 2);
  t.same([...(await f.listChains('nat'))].filter((c) => /-(SVC|SEP)-/.test(c)).length, 2);
});

t.test('a failed restore forces the next sync to be full and reports RuleApply', async (t) => {
  const { f, b } = setup();
  const snap = snapshot([svc('ns1', 'svc1', '172.30.0.41'), [ep('10.180.0.1')]]);
  await b.sync(snap, FULL);
  f.failNextRestore('iptables-restore: line 7 failed');
  const err = await b.sync(snap, { full: false, changed: new Set(['ns1/svc1']) }).then(() => null, (e: unknown) => e);
  t.ok(err instanceof NodenetError && err.code === ErrorCode.RuleApply, 'RuleApply');
  t.equal(b.appliedChains, null);
  await b.sync(snap, { full: false, changed: new Set(['ns1/svc1']) });
  t.equal(b.lastSync?.full, true);
});

t.test('canary: present after a full sync, missing after an external flush; the next full sync restores everything', async (t) => {
  const { f, b } = setup();
  const snap = snapshot([svc('ns1', 'svc1', '172.30.0.41'), [ep('10.180.0.1')]]);
  t.equal(await b.canaryMissing(), true, 'before any sync');
  await b.sync(snap, FULL);
  t.equal(await b.canaryMissing(), false);
  const good = f.dump();
  f.flushEverything();
  t.equal(await b.canaryMissing(), true);
  await b.sync(snap, FULL);
  t.equal(formatDump(f.dump()), formatDump(good), 'identical state again, jumps included');
});

t.test('canary: the periodic check reads mangle only; a flushed nat or filter is caught by the next partial sync, which goes full at once', async (t) => {
  for (const table of ['nat', 'filter'] as const) {
    const { f, b } = setup();
    const s1 = svc('ns1', 'svc1', '172.30.0.41');
    const s2 = svc('ns2', 'svc2', '172.30.0.42');
    const snap = snapshot([s1, [ep('10.180.0.1')]], [s2, [ep('10.180.0.2')]]);
    await b.sync(snap, FULL);
    const good = formatDump(f.dump());
    const checks = f.calls.chainExists;
    t.equal(await b.canaryMissing(), false);
    t.equal(f.calls.chainExists, checks + 1, 'one chain check: mangle');
    // What the demo does: the whole table replaced by an empty one (`printf '*nat\nCOMMIT\n' | iptables-restore`).
    f.replaceTable(table);
    t.equal(await b.canaryMissing(), false, `${table} flushed, mangle's canary still there`);
    // The periodic sync (no change at all) and a one-endpoint change both repair it.
    await b.sync(snap, { full: false, changed: new Set() });
    t.equal(b.lastSync?.full, true, `${table}: the partial sync noticed the flush and synced in full`);
    t.equal(b.lastSync?.jumpsInserted, table === 'nat' ? 3 : 11);
    t.equal(formatDump(f.dump()), good, `${table}: everything back`);
    f.replaceTable(table);
    await b.sync(snapshot([s1, [ep('10.180.0.1')]], [s2, [ep('10.180.0.9')]]), { full: false, changed: new Set(['ns2/svc2']) });
    t.equal(b.lastSync?.full, true);
    flows(t, f, [
      { name: `${table} flushed, then a change: svc1 works`, src: POD, dst: '172.30.0.41', port: 80, dest: '10.180.0.1:80', masq: false },
      { name: `${table} flushed, then a change: svc2 at its new endpoint`, src: POD, dst: '172.30.0.42', port: 80, dest: '10.180.0.9:80', masq: false },
    ]);
  }
});

t.test('a partial sync failing for another reason is not turned into a full one', async (t) => {
  const { f, b } = setup();
  const snap = snapshot([svc('ns1', 'svc1', '172.30.0.41'), [ep('10.180.0.1')]]);
  await b.sync(snap, FULL);
  f.failNextRestore('iptables-restore: line 3 failed');
  const err = await b.sync(snap, { full: false, changed: new Set(['ns1/svc1']) }).then(() => null, (e: unknown) => e);
  t.ok(err instanceof NodenetError && err.code === ErrorCode.RuleApply, 'the error is reported');
  t.equal(b.appliedChains, null, 'and the next sync will be full');
});

t.test('cleanup removes every chain and jump of ours and nothing else; twice is fine', async (t) => {
  const { f, b } = setup();
  await f.restore('*nat\n:DOCKER - [0:0]\n-A PREROUTING -j DOCKER\nCOMMIT\n*filter\n:KUBE-KUBELET-CANARY - [0:0]\nCOMMIT\n', { noflush: true });
  const foreign = f.dump();
  await b.sync(
    snapshot(
      [svc('ns1', 'svc1', '172.30.0.41', { nodePort: 30001, etp: 'Local' }), [ep('10.180.0.1', { node: 'node1' })]],
      [svc('ns1', 'svc2', '172.30.0.42'), []],
    ),
    FULL,
  );
  await b.cleanup();
  t.same(f.dump(), foreign, 'back to exactly the foreign state');
  await b.cleanup();
  t.same(f.dump(), foreign);
  t.equal(b.appliedChains, null);
});

t.test('another prefix is a separate world', async (t) => {
  const f = new FakeIptables();
  const kube = new IptablesBackend({ iptables: f, nodeConfig: nodeConfig(), log: silentLogger() });
  const nn = new IptablesBackend({ iptables: f, nodeConfig: nodeConfig({ prefix: 'NN', masqueradeBit: 13 }), log: silentLogger() });
  const snap = snapshot([svc('ns1', 'svc1', '172.30.0.41'), [ep('10.180.0.1')]]);
  await kube.sync(snap, FULL);
  const kubeOnly = f.dump();
  await nn.sync(snap, FULL);
  t.ok(await f.chainExists('nat', 'NN-SVC-XPGD46QRK7WJZT7O'));
  await nn.cleanup();
  t.same(f.dump(), kubeOnly, "NN's cleanup leaves KUBE's rules alone");
  t.throws(() => new IptablesBackend({ iptables: f, nodeConfig: nodeConfig({ prefix: 'bad prefix' }), log: silentLogger() }), NodenetError);
});

t.test('from Kubernetes objects through the core’s snapshot (named ports, NodePort, no endpoints)', async (t) => {
  const { snapshotFromObjects } = await import('../snapshot.js');
  const a = await import('../../testing/addresses.js');
  const snap = snapshotFromObjects(
    [
      a.makeService({ name: 'web', clusterIP: a.clusterIP(10), type: 'NodePort', ports: [{ name: 'http', port: 80, targetPort: 'http', nodePort: a.nodePort(1) }] }),
      a.makeService({ name: 'gone', clusterIP: a.clusterIP(11), ports: [{ port: 80 }] }),
    ],
    [
      a.makeEndpointSlice({
        service: 'web',
        ports: [{ name: 'http', port: 8080 }],
        endpoints: [{ ip: a.podIP(1, 1), nodeName: a.nodeName(1) }, { ip: a.podIP(2, 1), nodeName: a.nodeName(2) }],
      }),
    ],
    a.nodeName(1),
  );
  const { f, b } = setup({ nodeName: a.nodeName(1), nodeIPs: [a.nodeIP(1)], clusterCIDR: a.CLUSTER_CIDR });
  await b.sync(snap, FULL);
  const dump = f.dump();
  const go = (src: string, dst: string, port: number) =>
    traceIptables(dump, { sourceIP: parseIPv4(src), destIP: parseIPv4(dst), destPort: port, protocol: 'TCP' }, { nodeIPs: [a.nodeIP(1)] });
  const pods = `${a.podIP(1, 1)}:8080, ${a.podIP(2, 1)}:8080`;
  t.equal(go(a.podIP(1, 2), a.clusterIP(10), 80).destination, pods, 'ClusterIP → both pods on the resolved targetPort');
  t.has(go(a.externalClientIP(1), a.nodeIP(1), a.nodePort(1)), { destination: pods, masquerade: true }, 'NodePort from outside');
  t.equal(go(a.podIP(1, 2), a.clusterIP(11), 80).destination, 'REJECT');
  t.match(f.restores[0], '--comment "default/web:http cluster IP"');
});
