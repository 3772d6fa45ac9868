/**
 * Root test: real packets through the nftables backend's rules.
 *
 * A node namespace with a bridge (br0, 10.244.1.1/24) and three pod
 * namespaces on it: two backends serving TCP with socat (each answers its
 * own name) and a client. The backend syncs a ClusterIP+NodePort Service for
 * the two backends. Then: TCP to the ClusterIP reaches both endpoints; to the
 * NodePort too; a ping to the ClusterIP is rejected at once (ICMP port
 * unreachable) and, with clusterIPPing 'drop', silently dropped; a port the
 * Service does not serve is refused at once; a pod reaching itself through
 * its Service works (hairpin). Nothing outside the nn-nftp-<pid>-* namespaces
 * is touched. packets-sharded.priv.test.ts runs it all in the sharded layout
 * (NODENET_TEST_NFT_SHARDS), and switches between the layouts on a live node.
 */
import t from 'tap';
import { spawn } from 'node:child_process';
import { setTimeout as sleep } from 'node:timers/promises';
import { SpawnRunner, type RunResult } from '../../exec/runner.js';
import { silentLogger } from '../../../../lib/log/log.js';
import { parseCidr, parseIPv4 } from '../../../../lib/net/ip.js';
import { NftExecutor } from '../../netfilter/nft/nft.js';
import type { ProxyNodeConfig } from '../types.js';
import { NftablesBackend } from './proxier.js';
import { ep, snapshot, svc } from '../test-fixtures.js';

const runner = new SpawnRunner();
const tag = `nn-nftp-${process.pid}`;
const NODE = `${tag}-node`;
/** The node's uplink (its "eth0" side): where its default route points, as on a real node. */
const UP = `${tag}-up`;
const PODS = [
  { ns: `${tag}-p1`, ip: '10.244.1.11', name: 'pod1', veth: 'vp1' },
  { ns: `${tag}-p2`, ip: '10.244.1.12', name: 'pod2', veth: 'vp2' },
  { ns: `${tag}-cl`, ip: '10.244.1.13', name: 'client', veth: 'vp3' },
] as const;
const [P1, P2, CLIENT] = PODS;
const CLUSTER_IP = '10.96.0.10';
const NODE_IP = '10.244.1.1';

const sh = (argv: string[], input?: string): Promise<RunResult> => runner.run(argv, input === undefined ? {} : { input });
const inNs = (ns: string, argv: string[], allowFailure = true, timeoutMs = 10_000): Promise<RunResult> =>
  runner.run(['ip', 'netns', 'exec', ns, ...argv], { allowFailure, timeoutMs });

const all = [NODE, UP, ...PODS.map((p) => p.ns)];
async function removeAll(): Promise<void> {
  for (const ns of all) {
    const pids = (await runner.run(['ip', 'netns', 'pids', ns], { allowFailure: true })).stdout.split('\n').filter(Boolean);
    for (const p of pids) {
      try {
        process.kill(Number(p), 'SIGKILL');
      } catch {
        /* gone */
      }
    }
  }
  for (const ns of all) await runner.run(['ip', 'netns', 'del', ns], { allowFailure: true });
}
t.teardown(removeAll);

/** One TCP connection from `ns`; returns what the server said, or the error, and how long it took. */
async function connect(ns: string, ip: string, port: number): Promise<{ out: string; ms: number }> {
  const t0 = performance.now();
  const r = await inNs(ns, ['socat', '-t2', '-T3', '-', `TCP:${ip}:${port},connect-timeout=3`]);
  return { out: (r.exitCode === 0 ? r.stdout : r.stderr).trim(), ms: performance.now() - t0 };
}

async function waitListening(p: (typeof PODS)[number]): Promise<void> {
  for (let i = 0; i < 100; i++) {
    if ((await connect(CLIENT.ns, p.ip, 8080)).out === p.name) return;
    await sleep(50);
  }
  throw new Error(`${p.name} never answered on ${p.ip}:8080`);
}

