/**
 * Root test: a partial sync applied as nodenet's own nf_tables netlink batch
 * leaves exactly the table `nft -f` leaves.
 *
 * Two scratch namespaces (nn-<tag>-a, nn-<tag>-b, from a Lab) get the same
 * full sync through `nft -f`, then the same sequence of partial syncs: in A
 * through `nft -f` (netlink off), in B through the netlink batch. After each
 * step `nft -j list table ip kube-proxy` of A and B must be equal (handles
 * removed, set elements sorted: hash order is per set instance). The kinds
 * of change: an endpoint replaced, an endpoint added, a Service removed, a
 * Service added (NodePort, external IP, Local policy), ClientIP affinity
 * (its sets created and deleted), a Service losing all its endpoints, source
 * ranges changed. Then real packets: in B, after a netlink-applied endpoint
 * replacement, connections to the ClusterIP reach the new endpoint. And a
 * kernel error in a netlink batch is reported with its line, applying nothing.
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
const lab = await Lab.create(uniqueTag('nl'), { runner });
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
};
const nftA = new NftExecutor({ runner, netns: A.path, netlinkBatch: false });
const nftB = new NftExecutor({ runner, netns: B.path, netlinkBatch: true });
const backA = new NftablesBackend({ nft: nftA, nodeConfig: cfg, log: silentLogger() });
const backB = new NftablesBackend({ nft: nftB, nodeConfig: cfg, log: silentLogger(), netlinkFull: false });

// The cluster as a mutable list of [ServicePort, endpoints].
const PKT_CIP = '10.96.5.5';
const cluster = new Map<string, [ServicePortInfo, EndpointInfo[]]>();
const put = (s: ServicePortInfo, eps: EndpointInfo[]) => cluster.set(spnString(s.spn), [s, eps]);
put(svc('pkt', 'web', PKT_CIP, { port: 80 }), [ep('10.244.1.21:8080', { local: true })]);
put(svc('ns1', 'np', '10.96.0.11', { nodePort: 30011 }), [ep('10.244.2.1:80'), ep('10.244.2.2:80')]);
put(svc('ns1', 'sticky', '10.96.0.12', { affinity: 10800 }), [ep('10.244.2.3:80'), ep('10.244.2.4:80')]);
put(svc('ns2', 'lb', '10.96.0.13', { lbVIPs: ['192.168.99.13'], sourceRanges: ['203.0.113.0/24', '192.168.0.0/20'], nodePort: 30013 }), [ep('10.244.2.5:80')]);
put(svc('ns2', 'empty', '10.96.0.14', { nodePort: 30014 }), []);
put(svc('ns2', 'dns', '10.96.0.10', { port: 53, protocol: 'UDP', portName: 'dns' }), [ep('10.244.2.6:53'), ep('10.244.2.7:53'), ep('10.244.2.8:53')]);
const snap = () => snapshot(...cluster.values());
const keyOf = (s: ServicePortInfo) => `${s.spn.namespace}/${s.spn.name}`;

/** The two namespaces' tables compare through testing/nft-table.ts. */
const listing = (path: string): Promise<unknown[]> => normalisedTable(runner, path);

async function step(t: Test, what: string, changed: string[]): Promise<void> {
  const scope = { full: false, changed: new Set(changed) } as const;
  await backA.sync(snap(), scope);
  await backB.sync(snap(), scope);
  t.equal(backA.lastSync!.full, false, `${what}: A partial`);
  t.equal(backA.lastSync!.via, 'nft', `${what}: A through nft -f`);
  t.equal(backB.lastSync!.full, false, `${what}: B partial`);
  t.equal(backB.lastSync!.via, 'netlink', `${what}: B through the netlink batch`);
  t.same(await listing(B.path), await listing(A.path), `${what}: the tables are equal`);
}

t.test('full sync through nft -f in both', async (t) => {
  await backA.sync(snap(), { full: true });
  await backB.sync(snap(), { full: true });
  t.equal(backB.lastSync!.via, 'nft', 'full syncs use nft -f');
  const a = await listing(A.path);
  t.ok(a.length > 40, `a table with content (${a.length} objects)`);
  t.same(await listing(B.path), a);
});

