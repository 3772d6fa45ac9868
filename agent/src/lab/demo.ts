/**
 * lab/demo: `nodenet demo` (what `npm start` runs), the seeds' story with
 * real packets, on a 2-node lab built from network namespaces on this
 * machine. The CLI (cli/demo-cmd.ts) parses the flags and calls runDemo;
 * the story prints itself as it goes, through deps.stdout.
 *
 * The control plane (the API server with its controllers and scheduler)
 * runs in the lab's underlay namespace; each node is a namespace with its
 * own agent (CNI, the VXLAN overlay, the Service proxy, the embedded
 * kubelet). One manifest goes in through the real kubectl: a Deployment
 * of 3 replicas of `nodenet serve`, a ClusterIP and a NodePort Service.
 * Then, step by step, with real output and a line of explanation each:
 *   1. the API objects appearing in order, as `kubectl get -w` shows them;
 *   2. the Pods' IPs and nodes; requests from a Pod on node1 to the
 *      ClusterIP, answered by Pods on both nodes, with the source address
 *      the backend saw (no NAT across nodes);
 *   3. a ping to the ClusterIP that gets no answer, and the trace saying why;
 *   4. the NodePort answering from the underlay;
 *   5. a Pod deleted: the ReplicaSet replaces it, the endpoints and rules
 *      follow, the next requests avoid it;
 *   6. node1's agent stopped: an established connection keeps flowing (the
 *      proxy is not on the data path), a new Service is not programmed on
 *      node1 until the agent is back;
 *   7. the proxy's rules flushed by hand, and the agent putting them back;
 *   8. a cross-node request's whole path through `nodenet trace --lab`;
 *   9. scheduling: a Deployment whose replicas request more CPU than the
 *      two nodes have, one replica Pending and `kubectl describe pod` saying
 *      why; a third node added (configured as the others; the control plane
 *      made its token at the start) and the Pending Pod scheduled onto it.
 * Everything is removed on exit, also on Ctrl-C (and when the reader of
 * stdout goes away). The demo drives the lab as a user would, through
 * kubectl (its runner; `kubectl get -w` as child processes); it finds the
 * client Pod's namespace in node1's kubelet records; `--proxy-mode ipvs`
 * without IPVS is refused before anything is made.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';
import { parseIPv4 } from '../../../lib/net/ip.js';
import { DEFAULTS } from '../config/config.js';
import type { Runner } from '../exec/runner.js';
import { requireIpvs, type IpvsProbeDeps } from '../netfilter/ipvs/ipvs-probe.js';
import { formatClusterTrace, traceCluster, type ClusterTraceDeps } from '../trace/cluster.js';
import type { NftTracePacket } from '../trace/nft-tracer.js';
import { AGENT_JS, type Lab, type VNode } from './lab.js';
import { labNodes } from './nodes.js';
import { CLUSTER_CIDR } from './plan.js';
import type { LabProxyMode } from './up-plan.js';

/**
 * The demo's waits stretch by NODENET_TEST_TIME_SCALE, as the lab's do: inside an emulated VM (test-vm's
 * demo-ipvs suite, qemu TCG) every step is many times slower. 1 everywhere else.
 */
const SLOW = Number(process.env['NODENET_TEST_TIME_SCALE']) || 1;

export interface DemoOptions {
  readonly mode: LabProxyMode;
  /** Leave the cluster running until a signal, with a KUBECONFIG for kubectl. */
  readonly keep: boolean;
}

export interface DemoDeps {
  readonly runner: Runner;
  readonly createLab: (prefix: string) => Promise<Lab>;
  /** A node's links, addresses, routes and VXLAN entries, for the traces across the nodes (compose reads them over netlink). */
  readonly readNetwork: ClusterTraceDeps['readNetwork'];
  /** The story, as it goes. */
  readonly stdout: (s: string) => void;
  /** How --proxy-mode ipvs looks for IPVS (default: the real /proc/net/ip_vs); a seam for tests. */
  readonly ipvsExists?: IpvsProbeDeps['exists'];
}

