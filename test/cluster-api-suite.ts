/**
 * The proxy driven by the API, end to end, run once per proxy mode (the
 * cluster-api-<mode>.priv.test.ts files). Real processes: `nodenet
 * control-plane` in the lab's underlay namespace, two virtual nodes whose
 * agents register their Nodes, take their pod CIDRs from node IPAM and
 * watch Services and EndpointSlices with their own tokens, and the real
 * kubectl. Each agent runs the Pods the scheduler binds to its node (the
 * embedded kubelet: pause holder, CNI ADD, `nodenet serve` as the
 * container) and joins the VXLAN overlay, so endpoints on the other nodes
 * are reached across it.
 *
 * Every case sends real packets from a client pod on n1 to the Service's
 * ClusterIP and checks which Pods answer: `kubectl apply`, `kubectl scale`,
 * a deleted Pod replaced, the control plane killed right after an
 * acknowledged write, an agent restarted under an established connection,
 * and a node whose Lease stops losing its endpoints. Over the routed
 * backends (cluster-api-hostgw, cluster-api-bgp) the crash cases (the
 * control plane, an agent, a Lease) are left to vxlan's runs: they do not
 * depend on the backend.
 */
import t, { type Test } from 'tap';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Lab, LabControlPlane, VNode } from '../agent/src/lab/lab.js';
import { newLab, runner, shOk } from '../agent/src/testing/lab.js';
import { waitFor } from '../agent/src/testing/wait.js';
import { proxyStatusFile, readProxyStatus } from '../agent/src/node/proxy-status.js';
import { AGENT_JS } from '../agent/src/lab/lab.js';
import { spawn, type ChildProcess } from 'node:child_process';

type Mode = 'iptables' | 'nftables';

const MANIFEST = `apiVersion: v1
kind: Service
metadata:
  name: web
spec:
  selector:
    app: web
  ports:
  - name: http
    port: 80
    targetPort: 8080
  - name: echo
    port: 9090
    targetPort: 9090
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
spec:
  replicas: 2
  selector:
    matchLabels:
      app: web
  template:
    metadata:
      labels:
        app: web
    spec:
      terminationGracePeriodSeconds: 1
      containers:
      - name: web
        image: nodenet/host
        command: ${JSON.stringify([process.execPath, AGENT_JS, 'serve', '--tcp', '8080,9090', '--http', '8081'])}
        env: [{name: POD_NAME, valueFrom: {fieldRef: {fieldPath: metadata.name}}}]
        readinessProbe: {tcpSocket: {port: 8080}, periodSeconds: 1}
`;

interface ApiPod {
  readonly name: string;
  readonly node: string;
  readonly ip: string;
  readonly ready: boolean;
}

/**
 * `backend`: the overlay the agents run (vxlan by default; host-gw: routes via the nodes' underlay IPs, no device;
 * bgp: the same routes, BIRD's, learned over iBGP).
 */
