/**
 * Packet-flow tests for the nftables renderer: render, apply to the
 * validating fake, and trace packets through the resulting table
 * (kube-proxy's runPacketFlowTests). Addresses: see ../test-fixtures.ts; the
 * node is 192.168.0.2, pods 10.0.0.0/8, outside clients 203.0.113.0/24.
 * Run in kube-proxy's one-table layout, and by render-flow-sharded.test.ts in
 * the sharded one (NODENET_TEST_NFT_SHARDS): every flow must end the same.
 */
import t, { type Test } from 'tap';
import { NftFake } from '../../netfilter/nft/nft.fake.js';
import type { NftTableState } from '../../netfilter/nft/nft-state.js';
import { traceNftables, type NftTracePacket } from '../../trace/nft-tracer.js';
import type { ProxyNodeConfig, ProxySnapshot } from '../types.js';
import { renderNftables, type NftablesRenderOptions } from './render.js';
import { shardTableName } from './names.js';
import { CFG, NODE_IP, ep, nodeConfig, snapshot, svc } from '../test-fixtures.js';
import { parseCidr, type IPv4 } from '../../../../lib/net/ip.js';

const POD = '10.0.1.1';
const OUTSIDE = '203.0.113.9';

const SHARDS = Number(process.env['NODENET_TEST_NFT_SHARDS'] ?? 1);

/** Our tables in the fake: the main one, then the shards' (all of them must exist in the sharded layout). */
function tables(f: NftFake): NftTableState[] {
  const out = [f.table('ip', 'kube-proxy')!];
  for (let i = 0; i < (SHARDS > 1 ? SHARDS : 0); i++) out.push(f.table('ip', shardTableName('KUBE', i))!);
  if (out.some((x) => !x)) throw new Error('a table of the layout is missing');
  return out;
}

async function table(snap: ProxySnapshot, opts: NftablesRenderOptions = {}, cfg: ProxyNodeConfig = CFG): Promise<NftTableState[]> {
  const f = new NftFake();
  await f.apply(renderNftables(snap, cfg, { full: true }, undefined, { ...opts, shards: SHARDS }).text);
  return tables(f);
}

interface Flow {
  name: string;
  from: string;
  to: string;
  port?: number;
  proto?: 'TCP' | 'UDP' | 'ICMP';
  dest: string;
  masq: boolean;
}

function runFlows(t: Test, st: NftTableState[], flows: Flow[]): void {
  for (const f of flows) {
    const packet: NftTracePacket =
      f.proto === 'ICMP'
        ? { sourceIP: f.from, protocol: 'ICMP', destIP: f.to }
        : { sourceIP: f.from as IPv4, protocol: f.proto ?? 'TCP', destIP: f.to as IPv4, destPort: f.port ?? 80 };
    const r = traceNftables(st, packet, { nodeIPs: [NODE_IP] });
    t.equal(r.destination, f.dest, `${f.name}: destination (via ${r.visited.join(' > ')})`);
    t.equal(r.masquerade, f.masq, `${f.name}: masquerade`);
  }
}

t.test('ClusterIP, 1 endpoint', async (t) => {
  const st = await table(snapshot([svc('ns1', 'svc1', '172.30.0.41'), [ep('10.180.0.1:80')]]));
  runFlows(t, st, [
    { name: 'pod to ClusterIP', from: POD, to: '172.30.0.41', dest: '10.180.0.1:80', masq: false },
    { name: 'outside the pod network to ClusterIP', from: OUTSIDE, to: '172.30.0.41', dest: '10.180.0.1:80', masq: true },
    { name: 'node to ClusterIP', from: NODE_IP, to: '172.30.0.41', dest: '10.180.0.1:80', masq: true },
    { name: 'not a Service', from: POD, to: '10.180.0.7', dest: 'ACCEPT', masq: false },
    { name: 'same port, other protocol', from: POD, to: '172.30.0.41', proto: 'UDP', dest: 'REJECT', masq: false },
  ]);
});