/** The demo's one manifest: what a user would write for a real cluster, but for processes on the node's filesystem. */
export function demoManifest(): string {
  const serve = [process.execPath, AGENT_JS, 'serve', '--http', '8080', '--tcp', '9000'];
  return `apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: default}
spec:
  replicas: 3
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      terminationGracePeriodSeconds: 2
      containers:
      - name: serve
        image: nodenet/host
        command: ${JSON.stringify(serve)}
        env: [{name: POD_NAME, valueFrom: {fieldRef: {fieldPath: metadata.name}}}]
        ports: [{name: http, containerPort: 8080}, {name: echo, containerPort: 9000}]
        readinessProbe: {httpGet: {path: /readyz, port: 8080}, periodSeconds: 1}
---
apiVersion: v1
kind: Service
metadata: {name: web, namespace: default}
spec:
  selector: {app: web}
  ports: [{name: echo, port: 9000, targetPort: echo}, {name: http, port: 80, targetPort: http}]
---
apiVersion: v1
kind: Service
metadata: {name: web-nodeport, namespace: default}
spec:
  type: NodePort
  selector: {app: web}
  ports: [{name: http, port: 80, targetPort: http, nodePort: 30080}]
---
apiVersion: v1
kind: Pod
metadata: {name: client, namespace: default}
spec:
  nodeSelector: {kubernetes.io/hostname: node1}
  terminationGracePeriodSeconds: 0
  containers:
  - {name: sleep, image: nodenet/host, command: [sleep, infinity]}
`;
}

/**
 * Step 9's Deployment: 3 replicas that each request 1.2 CPUs, on nodes that each have 2 allocatable (the lab's
 * share, LAB_NODE_CAPACITY): one fits per node, so on 2 nodes the third stays Pending until a third node joins.
 */
export const BIG_CPU_REQUEST = '1200m';
export function bigManifest(): string {
  return `apiVersion: apps/v1
kind: Deployment
metadata: {name: big, namespace: default}
spec:
  replicas: 3
  selector: {matchLabels: {app: big}}
  template:
    metadata: {labels: {app: big}}
    spec:
      terminationGracePeriodSeconds: 0
      containers:
      - name: work
        image: nodenet/host
        command: [sleep, infinity]
        resources: {requests: {cpu: ${BIG_CPU_REQUEST}}}
`;
}

/**
 * The lines of `kubectl describe pod` that say why a Pod is Pending: its name, status and node, its requests,
 * the PodScheduled condition, and the Events (abridged as the demo prints real output).
 */
export function describePending(describe: string): string {
  const lines = describe.split('\n');
  const ev = lines.findIndex((l) => /^Events:/.test(l));
  const head = lines.slice(0, ev < 0 ? lines.length : ev).filter((l) => /^(Name|Node|Status):|^ {4}Requests:|^ {6}cpu:|^ {2}PodScheduled /.test(l));
  return [...head, ...(ev < 0 ? [] : lines.slice(ev).filter((l) => l.trim() !== ''))].map((l) => l.trimEnd()).join('\n');
}

const LATE = `apiVersion: v1
kind: Service
metadata: {name: late, namespace: default}
spec:
  selector: {app: web}
  ports: [{name: echo, port: 9000, targetPort: echo}]
`;

interface PodRow {
  readonly name: string;
  readonly node: string;
  readonly ip: string;
  readonly ready: boolean;
  readonly deleting: boolean;
}

