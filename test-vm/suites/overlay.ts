/**
 * The overlay across VMs, in IPVS mode (and in iptables and nftables modes, extra suites): `nodenet
 * control-plane` on VM1, the node agent on every VM (VXLAN over the VMs'
 * virtio NICs, the embedded kubelet, the Service proxy), one `nodenet serve`
 * Pod bound to each VM, a ClusterIP Service over them, and a client pod on
 * VM1 made by a CNI ADD through the real shim. Real packets from the client:
 * TCP, UDP and ping to every remote Pod with its source IP kept, and TCP and
 * UDP through the ClusterIP reaching every Pod. The other VMs check that
 * their own agent applied the Service's endpoints, then wait for VM1's word.
 *
 * Suite `vagrant` is the same cluster brought up the Vagrant way, and is what
 * exercises the Vagrantfile's provisioning here: the VMs boot systemd, and
 * the repository's test-vm/provision/nodenet.sh starts the control plane and
 * the agents as its systemd units, handing the kubeconfigs over in the share
 * as the Vagrantfile does in .nodenet-vagrant/. On top of the same checks, it
 * checks the units themselves: enabled and active, and, after VM1's agent is
 * killed with SIGKILL, restarted by systemd (Restart=on-failure) without the
 * Pods' processes (KillMode=process), with the traffic still flowing.
 */
import type { GuestContext, VmSuite } from '../suite.js';
import { existsSync, rmSync } from 'node:fs';
import { AGENT_JS, NODE, applied, awaitShared, cniPod, journal, listPods, nodeKubeconfig, provision, provisionAgent, provisionedApi, publish, readyNodes, sh, shOk, startAgent, startControlPlane, tail, timeScale, unitProperty, waitFor, type AgentHandle, type Api, type PodView } from '../guest/node.js';

type Mode = 'iptables' | 'nftables' | 'ipvs';
/** How the processes start: spawned by the guest, or as systemd units by provision/nodenet.sh (the Vagrant way). */
type How = 'direct' | 'vagrant';
const UNITS = ['nodenet-control-plane', 'nodenet-agent'];

/** The suite's long waits, stretched with the others' (the guest sets NODENET_TEST_TIME_SCALE: 5 by default under TCG). */
const SLOW = 48_000 * timeScale();

function agentConfig(mode: Mode, kubeconfig: string): Record<string, unknown> {
  return { kubeconfig, clusterCIDR: '10.244.0.0/16', proxyMode: mode, proxyMinSyncMs: 100, overlay: 'vxlan', runPods: true };
}

function webPod(node: string): Record<string, unknown> {
  return {
    apiVersion: 'v1', kind: 'Pod',
    metadata: { name: `web-${node}`, labels: { app: 'web' } },
    spec: {
      nodeName: node, terminationGracePeriodSeconds: 1,
      containers: [{
        name: 'web', image: 'nodenet/host',
        command: [NODE, AGENT_JS, 'serve', '--tcp', '9000', '--udp', '9001', '--http', '8080'],
        env: [{ name: 'POD_NAME', valueFrom: { fieldRef: { fieldPath: 'metadata.name' } } }],
        readinessProbe: { tcpSocket: { port: 9000 }, periodSeconds: 1 },
      }],
    },
  };
}

const SERVICE = {
  apiVersion: 'v1', kind: 'Service', metadata: { name: 'web' },
  spec: { selector: { app: 'web' }, ports: [{ name: 'tcp', port: 80, targetPort: 9000, protocol: 'TCP' }, { name: 'udp', port: 53, targetPort: 9001, protocol: 'UDP' }] },
};

async function inNs(ns: string, argv: string[]): Promise<string> {
  const r = await shOk(['ip', 'netns', 'exec', ns, ...argv]);
  return (r.exitCode === 0 ? r.stdout : `ERROR(${r.exitCode}) ${r.stderr}`).trim();
}
const tcp = (ns: string, ip: string, port: number) => inNs(ns, ['socat', '-t2', '-T5', '-', `TCP4:${ip}:${port},connect-timeout=5`]);
const udp = (ns: string, ip: string, port: number) => inNs(ns, ['bash', '-c', `echo hi | socat -t5 -T5 - UDP4:${ip}:${port}`]);

function expectAnswer(what: string, got: string, pod: string, clientIP: string): void {
  const m = /^(\S+) (\d+\.\d+\.\d+\.\d+):\d+/.exec(got);
  if (!m) throw new Error(`${what}: no answer: ${got}`);
  if (m[1] !== pod) throw new Error(`${what}: answered by ${m[1]}, expected ${pod}`);
  if (m[2] !== clientIP) throw new Error(`${what}: the pod saw the client as ${m[2]}, not ${clientIP}: the source was not kept`);
}