t.test('ClusterIP, 3 endpoints: all reachable', async (t) => {
  const st = await table(snapshot([svc('ns1', 'svc1', '172.30.0.41'), [ep('10.180.0.1:80'), ep('10.180.0.2:80'), ep('10.180.0.3:80')]]));
  runFlows(t, st, [{ name: 'pod to ClusterIP', from: POD, to: '172.30.0.41', dest: '10.180.0.1:80, 10.180.0.2:80, 10.180.0.3:80', masq: false }]);
});

t.test('no endpoints: rejected', async (t) => {
  const st = await table(snapshot([svc('ns1', 'svc1', '172.30.0.41', { nodePort: 30001 }), []]));
  runFlows(t, st, [
    { name: 'pod to ClusterIP', from: POD, to: '172.30.0.41', dest: 'REJECT', masq: false },
    { name: 'node to ClusterIP', from: NODE_IP, to: '172.30.0.41', dest: 'REJECT', masq: false },
    { name: 'outside to NodePort', from: OUTSIDE, to: NODE_IP, port: 30001, dest: 'REJECT', masq: false },
  ]);
});

t.test('ClientIP affinity: a client in an endpoint affinity set goes to that endpoint only', async (t) => {
  const st = await table(snapshot([svc('ns1', 'svc1', '172.30.0.41', { affinity: 300 }), [ep('10.180.0.1:80'), ep('10.180.0.2:80')]]));
  runFlows(t, st, [{ name: 'first connection', from: POD, to: '172.30.0.41', dest: '10.180.0.1:80, 10.180.0.2:80', masq: false }]);
  // an earlier connection put the client into endpoint 2's set (what `update @affinity-... { ip saddr }` does)
  const aff = st.flatMap((x) => [...x.sets.values()]).find((s) => s.name.startsWith('affinity-') && s.name.endsWith('__10.180.0.2/80'))!;
  aff.elements.set(POD, { value: null, comment: null });
  runFlows(t, st, [
    { name: 'sticky client', from: POD, to: '172.30.0.41', dest: '10.180.0.2:80', masq: false },
    { name: 'another client', from: '10.0.1.2', to: '172.30.0.41', dest: '10.180.0.1:80, 10.180.0.2:80', masq: false },
  ]);
});

t.test('NodePort and external IP, Cluster policy', async (t) => {
  const st = await table(
    snapshot([svc('ns1', 'svc1', '172.30.0.41', { nodePort: 30001, externalIPs: ['192.168.99.11'] }), [ep('10.180.0.1:8080'), ep('10.180.0.2:8080')]]),
  );
  const both = '10.180.0.1:8080, 10.180.0.2:8080';
  runFlows(t, st, [
    { name: 'outside to NodePort', from: OUTSIDE, to: NODE_IP, port: 30001, dest: both, masq: true },
    { name: 'pod to NodePort', from: POD, to: NODE_IP, port: 30001, dest: both, masq: true },
    { name: 'node to its own NodePort', from: NODE_IP, to: NODE_IP, port: 30001, dest: both, masq: true },
    { name: 'outside to external IP', from: OUTSIDE, to: '192.168.99.11', dest: both, masq: true },
    { name: 'wrong NodePort', from: OUTSIDE, to: NODE_IP, port: 30002, dest: 'ACCEPT', masq: false },
    { name: 'NodePort on another address', from: OUTSIDE, to: '192.168.0.99', port: 30001, dest: 'ACCEPT', masq: false },
  ]);
});

t.test('NodePort, Local policy: outside traffic keeps its source and stays on this node', async (t) => {
  const st = await table(snapshot([svc('ns1', 'svc1', '172.30.0.41', { nodePort: 30001, etp: 'Local' }), [ep('10.180.0.1:8080', { local: true }), ep('10.180.0.2:8080')]]));
  runFlows(t, st, [
    { name: 'outside to NodePort', from: OUTSIDE, to: NODE_IP, port: 30001, dest: '10.180.0.1:8080', masq: false },
    { name: 'pod to NodePort (short-circuit)', from: POD, to: NODE_IP, port: 30001, dest: '10.180.0.1:8080, 10.180.0.2:8080', masq: false },
    { name: 'node to NodePort (short-circuit, masqueraded)', from: NODE_IP, to: NODE_IP, port: 30001, dest: '10.180.0.1:8080, 10.180.0.2:8080', masq: true },
    { name: 'ClusterIP unaffected', from: POD, to: '172.30.0.41', dest: '10.180.0.1:8080, 10.180.0.2:8080', masq: false },
  ]);
});