/** The whole story; 0 at its end (with keep: never, the cluster runs until a signal). @throws NodenetError NotAvailable for ipvs without IPVS, before anything is made */
export async function runDemo(o: DemoOptions, deps: DemoDeps): Promise<number> {
  const { mode } = o;
  const say = (s = '') => deps.stdout(`${s}\n`);
  // Without IPVS both agents would refuse to start: say so before a namespace is made.
  if (mode === 'ipvs') await requireIpvs('demo --proxy-mode ipvs', { runner: deps.runner, ...(deps.ipvsExists ? { exists: deps.ipvsExists } : {}) });
  const lab = await deps.createLab('demo');
  const watchers: ChildProcess[] = [];
  // One cleanup, whoever asks first (the end of the demo, a signal, a reader gone): the others wait for it.
  let cleaning: Promise<void> | null = null;
  const cleanup = (): Promise<void> => {
    cleaning ??= (async () => {
      for (const w of watchers) w.kill('SIGKILL');
      try {
        say('\ncleaning up: pods, agents, control plane, namespaces');
      } catch {
        // stdout is gone
      }
      const left = await lab.destroy();
      // What teardown could not remove (a Pod's cgroup, a mount): said, so it is not left silently.
      try { for (const l of left) say(`left behind: ${l}`); } catch { /* stdout gone */ }
    })();
    return cleaning;
  };
  const onSignal = () => {
    void cleanup().then(() => process.exit(130));
  };
  process.once('SIGINT', onSignal);
  process.once('SIGTERM', onSignal);
  // A reader that goes away (`npm start | head`) must not leave the lab behind: EPIPE cleans up and exits.
  const onPipe = (e: NodeJS.ErrnoException) => {
    if (e.code === 'EPIPE') void cleanup().catch(() => undefined).then(() => process.exit(141));
  };
  process.stdout.on('error', onPipe);
  const step = (n: number, title: string) => say(`\n== ${n}. ${title}`);
  const explain = (s: string) => say(`   ${s}`);
  const indent = (s: string) => s.trimEnd().split('\n').map((l) => `   | ${l}`).join('\n');
  try {
    say(`nodenet demo: a 2-node cluster on this machine (${mode} mode)`);
    // node3 joins at step 9: its token is made now, with the others' (a running control plane makes none).
    const cp = await lab.startControlPlane({ nodes: ['node1', 'node2', 'node3'], args: ['--log-level', 'warn'] });
    const { kubeconfig } = await cp.localAccess();
    // Every node the same, the one step 9 adds too.
    const nodeOptions = {
      clusterCIDR: CLUSTER_CIDR,
      config: { overlay: 'vxlan', runPods: true, proxyMode: mode, proxyMinSyncMs: 100, proxySyncPeriodMs: 2000, logLevel: 'info' },
    };
    const nodes: VNode[] = [];
    for (const name of ['node1', 'node2']) nodes.push(await lab.addNode(name, nodeOptions));
    await Promise.all(nodes.map((n) => n.startAgent()));
    const node1 = nodes[0]!;
    const kubectl = async (args: readonly string[], input?: string, allowFailure = false) =>
      (await deps.runner.run(['kubectl', '--kubeconfig', kubeconfig, ...args], { allowFailure, ...(input === undefined ? {} : { input }) }));
    say(`control plane: ${cp.url} (in the underlay namespace ${lab.ul}); kubectl reaches it on loopback`);
    for (const n of nodes) say(`${n.name}: namespace ${n.ns}, underlay ${n.underlayIP}, agent pid ${n.agent?.pid}`);
    say(indent((await kubectl(['get', 'nodes', '-o', 'wide'])).stdout));
    explain('each agent registered its Node and renews its Lease; node IPAM gave each a pod CIDR;');
    explain('the overlay published its VTEP on the Node (flannel\'s annotations) and every agent wrote routes to the other\'s pods.');

    // ---- 1. the manifest through the API ----
    step(1, 'kubectl apply: a Deployment of 3 `nodenet serve` pods, a ClusterIP and a NodePort Service');
    const events: string[] = [];
    const last = new Map<string, string>();
    const t0 = Date.now();
    for (const kind of ['deployments', 'replicasets', 'pods', 'endpointslices']) {
      const w = spawn('kubectl', ['--kubeconfig', kubeconfig, 'get', kind, '--watch-only', '--output-watch-events', '--no-headers', '-o', 'wide'], { stdio: ['ignore', 'pipe', 'ignore'] });
      watchers.push(w);
      let buf = '';
      w.stdout!.on('data', (d: Buffer) => {
        buf += d.toString();
        for (let i = buf.indexOf('\n'); i >= 0; i = buf.indexOf('\n')) {
          const line = buf.slice(0, i).replace(/\s+/g, ' ').trim();
          buf = buf.slice(i + 1);
          // A row that only aged (or changed what the table does not show) is left out, as it tells nothing.
          const key = line.split(' ').filter((c) => !/^(\d+m)?\d+s$|^\d+m$/.test(c)).join(' ').replace(/^(ADDED|MODIFIED) /, '');
          const obj = `${kind}/${line.split(' ')[1]}`;
          if (line && last.get(obj) !== key) {
            last.set(obj, key);
            events.push(`${((Date.now() - t0) / 1000).toFixed(1).padStart(5)}s ${kind.replace(/s$/, '').padEnd(13)} ${line}`);
          }
        }
      });
    }
    await sleep(500); // the watches are open before the objects exist
    say(indent((await kubectl(['apply', '-f', '-'], demoManifest())).stdout));
    const pods = async (): Promise<PodRow[]> => {
      const o = JSON.parse((await kubectl(['get', 'pods', '-l', 'app=web', '-o', 'json'])).stdout) as { items: { metadata: { name: string; deletionTimestamp?: string }; spec: { nodeName?: string }; status: { podIP?: string; conditions?: { type: string; status: string }[] } }[] };
      return o.items.map((i) => ({
        name: i.metadata.name, node: i.spec.nodeName ?? '', ip: i.status.podIP ?? '', deleting: !!i.metadata.deletionTimestamp,
        ready: i.status.conditions?.some((c) => c.type === 'Ready' && c.status === 'True') ?? false,
      }));
    };
    const sliceIPs = async (svc: string): Promise<string[]> => {
      const r = await kubectl(['get', 'endpointslices', '-l', `kubernetes.io/service-name=${svc}`, '-o', 'jsonpath={range .items[*].endpoints[?(@.conditions.ready==true)]}{.addresses[0]}{"\\n"}{end}']);
      return r.stdout.split('\n').filter(Boolean).sort();
    };
    const until = async <T>(what: string, f: () => Promise<T | null | false>, ms = 60_000): Promise<T> => {
      const end = Date.now() + ms * SLOW;
      for (;;) {
        const v = await f().catch(() => null);
        if (v) return v;
        if (Date.now() > end) throw new Error(`demo: timed out waiting for ${what}`);
        await sleep(200);
      }
    };
    let web = await until('3 ready web pods and their endpoints', async () => {
      const ps = (await pods()).filter((x) => !x.deleting);
      if (ps.length !== 3 || !ps.every((x) => x.ready)) return null;
      return (await sliceIPs('web')).length === 3 ? ps : null;
    });
    await sleep(300);
    say(indent(events.join('\n')));
    explain('what `kubectl get -w` shows, in the order it happened: the Deployment controller made a ReplicaSet, the');
    explain('ReplicaSet controller made 3 Pods, the scheduler bound each to a node, each node\'s kubelet started it');
    explain('(pause holder, CNI ADD, the process) and reported its IP; the EndpointSlice controller published the ready ones.');
    explain('Nothing talked to anything else: every component watched the API server and acted on what it saw.');

    // ---- 2. pods, IPs, requests across nodes ----
    step(2, 'the Pods, their IPs and nodes; requests from a Pod on node1 to the ClusterIP');
    say(indent((await kubectl(['get', 'pods', '-o', 'wide'])).stdout));
    const clusterIP = (await kubectl(['get', 'svc', 'web', '-o', 'jsonpath={.spec.clusterIP}'])).stdout.trim();
    const client = await until('the client pod', async () => {
      const o = JSON.parse((await kubectl(['get', 'pod', 'client', '-o', 'json'])).stdout) as { status: { podIP?: string; phase?: string } };
      return o.status.phase === 'Running' && o.status.podIP ? o.status.podIP : null;
    });
    const clientNetns = podNetns(node1, 'default', 'client');
    const inClient = (argv: readonly string[], allowFailure = true) => deps.runner.run(['nsenter', `--net=${clientNetns}`, '--', ...argv], { allowFailure });
    const who = async (ip: string, port: number, connectTimeoutS = 3) =>
      (await inClient(['socat', '-t1', '-T3', '-', `TCP4:${ip}:${port},connect-timeout=${connectTimeoutS}`])).stdout.trim();
    const nodeOf = (name: string) => web.find((x) => x.name === name)?.node ?? '?';
    const ask = async (n: number, label: string) => {
      const seen = new Map<string, number>();
      for (let i = 0; i < n; i++) {
        const a = await who(clusterIP, 9000);
        const [name = '(no answer)', from = ''] = a.split(' ');
        seen.set(name, (seen.get(name) ?? 0) + 1);
        say(`   client (${client}, node1) → ${clusterIP}:9000  answered by ${name.padEnd(22)} on ${nodeOf(name).padEnd(5)}  it saw the client as ${from}`);
      }
      explain(`${label}: ${[...seen].map(([w, c]) => `${w} ×${c}`).join(', ')}`);
      return seen;
    };
    await ask(8, 'new connections spread over the endpoints at random');
    explain(`the backend saw ${client}, the client's own pod IP: pod-to-pod traffic is not NATed, across nodes too`);
    explain('(node1 DNATs to the chosen pod; a pod on node2 is reached over the VXLAN device, encapsulated to node2\'s underlay IP).');

    // ---- 3. ping ----
    step(3, `ping ${clusterIP}: a ClusterIP takes connections but is not a host`);
    const ping = await inClient(['ping', '-n', '-c', '1', '-W', '2', clusterIP]);
    say(indent(ping.stdout.split('\n').filter((l) => /packets|Unreachable/.test(l)).join('\n')));
    if (mode !== 'ipvs') {
      explain(mode === 'iptables'
        ? 'no reply: the Service rules DNAT TCP and UDP to a port, ICMP matches none, and no interface owns the address.'
        : 'refused at once: nftables mode rejects what no Service port claims (kube-proxy\'s behaviour); no interface owns the address.');
    } else {
      explain('refused at once: in IPVS mode the ClusterIP is an address of node1 (kube-ipvs0 holds every VIP), so the ping');
      explain('goes to node1 itself, and KUBE-IPVS-FILTER rejects what no virtual server takes (kube-proxy\'s behaviour;');
      explain('with ipvsFilter off, node1 would answer the ping itself).');
      for (const argv of [['ip', '-4', '-br', 'addr', 'show', 'dev', 'kube-ipvs0'], ['ipvsadm', '-Ln', '-t', `${clusterIP}:9000`]]) {
        say(`   ip netns exec ${node1.ns} ${argv.join(' ')}`);
        const r = await node1.exec(argv, true);
        say(indent(r.exitCode === 0 ? r.stdout : `(exit ${r.exitCode}) ${r.stderr}`));
      }
      explain('the virtual server for TCP 9000 with one NAT (Masq) real server per ready pod; none takes ICMP.');
    }
    const trace = (packet: NftTracePacket) => traceLab(lab, packet, deps);
    say(`   nodenet trace --lab ${lab.tag} ${client} icmp ${clusterIP}`);
    say(indent(await trace({ sourceIP: client, protocol: 'ICMP', destIP: clusterIP })));

    // ---- 4. NodePort ----
    step(4, 'the NodePort, from a host on the underlay (outside the cluster)');
    const ext = await lab.addUnderlayHost('ext', '192.168.77.200/24');
    for (const n of nodes) {
      const ip = n.underlayIP.split('/')[0]!;
      const r = await deps.runner.run(['ip', 'netns', 'exec', ext.name, 'socat', '-t2', '-T3', '-', `TCP4:${ip}:30080,connect-timeout=3`], { input: 'GET /hostname HTTP/1.0\r\n\r\n', allowFailure: true });
      say(`   192.168.77.200 → ${ip}:30080  ${r.stdout.trim().split('\n').pop() ?? '(no answer)'}`);
    }
    explain('every node answers on the NodePort, whichever node the pod runs on (externalTrafficPolicy Cluster: masqueraded).');

    // ---- 5. self-healing ----
    step(5, 'a Pod deleted: the ReplicaSet replaces it; the endpoints and the rules follow');
    const victim = web.find((x) => x.node === 'node2') ?? web[0]!;
    say(`   kubectl delete pod ${victim.name}  (on ${victim.node}, ${victim.ip})`);
    await kubectl(['delete', 'pod', victim.name, '--wait=false']);
    web = await until('the replacement pod', async () => {
      const ps = (await pods()).filter((x) => !x.deleting && x.name !== victim.name);
      if (ps.length !== 3 || !ps.every((x) => x.ready)) return null;
      const ips = await sliceIPs('web');
      return ips.length === 3 && !ips.includes(victim.ip) ? ps : null;
    });
    say(indent((await kubectl(['get', 'pods', '-l', 'app=web', '-o', 'wide'])).stdout));
    explain(`endpoints now: ${(await sliceIPs('web')).join(', ')} (${victim.ip} gone)`);
    await sleep(500);
    const after = await ask(6, 'the next connections');
    explain(after.has(victim.name) ? `(unexpected: ${victim.name} still answered)` : `${victim.name} is no longer chosen: the agents rewrote their rules from the new EndpointSlice`);

    // ---- 6. the agent is not on the data path ----
    step(6, 'node1\'s agent stopped: established connections keep flowing');
    const session = spawn('nsenter', [`--net=${clientNetns}`, '--', 'socat', '-', `TCP4:${clusterIP}:9000`], { stdio: ['pipe', 'pipe', 'ignore'] });
    watchers.push(session);
    let got = '';
    session.stdout!.on('data', (d: Buffer) => (got += d.toString()));
    const echo = async (msg: string) => {
      const mark = got.length;
      session.stdin!.write(`${msg}\n`);
      const end = Date.now() + 3000 * SLOW;
      while (!got.slice(mark).includes(msg) && Date.now() < end) await sleep(50);
      return got.slice(mark).includes(msg);
    };
    await until('the session greeting', async () => got.includes('\n'), 5000);
    say(`   a TCP session from the client through ${clusterIP}:9000: ${got.trim()}`);
    say(`   echo before: ${(await echo('hello')) ? 'answered' : 'no answer'}`);
    await node1.stopAgent('SIGTERM');
    say('   node1\'s agent stopped (SIGTERM)');
    say(`   echo while it is down: ${(await echo('still there?')) ? 'answered' : 'no answer'}`);
    explain(mode === 'ipvs'
      ? 'the kernel carries the connection (IPVS\'s connection table remembers its real server); the agent only writes rules.'
      : 'the kernel carries the connection (conntrack remembers its DNAT); the agent only writes rules.');
    await kubectl(['apply', '-f', '-'], LATE);
    const lateIP = await until('the late Service', async () => (await kubectl(['get', 'svc', 'late', '-o', 'jsonpath={.spec.clusterIP}'])).stdout.trim() || null);
    await sleep(1500 * SLOW);
    const lateDown = await who(lateIP, 9000);
    say(`   a new Service "late" (${lateIP}) from node1 while its agent is down: ${lateDown ? lateDown : 'no answer (no rules for it on node1)'}`);
    await node1.startAgent();
    const lateUp = await until('late programmed on node1', async () => (await who(lateIP, 9000)) || null, 20_000);
    say(`   node1's agent started again; late answers: ${lateUp}`);
    say(`   the old session after the restart: ${(await echo('and now?')) ? 'answered' : 'no answer'}`);
    session.stdin!.end();

    // ---- 7. reconciliation ----
    step(7, 'the proxy\'s rules removed by hand on node1; the agent puts them back');
    // IPVS mode: the virtual servers (the agent checks one it wrote, besides its chains and kube-ipvs0).
    // iptables: the whole nat table replaced by an empty one in one commit. `-F` then `-X` are two commits, and
    // the agent's canary check between them can put a rule back that the -X then trips on (chain busy).
    // The agent is paused (SIGSTOP) for the moment of the removal, its count and one request: any sync in
    // between (the period's canary check, or an event's partial sync falling back to a full one) would put the
    // rules back within milliseconds (CI saw the table back before a count in the same shell), and the point
    // is to see the broken state, then the agent repair it. It resumes right after.
    const flush = mode === 'iptables' ? "printf '*nat\\nCOMMIT\\n' | iptables-restore -w"
      : mode === 'nftables' ? "for t in $(nft list tables ip | awk '$3 ~ /^kube-proxy(-[0-9]+)?$/ { print $3 }'); do nft delete table ip $t; done" : 'ipvsadm -C';
    const left = mode === 'iptables' ? "iptables-save -t nat | grep -c '^-A KUBE-'"
      : mode === 'nftables' ? "nft list tables ip | grep -cE ' kube-proxy(-[0-9]+)?$'" : "ipvsadm -Ln | grep -cE '^(TCP|UDP|SCTP) '";
    const what = mode === 'iptables' ? 'KUBE- rules in the nat table' : mode === 'nftables' ? 'kube-proxy tables' : 'virtual servers';
    const agentPid = node1.agentPid;
    if (agentPid === null) throw new Error('node1\'s agent is not running');
    say(`   node1's agent paused (SIGSTOP), so that the broken state can be seen before it repairs it`);
    process.kill(agentPid, 'SIGSTOP');
    let resumed: number;
    try {
      say(`   ip netns exec ${node1.ns} ${flush}`);
      const counted = await node1.exec(['sh', '-c', `${flush} && ${left}`], true);
      if (counted.stdout.trim() === '' || !/^\d+$/.test(counted.stdout.trim())) throw new Error(`removing the rules on node1 failed: ${counted.stderr}${counted.stdout}`);
      say(`   right after: ${counted.stdout.trim()} ${what} left`);
      // One SYN's worth of waiting: the kernel retransmits a SYN after 1 s.
      const broken = await who(clusterIP, 9000, 0.5);
      say(`   a request right after: ${broken ? `answered by ${broken.split(' ')[0]}` : 'no answer (the rules are gone)'}`);
    } finally {
      process.kill(agentPid, 'SIGCONT');
      resumed = Date.now();
    }
    say('   node1\'s agent resumed (SIGCONT)');
    const back = await until('the rules rewritten', async () => (await who(clusterIP, 9000)) || null, 20_000);
    say(`   ${((Date.now() - resumed) / 1000).toFixed(1)} s later: ${back}`);
    if (mode === 'ipvs') {
      explain('the agent\'s sync loop checks its canary chains, kube-ipvs0 and one of its virtual servers every sync period (2 s here,');
      explain('kube-proxy\'s default 30 s); the table was empty, so the agent rewrote it from the Services it watches: watch, compare, act.');
    } else {
      explain('the agent\'s sync loop checks its canary chain every sync period (2 s here, kube-proxy\'s default 30 s);');
      explain('it was gone, so the agent rewrote every rule from the Services it watches: watch, compare, act.');
    }

    // ---- 8. a cross-node path ----
    step(8, 'a request\'s whole path across the nodes: nodenet trace --lab');
    say(`   nodenet trace --lab ${lab.tag} ${client} tcp ${clusterIP} 9000`);
    say(indent(await trace({ sourceIP: parseIPv4(client), protocol: 'TCP', destIP: parseIPv4(clusterIP), destPort: 9000 })));
    explain('the Service rules on node1 pick an endpoint; a local one is bridged on cbr0, a remote one goes out nodenet.1');
    explain('(VXLAN: neighbour entry → VTEP MAC → FDB entry → node2\'s underlay IP) and node2 bridges it to the pod.');

    // ---- 9. scheduling ----
    step(9, 'scheduling: a Deployment that does not fit; a node added');
    say(`   kubectl apply: a Deployment "big" of 3 replicas, each requesting cpu ${BIG_CPU_REQUEST} (the nodes have 2 each)`);
    await kubectl(['apply', '-f', '-'], bigManifest());
    type BigPod = { metadata: { name: string }; spec: { nodeName?: string }; status: { phase?: string; conditions?: { type: string; status: string; reason?: string }[] } };
    const bigPods = async () => (JSON.parse((await kubectl(['get', 'pods', '-l', 'app=big', '-o', 'json'])).stdout) as { items: BigPod[] }).items;
    const unschedulable = (p: BigPod) => p.status.conditions?.some((c) => c.type === 'PodScheduled' && c.status === 'False' && c.reason === 'Unschedulable') ?? false;
    const pending = await until('2 big pods running and 1 unschedulable, with its event', async () => {
      const ps = await bigPods();
      const stuck = ps.filter(unschedulable);
      if (ps.length !== 3 || stuck.length !== 1 || ps.filter((p) => p.status.phase === 'Running').length !== 2) return null;
      const d = await kubectl(['describe', 'pod', stuck[0]!.metadata.name]);
      return d.stdout.includes('FailedScheduling') ? { name: stuck[0]!.metadata.name, describe: d.stdout } : null;
    });
    say(indent((await kubectl(['get', 'pods', '-l', 'app=big', '-o', 'wide'])).stdout));
    say(`   kubectl describe pod ${pending.name}`);
    say(indent(describePending(pending.describe)));
    explain('the scheduler counts requests, not use: each node has 2 CPUs allocatable, one replica leaves 0.8, so the third fits nowhere.');
    const node3 = await lab.addNode('node3', nodeOptions);
    await node3.startAgent();
    say(`   node3 added, configured as the others: namespace ${node3.ns}, underlay ${node3.underlayIP}, agent pid ${node3.agent?.pid}`);
    await until(`${pending.name} running on node3`, async () => {
      const p = (await bigPods()).find((x) => x.metadata.name === pending.name);
      return p?.spec.nodeName === 'node3' && p.status.phase === 'Running';
    });
    say(indent((await kubectl(['get', 'pods', '-l', 'app=big', '-o', 'wide'])).stdout));
    explain('node3 registered and became Ready; a Node added is one of the changes that make the scheduler try Pending Pods again.');

    if (o.keep) {
      say(`\nkept running. Try:\n  export KUBECONFIG=${kubeconfig}\n  kubectl get nodes,pods,svc,endpointslices -o wide\n  ip netns exec ${node1.ns} ${mode === 'iptables' ? 'iptables-save -t nat' : mode === 'nftables' ? 'nft list ruleset ip' : `ipvsadm -Ln -t ${clusterIP}:9000`}\n  ip netns exec ${node1.ns} bridge fdb show dev nodenet.1\n  node bin/nodenet.js trace --lab ${lab.tag} ${client} tcp ${clusterIP} 9000\nCtrl-C to clean up.`);
      await new Promise(() => undefined);
    }
    say('\ndone: every object went through the API server, every component watched it, and no packet passed through nodenet.');
    return 0;
  } finally {
    await cleanup();
  }
}

