/**
 * Root test: the nftables backend against the real kernel, inside a network
 * namespace of its own (nn-nft-<pid>). What the kernel holds after each sync
 * is read back (`nft -j list table`, `nft list table`) and compared with what
 * the validating fake holds after the same transactions; packets traced over
 * the kernel's own listing must go where they go over the fake's state.
 * Ends with a timing (reported, not asserted) of a 10,000-Service load.
 */
import t, { type Test } from 'tap';
import { SpawnRunner } from '../../exec/runner.js';
import { silentLogger } from '../../../../lib/log/log.js';
import { intToIp, ipToInt, type IPv4 } from '../../../../lib/net/ip.js';
import { NftExecutor, type NftTableInfo } from '../../netfilter/nft/nft.js';
import { NftFake } from '../../netfilter/nft/nft.fake.js';
import { parseNftListing } from '../../netfilter/nft/nft-listing.js';
import type { NftTableState } from '../../netfilter/nft/nft-state.js';
import { traceNftables, type NftTracePacket } from '../../trace/nft-tracer.js';
import type { EndpointInfo, ProxySnapshot, ServicePortInfo } from '../types.js';
import { NftablesBackend } from './proxier.js';
import { renderNftables } from './render.js';
import { CFG, NODE_IP, ep, snapshot, svc } from '../test-fixtures.js';

const runner = new SpawnRunner();
const NS = `nn-nft-${process.pid}`;
const NS_PATH = `/var/run/netns/${NS}`;

async function rootTables(): Promise<string> {
  return (await runner.run(['nft', 'list', 'tables'])).stdout;
}

const rootBefore = await rootTables();
await runner.run(['ip', 'netns', 'add', NS]);
t.teardown(async () => {
  const pids = (await runner.run(['ip', 'netns', 'pids', NS], { allowFailure: true })).stdout.split('\n').filter(Boolean);
  for (const p of pids) {
    try {
      process.kill(Number(p), 'SIGKILL');
    } catch {
      /* gone */
    }
  }
  await runner.run(['ip', 'netns', 'del', NS], { allowFailure: true });
});

const nft = new NftExecutor({ runner, netns: NS_PATH });
const backend = new NftablesBackend({ nft, nodeConfig: CFG, log: silentLogger() });
/** The same transactions, applied to the fake, for comparison. */
const fake = new NftFake();

/** Kernel and fake hold the same chains (with the same rule counts), sets, maps and elements. */
function sameTable(t: Test, kernel: NftTableInfo | null, f: NftTableInfo | null): void {
  t.ok(kernel, 'table exists in the kernel');
  if (!kernel || !f) return;
  t.same([...kernel.chains.keys()].sort(), [...f.chains.keys()].sort(), 'same chains');
  const counts = (i: NftTableInfo) => Object.fromEntries([...i.chains].map(([k, c]) => [k, `${c.ruleCount} ${JSON.stringify(c.base)}`]));
  t.same(counts(kernel), counts(f), 'same rule counts and base-chain facts');
  t.same([...kernel.sets.keys()].sort(), [...f.sets.keys()].sort(), 'same sets and maps');
  for (const [name, s] of f.sets) {
    const k = kernel.sets.get(name);
    t.same(k && Object.fromEntries(k.elements), Object.fromEntries(s.elements), `elements of ${name}`);
    t.same(k?.timeout ?? null, s.timeout, `timeout of ${name}`);
  }
}

const PACKETS: NftTracePacket[] = [
  { sourceIP: '10.0.1.1' as IPv4, protocol: 'TCP', destIP: '172.30.0.41' as IPv4, destPort: 80 },
  { sourceIP: '203.0.113.9' as IPv4, protocol: 'TCP', destIP: '172.30.0.41' as IPv4, destPort: 80 },
  { sourceIP: '10.0.1.1' as IPv4, protocol: 'TCP', destIP: '172.30.0.41' as IPv4, destPort: 81 },
  { sourceIP: '10.0.1.1', protocol: 'ICMP', destIP: '172.30.0.41' },
  { sourceIP: '203.0.113.9' as IPv4, protocol: 'TCP', destIP: NODE_IP as IPv4, destPort: 30002 },
  { sourceIP: NODE_IP as IPv4, protocol: 'TCP', destIP: '172.30.0.42' as IPv4, destPort: 80 },
  { sourceIP: '10.0.1.1' as IPv4, protocol: 'TCP', destIP: '172.30.0.43' as IPv4, destPort: 80 },
];