t.test('NodePort, Local policy, no endpoint on this node: outside traffic dropped', async (t) => {
  const st = await table(snapshot([svc('ns1', 'svc1', '172.30.0.41', { nodePort: 30001, etp: 'Local' }), [ep('10.180.0.2:8080')]]));
  runFlows(t, st, [
    { name: 'outside to NodePort', from: OUTSIDE, to: NODE_IP, port: 30001, dest: 'DROP', masq: false },
    { name: 'pod to NodePort', from: POD, to: NODE_IP, port: 30001, dest: '10.180.0.2:8080', masq: false },
  ]);
});

t.test('internalTrafficPolicy Local', async (t) => {
  const local = await table(snapshot([svc('ns1', 'svc1', '172.30.0.41', { itp: 'Local' }), [ep('10.180.0.1:80', { local: true }), ep('10.180.0.2:80')]]));
  runFlows(t, local, [{ name: 'pod to ClusterIP: the local endpoint only', from: POD, to: '172.30.0.41', dest: '10.180.0.1:80', masq: false }]);
  const none = await table(snapshot([svc('ns1', 'svc1', '172.30.0.41', { itp: 'Local' }), [ep('10.180.0.2:80')]]));
  runFlows(t, none, [{ name: 'no local endpoint: dropped, not rejected', from: POD, to: '172.30.0.41', dest: 'DROP', masq: false }]);
});

t.test('hairpin: a pod reaching itself through its Service is masqueraded', async (t) => {
  const st = await table(snapshot([svc('ns1', 'svc1', '172.30.0.41'), [ep('10.180.0.1:80')]]));
  runFlows(t, st, [
    { name: 'endpoint to its own Service', from: '10.180.0.1', to: '172.30.0.41', dest: '10.180.0.1:80', masq: true },
    { name: 'another pod', from: '10.180.0.2', to: '172.30.0.41', dest: '10.180.0.1:80', masq: false },
  ]);
});

t.test('terminating fallback', async (t) => {
  const only = await table(
    snapshot([svc('ns1', 'svc1', '172.30.0.41'), [ep('10.180.0.1:80', { ready: false, serving: true, terminating: true }), ep('10.180.0.2:80', { ready: false, serving: false, terminating: true })]]),
  );
  runFlows(t, only, [{ name: 'serving terminating endpoint used', from: POD, to: '172.30.0.41', dest: '10.180.0.1:80', masq: false }]);
  const mixed = await table(snapshot([svc('ns1', 'svc1', '172.30.0.41'), [ep('10.180.0.1:80', { ready: false, serving: true, terminating: true }), ep('10.180.0.2:80')]]));
  runFlows(t, mixed, [{ name: 'ready endpoint preferred', from: POD, to: '172.30.0.41', dest: '10.180.0.2:80', masq: false }]);
});

t.test('wrong port and ping to a ClusterIP: rejected at once; the silent-drop option drops the ping only', async (t) => {
  const snap = snapshot([svc('ns1', 'svc1', '172.30.0.41'), [ep('10.180.0.1:80')]]);
  const flows = (ping: string): Flow[] => [
    { name: 'pod, wrong port', from: POD, to: '172.30.0.41', port: 81, dest: 'REJECT', masq: false },
    { name: 'node, wrong port', from: NODE_IP, to: '172.30.0.41', port: 81, dest: 'REJECT', masq: false },
    { name: 'pod, ping', from: POD, to: '172.30.0.41', proto: 'ICMP', dest: ping, masq: false },
    { name: 'node, ping', from: NODE_IP, to: '172.30.0.41', proto: 'ICMP', dest: ping, masq: false },
    { name: 'ping to a pod is not touched', from: POD, to: '10.180.0.1', proto: 'ICMP', dest: 'ACCEPT', masq: false },
  ];
  runFlows(t, await table(snap), flows('REJECT'));
  runFlows(t, await table(snap, { clusterIPPing: 'drop' }), flows('DROP'));
});

