/**
 * `nodenet trace` without root: argument errors, mode detection, and the
 * report in both modes. The "live" rules are what the real backends
 * (IptablesBackend, NftablesBackend) wrote into the validating fakes, served
 * through a FakeRunner that answers only the exact commands a node would run
 * in the expected namespace (anything else fails the test).
 */
import t from 'tap';
import { NetnsNotFoundError } from '../../../lib/errors/errors.js';
import { FakeRunner } from '../exec/runner.fake.js';
import type { RunResult } from '../exec/runner.js';
import { silentLogger } from '../../../lib/log/log.js';
import { FakeIptables } from '../netfilter/iptables/iptables.fake.js';
import { parseSave } from '../netfilter/iptables/iptables-parse.js';
import { NftFake } from '../netfilter/nft/nft.fake.js';
import { IptablesBackend } from '../proxy/iptables/proxier.js';
import { NftablesBackend } from '../proxy/nftables/proxier.js';
import { snapshotFromObjects } from '../proxy/snapshot.js';
import type { ProxyNodeConfig } from '../proxy/types.js';
import { CLUSTER_CIDR, clusterIP, externalClientIP, makeEndpointSlice, makeService, nodeIP, nodeName, podGateway, podIP } from '../testing/addresses.js';
import { traceIptables } from '../trace/iptables-tracer.js';
import { traceNftables } from '../trace/nft-tracer.js';
import { parseTraceArgs, traceCommand, type TraceReport } from './trace-cmd.js';
import { overlayNode, routedNode } from '../testing/node-networks.js';

const NS = 'nn-trc-unit';
const NS_PATH = `/run/netns/${NS}`;
const NODE = nodeIP(1); // 192.168.77.11
const GW = podGateway(1); // 10.244.1.1
const CLIENT = podIP(1, 4); // 10.244.1.5
const WEB = clusterIP(10); // 10.96.0.10
const ONE = clusterIP(11);
const EMPTY = clusterIP(20);
const E1 = `${podIP(1, 10)}:8080`; // 10.244.1.11:8080
const E2 = `${podIP(2, 11)}:8080`; // 10.244.2.12:8080

function cfg(prefix = 'KUBE'): ProxyNodeConfig {
  return { nodeName: nodeName(1), nodeIPs: [NODE], clusterCIDR: CLUSTER_CIDR, prefix, masqueradeBit: 14 };
}

// Kubernetes objects as the API server stores them, through the real parsers into a snapshot.
const SNAP = snapshotFromObjects(
  [
    makeService({ name: 'web', type: 'NodePort', clusterIP: WEB, ports: [{ port: 80, targetPort: 8080, nodePort: 30080 }] }),
    makeService({ name: 'one', clusterIP: ONE, ports: [{ port: 80, targetPort: 8080 }] }),
    makeService({ name: 'empty', clusterIP: EMPTY, ports: [{ port: 80, targetPort: 8080 }] }),
  ],
  [
    makeEndpointSlice({ service: 'web', ports: [{ port: 8080 }], endpoints: [{ ip: podIP(1, 10), nodeName: nodeName(1) }, { ip: podIP(2, 11), nodeName: nodeName(2) }] }),
    makeEndpointSlice({ service: 'one', ports: [{ port: 8080 }], endpoints: [{ ip: podIP(1, 10), nodeName: nodeName(1) }] }),
  ],
  nodeName(1),
);

/** iptables-save output of what the iptables backend writes (all tables, as `iptables-nft-save` prints them). */
async function iptablesSave(prefix = 'KUBE'): Promise<string> {
  const f = new FakeIptables();
  await new IptablesBackend({ iptables: f, nodeConfig: cfg(prefix), log: silentLogger() }).sync(SNAP, { full: true });
  return (await f.save('raw')) + (await f.save('mangle')) + (await f.save('filter')) + (await f.save('nat'));
}

