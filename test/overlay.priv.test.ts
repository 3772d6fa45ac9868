/**
 * The VXLAN overlay end to end (root): `nodenet control-plane` in the lab's
 * underlay namespace, three virtual nodes whose agents run with overlay
 * vxlan (no host routes between them: only the overlay joins their pod
 * CIDRs), pods as plain namespaces through each node's CNI shim with
 * ipMasq false (the overlay masquerades), and real packets: TCP, UDP and
 * ping across every pair of nodes, the MTU, masquerade towards the
 * underlay, an agent restart under an established connection, a public-ip
 * change followed, and a deleted Node's entries removed everywhere.
 */
import t from 'tap';
import { spawn, type ChildProcess } from 'node:child_process';
import { readFileSync, statSync } from 'node:fs';
import { AGENT_JS, type Lab, type LabControlPlane, type VNode } from '../agent/src/lab/lab.js';
import { newLab, sh, shOk, NO_DNS } from '../agent/src/testing/lab.js';
import { waitFor } from '../agent/src/testing/wait.js';
import { vtepMacFor } from '../agent/src/overlay/vxlan/lease.js';

interface Pod { readonly node: VNode; readonly ns: string; readonly ip: string }

let lab: Lab;
let cp: LabControlPlane;
let nodes: VNode[] = [];
const pods: Pod[] = [];
const podCIDR = new Map<string, string>();
const spawned: ChildProcess[] = [];

const inNs = (ns: string, argv: string[]) => shOk(['ip', 'netns', 'exec', ns, ...argv]);

async function kubectl(...args: string[]): Promise<string> {
  const r = await cp.kubectl(args, true);
  if (r.exitCode !== 0) throw new Error(`kubectl ${args.join(' ')}: ${r.stderr}`);
  return r.stdout;
}

/** A node's entries on nodenet.1, as `ip` and `bridge` print them (sorted lines). */
async function entries(n: VNode): Promise<{ neigh: string[]; fdb: string[]; routes: string[] }> {
  const lines = async (argv: string[]) => (await sh(['ip', 'netns', 'exec', n.ns, ...argv])).stdout.split('\n').map((l) => l.trim()).filter(Boolean).sort();
  return {
    neigh: await lines(['ip', 'neigh', 'show', 'dev', 'nodenet.1']),
    fdb: await lines(['bridge', 'fdb', 'show', 'dev', 'nodenet.1']),
    routes: await lines(['ip', 'route', 'show', 'dev', 'nodenet.1']),
  };
}

/** Until every node routes every other node's pod CIDR over nodenet.1. */
async function converged(ns: readonly VNode[]): Promise<void> {
  for (const n of ns) {
    const want = ns.filter((o) => o !== n).map((o) => podCIDR.get(o.name)!);
    await waitFor(async () => {
      const r = (await entries(n)).routes;
      return want.every((c) => r.some((l) => l.startsWith(`${c} via ${c.split('/')[0]} onlink`)));
    }, `${n.name} routes ${want.join(', ')} over nodenet.1`, { timeoutMs: 20_000, intervalMs: 100 });
  }
}

async function tcp(from: Pod, ip: string, port: number): Promise<string> {
  const r = await inNs(from.ns, ['socat', '-t2', '-T3', '-', `TCP4:${ip}:${port},connect-timeout=3`]);
  return (r.exitCode === 0 ? r.stdout : r.stderr).trim();
}

/**
 * A pod's servers: TCP 8080 says who connected, TCP 9090 echoes, UDP 8081 is `nodenet serve`, which
 * answers every datagram from one socket (a socat UDP4-RECVFROM,fork server hands its socket to each
 * child it forks and loses what arrives meanwhile, and six senders arrive together). Returns when all listen.
 */
async function serve(ns: string): Promise<void> {
  for (const argv of [
    ['socat', '-t10', 'TCP4-LISTEN:8080,reuseaddr,fork', 'SYSTEM:echo tcp $SOCAT_PEERADDR'],
    [process.execPath, AGENT_JS, 'serve', '--udp', '8081', '--tcp', '', '--http', '', '--name', 'udp'],
    ['socat', 'TCP4-LISTEN:9090,reuseaddr,fork', 'EXEC:cat'],
  ]) {
    const p = spawn('ip', ['netns', 'exec', ns, ...argv], { stdio: 'ignore', detached: true });
    p.unref();
    spawned.push(p);
  }
  await waitFor(async () => {
    const out = (await inNs(ns, ['ss', '-Hltun'])).stdout;
    return [':8080 ', ':8081 ', ':9090 '].every((p) => out.includes(p));
  }, `the servers listen in ${ns}`, { timeoutMs: 20_000, intervalMs: 50 });
}

