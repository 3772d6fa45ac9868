/**
 * Root tests for the iptables mode, on the real tools and kernel, in
 * namespaces of our own (nn-ipt-<pid>-*), for both backends:
 *   - a rendered ruleset applied with the real executor reads back (iptables-save,
 *     parsed) as exactly the rules the validating fake holds after the same syncs;
 *   - partial syncs, an external flush + canary, cleanup, the mixing check and
 *     restore errors behave on the kernel as on the fake;
 *   - real packets: pods on a bridge behind a node namespace; a ClusterIP
 *     reaches both endpoints, ping to it gets no reply, a Service without
 *     endpoints refuses at once.
 * Nothing here touches the root namespace (checked at the end).
 */
import t, { type Test } from 'tap';
import { execFileSync, spawn, spawnSync } from 'node:child_process';
import { setTimeout as sleep } from 'node:timers/promises';
import { ErrorCode, NodenetError } from '../../../../lib/errors/errors.js';
import { SpawnRunner } from '../../exec/runner.js';
import { silentLogger } from '../../../../lib/log/log.js';
import { parseCidr, parseIPv4 } from '../../../../lib/net/ip.js';
import { removeNetns } from '../../netns/scratch-netns.js';
import { FakeIptables } from '../../netfilter/iptables/iptables.fake.js';
import { BACKEND_COMMANDS, ExecIptables, createIptables } from '../../netfilter/iptables/iptables.js';
import { parseSave, ruleSignature, type IptDump } from '../../netfilter/iptables/iptables-parse.js';
import { IptablesRestoreError, type IptablesBackendKind } from '../../netfilter/iptables/iptables-types.js';
import { traceIptables } from '../../trace/iptables-tracer.js';
import type { ProxySnapshot, SyncScope } from '../types.js';
import { ep, nodeConfig, snapshot, svc } from '../test-fixtures.js';
import { IptablesBackend } from './proxier.js';

const log = silentLogger();
const runner = new SpawnRunner();
const BACKENDS: readonly IptablesBackendKind[] = ['nft', 'legacy'];

function rootFirewall(): string {
  const dump = (cmd: string): string => spawnSync(cmd, [], { encoding: 'utf8' }).stdout.split('\n').filter((l) => !l.startsWith('#')).join('\n');
  return `${dump('iptables-nft-save')}\n--\n${dump('iptables-legacy-save')}`;
}
const rootBefore = { fw: rootFirewall(), links: execFileSync('ip', ['-br', 'link'], { encoding: 'utf8' }) };

function makeNs(t: Test, tag: string): string {
  const name = `nn-ipt-${process.pid}-${tag}`;
  execFileSync('ip', ['netns', 'add', name]);
  t.teardown(() => removeNetns(name));
  execFileSync('ip', ['-n', name, 'link', 'set', 'lo', 'up']);
  return name;
}

function inNs(ns: string, argv: readonly string[], input?: string): string {
  return execFileSync('ip', ['netns', 'exec', ns, ...argv], { encoding: 'utf8', stdio: ['pipe', 'pipe', 'pipe'], ...(input === undefined ? {} : { input }) });
}

/** Rules by chain, as canonical signatures; empty built-in chains and empty tables left out. */
function state(d: IptDump): Record<string, string[]> {
  const out: Record<string, string[]> = {};
  for (const tb of d.tables.values()) {
    for (const c of tb.chains.values()) {
      if (c.builtin && c.rules.length === 0) continue;
      out[`${tb.name}/${c.name}`] = c.rules.map(ruleSignature);
    }
  }
  return out;
}

async function kernelDump(ipt: ExecIptables): Promise<IptDump> {
  let text = '';
  for (const table of ['filter', 'nat', 'mangle', 'raw'] as const) text += await ipt.save(table);
  return parseSave(text);
}

/** The same backend twice: on the kernel and on the fake. */
function pair(ns: string, backend: IptablesBackendKind) {
  const cfg = nodeConfig();
  const exec = new ExecIptables({ runner, log, netns: `/run/netns/${ns}` }, backend);
  const fake = new FakeIptables({ backend });
  const real = new IptablesBackend({ iptables: exec, nodeConfig: cfg, log });
  const model = new IptablesBackend({ iptables: fake, nodeConfig: cfg, log });
  const sync = async (s: ProxySnapshot, scope: SyncScope): Promise<void> => {
    await model.sync(s, scope);
    await real.sync(s, scope);
  };
  return { exec, fake, real, model, sync };
}

