/**
 * The host-gw overlay end to end (root), as overlay.priv.test.ts does VXLAN: `nodenet control-plane` in
 * the lab's underlay namespace, three virtual nodes on its bridge (one L2 network) whose agents run
 * `backend: host-gw`, pods as plain namespaces through each node's CNI shim with ipMasq false, and real
 * packets: TCP, UDP and ping across every pair, the source kept, the MTU (the underlay's), a route deleted
 * by hand repaired, a Node behind a gateway reported and not routed, a deleted Node's route removed
 * everywhere, and a running node switched vxlan → host-gw → vxlan (no device or route of the other left).
 */
import t from 'tap';
import { spawn, type ChildProcess } from 'node:child_process';
import { readFileSync, statSync } from 'node:fs';
import { AGENT_JS, type Lab, type LabControlPlane, type VNode } from '../agent/src/lab/lab.js';
import { readNodeOverlay } from '../agent/src/lab/overlay-status.js';
import { newLab, runner, sh, shOk, NO_DNS } from '../agent/src/testing/lab.js';
import { waitFor } from '../agent/src/testing/wait.js';

interface Pod { readonly node: VNode; readonly ns: string; readonly ip: string }

let lab: Lab;
let cp: LabControlPlane;
const nodes: VNode[] = [];
const pods: Pod[] = [];
const podCIDR = new Map<string, string>();
const spawned: ChildProcess[] = [];

const inNs = (ns: string, argv: string[]) => shOk(['ip', 'netns', 'exec', ns, ...argv]);
const ipOf = (n: VNode) => n.underlayIP.split('/')[0]!;

async function kubectl(...args: string[]): Promise<string> {
  const r = await cp.kubectl(args, true);
  if (r.exitCode !== 0) throw new Error(`kubectl ${args.join(' ')}: ${r.stderr}`);
  return r.stdout;
}

/** A node's routes of nodenet's protocol (78), as `ip route` prints them (sorted lines). */
async function hostgwRoutes(n: VNode): Promise<string[]> {
  return (await sh(['ip', '-n', n.ns, 'route', 'show', 'proto', '78'])).stdout.split('\n').map((l) => l.trim()).filter(Boolean).sort();
}

const routeLine = (o: VNode) => `${podCIDR.get(o.name)!} via ${ipOf(o)} dev eth0`;

/** Until every node in `ns` routes every other one's pod CIDR via its underlay IP. */
async function converged(ns: readonly VNode[]): Promise<void> {
  for (const n of ns) {
    const want = ns.filter((o) => o !== n).map(routeLine);
    await waitFor(async () => {
      const r = await hostgwRoutes(n);
      return want.every((w) => r.some((l) => l.startsWith(w)));
    }, `${n.name} routes ${want.join(', ')}`, { timeoutMs: 20_000, intervalMs: 100 });
  }
}

async function tcp(from: Pod, ip: string, port: number): Promise<string> {
  const r = await inNs(from.ns, ['socat', '-t2', '-T3', '-', `TCP4:${ip}:${port},connect-timeout=3`]);
  return (r.exitCode === 0 ? r.stdout : r.stderr).trim();
}

/** One UDP request, asked again (at most 3 times) when no answer came; the source the server saw. */
async function udp(ns: string, ip: string): Promise<string> {
  let out = '';
  for (let i = 0; i < 3 && out === ''; i++) out = (await inNs(ns, ['sh', '-c', `echo hi | socat -t2 -T3 - UDP4:${ip}:8081`])).stdout.trim();
  return out.replace(/^udp (\S+):\d+$/, 'udp $1');
}

/** A pod's servers (as overlay.priv.test.ts's): TCP 8080 says who connected, UDP 8081 `nodenet serve`. */
async function serve(ns: string): Promise<void> {
  for (const argv of [
    ['socat', '-t10', 'TCP4-LISTEN:8080,reuseaddr,fork', 'SYSTEM:echo tcp $SOCAT_PEERADDR'],
    [process.execPath, AGENT_JS, 'serve', '--udp', '8081', '--tcp', '', '--http', '', '--name', 'udp'],
  ]) {
    const p = spawn('ip', ['netns', 'exec', ns, ...argv], { stdio: 'ignore', detached: true });
    p.unref();
    spawned.push(p);
  }
  await waitFor(async () => {
    const out = (await inNs(ns, ['ss', '-Hltun'])).stdout;
    return [':8080 ', ':8081 '].every((p) => out.includes(p));
  }, `the servers listen in ${ns}`, { timeoutMs: 20_000, intervalMs: 50 });
}

/** The agent's log lines since `from` (bytes), parsed. */
function logSince(n: VNode, from: number): { msg: string; cmd?: string; node?: string; code?: string }[] {
  return readFileSync(n.logFile, 'utf8').slice(from).split('\n').filter(Boolean).map((l) => JSON.parse(l) as { msg: string });
}