/** VM1's control plane and agent, started the suite's way. */
async function startDriver(ctx: GuestContext, mode: Mode, how: How, nodes: readonly string[]): Promise<{ api: Api; agent: AgentHandle }> {
  if (how === 'vagrant') {
    await provision(ctx, ['control-plane', ctx.ip(ctx.vm), nodes.join(',')], SLOW);
    const api = await provisionedApi(ctx, SLOW);
    ctx.log('control plane ready (nodenet-control-plane.service)');
    const agent = await provisionAgent(ctx, mode, SLOW);
    ctx.log('agent ready (nodenet-agent.service)');
    return { api, agent };
  }
  const { api, dataDir } = await startControlPlane(ctx, nodes, SLOW);
  ctx.log('control plane ready');
  for (const n of nodes) publish(ctx, `kubeconfig-${n}`, await sh(['cat', `${dataDir}/nodes/${n}.kubeconfig`]).then((r) => r.stdout));
  const agent = await startAgent(ctx, agentConfig(mode, `${dataDir}/nodes/vm1.kubeconfig`), SLOW);
  ctx.log('agent ready');
  return { api, agent };
}

/** Both units enabled (they come back on a reboot) and running. */
async function unitsUp(units: readonly string[]): Promise<void> {
  for (const u of units) {
    const enabled = (await shOk(['systemctl', 'is-enabled', u])).stdout.trim();
    const active = (await shOk(['systemctl', 'is-active', u])).stdout.trim();
    if (enabled !== 'enabled' || active !== 'active') throw new Error(`${u}.service is ${enabled}/${active}, not enabled/active: ${await journal(u)}`);
  }
}

/**
 * VM1's agent killed with SIGKILL: systemd starts it again (Restart=on-failure), the Pods' processes are not
 * killed with it (KillMode=process: they are in the unit's cgroup), and `probe` (traffic) passes after it.
 */
async function killAndRestart(ctx: GuestContext, agent: AgentHandle, probe: () => Promise<string>): Promise<string> {
  const pid0 = Number(await unitProperty('nodenet-agent', 'MainPID'));
  if (!(pid0 > 0)) throw new Error(`nodenet-agent.service has no MainPID (${pid0})`);
  const servers0 = (await shOk(['pgrep', '-f', 'serve --tcp 9000'])).stdout.trim().split('\n').filter(Boolean);
  if (!servers0.length) throw new Error("VM1's web Pod has no process before the agent's kill");
  rmSync(`${agent.runDir}/agent.ready`, { force: true });
  process.kill(pid0, 'SIGKILL');
  let pid = 0;
  await waitFor(async () => {
    pid = Number(await unitProperty('nodenet-agent', 'MainPID'));
    return pid > 0 && pid !== pid0 && existsSync(`${agent.runDir}/agent.ready`);
  }, 'systemd restarted nodenet-agent and it was ready again', { timeoutMs: SLOW, intervalMs: 250 });
  const restarts = Number(await unitProperty('nodenet-agent', 'NRestarts'));
  if (!(restarts >= 1)) throw new Error(`nodenet-agent.service NRestarts is ${restarts} after the kill`);
  const servers1 = (await shOk(['pgrep', '-f', 'serve --tcp 9000'])).stdout.trim().split('\n').filter(Boolean);
  if (servers1.join() !== servers0.join()) throw new Error(`VM1's web Pod processes were ${servers0.join()} before the agent's kill, ${servers1.join() || 'gone'} after`);
  const traffic = await probe();
  ctx.log(`agent SIGKILLed (pid ${pid0}): systemd restarted it as ${pid} (NRestarts ${restarts}); web Pod processes ${servers0.join(',')} kept; ${traffic}`);
  return `SIGKILLed agent restarted by systemd (NRestarts ${restarts}), Pod process kept, ${traffic}`;
}

