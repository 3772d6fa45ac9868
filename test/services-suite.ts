/**
 * Services end to end, one suite run per proxy mode and per source of the
 * cluster state, with real packets; backends serving TCP and UDP with socat
 * (each answers its name and the peer address it saw); a client pod; hosts
 * on the underlay. Every case sends real packets and checks what arrived
 * where.
 *
 * Two sources of the same Services and EndpointSlices:
 * - 'manifests' (services-<mode>.priv.test.ts): one virtual node whose agent
 *   follows a manifest directory (files put and removed), every pod on it;
 *   the source for machines without an API server.
 * - 'api' (services-api-<mode>.priv.test.ts): `nodenet control-plane` and
 *   three nodes whose agents watch it and join the VXLAN overlay; the client
 *   on n1, pod1 on n2, pod2 on n3, so every endpoint is on a remote node and
 *   the traffic crosses the overlay. The cases' objects go through the API
 *   with the real kubectl (`apply -f -`, `delete -f -`, the status
 *   subresource for the load balancer's status), as a user writes
 *   selectorless Services and their EndpointSlices. The API server validates
 *   and allocates: the fixed ClusterIPs are requested inside its service CIDR
 *   (10.96.0.0/12), the NodePorts inside its range, and the invalid objects
 *   are refused by it with a Status.
 * - 'api-ha' (services-api-ha.priv.test.ts): the same on the seeds' HA
 *   control plane: 3 etcd members, 2 API servers behind HAProxy, the agents
 *   balancing over both (lab/ha.ts).
 * The cases are the same; where a case depends on which node is "local"
 * (externalTrafficPolicy Local, health check node ports), it asks each node
 * what its own endpoints make it answer.
 *
 * LoadBalancer VIPs come from 203.0.113.0/24: the underlay hosts route that
 * range to n1, as a load balancer in front of the cluster would deliver
 * traffic with the destination unchanged (routes inside the lab's own
 * namespaces only). Through the API these Services carry a
 * loadBalancerClass of that load balancer (the suite), which writes their
 * status; the control plane's own load-balancer controller leaves them alone.
 */
import { timeScale, waitFor } from '../agent/src/testing/wait.js';
import t from 'tap';
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdirSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';
import { AGENT_JS, type Lab, type LabControlPlane, type VNode } from '../agent/src/lab/lab.js';
import { newLab, shOk, NO_DNS } from '../agent/src/testing/lab.js';
import { makeEndpointSlice, makeService, withField, type EndpointSpec, type JsonObject } from '../agent/src/testing/addresses.js';
import { proxyStatusFile, readProxyStatus, type ProxyStatus } from '../agent/src/node/proxy-status.js';
import { DEFAULT_SERVICE_CIDR } from '../controlplane/alloc/service-allocator.js';
import { MANAGED_BY } from '../controlplane/controllers/endpointslice.js';
import { stringify as stringifyYaml } from 'yaml';

export type Mode = 'iptables' | 'nftables' | 'ipvs';
/**
 * Timeouts (never the pass conditions) stretch by NODENET_TEST_TIME_SCALE: inside an emulated VM
 * (test-vm/, qemu TCG) everything takes several times longer.
 */
const SCALE = timeScale();
/** Where the agents read the Services and EndpointSlices the cases write. */
export type Source = 'manifests' | 'api' | 'api-ha';
interface Pod {
  name: string;
  ns: string;
  ip: string;
  /** The node whose CNI made it (its endpoints' nodeName). */
  node: VNode;
}

const EXT_IP = '192.168.77.200';
/** A second client on the underlay, outside the source ranges the firewall case allows. */
const EXT2_IP = '192.168.77.201';
/** n1's underlay address: the underlay hosts' NodePort target and LoadBalancer next hop. */
const NODE_IP = '192.168.77.11';
const LB_RANGE = '203.0.113.0/24';
/** An address in the service CIDR no Service has; the underlay gateway holds it, so a packet routed on gets an answer. */
const UNALLOCATED = '10.96.0.99';
const CLUSTER_CIDR = '10.244.0.0/16';
/** Through the API: the load balancer in front of the lab is the suite itself (it routes the VIPs and writes the status). */
const LB_CLASS = 'example.com/lab-underlay-lb';
/** Through the API: who writes the EndpointSlices of the suite's selectorless Services. */
const SLICE_MANAGER = 'services-suite.nodenet.io';

const ipOf = (n: VNode): string => n.underlayIP.split('/')[0]!;
const esc = (s: string): string => s.replace(/\./g, '\\.');

/**
 * An object as a user sends it to the API: without the stored fields (uid, resourceVersion) and the
 * status (written through the status subresource, by whoever owns it); a Service without a selector,
 * so that its endpoints are the slices written next to it (the EndpointSlice controller would manage
 * slices of a selector's Pods); a slice labelled as written by the suite, not the controller.
 */
function apiForm(o: JsonObject): { object: JsonObject; status: JsonObject | null } {
  const c = structuredClone(o);
  const meta = c['metadata'] as JsonObject;
  delete meta['uid'];
  delete meta['resourceVersion'];
  const status = (c['status'] ?? null) as JsonObject | null;
  delete c['status'];
  if (c['kind'] === 'Service') {
    const spec = c['spec'] as JsonObject;
    delete spec['selector'];
    if (spec['type'] === 'LoadBalancer') spec['loadBalancerClass'] = LB_CLASS;
  } else if (c['kind'] === 'EndpointSlice') {
    (meta['labels'] as JsonObject)[MANAGED_BY] = SLICE_MANAGER;
  }
  return { object: c, status };
}