t.before(async () => {
  lab = await newLab('hg');
  cp = await lab.startControlPlane({ nodes: ['n1', 'n2', 'n3'], args: NO_DNS });
  for (const name of ['n1', 'n2', 'n3']) {
    nodes.push(await lab.addNode(name, { clusterCIDR: '10.244.0.0/16', backend: 'host-gw', config: { proxyMode: 'none' } }));
  }
  await Promise.all(nodes.map((n) => n.startAgent()));
  for (const n of nodes) podCIDR.set(n.name, (await kubectl('get', 'node', n.name, '-o', 'jsonpath={.spec.podCIDR}')).trim());
  for (const n of nodes) {
    const ns = await lab.addNetns(`p${n.name}`);
    const add = await n.cni('ADD', { containerId: `pod-${n.name}`, netns: ns.path, ifName: 'eth0' }, n.cniConfig({ ipMasq: false }));
    if (add.exitCode !== 0) throw new Error(`CNI ADD on ${n.name}: ${add.stdout}${add.stderr}`);
    pods.push({ node: n, ns: ns.name, ip: (add.json as { ips: { address: string }[] }).ips[0]!.address.split('/')[0]! });
    await serve(ns.name);
  }
  await converged(nodes);
});

t.teardown(async () => {
  for (const p of spawned) { try { process.kill(-p.pid!, 'SIGKILL'); } catch { /* gone */ } }
  await lab?.destroy();
});

t.test('each node: no device, a route per other node via its underlay IP (proto 78), flannel\'s host-gw annotations', async (t) => {
  for (const n of nodes) {
    t.not((await shOk(['ip', '-n', n.ns, 'link', 'show', 'nodenet.1'])).exitCode, 0, `${n.name}: no nodenet.1`);
    const r = await hostgwRoutes(n);
    t.same(r, nodes.filter((o) => o !== n).map(routeLine).sort(), `${n.name}: exactly the other nodes' routes`);
    const ann = JSON.parse(await kubectl('get', 'node', n.name, '-o', 'jsonpath={.metadata.annotations}')) as Record<string, string>;
    t.match(ann, {
      'flannel.alpha.coreos.com/backend-type': 'host-gw',
      'flannel.alpha.coreos.com/backend-data': 'null',
      'flannel.alpha.coreos.com/public-ip': ipOf(n),
      'flannel.alpha.coreos.com/kube-subnet-manager': 'true',
    }, `${n.name}: the annotations`);
  }
});

t.test('pod to pod across every pair of nodes: TCP, UDP and ping, the receiver sees the sender\'s pod IP', async (t) => {
  const pairs = pods.flatMap((a) => pods.filter((b) => b !== a).map((b) => [a, b] as const));
  const results = await Promise.all(pairs.map(async ([a, b]) => ({
    tcp: await tcp(a, b.ip, 8080),
    udp: await udp(a.ns, b.ip),
    ping: (await inNs(a.ns, ['ping', '-c', '1', '-W', '3', b.ip])).exitCode,
  })));
  pairs.forEach(([a, b], i) => {
    const what = `${a.node.name} → ${b.node.name}`;
    const r = results[i]!;
    t.equal(r.tcp, `tcp ${a.ip}`, `${what}: TCP, source kept`);
    t.equal(r.udp, `udp ${a.ip}`, `${what}: UDP, source kept`);
    t.equal(r.ping, 0, `${what}: ping`);
  });
});

t.test('MTU: pods get the underlay\'s 1500; the largest DF payload (1472) crosses nodes, one byte more does not', async (t) => {
  const [a, b] = [pods[0]!, pods[1]!];
  t.match((await sh(['ip', '-n', a.node.ns, 'link', 'show', 'eth0'])).stdout, / mtu 1500 /, 'the lab underlay\'s MTU');
  t.match((await inNs(a.ns, ['ip', 'link', 'show', 'eth0'])).stdout, / mtu 1500 /, 'the pod\'s MTU follows the backend: the underlay\'s');
  t.equal((await inNs(a.ns, ['ping', '-M', 'do', '-s', '1472', '-c', '1', '-W', '3', b.ip])).exitCode, 0, '1472 bytes with DF cross');
  t.not((await inNs(a.ns, ['ping', '-M', 'do', '-s', '1473', '-c', '1', '-W', '3', b.ip])).exitCode, 0, '1473 bytes with DF do not');
});

t.test('a route deleted by hand comes back at the periodic sync (10 s, flannel\'s RouteCheck)', async (t) => {
  const n1 = nodes[0]!;
  const n2 = nodes[1]!;
  const from = statSync(n1.logFile).size;
  await shOk(['ip', '-n', n1.ns, 'route', 'del', podCIDR.get('n2')!, 'proto', '78']);
  t.notOk((await hostgwRoutes(n1)).some((l) => l.startsWith(routeLine(n2))), 'deleted');
  await waitFor(async () => (await hostgwRoutes(n1)).some((l) => l.startsWith(routeLine(n2))), 'the route back', { timeoutMs: 30_000, intervalMs: 200 });
  t.ok(logSince(n1, from).some((l) => l.msg === 'overlay entry' && l.cmd === `route replace ${podCIDR.get('n2')} via ${ipOf(n2)} dev eth0 proto 78`), 'the agent wrote it again');
  t.equal(await tcp(pods[0]!, pods[1]!.ip, 8080), `tcp ${pods[0]!.ip}`, 'n1 → n2 again');
});

