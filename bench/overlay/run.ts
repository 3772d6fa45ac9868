/**
 * bench/overlay: TCP throughput and latency over nodenet's VXLAN overlay and
 * its routed backends (host-gw, BGP), side by side with the paths they are
 * measured against, in one run on one lab.
 *
 *   npm run bench:overlay -- [--quick] [--duration 5] [--repeat 3] [--streams 1] [--pings 200] [--rr 2000] [--out FILE]
 *
 * The lab (lab/lab.ts; namespaces nn-bo*, removed at the end, on failure
 * and on SIGINT): `nodenet control-plane` from dist/ (so `npm run build`
 * first; the npm script does) in the underlay namespace, two nodes n1 and
 * n2 whose agents run with overlay vxlan and no proxy, and three pods as
 * plain namespaces wired through the nodes' real CNI shim (ipMasq false:
 * the overlay masquerades): p1a and p1b on n1, p2 on n2. The cases:
 *   (a) same-node:  p1a → p1b, over n1's cbr0;
 *   (b) cross-node: p1a → p2, over nodenet.1 and the underlay;
 *   (c) underlay:   n1 → n2 on their eth0 (the reference for (b)).
 * The routed backends (issue 29), each on a pair of nodes of its own in the
 * same cluster, pods again through the CNI shim:
 *   (i) cross-node-hostgw: p3 on n3 → p4 on n4, agents with backend host-gw
 *       (a proto-78 route via the peer's eth0 address, no device);
 *   (j) cross-node-bgp:    p5 on n5 → p6 on n6, agents with backend bgp
 *       (BIRD 2 in each node, its proto bird route via the peer).
 * (The pairs get n3/n4 and n5/n6 in that order; one routed case alone gets
 * n3/n4.) One cluster for all: each pair sees the other pairs' Nodes as
 * another backend's (overlay/subnet.ts: a warning and a Warning Event
 * OverlayBackendMismatch, no lease, so no route, FDB entry or BGP session to
 * them), which leaves every pair's data path as it would be alone; the run
 * checks it: each routed node has exactly one route of its backend's
 * protocol, its peer's pod CIDR via the peer's address on eth0. One control
 * plane, rather than one per backend, keeps the machine's load down.
 * The servers (iperf3 -s, and rr.child.ts's echo server) run inside the
 * target pod's or node's namespace; nothing but the lab is in the root
 * namespace. Per case: `iperf3 -J` TCP runs (--repeat of them, interleaved
 * a, b, c, a, b, c, … so a slow spell of the machine hits every case),
 * then ping RTT, then the TCP request/response round trip.
 *
 * Beside the nodes, on the same underlay bridge, four bare hosts h1..h4
 * (namespaces with no agent) and their pods hp1..hp4 get the same data
 * path set up by hand (bare.ts): h1/h2 with no netfilter, h3/h4 with
 * conntrack and NAT hooks (bare.ts's masquerade rule). They give the kernel's ceiling:
 *   (d) bare-vxlan:          h1 → h2's VTEP over vx0;
 *   (e) bare-pods:           hp1 → hp2 over br0 and vx0, no netfilter;
 *   (f) bare-pods-conntrack: hp3 → hp4, the same with conntrack;
 *   (g) bare-routed:         hp5 → hp6 over br0 and a route via h6 on eth0 (host-gw's path, no tunnel), no netfilter;
 *   (h) bare-routed-conntrack: hp7 → hp8, the same with conntrack.
 * A chart of every case's share of the underlay goes to bench/results/overlay-<date>.{svg,png}.
 *
 * A progress line per step on stderr; the Markdown report on stdout; the
 * results JSON (with the machine) under bench/overlay/results/ (a dated
 * file, or --out). Needs root and iperf3 (`apt-get install -y iperf3`),
 * and for (j) BIRD 2 (`apt-get install -y bird2`).
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { cpus, loadavg } from 'node:os';
import { dirname, isAbsolute, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { benchArgs } from '../lib/args.js';
import { isRoot, machineMeta } from '../lib/machine.js';
import { AGENT_JS, REPO, SHIM, type Lab, type VNode } from '../../agent/src/lab/lab.js';
import { CLUSTER_CIDR } from '../../agent/src/lab/plan.js';
import { newLab, runner } from '../../agent/src/testing/lab.js';
import { parseProcStatTotals } from '../lib/proc.js';
import { waitFor } from '../../agent/src/testing/wait.js';
import { BARE_CASES, defaultOut, parseBenchArgs, ROUTED_CASES, type BenchArgs, type CaseName } from './args.js';
import { barePodIP, bareUnderlayIP, bareVtepIP, CONNTRACK_NFT, hostScript, peerFdb, peerScript, podScript, routedHostScript, routedPeerScript, routedPodScript, BARE_VXLAN, type BareHost } from './bare.js';
import { parseIperf3Json, parseLinkMtus, parsePing, parseRrOutput, type IperfRun } from './parse.js';
import { CASE_LABELS, formatReport, gbps, shareBars, shareOfUnderlay, summarizeLatency, summarizeThroughput, us, type BenchResult, type CaseResult, type LatencySummary, type Meta, type Mtus } from './report.js';
import { renderChart } from './chart.js';

const TAG = '[bench:overlay]';
const RR = join(dirname(fileURLToPath(import.meta.url)), 'rr.child.ts');
const IPERF_PORT = 5201;
const RR_PORT = 5202;

const say = (s: string) => void process.stderr.write(`${TAG} ${s}\n`);
const errText = (e: unknown) => (e instanceof Error ? e.message : String(e));
const procStat = () => parseProcStatTotals(readFileSync('/proc/stat', 'utf8'));

function firstLine(argv: string[]): string | null {
  const r = spawnSync(argv[0]!, argv.slice(1), { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
  if (r.error || r.status !== 0) return null;
  return `${r.stdout}${r.stderr}`.split('\n')[0]!.trim();
}

/** One end of a case: a namespace and the address the other end reaches it on. */
interface End {
  readonly ns: string;
  readonly nsPath: string;
  readonly ip: string;
}