t.before(async () => {
  lab = await newLab('ov');
  cp = await lab.startControlPlane({ nodes: ['n1', 'n2', 'n3'], args: NO_DNS });
  for (const name of ['n1', 'n2', 'n3']) {
    nodes.push(await lab.addNode(name, { clusterCIDR: '10.244.0.0/16', config: { overlay: 'vxlan', proxyMode: 'none' } }));
  }
  await Promise.all(nodes.map((n) => n.startAgent()));
  for (const n of nodes) podCIDR.set(n.name, (await kubectl('get', 'node', n.name, '-o', 'jsonpath={.spec.podCIDR}')).trim());
  for (const n of nodes) {
    const ns = await lab.addNetns(`p${n.name}`);
    const add = await n.cni('ADD', { containerId: `pod-${n.name}`, netns: ns.path, ifName: 'eth0' }, n.cniConfig({ ipMasq: false }));
    if (add.exitCode !== 0) throw new Error(`CNI ADD on ${n.name}: ${add.stdout}${add.stderr}`);
    const ip = (add.json as { ips: { address: string }[] }).ips[0]!.address.split('/')[0]!;
    pods.push({ node: n, ns: ns.name, ip });
    await serve(ns.name);
  }
  await converged(nodes);
});

t.teardown(async () => {
  for (const p of spawned) { try { process.kill(-p.pid!, 'SIGKILL'); } catch { /* gone */ } }
  await lab?.destroy();
});

t.test('each node: nodenet.1 as flannel.1 (VNI 1, port 8472, learning off, MTU 1450, MAC from the name) and its lease on the Node', async (t) => {
  for (const n of nodes) {
    const link = (JSON.parse((await sh(['ip', '-n', n.ns, '-d', '-j', 'link', 'show', 'nodenet.1'])).stdout) as { mtu: number; address: string; linkinfo: { info_kind: string; info_data: { id: number; port: number; learning: boolean; local: string; link?: string } } }[])[0]!;
    const ip = n.underlayIP.split('/')[0]!;
    t.match(link, { mtu: 1450, address: vtepMacFor(n.name), linkinfo: { info_kind: 'vxlan', info_data: { id: 1, port: 8472, learning: false, local: ip } } }, `${n.name}: the device`);
    t.notOk(JSON.stringify(link).includes('"df":"set"'), 'df not set');
    const addrs = (await sh(['ip', '-n', n.ns, '-4', '-o', 'addr', 'show', 'dev', 'nodenet.1'])).stdout;
    t.match(addrs, new RegExp(`inet ${podCIDR.get(n.name)!.split('/')[0]!.replace(/\./g, '\\.')}/32 `), `${n.name}: the pod CIDR's .0 as /32`);
    const ann = JSON.parse(await kubectl('get', 'node', n.name, '-o', 'jsonpath={.metadata.annotations}')) as Record<string, string>;
    t.match(ann, {
      'flannel.alpha.coreos.com/backend-type': 'vxlan',
      'flannel.alpha.coreos.com/backend-data': JSON.stringify({ VNI: 1, VtepMAC: vtepMacFor(n.name) }),
      'flannel.alpha.coreos.com/public-ip': ip,
      'flannel.alpha.coreos.com/kube-subnet-manager': 'true',
    }, `${n.name}: the annotations`);
    const e = await entries(n);
    for (const o of nodes.filter((x) => x !== n)) {
      const gw = podCIDR.get(o.name)!.split('/')[0]!;
      t.ok(e.neigh.includes(`${gw} lladdr ${vtepMacFor(o.name)} PERMANENT`), `${n.name}: neighbour ${gw} → ${o.name}'s VTEP`);
      t.ok(e.fdb.includes(`${vtepMacFor(o.name)} dst ${o.underlayIP.split('/')[0]} self permanent`), `${n.name}: FDB ${o.name}'s VTEP → its underlay IP`);
    }
  }
});