async function driver(ctx: GuestContext, mode: Mode, how: How): Promise<string> {
  const nodes = Array.from({ length: ctx.vms }, (_, i) => `vm${i + 1}`);
  const { api, agent } = await startDriver(ctx, mode, how, nodes);
  try {
    await waitFor(async () => (await readyNodes(api)).length === nodes.length, `${nodes.length} Nodes Ready with pod CIDRs`, { timeoutMs: SLOW, intervalMs: 500 });
    ctx.log(`nodes Ready: ${(await readyNodes(api)).join(' ')}`);
    await api.json('POST', '/api/v1/namespaces/default/services', SERVICE);
    for (const n of nodes) await api.json('POST', '/api/v1/namespaces/default/pods', webPod(n));
    let pods: PodView[] = [];
    await waitFor(async () => (pods = await listPods(api, 'app=web')).filter((p) => p.ready && p.ip).length === nodes.length, 'every web Pod Running and Ready', { timeoutMs: SLOW, intervalMs: 500 });
    ctx.log(`pods: ${pods.map((p) => `${p.name}@${p.node}=${p.ip}`).join(' ')}`);
    const svc = await api.json<{ spec: { clusterIP: string } }>('GET', '/api/v1/namespaces/default/services/web');
    const clusterIP = svc.spec.clusterIP;
    const want = pods.map((p) => `${p.ip}:9000`).sort();
    await waitFor(() => JSON.stringify(applied(agent.runDir, 'default/web:tcp').sort()) === JSON.stringify(want), `vm1's rules hold ${want.join(', ')}`, { timeoutMs: SLOW, intervalMs: 250 });
    publish(ctx, 'service', JSON.stringify({ clusterIP, endpoints: want }));
    const client = await cniPod(agent, 'client');
    ctx.log(`client pod ${client.ip}, ClusterIP ${clusterIP}`);
    const checks: string[] = [];
    for (const p of pods.filter((x) => x.node !== 'vm1')) {
      expectAnswer(`TCP to ${p.name} (${p.node})`, await tcp(client.ns, p.ip, 9000), p.name, client.ip);
      expectAnswer(`UDP to ${p.name} (${p.node})`, await udp(client.ns, p.ip, 9001), p.name, client.ip);
      const ping = await inNs(client.ns, ['ping', '-c', '2', '-W', '5', p.ip]);
      if (!/ 0% packet loss/.test(ping)) throw new Error(`ping ${p.name} (${p.ip} on ${p.node}): ${ping}`);
      checks.push(p.node);
    }
    ctx.log(`pod to pod across VMs (TCP, UDP, ping, source kept) to ${checks.join(', ')}`);
    const seen = new Set<string>();
    for (let i = 0; i < 12 * nodes.length && seen.size < nodes.length; i++) {
      const got = await tcp(client.ns, clusterIP, 80);
      const m = /^(\S+) (\d+\.\d+\.\d+\.\d+):\d+/.exec(got);
      if (!m) throw new Error(`TCP to the ClusterIP ${clusterIP}:80: ${got}`);
      if (m[2] !== client.ip) throw new Error(`through the ClusterIP ${m[1]} saw the client as ${m[2]}, not ${client.ip}`);
      seen.add(m[1]!);
    }
    if (seen.size !== nodes.length) throw new Error(`the ClusterIP reached only ${[...seen].join(', ')} of ${pods.map((p) => p.name).join(', ')}`);
    const u = await udp(client.ns, clusterIP, 53);
    if (!/^web-vm\d+ /.test(u)) throw new Error(`UDP to the ClusterIP ${clusterIP}:53: ${u}`);
    ctx.log(`ClusterIP ${clusterIP}: TCP reached ${[...seen].sort().join(', ')}; UDP answered by ${u.split(' ')[0]}`);
    let units = '';
    if (how === 'vagrant') {
      await unitsUp(UNITS);
      const remote = pods.find((p) => p.node !== 'vm1')!;
      units = `; units enabled and active; ${await killAndRestart(ctx, agent, async () => {
        expectAnswer(`TCP to ${remote.name} after the agent's restart`, await tcp(client.ns, remote.ip, 9000), remote.name, client.ip);
        let via = '';
        await waitFor(async () => /^web-vm\d+ /.test(via = await tcp(client.ns, clusterIP, 80)), 'the ClusterIP answering after the restart', { timeoutMs: SLOW, intervalMs: 500 });
        return `after it: ${remote.name} and the ClusterIP (${via.split(' ')[0]}) answered`;
      })}`;
    }
    const others = await Promise.all(nodes.slice(1).map((n) => awaitShared(ctx, `checked-${n}`, SLOW)));
    publish(ctx, 'done', 'pass');
    return `${mode}${how === 'vagrant' ? ' (provisioned by nodenet.sh, systemd units)' : ''}: ${nodes.length} VMs; pod to pod across VMs TCP/UDP/ping with the source kept (${checks.join(',')}); ClusterIP ${clusterIP} TCP reached ${seen.size}/${nodes.length} Pods, UDP answered${units}; ${others.join('; ')}`;
  } catch (e) {
    ctx.log(`vm1 agent log:\n${tail(agent.logFile, 30)}\ncontrol plane log:\n${tail('/var/log/nodenet-control-plane.log', 15)}`);
    if (how === 'vagrant') for (const u of UNITS) ctx.log(`journalctl -u ${u}:\n${await journal(u)}`);
    publish(ctx, 'done', 'fail');
    throw e;
  }
}

async function worker(ctx: GuestContext, mode: Mode, how: How): Promise<string> {
  // The Vagrant way: nodenet.sh waits for this node's kubeconfig in the share itself.
  const agent = how === 'vagrant' ? await provisionAgent(ctx, mode, 2 * SLOW) : await startAgent(ctx, agentConfig(mode, await nodeKubeconfig(ctx, SLOW)), SLOW);
  ctx.log(how === 'vagrant' ? 'agent ready (nodenet-agent.service)' : 'agent ready');
  const svc = JSON.parse(await awaitShared(ctx, 'service', 2 * SLOW)) as { clusterIP: string; endpoints: string[] };
  try {
    await waitFor(() => JSON.stringify(applied(agent.runDir, 'default/web:tcp').sort()) === JSON.stringify(svc.endpoints), `vm${ctx.vm}'s rules hold ${svc.endpoints.join(', ')}`, { timeoutMs: SLOW, intervalMs: 250 });
    const tables = mode === 'nftables' ? (await sh(['nft', 'list', 'ruleset', 'ip'])).stdout
      : mode === 'ipvs' ? (await sh(['ipvsadm', '-Ln'])).stdout : (await sh(['iptables-save', '-t', 'nat'])).stdout;
    if (!tables.includes(svc.clusterIP)) throw new Error(`vm${ctx.vm}'s ${mode} rules do not name ${svc.clusterIP}`);
    if (mode === 'ipvs') {
      // Both real servers, one on each VM: the remote one is reached over VXLAN, NATed by this VM's IPVS.
      for (const e of svc.endpoints) if (!tables.includes(e)) throw new Error(`vm${ctx.vm}'s virtual server ${svc.clusterIP}:80 has no real server ${e}:\n${tables}`);
      const dummy = (await sh(['ip', '-br', 'addr', 'show', 'dev', 'kube-ipvs0'])).stdout;
      if (!dummy.includes(`${svc.clusterIP}/32`)) throw new Error(`kube-ipvs0 does not hold ${svc.clusterIP}/32: ${dummy}`);
    }
    const vx = (await sh(['ip', '-d', 'link', 'show', 'nodenet.1'])).stdout;
    if (!/vxlan id 1 .*dstport 8472/.test(vx)) throw new Error(`nodenet.1 is not the VXLAN device: ${vx}`);
    if (how === 'vagrant') await unitsUp(['nodenet-agent']);
  } catch (e) {
    ctx.log(`vm${ctx.vm} agent log:\n${tail(agent.logFile, 30)}`);
    if (how === 'vagrant') ctx.log(`journalctl -u nodenet-agent:\n${await journal('nodenet-agent')}`);
    publish(ctx, `checked-vm${ctx.vm}`, `vm${ctx.vm} FAILED`);
    throw e;
  }
  publish(ctx, `checked-vm${ctx.vm}`, `vm${ctx.vm} applied ${svc.endpoints.length} endpoints in ${mode}`);
  const done = await awaitShared(ctx, 'done', 2 * SLOW);
  if (done !== 'pass') throw new Error('vm1 reported a failure');
  return `agent${how === 'vagrant' ? ' (nodenet-agent.service)' : ''} applied ${svc.endpoints.length} endpoints of ${svc.clusterIP} in ${mode}, VXLAN up`;
}