/** `nft list table ip kube-proxy` output of what the nftables backend writes. */
async function nftListing(prefix = 'KUBE'): Promise<string> {
  const f = new NftFake();
  const b = new NftablesBackend({ nft: f, nodeConfig: cfg(prefix), log: silentLogger() });
  await b.sync(SNAP, { full: true });
  return (await f.listTableText('ip', b.table))!;
}

const IPT = await iptablesSave();
const NFT = await nftListing();

const ok = (stdout: string): RunResult => ({ stdout, stderr: '', exitCode: 0 });
/** What netlink says the node namespace has (compose's localAddresses). */
const ADDRS = ['127.0.0.1', NODE, GW];
const localAddresses = async (netns?: string): Promise<string[]> => {
  if (netns !== undefined && netns !== NS_PATH) throw new Error(`no namespace ${netns}`);
  return [...ADDRS];
};

interface NodeRules {
  /** `iptables -V` backend. */
  readonly alternative?: 'nf_tables' | 'legacy';
  readonly nftSave?: RunResult;
  readonly legacySave?: RunResult;
  /** The listing of table `name`, or null (no such table). */
  readonly nft?: { readonly name: string; readonly listing: string | null } | RunResult;
}

/** A node's namespace: answers the read-only commands trace runs there, nothing else, and only in NS_PATH. */
function node(r: NodeRules): FakeRunner {
  return new FakeRunner().on((argv, opts) => {
    if (opts.netns !== NS_PATH) return undefined;
    const cmd = argv.join(' ');
    if (cmd === 'iptables -V') return ok(`iptables v1.8.9 (${r.alternative ?? 'nf_tables'})\n`);
    if (cmd === 'iptables-nft-save') return r.nftSave ?? ok('');
    if (cmd === 'iptables-legacy-save') return r.legacySave ?? ok('');
    const m = /^nft list table ip (\S+)$/.exec(cmd);
    if (m) {
      const n = r.nft;
      if (n && 'exitCode' in n) return n;
      if (n && n.name === m[1] && n.listing !== null) return ok(n.listing);
      return { stdout: '', stderr: `Error: No such file or directory\nlist table ip ${m[1]}\n              ^^^^\n`, exitCode: 1 };
    }
    return undefined;
  });
}

const IPT_NODE: NodeRules = { nftSave: ok(IPT) };
const NFT_NODE: NodeRules = { nft: { name: 'kube-proxy', listing: NFT } };
const checkNetns = (p: string): void => {
  if (p !== NS_PATH) throw new NetnsNotFoundError(p);
};

async function run(runner: FakeRunner, argv: readonly string[], addrs = localAddresses): Promise<{ code: number; out: string; err: string }> {
  let out = '';
  let err = '';
  const code = await traceCommand(argv, { runner, localAddresses: addrs, checkNetns, stdout: (s) => (out += s), stderr: (s) => (err += s) });
  return { code, out, err };
}

const cmds = (r: FakeRunner): string[] => r.calls.map((c) => c.argv.join(' '));