interface Case {
  readonly name: CaseName;
  readonly from: End;
  readonly to: End;
  /** The sender's interface (for its MTU). */
  readonly fromIf: string;
  /** What the case claims it crosses: the device `routeNs` routes `to.ip` through, checked before measuring. */
  readonly routeNs: string;
  readonly routeDev: string;
  /** The routed backends: the route's protocol as `ip -j route` prints it ('78', 'bird') and its gateway (the peer node's address). */
  readonly routeProto?: string;
  readonly routeVia?: string;
  /** nodenet's cross-node cases: the device whose TX counter must grow by what iperf3 sent (the namespace it is in). */
  readonly tx?: { readonly node: string; readonly nsPath: string; readonly dev: string };
}

/** What the run owns, for the SIGINT handler and the end. */
interface Ctx {
  lab: Lab | null;
  creating: Promise<Lab> | null;
  interrupted: boolean;
  readonly servers: ChildProcess[];
}

const inNs = (nsPath: string, argv: readonly string[], timeoutMs = 60_000) => runner.run(argv, { netns: nsPath, allowFailure: true, timeoutMs });

async function linkMtus(nsPath: string): Promise<Map<string, number>> {
  const r = await inNs(nsPath, ['ip', '-j', 'link', 'show']);
  return r.exitCode === 0 ? parseLinkMtus(r.stdout) : new Map();
}

/** The device the namespace's kernel routes `ip` through. */
async function routeDev(nsPath: string, ip: string): Promise<string | null> {
  const r = await inNs(nsPath, ['ip', '-j', 'route', 'get', ip]);
  try {
    const x = (JSON.parse(r.stdout) as { dev?: string }[])[0];
    return x?.dev ?? null;
  } catch {
    return null;
  }
}

interface RouteJson { readonly dst?: string; readonly gateway?: string; readonly dev?: string; readonly protocol?: string }

/** The main table's routes of `ip -j route show ...args` in a namespace. */
async function routes(nsPath: string, args: readonly string[]): Promise<RouteJson[]> {
  const r = await inNs(nsPath, ['ip', '-j', 'route', 'show', ...args]);
  try {
    const x = JSON.parse(r.stdout || '[]') as unknown;
    return Array.isArray(x) ? (x as RouteJson[]) : [];
  } catch {
    return [];
  }
}

/** The most specific route to `ip` (`ip route show match`: every route that covers it). */
async function routeTo(nsPath: string, ip: string): Promise<RouteJson | null> {
  const len = (d: string | undefined) => (d === undefined || d === 'default' ? 0 : Number(d.split('/')[1] ?? 32));
  return (await routes(nsPath, ['match', ip])).sort((a, b) => len(b.dst) - len(a.dst))[0] ?? null;
}

async function txBytes(nsPath: string, dev: string): Promise<number | null> {
  const r = await inNs(nsPath, ['ip', '-s', '-j', 'link', 'show', 'dev', dev]);
  try {
    const x = (JSON.parse(r.stdout) as { stats64?: { tx?: { bytes?: number } } }[])[0];
    return x?.stats64?.tx?.bytes ?? null;
  } catch {
    return null;
  }
}