/**
 * `nodenet trace --lab` of one packet, as text: across the lab's nodes, the rules' mode found on each node,
 * the default prefix. A trace that cannot be made is said in the text, as the command says it, and the story goes on.
 */
async function traceLab(lab: Lab, packet: NftTracePacket, deps: DemoDeps): Promise<string> {
  try {
    const nodes = labNodes(lab.runRoot);
    if (nodes.length === 0) throw new Error(`lab ${lab.tag} has no nodes`);
    const rep = await traceCluster({ runner: deps.runner, readNetwork: deps.readNetwork }, nodes, {
      packet, mode: 'auto', prefix: DEFAULTS.proxyPrefix, clusterCIDR: nodes.find((n) => n.clusterCIDR)?.clusterCIDR ?? null,
    });
    return formatClusterTrace(rep);
  } catch (e) {
    return `nodenet trace: ${e instanceof Error ? e.message : String(e)}\n`;
  }
}

/** The network namespace of a Pod the node's kubelet runs (its record under <runDir>/kubelet/). @throws Error when no record has one */
export function podNetns(node: Pick<VNode, 'name' | 'runDir'>, namespace: string, name: string): string {
  const dir = `${node.runDir}/kubelet`;
  for (const f of readdirSync(dir).filter((x) => x.endsWith('.json'))) {
    const r = JSON.parse(readFileSync(`${dir}/${f}`, 'utf8')) as { namespace?: string; name?: string; sandbox?: { netns?: string } | null };
    if (r.namespace === namespace && r.name === name && r.sandbox?.netns) return r.sandbox.netns;
  }
  throw new Error(`demo: no kubelet record of ${namespace}/${name} on ${node.name}`);
}