async function kernelState(): Promise<NftTableState> {
  const text = await nft.listTableText('ip', 'kube-proxy');
  const [st] = parseNftListing(text ?? '');
  return st!;
}

function sameTraces(t: Test, kernel: NftTableState, f: NftTableState): void {
  for (const p of PACKETS) {
    const k = traceNftables(kernel, p, { nodeIPs: [NODE_IP] });
    const g = traceNftables(f, p, { nodeIPs: [NODE_IP] });
    t.same({ d: k.destination, m: k.masquerade }, { d: g.destination, m: g.masquerade }, `${p.sourceIP} -> ${p.destIP}:${p.destPort ?? '-'} ${p.protocol}: ${k.destination}`);
  }
}

const A = snapshot(
  [svc('ns1', 'svc1', '172.30.0.41', { affinity: 60 }), [ep('10.180.0.1:80'), ep('10.180.0.2:80'), ep('10.180.0.3:80')]],
  [svc('ns2', 'svc2', '172.30.0.42', { nodePort: 30002, etp: 'Local' }), [ep('10.180.0.5:80', { local: true }), ep('10.180.0.6:80')]],
  [svc('ns3', 'svc3', '172.30.0.43'), []],
);
const B = snapshot(
  [svc('ns1', 'svc1', '172.30.0.41', { affinity: 60 }), [ep('10.180.0.1:80'), ep('10.180.0.4:80')]],
  [svc('ns3', 'svc3', '172.30.0.43'), [ep('10.180.0.9:80')]],
  [svc('ns4', 'svc4', '172.30.0.44', { itp: 'Local' }), [ep('10.180.0.7:80', { local: true })]],
);

t.test('full sync, read back from the kernel', async (t) => {
  await backend.sync(A, { full: true });
  await fake.apply(renderNftables(A, CFG, { full: true }).text);
  sameTable(t, await nft.listTable('ip', 'kube-proxy'), await fake.listTable('ip', 'kube-proxy'));
  sameTraces(t, await kernelState(), fake.table('ip', 'kube-proxy')!);
  // a second full sync over the existing table is accepted and changes nothing
  await backend.sync(A, { full: true });
  sameTable(t, await nft.listTable('ip', 'kube-proxy'), await fake.listTable('ip', 'kube-proxy'));
});

t.test('partial sync: only the changed Services, stale chains and sets gone from the kernel', async (t) => {
  const before = backend.appliedState!;
  await backend.sync(B, { full: false, changed: new Set(['ns1/svc1', 'ns2/svc2', 'ns3/svc3', 'ns4/svc4']) });
  t.equal(backend.lastSync!.full, false);
  await fake.apply(renderNftables(B, CFG, { full: false, changed: new Set(['ns1/svc1', 'ns2/svc2', 'ns3/svc3', 'ns4/svc4']) }, before).text);
  const kernel = await nft.listTable('ip', 'kube-proxy');
  sameTable(t, kernel, await fake.listTable('ip', 'kube-proxy'));
  t.notOk([...kernel!.chains.keys()].some((c) => c.includes('ns2/svc2') || c.includes('10.180.0.2/80')), 'stale chains deleted');
  t.notOk([...kernel!.sets.keys()].some((s) => s.includes('10.180.0.2/80')), 'stale affinity set deleted');
  // and it is what a full sync of B into an empty table gives
  const g = new NftFake();
  await g.apply(renderNftables(B, CFG, { full: true }).text);
  sameTable(t, kernel, await g.listTable('ip', 'kube-proxy'));
  sameTraces(t, await kernelState(), g.table('ip', 'kube-proxy')!);
});

