/**
 * The bgp backend end to end with Debian's bird2 (root), the overlay in process (no API server: the Node
 * objects are made here, and each node's published annotations are handed to every overlay as a watch would):
 * three lab nodes, each a namespace on the underlay with a "pod" namespace behind a veth holding its podCIDR
 * (as cbr0 does), each overlay with its own BIRD in its node's namespace. Sessions Established, the others'
 * blocks `proto bird` via their node IP, pod to pod with the source kept, a Node added and routed (the time it
 * took is printed), an agent restart that adopts BIRD under an established TCP connection, a BIRD killed
 * (its agent stopped first) whose routes leave the others (time printed).
 */
import t from 'tap';
import { spawn, type ChildProcess } from 'node:child_process';
import { parseCidr } from '../../../../lib/net/ip.js';
import { silentLogger } from '../../../../lib/log/log.js';
import { realClock } from '../../../../lib/reconcile/clock.js';
import type { Runner } from '../../exec/runner.js';
import type { Lab, VNode } from '../../lab/lab.js';
import { NftExecutor } from '../../netfilter/nft/nft.js';
import { openNetlink } from '../../netlink/netlink.js';
import { toNetnsPath } from '../../netns/netns.js';
import { isAlive } from '../../netns/proc.js';
import { newLab, runner, sh, shOk } from '../../testing/lab.js';
import { waitFor } from '../../testing/wait.js';
import { Overlay } from '../overlay.js';
import { bgpBackendType, type BgpBackend } from './backend.js';
import { stopBird } from './bird.js';

const CLUSTER = parseCidr('10.244.0.0/16').cidr;
interface Member {
  readonly node: VNode;
  readonly pod: string;
  readonly podIP: string;
  overlay: Overlay | null;
  backend: BgpBackend | null;
  close: (() => void) | null;
}
let lab: Lab;
const members: Member[] = [];
const objects = new Map<string, { metadata: { name: string; uid: string; resourceVersion: string; annotations: Record<string, string> }; spec: { podCIDR: string } }>();
const spawned: ChildProcess[] = [];
let rv = 1;

const ipOf = (n: VNode) => n.underlayIP.split('/')[0]!;
const cidrOf = (n: VNode) => `10.244.${n.index}.0/24`;
const inNs = (n: VNode): Runner => ({ run: (argv, opts) => runner.run(argv, { ...opts, netns: n.nsPath }) });
const birdRoutes = async (n: VNode) => (await sh(['ip', '-n', n.ns, 'route', 'show', 'proto', 'bird'])).stdout.split('\n').map((l) => l.trim()).filter(Boolean);
const live = () => members.filter((m) => m.overlay);

/** Hands a Node object to every running overlay, as the watch would. */
function deliver(name: string, prev: unknown): void {
  const cur = objects.get(name)!;
  for (const m of live()) (prev ? m.overlay!.handler.update(prev, cur) : m.overlay!.handler.add(cur));
}

async function startOverlay(m: Member): Promise<void> {
  const nl = openNetlink(toNetnsPath(m.node.nsPath));
  const type = bgpBackendType({ runDir: m.node.runDir, clusterCIDR: CLUSTER, runner: inNs(m.node), gracefulRestartS: 3, holdS: 9 });
  const o = new Overlay({
    nodeName: m.node.name, podCIDR: parseCidr(cidrOf(m.node)).cidr, clusterCIDR: CLUSTER, backend: type, netlink: nl,
    nft: new NftExecutor({ runner, netns: m.node.nsPath }), underlayInterface: null, nodeIP: ipOf(m.node), clock: realClock, log: silentLogger(),
    publish: async (a) => {
      const prev = objects.get(m.node.name)!;
      objects.set(m.node.name, { ...prev, metadata: { ...prev.metadata, resourceVersion: String(++rv), annotations: { ...prev.metadata.annotations, ...a } } });
      setImmediate(() => deliver(m.node.name, prev));
    },
  });
  await o.setup();
  m.overlay = o;
  m.backend = type.last();
  m.close = () => nl.close();
  for (const name of objects.keys()) o.handler.add(objects.get(name)!);
  o.synced();
}