async function addPod(lab: Lab, node: VNode, name: string): Promise<End> {
  const ns = await lab.addNetns(name);
  const add = await node.cni('ADD', { containerId: `bench-${name}`, netns: ns.path, ifName: 'eth0' }, node.cniConfig({ ipMasq: false }));
  if (add.exitCode !== 0) throw new Error(`CNI ADD of ${name} on ${node.name}: ${add.stdout}${add.stderr}`);
  const ip = (add.json as { ips?: { address?: string }[] } | null)?.ips?.[0]?.address?.split('/')[0];
  if (!ip) throw new Error(`CNI ADD of ${name} on ${node.name} returned no IP: ${add.stdout}`);
  return { ns: ns.name, nsPath: ns.path, ip };
}

/** Starts a long-running server inside a namespace; the run kills it at the end (and the lab's destroy kills what is left). */
function serve(ctx: Ctx, nsPath: string, argv: readonly string[]): ChildProcess {
  const p = spawn('nsenter', [`--net=${nsPath}`, '--', ...argv], { stdio: ['ignore', 'ignore', 'pipe'] });
  let err = '';
  p.stderr!.on('data', (d: Buffer) => (err = `${err}${d.toString()}`.slice(-2000)));
  p.on('exit', (code, sig) => {
    if (!ctx.interrupted && code !== null && code !== 0) say(`  a server in ${nsPath} exited ${code ?? sig}: ${err.trim()}`);
  });
  ctx.servers.push(p);
  return p;
}

async function listening(nsPath: string, port: number): Promise<void> {
  await waitFor(async () => (await inNs(nsPath, ['ss', '-Hltn', `sport = :${port}`])).stdout.includes(`:${port}`), `a server on :${port} in ${nsPath}`, { timeoutMs: 20_000, intervalMs: 100 });
}

async function iperf(c: Case, args: BenchArgs): Promise<IperfRun> {
  const argv = ['iperf3', '-c', c.to.ip, '-p', String(IPERF_PORT), '-t', String(args.durationS), '-O', String(args.omitS), '-P', String(args.streams), '-J', '--connect-timeout', '5000'];
  const r = await inNs(c.from.nsPath, argv, (args.durationS + args.omitS + 30) * 1000);
  try {
    return parseIperf3Json(r.stdout);
  } catch (e) {
    throw new Error(`${errText(e)}${r.exitCode ? ` (exit ${r.exitCode}${r.stderr.trim() ? `: ${r.stderr.trim().slice(0, 300)}` : ''})` : ''}`);
  }
}

async function ping(c: Case, args: BenchArgs): Promise<LatencySummary> {
  const argv = ['ping', '-n', '-q', '-c', '3', '-i', '0.2', '-W', '2', c.to.ip]; // warm-up: neighbours, route caches
  await inNs(c.from.nsPath, argv);
  const r = await inNs(c.from.nsPath, ['ping', '-n', '-c', String(args.pings), '-i', (args.pingIntervalMs / 1000).toFixed(3), '-W', '2', c.to.ip], args.pings * args.pingIntervalMs + 60_000);
  const p = parsePing(r.stdout);
  return summarizeLatency(p.rttUs, p.transmitted);
}

async function rr(c: Case, args: BenchArgs): Promise<LatencySummary> {
  const r = await inNs(c.from.nsPath, [process.execPath, ...process.execArgv, RR, 'client', c.to.ip, String(RR_PORT), String(args.rr)], 300_000);
  if (r.exitCode !== 0) throw new Error(`rr client exited ${r.exitCode}: ${r.stderr.trim().slice(-300)}`);
  return summarizeLatency(parseRrOutput(r.stdout));
}

/**
 * Bare hosts `indexes` on the lab's underlay, each with its pod, wired as
 * bare.ts says, every one reaching every other; with conntrack when asked.
 * Returns each host's and pod's End.
 */