function overlaySuite(mode: Mode, vms: number, opts: { extra?: boolean; how?: How } = {}): VmSuite {
  const how = opts.how ?? 'direct';
  return {
    name: how === 'vagrant' ? `vagrant-${mode}` : `overlay-${mode}`, vms, ...(opts.extra ? { extra: true as const } : {}),
    ...(how === 'vagrant' ? { init: 'systemd' as const } : {}),
    timeoutSec: how === 'vagrant' ? { kvm: 400, tcg: 900 } : { kvm: 300, tcg: 600 },
    run: (ctx) => (ctx.vm === 1 ? driver(ctx, mode, how) : worker(ctx, mode, how)),
  };
}

// In the default set: IPVS mode (the mode only VMs can test), brought up the Vagrant way (nodenet.sh's systemd
// units), which also makes it the Vagrantfile's provisioning test; overlay-ipvs is the same checks with the
// processes spawned directly. iptables and nftables across nodes run in `npm test` (namespaces on the host's
// kernel) and on this kernel in the services suite; their VM runs are extra.
export const suites: VmSuite[] = [
  overlaySuite('ipvs', 2, { how: 'vagrant' }), overlaySuite('ipvs', 2, { extra: true }),
  overlaySuite('iptables', 3, { extra: true }), overlaySuite('nftables', 2, { extra: true }),
  overlaySuite('nftables', 2, { extra: true, how: 'vagrant' }), overlaySuite('iptables', 2, { extra: true, how: 'vagrant' }),
];
