/**
 * The bgp backend end to end (root), as overlay-hostgw.priv.test.ts does host-gw: `nodenet control-plane` in the
 * lab's underlay namespace, three virtual nodes on its bridge whose agents run `backend: bgp` (a BIRD 2 each, in
 * the node's namespace, a full iBGP mesh), pods as plain namespaces through each node's CNI shim with ipMasq false,
 * and real packets: every session Established (read as `nodenet lab status` reads it: each agent's
 * /overlay/status, from BIRD's socket, and /healthz's overlay detail), the peers' blocks `proto bird` via their node IP, TCP, UDP and ping across
 * every pair with the source kept, the MTU (the underlay's), a Node added routed on every node (the time printed),
 * and the lab's teardown leaving no BIRD and no namespace.
 */
import t from 'tap';
import { spawn, type ChildProcess } from 'node:child_process';
import { AGENT_JS, type Lab, type LabControlPlane, type VNode } from '../agent/src/lab/lab.js';
import { OVERLAY_HEADERS, overlayRows, readNodeOverlay } from '../agent/src/lab/overlay-status.js';
import { formatTable } from '../agent/src/cli/table.js';
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
const NODE_OPTS = { clusterCIDR: '10.244.0.0/16', backend: 'bgp', config: { proxyMode: 'none' } } as const;

async function kubectl(...args: string[]): Promise<string> {
  const r = await cp.kubectl(args, true);
  if (r.exitCode !== 0) throw new Error(`kubectl ${args.join(' ')}: ${r.stderr}`);
  return r.stdout;
}

/** The BIRD processes of this lab (their command lines name its run directory), as `pgrep -a bird` lists them. */
async function labBirds(): Promise<string[]> {
  return (await shOk(['pgrep', '-a', 'bird'])).stdout.split('\n').filter((l) => l.includes(`${lab.runRoot}/`));
}

/** A node's routes BIRD wrote (proto bird), as `ip route` prints them (sorted lines). */
async function birdRoutes(n: VNode): Promise<string[]> {
  return (await sh(['ip', '-n', n.ns, 'route', 'show', 'proto', 'bird'])).stdout.split('\n').map((l) => l.trim()).filter(Boolean).sort();
}

const routeLine = (o: VNode) => `${podCIDR.get(o.name)!} via ${ipOf(o)} dev eth0`;