async function stopOverlay(m: Member): Promise<void> {
  await m.overlay?.stop();
  m.close?.();
  m.overlay = null;
}

async function addMember(name: string): Promise<Member> {
  const node = await lab.addNode(name, {});
  const pod = (await lab.addNetns(`p${name}`)).name;
  const [gw, podIP] = [`10.244.${node.index}.1`, `10.244.${node.index}.2`];
  await shOk(['ip', 'link', 'add', 'vp', 'netns', node.ns, 'type', 'veth', 'peer', 'name', 'eth0', 'netns', pod]);
  await shOk(['ip', '-n', node.ns, '-batch', '-'], `addr add ${gw}/24 dev vp\nlink set vp up\n`);
  await shOk(['ip', '-n', pod, '-batch', '-'], `addr add ${podIP}/24 dev eth0\nlink set eth0 up\nroute add default via ${gw}\n`);
  await shOk(['ip', 'netns', 'exec', node.ns, 'sysctl', '-qw', 'net.ipv4.ip_forward=1']);
  objects.set(name, { metadata: { name, uid: `uid-${name}`, resourceVersion: String(++rv), annotations: {} }, spec: { podCIDR: cidrOf(node) } });
  const m: Member = { node, pod, podIP, overlay: null, backend: null, close: null };
  members.push(m);
  deliver(name, null);
  return m;
}

/** Until `m` routes every other member's block via its node IP, proto bird. */
async function routed(m: Member, others: readonly Member[], timeoutMs = 20_000): Promise<void> {
  await waitFor(async () => {
    const r = await birdRoutes(m.node);
    return others.every((o) => r.some((l) => l.startsWith(`${cidrOf(o.node)} via ${ipOf(o.node)} dev eth0`)));
  }, `${m.node.name} routes ${others.map((o) => o.node.name).join(', ')} proto bird`, { timeoutMs, intervalMs: 25 });
}

t.before(async () => {
  lab = await newLab('bgp');
  for (const n of ['n1', 'n2']) await addMember(n);
  for (const m of members) await startOverlay(m);
  for (const m of members) await routed(m, members.filter((o) => o !== m));
});

t.teardown(async () => {
  for (const p of spawned) { try { process.kill(-p.pid!, 'SIGKILL'); } catch { /* gone */ } }
  for (const m of members) await stopOverlay(m);
  for (const m of members) await stopBird(m.node.runDir, { graceMs: 0 });
  await lab?.destroy();
});

t.test('sessions Established, the peers\' blocks proto bird via their node IP, never the own block; the underlay MTU', async (t) => {
  for (const m of members) {
    const st = await m.backend!.peerStatus();
    t.same(st.map((s) => [s.node, s.peerIP, s.state]), members.filter((o) => o !== m).map((o) => [o.node.name, ipOf(o.node), 'Established']), `${m.node.name}: sessions`);
    const r = await birdRoutes(m.node);
    t.notOk(r.some((l) => l.startsWith(cidrOf(m.node))), `${m.node.name}: its own block is not BIRD's in the kernel`);
    t.match((await sh(['ip', '-n', m.node.ns, 'route', 'show', cidrOf(m.node)])).stdout, /dev vp proto kernel/, `${m.node.name}: the connected route (cbr0's) stays`);
    t.equal(m.overlay!.mtu, 1500, 'no encapsulation: the underlay MTU');
    t.equal(objects.get(m.node.name)!.metadata.annotations['flannel.alpha.coreos.com/backend-type'], 'bgp');
  }
});