t.test('usage errors: exit 2, the message names the bad argument, nothing is run', async (t) => {
  const cases: [string[], RegExp][] = [
    [[], /need SRC PROTO DST \[PORT\], got 0/],
    [['--netns', NS, CLIENT, 'tcp'], /need SRC PROTO DST/],
    [['--netns', NS, '10.244.1.300', 'tcp', WEB, '80'], /SRC "10\.244\.1\.300" is not an IPv4 address/],
    [['--netns', NS, CLIENT, 'gre', WEB, '80'], /PROTO "gre": expected tcp, udp, sctp or icmp/],
    [['--netns', NS, CLIENT, 'tcp', 'web.default', '80'], /DST "web\.default" is not an IPv4 address/],
    [['--netns', NS, CLIENT, 'tcp', WEB], /PORT is missing: tcp needs a destination port/],
    [['--netns', NS, CLIENT, 'tcp', WEB, '0'], /PORT "0": expected a number from 1 to 65535/],
    [['--netns', NS, CLIENT, 'udp', WEB, '65536'], /PORT "65536"/],
    [['--netns', NS, CLIENT, 'tcp', WEB, 'http'], /PORT "http"/],
    [['--netns', NS, CLIENT, 'tcp', WEB, '80', 'extra'], /unexpected argument "extra" after PORT/],
    [['--netns', NS, CLIENT, 'icmp', WEB, '80'], /unexpected argument "80": icmp \(a ping\) has no port/],
    [['--netns', 'nn-nosuch', CLIENT, 'tcp', WEB, '80'], /--netns "nn-nosuch": no network namespace at \/run\/netns\/nn-nosuch/],
    [['--netns', 'run/netns/x', CLIENT, 'tcp', WEB, '80'], /--netns "run\/netns\/x": a path must be absolute/],
    [['--netns', NS, '--mode', 'bpf', CLIENT, 'tcp', WEB, '80'], /--mode "bpf": expected auto, iptables, nftables or ipvs/],
    [['--netns', NS, '--prefix', 'kube', CLIENT, 'tcp', WEB, '80'], /--prefix: proxy chain prefix "kube" must be 1-7 characters/],
    [['--netns', NS, '--verbose', CLIENT, 'tcp', WEB, '80'], /unknown flag --verbose/],
    [['--netns', NS, CLIENT, 'tcp', WEB, '80', '--', 'x'], /unexpected arguments after --/],
  ];
  for (const [argv, msg] of cases) {
    const runner = node(IPT_NODE);
    const r = await run(runner, argv);
    t.equal(r.code, 2, `${argv.join(' ')}: exit 2`);
    t.match(r.err, msg, `${argv.join(' ')}: ${r.err.split('\n')[0]}`);
    t.match(r.err, /usage: nodenet trace/, 'with the usage line');
    t.equal(r.out, '');
    t.same(cmds(runner), [], 'nothing run');
  }
});

t.test('argument parsing: names and paths, protocols, flags', async (t) => {
  const a = parseTraceArgs(['--netns', NS, '--json', CLIENT, 'TCP', WEB, '443'], checkNetns);
  t.same(a.packet, { sourceIP: CLIENT, protocol: 'TCP', destIP: WEB, destPort: 443 });
  const b = parseTraceArgs([CLIENT, 'UdP', WEB, '53', '--netns=/run/netns/nn-trc-unit', '--mode', 'iptables', '--prefix', 'NN', '--from-node'], checkNetns);
  t.match(b, { netns: NS_PATH, mode: 'iptables', prefix: 'NN', fromNode: true, output: 'text', packet: { protocol: 'UDP', destPort: 53 } });
  const c = parseTraceArgs([CLIENT, 'icmp', WEB], () => undefined);
  t.same(c.packet, { sourceIP: CLIENT, protocol: 'ICMP', destIP: WEB });
  t.equal(c.netns, undefined, 'no --netns: the process namespace');
  t.equal(c.mode, 'auto');
  t.equal(c.prefix, 'KUBE');
  t.equal(a.output, 'json', '--json is -o json');
  t.equal(parseTraceArgs(['-o', 'yaml', CLIENT, 'icmp', WEB], () => undefined).output, 'yaml');
  t.throws(() => parseTraceArgs(['--json=false', CLIENT, 'icmp', WEB], () => undefined), /takes no value/);
});