const s1 = svc('ns1', 'svc1', '172.30.0.41');
const s3 = svc('ns1', 'svc3', '172.30.0.43', { affinity: 600 });
const np = svc('ns1', 'np', '172.30.0.44', { nodePort: 30044 });
const npl = svc('ns1', 'npl', '172.30.0.45', { nodePort: 30045, etp: 'Local', externalIPs: ['192.168.99.45'] });
const itp = svc('ns1', 'itp', '172.30.0.46', { itp: 'Local' });
const term = svc('ns1', 'term', '172.30.0.47');
const dns = svc('ns1', 'dns', '172.30.0.10', { portName: '', port: 53, protocol: 'UDP' });
const none = svc('ns1', 'none', '172.30.0.48', { nodePort: 30048 });

const RICH = snapshot(
  [s1, [ep('10.180.0.1')]],
  [s3, [ep('10.180.0.31'), ep('10.180.0.32'), ep('10.180.0.33')]],
  [np, [ep('10.180.0.4'), ep('10.180.0.5', { node: 'node1' })]],
  [npl, [ep('10.180.0.6'), ep('10.180.0.7', { node: 'node1' })]],
  [itp, [ep('10.180.0.8'), ep('10.180.0.9', { node: 'node1' })]],
  [term, [ep('10.180.0.11', { ready: false, serving: true, terminating: true })]],
  [dns, [ep('10.180.0.12', { port: 53 })]],
  [none, []],
);
const CHANGED = snapshot(
  [s1, [ep('10.180.0.1')]],
  [s3, [ep('10.180.0.31'), ep('10.180.0.34')]],
  [npl, [ep('10.180.0.6'), ep('10.180.0.7', { node: 'node1' })]],
  [itp, [ep('10.180.0.8'), ep('10.180.0.9', { node: 'node1' })]],
  [term, [ep('10.180.0.11', { ready: false, serving: true, terminating: true })]],
  [dns, [ep('10.180.0.12', { port: 53 })]],
  [none, []],
);