t.test('pod to pod across nodes: ping and TCP, the source kept', async (t) => {
  const [a, b] = [members[0]!, members[1]!];
  const srv = spawn('ip', ['netns', 'exec', b.pod, 'socat', 'TCP4-LISTEN:8080,reuseaddr,fork', 'SYSTEM:echo $SOCAT_PEERADDR'], { stdio: 'ignore', detached: true });
  spawned.push(srv);
  await waitFor(async () => (await sh(['ip', 'netns', 'exec', b.pod, 'ss', '-Hltn'])).stdout.includes(':8080 '), 'server listens', { timeoutMs: 10_000 });
  t.equal((await sh(['ip', 'netns', 'exec', a.pod, 'ping', '-c1', '-W3', b.podIP])).exitCode, 0, 'ping');
  const r = await sh(['ip', 'netns', 'exec', a.pod, 'socat', '-T3', '-', `TCP4:${b.podIP}:8080,connect-timeout=3`]);
  t.equal(r.stdout.trim(), a.podIP, 'the server sees the client pod\'s IP');
});

t.test('a Node added is routed by every node, and routes to them', async (t) => {
  const started = Date.now();
  const m = await addMember('n3');
  await startOverlay(m);
  const others = members.filter((o) => o !== m);
  await Promise.all([...others.map((o) => routed(o, [m])), routed(m, others)]);
  const ms = Date.now() - started;
  t.comment(`n3 added (namespace, its overlay and BIRD started) -> routed on every node: ${ms} ms`);
  t.pass('routed everywhere');
});

t.test('an agent restart adopts BIRD and drops no established cross-node TCP connection', async (t) => {
  const [a, b] = [members[0]!, members[1]!];
  const echo = spawn('ip', ['netns', 'exec', b.pod, 'socat', 'TCP4-LISTEN:9090,reuseaddr,fork', 'EXEC:cat'], { stdio: 'ignore', detached: true });
  spawned.push(echo);
  await waitFor(async () => (await sh(['ip', 'netns', 'exec', b.pod, 'ss', '-Hltn'])).stdout.includes(':9090 '), 'echo listens', { timeoutMs: 10_000 });
  const client = spawn('ip', ['netns', 'exec', a.pod, 'socat', '-', `TCP4:${b.podIP}:9090`], { stdio: ['pipe', 'pipe', 'ignore'], detached: true });
  spawned.push(client);
  let got = '';
  client.stdout!.on('data', (d: Buffer) => { got += d.toString(); });
  client.stdin!.write('before\n');
  await waitFor(async () => got.includes('before'), 'echo before', { timeoutMs: 5_000 });
  const pid = a.backend!.bird.pid;
  await stopOverlay(a);
  await startOverlay(a);
  await waitFor(async () => a.backend!.lastAction !== null, 'the new overlay synced', { timeoutMs: 10_000 });
  t.equal(a.backend!.lastAction, 'adopted');
  t.equal(a.backend!.bird.pid, pid, 'the same BIRD');
  client.stdin!.write('after\n');
  await waitFor(async () => got.includes('after'), 'echo after the restart', { timeoutMs: 5_000 });
  t.equal(got, 'before\nafter\n', 'the connection survived');
  t.equal(client.exitCode, null);
  client.stdin!.end();
});

t.test("a node's BIRD killed (its agent stopped first): its block leaves the others within the restart and hold times", async (t) => {
  const m = members[2]!;
  const pid = m.backend!.bird.pid!;
  await stopOverlay(m);
  process.kill(pid, 'SIGKILL');
  const started = Date.now();
  await waitFor(async () => !isAlive(pid), 'BIRD gone', { timeoutMs: 5_000 });
  for (const o of members.filter((x) => x !== m)) {
    await waitFor(async () => !(await birdRoutes(o.node)).some((l) => l.startsWith(cidrOf(m.node))), `${o.node.name} drops ${cidrOf(m.node)}`, { timeoutMs: 20_000, intervalMs: 50 });
  }
  t.comment(`n3's BIRD killed -> its block gone from n1 and n2: ${Date.now() - started} ms (graceful restart time 3 s, hold time 9 s)`);
  t.pass('gone everywhere');
});
