/**
 * Services end to end, one suite run once per proxy mode (the
 * services-<mode>.priv.test.ts files): a virtual node whose agent runs the
 * proxy in that mode and follows a manifest directory; pods made through the
 * real CNI shim; backends serving TCP and UDP with socat (each answers its
 * name and the peer address it saw); a client pod; a host on the underlay.
 * Every case sends real packets and checks what arrived where.
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

export function servicesSuite(mode: Mode): void {
  let lab: Lab;
  let node: VNode;
  let manifests: string;
  let p1: Pod, p2: Pod, client: Pod;
  let ext: { name: string };
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

  /** The endpoint names seen over n requests (first word of each answer), with counts. */
  async function spread(n: number, one: () => Promise<string>): Promise<Map<string, number>> {
    const seen = new Map<string, number>();
    for (let i = 0; i < n; i++) {
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
      config: { proxyMode: mode, manifestsDir: manifests, proxyMinSyncMs: 100 },
    });
    await node.startAgent();
    [p1, p2, client] = [await pod('pod1'), await pod('pod2'), await pod('client')];
    ext = await lab.addUnderlayHost('ext', `${EXT_IP}/24`);
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
    t.same(names(await spread(16, async () => (await tcp(client.ns, '10.96.0.10', 80)).out)), both, 'TCP from the client pod');
    t.same(names(await spread(12, () => udp(client.ns, '10.96.0.10', 53))), both, 'UDP from the client pod');
    t.same(names(await spread(16, async () => (await tcp(node.ns, '10.96.0.10', 80)).out)), both, 'TCP from the node');
    t.same(names(await spread(12, () => udp(node.ns, '10.96.0.10', 53))), both, 'UDP from the node');
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
    t.same(names(await spread(12, () => udp(ext.name, '192.168.77.11', 30053))), ['pod1', 'pod2'], 'UDP NodePort');
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
    const seen = await spread(16, async () => (await tcp(p1.ns, '10.96.0.10', 80)).out);
    t.same(names(seen), ['pod1', 'pod2'], JSON.stringify([...seen]));
  });

  t.test(`${mode}: after an endpoint is removed no new connection goes to it`, async (t) => {
    put('shrink.json', [makeService({ name: 'shrink', clusterIP: '10.96.0.15', ports: [{ port: 80, targetPort: 8080 }] }), slice('shrink', [{ port: 8080 }], [p1, p2])]);
    await waitApplied('default/shrink', [`${p1.ip}:8080`, `${p2.ip}:8080`]);
    t.same(names(await spread(12, async () => (await tcp(client.ns, '10.96.0.15', 80)).out)), ['pod1', 'pod2']);
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
    t.same(names(await spread(8, async () => (await tcp(client.ns, '10.96.0.10', 80)).out)), ['pod1', 'pod2'], 'web unaffected');
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
    t.same(names(await spread(8, async () => (await tcp(client.ns, '10.96.0.10', 80)).out)), ['pod1', 'pod2'], 'new connections too');
    conn.kill('SIGKILL');
  });
}