t.test('UDP', async (t) => {
  const st = await table(snapshot([svc('ns1', 'dns', '172.30.0.10', { protocol: 'UDP', port: 53, portName: 'dns' }), [ep('10.180.0.1:53')]]));
  runFlows(t, st, [
    { name: 'pod to DNS', from: POD, to: '172.30.0.10', port: 53, proto: 'UDP', dest: '10.180.0.1:53', masq: false },
    { name: 'TCP to a UDP-only port', from: POD, to: '172.30.0.10', port: 53, dest: 'REJECT', masq: false },
  ]);
});

t.test('after a partial sync the table routes the new state', async (t) => {
  const A = snapshot(
    [svc('ns1', 'svc1', '172.30.0.41'), [ep('10.180.0.1:80'), ep('10.180.0.2:80')]],
    [svc('ns2', 'svc2', '172.30.0.42', { nodePort: 30002 }), [ep('10.180.0.5:80')]],
    [svc('ns3', 'svc3', '172.30.0.43'), []],
  );
  const B = snapshot([svc('ns1', 'svc1', '172.30.0.41'), [ep('10.180.0.1:80'), ep('10.180.0.3:80')]], [svc('ns3', 'svc3', '172.30.0.43'), [ep('10.180.0.9:80')]]);
  const f = new NftFake();
  const ra = renderNftables(A, CFG, { full: true }, undefined, { shards: SHARDS });
  await f.apply(ra.text);
  runFlows(t, tables(f), [
    { name: 'svc3 before', from: POD, to: '172.30.0.43', dest: 'REJECT', masq: false },
    { name: 'svc2 NodePort before', from: OUTSIDE, to: NODE_IP, port: 30002, dest: '10.180.0.5:80', masq: true },
  ]);
  await f.apply(renderNftables(B, CFG, { full: false, changed: new Set(['ns1/svc1', 'ns2/svc2', 'ns3/svc3']) }, ra.applied, { shards: SHARDS }).text);
  runFlows(t, tables(f), [
    { name: 'svc1', from: POD, to: '172.30.0.41', dest: '10.180.0.1:80, 10.180.0.3:80', masq: false },
    { name: 'svc2 gone: its ClusterIP is not ours any more', from: POD, to: '172.30.0.42', dest: 'ACCEPT', masq: false },
    { name: 'svc2 NodePort gone', from: OUTSIDE, to: NODE_IP, port: 30002, dest: 'ACCEPT', masq: false },
    { name: 'svc3 now has an endpoint', from: POD, to: '172.30.0.43', dest: '10.180.0.9:80', masq: false },
  ]);
});