t.test('mode detection', async (t) => {
  const argv = ['--netns', NS, CLIENT, 'tcp', WEB, '80'];

  t.test('iptables rules only → iptables (the backend `iptables -V` names)', async (t) => {
    const runner = node(IPT_NODE);
    const r = await run(runner, argv);
    t.equal(r.code, 0, r.err);
    t.match(r.out, /\(iptables, iptables-nft-save\)/);
    t.ok(cmds(runner).includes('nft list table ip kube-proxy'), 'nftables was looked at');
    t.notOk(cmds(runner).includes('iptables-legacy-save'), 'the other backend was not needed');
    t.ok(runner.calls.every((c) => c.opts.netns === NS_PATH), 'every command ran in the namespace');
  });

  t.test('our nft table only → nftables', async (t) => {
    const r = await run(node(NFT_NODE), argv);
    t.equal(r.code, 0, r.err);
    t.match(r.out, /\(nftables, table ip kube-proxy\)/);
  });

  t.test('iptables rules in the backend `iptables` does not drive are found too', async (t) => {
    const runner = node({ legacySave: ok(IPT) });
    const r = await run(runner, argv);
    t.equal(r.code, 0, r.err);
    t.match(r.out, /\(iptables, iptables-legacy-save\)/);
    t.same(cmds(runner).filter((c) => c.includes('save')), ['iptables-nft-save', 'iptables-legacy-save'], 'the user\'s backend first');
  });

  t.test('both → exit 2, asks for --mode; --mode picks one and reads only it', async (t) => {
    const both = { ...IPT_NODE, ...NFT_NODE };
    const r = await run(node(both), argv);
    t.equal(r.code, 2);
    t.match(r.err, /both nftables rules \(table ip kube-proxy\) and iptables rules \(KUBE-SERVICES in nat, iptables-nft-save\).*--mode nftables or --mode iptables/);
    t.equal(r.out, '');

    const ri = node(both);
    const i = await run(ri, ['--mode', 'iptables', ...argv]);
    t.equal(i.code, 0);
    t.match(i.out, /iptables, iptables-nft-save/);
    t.notOk(cmds(ri).some((c) => c.startsWith('nft ')), 'nft not run under --mode iptables');

    const rn = node(both);
    const n = await run(rn, ['--mode', 'nftables', ...argv]);
    t.equal(n.code, 0);
    t.match(n.out, /nftables, table ip kube-proxy/);
    t.notOk(cmds(rn).some((c) => c.includes('iptables')), 'no iptables tool run under --mode nftables');
  });

  t.test('neither → exit 1, naming what was looked for and where', async (t) => {
    const r = await run(node({}), argv);
    t.equal(r.code, 1);
    t.match(r.err, `no nodenet Service rules in ${NS_PATH}`);
    t.match(r.err, 'no nftables table ip kube-proxy');
    t.match(r.err, /no KUBE-SERVICES chain in the nat table \(iptables-nft-save; iptables-legacy-save\)/);
  });

  t.test('--prefix names the table and the chain looked for', async (t) => {
    const none = await run(node({}), ['--prefix', 'NN', ...argv]);
    t.match(none.err, /no nftables table ip nn-proxy.*no NN-SERVICES chain/);
    // rules written with prefix NN are found with --prefix NN, not without
    const nn = { nftSave: ok(await iptablesSave('NN')) };
    t.equal((await run(node(nn), argv)).code, 1, 'KUBE-SERVICES is not there');
    const r = await run(node(nn), ['--prefix', 'NN', ...argv]);
    t.equal(r.code, 0, r.err);
    t.match(r.out, /nat\/NN-SERVICES/);
    const nft = await run(node({ nft: { name: 'nn-proxy', listing: await nftListing('NN') } }), ['--prefix', 'NN', ...argv]);
    t.equal(nft.code, 0, nft.err);
    t.match(nft.out, /table ip nn-proxy/);
  });
});

/** The report's lines: header, entry, "chains:", chains..., destination, masquerade. */
function lines(out: string): { head: string[]; chains: string[]; tail: string[] } {
  const l = out.trimEnd().split('\n');
  const i = l.indexOf('chains:');
  return { head: l.slice(0, i), chains: l.slice(i + 1, -2).map((c) => c.trim()), tail: l.slice(-2) };
}