async function bareHosts(lab: Lab, indexes: readonly number[], conntrack: boolean, underlayMtu: number, routed = false): Promise<{ host: End; pod: End }[]> {
  const hosts: BareHost[] = [];
  const out: { host: End; pod: End }[] = [];
  for (const i of indexes) {
    const host = await lab.addUnderlayHost(`h${i}`, `${bareUnderlayIP(i)}/24`);
    const pod = await lab.addNetns(`hp${i}`);
    const h: BareHost = { index: i, hostNs: host.name, podNs: pod.name };
    await lab.sh.run(['ip', '-n', host.name, '-batch', '-'], routed ? routedHostScript(h, underlayMtu) : hostScript(h, underlayMtu));
    await lab.sh.run(['ip', '-n', pod.name, '-batch', '-'], routed ? routedPodScript(h, underlayMtu) : podScript(h, underlayMtu));
    // A new namespace starts with forwarding as the root namespace has it (MEASURED.md): set it.
    await inNsOk(host.path, ['sysctl', '-qw', 'net.ipv4.ip_forward=1']);
    if (conntrack) await runner.run(['nft', '-f', '-'], { netns: host.path, input: CONNTRACK_NFT });
    hosts.push(h);
    out.push({ host: { ns: host.name, nsPath: host.path, ip: routed ? bareUnderlayIP(i) : bareVtepIP(i) }, pod: { ns: pod.name, nsPath: pod.path, ip: barePodIP(i) } });
  }
  for (const h of hosts) {
    for (const peer of hosts.filter((x) => x !== h)) {
      if (routed) {
        await lab.sh.run(['ip', '-n', h.hostNs, '-batch', '-'], routedPeerScript(peer));
        continue;
      }
      await lab.sh.run(['bridge', '-n', h.hostNs, ...peerFdb(peer)]);
      await lab.sh.run(['ip', '-n', h.hostNs, '-batch', '-'], peerScript(peer));
    }
  }
  return out;
}

async function inNsOk(nsPath: string, argv: readonly string[]): Promise<void> {
  const r = await inNs(nsPath, argv);
  if (r.exitCode !== 0) throw new Error(`${argv.join(' ')} in ${nsPath}: ${r.stderr.trim()}`);
}

interface Built {
  readonly lab: Lab;
  readonly cases: readonly Case[];
  readonly mtus: Mtus;
  readonly n1: VNode;
}