/** Builds the namespaces and starts the backends; on failure, removes what it made before failing. */
async function build(): Promise<void> {
  for (const ns of all) {
    await sh(['ip', 'netns', 'add', ns]);
    await sh(['ip', '-n', ns, 'link', 'set', 'lo', 'up']);
  }
  // The node: bridge, forwarding, br_netfilter on (replies between pods on one bridge must see the
  // un-DNAT), and an uplink with the default route, so traffic to a ClusterIP that no rule DNATs is
  // routed (out of eth0) and reaches the forward hook. Routing it back out of br0 instead would make
  // the node send ICMP redirects to the pod, which share the kernel's per-host ICMP rate limit with
  // the reject's port-unreachable and swallow it (seen: IcmpOutRateLimitHost).
  await sh(['ip', '-n', NODE, 'link', 'add', 'eth0', 'type', 'veth', 'peer', 'name', 'eth0', 'netns', UP]);
  await sh(['ip', '-n', UP, '-batch', '-'], 'addr add 10.0.99.1/30 dev eth0\nlink set eth0 up\n');
  await sh(
    ['ip', '-n', NODE, '-batch', '-'],
    `addr add 10.0.99.2/30 dev eth0\nlink set eth0 up\nlink add br0 type bridge\naddr add ${NODE_IP}/24 dev br0\nlink set br0 up\nroute add default via 10.0.99.1\n`,
  );
  await inNs(NODE, ['sysctl', '-qw', 'net.ipv4.ip_forward=1'], false);
  await inNs(NODE, ['sysctl', '-qw', 'net.bridge.bridge-nf-call-iptables=1'], false);
  for (const p of PODS) {
    await sh(['ip', '-n', NODE, 'link', 'add', p.veth, 'type', 'veth', 'peer', 'name', 'eth0', 'netns', p.ns]);
    // hairpin: a pod whose Service sends it back to itself gets the packet back through its own port
    await sh(['ip', '-n', NODE, '-batch', '-'], `link set ${p.veth} master br0\nlink set ${p.veth} type bridge_slave hairpin on\nlink set ${p.veth} up\n`);
    await sh(['ip', '-n', p.ns, '-batch', '-'], `addr add ${p.ip}/24 dev eth0\nlink set eth0 up\nroute add default via ${NODE_IP}\n`);
  }
  for (const p of [P1, P2]) {
    const child = spawn('ip', ['netns', 'exec', p.ns, 'socat', '-t10', 'TCP-LISTEN:8080,reuseaddr,fork', `SYSTEM:echo ${p.name}`], { stdio: 'ignore' });
    child.unref();
  }
  await waitListening(P1);
  await waitListening(P2);
}

try {
  await build();
} catch (e) {
  await removeAll();
  throw e;
}

const SHARDS = Number(process.env['NODENET_TEST_NFT_SHARDS'] ?? 1);
const cfg: ProxyNodeConfig = { nodeName: 'node-a', nodeIPs: [parseIPv4(NODE_IP)], clusterCIDR: parseCidr('10.244.0.0/16').cidr, prefix: 'KUBE', masqueradeBit: 14 };
const nft = new NftExecutor({ runner, netns: `/var/run/netns/${NODE}` });
const snap = snapshot([svc('default', 'web', CLUSTER_IP, { portName: 'http', nodePort: 30080 }), [ep(`${P1.ip}:8080`, { local: true }), ep(`${P2.ip}:8080`, { local: true })]]);

async function spread(ns: string, ip: string, port: number, n = 16): Promise<Map<string, number>> {
  const seen = new Map<string, number>();
  for (let i = 0; i < n; i++) {
    const { out } = await connect(ns, ip, port);
    seen.set(out, (seen.get(out) ?? 0) + 1);
  }
  return seen;
}

t.test('ClusterIP and NodePort reach both endpoints', async (t) => {
  const b = new NftablesBackend({ nft, nodeConfig: cfg, log: silentLogger(), options: { shards: SHARDS } });
  await b.sync(snap, { full: true });
  const viaClusterIP = await spread(CLIENT.ns, CLUSTER_IP, 80);
  t.same([...viaClusterIP.keys()].sort(), ['pod1', 'pod2'], `ClusterIP answers: ${JSON.stringify([...viaClusterIP])}`);
  const viaNodePort = await spread(CLIENT.ns, NODE_IP, 30080);
  t.same([...viaNodePort.keys()].sort(), ['pod1', 'pod2'], `NodePort answers: ${JSON.stringify([...viaNodePort])}`);
  const fromNode = await spread(NODE, CLUSTER_IP, 80, 8);
  t.ok([...fromNode.keys()].every((k) => k === 'pod1' || k === 'pod2'), `from the node itself: ${JSON.stringify([...fromNode])}`);
});

t.test('hairpin: a backend reaching its own Service', async (t) => {
  const seen = await spread(P1.ns, CLUSTER_IP, 80);
  t.same([...seen.keys()].sort(), ['pod1', 'pod2'], `answers: ${JSON.stringify([...seen])}`);
});

t.test('a port the Service does not serve is refused at once', async (t) => {
  const r = await connect(CLIENT.ns, CLUSTER_IP, 81);
  t.match(r.out, /Connection refused/);
  t.ok(r.ms < 1500, `refused in ${Math.round(r.ms)} ms`);
});

