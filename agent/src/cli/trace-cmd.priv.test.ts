/**
 * Root test: `nodenet trace` over rules the real backends wrote into a
 * scratch namespace (nn-trc-<pid>), read back with the real tools
 * (iptables-save, nft list table, ip addr) through the SpawnRunner.
 * A Service with two endpoints must trace to both, one without endpoints to
 * REJECT, in both modes; with both modes' rules present, auto-detection
 * refuses to guess. With --lab, across that namespace and a second one
 * (nn-trc2-<pid>) whose routes a routed backend would write, made by hand
 * with `ip route ... proto 78` (host-gw's) and `proto bird` (BIRD's), read
 * over real netlink: the path names the route's kind and the remote node.
 * The namespaces are removed in teardown; the root namespace's firewall,
 * nft tables and links are checked unchanged.
 */
import t, { type Test } from 'tap';
import { execFileSync } from 'node:child_process';
import { SpawnRunner } from '../exec/runner.js';
import { localAddresses, readNetwork } from '../node/compose.js';
import { silentLogger } from '../../../lib/log/log.js';
import { removeNetns } from '../netns/scratch-netns.js';
import { ExecIptables, createIptables } from '../netfilter/iptables/iptables.js';
import { NftExecutor } from '../netfilter/nft/nft.js';
import { IptablesBackend } from '../proxy/iptables/proxier.js';
import { NftablesBackend } from '../proxy/nftables/proxier.js';
import { snapshotFromObjects } from '../proxy/snapshot.js';
import type { ProxyNodeConfig } from '../proxy/types.js';
import { CLUSTER_CIDR, clusterIP, externalClientIP, makeEndpointSlice, makeService, nodeIP, nodeName, podCIDR, podGateway, podIP } from '../testing/addresses.js';
import { traceCommand, type TraceReport } from './trace-cmd.js';

const runner = new SpawnRunner();
const log = silentLogger();
const NS = `nn-trc-${process.pid}`;
const NS_PATH = `/run/netns/${NS}`;

const NODE = nodeIP(1);
const CLIENT = podIP(1, 4);
const WEB = clusterIP(10);
const EMPTY = clusterIP(20);
const E1 = `${podIP(1, 10)}:8080`;
const E2 = `${podIP(2, 11)}:8080`;

const CFG: ProxyNodeConfig = { nodeName: nodeName(1), nodeIPs: [NODE], clusterCIDR: CLUSTER_CIDR, prefix: 'KUBE', masqueradeBit: 14 };
const SNAP = snapshotFromObjects(
  [
    makeService({ name: 'web', type: 'NodePort', clusterIP: WEB, ports: [{ port: 80, targetPort: 8080, nodePort: 30080 }] }),
    makeService({ name: 'empty', clusterIP: EMPTY, ports: [{ port: 80, targetPort: 8080 }] }),
  ],
  [makeEndpointSlice({ service: 'web', ports: [{ port: 8080 }], endpoints: [{ ip: podIP(1, 10), nodeName: nodeName(1) }, { ip: podIP(2, 11), nodeName: nodeName(2) }] })],
  nodeName(1),
);

function rootState(): string {
  const run = (cmd: string, args: string[]): string => {
    try {
      return execFileSync(cmd, args, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] }).split('\n').filter((l) => !l.startsWith('#')).join('\n');
    } catch (e) {
      return `${cmd} failed: ${String(e)}`;
    }
  };
  return [run('iptables-nft-save', []), run('iptables-legacy-save', []), run('nft', ['list', 'tables']), run('ip', ['-br', 'link'])].join('\n--\n');
}
const rootBefore = rootState();

execFileSync('ip', ['netns', 'add', NS]);
t.teardown(() => removeNetns(NS));
try {
  // The node's addresses: trace reads them from the namespace (local = OUTPUT path, NodePorts).
  const ipn = (...args: string[]) => execFileSync('ip', ['-n', NS, ...args]);
  ipn('link', 'set', 'lo', 'up');
  ipn('link', 'add', 'eth0', 'type', 'veth', 'peer', 'name', 'eth0p');
  ipn('addr', 'add', `${NODE}/24`, 'dev', 'eth0');
  ipn('link', 'add', 'cbr0', 'type', 'bridge');
  ipn('addr', 'add', `${podGateway(1)}/24`, 'dev', 'cbr0');
} catch (e) {
  removeNetns(NS); // a throw here ends the file before tap's teardown could run
  throw e;
}

async function trace(argv: readonly string[]): Promise<{ code: number; out: string; err: string }> {
  let out = '';
  let err = '';
  const code = await traceCommand(['--netns', NS, ...argv], { runner, localAddresses, stdout: (s) => (out += s), stderr: (s) => (err += s) });
  return { code, out, err };
}

