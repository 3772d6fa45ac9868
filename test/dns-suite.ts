/**
 * Cluster DNS end to end (issue 30), once per proxy mode (dns-<mode>.priv.test.ts): `nodenet control-plane`
 * creates CoreDNS's objects at start (the `coredns` Deployment of 2 `nodenet dns` replicas, its ServiceAccount
 * and ClusterRole, the `kube-dns` Service at 10.96.0.10); three nodes whose agents run the Pods the scheduler
 * binds to them (the embedded kubelet) with `--cluster-dns 10.96.0.10`, Services in the given proxy mode, and
 * the VXLAN overlay. The DNS replicas are in-cluster clients of the API through the `kubernetes` ClusterIP,
 * with their own ServiceAccount's token.
 *
 * The cases are Kubernetes' DNS conformance cases (test/e2e/network/dns.go), resolved with getent (glibc, the
 * Pod's /etc/resolv.conf and /etc/hosts, as an application resolves) and dig (dnsutils) inside a Pod: a
 * `sleep` container whose mount, network and UTS namespaces the test enters with nsenter (nodenet has no
 * `kubectl exec`; entering the container's namespaces is what a runtime's exec does). Real packets: from the
 * Pod through the node's Service rules to a DNS replica on any node, and back.
 * - the cluster's own names (kubernetes.default, .svc, .svc.cluster.local) over UDP and TCP, by search path;
 * - /etc/hosts: the Pod's own name and its hostAliases;
 * - Services: A, SRV for a named port, PTR for the ClusterIP; a headless Service's A per ready Pod and SRV;
 * - a Pod's hostname and subdomain under a headless Service: its A record, its own hostname;
 * - ExternalName: the CNAME, a change of its target, then the Service turned ClusterIP;
 * - a Pod's A record (`a-b-c-d.<ns>.pod.cluster.local`);
 * - dnsPolicy None with a dnsConfig: the resolv.conf written, a short name resolved by its searches;
 * - outside the cluster domain, with no upstream (the lab's nodes have none): SERVFAIL at once;
 * - a DNS replica killed (SIGKILL): every query through the kube-dns ClusterIP is still answered.
 */
import t from 'tap';
import type { Lab, LabControlPlane, VNode } from '../agent/src/lab/lab.js';
import { newLab, runner } from '../agent/src/testing/lab.js';
import { waitFor } from '../agent/src/testing/wait.js';

type Mode = 'iptables' | 'nftables';
const NODES = ['n1', 'n2', 'n3'];
const NS = 'dns';