t.test('ping to a ClusterIP: rejected at once; with clusterIPPing drop, silently dropped', async (t) => {
  let t0 = performance.now();
  let r = await inNs(CLIENT.ns, ['ping', '-n', '-c1', '-W2', CLUSTER_IP]);
  let ms = performance.now() - t0;
  t.not(r.exitCode, 0);
  t.match(r.stdout, /Destination Port Unreachable/);
  t.ok(ms < 1500, `answered in ${Math.round(ms)} ms`);

  const quiet = new NftablesBackend({ nft, nodeConfig: cfg, log: silentLogger(), options: { clusterIPPing: 'drop', shards: SHARDS } });
  await quiet.sync(snap, { full: true });
  t0 = performance.now();
  r = await inNs(CLIENT.ns, ['ping', '-n', '-c1', '-W1', CLUSTER_IP]);
  ms = performance.now() - t0;
  t.not(r.exitCode, 0);
  t.notMatch(r.stdout, /Unreachable/);
  t.match(r.stdout, /100% packet loss/);
  t.ok(ms >= 900, `waited ${Math.round(ms)} ms for nothing`);
  // TCP to the Service is unaffected by the option
  t.same([...(await spread(CLIENT.ns, CLUSTER_IP, 80, 8)).keys()].every((k) => k === 'pod1' || k === 'pod2'), true);
});

t.test('a Service without endpoints is refused at once; cleanup removes the rules', async (t) => {
  const b = new NftablesBackend({ nft, nodeConfig: cfg, log: silentLogger(), options: { shards: SHARDS } });
  await b.sync(snapshot([svc('default', 'web', CLUSTER_IP, { portName: 'http', nodePort: 30080 }), []]), { full: true });
  const r = await connect(CLIENT.ns, CLUSTER_IP, 80);
  t.match(r.out, /Connection refused/);
  t.ok(r.ms < 1500, `refused in ${Math.round(r.ms)} ms`);
  await b.cleanup();
  t.equal(await nft.tableExists('ip', 'kube-proxy'), false);
  for (let i = 0; i < SHARDS; i++) t.equal(await nft.tableExists('ip', `kube-proxy-${i}`), false, `kube-proxy-${i} removed`);
  // no rules: the ClusterIP is just an address routed to nowhere
  const gone = await connect(CLIENT.ns, CLUSTER_IP, 80);
  t.notMatch(gone.out, /^pod/);
});

// The sharded run only (packets-sharded.priv.test.ts).
if (SHARDS > 1) t.test('the sharded layout: a partial sync in a shard, and a switch of layouts on a live node', async (t) => {
  const b = new NftablesBackend({ nft, nodeConfig: cfg, log: silentLogger(), options: { shards: SHARDS } });
  await b.sync(snap, { full: true });
  const one = snapshot([svc('default', 'web', CLUSTER_IP, { portName: 'http', nodePort: 30080 }), [ep(`${P2.ip}:8080`, { local: true })]]);
  await b.sync(one, { full: false, changed: new Set(['default/web']) });
  t.equal(b.lastSync!.full, false, 'partial');
  t.same([...(await spread(CLIENT.ns, CLUSTER_IP, 80, 6)).keys()], ['pod2'], 'after the partial sync only pod2 answers');
  // A node switched to one table (shards 1): the full sync deletes the shard tables and rebuilds in one transaction.
  const flat = new NftablesBackend({ nft, nodeConfig: cfg, log: silentLogger() });
  await flat.sync(snap, { full: true });
  t.equal(flat.lastSync!.via, 'netlink', 'the rebuild (delete table included) went as one netlink batch');
  for (let i = 0; i < SHARDS; i++) t.equal(await nft.tableExists('ip', `kube-proxy-${i}`), false, `one table: kube-proxy-${i} gone`);
  t.same([...(await spread(CLIENT.ns, CLUSTER_IP, 80)).keys()].sort(), ['pod1', 'pod2'], 'one table: both answer');
  // And back to shards: the main table's DNAT chains go.
  const again = new NftablesBackend({ nft, nodeConfig: cfg, log: silentLogger(), options: { shards: SHARDS } });
  await again.sync(one, { full: true });
  t.equal(again.lastSync!.via, 'netlink', 'so did the rebuild into shards');
  const names = await nft.listNames('ip', 'kube-proxy');
  t.notOk(names!.chains.includes('services'), 'sharded again: no services chain in the main table');
  t.notOk(names!.chains.some((c) => c.startsWith('endpoint-')), 'nor endpoint chains');
  t.same([...(await spread(CLIENT.ns, CLUSTER_IP, 80, 6)).keys()], ['pod2'], 'sharded again: pod2 answers');
  t.same([...(await spread(CLIENT.ns, NODE_IP, 30080, 6)).keys()], ['pod2'], 'and the NodePort');
  await again.cleanup();
});
