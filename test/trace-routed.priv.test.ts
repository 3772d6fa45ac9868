/**
 * `nodenet trace --lab` over the routed backends' real routes (root): `nodenet control-plane` in the lab's
 * underlay namespace, n1/n2 with agents on backend host-gw and n3/n4 on backend bgp (BIRD 2) in the same
 * cluster (each pair sees the other's Nodes as another backend's: no route to them), the nftables proxy (its
 * table is what trace reads first), a pod on each node through the node's CNI shim. The trace of a pod's packet
 * to the other pod of its pair must name the route the agent (host-gw, proto 78) or BIRD (proto bird) installed,
 * via the peer's underlay IP, then the peer's bridge to the pod, the source kept; a ping along that path must
 * get through, so the trace describes a path the packets take. The lab is destroyed in teardown.
 */
import t from 'tap';
import { readNetwork, localAddresses } from '../agent/src/node/compose.js';
import { traceCommand } from '../agent/src/cli/trace-cmd.js';
import type { Lab, VNode } from '../agent/src/lab/lab.js';
import { CLUSTER_CIDR } from '../agent/src/lab/plan.js';
import { newLab, runner, sh, shOk, NO_DNS } from '../agent/src/testing/lab.js';
import { waitFor } from '../agent/src/testing/wait.js';

interface Pod { readonly node: VNode; readonly ns: string; readonly ip: string }

let lab: Lab;
const nodes: VNode[] = [];
const pods = new Map<string, Pod>();
const ipOf = (n: VNode) => n.underlayIP.split('/')[0]!;
const esc = (s: string) => s.replace(/[./()]/g, '\\$&');

/** The most specific route to ip in a node (`ip -j route show match`), as `ip` prints it. */
async function routeTo(n: VNode, ip: string): Promise<{ dst?: string; gateway?: string; dev?: string; protocol?: string } | null> {
  const out = (await sh(['ip', '-n', n.ns, '-j', 'route', 'show', 'match', ip])).stdout;
  const rs = JSON.parse(out || '[]') as { dst?: string; gateway?: string; dev?: string; protocol?: string }[];
  const len = (d?: string) => (d === undefined || d === 'default' ? 0 : Number(d.split('/')[1]));
  return rs.sort((a, b) => len(b.dst) - len(a.dst))[0] ?? null;
}

async function trace(from: Pod, to: Pod): Promise<{ code: number; out: string; err: string }> {
  let out = '';
  let err = '';
  const labNodes = () => nodes.map((n) => ({ name: n.name, netns: n.nsPath, runDir: n.runDir, clusterCIDR: CLUSTER_CIDR }));
  const code = await traceCommand(['--lab', lab.tag, from.ip, 'tcp', to.ip, '8080'], { runner, localAddresses, readNetwork, labNodes, stdout: (s) => (out += s), stderr: (s) => (err += s) });
  return { code, out, err };
}

t.before(async () => {
  lab = await newLab('tr');
  await lab.startControlPlane({ nodes: ['n1', 'n2', 'n3', 'n4'], args: NO_DNS });
  for (const [name, backend] of [['n1', 'host-gw'], ['n2', 'host-gw'], ['n3', 'bgp'], ['n4', 'bgp']] as const) {
    nodes.push(await lab.addNode(name, { clusterCIDR: CLUSTER_CIDR, backend, config: { proxyMode: 'nftables' } }));
  }
  await Promise.all(nodes.map((n) => n.startAgent()));
  for (const n of nodes) {
    const ns = await lab.addNetns(`p${n.name}`);
    const add = await n.cni('ADD', { containerId: `pod-${n.name}`, netns: ns.path, ifName: 'eth0' }, n.cniConfig({ ipMasq: false }));
    if (add.exitCode !== 0) throw new Error(`CNI ADD on ${n.name}: ${add.stdout}${add.stderr}`);
    pods.set(n.name, { node: n, ns: ns.name, ip: (add.json as { ips: { address: string }[] }).ips[0]!.address.split('/')[0]! });
  }
  const [n1, n2, n3, n4] = nodes as [VNode, VNode, VNode, VNode];
  for (const [a, b, proto] of [[n1, n2, '78'], [n2, n1, '78'], [n3, n4, 'bird'], [n4, n3, 'bird']] as const) {
    await waitFor(async () => {
      const r = await routeTo(a, pods.get(b.name)!.ip);
      return r?.gateway === ipOf(b) && r.dev === 'eth0' && r.protocol === proto;
    }, `${a.name} routes ${b.name}'s pod via ${ipOf(b)} proto ${proto}`, { timeoutMs: 30_000, intervalMs: 100 });
  }
});

t.teardown(async () => {
  await lab?.destroy();
});

for (const [from, to, backend] of [['n1', 'n2', 'host-gw'], ['n4', 'n3', 'bgp']] as const) {
  t.test(`${backend}: pod on ${from} → pod on ${to}, traced along the route ${backend === 'bgp' ? 'BIRD' : 'the agent'} installed`, async (t) => {
    const a = pods.get(from)!;
    const b = pods.get(to)!;
    const r = await trace(a, b);
    t.equal(r.code, 0, r.err);
    t.match(r.out, new RegExp(`in node ${from} \\(nftables, table ip kube-proxy`), 'the Service rules of the node the source is on');
    const cidr = (await routeTo(a.node, b.ip))!.dst!;
    const how = backend === 'host-gw'
      ? `routed via ${esc(ipOf(b.node))} \\(node ${to}\\), host-gw route \\(proto 78\\)`
      : `BGP-learned route \\(proto bird\\) via ${esc(ipOf(b.node))} \\(node ${to}\\)`;
    t.match(r.out, new RegExp(
      `path:\\n {2}1\\. ${from}: route ${esc(cidr)} via ${esc(ipOf(b.node))} dev eth0: ${how}, out of eth0 with no tunnel\\n` +
      ` {5}masquerade: no \\(pod to pod inside the cluster network: the source is kept\\)\\n` +
      ` {2}2\\. ${to}: route ${esc(cidr)} dev cbr0: bridged on cbr0 to the pod ${esc(b.ip)}\\n.*\\nend: delivered to the pod`,
    ), r.out);
    t.equal((await shOk(['ip', 'netns', 'exec', a.ns, 'ping', '-c', '1', '-W', '3', b.ip])).exitCode, 0, 'and a ping takes that path');
  });
}

t.test('across the pairs: no route of either backend, so the trace leaves by the default route', async (t) => {
  const r = await trace(pods.get('n1')!, pods.get('n3')!);
  t.equal(r.code, 0, r.err);
  t.match(r.out, /1\. n1: route default via 192\.168\.77\.1 dev eth0: out of eth0 to the gateway 192\.168\.77\.1\n/, 'n3 runs bgp, n1 host-gw: n1 has no route to its pods');
});
