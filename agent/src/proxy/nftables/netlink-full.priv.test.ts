/**
 * Root test: a FULL sync applied as nodenet's own nf_tables netlink batch
 * leaves exactly the table `nft -f` leaves.
 *
 * Two scratch namespaces (nn-<tag>-a, nn-<tag>-b, from a Lab): every full
 * sync goes through `nft -f` in A (netlink off) and through the netlink
 * batch in B, and `nft -j list table ip kube-proxy` of both must be equal
 * (handles removed, set elements sorted). The fixture has every construct
 * the full render writes: NodePort, LoadBalancer with source ranges and
 * Local policy, external IPs, ClientIP affinity, a Service without
 * endpoints, a Service with two ports (TCP and UDP), node-port addresses
 * and service CIDRs. Steps: into an empty namespace; again over the table
 * after changes (stale chains and affinity sets deleted); and as a
 * restarted agent does (a new backend that lists the kernel first). Then
 * real packets through a ClusterIP in B after a netlink full sync.
 */
import t, { type Test } from 'tap';
import { spawn } from 'node:child_process';
import { setTimeout as sleep } from 'node:timers/promises';
import { SpawnRunner } from '../../exec/runner.js';
import { Lab, uniqueTag } from '../../lab/lab.js';
import { silentLogger } from '../../../../lib/log/log.js';
import { parseCidr, parseIPv4 } from '../../../../lib/net/ip.js';
import { NftExecutor } from '../../netfilter/nft/nft.js';
import type { EndpointInfo, ProxyNodeConfig, ServicePortInfo } from '../types.js';
import { spnString } from '../types.js';
import { ep, snapshot, svc } from '../test-fixtures.js';
import { normalisedTable } from '../../testing/nft-table.js';
import { NftablesBackend } from './proxier.js';

const runner = new SpawnRunner();
const lab = await Lab.create(uniqueTag('nf'), { runner });
t.teardown(() => lab.destroy());
const A = await lab.addNetns('a');
const B = await lab.addNetns('b');

const cfg: ProxyNodeConfig = {
  nodeName: 'node1',
  nodeIPs: [parseIPv4('192.168.0.2')],
  primaryIP: parseIPv4('192.168.0.2'),
  clusterCIDR: parseCidr('10.244.0.0/16').cidr,
  prefix: 'KUBE',
  masqueradeBit: 14,
  serviceCIDRs: [parseCidr('10.96.0.0/16').cidr],
};
const nftA = new NftExecutor({ runner, netns: A.path, netlinkBatch: false });
const nftB = new NftExecutor({ runner, netns: B.path, netlinkBatch: true });
const backend = (nft: NftExecutor, netlinkFull: boolean, c: ProxyNodeConfig = cfg) =>
  new NftablesBackend({ nft, nodeConfig: c, log: silentLogger(), netlinkFull });
let backA = backend(nftA, false);
let backB = backend(nftB, true);

const PKT_CIP = '10.96.5.5';
const cluster = new Map<string, [ServicePortInfo, EndpointInfo[]]>();
const put = (s: ServicePortInfo, eps: EndpointInfo[]) => cluster.set(spnString(s.spn), [s, eps]);
put(svc('pkt', 'web', PKT_CIP, { port: 80 }), [ep('10.244.1.21:8080', { local: true }), ep('10.244.1.22:8080', { local: true })]);
put(svc('ns1', 'np', '10.96.0.11', { nodePort: 30011 }), [ep('10.244.2.1:80'), ep('10.244.2.2:80')]);
put(svc('ns1', 'sticky', '10.96.0.12', { affinity: 10800 }), [ep('10.244.2.3:80'), ep('10.244.2.4:80')]);
put(svc('ns2', 'lb', '10.96.0.13', { lbVIPs: ['192.168.99.13'], sourceRanges: ['203.0.113.0/24', '192.168.0.0/20'], nodePort: 30013, etp: 'Local' }), [
  ep('10.244.2.5:80'),
  ep('10.244.1.5:80', { local: true }),
]);
put(svc('ns2', 'lbnolocal', '10.96.0.16', { lbVIPs: ['192.168.99.16'], nodePort: 30016, etp: 'Local' }), [ep('10.244.2.16:80')]);
put(svc('ns2', 'empty', '10.96.0.14', { nodePort: 30014, externalIPs: ['192.168.5.14'] }), []);
put(svc('ns2', 'ext', '10.96.0.15', { externalIPs: ['192.168.5.5'] }), [ep('10.244.2.9:80')]);
put(svc('ns2', 'dns', '10.96.0.10', { port: 53, protocol: 'UDP', portName: 'dns' }), [ep('10.244.2.6:53'), ep('10.244.2.7:53'), ep('10.244.2.8:53')]);
put(svc('ns2', 'dns', '10.96.0.10', { port: 53, protocol: 'TCP', portName: 'dnstcp' }), [ep('10.244.2.6:53')]);
put(svc('ns3', 'itp', '10.96.0.17', { itp: 'Local' }), [ep('10.244.2.17:80')]);
const snap = () => snapshot(...cluster.values());

/** The two namespaces' tables compare through testing/nft-table.ts. */
const listing = (path: string): Promise<unknown[]> => normalisedTable(runner, path);