async function json(t: Test, argv: readonly string[]): Promise<TraceReport> {
  const r = await trace(['--json', ...argv]);
  t.equal(r.code, 0, `${argv.join(' ')}: exit 0 ${r.err}`);
  return JSON.parse(r.out) as TraceReport;
}

const lastLines = (out: string): string[] => out.trimEnd().split('\n').slice(-2);

const nftBackend = new NftablesBackend({ nft: new NftExecutor({ runner, netns: NS_PATH }), nodeConfig: CFG, log });

t.test('iptables mode, on the backend `iptables` drives', async (t) => {
  const ipt = await createIptables({ runner, log, netns: NS_PATH, prefix: 'KUBE' });
  const b = new IptablesBackend({ iptables: ipt, nodeConfig: CFG, log });
  await b.sync(SNAP, { full: true });
  t.teardown(() => b.cleanup());

  const r = await trace([CLIENT, 'tcp', WEB, '80']);
  t.equal(r.code, 0, r.err);
  t.match(r.out, new RegExp(`\\(iptables, iptables-${ipt.backend}-save\\)`), 'auto-detected');
  t.same(lastLines(r.out), [`destination: one of: ${E1}, ${E2}`, 'masquerade: no']);
  t.match(r.out, /\n {2}nat\/KUBE-SERVICES\n/);

  const rep = await json(t, [CLIENT, 'tcp', WEB, '80']);
  t.same(rep.endpoints, [E1, E2], 'both endpoints');
  t.equal(rep.mode, 'iptables');
  t.same([...rep.localAddresses].sort(), ['10.244.1.1', '127.0.0.1', NODE].sort(), "the namespace's addresses");
  t.equal(rep.visited.filter((c) => c.startsWith('nat/KUBE-SEP-')).length, 2);
  t.same(rep.skippedRules, [], 'every rule of the kernel dump understood');

  t.equal((await json(t, [CLIENT, 'tcp', EMPTY, '80'])).destination, 'REJECT', 'no endpoints: REJECT');
  const np = await json(t, [externalClientIP(1), 'tcp', NODE, '30080']);
  t.same([np.endpoints, np.masquerade], [[E1, E2], true], 'NodePort from outside: both endpoints, masqueraded');
  const self = await json(t, [NODE, 'tcp', WEB, '80']);
  t.same([self.entry, self.visited[0], self.endpoints], ['output', 'nat/OUTPUT', [E1, E2]], 'from the node itself');
});

t.test('iptables mode: rules in the other backend are found too', async (t) => {
  const ipt = new ExecIptables({ runner, log, netns: NS_PATH }, 'legacy');
  const b = new IptablesBackend({ iptables: ipt, nodeConfig: CFG, log });
  await b.sync(SNAP, { full: true });
  t.teardown(() => b.cleanup());
  const r = await trace([CLIENT, 'tcp', WEB, '80']);
  t.equal(r.code, 0, r.err);
  t.match(r.out, /\(iptables, iptables-legacy-save\)/);
  t.same(lastLines(r.out), [`destination: one of: ${E1}, ${E2}`, 'masquerade: no']);
});

t.test('nftables mode', async (t) => {
  await nftBackend.sync(SNAP, { full: true });

  const r = await trace([CLIENT, 'tcp', WEB, '80']);
  t.equal(r.code, 0, r.err);
  t.match(r.out, /\(nftables, table ip kube-proxy\)/, 'auto-detected (the iptables rules were cleaned up)');
  t.same(lastLines(r.out), [`destination: one of: ${E1}, ${E2}`, 'masquerade: no']);
  t.match(r.out, /\n {2}services\n/);

  const rep = await json(t, [CLIENT, 'tcp', WEB, '80']);
  t.same(rep.endpoints, [E1, E2], 'both endpoints');
  t.equal(rep.visited.filter((c) => c.startsWith('endpoint-')).length, 2);
  t.equal((await json(t, [CLIENT, 'tcp', EMPTY, '80'])).destination, 'REJECT', 'no endpoints: REJECT');
  t.equal((await json(t, [CLIENT, 'icmp', WEB])).destination, 'REJECT', 'ping to a ClusterIP: REJECT');
  const np = await json(t, [externalClientIP(1), 'tcp', NODE, '30080']);
  t.same([np.endpoints, np.masquerade], [[E1, E2], true], 'NodePort from outside: both endpoints, masqueraded');
});