/** The lab, its agents, the pods, the overlay converged, the servers listening. */
async function build(ctx: Ctx, args: BenchArgs): Promise<Built> {
  say('lab: the control plane in the underlay namespace ...');
  ctx.creating = newLab('bo');
  const lab = await ctx.creating.finally(() => (ctx.creating = null));
  ctx.lab = lab;
  if (ctx.interrupted) throw new Error('interrupted');
  // The routed cases' pairs after n1/n2: n3/n4 for the first, n5/n6 for the second (report.ts names them so).
  const routed = args.cases.filter((c) => ROUTED_CASES[c] !== undefined).map((c, i) => ({ name: c, backend: ROUTED_CASES[c]!, a: `n${3 + 2 * i}`, b: `n${4 + 2 * i}` }));
  await lab.startControlPlane({ nodes: ['n1', 'n2', ...routed.flatMap((r) => [r.a, r.b])] });
  const opts = (backend: 'vxlan' | 'host-gw' | 'bgp') => ({ clusterCIDR: CLUSTER_CIDR, backend, config: { proxyMode: 'none', logLevel: 'info' } });
  const n1 = await lab.addNode('n1', opts('vxlan'));
  const n2 = await lab.addNode('n2', opts('vxlan'));
  const pairs: { name: CaseName; backend: 'host-gw' | 'bgp'; a: VNode; b: VNode }[] = [];
  for (const r of routed) pairs.push({ name: r.name, backend: r.backend, a: await lab.addNode(r.a, opts(r.backend)), b: await lab.addNode(r.b, opts(r.backend)) });
  say(`lab: ${2 + 2 * pairs.length} nodes, agents with backend vxlan (n1, n2)${pairs.map((p) => `, ${p.backend} (${p.a.name}, ${p.b.name})`).join('')} ...`);
  await Promise.all([n1, n2, ...pairs.flatMap((p) => [p.a, p.b])].map((n) => n.startAgent()));
  say('lab: three pods through the CNI shim (p1a and p1b on n1, p2 on n2) ...');
  const p1a = await addPod(lab, n1, 'p1a');
  const p1b = await addPod(lab, n1, 'p1b');
  const p2 = await addPod(lab, n2, 'p2');
  const node = (n: VNode): End => ({ ns: n.ns, nsPath: n.nsPath, ip: n.underlayIP.split('/')[0]! });
  say(`lab: waiting for the overlay (n1 routes ${p2.ip} over nodenet.1, n2 routes ${p1a.ip}) ...`);
  await waitFor(async () => (await routeDev(n1.nsPath, p2.ip)) === 'nodenet.1' && (await routeDev(n2.nsPath, p1a.ip)) === 'nodenet.1', 'the overlay routes on both nodes', { timeoutMs: 30_000, intervalMs: 100 });
  const all: Case[] = [
    { name: 'same-node', from: p1a, to: p1b, fromIf: 'eth0', routeNs: n1.nsPath, routeDev: 'cbr0' },
    { name: 'cross-node', from: p1a, to: p2, fromIf: 'eth0', routeNs: n1.nsPath, routeDev: 'nodenet.1', tx: { node: 'n1', nsPath: n1.nsPath, dev: 'nodenet.1' } },
    { name: 'underlay', from: node(n1), to: node(n2), fromIf: 'eth0', routeNs: n1.nsPath, routeDev: 'eth0' },
  ];
  for (const p of pairs) {
    const proto = p.backend === 'host-gw' ? '78' : 'bird';
    say(`lab: a pod on each of ${p.a.name} and ${p.b.name} (${p.backend}) ...`);
    const from = await addPod(lab, p.a, `p${p.a.name.slice(1)}`);
    const to = await addPod(lab, p.b, `p${p.b.name.slice(1)}`);
    say(`lab: waiting for ${p.backend}'s routes (${p.a.name} routes ${to.ip} via ${node(p.b).ip} proto ${proto}, and back) ...`);
    const via = async (n: VNode, peer: VNode, ip: string) => {
      const r = await routeTo(n.nsPath, ip);
      return r?.dev === 'eth0' && r.gateway === node(peer).ip && r.protocol === proto;
    };
    await waitFor(async () => (await via(p.a, p.b, to.ip)) && (await via(p.b, p.a, from.ip)), `${p.backend}'s routes on ${p.a.name} and ${p.b.name}`, { timeoutMs: 30_000, intervalMs: 100 });
    all.push({ name: p.name, from, to, fromIf: 'eth0', routeNs: p.a.nsPath, routeDev: 'eth0', routeProto: proto, routeVia: node(p.b).ip, tx: { node: p.a.name, nsPath: p.a.nsPath, dev: 'eth0' } });
  }
  const nodeMtus = await linkMtus(n1.nsPath);
  if (args.cases.some((c) => BARE_CASES.includes(c))) {
    say('bare hosts: the same data path by hand, h1/h2 without netfilter, h3/h4 with conntrack ...');
    const underlayMtu = nodeMtus.get('eth0') ?? 1500;
    const [h1, h2] = await bareHosts(lab, [1, 2], false, underlayMtu);
    const [h3, h4] = await bareHosts(lab, [3, 4], true, underlayMtu);
    all.push(
      { name: 'bare-vxlan', from: h1!.host, to: h2!.host, fromIf: BARE_VXLAN, routeNs: h1!.host.nsPath, routeDev: BARE_VXLAN },
      { name: 'bare-pods', from: h1!.pod, to: h2!.pod, fromIf: 'eth0', routeNs: h1!.host.nsPath, routeDev: BARE_VXLAN },
      { name: 'bare-pods-conntrack', from: h3!.pod, to: h4!.pod, fromIf: 'eth0', routeNs: h3!.host.nsPath, routeDev: BARE_VXLAN },
    );
    if (args.cases.includes('bare-routed') || args.cases.includes('bare-routed-conntrack')) {
      say('bare hosts: the routed path by hand (host-gw\'s), h5/h6 without netfilter, h7/h8 with conntrack ...');
      const [h5, h6] = await bareHosts(lab, [5, 6], false, underlayMtu, true);
      const [h7, h8] = await bareHosts(lab, [7, 8], true, underlayMtu, true);
      all.push(
        { name: 'bare-routed', from: h5!.pod, to: h6!.pod, fromIf: 'eth0', routeNs: h5!.host.nsPath, routeDev: 'eth0' },
        { name: 'bare-routed-conntrack', from: h7!.pod, to: h8!.pod, fromIf: 'eth0', routeNs: h7!.host.nsPath, routeDev: 'eth0' },
      );
    }
  }
  // In the bench's order (args.ts's CASES): the table reads a, b, c, ... j.
  const cases = all.filter((c) => args.cases.includes(c.name)).sort((x, y) => args.cases.indexOf(x.name) - args.cases.indexOf(y.name));
  // What each case claims it crosses, checked against the kernel's routes; then that it gets through.
  for (const c of cases) {
    const dev = await routeDev(c.routeNs, c.to.ip);
    if (dev !== c.routeDev) throw new Error(`${c.name}: ${c.routeNs} routes ${c.to.ip} via ${dev ?? 'nothing'}, not ${c.routeDev}`);
    if (c.routeProto !== undefined) {
      // The routed pair is as it would be alone: one route of its backend's protocol, to its peer's pods via the peer
      // (the other pairs' Nodes run other backends: not routed from here), and no VXLAN device.
      const own = await routes(c.routeNs, ['proto', c.routeProto]);
      const r = await routeTo(c.routeNs, c.to.ip);
      if (own.length !== 1 || own[0]!.dst !== r?.dst || r?.gateway !== c.routeVia) {
        throw new Error(`${c.name}: ${c.routeNs} has ${own.length} proto ${c.routeProto} route(s) (${own.map((x) => `${x.dst} via ${x.gateway ?? '-'}`).join(', ')}); wanted exactly one, to ${c.to.ip}'s pod CIDR via ${c.routeVia}`);
      }
      if ((await inNs(c.routeNs, ['ip', 'link', 'show', 'nodenet.1'])).exitCode === 0) throw new Error(`${c.name}: ${c.routeNs} has a nodenet.1 device, which a routed backend never makes`);
    }
    if (c.name === 'cross-node') {
      // The same for the VXLAN pair: one route over nodenet.1, n2's (the routed pairs' Nodes are not its peers).
      const over = await routes(c.routeNs, ['dev', 'nodenet.1']);
      if (over.length !== 1) throw new Error(`${c.name}: ${c.routeNs} has ${over.length} route(s) over nodenet.1 (${over.map((x) => x.dst).join(', ')}); wanted exactly one, n2's pod CIDR`);
    }
    await waitFor(async () => (await inNs(c.from.nsPath, ['ping', '-n', '-c', '1', '-W', '1', c.to.ip])).exitCode === 0, `${c.name}: ${c.from.ns} reaches ${c.to.ip}`, { timeoutMs: 20_000, intervalMs: 200 });
    // The bare pairs are what they claim: the ping left conntrack entries on h3's path and none on h1's.
    if (c.name === 'bare-pods' || c.name === 'bare-pods-conntrack' || c.name === 'bare-routed' || c.name === 'bare-routed-conntrack') {
      const r = await inNs(c.routeNs, ['conntrack', '-C']);
      if (r.exitCode !== 0) throw new Error(`${c.name}: conntrack -C in ${c.routeNs}: ${r.stderr.trim() || `exit ${r.exitCode}`} (Debian: apt-get install -y conntrack)`);
      const n = Number(r.stdout.trim());
      const want = c.name.endsWith('-conntrack');
      if (want !== n > 0) throw new Error(`${c.name}: ${c.routeNs} has ${n} conntrack entries after a ping, ${want ? 'none' : 'but it has no netfilter'}`);
    }
  }
  const podMtus = await linkMtus(p1a.nsPath);
  const mtus: Mtus = { underlay: nodeMtus.get('eth0') ?? null, vxlan: nodeMtus.get('nodenet.1') ?? null, bridge: nodeMtus.get('cbr0') ?? null, pod: podMtus.get('eth0') ?? null };
  say(`MTUs: underlay eth0 ${mtus.underlay ?? '?'}, nodenet.1 ${mtus.vxlan ?? '?'}, cbr0 ${mtus.bridge ?? '?'}, pod eth0 ${mtus.pod ?? '?'}`);
  say('servers: iperf3 -s and the TCP echo server in each target namespace ...');
  for (const c of cases) {
    serve(ctx, c.to.nsPath, ['iperf3', '-s', '-p', String(IPERF_PORT)]);
    if (args.rr) serve(ctx, c.to.nsPath, [process.execPath, ...process.execArgv, RR, 'server', String(RR_PORT)]);
  }
  for (const c of cases) {
    await listening(c.to.nsPath, IPERF_PORT);
    if (args.rr) await listening(c.to.nsPath, RR_PORT);
  }
  return { lab, cases, mtus, n1 };
}