export function servicesSuite(mode: Mode, source: Source = 'manifests'): void {
  const api = source !== 'manifests';
  let lab: Lab;
  let cp: LabControlPlane | null = null;
  /** Every node; n1 holds the client, its address is NODE_IP and its status file is the one read. */
  let nodes: VNode[] = [];
  let n1: VNode;
  let manifests: string;
  let p1: Pod, p2: Pod, client: Pod;
  let ext: { name: string };
  let ext2: { name: string };
  const holders: ChildProcess[] = [];
  /** Through the API: the objects each put() wrote, for remove(). */
  const units = new Map<string, JsonObject[]>();

  /** Pod namespace + CNI ADD through the shim on its node, as a runtime does (the overlay masquerades on API nodes). */
  async function pod(name: string, node: VNode): Promise<Pod> {
    const ns = await lab.addNetns(name);
    const r = await node.cni('ADD', { containerId: `ctr-${name}`, netns: ns.path, ifName: 'eth0' }, node.cniConfig(api ? { ipMasq: false } : {}));
    if (r.exitCode !== 0) throw new Error(`CNI ADD ${name}: ${r.stdout}${r.stderr}`);
    const ip = (r.json as { ips: { address: string }[] }).ips[0]!.address.split('/')[0]!;
    return { name, ns: ns.name, ip, node };
  }

  function serve(p: Pod): void {
    // Each answers "<pod> <peer address it saw>", so the tests see both the endpoint chosen and the source IP.
    // -t10: a client that closes its side at once (stdin empty) must not end the answer before its shell has
    // run (socat's default 0.5 s is not enough on a loaded machine, an emulated VM above all).
    spawn('ip', ['netns', 'exec', p.ns, 'socat', '-t10', 'TCP4-LISTEN:8080,reuseaddr,fork', `SYSTEM:echo ${p.name} $SOCAT_PEERADDR`], { stdio: 'ignore', detached: true }).unref();
    // UDP: one socket answering every datagram from the port it arrived on (socat's RECVFROM,fork children
    // sometimes left a datagram unanswered).
    const udpServer = `const s = require('node:dgram').createSocket('udp4'); s.on('message', (m, r) => s.send('${p.name} ' + r.address + '\\n', r.port, r.address)); s.bind(5353);`;
    spawn('ip', ['netns', 'exec', p.ns, process.execPath, '-e', udpServer], { stdio: 'ignore', detached: true }).unref();
    // A plain echo server for the long-lived connection test.
    spawn('ip', ['netns', 'exec', p.ns, 'socat', 'TCP4-LISTEN:9090,reuseaddr,fork', 'EXEC:cat'], { stdio: 'ignore', detached: true }).unref();
  }

  /** One TCP request: the first line the server sent, or the error socat printed; and how long it took. */
  async function tcp(ns: string, ip: string, port: number): Promise<{ out: string; ms: number }> {
    const t0 = performance.now();
    // -T: how long an established connection may stay silent (the server forks a shell to answer: slow in an emulated VM).
    // -t: how long the answer may take once our side is closed (stdin is empty).
    const r = await shOk(['ip', 'netns', 'exec', ns, 'socat', `-t${2 * SCALE}`, `-T${3 * SCALE}`, '-', `TCP4:${ip}:${port},connect-timeout=3`]);
    const ms = performance.now() - t0;
    const out = (r.exitCode === 0 ? r.stdout : r.stderr).trim();
    // Connected, then nothing: say so with what it took, for the failure message.
    return { out: out || `(nothing: exit ${r.exitCode} after ${Math.round(ms)} ms)`, ms };
  }

  /** One UDP request (optionally from a fixed source port): the reply line, or '' when none came. */
  async function udp(ns: string, ip: string, port: number, sourcePort?: number): Promise<string> {
    if (sourcePort) {
      // A fixed source port (one 5-tuple, one conntrack entry): socat, which waits its -t whether an answer came or not.
      const addr = `UDP4:${ip}:${port},sourceport=${sourcePort},reuseaddr`;
      const r = await shOk(['ip', 'netns', 'exec', ns, 'socat', `-t${0.5 * SCALE}`, `-T${2 * SCALE}`, '-', addr], 'q\n');
      return r.stdout.trim();
    }
    // bash's /dev/udp (a connected socket) and head, which reads a whole datagram (bash's own read takes one byte of
    // it): it returns with the first answer, or nothing on a timeout or an ICMP port unreachable; so waiting longer on
    // a slow machine costs nothing when the answer comes.
    const wait = Math.min(2 * SCALE, 10);
    const script = `exec 3<>/dev/udp/${ip}/${port} && printf 'q\\n' >&3 && timeout ${wait} head -n1 <&3`;
    const r = await shOk(['ip', 'netns', 'exec', ns, 'bash', '-c', script]);
    return r.stdout.trim();
  }

  /** One HTTP GET with curl: the status code (0 when nothing answered) and the body. */
  async function httpGet(ns: string, url: string): Promise<{ code: number; body: string }> {
    const r = await shOk(['ip', 'netns', 'exec', ns, 'curl', '-s', '-m', '3', '-o', '-', '-w', '\n%{http_code}', url]);
    const lines = r.stdout.split('\n');
    const code = Number(lines.pop() ?? '0') || 0;
    return { code, body: lines.join('\n') };
  }

  /** A node's ruleset as text (iptables-save; our nft tables, the shard tables too; in IPVS mode the virtual servers, then iptables-save). */
  async function ruleset(n: VNode = n1): Promise<string> {
    if (mode === 'ipvs') return `${(await n.exec(['ipvsadm', '-Ln'], true)).stdout}\n${(await n.exec(['iptables-save'], true)).stdout}`;
    const r = mode === 'iptables' ? await n.exec(['iptables-save'], true) : await n.exec(['nft', 'list', 'ruleset', 'ip'], true);
    return r.stdout;
  }

  /**
   * Whether a node's rules serve a Service: its name in the iptables comments or the nft table; in IPVS mode
   * (whose virtual servers carry no names) a virtual server on its ClusterIP.
   */
  async function hasRules(name: string, clusterIP: string, n: VNode = n1): Promise<boolean> {
    if (mode !== 'ipvs') return (await ruleset(n)).includes(`default/${name}`);
    return new RegExp(`^(TCP|UDP|SCTP)\\s+${esc(clusterIP)}:`, 'm').test((await n.exec(['ipvsadm', '-Ln'], true)).stdout);
  }

  /**
   * Waits until every node's rules hold a load balancer's VIP. Through the API the VIP comes in a second
   * write (the status), after the endpoints; a SYN sent before it is programmed leaves a conntrack entry
   * without NAT, and a client that picks the same source port again (socat in a fresh namespace does)
   * would match it until it expires.
   */
  async function waitVIP(vip: string): Promise<void> {
    for (const n of nodes) await waitFor(async () => (await ruleset(n)).includes(vip), `${n.name}'s rules to hold ${vip}`, { timeoutMs: 15_000 * SCALE, intervalMs: 100 });
  }

  /** Waits until the status file lists `key` as ignored; returns the reason. */
  async function waitIgnored(key: string): Promise<string> {
    let reason: string | undefined;
    await waitFor(() => (reason = status()?.ignored.find((i) => i.key === key)?.reason) !== undefined, `${key} ignored`);
    return reason!;
  }

  /** The endpoint names seen over n requests (first word of each answer), with counts. */
  // Asks n times; when every backend is expected to answer, asks on (up to 48 times) until each has,
  // so that random balancing (1 in 2^n to miss one of two) cannot fail a run.
  async function spread(n: number, one: () => Promise<string>, until: readonly string[] = []): Promise<Map<string, number>> {
    const seen = new Map<string, number>();
    for (let i = 0; i < n || (i < 48 && until.some((u) => !seen.has(u))); i++) {
      const answer = await one();
      // An answer is "<pod> <peer>"; anything else (nothing came, an error) is kept whole for the failure message.
      const who = answer.startsWith('(') ? answer : answer.split(' ')[0] || '(none)';
      seen.set(who, (seen.get(who) ?? 0) + 1);
    }
    return seen;
  }
  const names = (m: Map<string, number>) => [...m.keys()].sort();

  /** A long-lived TCP connection from `ns` (socat, fed line by line) and a round trip of one line through it. */
  function longConnection(ns: string, ip: string, port: number): { conn: ChildProcess; roundTrip: (line: string) => Promise<boolean> } {
    const conn = spawn('ip', ['netns', 'exec', ns, 'socat', '-', `TCP4:${ip}:${port}`], { stdio: ['pipe', 'pipe', 'pipe'] });
    holders.push(conn);
    let got = '';
    conn.stdout!.on('data', (d: Buffer) => (got += d.toString()));
    const roundTrip = async (line: string): Promise<boolean> => {
      conn.stdin!.write(`${line}\n`);
      // Stretched like every other wait here: in a loaded emulated VM socat and the echo server's fork take seconds.
      const deadline = Date.now() + 3000 * SCALE;
      while (Date.now() < deadline) {
        if (got.includes(line)) return true;
        await sleep(20);
      }
      return false;
    };
    return { conn, roundTrip };
  }

  /** kubectl against the lab's control plane (API source); throws with its stderr on failure. */
  async function kubectl(args: readonly string[], input?: string): Promise<string> {
    const r = await cp!.kubectl(args, true, input);
    if (r.exitCode !== 0) throw new Error(`kubectl ${args.join(' ')}: ${r.stderr}`);
    return r.stdout;
  }

  /**
   * Writes a unit of objects: a manifest file (YAML files hold one document per object, as users write
   * them for kubectl apply), or through the API one `kubectl apply`, then each status through the status
   * subresource, as the load balancer writes it.
   */
  async function put(unit: string, objects: JsonObject[]): Promise<void> {
    if (api) {
      const forms = objects.map(apiForm);
      await kubectl(['apply', '-f', '-'], unit.endsWith('.yaml') ? forms.map((f) => stringifyYaml(f.object)).join('---\n') : forms.map((f) => JSON.stringify(f.object)).join('\n'));
      for (const f of forms) {
        const name = String((f.object['metadata'] as JsonObject)['name']);
        if (f.status) await kubectl(['patch', 'service', name, '--subresource=status', '--type=merge', '-p', JSON.stringify({ status: f.status })]);
      }
      units.set(unit, forms.map((f) => f.object));
      return;
    }
    const text = unit.endsWith('.yaml') ? objects.map((o) => stringifyYaml(o)).join('---\n') : JSON.stringify(objects);
    writeFileSync(`${manifests}/.${unit}.tmp`, text);
    renameSync(`${manifests}/.${unit}.tmp`, `${manifests}/${unit}`);
  }

  /** Removes what put(unit) wrote: the file, or the objects through the API. */
  async function remove(unit: string): Promise<void> {
    if (!api) return rmSync(`${manifests}/${unit}`);
    await kubectl(['delete', '-f', '-'], (units.get(unit) ?? []).map((o) => JSON.stringify(o)).join('\n'));
    units.delete(unit);
  }

  const status = (n: VNode = n1): ProxyStatus | null => readProxyStatus(proxyStatusFile(n.runDir));

  /** Waits until every node's agent reports `spn` applied with exactly these endpoints ("ip:port"). */
  async function waitApplied(spn: string, endpoints: string[]): Promise<void> {
    const want = JSON.stringify([...endpoints].sort());
    for (const n of nodes) {
      const deadline = Date.now() + 15_000 * SCALE;
      for (;;) {
        const s = status(n);
        if (s && JSON.stringify(s.applied[spn] ?? null) === want) break;
        if (Date.now() > deadline) throw new Error(`${spn} never applied on ${n.name} with ${want}; status: ${JSON.stringify(status(n)?.applied[spn])}`);
        await sleep(50);
      }
    }
  }

  /** A slice of these pods, each endpoint on its pod's node unless `extra` says otherwise. */
  const slice = (service: string, ports: { name?: string; port: number; protocol?: 'TCP' | 'UDP' }[], pods: Pod[], extra: Partial<EndpointSpec> = {}) =>
    makeEndpointSlice({ service, ports, endpoints: pods.map((p) => ({ ip: p.ip, nodeName: p.node.name, ...extra })) });

  const WEB_PORTS = [
    { name: 'http', port: 8080 },
    { name: 'dns', port: 5353, protocol: 'UDP' as const },
  ];
  const webObjects = (pods: Pod[]) => [
    makeService({
      name: 'web',
      type: 'NodePort',
      clusterIP: '10.96.0.30',
      ports: [
        { name: 'http', port: 80, targetPort: 8080, nodePort: 30080 },
        { name: 'dns', port: 53, targetPort: 5353, protocol: 'UDP', nodePort: 30053 },
      ],
    }),
    slice('web', WEB_PORTS, pods),
  ];

  t.before(async () => {
    if (api) {
      lab = await newLab(source === 'api-ha' ? 'eh' : { iptables: 'ei', nftables: 'en', ipvs: 'ev' }[mode]);
      cp = await lab.startControlPlane({ nodes: ['n1', 'n2', 'n3'], args: NO_DNS, ...(source === 'api-ha' ? { ha: { etcdMembers: 3, apiServers: 2 } } : {}) });
      // The agents are told the API server's service CIDR (nftables mode drops what no Service in it has).
      const config = { proxyMode: mode, proxyMinSyncMs: 100, overlay: 'vxlan', serviceCIDR: DEFAULT_SERVICE_CIDR };
      for (const name of ['n1', 'n2', 'n3']) nodes.push(await lab.addNode(name, { clusterCIDR: CLUSTER_CIDR, config }));
      await Promise.all(nodes.map((n) => n.startAgent()));
    } else {
      lab = await newLab({ iptables: 'si', nftables: 'sn', ipvs: 'sv' }[mode]);
      manifests = `${lab.runRoot}/manifests`;
      mkdirSync(manifests, { recursive: true });
      nodes = [await lab.addNode('n1', { podCIDR: '10.244.1.0/24', clusterCIDR: CLUSTER_CIDR, config: { proxyMode: mode, manifestsDir: manifests, proxyMinSyncMs: 100, serviceCIDR: '10.96.0.0/16' } })];
      await nodes[0]!.startAgent();
    }
    n1 = nodes[0]!;
    // Through the API the backends are on the other nodes: every endpoint is remote to the client.
    p1 = await pod('pod1', nodes[1] ?? n1);
    p2 = await pod('pod2', nodes[2] ?? n1);
    client = await pod('client', n1);
    ext = await lab.addUnderlayHost('ext', `${EXT_IP}/24`);
    ext2 = await lab.addUnderlayHost('ext2', `${EXT2_IP}/24`);
    for (const h of [ext, ext2]) await shOk(['ip', '-n', h.name, 'route', 'add', LB_RANGE, 'via', NODE_IP]);
    await shOk(['ip', '-n', lab.ul, 'addr', 'add', `${UNALLOCATED}/32`, 'dev', 'ul0']);
    serve(p1);
    serve(p2);
    for (const p of [p1, p2]) {
      // Across the overlay once every agent routes the others' pod CIDRs.
      await waitFor(async () => (await tcp(client.ns, p.ip, 8080)).out.startsWith(p.name), `${p.name} serving on ${p.ip}:8080 to the client`, { timeoutMs: 30_000 * SCALE, intervalMs: 50 });
    }
    await put('web.json', webObjects([p1, p2]));
    await waitApplied('default/web:http', [`${p1.ip}:8080`, `${p2.ip}:8080`]);
  });
  t.teardown(async () => {
    for (const h of holders) h.kill('SIGKILL');
    await lab?.destroy();
  });

  t.test(`${mode}: TCP and UDP to a ClusterIP reach every endpoint, from a pod and from the node itself`, async (t) => {
    const both = ['pod1', 'pod2'];
    t.same(names(await spread(16, async () => (await tcp(client.ns, '10.96.0.30', 80)).out, both)), both, 'TCP from the client pod');
    t.same(names(await spread(12, () => udp(client.ns, '10.96.0.30', 53), both)), both, 'UDP from the client pod');
    t.same(names(await spread(16, async () => (await tcp(n1.ns, '10.96.0.30', 80)).out, both)), both, 'TCP from the node');
    t.same(names(await spread(12, () => udp(n1.ns, '10.96.0.30', 53), both)), both, 'UDP from the node');
    // The client's own address reaches the backend (pod-to-Service traffic inside the cluster CIDR is not masqueraded).
    t.match((await tcp(client.ns, '10.96.0.30', 80)).out, new RegExp(`^pod[12] ${esc(client.ip)}$`));
  });

  t.test(`${mode}: a ping to a ClusterIP gets no reply`, async (t) => {
    const t0 = performance.now();
    const r = await shOk(['ip', 'netns', 'exec', client.ns, 'ping', '-n', '-c1', '-W2', '10.96.0.30']);
    const ms = performance.now() - t0;
    t.not(r.exitCode, 0);
    t.notMatch(r.stdout, /bytes from/, 'no echo reply');
    if (mode === 'nftables' || mode === 'ipvs') {
      // kube-proxy's nftables mode rejects traffic to a ClusterIP it does not serve; in IPVS mode the ClusterIP
      // is a local address (kube-ipvs0) and KUBE-IPVS-FILTER rejects what is not a service port: the ping fails at once.
      t.match(r.stdout, /Destination Port Unreachable/);
      t.ok(ms < 1500 * SCALE, `rejected in ${Math.round(ms)} ms`);
    } else {
      // iptables mode only DNATs TCP/UDP/SCTP: the ICMP echo is routed on to the node's gateway and lost.
      t.match(r.stdout, /100% packet loss/);
      t.ok(ms >= 1900, `waited ${Math.round(ms)} ms for nothing`);
    }
  });

  t.test(`${mode}: a Service with no endpoints refuses at once`, async (t) => {
    await put('empty.json', [makeService({ name: 'empty', clusterIP: '10.96.0.12', ports: [{ port: 80, targetPort: 8080 }] }), makeEndpointSlice({ service: 'empty', ports: [{ port: 8080 }], endpoints: [] })]);
    await waitApplied('default/empty', []);
    const r = await tcp(client.ns, '10.96.0.12', 80);
    // IPVS: a virtual server without real servers answers ICMP port unreachable (ip_vs_leave), seen as refused.
    t.match(r.out, /Connection refused/);
    t.ok(r.ms < 1500 * SCALE, `refused in ${Math.round(r.ms)} ms`);
    const u = await udp(client.ns, '10.96.0.12', 80);
    t.equal(u, '', 'no UDP answer either');
  });

  t.test(`${mode}: NodePort from a host on the underlay reaches every endpoint, masqueraded`, async (t) => {
    const seen = new Set<string>();
    for (let i = 0; i < 16; i++) {
      const { out } = await tcp(ext.name, NODE_IP, 30080);
      seen.add(out.split(' ')[0]!);
      // Cluster policy: the backend sees the node (masqueraded), not the external client.
      t.notMatch(out, new RegExp(`${esc(EXT_IP)}$`), `answer ${i}: ${out}`);
    }
    t.same([...seen].sort(), ['pod1', 'pod2']);
    t.same(names(await spread(12, () => udp(ext.name, NODE_IP, 30053), ['pod1', 'pod2'])), ['pod1', 'pod2'], 'UDP NodePort');
  });

  t.test(`${mode}: externalTrafficPolicy Local preserves the client's source IP on the endpoint's node, and drops elsewhere`, async (t) => {
    await put('local.json', [
      makeService({ name: 'local', type: 'NodePort', clusterIP: '10.96.0.13', externalTrafficPolicy: 'Local', ports: [{ port: 80, targetPort: 8080, nodePort: 30081 }] }),
      slice('local', [{ port: 8080 }], [p1]),
    ]);
    await waitApplied('default/local', [`${p1.ip}:8080`]);
    for (let i = 0; i < 4; i++) {
      const { out } = await tcp(ext.name, ipOf(p1.node), 30081);
      t.match(out, new RegExp(`^pod1 ${esc(EXT_IP)}$`), `${p1.node.name}, answer ${i}: ${out}`);
    }
    // Through the API pod1 is on n2: n1 and n3 have no local endpoint and drop outside traffic to the NodePort.
    for (const n of nodes.filter((x) => x !== p1.node)) {
      const r = await tcp(ext.name, ipOf(n), 30081);
      t.notMatch(r.out, /^pod/, `${n.name} has no local endpoint: no answer (${r.out})`);
      t.notMatch(r.out, /Connection refused/, `${n.name}: dropped, not refused`);
    }
  });

  t.test(`${mode}: ClientIP affinity sticks to one endpoint`, async (t) => {
    await put('sticky.yaml', [
      makeService({ name: 'sticky', clusterIP: '10.96.0.11', affinityTimeoutSeconds: 60, ports: [{ port: 80, targetPort: 8080 }] }),
      slice('sticky', [{ port: 8080 }], [p1, p2]),
    ]);
    await waitApplied('default/sticky', [`${p1.ip}:8080`, `${p2.ip}:8080`]);
    const seen = await spread(12, async () => (await tcp(client.ns, '10.96.0.11', 80)).out);
    t.equal(seen.size, 1, `one endpoint for every connection: ${JSON.stringify([...seen])}`);
    t.ok(['pod1', 'pod2'].includes([...seen.keys()][0]!));
  });

  t.test(`${mode}: hairpin, a backend reaching itself through its own Service`, async (t) => {
    const seen = await spread(16, async () => (await tcp(p1.ns, '10.96.0.30', 80)).out, ['pod1', 'pod2']);
    t.same(names(seen), ['pod1', 'pod2'], JSON.stringify([...seen]));
  });

  t.test(`${mode}: after an endpoint is removed no new connection goes to it`, async (t) => {
    await put('shrink.json', [makeService({ name: 'shrink', clusterIP: '10.96.0.15', ports: [{ port: 80, targetPort: 8080 }] }), slice('shrink', [{ port: 8080 }], [p1, p2])]);
    await waitApplied('default/shrink', [`${p1.ip}:8080`, `${p2.ip}:8080`]);
    t.same(names(await spread(12, async () => (await tcp(client.ns, '10.96.0.15', 80)).out, ['pod1', 'pod2'])), ['pod1', 'pod2']);
    await put('shrink.json', [makeService({ name: 'shrink', clusterIP: '10.96.0.15', ports: [{ port: 80, targetPort: 8080 }] }), slice('shrink', [{ port: 8080 }], [p2])]);
    await waitApplied('default/shrink', [`${p2.ip}:8080`]);
    t.same(names(await spread(16, async () => (await tcp(client.ns, '10.96.0.15', 80)).out)), ['pod2']);
  });

  t.test(`${mode}: a UDP client keeps working after its endpoint is replaced (conntrack cleanup)`, async (t) => {
    const svc = makeService({ name: 'udp1', clusterIP: '10.96.0.14', ports: [{ port: 53, targetPort: 5353, protocol: 'UDP' }] });
    const udpPort = [{ port: 5353, protocol: 'UDP' as const }];
    await put('udp1.json', [svc, slice('udp1', udpPort, [p1])]);
    await waitApplied('default/udp1', [`${p1.ip}:5353`]);
    // The same 5-tuple every time: one conntrack entry, as a long-lived UDP client (a resolver) has.
    for (let i = 0; i < 3; i++) t.match(await udp(client.ns, '10.96.0.14', 53, 40053), /^pod1 /, `before, request ${i}`);
    await put('udp1.json', [svc, slice('udp1', udpPort, [p2])]);
    await waitApplied('default/udp1', [`${p2.ip}:5353`]);
    // Without the cleanup the existing entry would keep sending this flow to pod1.
    for (let i = 0; i < 3; i++) t.match(await udp(client.ns, '10.96.0.14', 53, 40053), /^pod2 /, `after, request ${i}`);
  });

  t.test(`${mode}: an invalid Service is rejected naming the field; the others keep working`, async (t) => {
    const bad = withField(makeService({ name: 'bad', clusterIP: '10.96.0.17', ports: [{ port: 80 }] }), 'spec.ports[0].port', 70000);
    if (api) {
      // The API server refuses it (422, a Status naming the field); it is never stored, so no agent hears of it.
      const r = await cp!.kubectl(['apply', '-f', '-'], true, JSON.stringify(apiForm(bad).object));
      t.not(r.exitCode, 0, 'kubectl apply fails');
      t.match(r.stderr, /The Service "bad" is invalid: .*spec\.ports\[0\]\.port: Invalid value: 70000/, r.stderr);
      t.match((await cp!.kubectl(['get', 'service', 'bad'], true)).stderr, /NotFound/, 'not stored');
      // A malformed body is refused as a bad request, and changes nothing either.
      const file = `${lab.runRoot}/broken.json`;
      writeFileSync(file, '{"kind": ');
      const raw = await cp!.kubectl(['create', '--raw', '/api/v1/namespaces/default/services', '-f', file], true);
      t.not(raw.exitCode, 0, 'the malformed document is refused');
      t.match(raw.stderr, /BadRequest/, raw.stderr);
      for (const n of nodes) {
        t.notOk(status(n)?.applied['default/bad'], `${n.name}: nothing applied for it`);
        t.notOk((status(n)?.rejected ?? []).some((x) => x.key === 'default/bad'), `${n.name}: nothing for its agent to reject`);
      }
    } else {
      await put('bad.json', [bad]);
      await waitFor(() => (status()?.rejected ?? []).some((r) => r.key === 'default/bad'), 'the agent to reject default/bad');
      t.match((status()?.rejected ?? []).find((r) => r.key === 'default/bad'), { kind: 'Service', field: 'spec.ports[0].port' });
      writeFileSync(`${manifests}/broken.json`, '{"kind": ');
      await waitFor(() => Object.keys(status()?.manifestErrors ?? {}).some((f) => f.endsWith('broken.json')), 'the agent to report broken.json');
    }
    t.same(names(await spread(8, async () => (await tcp(client.ns, '10.96.0.30', 80)).out, ['pod1', 'pod2'])), ['pod1', 'pod2'], 'web unaffected');
  });

  t.test(`${mode}: a LoadBalancer is served on its ingress IP (not an ipMode Proxy one), its ClusterIP and its NodePort`, async (t) => {
    const lb = withField(
      withField(makeService({ name: 'lb', type: 'LoadBalancer', clusterIP: '10.96.0.20', ports: [{ port: 80, targetPort: 8080, nodePort: 30090 }] }), 'spec.allocateLoadBalancerNodePorts', true),
      'status',
      { loadBalancer: { ingress: [{ ip: '203.0.113.10', ipMode: 'VIP' }, { ip: '203.0.113.11', ipMode: 'Proxy' }] } },
    );
    await put('lb.json', [lb, slice('lb', [{ port: 8080 }], [p1, p2])]);
    await waitApplied('default/lb', [`${p1.ip}:8080`, `${p2.ip}:8080`]);
    await waitVIP('203.0.113.10');
    const both = ['pod1', 'pod2'];
    t.same(names(await spread(12, async () => (await tcp(ext.name, '203.0.113.10', 80)).out, both)), both, 'the VIP from the underlay host');
    t.notMatch((await tcp(ext.name, '203.0.113.10', 80)).out, new RegExp(`${esc(EXT_IP)}$`), 'Cluster policy: masqueraded');
    t.same(names(await spread(8, async () => (await tcp(client.ns, '203.0.113.10', 80)).out, both)), both, 'the VIP from a pod');
    t.same(names(await spread(8, async () => (await tcp(client.ns, '10.96.0.20', 80)).out, both)), both, 'its ClusterIP');
    t.same(names(await spread(8, async () => (await tcp(ext.name, NODE_IP, 30090)).out, both)), both, 'its NodePort');
    t.notMatch((await tcp(ext.name, '203.0.113.11', 80)).out, /^pod/, 'an ipMode Proxy ingress IP gets no rules');
  });

  t.test(`${mode}: loadBalancerSourceRanges let the allowed source in and drop the others`, async (t) => {
    const fw = withField(
      withField(makeService({ name: 'lbfw', type: 'LoadBalancer', clusterIP: '10.96.0.21', ports: [{ port: 80, targetPort: 8080, nodePort: 30091 }] }), 'spec.loadBalancerSourceRanges', [`${EXT_IP}/32`]),
      'status',
      { loadBalancer: { ingress: [{ ip: '203.0.113.12' }] } },
    );
    await put('lbfw.json', [fw, slice('lbfw', [{ port: 8080 }], [p1])]);
    await waitApplied('default/lbfw', [`${p1.ip}:8080`]);
    await waitVIP('203.0.113.12');
    t.match((await tcp(ext.name, '203.0.113.12', 80)).out, /^pod1 /, `${EXT_IP} is in the ranges`);
    const blocked = await tcp(ext2.name, '203.0.113.12', 80);
    t.notMatch(blocked.out, /^pod1/, `${EXT2_IP} is not: no answer (${blocked.out})`);
    t.ok(blocked.ms >= 2500, `dropped, not refused: waited ${Math.round(blocked.ms)} ms`);
    // The node's own connection: in IPVS mode the VIP sits on kube-ipvs0 and IPVS takes the connection on
    // LOCAL_OUT, past the INPUT firewall, so KUBE-IPVS-OUT-FILTER drops it (kubernetes#119656).
    const fromNode = await tcp(n1.ns, '203.0.113.12', 80);
    t.notMatch(fromNode.out, /^pod1/, `the node itself is not in the ranges either: no answer (${fromNode.out})`);
    t.ok(fromNode.ms >= 2500, `dropped there too: waited ${Math.round(fromNode.ms)} ms`);
    t.match((await tcp(ext2.name, NODE_IP, 30091)).out, /^pod1 /, 'the NodePort is not subject to the ranges (as kube-proxy)');
    t.match((await tcp(client.ns, '10.96.0.21', 80)).out, /^pod1 /, 'neither is the ClusterIP');
  });

  t.test(`${mode}: allocateLoadBalancerNodePorts false: the VIP works, and there is no NodePort`, async (t) => {
    const lb = withField(
      withField(makeService({ name: 'lbnonp', type: 'LoadBalancer', clusterIP: '10.96.0.22', ports: [{ port: 80, targetPort: 8080 }] }), 'spec.allocateLoadBalancerNodePorts', false),
      'status',
      { loadBalancer: { ingress: [{ ip: '203.0.113.13' }] } },
    );
    await put('lbnonp.json', [lb, slice('lbnonp', [{ port: 8080 }], [p1])]);
    await waitApplied('default/lbnonp', [`${p1.ip}:8080`]);
    await waitVIP('203.0.113.13');
    if (api) t.equal((await kubectl(['get', 'service', 'lbnonp', '-o', 'jsonpath={.spec.ports[0].nodePort}'])).trim(), '', 'the API server allocated none');
    t.match((await tcp(ext.name, '203.0.113.13', 80)).out, /^pod1 /, 'the VIP');
    t.ok(await hasRules('lbnonp', '10.96.0.22'), 'the Service has rules');
    if (mode === 'ipvs') {
      // The virtual servers on the node IP are the NodePorts: web's, and none more than the Services written so far have.
      const ports = [...(await n1.exec(['ipvsadm', '-Ln'], true)).stdout.matchAll(new RegExp(`^(?:TCP|UDP)\\s+${esc(NODE_IP)}:(\\d+)`, 'gm'))].map((m) => Number(m[1]));
      t.ok(ports.includes(30080), `the NodePort virtual servers hold the other Services: ${ports.join(', ')}`);
      t.same(ports.filter((p) => ![30080, 30053, 30081, 30090, 30091].includes(p)), [], 'but nothing of this one');
    } else {
      // The NodePort dispatch: KUBE-NODEPORTS rules, or the @service-nodeports map's elements.
      const nodePorts =
        mode === 'iptables'
          ? (await ruleset()).split('\n').filter((l) => l.startsWith('-A KUBE-NODEPORTS ')).join('\n')
          : (await n1.exec(['sh', '-c', "for t in $(nft list tables ip | awk '{ print $3 }'); do nft list map ip $t service-nodeports 2>/dev/null; done"], true)).stdout;
      t.match(nodePorts, /default\/web/, 'the NodePort dispatch as listed holds the other Services');
      t.notMatch(nodePorts, /default\/lbnonp/, 'but nothing of this one');
    }
  });

  t.test(`${mode}: externalTrafficPolicy Local: the healthCheckNodePort answers 200 with local endpoints and 503 without`, async (t) => {
    const VIP = '203.0.113.14';
    const svc = (extra: Partial<EndpointSpec> = {}) => [
      withField(
        withField(makeService({ name: 'lblocal', type: 'LoadBalancer', clusterIP: '10.96.0.23', externalTrafficPolicy: 'Local', ports: [{ port: 80, targetPort: 8080, nodePort: 30093 }] }), 'spec.healthCheckNodePort', 32100),
        'status',
        { loadBalancer: { ingress: [{ ip: VIP }] } },
      ),
      slice('lblocal', [{ port: 8080 }], [p1, p2], extra),
    ];
    const health = (n: VNode, path = '/') => httpGet(ext.name, `http://${ipOf(n)}:32100${path}`);
    const body = (localEndpoints: number) => ({ service: { namespace: 'default', name: 'lblocal' }, localEndpoints, serviceProxyHealthy: true });
    /** The load balancer sends the VIP to one node (as to one that passes its health check). */
    const vipVia = (n: VNode) => shOk(['ip', '-n', ext.name, 'route', 'replace', `${VIP}/32`, 'via', ipOf(n)]);
    t.teardown(() => shOk(['ip', '-n', ext.name, 'route', 'del', `${VIP}/32`]).then(() => undefined));
    await put('lblocal.json', svc());
    await waitApplied('default/lblocal', [`${p1.ip}:8080`, `${p2.ip}:8080`]);
    await waitVIP(VIP);
    // Every node answers for its own endpoints: with manifests n1 holds both; through the API n2 and n3 one each, n1 none.
    for (const n of nodes) {
      const local = [p1, p2].filter((p) => p.node === n).length;
      // The server opens right after the sync.
      await waitFor(async () => (await health(n, '/healthz')).code !== 0, `${n.name}'s health check server`);
      const r = await health(n, '/healthz');
      t.equal(r.code, local > 0 ? 200 : 503, `${n.name} with ${local} local endpoints: ${r.body}`);
      t.same(JSON.parse(r.body || 'null'), body(local), `${n.name}: its local endpoints`);
    }
    const home = p1.node;
    const homeNames = [p1, p2].filter((p) => p.node === home).map((p) => p.name).join('|');
    await vipVia(home);
    t.match((await tcp(ext.name, VIP, 80)).out, new RegExp(`^(${homeNames}) ${esc(EXT_IP)}$`), `Local policy keeps the client's source IP on the VIP via ${home.name}`);

    if (!api) {
      // The same endpoints, now on another node: none local.
      await put('lblocal.json', svc({ nodeName: 'n2' }));
      await waitFor(async () => (await health(n1)).code === 503, 'the health check to turn 503');
      t.same(JSON.parse((await health(n1)).body || 'null'), body(0), 'no local endpoint: 503');
    }
    // n1 has no local endpoint now (through the API: never had).
    await vipVia(n1);
    const dropped = await tcp(ext.name, VIP, 80);
    t.notMatch(dropped.out, /^pod/, `outside traffic to the VIP via n1 is dropped without a local endpoint (${dropped.out})`);

    await remove('lblocal.json');
    for (const n of nodes) await waitFor(async () => (await health(n)).code === 0, `${n.name}'s health check server to close with its Service`);
    t.pass('closed with the Service');
  });

  t.test(`${mode}: a Service labelled service.kubernetes.io/service-proxy-name gets no rules`, async (t) => {
    const other = withField(makeService({ name: 'other', type: 'NodePort', clusterIP: '10.96.0.25', ports: [{ port: 80, targetPort: 8080, nodePort: 30095 }] }), 'metadata.labels', { 'service.kubernetes.io/service-proxy-name': 'someone-else' });
    await put('other.json', [other, slice('other', [{ port: 8080 }], [p1])]);
    if (api) {
      // The agents' informers select it away (kube-proxy's label selector): they never hear of it. A Service
      // written after it and applied shows they have seen everything before it.
      await put('after-other.json', [makeService({ name: 'after-other', clusterIP: '10.96.0.26', ports: [{ port: 80, targetPort: 8080 }] }), slice('after-other', [{ port: 8080 }], [p1])]);
      await waitApplied('default/after-other', [`${p1.ip}:8080`]);
      for (const n of nodes) t.notOk(status(n)?.ignored.some((i) => i.key === 'default/other'), `${n.name}: not even listed`);
    } else {
      t.match(await waitIgnored('default/other'), /service-proxy-name=someone-else/);
    }
    for (const n of nodes) t.notOk(status(n)?.applied['default/other'], `${n.name}: not applied`);
    t.notMatch((await tcp(client.ns, '10.96.0.25', 80)).out, /^pod/, 'its ClusterIP does not answer');
    t.notMatch((await tcp(ext.name, NODE_IP, 30095)).out, /^pod/, 'nor its NodePort');
    t.notOk(await hasRules('other', '10.96.0.25'), 'nothing of it in the ruleset');
  });

  t.test(`${mode}: NodePorts on the bridge address and on 127.0.0.1: iptables mode serves both, IPVS mode the bridge's, nftables mode neither by default`, async (t) => {
    // n1's bridge (the client's gateway): a local address that is not the primary one.
    const cbr0 = client.ip.replace(/\.\d+$/, '.1');
    t.match((await tcp(client.ns, NODE_IP, 30080)).out, /^pod[12] /, 'the node IP serves NodePorts in both modes');
    const bridge = await tcp(client.ns, cbr0, 30080);
    const local = await tcp(n1.ns, '127.0.0.1', 30080);
    if (mode === 'nftables') {
      // nftables mode's default is the node's primary IP (eth0's, which holds the default route).
      t.match(bridge.out, /Connection refused/, `not on cbr0's ${cbr0}: ${bridge.out}`);
      t.match(local.out, /Connection refused/, `not on 127.0.0.1: ${local.out}`);
    } else if (mode === 'ipvs') {
      // kube-proxy's IPVS default: a virtual server on every node address (cbr0's too), never on 127.0.0.1 (IPVS cannot).
      t.match(bridge.out, /^pod[12] /, `on cbr0's ${cbr0} too`);
      t.match(local.out, /Connection refused/, `not on 127.0.0.1: ${local.out}`);
    } else {
      // kube-proxy's iptables default: every local address, 127.0.0.1 included (route_localnet).
      t.match(bridge.out, /^pod[12] /, `on cbr0's ${cbr0} too`);
      t.match(local.out, /^pod[12] /, 'and on 127.0.0.1');
    }
  });

  t.test(`${mode}: an address in the service CIDR that no Service has`, async (t) => {
    const r = await tcp(n1.ns, UNALLOCATED, 80);
    if (mode === 'nftables') {
      // Dropped at the node: the gateway, which holds the address, never sees it.
      t.notMatch(r.out, /Connection refused/, r.out);
      t.ok(r.ms >= 2500, `dropped: waited ${Math.round(r.ms)} ms`);
    } else {
      // iptables and IPVS modes route it on (it is not on kube-ipvs0, so KUBE-IPVS-FILTER leaves it); the gateway holds it and refuses.
      t.match(r.out, /Connection refused/, r.out);
    }
  });

  t.test(`${mode}: the agent killed and restarted keeps established connections and the rules`, async (t) => {
    await put('echo.json', [makeService({ name: 'echo', clusterIP: '10.96.0.16', ports: [{ port: 90, targetPort: 9090 }] }), slice('echo', [{ port: 9090 }], [p1])]);
    await waitApplied('default/echo', [`${p1.ip}:9090`]);
    // A long-lived connection through the ClusterIP: socat in the client pod, fed line by line.
    const { conn, roundTrip } = longConnection(client.ns, '10.96.0.16', 90);
    t.ok(await roundTrip('before'), 'echo before the crash');
    // The client's node: its agent made the connection's NAT (its endpoint is remote through the API).
    await n1.stopAgent('SIGKILL');
    t.ok(await roundTrip('while-down'), 'the kernel keeps forwarding while no agent runs');
    rmSync(proxyStatusFile(n1.runDir), { force: true });
    await n1.startAgent();
    await waitFor(() => (status()?.ready ?? false) && (status()?.syncs ?? 0) >= 1 && status()?.lastSync?.reason === 'first', 'the restarted agent\'s first sync', { timeoutMs: 15_000 * SCALE, intervalMs: 50 }).catch(() => undefined);
    t.equal(status()?.lastSync?.reason, 'first', 'the restarted agent ran its first (full) sync');
    t.ok(await roundTrip('after-restart'), 'the established connection survives the full resync');
    t.same(names(await spread(8, async () => (await tcp(client.ns, '10.96.0.30', 80)).out, ['pod1', 'pod2'])), ['pod1', 'pod2'], 'new connections too');
    conn.kill('SIGKILL');
  });

  if (mode === 'ipvs') {
    t.test('ipvs: KUBE-IPVS-FILTER keeps the node off its ClusterIPs; --ipvs-filter false shows what it prevents', async (t) => {
      // A server of the node's own (not a Service) on a port no Service has.
      const own = spawn('ip', ['netns', 'exec', n1.ns, 'socat', '-t10', 'TCP4-LISTEN:2222,reuseaddr,fork', 'SYSTEM:echo node-itself $SOCAT_PEERADDR'], { stdio: 'ignore' });
      holders.push(own);
      await waitFor(async () => (await tcp(n1.ns, '127.0.0.1', 2222)).out.startsWith('node-itself'), "the node's own server");
      const ping = () => shOk(['ip', 'netns', 'exec', client.ns, 'ping', '-n', '-c1', '-W2', '10.96.0.30']);
      t.match((await tcp(client.ns, '10.96.0.30', 2222)).out, /Connection refused/, 'filter on: the node port behind the ClusterIP is rejected');
      t.match((await ping()).stdout, /Destination Port Unreachable/, 'filter on: the ping is rejected');
      await n1.stopAgent('SIGTERM');
      (n1.opts.config as Record<string, unknown>)['ipvsFilter'] = false;
      rmSync(proxyStatusFile(n1.runDir), { force: true });
      await n1.startAgent();
      await waitFor(() => (status()?.syncs ?? 0) >= 1, 'the first sync without the filter', { timeoutMs: 15_000 * SCALE });
      t.notMatch((await n1.exec(['iptables-save', '-t', 'filter'], true)).stdout, /KUBE-IPVS-FILTER.*REJECT/, 'no REJECT in KUBE-IPVS-FILTER');
      const answered = await ping();
      t.equal(answered.exitCode, 0, 'filter off: the node answers a ping to a ClusterIP (it sits on kube-ipvs0)');
      t.match(answered.stdout, /bytes from 10\.96\.0\.30/);
      t.match((await tcp(client.ns, '10.96.0.30', 2222)).out, new RegExp(`^node-itself ${esc(client.ip)}$`), "filter off: a pod reaches the node's own server through the ClusterIP");
      t.same(names(await spread(8, async () => (await tcp(client.ns, '10.96.0.30', 80)).out, ['pod1', 'pod2'])), ['pod1', 'pod2'], 'the Service itself is unchanged');
      own.kill('SIGKILL');
    });

    t.test('ipvs, on the real kernel: the sysctls, a draining real server at weight 0, nodenet trace, the sh scheduler', async (t) => {
      // The sysctls the mode sets in the node's namespace (kube-proxy's; conn_reuse_mode is left alone from 5.9).
      for (const k of ['conntrack', 'expire_nodest_conn', 'expire_quiescent_template']) {
        t.equal((await n1.exec(['cat', `/proc/sys/net/ipv4/vs/${k}`], true)).stdout.trim(), '1', `net.ipv4.vs.${k} = 1, read back`);
      }

      // A real server that leaves with a connection open drains: weight 0, the connection keeps working.
      const drainSvc = makeService({ name: 'drain', clusterIP: '10.96.0.23', ports: [{ port: 90, targetPort: 9090 }] });
      await put('drain.json', [drainSvc, slice('drain', [{ port: 9090 }], [p1, p2])]);
      await waitApplied('default/drain', [`${p1.ip}:9090`, `${p2.ip}:9090`]);
      const { conn, roundTrip } = longConnection(client.ns, '10.96.0.23', 90);
      t.ok(await roundTrip('before'), 'an established connection through the ClusterIP');
      // Which real server IPVS gave it: its connection table.
      const conns = (await n1.exec(['ipvsadm', '-Lnc'], true)).stdout;
      const m = new RegExp(`ESTABLISHED\\s+${esc(client.ip)}:\\d+\\s+10\\.96\\.0\\.23:90\\s+(\\d+\\.\\d+\\.\\d+\\.\\d+):9090`).exec(conns);
      t.ok(m, `the connection is in IPVS's table: ${conns.split('\n').filter((l) => l.includes('10.96.0.23')).join(' | ')}`);
      const used = m?.[1] === p2.ip ? p2 : p1;
      const other = used === p1 ? p2 : p1;
      await put('drain.json', [drainSvc, slice('drain', [{ port: 9090 }], [other])]);
      await waitApplied('default/drain', [`${other.ip}:9090`]);
      const list = (await n1.exec(['ipvsadm', '-Ln', '-t', '10.96.0.23:90'], true)).stdout;
      t.match(list, new RegExp(`->\\s+${esc(used.ip)}:9090\\s+Masq\\s+0\\s+1\\s`), `the leaving real server stays at weight 0 with its active connection:\n${list}`);
      t.match(list, new RegExp(`->\\s+${esc(other.ip)}:9090\\s+Masq\\s+1\\s`), 'the other at weight 1');
      t.ok(await roundTrip('while-draining'), 'the drained connection still works');
      conn.kill('SIGKILL');

      // nodenet trace against the live IPVS rules of this node.
      const tr = await n1.exec([process.execPath, AGENT_JS, 'trace', '--mode', 'ipvs', '-o', 'json', client.ip, 'tcp', '10.96.0.30', '80'], true);
      t.equal(tr.exitCode, 0, `nodenet trace --mode ipvs runs: ${tr.stderr.trim().slice(0, 300)}`);
      const rep = JSON.parse(tr.stdout || '{}') as { destination?: string; ipvs?: { virtualService?: string; scheduler?: string; hook?: string } };
      t.equal(rep.ipvs?.virtualService, 'TCP/10.96.0.30:80', 'it finds the virtual service');
      t.equal(rep.ipvs?.hook, 'LOCAL_IN', 'on LOCAL_IN, from a pod');
      t.match(rep.destination ?? '', new RegExp(`${esc(p1.ip)}:8080.*${esc(p2.ip)}:8080|${esc(p2.ip)}:8080.*${esc(p1.ip)}:8080`), 'and both real servers');
      const ping = JSON.parse((await n1.exec([process.execPath, AGENT_JS, 'trace', '--mode', 'ipvs', '-o', 'json', client.ip, 'icmp', '10.96.0.30'], true)).stdout || '{}') as { destination?: string };
      t.ok(ping.destination === 'LOCAL' || ping.destination === 'REJECT', `a ping: answered by the node or rejected, never balanced (${ping.destination})`);

      // The IPVS table cleared by hand: the next sync's canary finds one of its virtual servers gone and rewrites the table.
      await n1.exec(['ipvsadm', '-C']);
      t.notMatch((await n1.exec(['ipvsadm', '-Ln'], true)).stdout, /10\.96\.0\.30:80/, 'ipvsadm -C emptied the table');
      await put('drain.json', [drainSvc, slice('drain', [{ port: 9090 }], [p1, p2])]);
      await waitFor(async () => /->\s+\S+:8080\s+Masq\s+1/.test((await n1.exec(['ipvsadm', '-Ln', '-t', '10.96.0.30:80'], true)).stdout), 'the IPVS table rewritten', { timeoutMs: 20_000 * SCALE });
      t.pass('the next sync found the table cleared and rewrote it (canary: one virtual server the agent wrote)');

      // Another scheduler on the real kernel: source hashing sends one client to one real server every time.
      await n1.stopAgent('SIGTERM');
      (n1.opts.config as Record<string, unknown>)['ipvsScheduler'] = 'sh';
      rmSync(proxyStatusFile(n1.runDir), { force: true });
      await n1.startAgent();
      await waitFor(() => (status()?.syncs ?? 0) >= 1, 'the first sync with the sh scheduler', { timeoutMs: 15_000 * SCALE });
      t.match((await n1.exec(['ipvsadm', '-Ln', '-t', '10.96.0.30:80'], true)).stdout, /TCP\s+10\.96\.0\.30:80 sh/, 'the running virtual server now says sh');
      const seen = names(await spread(8, async () => (await tcp(client.ns, '10.96.0.30', 80)).out));
      t.equal(seen.length, 1, `sh: eight connections from one client, one real server (${seen.join(', ')})`);
    });
  }
}