t.test('iptables mode: the report', async (t) => {
  const dump = parseSave(IPT);
  const base = ['--netns', NS, '--mode', 'iptables'];

  const r = await run(node(IPT_NODE), [...base, CLIENT, 'tcp', WEB, '80']);
  t.equal(r.code, 0, r.err);
  t.equal(r.err, '');
  const l = lines(r.out);
  t.same(l.head, [`trace ${CLIENT} -> ${WEB}:80 (tcp) in ${NS} (iptables, iptables-nft-save)`, 'entry: prerouting (from a pod or from the network)']);
  t.same(l.tail, [`destination: one of: ${E1}, ${E2}`, 'masquerade: no']);
  const direct = traceIptables(dump, { sourceIP: CLIENT, protocol: 'TCP', destIP: WEB, destPort: 80 }, { nodeIPs: ['127.0.0.1', NODE, GW] });
  t.same(l.chains, direct.visited, 'one visited chain per line, in order');
  t.equal(l.chains[0], 'nat/PREROUTING');
  t.ok(l.chains.includes('nat/KUBE-SERVICES'));
  t.equal(l.chains.filter((c) => c.startsWith('nat/KUBE-SEP-')).length, 2, 'both endpoint chains');
  t.ok(l.chains.includes('filter/FORWARD'), 'forwarded to a pod');

  const one = lines((await run(node(IPT_NODE), [...base, CLIENT, 'tcp', ONE, '80'])).out);
  t.equal(one.tail[0], `destination: ${E1}`, 'one endpoint: no "one of"');

  const ext = await run(node(IPT_NODE), [...base, externalClientIP(1), 'tcp', NODE, '30080']);
  t.same(lines(ext.out).tail, [`destination: one of: ${E1}, ${E2}`, 'masquerade: yes'], 'NodePort from outside the cluster is masqueraded');

  const rej = await run(node(IPT_NODE), [...base, CLIENT, 'tcp', EMPTY, '80']);
  t.same(lines(rej.out).tail, ['destination: REJECT (refused: the sender gets an ICMP error at once)', 'masquerade: no']);

  const acc = await run(node(IPT_NODE), [...base, CLIENT, 'tcp', podIP(2, 11), '8080']);
  t.equal(lines(acc.out).tail[0], `destination: ACCEPT (not redirected: it goes on to ${podIP(2, 11)})`, 'no Service: untouched');

  const self = await run(node(IPT_NODE), [...base, NODE, 'tcp', WEB, '80']);
  t.equal(lines(self.out).head[1], 'entry: output (sent by the node itself)', "a node address as source: the OUTPUT path");
  t.equal(lines(self.out).chains[0], 'nat/OUTPUT');

  const forced = await run(node(IPT_NODE), [...base, '--from-node', '192.168.77.99', 'tcp', WEB, '80']);
  t.equal(lines(forced.out).chains[0], 'nat/OUTPUT', '--from-node: any source takes the OUTPUT path');
  const notForced = await run(node(IPT_NODE), [...base, '192.168.77.99', 'tcp', WEB, '80']);
  t.equal(lines(notForced.out).chains[0], 'nat/PREROUTING');

  const j = await run(node(IPT_NODE), [...base, '--json', CLIENT, 'tcp', WEB, '80']);
  t.equal(j.code, 0);
  const rep = JSON.parse(j.out) as TraceReport;
  t.match(rep, {
    mode: 'iptables', source: 'nft', netns: NS_PATH, entry: 'prerouting',
    packet: { source: CLIENT, protocol: 'tcp', destination: WEB, port: 80 },
    destination: `${E1}, ${E2}`, endpoints: [E1, E2], masquerade: false, skippedRules: [],
  });
  t.same(rep.visited, direct.visited);
  t.same(rep.matched, direct.matched, 'iptables: the matched rules too');
  t.same(rep.localAddresses, ['127.0.0.1', NODE, GW], "the namespace's addresses");

  const icmp = await run(node(IPT_NODE), ['--netns', NS, CLIENT, 'icmp', WEB]);
  t.equal(icmp.code, 0, icmp.err);
  t.match(icmp.out, /destination: ACCEPT \(not redirected: it goes on to 10\.96\.0\.10\)/, 'a ping to a ClusterIP: no rule matches ICMP, nothing redirects it');
});