t.test('partial syncs: nft -f in A, netlink batch in B, same tables', async (t) => {
  const web = [...cluster.values()].find(([s]) => s.spn.name === 'web')!;
  web[1] = [ep('10.244.1.22:8080', { local: true })];
  await step(t, 'an endpoint replaced', ['pkt/web']);

  const np = [...cluster.values()].find(([s]) => s.spn.name === 'np')!;
  np[1] = [...np[1], ep('10.244.2.9:80', { local: true })];
  await step(t, 'an endpoint added', ['ns1/np']);

  const empty = [...cluster.values()].find(([s]) => s.spn.name === 'empty')!;
  cluster.delete(spnString(empty[0].spn));
  await step(t, 'a Service removed', ['ns2/empty']);

  put(svc('ns3', 'new', '10.96.0.20', { nodePort: 30020, externalIPs: ['192.168.99.20'], etp: 'Local' }), [ep('10.244.1.30:80', { local: true }), ep('10.244.2.30:80')]);
  await step(t, 'a Service added (NodePort, external IP, Local policy)', ['ns3/new']);

  const sticky = [...cluster.values()].find(([s]) => s.spn.name === 'sticky')!;
  sticky[1] = [ep('10.244.2.4:80'), ep('10.244.2.40:80'), ep('10.244.2.41:80')];
  await step(t, 'ClusterIP with session affinity: endpoints replaced (affinity sets added and deleted)', ['ns1/sticky']);

  put(svc('ns3', 'sticky2', '10.96.0.21', { affinity: 60 }), [ep('10.244.2.50:80')]);
  await step(t, 'a Service with session affinity added', ['ns3/sticky2']);

  const dns = [...cluster.values()].find(([s]) => s.spn.name === 'dns')!;
  dns[1] = [];
  await step(t, 'a Service lost all its endpoints (no-endpoint elements)', ['ns2/dns']);

  const lb = [...cluster.values()].find(([s]) => s.spn.name === 'lb')!;
  put({ ...lb[0], loadBalancerSourceRanges: [parseCidr('198.51.100.0/25').cidr] }, lb[1]);
  await step(t, 'source ranges changed', ['ns2/lb']);

  // Several Services at once, including one removed and one whose endpoints came back.
  dns[1] = [ep('10.244.2.6:53')];
  cluster.delete(spnString(sticky[0].spn));
  await step(t, 'several Services in one sync', ['ns2/dns', 'ns1/sticky', keyOf(np[0])]);
});

t.test('real packets: after a netlink-applied change, connections reach the new endpoint', async (t) => {
  // Inside B: the endpoints are local addresses with servers; a veth pair gives the ClusterIP a route.
  await runner.run(['ip', '-n', B.name, '-batch', '-'], {
    input:
      'link add v0 type veth peer name v1\naddr add 10.244.9.1/24 dev v0\nlink set v0 up\nlink set v1 up\nroute add default via 10.244.9.2\n' +
      'addr add 10.244.1.21/32 dev lo\naddr add 10.244.1.22/32 dev lo\naddr add 10.244.1.23/32 dev lo\n',
  });
  for (const [ip, name] of [['10.244.1.21', 'ep21'], ['10.244.1.22', 'ep22'], ['10.244.1.23', 'ep23']] as const) {
    spawn('ip', ['netns', 'exec', B.name, 'socat', '-t5', `TCP-LISTEN:8080,bind=${ip},reuseaddr,fork`, `SYSTEM:echo ${name}`], { stdio: 'ignore' }).unref();
  }
  const connect = async (ip: string, port: number) => {
    const r = await runner.run(['ip', 'netns', 'exec', B.name, 'socat', '-t2', '-T3', '-', `TCP:${ip}:${port},connect-timeout=3`], { allowFailure: true, timeoutMs: 10_000 });
    return (r.exitCode === 0 ? r.stdout : r.stderr).trim();
  };
  for (let i = 0; i < 100 && (await connect('10.244.1.23', 8080)) !== 'ep23'; i++) await sleep(50);

  const web = [...cluster.values()].find(([s]) => s.spn.name === 'web')!;
  t.equal(await connect(PKT_CIP, 80), 'ep22', 'before: the ClusterIP reaches the endpoint the last sync set (10.244.1.22)');
  web[1] = [ep('10.244.1.23:8080', { local: true })];
  await step(t, 'the packet Service: endpoint replaced', ['pkt/web']);
  const seen = new Set<string>();
  for (let i = 0; i < 6; i++) seen.add(await connect(PKT_CIP, 80));
  t.same([...seen], ['ep23'], 'every new connection reaches the new endpoint');

  web[1] = [ep('10.244.1.21:8080', { local: true }), ep('10.244.1.23:8080', { local: true })];
  await step(t, 'the packet Service: endpoint added', ['pkt/web']);
  const both = new Set<string>();
  for (let i = 0; i < 30 && both.size < 2; i++) both.add(await connect(PKT_CIP, 80));
  t.same([...both].sort(), ['ep21', 'ep23'], 'an added endpoint gets connections too (numgen choice)');
});

t.test('a kernel error in a netlink batch names its line and applies nothing', async (t) => {
  const script = 'add chain ip kube-proxy service-ZZZ/x\nadd rule ip kube-proxy service-ZZZ/x goto endpoint-nosuch/x\n';
  const err = await nftB.applyViaNetlink!(script).catch((e: unknown) => e);
  t.match(err, { code: 'NN_ERR_RULE_APPLY', message: /at line 2 of 3: .*No such file or directory/ });
  t.match((err as { details: string }).details, />\s+2 \| add rule ip kube-proxy service-ZZZ\/x goto endpoint-nosuch/);
  const chains = (await runner.run(['nsenter', `--net=${B.path}`, '--', 'nft', 'list', 'chains', 'ip'])).stdout;
  t.notMatch(chains, /service-ZZZ/, 'the chain of the failed batch does not exist');
  t.same(await listing(B.path), await listing(A.path), 'B still equals A');
});