/** Until every node in `ns` routes every other one's pod CIDR via its underlay IP, proto bird. */
async function converged(ns: readonly VNode[], intervalMs = 100): Promise<void> {
  await Promise.all(ns.map(async (n) => {
    const want = ns.filter((o) => o !== n).map(routeLine);
    await waitFor(async () => {
      const r = await birdRoutes(n);
      return want.every((w) => r.some((l) => l.startsWith(w)));
    }, `${n.name} routes ${want.join(', ')} proto bird`, { timeoutMs: 30_000, intervalMs });
  }));
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

async function addPod(n: VNode): Promise<Pod> {
  const ns = await lab.addNetns(`p${n.name}`);
  const add = await n.cni('ADD', { containerId: `pod-${n.name}`, netns: ns.path, ifName: 'eth0' }, n.cniConfig({ ipMasq: false }));
  if (add.exitCode !== 0) throw new Error(`CNI ADD on ${n.name}: ${add.stdout}${add.stderr}`);
  const pod = { node: n, ns: ns.name, ip: (add.json as { ips: { address: string }[] }).ips[0]!.address.split('/')[0]! };
  await serve(ns.name);
  return pod;
}

t.before(async () => {
  lab = await newLab('bg');
  cp = await lab.startControlPlane({ nodes: ['n1', 'n2', 'n3', 'n4'], args: NO_DNS });
  for (const name of ['n1', 'n2', 'n3']) nodes.push(await lab.addNode(name, NODE_OPTS));
  await Promise.all(nodes.map((n) => n.startAgent()));
  for (const n of nodes) podCIDR.set(n.name, (await kubectl('get', 'node', n.name, '-o', 'jsonpath={.spec.podCIDR}')).trim());
  for (const n of nodes) pods.push(await addPod(n));
  await converged(nodes);
});

t.teardown(async () => {
  for (const p of spawned) { try { process.kill(-p.pid!, 'SIGKILL'); } catch { /* gone */ } }
  await lab?.destroy();
});

t.test('every session Established, as lab status reads it: each agent\'s /overlay/status, from BIRD\'s socket', async (t) => {
  t.equal((await labBirds()).length, 3, 'a BIRD per node');
  const all = await Promise.all(nodes.map((n) => readNodeOverlay(runner, n.name, n.nsPath)));
  for (const [i, n] of nodes.entries()) {
    const st = all[i]!;
    t.equal(st.error, null, `${n.name} answered`);
    t.equal(st.status?.backend, 'bgp');
    const sessions = st.status?.bgp && 'sessions' in st.status.bgp ? st.status.bgp.sessions : [];
    t.same(sessions.map((s) => [s.node, s.peerIP, s.state, s.established]), nodes.filter((o) => o !== n).map((o) => [o.name, ipOf(o), 'Established', true]), `${n.name}: a session per other node, Established`);
  }
  for (const n of nodes) {
    const h = await inNs(n.ns, ['curl', '-s', 'http://127.0.0.1:10256/healthz']);
    const body = JSON.parse(h.stdout) as { overlay?: { backend: string; bgp: Record<string, string> } };
    t.same(body.overlay, { backend: 'bgp', bgp: Object.fromEntries(nodes.filter((o) => o !== n).map((o) => [o.name, 'Established'])) }, `${n.name}: /healthz tells each peer's session state`);
  }
  const table = formatTable([...OVERLAY_HEADERS], overlayRows(all));
  t.comment(`lab status's overlay table:\n${table}`);
  t.equal(table.split('\n').filter((l) => / bgp +n\d +192\.168\.77\.1\d +Established /.test(l)).length, 6, 'six rows, each pair\'s session Established');
});

t.test('each node: no device, the other nodes\' blocks proto bird via their node IP, never its own', async (t) => {
  for (const n of nodes) {
    t.not((await shOk(['ip', '-n', n.ns, 'link', 'show', 'nodenet.1'])).exitCode, 0, `${n.name}: no nodenet.1`);
    const r = await birdRoutes(n);
    t.same(r.map((l) => l.replace(/ metric \d+$/, '')), nodes.filter((o) => o !== n).map(routeLine).sort(), `${n.name}: exactly the other nodes' blocks, via their node IPs`);
    const ann = JSON.parse(await kubectl('get', 'node', n.name, '-o', 'jsonpath={.metadata.annotations}')) as Record<string, string>;
    t.match(ann, { 'flannel.alpha.coreos.com/backend-type': 'bgp', 'flannel.alpha.coreos.com/backend-data': '{"ASN":64512,"RouteReflector":false}', 'flannel.alpha.coreos.com/public-ip': ipOf(n) }, `${n.name}: the annotations`);
  }
});

t.test('pod to pod across every pair of nodes: TCP, UDP and ping, the receiver sees the sender\'s pod IP', async (t) => {
  const pairs = pods.flatMap((a) => pods.filter((b) => b !== a).map((b) => [a, b] as const));
  t.equal(pairs.length, 6);
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

t.test('a Node added: its BIRD peers with every node, its block routed everywhere and the others\' on it', async (t) => {
  const started = Date.now();
  const n4 = await lab.addNode('n4', NODE_OPTS);
  await n4.startAgent();
  const ready = Date.now();
  nodes.push(n4);
  podCIDR.set('n4', (await kubectl('get', 'node', 'n4', '-o', 'jsonpath={.spec.podCIDR}')).trim());
  await converged(nodes, 20);
  const routed = Date.now();
  t.comment(`n4 routed on every node (and every node on n4) ${routed - ready} ms after its agent was ready, ${routed - started} ms after its namespace was made`);
  const pod = await addPod(n4);
  pods.push(pod);
  t.equal(await tcp(pod, pods[0]!.ip, 8080), `tcp ${pod.ip}`, 'n4 → n1, source kept');
  t.equal(await tcp(pods[2]!, pod.ip, 8080), `tcp ${pods[2]!.ip}`, 'n3 → n4, source kept');
  const st = await readNodeOverlay(runner, 'n1', nodes[0]!.nsPath);
  t.ok(st.status?.bgp && 'sessions' in st.status.bgp && st.status.bgp.sessions.some((s) => s.node === 'n4' && s.established), 'n1\'s status: the session to n4 Established');
});

t.test('the lab\'s teardown: no BIRD of it left, no namespace', async (t) => {
  t.equal((await labBirds()).length, 4, 'before: a BIRD per node');
  const tag = `nn-${lab.tag}-`;
  for (const p of spawned) { try { process.kill(-p.pid!, 'SIGKILL'); } catch { /* gone */ } }
  t.same(await lab.destroy(), [], 'nothing left behind');
  t.same(await labBirds(), [], 'after: no BIRD');
  t.same((await sh(['ip', 'netns', 'list'])).stdout.split('\n').filter((l) => l.startsWith(tag)), [], 'no namespace of the lab');
});