t.test('iptables mode: a foreign rule the parser cannot read is left out, with a warning', async (t) => {
  const foreign = IPT.replace(/^\*filter\n/m, '*filter\n:FOREIGN - [0:0]\n').replace(/^(\*filter[\s\S]*?)COMMIT/m, '$1-A FOREIGN -m physdev --physdev-is-bridged -j ACCEPT\nCOMMIT');
  t.not(foreign, IPT);
  t.throws(() => parseSave(foreign), 'the parser alone refuses it');
  const r = await run(node({ nftSave: ok(foreign) }), ['--netns', NS, CLIENT, 'tcp', WEB, '80']);
  t.equal(r.code, 0, r.err);
  t.match(r.err, /warning: 1 foreign rule\(s\) not understood were left out of the trace, e\.g\. -A FOREIGN -m physdev --physdev-is-bridged -j ACCEPT/);
  t.equal(lines(r.out).tail[0], `destination: one of: ${E1}, ${E2}`);
});

t.test('nftables mode: the report, and ICMP', async (t) => {
  const base = ['--netns', NS];
  const r = await run(node(NFT_NODE), [...base, CLIENT, 'tcp', WEB, '80']);
  t.equal(r.code, 0, r.err);
  const l = lines(r.out);
  t.same(l.head, [`trace ${CLIENT} -> ${WEB}:80 (tcp) in ${NS} (nftables, table ip kube-proxy)`, 'entry: prerouting (from a pod or from the network)']);
  t.same(l.tail, [`destination: one of: ${E1}, ${E2}`, 'masquerade: no']);
  const direct = traceNftables(NFT, { sourceIP: CLIENT, protocol: 'TCP', destIP: WEB, destPort: 80 }, { nodeIPs: [NODE] });
  t.same(l.chains, direct.visited);
  t.ok(l.chains.includes('nat-prerouting') && l.chains.includes('services'));
  t.equal(l.chains.filter((c) => c.startsWith('endpoint-')).length, 2, 'both endpoint chains');

  const ext = await run(node(NFT_NODE), [...base, externalClientIP(1), 'tcp', NODE, '30080']);
  t.same(lines(ext.out).tail, [`destination: one of: ${E1}, ${E2}`, 'masquerade: yes']);
  const rej = await run(node(NFT_NODE), [...base, CLIENT, 'tcp', EMPTY, '80']);
  t.equal(lines(rej.out).tail[0], 'destination: REJECT (refused: the sender gets an ICMP error at once)');
  const wrongPort = await run(node(NFT_NODE), [...base, CLIENT, 'tcp', WEB, '81']);
  t.equal(lines(wrongPort.out).tail[0], 'destination: REJECT (refused: the sender gets an ICMP error at once)', 'a ClusterIP on a port it does not serve');

  const ping = await run(node(NFT_NODE), [...base, CLIENT, 'icmp', WEB]);
  t.equal(ping.code, 0, ping.err);
  t.equal(lines(ping.out).head[0], `trace ${CLIENT} -> ${WEB} (icmp) in ${NS} (nftables, table ip kube-proxy)`);
  t.equal(lines(ping.out).tail[0], 'destination: REJECT (refused: the sender gets an ICMP error at once)', 'a ping to a ClusterIP is rejected');
  const pingPod = await run(node(NFT_NODE), [...base, CLIENT, 'ICMP', podIP(2, 11)]);
  t.equal(lines(pingPod.out).tail[0], `destination: ACCEPT (not redirected: it goes on to ${podIP(2, 11)})`);

  const j = await run(node(NFT_NODE), [...base, '--json', CLIENT, 'icmp', WEB]);
  const rep = JSON.parse(j.out) as TraceReport;
  t.match(rep, { mode: 'nftables', source: 'ip kube-proxy', packet: { protocol: 'icmp', port: null }, destination: 'REJECT', endpoints: [], masquerade: false });
  t.notOk('matched' in rep, 'no iptables-only fields');
});