/** `nft list table` text: also compares what nft prints (comments, types, rule text). */
async function text(path: string): Promise<string> {
  return (await runner.run(['nsenter', `--net=${path}`, '--', 'nft', 'list', 'table', 'ip', 'kube-proxy'])).stdout;
}

async function fullStep(t: Test, what: string): Promise<void> {
  await backA.sync(snap(), { full: true });
  await backB.sync(snap(), { full: true });
  t.equal(backA.lastSync!.via, 'nft', `${what}: A through nft -f`);
  t.equal(backB.lastSync!.full, true, `${what}: B full`);
  t.equal(backB.lastSync!.via, 'netlink', `${what}: B through the netlink batch`);
  const k = backB.lastSync!.kernelMs;
  t.ok(k !== null && k >= 0 && k <= backB.lastSync!.applyMs + 1, `${what}: B's kernel share is measured and within its apply (${k} of ${backB.lastSync!.applyMs} ms)`);
  t.equal(backA.lastSync!.kernelMs, null, `${what}: no kernel share through nft -f`);
  const a = await listing(A.path);
  t.ok(a.length > 60, `${what}: a table with content (${a.length} objects)`);
  t.same(await listing(B.path), a, `${what}: the tables are equal (nft -j)`);
  t.equal(await text(B.path), await text(A.path), `${what}: nft list prints the same`);
}

t.test('full sync into an empty namespace', async (t) => {
  await fullStep(t, 'empty namespace');
});

t.test('full sync over the table, after changes (stale chains and affinity sets deleted)', async (t) => {
  const sticky = cluster.get('ns1/sticky:p80')!;
  sticky[1] = [ep('10.244.2.4:80'), ep('10.244.2.40:80')];
  cluster.delete('ns2/ext:p80');
  put(svc('ns3', 'new', '10.96.0.20', { nodePort: 30020, externalIPs: ['192.168.99.20'], etp: 'Local', affinity: 60 }), [
    ep('10.244.1.30:80', { local: true }),
    ep('10.244.2.30:80'),
  ]);
  await fullStep(t, 'after changes');
  const chains = (await runner.run(['nsenter', `--net=${B.path}`, '--', 'nft', 'list', 'chains', 'ip'])).stdout;
  t.notMatch(chains, /ns2\/ext/, 'the removed Service\'s chains are gone');
});

t.test('full sync as a restarted agent does (no record: the kernel is listed first), other node-port addresses', async (t) => {
  const c2: ProxyNodeConfig = { ...cfg, nodePortAddresses: [parseCidr('192.168.0.0/24').cidr, parseCidr('10.0.0.0/8').cidr] };
  backA = backend(nftA, false, c2);
  backB = backend(nftB, true, c2);
  cluster.delete('ns3/new:p80');
  await fullStep(t, 'restarted');
});

t.test('real packets: after a netlink full sync, connections to a ClusterIP reach its endpoints', async (t) => {
  await runner.run(['ip', '-n', B.name, '-batch', '-'], {
    input:
      'link add v0 type veth peer name v1\naddr add 10.244.9.1/24 dev v0\nlink set v0 up\nlink set v1 up\nroute add default via 10.244.9.2\n' +
      'addr add 10.244.1.21/32 dev lo\naddr add 10.244.1.22/32 dev lo\n',
  });
  for (const [ip, name] of [['10.244.1.21', 'ep21'], ['10.244.1.22', 'ep22']] as const) {
    spawn('ip', ['netns', 'exec', B.name, 'socat', '-t5', `TCP-LISTEN:8080,bind=${ip},reuseaddr,fork`, `SYSTEM:echo ${name}`], { stdio: 'ignore' }).unref();
  }
  const connect = async (ip: string, port: number) => {
    const r = await runner.run(['ip', 'netns', 'exec', B.name, 'socat', '-t2', '-T3', '-', `TCP:${ip}:${port},connect-timeout=3`], { allowFailure: true, timeoutMs: 10_000 });
    return (r.exitCode === 0 ? r.stdout : r.stderr).trim();
  };
  for (let i = 0; i < 100 && (await connect('10.244.1.22', 8080)) !== 'ep22'; i++) await sleep(50);
  // A fresh netlink full sync (the table is recreated in full by it).
  await backB.sync(snap(), { full: true });
  t.equal(backB.lastSync!.via, 'netlink', 'the sync went through the netlink batch');
  const seen = new Set<string>();
  for (let i = 0; i < 30 && seen.size < 2; i++) seen.add(await connect(PKT_CIP, 80));
  t.same([...seen].sort(), ['ep21', 'ep22'], 'connections to the ClusterIP reach both endpoints');
  const wrong = await connect(PKT_CIP, 81);
  t.match(wrong, /refused/i, 'a port the Service does not serve is rejected (cluster-ips-check)');
});

t.test('a kernel error in a full netlink batch names its line and applies nothing', async (t) => {
  const before = await listing(B.path);
  const script = 'add table ip kube-proxy { comment "rules for kube-proxy" ; }\nflush chain ip kube-proxy services\nadd rule ip kube-proxy services goto nosuch-chain\n';
  const err = await nftB.applyViaNetlink!(script, { big: true }).catch((e: unknown) => e);
  t.match(err, { code: 'NN_ERR_RULE_APPLY', message: /at line 3 of 4: .*No such file or directory/ });
  t.same(await listing(B.path), before, 'nothing applied (the flush was undone)');
});
