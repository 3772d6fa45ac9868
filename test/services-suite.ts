/**
 * Services end to end, one suite run once per proxy mode (the
 * services-<mode>.priv.test.ts files): a virtual node whose agent runs the
 * proxy in that mode and follows a manifest directory; pods made through the
 * real CNI shim; backends serving TCP and UDP with socat (each answers its
 * name and the peer address it saw); a client pod; a host on the underlay.
 * Every case sends real packets and checks what arrived where.
 *
 * LoadBalancer VIPs come from 203.0.113.0/24: the underlay hosts route that
 * range to the node, as a load balancer in front of it would deliver
 * traffic with the destination unchanged (routes inside the lab's own
 * namespaces only).
 */
import { waitFor } from '../agent/src/testing/wait.js';
import t from 'tap';
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdirSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Lab, VNode } from '../agent/src/lab/lab.js';
import { newLab, shOk } from '../agent/src/testing/lab.js';
import { makeEndpointSlice, makeService, withField, type EndpointSpec, type JsonObject } from '../agent/src/testing/addresses.js';
import { proxyStatusFile, readProxyStatus, type ProxyStatus } from '../agent/src/node/proxy-status.js';
import { stringify as stringifyYaml } from 'yaml';

type Mode = 'iptables' | 'nftables';
interface Pod {
  name: string;
  ns: string;
  ip: string;
}

const EXT_IP = '192.168.77.200';
/** A second client on the underlay, outside the source ranges the firewall case allows. */
const EXT2_IP = '192.168.77.201';
const NODE_IP = '192.168.77.11';
/** The node's bridge (pod gateway) address: a local address that is not the primary one. */
const CBR0_IP = '10.244.1.1';
const LB_RANGE = '203.0.113.0/24';
/** An address in the service CIDR no Service has; the underlay gateway holds it, so a packet routed on gets an answer. */
const UNALLOCATED = '10.96.0.99';