t.test('rules that cannot be read: exit 1', async (t) => {
  const argv = ['--netns', NS, CLIENT, 'tcp', WEB, '80'];
  const fail = { stdout: '', stderr: 'iptables-nft-save: Permission denied\n', exitCode: 4 };
  const a = await run(node({ nftSave: fail, legacySave: { ...fail, stderr: 'iptables-legacy-save: Permission denied\n' } }), ['--mode', 'iptables', ...argv]);
  t.equal(a.code, 1);
  t.match(a.err, /no KUBE-SERVICES chain in the nat table \(iptables-nft-save exited 4: iptables-nft-save: Permission denied; iptables-legacy-save exited 4/);

  const b = await run(node({ nft: { stdout: '', stderr: 'Error: Operation not permitted\n', exitCode: 1 } }), ['--mode', 'nftables', ...argv]);
  t.equal(b.code, 1);
  t.match(b.err, /cannot read nftables \(`nft list table ip kube-proxy`\): .*Operation not permitted/);

  const c = await run(node({ nft: { name: 'kube-proxy', listing: NFT.replace(/\}\n$/, '') } }), argv);
  t.equal(c.code, 1);
  t.match(c.err, /cannot parse `nft list table ip kube-proxy`/);

  const nftOnly = new FakeRunner().on((argv2, o) => (o.netns === NS_PATH && argv2[0] === 'nft' ? ok(NFT) : undefined));
  const d = await run(nftOnly, argv, async () => {
    throw new Error('netlink listAddresses: EPERM');
  });
  t.equal(d.code, 1);
  t.match(d.err, /cannot list the namespace's addresses/);
});

t.test('--lab: the Service rules of the node the source is on, then each endpoint\'s path across the nodes', async (t) => {
  const N2 = '/run/netns/nn-trc-n2';
  const labNodes = (lab: string) => {
    if (lab !== 'demo') throw new Error(`no lab ${lab}`);
    return [{ name: 'n1', netns: NS_PATH, runDir: '/x/n1', clusterCIDR: '10.244.0.0/16' }, { name: 'n2', netns: N2, runDir: '/x/n2', clusterCIDR: '10.244.0.0/16' }];
  };
  const readNetwork = async (name: string, netns: string) => overlayNode(netns === NS_PATH ? 1 : 2);
  const lab = async (argv: readonly string[]) => {
    let out = '';
    let err = '';
    const runner = node(NFT_NODE);
    const code = await traceCommand(argv, { runner, localAddresses, checkNetns, readNetwork, labNodes, stdout: (s) => (out += s), stderr: (s) => (err += s) });
    return { code, out, err, runner };
  };
  const r = await lab(['--lab', 'demo', CLIENT, 'tcp', WEB, '80']);
  t.equal(r.code, 0, r.err);
  t.ok(r.runner.calls.every((c) => c.opts.netns === NS_PATH), 'the rules read on the source node (its pod CIDR holds the source)');
  t.match(r.out, /trace 10\.244\.1\.5 -> 10\.96\.0\.10:80 \(tcp\) in node n1 \(nftables, table ip kube-proxy\)/);
  t.match(r.out, new RegExp(`to ${podIP(1, 10).replace(/\./g, '\\.')}:\\npath:\\n {2}1\\. n1: route 10\\.244\\.1\\.0/24 dev cbr0: bridged on cbr0`), 'the local endpoint: the bridge');
  t.match(r.out, new RegExp(`to ${podIP(2, 11).replace(/\./g, '\\.')}:\\npath:\\n {2}1\\. n1: route 10\\.244\\.2\\.0/24 via 10\\.244\\.2\\.0 dev nodenet\\.1 onlink; .*192\\.168\\.77\\.12 \\(node n2\\)\\n.*source is kept\\)\\n {2}2\\. n2: .*bridged on cbr0`), 'the remote one: VXLAN to n2, then its bridge');
  const j = await lab(['--lab', 'demo', '--node', 'n1', '-o', 'json', CLIENT, 'icmp', WEB]);
  t.equal(j.code, 0, j.err);
  const rep = JSON.parse(j.out) as { node: string; service: { destination: string }; paths: unknown[] };
  t.match(rep, { node: 'n1', service: { destination: 'REJECT' }, paths: [] }, 'a ping to a ClusterIP: rejected, no path');
  t.match((await lab(['--lab', 'demo', '--node', 'n9', CLIENT, 'tcp', WEB, '80'])).err, /--node "n9": no such node \(n1, n2\)/);
  t.match((await lab(['--lab', 'demo', '10.250.0.1', 'tcp', WEB, '80'])).err, /no node owns 10\.250\.0\.1.*--node/);
  t.match((await lab(['--lab', 'nosuch', CLIENT, 'tcp', WEB, '80'])).err, /no lab nosuch/);
  t.equal((await lab(['--lab', 'nosuch', CLIENT, 'tcp', WEB, '80'])).code, 1);
  for (const [argv, msg] of [[['--lab', 'demo', '--netns', NS, CLIENT, 'tcp', WEB, '80'], /--lab and --netns: give one/], [['--node', 'n1', CLIENT, 'tcp', WEB, '80'], /--node needs --lab/]] as const) {
    const x = await lab(argv);
    t.equal(x.code, 2);
    t.match(x.err, msg);
  }
});

t.test('--lab on the routed backends: the route via the remote node (host-gw proto 78, BGP proto bird), then its bridge', async (t) => {
  const N2 = '/run/netns/nn-trc-n2';
  const labNodes = () => [{ name: 'n1', netns: NS_PATH, runDir: '/x/n1', clusterCIDR: '10.244.0.0/16' }, { name: 'n2', netns: N2, runDir: '/x/n2', clusterCIDR: '10.244.0.0/16' }];
  for (const backend of ['host-gw', 'bgp'] as const) {
    const readNetwork = async (_name: string, netns: string) => routedNode(netns === NS_PATH ? 1 : 2, backend);
    let out = '';
    let err = '';
    const code = await traceCommand(['--lab', 'demo', CLIENT, 'tcp', WEB, '80'], { runner: node(NFT_NODE), localAddresses, checkNetns, readNetwork, labNodes, stdout: (s) => (out += s), stderr: (s) => (err += s) });
    t.equal(code, 0, err);
    const how = backend === 'host-gw' ? 'routed via 192\\.168\\.77\\.12 \\(node n2\\), host-gw route \\(proto 78\\)' : 'BGP-learned route \\(proto bird\\) via 192\\.168\\.77\\.12 \\(node n2\\)';
    t.match(out, new RegExp(`to ${podIP(2, 11).replace(/\./g, '\\.')}:\\npath:\\n {2}1\\. n1: route 10\\.244\\.2\\.0/24 via 192\\.168\\.77\\.12 dev eth0: ${how}, out of eth0 with no tunnel\\n.*source is kept\\)\\n {2}2\\. n2: .*bridged on cbr0`), `${backend}: the remote endpoint routed to n2, then its bridge`);
    t.match(out, new RegExp(`to ${podIP(1, 10).replace(/\./g, '\\.')}:\\npath:\\n {2}1\\. n1: route 10\\.244\\.1\\.0/24 dev cbr0: bridged on cbr0`), `${backend}: the local one, the bridge`);
  }
});