t.test('both modes present: auto refuses, --mode picks', async (t) => {
  const ipt = await createIptables({ runner, log, netns: NS_PATH, prefix: 'KUBE' });
  const b = new IptablesBackend({ iptables: ipt, nodeConfig: CFG, log });
  await b.sync(SNAP, { full: true });
  const r = await trace([CLIENT, 'tcp', WEB, '80']);
  t.equal(r.code, 2);
  t.match(r.err, /both nftables rules \(table ip kube-proxy\) and iptables rules .* --mode nftables or --mode iptables/);
  for (const mode of ['iptables', 'nftables']) {
    const m = await trace(['--mode', mode, CLIENT, 'tcp', WEB, '80']);
    t.equal(m.code, 0, m.err);
    t.match(m.out, `(${mode}, `);
    t.same(lastLines(m.out), [`destination: one of: ${E1}, ${E2}`, 'masquerade: no']);
  }
  await b.cleanup();
  await nftBackend.cleanup();

  const none = await trace([CLIENT, 'tcp', WEB, '80']);
  t.equal(none.code, 1, 'no rules left: exit 1');
  t.match(none.err, /no nodenet Service rules in .*: no nftables table ip kube-proxy; no KUBE-SERVICES chain in the nat table/);
});

t.test('--lab over routes a routed backend writes: host-gw\'s proto 78, BIRD\'s proto bird, read over netlink', async (t) => {
  const NS2 = `nn-trc2-${process.pid}`;
  const ipn = (ns: string, ...args: string[]) => execFileSync('ip', ['-n', ns, ...args]);
  execFileSync('ip', ['netns', 'add', NS2]);
  t.teardown(() => removeNetns(NS2));
  ipn(NS2, 'link', 'add', 'eth0', 'type', 'veth', 'peer', 'name', 'eth0p');
  ipn(NS2, 'addr', 'add', `${nodeIP(2)}/24`, 'dev', 'eth0');
  ipn(NS2, 'link', 'add', 'cbr0', 'type', 'bridge');
  ipn(NS2, 'addr', 'add', `${podGateway(2)}/24`, 'dev', 'cbr0');
  for (const [ns, dev] of [[NS, 'eth0'], [NS, 'eth0p'], [NS, 'cbr0'], [NS2, 'eth0'], [NS2, 'eth0p'], [NS2, 'cbr0']] as const) ipn(ns, 'link', 'set', dev, 'up');
  await nftBackend.sync(SNAP, { full: true });
  t.teardown(() => nftBackend.cleanup());
  const labNodes = () => [{ name: 'n1', netns: NS_PATH, runDir: '/nonexistent', clusterCIDR: CLUSTER_CIDR }, { name: 'n2', netns: `/run/netns/${NS2}`, runDir: '/nonexistent', clusterCIDR: CLUSTER_CIDR }];
  const lab = async (): Promise<{ code: number; out: string; err: string }> => {
    let out = '';
    let err = '';
    const code = await traceCommand(['--lab', 'x', CLIENT, 'tcp', WEB, '80'], { runner, localAddresses, readNetwork, labNodes, stdout: (s) => (out += s), stderr: (s) => (err += s) });
    return { code, out, err };
  };
  const esc = (s: string) => s.replace(/[./()]/g, '\\$&');
  const hop = (how: string) => new RegExp(`to ${esc(podIP(2, 11))}:\\npath:\\n {2}1\\. n1: route ${esc(podCIDR(2))} via ${esc(nodeIP(2))} dev eth0: ${how}, out of eth0 with no tunnel\\n.*source is kept\\)\\n {2}2\\. n2: route ${esc(podCIDR(2))} dev cbr0: bridged on cbr0 to the pod ${esc(podIP(2, 11))}\\n.*\\nend: delivered to the pod`);

  ipn(NS, 'route', 'add', podCIDR(2), 'via', nodeIP(2), 'dev', 'eth0', 'proto', '78');
  const hg = await lab();
  t.equal(hg.code, 0, hg.err);
  t.match(hg.out, hop(esc(`routed via ${nodeIP(2)} (node n2), host-gw route (proto 78)`)), 'host-gw: the proto-78 route to n2, then its bridge');

  ipn(NS, 'route', 'replace', podCIDR(2), 'via', nodeIP(2), 'dev', 'eth0', 'proto', 'bird');
  const bgp = await lab();
  t.equal(bgp.code, 0, bgp.err);
  t.match(bgp.out, hop(esc(`BGP-learned route (proto bird) via ${nodeIP(2)} (node n2)`)), 'BGP: BIRD\'s route with its next hop, then the bridge');
  ipn(NS, 'route', 'del', podCIDR(2), 'proto', 'bird');
});

t.test('the root namespace was not touched', async (t) => {
  t.equal(rootState(), rootBefore);
});