async function measure(b: Built, args: BenchArgs, notes: string[]): Promise<CaseResult[]> {
  const runs = new Map<CaseName, IperfRun[]>(b.cases.map((c) => [c.name, []]));
  const errors = new Map<CaseName, string[]>(b.cases.map((c) => [c.name, []]));
  const busy = new Map<CaseName, number[]>(b.cases.map((c) => [c.name, []]));
  const tx0 = new Map<CaseName, number | null>();
  for (const c of b.cases) if (c.tx) tx0.set(c.name, await txBytes(c.tx.nsPath, c.tx.dev));
  for (let i = 1; i <= args.repeat; i++) {
    for (const c of b.cases) {
      try {
        const s0 = procStat();
        const r = await iperf(c, args);
        const s1 = procStat();
        busy.get(c.name)!.push((s1.busyMs - s0.busyMs) / (s1.busyMs - s0.busyMs + s1.idleMs - s0.idleMs) * cpus().length);
        runs.get(c.name)!.push(r);
        say(`iperf3 ${c.name} run ${i}/${args.repeat}: ${gbps(r.receivedBps / 1e9)} Gbit/s, ${r.retransmits ?? '?'} retransmits, ` +
          `CPU send ${r.cpuSenderPct?.toFixed(0) ?? '?'}% / recv ${r.cpuReceiverPct?.toFixed(0) ?? '?'}%, machine busy ${busy.get(c.name)!.at(-1)!.toFixed(2)} CPUs`);
      } catch (e) {
        errors.get(c.name)!.push(`iperf3 run ${i}: ${errText(e)}`);
        say(`iperf3 ${c.name} run ${i}/${args.repeat}: ERROR ${errText(e)}`);
      }
    }
  }
  for (const c of b.cases) {
    // nodenet's cross-node bytes really went the way the case claims: the device's TX counter (nodenet.1 for VXLAN,
    // the sending node's eth0 for host-gw and BGP: that node's agent talks to the API over it too, a little) grew by at
    // least what iperf3 sent.
    const before = tx0.get(c.name);
    if (!c.tx || before === null || before === undefined) continue;
    const after = await txBytes(c.tx.nsPath, c.tx.dev);
    const sent = runs.get(c.name)!.reduce((a, r) => a + (r.sentBps * r.seconds) / 8, 0);
    if (after !== null) {
      const note = `${c.tx.dev} on ${c.tx.node} sent ${((after - before) / 1e9).toFixed(2)} GB during the throughput runs; iperf3's ${c.name} runs sent ${(sent / 1e9).toFixed(2)} GB (measured part)`;
      say(note);
      if (after - before < 0.9 * sent) notes.push(`${note}: less than iperf3 sent, so not all of it went that way`);
    }
  }
  const out: CaseResult[] = [];
  for (const c of b.cases) {
    const errs = errors.get(c.name)!;
    let pingS: LatencySummary | null = null;
    let rrS: LatencySummary | null = null;
    if (args.pings) {
      try {
        pingS = await ping(c, args);
        say(`ping ${c.name}: p50 ${us(pingS.p50Us)} µs, p99 ${us(pingS.p99Us)} µs over ${pingS.n} replies${pingS.lost ? `, ${pingS.lost} lost` : ''}`);
      } catch (e) {
        errs.push(`ping: ${errText(e)}`);
        say(`ping ${c.name}: ERROR ${errText(e)}`);
      }
    }
    if (args.rr) {
      try {
        rrS = await rr(c, args);
        say(`TCP RR ${c.name}: p50 ${us(rrS.p50Us)} µs, p99 ${us(rrS.p99Us)} µs over ${rrS.n} round trips`);
      } catch (e) {
        errs.push(`TCP RR: ${errText(e)}`);
        say(`TCP RR ${c.name}: ERROR ${errText(e)}`);
      }
    }
    const mtu = (await linkMtus(c.from.nsPath)).get(c.fromIf) ?? null;
    const rs = runs.get(c.name)!;
    out.push({ name: c.name, fromIP: c.from.ip, toIP: c.to.ip, mtu, throughput: rs.length ? summarizeThroughput(rs, busy.get(c.name)!) : null, ping: pingS, rr: rrS, errors: errs });
  }
  return out;
}