t.test('a Node behind a gateway: no route anywhere, a Warning Event naming it and why', async (t) => {
  const far = {
    apiVersion: 'v1', kind: 'Node',
    metadata: { name: 'far', annotations: { 'flannel.alpha.coreos.com/backend-type': 'host-gw', 'flannel.alpha.coreos.com/backend-data': 'null', 'flannel.alpha.coreos.com/public-ip': '10.1.2.3' } },
    spec: { podCIDR: '10.244.200.0/24' },
  };
  const r = await cp.kubectl(['create', '-f', '-'], true, JSON.stringify(far));
  t.equal(r.exitCode, 0, `the Node made: ${r.stderr}`);
  t.teardown(() => cp.kubectl(['delete', 'node', 'far', '--ignore-not-found'], true).then(() => undefined));
  await waitFor(async () => {
    const ev = await kubectl('get', 'events', '--field-selector', 'reason=OverlayPeerNotDirect,involvedObject.name=far', '-o', 'json');
    return (JSON.parse(ev) as { items: unknown[] }).items.length === nodes.length;
  }, 'an Event from every node', { timeoutMs: 20_000, intervalMs: 200 });
  const ev = JSON.parse(await kubectl('get', 'events', '--field-selector', 'reason=OverlayPeerNotDirect,involvedObject.name=far', '-o', 'json')) as { items: { type: string; message: string; source: { host: string } }[] };
  t.same(ev.items.map((e) => e.source.host).sort(), ['n1', 'n2', 'n3'], 'one per node');
  for (const e of ev.items) {
    t.equal(e.type, 'Warning');
    t.match(e.message, new RegExp(`^Node far \\(public IP 10\\.1\\.2\\.3\\) is not on the L2 network of ${e.source.host}, which runs the host-gw overlay backend: this node reaches 10\\.1\\.2\\.3 through a gateway \\(the default route via 192\\.168\\.77\\.1\\)`));
  }
  for (const n of nodes) {
    const st = await readNodeOverlay(runner, n.name, n.nsPath);
    t.match(st.status?.unreachable, [{ node: 'far', publicIP: '10.1.2.3', reason: /through a gateway/ }], `${n.name}: its /overlay/status (lab status's source) names far, not routed, and why`);
    t.notOk((await hostgwRoutes(n)).some((l) => l.startsWith('10.244.200.0/24')), `${n.name}: not routed half-way`);
    t.ok(readFileSync(n.logFile, 'utf8').split('\n').some((l) => l.includes('"code":"NN_ERR_PEER_NOT_DIRECT"') && l.includes('"node":"far"')), `${n.name}: the log line with its code`);
  }
});

t.test('a running node switched vxlan → host-gw and back converges: no device or route of the other backend left', async (t) => {
  const n1 = nodes[0]!;
  n1.opts.backend = 'vxlan';
  await n1.stopAgent();
  await n1.startAgent();
  await waitFor(async () => (await hostgwRoutes(n1)).length === 0 && (await shOk(['ip', '-n', n1.ns, 'link', 'show', 'nodenet.1'])).exitCode === 0, 'n1 on vxlan: nodenet.1, no host-gw route', { timeoutMs: 20_000, intervalMs: 200 });
  t.pass('as vxlan: the device made, host-gw\'s routes gone (its peers run host-gw: not peers of a vxlan node)');
  n1.opts.backend = 'host-gw';
  await n1.stopAgent();
  await n1.startAgent();
  t.not((await shOk(['ip', '-n', n1.ns, 'link', 'show', 'nodenet.1'])).exitCode, 0, 'as host-gw again: no vxlan device left');
  await converged(nodes);
  t.same((await sh(['ip', '-n', n1.ns, 'route', 'show'])).stdout.split('\n').filter((l) => l.includes('nodenet.1')), [], 'no route over it');
  t.equal(await tcp(pods[0]!, pods[2]!.ip, 8080), `tcp ${pods[0]!.ip}`, 'n1 → n3 over host-gw');
});

t.test('a deleted Node: its route leaves every other node', async (t) => {
  const n3 = nodes[2]!;
  const cidr = podCIDR.get('n3')!;
  await n3.stopAgent('SIGKILL');
  await kubectl('delete', 'node', 'n3');
  for (const n of nodes.slice(0, 2)) {
    await waitFor(async () => !(await hostgwRoutes(n)).some((l) => l.startsWith(cidr)), `${n.name}: n3's route gone`, { timeoutMs: 15_000, intervalMs: 100 });
    const other = nodes.find((o) => o !== n && o !== n3)!;
    t.ok((await hostgwRoutes(n)).some((l) => l.startsWith(routeLine(other))), `${n.name}: the route to ${other.name} stays`);
  }
  t.equal(await tcp(pods[0]!, pods[1]!.ip, 8080), `tcp ${pods[0]!.ip}`, 'n1 → n2 still works');
});