/**
 * One UDP request, asked again (at most 3 times) when no answer came (UDP promises no more), and the
 * source the server saw: `nodenet serve` answers "<name> <ip>:<port>".
 */
async function udp(ns: string, ip: string): Promise<string> {
  let out = '';
  for (let i = 0; i < 3 && out === ''; i++) out = (await inNs(ns, ['sh', '-c', `echo hi | socat -t2 -T3 - UDP4:${ip}:8081`])).stdout.trim();
  return out.replace(/^udp (\S+):\d+$/, 'udp $1');
}

t.test('pod to pod across every pair of nodes: TCP, UDP and ping, the receiver sees the sender\'s pod IP', async (t) => {
  const pairs = pods.flatMap((a) => pods.filter((b) => b !== a).map((b) => [a, b] as const));
  // The pairs run side by side (a UDP client waits out its -t after the answer).
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

t.test('MTU: pods get 1450; the largest DF payload crosses nodes, one byte more does not', async (t) => {
  const [a, b] = [pods[0]!, pods[1]!];
  t.match((await inNs(a.ns, ['ip', 'link', 'show', 'eth0'])).stdout, / mtu 1450 /, 'the pod\'s MTU follows the overlay');
  t.equal((await inNs(a.ns, ['ping', '-M', 'do', '-s', '1422', '-c', '1', '-W', '3', b.ip])).exitCode, 0, '1422 bytes with DF cross');
  t.not((await inNs(a.ns, ['ping', '-M', 'do', '-s', '1423', '-c', '1', '-W', '3', b.ip])).exitCode, 0, '1423 bytes with DF do not');
});

t.test('a pod reaching a host on the underlay is masqueraded to its node\'s IP', async (t) => {
  const host = await lab.addUnderlayHost('h', '192.168.77.200/24');
  const srv = spawn('ip', ['netns', 'exec', host.name, 'socat', '-t10', 'TCP4-LISTEN:8080,reuseaddr,fork', 'SYSTEM:echo tcp $SOCAT_PEERADDR'], { stdio: 'ignore', detached: true });
  spawned.push(srv);
  await waitFor(async () => (await inNs(host.name, ['ss', '-ltn'])).stdout.includes(':8080'), 'the host listens');
  for (const p of pods) t.equal(await tcp(p, '192.168.77.200', 8080), `tcp ${p.node.underlayIP.split('/')[0]}`, `${p.node.name}'s pod seen as its node`);
});

t.test('an agent restart keeps an established cross-node connection and flaps no entry', async (t) => {
  const [a, b] = [pods[0]!, pods[1]!];
  const n1 = a.node;
  const conn = spawn('ip', ['netns', 'exec', a.ns, 'socat', '-', `TCP4:${b.ip}:9090`], { stdio: ['pipe', 'pipe', 'ignore'] });
  let got = '';
  conn.stdout!.on('data', (d: Buffer) => (got += d.toString()));
  t.teardown(() => void conn.kill('SIGKILL'));
  conn.stdin!.write('before\n');
  await waitFor(() => got.includes('before'), 'the echo before the restart');
  const before = await entries(n1);
  // Every change the kernel makes to n1's neighbours, routes and FDB during the restart.
  let events = '';
  const monitors = [
    spawn('ip', ['netns', 'exec', n1.ns, 'ip', 'monitor', 'neigh', 'route', 'link'], { stdio: ['ignore', 'pipe', 'ignore'] }),
    spawn('ip', ['netns', 'exec', n1.ns, 'bridge', 'monitor', 'fdb'], { stdio: ['ignore', 'pipe', 'ignore'] }),
  ];
  for (const m of monitors) m.stdout!.on('data', (d: Buffer) => (events += d.toString()));
  t.teardown(() => { for (const m of monitors) m.kill('SIGKILL'); });
  const logFrom = statSync(n1.logFile).size;
  await n1.stopAgent('SIGKILL');
  await n1.startAgent();
  // The agent is ready only after its first overlay sync (or 10 s): its plan for this kernel ran.
  const log = readFileSync(n1.logFile, 'utf8').slice(logFrom).split('\n').filter(Boolean).map((l) => JSON.parse(l) as { msg: string; subsys?: string; actions?: string[] });
  t.same(log.filter((l) => l.msg === 'vxlan device ready').map((l) => l.actions), [['kept']], 'the device was kept');
  t.same(log.filter((l) => l.msg === 'overlay entry'), [], 'no entry was written or removed');
  t.ok(log.some((l) => l.msg === 'overlay synced'), 'the restarted agent synced');
  conn.stdin!.write('after\n');
  await waitFor(() => got.includes('after'), 'the echo after the restart on the same connection');
  t.equal(got, 'before\nafter\n', 'one connection, both lines echoed');
  t.equal(conn.exitCode, null, 'still open');
  for (const m of monitors) m.kill('SIGKILL');
  t.same(events.split('\n').filter((l) => l.includes('nodenet.1')), [], 'the kernel saw no change on nodenet.1');
  t.same(await entries(n1), before, 'the same entries');
});

t.test('a public-ip change on a Node is followed: FDB entries move to the new address, traffic follows', async (t) => {
  const n3 = nodes[2]!;
  const mac = vtepMacFor('n3');
  await sh(['ip', '-n', n3.ns, 'addr', 'add', '192.168.77.50/24', 'dev', 'eth0']);
  await kubectl('annotate', 'node', 'n3', '--overwrite', 'flannel.alpha.coreos.com/public-ip=192.168.77.50');
  for (const n of nodes.slice(0, 2)) {
    await waitFor(async () => {
      const fdb = (await entries(n)).fdb.filter((l) => l.startsWith(mac));
      return fdb.length === 1 && fdb[0] === `${mac} dst 192.168.77.50 self permanent`;
    }, `${n.name}: n3's FDB entry moved to 192.168.77.50 (and only there)`, { timeoutMs: 15_000, intervalMs: 100 }).catch(async (e: unknown) => {
      const log = readFileSync(n.logFile, 'utf8').split('\n').filter((l) => l.includes('overlay')).slice(-8).join('\n');
      throw new Error(`${String(e)}\nfdb: ${JSON.stringify((await entries(n)).fdb)}\nn3: ${await kubectl('get', 'node', 'n3', '-o', 'jsonpath={.metadata.annotations}')}\n${log}`);
    });
    t.pass(`${n.name}: FDB entry for n3 now dst 192.168.77.50`);
  }
  const p3 = pods[2]!;
  for (const a of pods.slice(0, 2)) t.equal(await tcp(a, p3.ip, 8080), `tcp ${a.ip}`, `${a.node.name} → n3 over the new address`);
  t.equal((await kubectl('get', 'node', 'n3', '-o', 'jsonpath={.metadata.annotations.flannel\\.alpha\\.coreos\\.com/public-ip}')).trim(), '192.168.77.50', 'n3\'s agent left the admin\'s change in place');
});

t.test('a deleted Node: its route, FDB entry and neighbour leave every other node', async (t) => {
  const n3 = nodes[2]!;
  const cidr = podCIDR.get('n3')!;
  const gw = cidr.split('/')[0]!;
  const mac = vtepMacFor('n3');
  await n3.stopAgent('SIGKILL');
  await kubectl('delete', 'node', 'n3');
  for (const n of nodes.slice(0, 2)) {
    await waitFor(async () => {
      const e = await entries(n);
      return !e.routes.some((l) => l.startsWith(cidr)) && !e.fdb.some((l) => l.startsWith(mac)) && !e.neigh.some((l) => l.startsWith(`${gw} `));
    }, `${n.name}: n3's entries gone`, { timeoutMs: 15_000, intervalMs: 100 });
    const e = await entries(n);
    t.notOk(e.routes.some((l) => l.startsWith(cidr)), `${n.name}: route gone`);
    t.notOk(e.fdb.some((l) => l.startsWith(mac)), `${n.name}: FDB entry gone`);
    t.notOk(e.neigh.some((l) => l.startsWith(`${gw} `)), `${n.name}: neighbour gone`);
    const other = nodes.find((o) => o !== n && o !== n3)!;
    t.ok(e.routes.some((l) => l.startsWith(podCIDR.get(other.name)!)), `${n.name}: the route to ${other.name} stays`);
  }
  t.equal(await tcp(pods[0]!, pods[1]!.ip, 8080), `tcp ${pods[0]!.ip}`, 'n1 → n2 still works');
});