export function clusterApiSuite(mode: Mode, backend: 'vxlan' | 'host-gw' | 'bgp' = 'vxlan'): void {
  // The routed backends run every case of Services with endpoints on remote nodes (apply, scale, a deleted Pod
  // replaced, a Node deleted taking its routes with it, delete). The crash cases (the control plane or an agent
  // killed, a Lease that stops) are the API's and the agent's, the same over any backend: they run over vxlan,
  // in both proxy modes.
  const all = backend === 'vxlan';
  const crashCase = (name: string, fn: (t: Test) => Promise<void>): void => {
    if (all) void t.test(name, fn);
  };
  /** A node's routes of the overlay: on nodenet.1 (vxlan), of nodenet's protocol 78 (host-gw), or BIRD's (bgp). */
  const overlayRoutes = (n: VNode) => n.exec(['ip', 'route', 'show', ...(backend === 'vxlan' ? ['dev', 'nodenet.1'] : ['proto', backend === 'bgp' ? 'bird' : '78'])]).then((r) => r.stdout);
  let lab: Lab;
  let cp: LabControlPlane;
  let n1: VNode, n2: VNode, n3: VNode;
  /** The Pods the API shows running and ready, not being deleted (refreshed by pods()). */
  let seenPods: ApiPod[] = [];
  const NODES = ['n1', 'n2', 'n3'];
  let kubeconfig: string;
  let client: { ns: string; ip: string };
  let clusterIP = '';

  const kubectl = async (...args: string[]) => {
    const r = await runner.run(['kubectl', '--kubeconfig', kubeconfig, ...args], { allowFailure: true });
    if (r.exitCode !== 0) throw new Error(`kubectl ${args.join(' ')}: ${r.stderr}`);
    return r.stdout;
  };

  async function tcp(ip: string, port: number): Promise<string> {
    const r = await shOk(['ip', 'netns', 'exec', client.ns, 'socat', '-t2', '-T3', '-', `TCP4:${ip}:${port},connect-timeout=3`]);
    return (r.exitCode === 0 ? r.stdout : r.stderr).trim();
  }

  /** The Pod names that answer on the ClusterIP over n connections. */
  async function answering(n = 24): Promise<string[]> {
    const seen = new Set<string>();
    for (let i = 0; i < n; i++) seen.add((await tcp(clusterIP, 80)).split(' ')[0] || '(none)');
    return [...seen].sort();
  }

  /** The endpoints n1's agent applied for web:http ("ip:port", marked when not ready). */
  const applied = () => readProxyStatus(proxyStatusFile(n1.runDir))?.applied['default/web:http'] ?? [];
  const readyIPs = (pods: string[]) => pods.map((p) => seenPods.find((r) => r.name === p)!.ip).map((ip) => `${ip}:8080`).sort();

  /** Running, ready Pods of the web Deployment, as the API shows them. */
  async function pods(): Promise<ApiPod[]> {
    const o = JSON.parse(await kubectl('get', 'pods', '-l', 'app=web', '-o', 'json')) as { items: { metadata: { name: string; deletionTimestamp?: string }; spec: { nodeName?: string }; status: { podIP?: string; phase?: string; conditions?: { type: string; status: string }[] } }[] };
    seenPods = o.items.filter((i) => !i.metadata.deletionTimestamp && i.status.phase === 'Running' && i.status.podIP).map((i) => ({
      name: i.metadata.name, node: i.spec.nodeName ?? '', ip: i.status.podIP!, ready: i.status.conditions?.some((c) => c.type === 'Ready' && c.status === 'True') ?? false,
    }));
    return seenPods;
  }
  const on = (node: string) => seenPods.filter((p) => p.node === node && p.ready).map((p) => p.name).sort();

  /** What the cluster looked like, for a failure message. */
  async function picture(): Promise<string> {
    const listing = await runner.run(['kubectl', '--kubeconfig', kubeconfig, 'get', 'pods,endpointslices', '-o', 'wide'], { allowFailure: true });
    const log = (await n1.exec(['tail', '-n', '8', n1.logFile], true)).stdout;
    const nodes = await runner.run(['kubectl', '--kubeconfig', kubeconfig, 'get', 'nodes,leases', '-A', '-o', 'jsonpath={range .items[*]}{.metadata.name} {.spec.renewTime} {.status.conditions[?(@.type=="Ready")]} {.spec.taints}{"\\n"}{end}'], { allowFailure: true });
    const cpLog = (await runner.run(['grep', '-h', 'lifecycle', `${lab.runRoot}/control-plane.log`], { allowFailure: true })).stdout.split('\n').slice(-6).join('\n');
    return `\nnodes and leases:\n${nodes.stdout}${nodes.stderr}\nnode lifecycle log:\n${cpLog}\napplied: ${JSON.stringify(applied())}\npods seen: ${JSON.stringify(seenPods)}\n${listing.stdout}${listing.stderr}\nn1 log:\n${log}`;
  }

  async function waitOr(cond: () => boolean | Promise<boolean>, what: string, timeoutMs = 30_000): Promise<void> {
    try {
      await waitFor(cond, what, { timeoutMs, intervalMs: 100 });
    } catch (e) {
      throw new Error(`${e instanceof Error ? e.message : String(e)}${await picture()}`);
    }
  }

  /**
   * Waits until `count` Pods run on `nodes`, n1's rules hold exactly their endpoints as ready, and exactly
   * they answer on the ClusterIP. Returns their names.
   */
  async function converged(count: number, nodes: readonly string[] = NODES, what = 'the rules follow the Pods'): Promise<string[]> {
    let names: string[] = [];
    await waitOr(async () => {
      await pods();
      names = nodes.flatMap((n) => on(n)).sort();
      return names.length === count && JSON.stringify([...applied()].filter((e) => !/\(/.test(e)).sort()) === JSON.stringify(readyIPs(names));
    }, `${what} (${count} Pods)`, 60_000);
    await waitOr(async () => JSON.stringify(await answering(8 * count)) === JSON.stringify(names), `the Pods ${names.join(', ')} answer`, 10_000);
    return names;
  }

  t.before(async () => {
    lab = await newLab(backend === 'host-gw' ? 'ah' : backend === 'bgp' ? 'ab' : mode === 'iptables' ? 'ai' : 'an');
    // Without the coredns addon: these cases are the Services' (test/dns-suite.ts has the DNS ones), and each of the four
    // backends' runs is close to tap's 300 s per file on a busy machine.
    cp = await lab.startControlPlane({ nodes: NODES, args: ['--node-monitor-grace-period', '8s', '--orphan-pod-quarantine', '2s', '--disable', 'coredns'] });
    kubeconfig = (await cp.localAccess()).kubeconfig;
    const cfg = { proxyMode: mode, proxyMinSyncMs: 100, nodeLeaseDurationSeconds: 4, backend, runPods: true };
    n1 = await lab.addNode('n1', { clusterCIDR: '10.244.0.0/16', config: cfg });
    n2 = await lab.addNode('n2', { clusterCIDR: '10.244.0.0/16', config: cfg });
    n3 = await lab.addNode('n3', { clusterCIDR: '10.244.0.0/16', config: cfg });
    await Promise.all([n1.startAgent(), n2.startAgent(), n3.startAgent()]);
    const ns = await lab.addNetns('client');
    const add = await n1.cni('ADD', { containerId: 'client', netns: ns.path, ifName: 'eth0' }, n1.cniConfig({ ipMasq: false }));
    if (add.exitCode !== 0) throw new Error(`client CNI ADD: ${add.stdout}`);
    client = { ns: ns.name, ip: (add.json as { ips: { address: string }[] }).ips[0]!.address.split('/')[0]! };
  });
  t.teardown(async () => {
    await lab?.destroy();
  });

  t.test(`${mode}: nodes register, take pod CIDRs from node IPAM, and are Ready`, async (t) => {
    const out = await kubectl('get', 'nodes', '-o', 'jsonpath={range .items[*]}{.metadata.name} {.spec.podCIDR} {.status.conditions[?(@.type=="Ready")].status}{"\\n"}{end}');
    const lines = out.trim().split('\n').sort();
    t.match(lines, [/^n1 10\.244\.\d+\.0\/24 True$/, /^n2 10\.244\.\d+\.0\/24 True$/, /^n3 10\.244\.\d+\.0\/24 True$/]);
    t.equal(new Set(lines.map((l) => l.split(' ')[1])).size, 3, 'different pod CIDRs');
  });

  t.test(`${mode}: kubectl apply: the scheduler spreads the Pods, the endpoints follow, the ClusterIP answers from both`, async (t) => {
    const r = await runner.run(['kubectl', '--kubeconfig', kubeconfig, 'apply', '-f', '-'], { input: MANIFEST });
    t.match(r.stdout, /service\/web created\s+deployment.apps\/web created/);
    clusterIP = (await kubectl('get', 'svc', 'web', '-o', 'jsonpath={.spec.clusterIP}')).trim();
    t.match(clusterIP, /^10\.(9[6-9]|1[01]\d)\.\d+\.\d+$/, `ClusterIP ${clusterIP} from the service CIDR`);
    const names = await converged(2);
    t.equal(names.length, 2);
    t.equal(new Set(seenPods.map((p) => p.node)).size, 2, `the scheduler put them on two nodes: ${JSON.stringify(seenPods.map((p) => p.node))}`);
    t.ok(seenPods.some((p) => p.node !== 'n1'), 'an endpoint on a remote node, reached over the overlay');
    t.match((await tcp(clusterIP, 80)), new RegExp(`^web-\\S+ `), 'a Pod answers');
    await kubectl('rollout', 'status', 'deployment/web', '--timeout=30s');
  });

  t.test(`${mode}: kubectl scale changes the rules`, async (t) => {
    await kubectl('scale', 'deployment/web', '--replicas=4');
    t.equal((await converged(4)).length, 4, 'four Pods answer');
    await kubectl('scale', 'deployment/web', '--replicas=2');
    t.equal((await converged(2)).length, 2, 'back to two');
  });

  t.test(`${mode}: a deleted Pod is replaced and its endpoint follows`, async (t) => {
    const before = await converged(2);
    await kubectl('delete', 'pod', before[0]!, '--wait=false');
    await waitOr(async () => {
      await pods();
      const now = NODES.flatMap((n) => on(n));
      return now.length === 2 && !now.includes(before[0]!);
    }, 'the replacement running', 60_000);
    const after = await converged(2);
    t.equal(after.length, 2);
    t.notOk(after.includes(before[0]!), `${before[0]} is gone from the answers`);
    t.ok(after.includes(before[1]!), `${before[1]} still answers`);
  });

  crashCase(`${mode}: the control plane killed right after an acknowledged write: the agent catches up`, async (t) => {
    await kubectl('scale', 'deployment/web', '--replicas=3');
    await cp.stop('SIGKILL');
    await sleep(500);
    await cp.start();
    t.equal((await converged(3)).length, 3, 'the write survived and the rules follow it');
    await kubectl('scale', 'deployment/web', '--replicas=2');
    t.equal((await converged(2)).length, 2, 'and the watch goes on after the restart');
  });

  crashCase(`${mode}: an agent restarted under an established connection keeps it`, async (t) => {
    await converged(2);
    const conn: ChildProcess = spawn('ip', ['netns', 'exec', client.ns, 'socat', '-', `TCP4:${clusterIP}:9090`], { stdio: ['pipe', 'pipe', 'ignore'] });
    let got = '';
    conn.stdout!.on('data', (d: Buffer) => (got += d.toString()));
    t.teardown(() => void conn.kill('SIGKILL'));
    conn.stdin!.write('before\n');
    await waitFor(() => got.includes('before'), 'the echo before the restart');
    await n1.stopAgent('SIGKILL');
    await n1.startAgent();
    await converged(2, NODES, 'the restarted agent resynced');
    conn.stdin!.write('after\n');
    await waitFor(() => got.includes('after'), 'the echo after the restart on the same connection');
    t.match(got, /^web-\S+ 10\.244\.\d+\.\d+:\d+\nbefore\nafter\n$/, 'the same connection: the greeting, then both lines echoed');
    t.equal(conn.exitCode, null, 'the connection is still open');
  });

  crashCase(`${mode}: a node whose Lease stops loses its endpoints`, async (t) => {
    await kubectl('scale', 'deployment/web', '--replicas=4');
    await converged(4);
    t.ok(on('n2').length > 0, 'n2 runs Pods');
    const others = [...on('n1'), ...on('n3')].sort();
    // n2's agent dies; its Pods keep running (they outlive the agent) but nothing renews its Lease.
    await n2.stopAgent('SIGKILL');
    await waitOr(async () => (await kubectl('get', 'node', 'n2', '-o', 'jsonpath={.status.conditions[?(@.type=="Ready")].status}')).trim() === 'Unknown', 'n2 Ready=Unknown');
    await waitOr(() => JSON.stringify(applied().filter((e) => !/\(/.test(e)).sort()) === JSON.stringify(readyIPs(others)), "n2's endpoints leave n1's rules");
    const seen = await answering(16);
    t.ok(seen.every((p) => others.includes(p)), `only n1's and n3's Pods answer: ${seen.join(', ')}`);
    const events = await kubectl('get', 'events', '-A', '--field-selector', 'involvedObject.name=n2');
    t.match(events, /NodeNotReady/, 'the Event says why');
  });

  t.test(`${mode}: a Node deleted: the pod GC deletes its Pods, they are replaced on the others, its overlay entries go`, async (t) => {
    // n2's agent is down since the case before (over vxlan), stopped here otherwise: a Node that is gone for good.
    if (!all) {
      await kubectl('scale', 'deployment/web', '--replicas=4');
      await converged(4);
      t.ok(on('n2').length > 0, 'n2 runs Pods');
      await n2.stopAgent('SIGKILL');
    }
    const cidr = (await kubectl('get', 'node', 'n2', '-o', 'jsonpath={.spec.podCIDR}')).trim();
    t.match(cidr, /^10\.244\.\d+\.0\/24$/);
    t.match(await overlayRoutes(n1), new RegExp(`^${cidr.replace(/[./]/g, '\\$&')} via ${backend === 'vxlan' ? '' : n2.underlayIP.split('/')[0]!.replace(/\./g, '\\.')}`, 'm'), `n1 routes n2's pods over the overlay (${backend})`);
    await kubectl('delete', 'node', 'n2');
    const names = await converged(4, ['n1', 'n3'], "n2's Pods replaced on n1 and n3");
    t.equal(names.length, 4);
    t.notOk(seenPods.some((p) => p.node === 'n2'), 'no Pod of the API is bound to n2 any more');
    const events = await kubectl('get', 'events', '--field-selector', 'reason=PodGCOrphaned');
    t.match(events, /node n2 no longer exists/, 'the Event says why');
    await waitOr(async () => !(await overlayRoutes(n1)).includes(cidr), "n2's route gone from n1");
    if (backend === 'vxlan') t.notMatch((await n1.exec(['bridge', 'fdb', 'show', 'dev', 'nodenet.1'])).stdout, new RegExp(n2.underlayIP.split('/')[0]!.replace(/\./g, '\\.')), "and its FDB entry");
  });

  t.test(`${mode}: kubectl delete: the Service's rules go`, async (t) => {
    await kubectl('delete', 'svc', 'web');
    await waitFor(() => !(readProxyStatus(proxyStatusFile(n1.runDir))?.applied['default/web:http']), 'the rules removed');
    t.match(await tcp(clusterIP, 80), /Connection refused|timed out|No route|Network is unreachable|Connection timed out/, 'nothing answers on the old ClusterIP');
  });
}