t.test('LoadBalancer: VIP with source ranges (checked before DNAT), externalTrafficPolicy Local', async (t) => {
  const VIP = '1.2.3.4';
  const st = await table(
    snapshot(
      [svc('ns5', 'svc5', '172.30.0.45', { nodePort: 3002, lbVIPs: [VIP], sourceRanges: ['203.0.113.0/25', '192.168.0.0/24'], etp: 'Local', healthCheckNodePort: 30000 }), [ep('10.180.0.5:80', { local: true }), ep('10.180.0.6:80')]],
      [svc('ns6', 'svc6', '172.30.0.46', { lbVIPs: ['1.2.3.6'] }), [ep('10.180.0.6:80')]],
      [svc('ns7', 'svc7', '172.30.0.47', { lbVIPs: ['1.2.3.7'], etp: 'Local' }), [ep('10.180.0.6:80')]],
    ),
    {},
    nodeConfig({ primaryIP: NODE_IP }),
  );
  runFlows(t, st, [
    { name: 'allowed source to the VIP: the local endpoint, source kept', from: OUTSIDE, to: VIP, dest: '10.180.0.5:80', masq: false },
    { name: 'source outside the ranges: dropped', from: '203.0.113.200', to: VIP, dest: 'DROP', masq: false },
    { name: 'a pod outside the ranges: dropped too (as kube-proxy)', from: POD, to: VIP, dest: 'DROP', masq: false },
    { name: 'the node (its IP in a range): short-circuit to any endpoint, masqueraded', from: NODE_IP, to: VIP, dest: '10.180.0.5:80, 10.180.0.6:80', masq: true },
    { name: 'the NodePort is not subject to the ranges', from: '203.0.113.200', to: NODE_IP, port: 3002, dest: '10.180.0.5:80', masq: false },
    { name: 'ClusterIP not subject to the ranges', from: POD, to: '172.30.0.45', dest: '10.180.0.5:80, 10.180.0.6:80', masq: false },
    { name: 'no ranges: anyone, masqueraded (Cluster policy)', from: '203.0.113.200', to: '1.2.3.6', dest: '10.180.0.6:80', masq: true },
    { name: 'Local policy, no local endpoint: outside traffic to the VIP dropped', from: OUTSIDE, to: '1.2.3.7', dest: 'DROP', masq: false },
    { name: 'Local policy, no local endpoint: a pod still short-circuits', from: POD, to: '1.2.3.7', dest: '10.180.0.6:80', masq: false },
  ]);
});

t.test('nodePortAddresses and the service CIDR', async (t) => {
  const BRIDGE = '10.0.0.1'; // another local address of the node (a bridge's)
  const snap = snapshot([svc('ns1', 'svc1', '172.30.0.41', { nodePort: 30001 }), [ep('10.180.0.1:80')]], [svc('ns2', 'svc2', '172.30.0.42', { nodePort: 30002 }), []]);
  const trace = (st: NftTableState[], to: string, port: number, from = OUTSIDE) =>
    traceNftables(st, { sourceIP: from as IPv4, protocol: 'TCP', destIP: to as IPv4, destPort: port }, { nodeIPs: [NODE_IP, BRIDGE] }).destination;
  const all = await table(snap);
  t.equal(trace(all, BRIDGE, 30001), '10.180.0.1:80', 'default: every local address but 127.0.0.0/8');
  const primary = await table(snap, {}, nodeConfig({ nodePortAddresses: [parseCidr(`${NODE_IP}/32`).cidr] }));
  t.equal(trace(primary, NODE_IP, 30001), '10.180.0.1:80', 'primary: the node IP');
  t.equal(trace(primary, BRIDGE, 30001), 'ACCEPT', 'primary: not the bridge address');
  t.equal(trace(primary, NODE_IP, 30002), 'REJECT', 'primary: a NodePort without endpoints is rejected');
  t.equal(trace(primary, BRIDGE, 30002), 'ACCEPT', 'primary: ...only on the node IP');
  t.equal(trace(primary, '127.0.0.1', 30001, NODE_IP), 'ACCEPT', 'never on localhost');

  const plain = await table(snap);
  const cidr = await table(snap, {}, nodeConfig({ serviceCIDRs: [parseCidr('172.30.0.0/16').cidr] }));
  t.equal(trace(plain, '172.30.0.99', 80, POD), 'ACCEPT', 'without the service CIDR an unallocated ClusterIP is routed on');
  t.equal(trace(cidr, '172.30.0.99', 80, POD), 'DROP', 'with it: dropped (from a pod)');
  t.equal(trace(cidr, '172.30.0.99', 80, NODE_IP), 'DROP', 'with it: dropped (from the node)');
  t.equal(trace(cidr, '172.30.0.41', 80, POD), '10.180.0.1:80', 'allocated ClusterIPs still work');
  t.equal(trace(cidr, '172.30.0.41', 81, POD), 'REJECT', 'a wrong port of one is still rejected');
  t.equal(trace(cidr, '10.180.0.1', 80, POD), 'ACCEPT', 'outside the service CIDR: untouched');
});