for (const backend of BACKENDS) {
  t.test(`${backend}: the kernel holds exactly what the fake holds, through full, partial, flush, cleanup`, async (t) => {
    const ns = makeNs(t, backend[0]!);
    const p = pair(ns, backend);

    await p.sync(RICH, { full: true });
    const k1 = await kernelDump(p.exec);
    t.same(state(k1), state(p.fake.dump()), 'full sync: iptables-save parses to the same rules');
    t.ok(Object.keys(state(k1)).length > 20, 'and there is a lot of it');
    t.equal(p.real.lastSync?.jumpsInserted, 14);

    // The tracer agrees on the kernel's rules.
    const flow = (d: IptDump) => traceIptables(d, { sourceIP: parseIPv4('10.0.0.2'), destIP: parseIPv4('172.30.0.43'), destPort: 80, protocol: 'TCP' }, { nodeIPs: ['192.168.0.2'] }).destination;
    t.equal(flow(k1), '10.180.0.31:80, 10.180.0.32:80, 10.180.0.33:80');

    await p.sync(CHANGED, { full: false, changed: new Set(['ns1/svc3', 'ns1/np']) });
    t.equal(p.real.lastSync?.full, false);
    t.equal(p.real.lastSync?.deletedChains, 6, "svc3's two SEPs; np's EXT, SVC and two SEPs");
    const k2 = await kernelDump(p.exec);
    t.same(state(k2), state(p.fake.dump()), 'partial sync: same rules again');
    t.equal(flow(k2), '10.180.0.31:80, 10.180.0.34:80');
    t.notOk(Object.keys(state(k2)).some((c) => c.includes('KUBE-EXT-') && c.endsWith(np.clusterIP)), 'np gone');
    t.same(
      [...(await p.exec.listChains('nat'))].filter((c) => /^KUBE-(SVC|SVL|EXT|SEP)-/.test(c)).sort(),
      [...p.real.appliedChains!].sort(),
      'the kernel has exactly the chains the backend believes it applied',
    );

    // Someone flushes everything (iptables -F; iptables -X on every table).
    t.equal(await p.real.canaryMissing(), false);
    for (const table of ['filter', 'nat', 'mangle']) {
      inNs(ns, [BACKEND_COMMANDS[backend].iptables, '-w', '-t', table, '-F']);
      inNs(ns, [BACKEND_COMMANDS[backend].iptables, '-w', '-t', table, '-X']);
    }
    t.equal(await p.real.canaryMissing(), true, 'canary gone after an external flush');
    await p.real.sync(CHANGED, { full: true });
    t.equal(p.real.lastSync?.jumpsInserted, 14, 'jumps re-inserted');
    t.same(state(await kernelDump(p.exec)), state(p.fake.dump()), 'a full sync restores everything');
    t.equal(await p.real.canaryMissing(), false);

    await p.real.cleanup();
    t.same(state(await kernelDump(p.exec)), {}, 'cleanup leaves no rule and no chain of ours');
    for (const table of ['filter', 'nat', 'mangle'] as const) {
      t.same([...(await p.exec.listChains(table))].filter((c) => c.startsWith('KUBE-')), [], `${table}: no KUBE- chain`);
    }
    await p.real.cleanup();
  });

  t.test(`${backend}: restore errors name the line; foreign rules survive our syncs`, async (t) => {
    const ns = makeNs(t, `e${backend[0]!}`);
    const exec = new ExecIptables({ runner, log, netns: `/run/netns/${ns}` }, backend);
    const err = await exec.restore('*nat\n:FOO - [0:0]\n-A FOO -j BAR\nCOMMIT\n', { noflush: true }).then(() => null, (e: unknown) => e);
    t.ok(err instanceof IptablesRestoreError);
    t.ok([3, 4].includes((err as IptablesRestoreError).line ?? -1), `the tool blamed line ${(err as IptablesRestoreError).line}`);
    t.match((err as Error).message, '-A FOO -j BAR', 'the message quotes the input around the line');

    // Someone else's rules in the same tables and built-in chains.
    await exec.restore('*nat\n:DOCKER - [0:0]\n-A DOCKER -j RETURN\n-A PREROUTING -m addrtype --dst-type LOCAL -j DOCKER\nCOMMIT\n*filter\n:OTHER - [0:0]\n-A FORWARD -j OTHER\nCOMMIT\n', { noflush: true });
    const foreign = state(await kernelDump(exec));
    const b = new IptablesBackend({ iptables: exec, nodeConfig: nodeConfig(), log });
    await b.sync(RICH, { full: true });
    const mid = state(await kernelDump(exec));
    t.same(mid['nat/DOCKER'], foreign['nat/DOCKER']);
    t.same(mid['filter/OTHER'], foreign['filter/OTHER']);
    t.equal(mid['nat/PREROUTING']?.length, 2, 'our jump prepended before theirs');
    t.match(mid['nat/PREROUTING']?.[0], /j=KUBE-SERVICES/);
    await b.cleanup();
    t.same(state(await kernelDump(exec)), foreign, 'cleanup gives back exactly the foreign state');
  });
}

t.test('mixing: our chains in nf_tables while `iptables` says legacy is refused', async (t) => {
  const ns = makeNs(t, 'mx');
  const netns = `/run/netns/${ns}`;
  const nft = new IptablesBackend({ iptables: new ExecIptables({ runner, log, netns }, 'nft'), nodeConfig: nodeConfig(), log });
  await nft.sync(RICH, { full: true });
  const err = await createIptables({ runner, log, netns, prefix: 'KUBE', iptablesCmd: 'iptables-legacy' }).then(() => null, (e: unknown) => e);
  t.ok(err instanceof NodenetError);
  t.equal((err as NodenetError).code, ErrorCode.IptablesMixed);
  t.match((err as Error).message, /legacy backend, but the nf_tables backend already holds/);
  const ok = await createIptables({ runner, log, netns, prefix: 'KUBE', iptablesCmd: 'iptables-nft' });
  t.equal(ok.backend, 'nft', 'the matching backend is fine');
  const other = await createIptables({ runner, log, netns, prefix: 'NN', iptablesCmd: 'iptables-legacy' });
  t.equal(other.backend, 'legacy', 'another prefix does not collide');
});