export function servicesSuite(mode: Mode): void {
  let lab: Lab;
  let node: VNode;
  let manifests: string;
  let p1: Pod, p2: Pod, client: Pod;
  let ext: { name: string };
  let ext2: { name: string };
  const holders: ChildProcess[] = [];

  /** Pod namespace + CNI ADD through the shim, as a runtime does. */
  async function pod(name: string): Promise<Pod> {
    const ns = await lab.addNetns(name);
    const r = await node.cni('ADD', { containerId: `ctr-${name}`, netns: ns.path, ifName: 'eth0' }, node.cniConfig());
    if (r.exitCode !== 0) throw new Error(`CNI ADD ${name}: ${r.stdout}${r.stderr}`);
    const ip = (r.json as { ips: { address: string }[] }).ips[0]!.address.split('/')[0]!;
    return { name, ns: ns.name, ip };
  }

  function serve(p: Pod): void {
    // Each answers "<pod> <peer address it saw>", so the tests see both the endpoint chosen and the source IP.
    spawn('ip', ['netns', 'exec', p.ns, 'socat', 'TCP4-LISTEN:8080,reuseaddr,fork', `SYSTEM:echo ${p.name} $SOCAT_PEERADDR`], { stdio: 'ignore', detached: true }).unref();
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
    const r = await shOk(['ip', 'netns', 'exec', ns, 'socat', '-t2', '-T3', '-', `TCP4:${ip}:${port},connect-timeout=3`]);
    return { out: (r.exitCode === 0 ? r.stdout : r.stderr).trim(), ms: performance.now() - t0 };
  }

  /** One UDP request (optionally from a fixed source port): the reply line, or '' when none came. */
  async function udp(ns: string, ip: string, port: number, sourcePort?: number): Promise<string> {
    const addr = `UDP4:${ip}:${port}${sourcePort ? `,sourceport=${sourcePort},reuseaddr` : ''}`;
    const r = await shOk(['ip', 'netns', 'exec', ns, 'socat', '-t0.5', '-T2', '-', addr], 'q\n');
    return r.stdout.trim();
  }

  /** One HTTP GET with curl: the status code (0 when nothing answered) and the body. */
  async function httpGet(ns: string, url: string): Promise<{ code: number; body: string }> {
    const r = await shOk(['ip', 'netns', 'exec', ns, 'curl', '-s', '-m', '3', '-o', '-', '-w', '\n%{http_code}', url]);
    const lines = r.stdout.split('\n');
    const code = Number(lines.pop() ?? '0') || 0;
    return { code, body: lines.join('\n') };
  }

  /** The node's ruleset as text (iptables-save, or our nft table). */
  async function ruleset(): Promise<string> {
    const r = mode === 'iptables' ? await node.exec(['iptables-save'], true) : await node.exec(['nft', 'list', 'table', 'ip', 'kube-proxy'], true);
    return r.stdout;
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
      const who = (await one()).split(' ')[0] || '(none)';
      seen.set(who, (seen.get(who) ?? 0) + 1);
    }
    return seen;
  }
  const names = (m: Map<string, number>) => [...m.keys()].sort();

  function put(file: string, objects: JsonObject[]): void {
    // YAML files hold one document per object, as users write them for kubectl apply.
    const text = file.endsWith('.yaml') ? objects.map((o) => stringifyYaml(o)).join('---\n') : JSON.stringify(objects);
    writeFileSync(`${manifests}/.${file}.tmp`, text);
    renameSync(`${manifests}/.${file}.tmp`, `${manifests}/${file}`);
  }

  const status = (): ProxyStatus | null => readProxyStatus(proxyStatusFile(node.runDir));

  /** Waits until the agent reports `spn` applied with exactly these endpoints ("ip:port"). */
  async function waitApplied(spn: string, endpoints: string[]): Promise<void> {
    const want = JSON.stringify([...endpoints].sort());
    const deadline = Date.now() + 10_000;
    while (Date.now() < deadline) {
      const s = status();
      if (s && JSON.stringify(s.applied[spn] ?? null) === want) return;
      await sleep(50);
    }
    throw new Error(`${spn} never applied with ${want}; status: ${JSON.stringify(status()?.applied[spn])}`);
  }

  const slice = (service: string, ports: { name?: string; port: number; protocol?: 'TCP' | 'UDP' }[], pods: Pod[], extra: Partial<EndpointSpec> = {}) =>
    makeEndpointSlice({ service, ports, endpoints: pods.map((p) => ({ ip: p.ip, nodeName: 'n1', ...extra })) });

  const WEB_PORTS = [
    { name: 'http', port: 8080 },
    { name: 'dns', port: 5353, protocol: 'UDP' as const },
  ];
  const webObjects = (pods: Pod[]) => [
    makeService({
      name: 'web',
      type: 'NodePort',
      clusterIP: '10.96.0.10',
      ports: [
        { name: 'http', port: 80, targetPort: 8080, nodePort: 30080 },
        { name: 'dns', port: 53, targetPort: 5353, protocol: 'UDP', nodePort: 30053 },
      ],
    }),
    slice('web', WEB_PORTS, pods),
  ];

  t.before(async () => {
    lab = await newLab(mode === 'iptables' ? 'si' : 'sn');
    manifests = `${lab.runRoot}/manifests`;
    mkdirSync(manifests, { recursive: true });
    node = await lab.addNode('n1', {
      podCIDR: '10.244.1.0/24',
      clusterCIDR: '10.244.0.0/16',
      config: { proxyMode: mode, manifestsDir: manifests, proxyMinSyncMs: 100, serviceCIDR: '10.96.0.0/16' },
    });
    await node.startAgent();
    [p1, p2, client] = [await pod('pod1'), await pod('pod2'), await pod('client')];
    ext = await lab.addUnderlayHost('ext', `${EXT_IP}/24`);
    ext2 = await lab.addUnderlayHost('ext2', `${EXT2_IP}/24`);
    for (const h of [ext, ext2]) await shOk(['ip', '-n', h.name, 'route', 'add', LB_RANGE, 'via', NODE_IP]);
    await shOk(['ip', '-n', lab.ul, 'addr', 'add', `${UNALLOCATED}/32`, 'dev', 'ul0']);
    serve(p1);
    serve(p2);
    for (const p of [p1, p2]) {
      const deadline = Date.now() + 5000;
      while (!(await tcp(client.ns, p.ip, 8080)).out.startsWith(p.name)) {
        if (Date.now() > deadline) throw new Error(`${p.name} does not serve on ${p.ip}:8080`);
        await sleep(50);
      }
    }
    put('web.json', webObjects([p1, p2]));
    await waitApplied('default/web:http', [`${p1.ip}:8080`, `${p2.ip}:8080`]);
  });
  t.teardown(async () => {
    for (const h of holders) h.kill('SIGKILL');
    await lab?.destroy();
  });

  t.test(`${mode}: TCP and UDP to a ClusterIP reach every endpoint, from a pod and from the node itself`, async (t) => {
    const both = ['pod1', 'pod2'];
    t.same(names(await spread(16, async () => (await tcp(client.ns, '10.96.0.10', 80)).out, both)), both, 'TCP from the client pod');
    t.same(names(await spread(12, () => udp(client.ns, '10.96.0.10', 53), both)), both, 'UDP from the client pod');
    t.same(names(await spread(16, async () => (await tcp(node.ns, '10.96.0.10', 80)).out, both)), both, 'TCP from the node');
    t.same(names(await spread(12, () => udp(node.ns, '10.96.0.10', 53), both)), both, 'UDP from the node');
    // The client's own address reaches the backend (pod-to-Service traffic inside the cluster CIDR is not masqueraded).
    t.match((await tcp(client.ns, '10.96.0.10', 80)).out, new RegExp(`^pod[12] ${client.ip.replace(/\./g, '\\.')}$`));
  });

  t.test(`${mode}: a ping to a ClusterIP gets no reply`, async (t) => {
    const t0 = performance.now();
    const r = await shOk(['ip', 'netns', 'exec', client.ns, 'ping', '-n', '-c1', '-W2', '10.96.0.10']);
    const ms = performance.now() - t0;
    t.not(r.exitCode, 0);
    t.notMatch(r.stdout, /bytes from/, 'no echo reply');
    if (mode === 'nftables') {
      // kube-proxy's nftables mode rejects traffic to a ClusterIP it does not serve: the ping fails at once.
      t.match(r.stdout, /Destination Port Unreachable/);
      t.ok(ms < 1500, `rejected in ${Math.round(ms)} ms`);
    } else {
      // iptables mode only DNATs TCP/UDP/SCTP: the ICMP echo is routed on to the node's gateway and lost.
      t.match(r.stdout, /100% packet loss/);
      t.ok(ms >= 1900, `waited ${Math.round(ms)} ms for nothing`);
    }
  });

  t.test(`${mode}: a Service with no endpoints refuses at once`, async (t) => {
    put('empty.json', [makeService({ name: 'empty', clusterIP: '10.96.0.12', ports: [{ port: 80, targetPort: 8080 }] }), makeEndpointSlice({ service: 'empty', ports: [{ port: 8080 }], endpoints: [] })]);
    await waitApplied('default/empty', []);
    const r = await tcp(client.ns, '10.96.0.12', 80);
    t.match(r.out, /Connection refused/);
    t.ok(r.ms < 1500, `refused in ${Math.round(r.ms)} ms`);
    const u = await udp(client.ns, '10.96.0.12', 80);
    t.equal(u, '', 'no UDP answer either');
  });

  t.test(`${mode}: NodePort from a host on the underlay reaches every endpoint, masqueraded`, async (t) => {
    const seen = new Set<string>();
    for (let i = 0; i < 16; i++) {
      const { out } = await tcp(ext.name, '192.168.77.11', 30080);
      seen.add(out.split(' ')[0]!);
      // Cluster policy: the backend sees the node (masqueraded), not the external client.
      t.notMatch(out, new RegExp(`${EXT_IP.replace(/\./g, '\\.')}$`), `answer ${i}: ${out}`);
    }
    t.same([...seen].sort(), ['pod1', 'pod2']);
    t.same(names(await spread(12, () => udp(ext.name, '192.168.77.11', 30053), ['pod1', 'pod2'])), ['pod1', 'pod2'], 'UDP NodePort');
  });

  t.test(`${mode}: externalTrafficPolicy Local preserves the client's source IP`, async (t) => {
    put('local.json', [
      makeService({ name: 'local', type: 'NodePort', clusterIP: '10.96.0.13', externalTrafficPolicy: 'Local', ports: [{ port: 80, targetPort: 8080, nodePort: 30081 }] }),
      slice('local', [{ port: 8080 }], [p1]),
    ]);
    await waitApplied('default/local', [`${p1.ip}:8080`]);
    for (let i = 0; i < 4; i++) {
      const { out } = await tcp(ext.name, '192.168.77.11', 30081);
      t.match(out, new RegExp(`^pod1 ${EXT_IP.replace(/\./g, '\\.')}$`), `answer ${i}: ${out}`);
    }
  });

  t.test(`${mode}: ClientIP affinity sticks to one endpoint`, async (t) => {
    put('sticky.yaml', [
      makeService({ name: 'sticky', clusterIP: '10.96.0.11', affinityTimeoutSeconds: 60, ports: [{ port: 80, targetPort: 8080 }] }),
      slice('sticky', [{ port: 8080 }], [p1, p2]),
    ]);
    await waitApplied('default/sticky', [`${p1.ip}:8080`, `${p2.ip}:8080`]);
    const seen = await spread(12, async () => (await tcp(client.ns, '10.96.0.11', 80)).out);
    t.equal(seen.size, 1, `one endpoint for every connection: ${JSON.stringify([...seen])}`);
    t.ok(['pod1', 'pod2'].includes([...seen.keys()][0]!));
  });

  t.test(`${mode}: hairpin, a backend reaching itself through its own Service`, async (t) => {
    const seen = await spread(16, async () => (await tcp(p1.ns, '10.96.0.10', 80)).out, ['pod1', 'pod2']);
    t.same(names(seen), ['pod1', 'pod2'], JSON.stringify([...seen]));
  });

  t.test(`${mode}: after an endpoint is removed no new connection goes to it`, async (t) => {
    put('shrink.json', [makeService({ name: 'shrink', clusterIP: '10.96.0.15', ports: [{ port: 80, targetPort: 8080 }] }), slice('shrink', [{ port: 8080 }], [p1, p2])]);
    await waitApplied('default/shrink', [`${p1.ip}:8080`, `${p2.ip}:8080`]);
    t.same(names(await spread(12, async () => (await tcp(client.ns, '10.96.0.15', 80)).out, ['pod1', 'pod2'])), ['pod1', 'pod2']);
    put('shrink.json', [makeService({ name: 'shrink', clusterIP: '10.96.0.15', ports: [{ port: 80, targetPort: 8080 }] }), slice('shrink', [{ port: 8080 }], [p2])]);
    await waitApplied('default/shrink', [`${p2.ip}:8080`]);
    t.same(names(await spread(16, async () => (await tcp(client.ns, '10.96.0.15', 80)).out)), ['pod2']);
  });

  t.test(`${mode}: a UDP client keeps working after its endpoint is replaced (conntrack cleanup)`, async (t) => {
    const svc = makeService({ name: 'udp1', clusterIP: '10.96.0.14', ports: [{ port: 53, targetPort: 5353, protocol: 'UDP' }] });
    const udpPort = [{ port: 5353, protocol: 'UDP' as const }];
    put('udp1.json', [svc, slice('udp1', udpPort, [p1])]);
    await waitApplied('default/udp1', [`${p1.ip}:5353`]);
    // The same 5-tuple every time: one conntrack entry, as a long-lived UDP client (a resolver) has.
    for (let i = 0; i < 3; i++) t.match(await udp(client.ns, '10.96.0.14', 53, 40053), /^pod1 /, `before, request ${i}`);
    put('udp1.json', [svc, slice('udp1', udpPort, [p2])]);
    await waitApplied('default/udp1', [`${p2.ip}:5353`]);
    // Without the cleanup the existing entry would keep sending this flow to pod1.
    for (let i = 0; i < 3; i++) t.match(await udp(client.ns, '10.96.0.14', 53, 40053), /^pod2 /, `after, request ${i}`);
  });

  t.test(`${mode}: an invalid Service is rejected naming the field; the others keep working`, async (t) => {
    const bad = withField(makeService({ name: 'bad', clusterIP: '10.96.0.17', ports: [{ port: 80 }] }), 'spec.ports[0].port', 70000);
    put('bad.json', [bad]);
    const deadline = Date.now() + 10_000;
    while (Date.now() < deadline && !(status()?.rejected ?? []).some((r) => r.key === 'default/bad')) await sleep(50);
    const rej = (status()?.rejected ?? []).find((r) => r.key === 'default/bad');
    t.match(rej, { kind: 'Service', field: 'spec.ports[0].port' });
    writeFileSync(`${manifests}/broken.json`, '{"kind": ');
    await waitFor(() => Object.keys(status()?.manifestErrors ?? {}).some((f) => f.endsWith('broken.json')), 'the agent to report broken.json');
    t.same(names(await spread(8, async () => (await tcp(client.ns, '10.96.0.10', 80)).out, ['pod1', 'pod2'])), ['pod1', 'pod2'], 'web unaffected');
  });

  t.test(`${mode}: a LoadBalancer is served on its ingress IP (not an ipMode Proxy one), its ClusterIP and its NodePort`, async (t) => {
    const lb = withField(
      withField(makeService({ name: 'lb', type: 'LoadBalancer', clusterIP: '10.96.0.20', ports: [{ port: 80, targetPort: 8080, nodePort: 30090 }] }), 'spec.allocateLoadBalancerNodePorts', true),
      'status',
      { loadBalancer: { ingress: [{ ip: '203.0.113.10', ipMode: 'VIP' }, { ip: '203.0.113.11', ipMode: 'Proxy' }] } },
    );
    put('lb.json', [lb, slice('lb', [{ port: 8080 }], [p1, p2])]);
    await waitApplied('default/lb', [`${p1.ip}:8080`, `${p2.ip}:8080`]);
    const both = ['pod1', 'pod2'];
    t.same(names(await spread(12, async () => (await tcp(ext.name, '203.0.113.10', 80)).out, both)), both, 'the VIP from the underlay host');
    t.notMatch((await tcp(ext.name, '203.0.113.10', 80)).out, new RegExp(`${EXT_IP.replace(/\./g, '\\.')}$`), 'Cluster policy: masqueraded');
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
    put('lbfw.json', [fw, slice('lbfw', [{ port: 8080 }], [p1])]);
    await waitApplied('default/lbfw', [`${p1.ip}:8080`]);
    t.match((await tcp(ext.name, '203.0.113.12', 80)).out, /^pod1 /, `${EXT_IP} is in the ranges`);
    const blocked = await tcp(ext2.name, '203.0.113.12', 80);
    t.notMatch(blocked.out, /^pod1/, `${EXT2_IP} is not: no answer (${blocked.out})`);
    t.ok(blocked.ms >= 2500, `dropped, not refused: waited ${Math.round(blocked.ms)} ms`);
    t.match((await tcp(ext2.name, NODE_IP, 30091)).out, /^pod1 /, 'the NodePort is not subject to the ranges (as kube-proxy)');
    t.match((await tcp(client.ns, '10.96.0.21', 80)).out, /^pod1 /, 'neither is the ClusterIP');
  });

  t.test(`${mode}: allocateLoadBalancerNodePorts false: the VIP works, and there is no NodePort`, async (t) => {
    const lb = withField(
      withField(makeService({ name: 'lbnonp', type: 'LoadBalancer', clusterIP: '10.96.0.22', ports: [{ port: 80, targetPort: 8080 }] }), 'spec.allocateLoadBalancerNodePorts', false),
      'status',
      { loadBalancer: { ingress: [{ ip: '203.0.113.13' }] } },
    );
    put('lbnonp.json', [lb, slice('lbnonp', [{ port: 8080 }], [p1])]);
    await waitApplied('default/lbnonp', [`${p1.ip}:8080`]);
    t.match((await tcp(ext.name, '203.0.113.13', 80)).out, /^pod1 /, 'the VIP');
    t.match(await ruleset(), /default\/lbnonp/, 'the Service has rules');
    // The NodePort dispatch: KUBE-NODEPORTS rules, or the @service-nodeports map's elements.
    const nodePorts =
      mode === 'iptables'
        ? (await ruleset()).split('\n').filter((l) => l.startsWith('-A KUBE-NODEPORTS ')).join('\n')
        : (await node.exec(['nft', 'list', 'map', 'ip', 'kube-proxy', 'service-nodeports'], true)).stdout;
    t.match(nodePorts, /default\/web/, 'the NodePort dispatch as listed holds the other Services');
    t.notMatch(nodePorts, /default\/lbnonp/, 'but nothing of this one');
  });

  t.test(`${mode}: externalTrafficPolicy Local: the healthCheckNodePort answers 200 with local endpoints and 503 without`, async (t) => {
    const svc = (eps: Pod[], nodeName: string) => {
      const s = withField(
        withField(makeService({ name: 'lblocal', type: 'LoadBalancer', clusterIP: '10.96.0.23', externalTrafficPolicy: 'Local', ports: [{ port: 80, targetPort: 8080, nodePort: 30093 }] }), 'spec.healthCheckNodePort', 32100),
        'status',
        { loadBalancer: { ingress: [{ ip: '203.0.113.14' }] } },
      );
      return [s, slice('lblocal', [{ port: 8080 }], eps, { nodeName })];
    };
    put('lblocal.json', svc([p1, p2], 'n1'));
    await waitApplied('default/lblocal', [`${p1.ip}:8080`, `${p2.ip}:8080`]);
    let r = await httpGet(ext.name, `http://${NODE_IP}:32100/healthz`);
    for (let i = 0; i < 20 && r.code === 0; i++) {
      await sleep(100); // the server opens right after the sync
      r = await httpGet(ext.name, `http://${NODE_IP}:32100/healthz`);
    }
    t.equal(r.code, 200, `with local endpoints: ${r.body}`);
    t.same(JSON.parse(r.body || 'null'), { service: { namespace: 'default', name: 'lblocal' }, localEndpoints: 2, serviceProxyHealthy: true });
    t.match((await tcp(ext.name, '203.0.113.14', 80)).out, new RegExp(`^pod[12] ${EXT_IP.replace(/\./g, '\\.')}$`), 'Local policy keeps the client\'s source IP on the VIP');

    // The same endpoints, now on another node: none local.
    put('lblocal.json', svc([p1, p2], 'n2'));
    await waitFor(async () => (await httpGet(ext.name, `http://${NODE_IP}:32100/`)).code === 503, 'the health check to turn 503');
    r = await httpGet(ext.name, `http://${NODE_IP}:32100/`);
    t.same(JSON.parse(r.body || 'null'), { service: { namespace: 'default', name: 'lblocal' }, localEndpoints: 0, serviceProxyHealthy: true }, 'no local endpoint: 503');
    const dropped = await tcp(ext.name, '203.0.113.14', 80);
    t.notMatch(dropped.out, /^pod/, 'outside traffic to the VIP is dropped without a local endpoint');

    rmSync(`${manifests}/lblocal.json`);
    await waitFor(async () => (await httpGet(ext.name, `http://${NODE_IP}:32100/`)).code === 0, 'the health check server to close with its Service');
    t.pass('closed with the Service');
  });

  t.test(`${mode}: a Service labelled service.kubernetes.io/service-proxy-name gets no rules`, async (t) => {
    const other = withField(makeService({ name: 'other', type: 'NodePort', clusterIP: '10.96.0.25', ports: [{ port: 80, targetPort: 8080, nodePort: 30095 }] }), 'metadata.labels', { 'service.kubernetes.io/service-proxy-name': 'someone-else' });
    put('other.json', [other, slice('other', [{ port: 8080 }], [p1])]);
    t.match(await waitIgnored('default/other'), /service-proxy-name=someone-else/);
    t.notOk(status()?.applied['default/other'], 'not applied');
    t.notMatch((await tcp(client.ns, '10.96.0.25', 80)).out, /^pod/, 'its ClusterIP does not answer');
    t.notMatch((await tcp(ext.name, NODE_IP, 30095)).out, /^pod/, 'nor its NodePort');
    t.notMatch(await ruleset(), /default\/other/, 'nothing of it in the ruleset');
  });

  t.test(`${mode}: NodePorts on the bridge address and on 127.0.0.1: only iptables mode serves them by default`, async (t) => {
    t.match((await tcp(client.ns, NODE_IP, 30080)).out, /^pod[12] /, 'the node IP serves NodePorts in both modes');
    const bridge = await tcp(client.ns, CBR0_IP, 30080);
    const local = await tcp(node.ns, '127.0.0.1', 30080);
    if (mode === 'nftables') {
      // nftables mode's default is the node's primary IP (eth0's, which holds the default route).
      t.match(bridge.out, /Connection refused/, `not on cbr0's ${CBR0_IP}: ${bridge.out}`);
      t.match(local.out, /Connection refused/, `not on 127.0.0.1: ${local.out}`);
    } else {
      // kube-proxy's iptables default: every local address, 127.0.0.1 included (route_localnet).
      t.match(bridge.out, /^pod[12] /, `on cbr0's ${CBR0_IP} too`);
      t.match(local.out, /^pod[12] /, 'and on 127.0.0.1');
    }
  });

  t.test(`${mode}: an address in the service CIDR that no Service has`, async (t) => {
    const r = await tcp(node.ns, UNALLOCATED, 80);
    if (mode === 'nftables') {
      // Dropped at the node: the gateway, which holds the address, never sees it.
      t.notMatch(r.out, /Connection refused/, r.out);
      t.ok(r.ms >= 2500, `dropped: waited ${Math.round(r.ms)} ms`);
    } else {
      // iptables mode routes it on; the gateway holds it and refuses.
      t.match(r.out, /Connection refused/, r.out);
    }
  });

  t.test(`${mode}: the agent killed and restarted keeps established connections and the rules`, async (t) => {
    put('echo.json', [makeService({ name: 'echo', clusterIP: '10.96.0.16', ports: [{ port: 90, targetPort: 9090 }] }), slice('echo', [{ port: 9090 }], [p1])]);
    await waitApplied('default/echo', [`${p1.ip}:9090`]);
    // A long-lived connection through the ClusterIP: socat in the client pod, fed line by line.
    const conn = spawn('ip', ['netns', 'exec', client.ns, 'socat', '-', 'TCP4:10.96.0.16:90'], { stdio: ['pipe', 'pipe', 'pipe'] });
    holders.push(conn);
    let got = '';
    conn.stdout.on('data', (d: Buffer) => (got += d.toString()));
    const roundTrip = async (line: string): Promise<boolean> => {
      conn.stdin.write(`${line}\n`);
      const deadline = Date.now() + 3000;
      while (Date.now() < deadline) {
        if (got.includes(line)) return true;
        await sleep(20);
      }
      return false;
    };
    t.ok(await roundTrip('before'), 'echo before the crash');
    await node.stopAgent('SIGKILL');
    t.ok(await roundTrip('while-down'), 'the kernel keeps forwarding while no agent runs');
    rmSync(proxyStatusFile(node.runDir), { force: true });
    await node.startAgent();
    const deadline = Date.now() + 10_000;
    while (Date.now() < deadline && !((status()?.ready ?? false) && (status()?.syncs ?? 0) >= 1 && status()?.lastSync?.reason === 'first')) await sleep(50);
    t.equal(status()?.lastSync?.reason, 'first', 'the restarted agent ran its first (full) sync');
    t.ok(await roundTrip('after-restart'), 'the established connection survives the full resync');
    t.same(names(await spread(8, async () => (await tcp(client.ns, '10.96.0.10', 80)).out, ['pod1', 'pod2'])), ['pod1', 'pod2'], 'new connections too');
    conn.kill('SIGKILL');
  });
}