t.test('canary: an external `nft delete table`, then a full sync restores the table', async (t) => {
  t.equal(await backend.canaryMissing(), false);
  await runner.run(['nft', 'delete', 'table', 'ip', 'kube-proxy'], { netns: NS_PATH });
  t.equal(await backend.canaryMissing(), true);
  await backend.sync(B, { full: false, changed: new Set(['ns1/svc1']) });
  t.equal(backend.lastSync!.full, true);
  const g = new NftFake();
  await g.apply(renderNftables(B, CFG, { full: true }).text);
  sameTable(t, await nft.listTable('ip', 'kube-proxy'), await g.listTable('ip', 'kube-proxy'));
});

t.test('a kernel error is reported with the failing line', async (t) => {
  const err = await nft.apply('add table ip kube-proxy\nadd chain ip kube-proxy x\nadd rule ip kube-proxy x goto nosuch\n').catch((e: unknown) => e);
  t.match(err, { code: 'NN_ERR_RULE_APPLY', message: /nft -f failed at line 3 of 4: .*No such file or directory/ });
  t.match((err as { details: string }).details, />\s+3 \| add rule ip kube-proxy x goto nosuch/);
  t.equal((await nft.listTable('ip', 'kube-proxy'))!.chains.has('x'), false, 'nothing of the failed batch applied');
});

t.test('cleanup removes the table; twice is fine', async (t) => {
  await backend.cleanup();
  t.equal(await nft.tableExists('ip', 'kube-proxy'), false);
  t.equal(await nft.listTable('ip', 'kube-proxy'), null);
  await backend.cleanup();
});

t.test('timing: a full load of 10,000 Services (2 endpoints each, 1 in 10 with a NodePort), then one endpoint change', async (t) => {
  const services: [ServicePortInfo, EndpointInfo[]][] = [];
  for (let i = 0; i < 10_000; i++) {
    const cip = intToIp(ipToInt('172.30.0.0') + i + 1);
    const e = (k: number) => ep(`${intToIp(ipToInt('10.180.0.0') + 2 * i + k)}:8080`);
    services.push([svc(`ns${i % 50}`, `svc${i}`, cip, i % 10 === 0 ? { nodePort: 30000 + i / 10 } : {}), [e(1), e(2)]]);
  }
  const big: ProxySnapshot = snapshot(...services);
  const b = new NftablesBackend({ nft, nodeConfig: CFG, log: silentLogger() });
  const t0 = performance.now();
  await b.sync(big, { full: true });
  const full = b.lastSync!;
  const wall = performance.now() - t0;
  services[5] = [services[5]![0], [ep('10.181.0.1:8080'), ep('10.181.0.2:8080')]];
  await b.sync(snapshot(...services), { full: false, changed: new Set(['ns5/svc5']) });
  const partial = b.lastSync!;
  await b.sync(snapshot(...services), { full: true });
  const again = b.lastSync!;
  const msg =
    `10k Services: full load ${Math.round(wall)} ms (render ${Math.round(full.renderMs)} ms, nft -f ${Math.round(full.applyMs)} ms, ` +
    `${full.ruleCount} rules, ${full.elementCount} elements, ${(full.bytes / 1e6).toFixed(1)} MB); ` +
    `partial one-Service change ${Math.round(partial.durationMs)} ms (render ${Math.round(partial.renderMs)} ms, ${partial.bytes} bytes); ` +
    `full resync over the loaded table ${Math.round(again.durationMs)} ms`;
  t.comment(msg);
  process.stderr.write(`# ${msg}\n`);
  const info = await nft.listTable('ip', 'kube-proxy');
  t.equal(info!.sets.get('service-ips')!.elements.size, 10_000);
  t.equal(info!.sets.get('service-nodeports')!.elements.size, 1000);
  await b.cleanup();
});

t.test('the root namespace was not touched', async (t) => {
  t.equal(await rootTables(), rootBefore);
});