export function dnsSuite(mode: Mode): void {
  let lab: Lab;
  let cp: LabControlPlane;
  let kubeconfig = '';
  const nodes: VNode[] = [];
  /** A sleep argument no other Pod of any run uses: how the test finds its Pods' processes. */
  const marker = (n: number) => String(mode === 'iptables' ? 86_400 + n : 86_500 + n);

  const kubectl = async (args: readonly string[], input?: string) => {
    const r = await runner.run(['kubectl', '--kubeconfig', kubeconfig, '--request-timeout=20s', ...args], { allowFailure: true, timeoutMs: 60_000, ...(input === undefined ? {} : { input }) });
    if (r.exitCode !== 0) throw new Error(`kubectl ${args.join(' ')}: ${r.stderr}${r.stdout}`);
    return r.stdout;
  };
  const apply = (o: object) => kubectl(['apply', '-f', '-'], JSON.stringify(o));

  async function picture(): Promise<string> {
    const r = await runner.run(['kubectl', '--kubeconfig', kubeconfig, 'get', 'pods,svc,endpointslices', '-A', '-o', 'wide'], { allowFailure: true });
    const logs = await runner.run(['kubectl', '--kubeconfig', kubeconfig, 'logs', '-n', 'kube-system', '-l', 'k8s-app=kube-dns', '--tail=5'], { allowFailure: true });
    return `\n${r.stdout}${r.stderr}\ndns logs:\n${logs.stdout}${logs.stderr}`;
  }
  async function until(what: string, cond: () => Promise<boolean> | boolean, timeoutMs = 60_000): Promise<void> {
    try {
      await waitFor(cond, what, { timeoutMs, intervalMs: 200 });
    } catch (e) {
      throw new Error(`${e instanceof Error ? e.message : String(e)}${await picture()}`);
    }
  }

  /** The host pid of a Pod's `sleep <marker>` container. */
  async function pidOf(mark: string): Promise<number> {
    let pid = 0;
    await until(`the process "sleep ${mark}"`, async () => {
      const r = await runner.run(['pgrep', '-x', '-f', `sleep ${mark}`], { allowFailure: true });
      pid = Number(r.stdout.trim().split('\n')[0] || 0);
      return pid > 0;
    });
    return pid;
  }
  /** Runs argv inside the container: its mount (its /etc/resolv.conf and /etc/hosts), network and UTS namespaces. */
  async function inPod(pid: number, argv: readonly string[]): Promise<{ code: number; out: string; err: string }> {
    const r = await runner.run(['nsenter', '-t', String(pid), '-m', '-n', '-u', '--', ...argv], { allowFailure: true, timeoutMs: 30_000 });
    return { code: r.exitCode, out: r.stdout.trim(), err: r.stderr.trim() };
  }
  const dig = async (pid: number, args: readonly string[]) => (await inPod(pid, ['dig', '+short', '+time=2', '+tries=3', ...args])).out;

  function pod(name: string, mark: string, spec: object = {}, labels: Record<string, string> = {}): object {
    return {
      apiVersion: 'v1', kind: 'Pod', metadata: { name, namespace: NS, labels },
      spec: { terminationGracePeriodSeconds: 1, containers: [{ name: 'c', image: 'nodenet/host', command: ['sleep', mark] }], ...spec },
    };
  }
  async function podIP(name: string): Promise<string> {
    let ip = '';
    await until(`Pod ${name} running with an IP`, async () => {
      ip = (await kubectl(['get', 'pod', '-n', NS, name, '-o', 'jsonpath={.status.phase} {.status.podIP}'])).trim();
      const [phase, addr] = ip.split(' ');
      ip = addr ?? '';
      return phase === 'Running' && /^10\.244\./.test(ip);
    });
    return ip;
  }

  let client = 0;
  let clientIP = '';

  t.before(async () => {
    lab = await newLab(mode === 'iptables' ? 'di' : 'dn');
    cp = await lab.startControlPlane({ nodes: NODES });
    kubeconfig = (await cp.localAccess()).kubeconfig;
    const cfg = { proxyMode: mode, proxyMinSyncMs: 100, runPods: true, backend: 'vxlan' };
    for (const n of NODES) nodes.push(await lab.addNode(n, { clusterCIDR: '10.244.0.0/16', config: cfg }));
    await Promise.all(nodes.map((n) => n.startAgent()));
    await until('the coredns Deployment: 2 replicas ready', async () => (await kubectl(['get', 'deployment', '-n', 'kube-system', 'coredns', '-o', 'jsonpath={.status.readyReplicas}'])).trim() === '2', 120_000);
    await kubectl(['create', 'namespace', NS]);
    await apply(pod('client', marker(0), { hostAliases: [{ ip: '192.0.2.7', hostnames: ['alias-one', 'alias-two'] }] }));
    clientIP = await podIP('client');
    client = await pidOf(marker(0));
  });
  t.teardown(async () => {
    await lab?.destroy();
  });

  t.test('the cluster\'s own names, by the search path, over UDP and TCP (dns.go "should provide DNS for the cluster")', async (t) => {
    const resolv = (await inPod(client, ['cat', '/etc/resolv.conf'])).out;
    t.match(resolv, /^nameserver 10\.96\.0\.10$/m, 'the kubelet points the Pod at kube-dns');
    t.match(resolv, new RegExp(`^search ${NS}\\.svc\\.cluster\\.local svc\\.cluster\\.local cluster\\.local\\b`, 'm'), 'ClusterFirst\'s search path');
    t.match(resolv, /^options ndots:5$/m);
    for (const name of ['kubernetes.default', 'kubernetes.default.svc', 'kubernetes.default.svc.cluster.local']) {
      t.equal((await inPod(client, ['getent', 'hosts', name])).out.split(/\s+/)[0], '10.96.0.1', `getent hosts ${name}`);
      t.equal(await dig(client, ['+search', name]), '10.96.0.1', `dig +search ${name} (UDP)`);
      t.equal(await dig(client, ['+tcp', '+search', name]), '10.96.0.1', `dig +tcp +search ${name}`);
    }
    t.equal(await dig(client, ['TXT', 'dns-version.cluster.local']), '"1.1.0"', 'the schema version');
  });

  t.test('/etc/hosts: the Pod\'s own name and its hostAliases (dns.go "should provide /etc/hosts entries for the cluster")', async (t) => {
    t.equal((await inPod(client, ['getent', 'hosts', 'client'])).out.split(/\s+/)[0], clientIP, 'its own name, its IP');
    t.equal((await inPod(client, ['hostname'])).out, 'client');
    t.match((await inPod(client, ['getent', 'hosts', 'alias-two'])).out, /^192\.0\.2\.7\s/, 'a hostAlias');
  });

  t.test('Services: A, SRV, PTR; a headless Service\'s A per ready Pod and SRV (dns.go "should provide DNS for services")', async (t) => {
    await apply(pod('web-a', marker(1), {}, { app: 'web' }));
    await apply(pod('web-b', marker(2), {}, { app: 'web' }));
    const ips = [await podIP('web-a'), await podIP('web-b')].sort();
    await apply({ apiVersion: 'v1', kind: 'Service', metadata: { name: 'test-service-2', namespace: NS }, spec: { selector: { app: 'web' }, ports: [{ name: 'http', port: 80, targetPort: 8080 }] } });
    await apply({ apiVersion: 'v1', kind: 'Service', metadata: { name: 'dns-test-service', namespace: NS }, spec: { clusterIP: 'None', selector: { app: 'web' }, ports: [{ name: 'http', port: 80 }] } });
    const clusterIP = (await kubectl(['get', 'svc', '-n', NS, 'test-service-2', '-o', 'jsonpath={.spec.clusterIP}'])).trim();
    const fqdn = `test-service-2.${NS}.svc.cluster.local`;
    await until('the Service\'s A record', async () => (await dig(client, [fqdn])) === clusterIP, 10_000);
    t.pass(`A ${fqdn} -> ${clusterIP}, within a second or so of its creation`);
    t.equal((await inPod(client, ['getent', 'hosts', 'test-service-2'])).out.split(/\s+/)[0], clusterIP, 'getent by the short name (search path)');
    t.equal(await dig(client, ['SRV', `_http._tcp.${fqdn}`]), `0 100 80 ${fqdn}.`, 'SRV for the named port');
    t.equal(await dig(client, ['-x', clusterIP]), `${fqdn}.`, 'PTR of the ClusterIP');
    const headless = `dns-test-service.${NS}.svc.cluster.local`;
    await until('the headless Service\'s A records: both Pods', async () => (await dig(client, [headless])).split('\n').sort().join(',') === ips.join(','), 10_000);
    t.pass(`A ${headless} -> ${ips.join(', ')}`);
    const srv = (await dig(client, ['SRV', `_http._tcp.${headless}`])).split('\n').sort();
    t.same(srv, ips.map((ip) => `0 50 80 ${ip.replace(/\./g, '-')}.${headless}.`).sort(), 'SRV per ready endpoint');
    // The Pod is an endpoint of both Services: a PTR for each, as CoreDNS answers.
    t.same((await dig(client, ['-x', ips[0]!])).split('\n').sort(), [`${ips[0]!.replace(/\./g, '-')}.${headless}.`, `${ips[0]!.replace(/\./g, '-')}.${fqdn}.`].sort(), 'PTR of an endpoint, one per Service it serves');
    t.equal((await inPod(client, ['dig', '+time=2', `nothere.${NS}.svc.cluster.local`])).out.match(/status: (\w+)/)?.[1], 'NXDOMAIN', 'a Service that does not exist: NXDOMAIN');
  });

  t.test('a Pod\'s hostname and subdomain under a headless Service (dns.go "should provide DNS for pods for Hostname" and "Subdomain")', async (t) => {
    await apply({ apiVersion: 'v1', kind: 'Service', metadata: { name: 'dns-test-service-2', namespace: NS }, spec: { clusterIP: 'None', selector: { 'dns-test': 'true' }, ports: [{ name: 'http', port: 80 }] } });
    await apply(pod('dns-querier-2', marker(3), { hostname: 'dns-querier-2', subdomain: 'dns-test-service-2' }, { 'dns-test': 'true' }));
    const ip = await podIP('dns-querier-2');
    const pid = await pidOf(marker(3));
    const fqdn = `dns-querier-2.dns-test-service-2.${NS}.svc.cluster.local`;
    await until('the Pod\'s A record by hostname.subdomain', async () => (await dig(client, [fqdn])) === ip, 15_000);
    t.pass(`A ${fqdn} -> ${ip}`);
    t.equal((await inPod(pid, ['hostname'])).out, 'dns-querier-2', 'its hostname');
    t.equal((await inPod(pid, ['getent', 'hosts', fqdn])).out.split(/\s+/)[0], ip, 'its FQDN in its own /etc/hosts');
    t.equal((await inPod(client, ['getent', 'hosts', `dns-querier-2.dns-test-service-2`])).out.split(/\s+/)[0], ip, 'from another Pod by the search path');
  });

  t.test('ExternalName: a CNAME, its target changed, then the Service turned ClusterIP (dns.go "should provide DNS for ExternalName services")', async (t) => {
    const fqdn = `dns-test-service-3.${NS}.svc.cluster.local`;
    await apply({ apiVersion: 'v1', kind: 'Service', metadata: { name: 'dns-test-service-3', namespace: NS }, spec: { type: 'ExternalName', externalName: 'foo.example.com' } });
    await until('the CNAME', async () => (await dig(client, ['CNAME', fqdn])) === 'foo.example.com.', 10_000);
    t.pass(`CNAME ${fqdn} -> foo.example.com.`);
    await kubectl(['patch', 'svc', '-n', NS, 'dns-test-service-3', '--type=merge', '-p', '{"spec":{"externalName":"bar.example.com"}}']);
    await until('the CNAME\'s new target', async () => (await dig(client, ['CNAME', fqdn])) === 'bar.example.com.', 10_000);
    t.pass('changed to bar.example.com.');
    await kubectl(['patch', 'svc', '-n', NS, 'dns-test-service-3', '--type=merge', '-p', '{"spec":{"type":"ClusterIP","externalName":null,"ports":[{"name":"http","port":80,"protocol":"TCP"}]}}']);
    const clusterIP = (await kubectl(['get', 'svc', '-n', NS, 'dns-test-service-3', '-o', 'jsonpath={.spec.clusterIP}'])).trim();
    t.match(clusterIP, /^10\.9[6-9]\.|^10\.1[01]\d\./, 'a ClusterIP allocated');
    await until('the A record after the change of type', async () => (await dig(client, [fqdn])) === clusterIP, 10_000);
    t.equal(await dig(client, ['CNAME', fqdn]), '', 'no CNAME any more');
  });

  t.test('a Pod\'s A record, a-b-c-d.<ns>.pod.cluster.local', async (t) => {
    const name = `${clientIP.replace(/\./g, '-')}.${NS}.pod.cluster.local`;
    t.equal(await dig(client, [name]), clientIP, name);
    t.equal((await inPod(client, ['getent', 'hosts', name])).out.split(/\s+/)[0], clientIP, 'and by getent');
  });

  t.test('dnsPolicy None with a dnsConfig (dns.go "should support configurable pod DNS nameservers")', async (t) => {
    await apply(pod('custom', marker(4), {
      dnsPolicy: 'None',
      dnsConfig: { nameservers: ['10.96.0.10'], searches: ['resolv.conf.local', `${NS}.svc.cluster.local`], options: [{ name: 'ndots', value: '2' }, { name: 'edns0' }] },
    }));
    await podIP('custom');
    const pid = await pidOf(marker(4));
    const resolv = (await inPod(pid, ['cat', '/etc/resolv.conf'])).out;
    t.match(resolv, /^nameserver 10\.96\.0\.10$/m);
    t.match(resolv, new RegExp(`^search resolv\\.conf\\.local ${NS}\\.svc\\.cluster\\.local$`, 'm'), 'only its own searches');
    t.match(resolv, /^options ndots:2 edns0$/m, 'its options');
    t.notMatch(resolv, /svc\.cluster\.local svc\.cluster\.local|^search .*cluster\.local cluster\.local/m, 'nothing of ClusterFirst');
    const clusterIP = (await kubectl(['get', 'svc', '-n', NS, 'test-service-2', '-o', 'jsonpath={.spec.clusterIP}'])).trim();
    t.equal((await inPod(pid, ['getent', 'hosts', 'test-service-2'])).out.split(/\s+/)[0], clusterIP, 'a short name, by its own search list');
  });

  t.test('a name outside the cluster with no upstream (the lab\'s nodes have none): SERVFAIL at once, not a timeout', async (t) => {
    const r = await inPod(client, ['dig', '+time=5', '+tries=1', 'www.example.com']);
    t.equal(r.out.match(/status: (\w+)/)?.[1], 'SERVFAIL', r.out.split('\n').find((l) => /status:/.test(l)) ?? r.out);
    const ms = Number(r.out.match(/Query time: (\d+) msec/)?.[1] ?? NaN);
    t.ok(ms < 5000, `answered in ${ms} ms, before dig's own 5 s timeout`);
  });

  t.test('a DNS replica killed with SIGKILL: queries through the kube-dns ClusterIP keep being answered', async (t) => {
    const r = await runner.run(['pgrep', '-f', 'nodenet.js dns'], { allowFailure: true });
    const pids = r.stdout.trim().split('\n').filter(Boolean).map(Number);
    // Both runs' labs (iptables and nftables) may run side by side: this lab's replicas are those whose network
    // namespace is one of this lab's Pods'. A replica is found by the kube-dns endpoint address it serves in.
    const eps = (await kubectl(['get', 'endpointslices', '-n', 'kube-system', '-l', 'kubernetes.io/service-name=kube-dns', '-o', 'jsonpath={.items[*].endpoints[*].addresses[0]}'])).trim().split(' ');
    t.equal(eps.length, 2, `two replicas serve: ${eps.join(', ')}`);
    let victim = 0;
    for (const pid of pids) {
      const addr = (await runner.run(['nsenter', '-t', String(pid), '-n', 'ip', '-4', '-o', 'addr', 'show', 'eth0'], { allowFailure: true })).stdout;
      if (addr.includes(`${eps[0]}/`)) victim = pid;
    }
    t.ok(victim > 0, `the replica at ${eps[0]} found (pid ${victim})`);
    process.kill(victim, 'SIGKILL');
    // While the killed replica is down (until its endpoint leaves the rules or its kubelet restarts it), a query
    // DNATed to it gets ICMP port unreachable: dig says "communications error ... connection refused" and tries
    // again at once from a new source port, which the rules send to a replica at random. Eight tries: a query is
    // lost only if all eight pick the dead replica (1 in 256 while the window lasts; four lost one in a busy run).
    const answers: string[] = [];
    let retried = 0;
    for (let i = 0; i < 40; i++) {
      const lines = (await dig(client, ['+time=1', '+tries=8', `kubernetes.default.svc.cluster.local`])).split('\n');
      if (lines.some((l) => /communications error/.test(l))) retried++;
      answers.push(lines.filter((l) => !/^;;/.test(l)).join(','));
      await new Promise((res) => setTimeout(res, 100));
    }
    t.same(answers.filter((a) => a !== '10.96.0.1'), [], `all ${answers.length} queries over the next seconds answered (${retried} after a refused try)`);
    await until('the killed replica restarted by its kubelet and ready again', async () => (await kubectl(['get', 'deployment', '-n', 'kube-system', 'coredns', '-o', 'jsonpath={.status.readyReplicas}'])).trim() === '2', 60_000);
    t.pass('2 replicas ready again');
  });
}