// ------------------------------------------------------------------ real packets

interface Lab {
  node: string;
  /** The node's uplink neighbour at 192.168.0.1: an external client. */
  ul: string;
  client: string;
  servers: string[];
}

async function lab(t: Test, backend: IptablesBackendKind): Promise<Lab> {
  const k = backend[0]!;
  const node = makeNs(t, `${k}nd`);
  const pods = ['a', 'b', 'c'].map((x) => makeNs(t, `${k}p${x}`));
  inNs(node, ['sysctl', '-qw', 'net.ipv4.ip_forward=1']);
  inNs(node, ['sysctl', '-qw', 'net.bridge.bridge-nf-call-iptables=1']);
  inNs(node, ['sysctl', '-qw', 'net.ipv4.conf.all.route_localnet=1']); // NodePorts on 127.0.0.1
  // The node's uplink: a default route, as real nodes have (without one, a ClusterIP that is
  // not DNATed fails routing before filter FORWARD could REJECT it).
  const ul = makeNs(t, `${k}ul`);
  execFileSync('ip', ['-n', node, 'link', 'add', 'eth0', 'type', 'veth', 'peer', 'name', 'eth0', 'netns', ul]);
  execFileSync('ip', ['-n', ul, 'addr', 'add', '192.168.0.1/24', 'dev', 'eth0']);
  execFileSync('ip', ['-n', ul, 'link', 'set', 'eth0', 'up']);
  execFileSync('ip', ['-n', node, 'addr', 'add', '192.168.0.2/24', 'dev', 'eth0']);
  execFileSync('ip', ['-n', node, 'link', 'set', 'eth0', 'up']);
  execFileSync('ip', ['-n', node, 'route', 'add', 'default', 'via', '192.168.0.1']);
  execFileSync('ip', ['-n', node, 'link', 'add', 'br0', 'type', 'bridge']);
  execFileSync('ip', ['-n', node, 'addr', 'add', '10.244.1.1/24', 'dev', 'br0']);
  execFileSync('ip', ['-n', node, 'link', 'set', 'br0', 'up']);
  pods.forEach((pod, i) => {
    const veth = `v${'abc'[i]}`;
    execFileSync('ip', ['-n', node, 'link', 'add', veth, 'type', 'veth', 'peer', 'name', 'eth0', 'netns', pod]);
    execFileSync('ip', ['-n', node, 'link', 'set', veth, 'master', 'br0', 'up']);
    // A pod reaching itself through its Service needs hairpin on its bridge port (MEASURED.md).
    execFileSync('ip', ['-n', node, 'link', 'set', veth, 'type', 'bridge_slave', 'hairpin', 'on']);
    execFileSync('ip', ['-n', pod, 'addr', 'add', `10.244.1.${i + 2}/24`, 'dev', 'eth0']);
    execFileSync('ip', ['-n', pod, 'link', 'set', 'eth0', 'up']);
    execFileSync('ip', ['-n', pod, 'route', 'add', 'default', 'via', '10.244.1.1']);
  });
  const servers = pods.slice(0, 2);
  servers.forEach((pod, i) => {
    const p = spawn('ip', ['netns', 'exec', pod, 'socat', '-t10', 'TCP-LISTEN:8080,fork,reuseaddr', `SYSTEM:echo pod-${'ab'[i]} $SOCAT_PEERADDR`], { stdio: 'ignore' });
    t.teardown(() => {
      p.kill('SIGKILL');
    });
  });
  const client = pods[2]!;
  // Wait until both servers answer directly.
  for (const ip of ['10.244.1.2', '10.244.1.3']) {
    for (let i = 0; ; i++) {
      if (connect(client, ip, 8080).out) break;
      if (i > 50) throw new Error(`server ${ip} never came up`);
      await sleep(100);
    }
  }
  return { node, ul, client, servers };
}

/** "pod-a 10.244.1.4" → who answered and the source address it saw. */
function who(out: string): { pod: string; peer: string } {
  const [pod = '', peer = ''] = out.split(' ');
  return { pod, peer };
}