function machine(loadavgBefore: number[]): Meta {
  const dirty = (firstLine(['git', '-C', REPO, 'status', '--porcelain']) ?? '') === '' ? '' : ' (with uncommitted changes)';
  return {
    ...machineMeta(loadavgBefore),
    iperf3: firstLine(['iperf3', '--version'])?.replace(/\s*\(.*\)$/, '') ?? 'unavailable', ping: firstLine(['ping', '-V']) ?? 'unavailable',
    commit: `${firstLine(['git', '-C', REPO, 'rev-parse', '--short', 'HEAD']) ?? '?'}${dirty}`,
  };
}

// ---- main ----

async function main(): Promise<number> {
  const args = benchArgs(parseBenchArgs);
  if (args === 2) return 2;
  if (!isRoot('bench:overlay', 'it builds network namespaces and runs agents in them')) return 2;
  if (firstLine(['iperf3', '--version']) === null) {
    console.error('bench:overlay needs iperf3, which is not installed. On Debian or Ubuntu: apt-get install -y iperf3 (answer "no" to running it as a daemon; the bench starts its own servers inside the lab\'s namespaces)');
    return 2;
  }
  if (args.cases.includes('cross-node-bgp') && firstLine(['bird', '--version']) === null) {
    console.error('bench:overlay needs BIRD 2 for the BGP case (or leave cross-node-bgp out of --cases). On Debian: apt-get install -y bird2 (the bench runs its own BIRD in each bgp node; systemctl disable --now bird stops the packaged one)');
    return 2;
  }
  if (args.pings && firstLine(['ping', '-V']) === null) {
    console.error('bench:overlay needs ping for the RTT (or --pings 0). On Debian: apt-get install -y iputils-ping');
    return 2;
  }
  for (const f of [AGENT_JS, SHIM]) {
    if (spawnSync('test', ['-e', f]).status !== 0) {
      console.error(`${f} is missing: run \`npm run build\` first (npm run bench:overlay does)`);
      return 2;
    }
  }
  const started = performance.now();
  const out = args.out ? (isAbsolute(args.out) ? args.out : join(process.cwd(), args.out)) : join(REPO, defaultOut(new Date()));
  const ctx: Ctx = { lab: null, creating: null, interrupted: false, servers: [] };
  const killServers = () => {
    for (const p of ctx.servers) if (p.exitCode === null && p.signalCode === null) p.kill('SIGKILL');
  };
  // `on`, not `once`, and kept until the end: execa's signal-exit re-raises a signal that has no other
  // listener, which would kill this process before the lab is gone.
  const onSignal = (sig: NodeJS.Signals) => {
    if (ctx.interrupted) return;
    ctx.interrupted = true;
    say(`${sig}: removing the lab`);
    void (async () => {
      killServers();
      const made = ctx.lab ?? (ctx.creating ? await ctx.creating.catch(() => null) : null);
      await made?.destroy().catch(() => undefined);
    })().finally(() => process.exit(130));
  };
  process.on('SIGINT', onSignal);
  process.on('SIGTERM', onSignal);
  const loadavgBefore = loadavg();
  const notes: string[] = [];
  let cases: CaseResult[] = [];
  let mtus: Mtus = { underlay: null, vxlan: null, bridge: null, pod: null };
  let failed: string | null = null;
  try {
    const b = await build(ctx, args);
    mtus = b.mtus;
    cases = await measure(b, args, notes);
  } catch (e) {
    failed = errText(e);
    if (!ctx.interrupted) say(`ERROR: ${failed}`);
  } finally {
    if (!ctx.interrupted) {
      killServers();
      say('removing the lab ...');
      await ctx.lab?.destroy();
    }
  }
  // Interrupted: the handler is removing the lab and exits the process.
  if (ctx.interrupted) await new Promise<never>(() => undefined);
  process.off('SIGINT', onSignal);
  process.off('SIGTERM', onSignal);
  if (failed) notes.push(`the run stopped: ${failed}`);
  const result: BenchResult = { meta: machine(loadavgBefore), args, mtus, cases, notes, totalWallMs: performance.now() - started };
  const report = formatReport(result);
  console.log(`\n${report}`);
  mkdirSync(dirname(out), { recursive: true });
  writeFileSync(out, `${JSON.stringify({ ...result, report }, null, 2)}\n`);
  say(`results written to ${out}`);
  const bars = shareBars(cases);
  if (bars.length > 1) {
    try {
      const { svg, png } = await renderChart(bars, `Pods across nodes on this machine, ${result.meta.date.slice(0, 10)}`);
      const base = join(REPO, 'bench', 'results', `overlay-${result.meta.date.slice(0, 10)}`);
      mkdirSync(dirname(base), { recursive: true });
      writeFileSync(`${base}.svg`, svg);
      writeFileSync(`${base}.png`, png);
      say(`chart written to ${base}.svg and .png`);
    } catch (e) {
      say(`the chart could not be drawn: ${errText(e)}`);
    }
  }
  const share = shareOfUnderlay(cases, 'cross-node');
  if (share !== null) say(`overlay share of the underlay: ${share.toFixed(1)}% (${CASE_LABELS['cross-node'].label} / ${CASE_LABELS.underlay.label})`);
  for (const n of ['cross-node-hostgw', 'cross-node-bgp'] as const) {
    const x = shareOfUnderlay(cases, n);
    if (x !== null) say(`${CASE_LABELS[n].label}: ${x.toFixed(1)}% of the underlay`);
  }
  return failed || cases.some((c) => c.errors.length) ? 1 : 0;
}

process.exitCode = await main();