function connect(ns: string, ip: string, port: number): { out: string; err: string; ms: number } {
  const start = Date.now();
  const r = spawnSync('ip', ['netns', 'exec', ns, 'socat', '-T', '3', 'STDIO', `TCP:${ip}:${port},connect-timeout=3`], { encoding: 'utf8', input: '' });
  return { out: r.stdout.trim(), err: r.stderr, ms: Date.now() - start };
}

for (const backend of BACKENDS) {
  t.test(`${backend}: real packets through the rules`, async (t) => {
    const l = await lab(t, backend);
    const cfg = nodeConfig({ nodeName: 'node1', nodeIPs: [parseIPv4('192.168.0.2')], clusterCIDR: parseCidr('10.244.0.0/16').cidr });
    const b = new IptablesBackend({ iptables: new ExecIptables({ runner, log, netns: `/run/netns/${l.node}` }, backend), nodeConfig: cfg, log });
    await b.sync(
      snapshot(
        [svc('default', 'web', '172.30.0.41', { nodePort: 30080 }), [ep('10.244.1.2', { port: 8080, node: 'node1' }), ep('10.244.1.3', { port: 8080, node: 'node1' })]],
        [svc('default', 'webl', '172.30.0.42', { nodePort: 30081, etp: 'Local' }), [ep('10.244.1.2', { port: 8080, node: 'node1' })]],
        [svc('default', 'empty', '172.30.0.46'), []],
      ),
      { full: true },
    );

    /** Connects until both pods answered (or 40 tries); checks every answer. */
    const both = (name: string, from: string, ip: string, port: number, peerOf: (pod: string) => string): void => {
      const seen = new Set<string>();
      for (let i = 0; i < 40 && seen.size < 2; i++) {
        const r = who(connect(from, ip, port).out);
        t.match(r.pod, /^pod-[ab]$/, `${name}: connection ${i} reached an endpoint`);
        t.equal(r.peer, peerOf(r.pod), `${name}: ${r.pod} saw source ${peerOf(r.pod)}`);
        seen.add(r.pod);
      }
      t.same([...seen].sort(), ['pod-a', 'pod-b'], `${name}: both endpoints reached`);
    };
    both('pod → ClusterIP', l.client, '172.30.0.41', 80, () => '10.244.1.4');
    // Hairpin: pod-a to its own Service. Landing on itself, the SEP's `-s <endpoint>` rule
    // masquerades it (source = the node's bridge address) so the reply comes back through the node.
    both('hairpin pod-a → ClusterIP', l.servers[0]!, '172.30.0.41', 80, (pod) => (pod === 'pod-a' ? '10.244.1.1' : '10.244.1.2'));
    both('external client → NodePort (Cluster policy, masqueraded)', l.ul, '192.168.0.2', 30080, () => '10.244.1.1');
    both('node → 127.0.0.1 NodePort', l.node, '127.0.0.1', 30080, () => '10.244.1.1');
    const local = who(connect(l.ul, '192.168.0.2', 30081).out);
    t.same(local, { pod: 'pod-a', peer: '192.168.0.1' }, 'external client → NodePort (Local policy): the client address is kept');

    const ping = spawnSync('ip', ['netns', 'exec', l.client, 'ping', '-c', '1', '-W', '1', '172.30.0.41'], { encoding: 'utf8' });
    t.not(ping.status, 0, 'ping to the ClusterIP gets no reply');
    t.match(ping.stdout, / 0 received/);

    const refused = connect(l.client, '172.30.0.46', 80);
    t.equal(refused.out, '');
    t.match(refused.err, /Connection refused/, 'no endpoints: refused');
    t.ok(refused.ms < 1000, `refused at once (${refused.ms} ms), not a timeout`);

    await b.cleanup();
    t.equal(connect(l.client, '172.30.0.41', 80).out, '', 'after cleanup the ClusterIP leads nowhere');
    t.equal(connect(l.ul, '192.168.0.2', 30080).out, '', 'nor the NodePort');
  });
}

t.test('the root namespace was not touched', async (t) => {
  t.equal(rootFirewall(), rootBefore.fw, 'root iptables (nft and legacy) unchanged');
  t.equal(execFileSync('ip', ['-br', 'link'], { encoding: 'utf8' }), rootBefore.links, 'root links unchanged');
});
