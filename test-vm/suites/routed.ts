/**
 * The routed backends across VMs (issue 29), on Debian's kernel: `nodenet control-plane` on VM1, the node agent on
 * both VMs, first with `backend: host-gw` (the agent's routes, proto 78), then, both agents restarted, with
 * `backend: bgp` (each agent's BIRD 2, from the image's bird2, an iBGP session between the VMs, routes proto
 * bird). One `nodenet serve` Pod bound to each VM (the embedded kubelet) stays up across the switch; in each
 * backend every VM checks, for its own part: the route to the other VM's podCIDR via the other VM's address
 * (and no route of the other backend left), a client pod made by a CNI ADD through the real shim with the VM
 * link's MTU (no encapsulation to leave room for), and TCP, UDP and ping from it to the other VM's Pod with
 * the source kept. bgp adds: the session Established as the agent's /overlay/status says it (BIRD's socket),
 * and VM1's agent restarted (SIGTERM, started again): the route stays while it is down and after, the same
 * BIRD adopted, the traffic flowing. The suite is shaped as suites/overlay.ts: VM1 drives, VM2 follows the
 * share's files.
 */
import type { GuestContext, VmSuite } from '../suite.js';
import { existsSync, rmSync } from 'node:fs';
import { parseOverlayStatus, type OverlayStatus } from '../../agent/src/overlay/status.js';
import { AGENT_JS, NODE, awaitShared, cniPod, listPods, nodeKubeconfig, publish, readyNodes, sh, shOk, startAgent, startControlPlane, tail, timeScale, waitFor, type AgentHandle, type PodView } from '../guest/node.js';

type Backend = 'host-gw' | 'bgp';
const BACKENDS: readonly Backend[] = ['host-gw', 'bgp'];
/** The suite's long waits, stretched with the others' (the guest sets NODENET_TEST_TIME_SCALE under TCG). */
const SLOW = 48_000 * timeScale();
const METRICS = '127.0.0.1:10249';

function agentConfig(backend: Backend, kubeconfig: string): Record<string, unknown> {
  return { kubeconfig, clusterCIDR: '10.244.0.0/16', proxyMode: 'none', backend, runPods: true, metricsBindAddress: METRICS };
}

function webPod(node: string): Record<string, unknown> {
  return {
    apiVersion: 'v1', kind: 'Pod',
    metadata: { name: `web-${node}`, labels: { app: 'web' } },
    spec: {
      nodeName: node, terminationGracePeriodSeconds: 1,
      containers: [{
        name: 'web', image: 'nodenet/host',
        command: [NODE, AGENT_JS, 'serve', '--tcp', '9000', '--udp', '9001'],
        env: [{ name: 'POD_NAME', valueFrom: { fieldRef: { fieldPath: 'metadata.name' } } }],
        readinessProbe: { tcpSocket: { port: 9000 }, periodSeconds: 1 },
      }],
    },
  };
}

/** What VM1 hands VM2 once both Nodes and Pods are up. */
interface Cluster { readonly podCIDR: Record<string, string>; readonly pods: PodView[] }

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

const other = (ctx: GuestContext) => (ctx.vm === 1 ? 2 : 1);

/** The routes of a protocol (78: the agent's, host-gw; bird: BIRD's), as `ip route` prints them. */
async function routes(proto: string): Promise<string[]> {
  return (await sh(['ip', 'route', 'show', 'proto', proto])).stdout.split('\n').map((l) => l.trim()).filter(Boolean);
}
const protoOf = (b: Backend) => (b === 'host-gw' ? '78' : 'bird');

/** Until this VM routes the other VM's podCIDR via the other VM's address, with the backend's protocol; returns the line. */
async function routed(ctx: GuestContext, backend: Backend, cluster: Cluster): Promise<string> {
  const want = `${cluster.podCIDR[`vm${other(ctx)}`]!} via ${ctx.ip(other(ctx))} dev eth0`;
  let line = '';
  await waitFor(async () => !!(line = (await routes(protoOf(backend))).find((l) => l.startsWith(want)) ?? ''), `vm${ctx.vm} routes ${want} proto ${protoOf(backend)}`, { timeoutMs: SLOW, intervalMs: 250 });
  return line;
}

async function overlayStatus(): Promise<OverlayStatus> {
  const r = await fetch(`http://${METRICS}/overlay/status`);
  if (r.status !== 200) throw new Error(`/overlay/status: ${r.status}`);
  return parseOverlayStatus('/overlay/status', await r.text());
}

/** Until the agent's /overlay/status says bgp with its session to the other VM Established; returns the session's line. */
async function established(ctx: GuestContext): Promise<string> {
  let s: OverlayStatus | null = null;
  const peer = `vm${other(ctx)}`;
  await waitFor(async () => {
    s = await overlayStatus().catch(() => null);
    return !!s && s.backend === 'bgp' && !!s.bgp && 'sessions' in s.bgp && s.bgp.sessions.some((x) => x.node === peer && x.peerIP === ctx.ip(other(ctx)) && x.established);
  }, `vm${ctx.vm}'s BGP session to ${peer} Established (/overlay/status)`, { timeoutMs: SLOW, intervalMs: 500 });
  const st = s as OverlayStatus | null;
  const sess = st?.bgp && 'sessions' in st.bgp ? st.bgp.sessions.find((x) => x.node === peer) : undefined;
  return `${sess?.protocol ?? '?'} to ${peer} (${sess?.peerIP ?? '?'}) ${sess?.state ?? '?'}`;
}

/** This VM's link MTU (eth0: the virtio NIC the VMs share). */
async function linkMtu(dev: string, ns?: string): Promise<number> {
  const r = await sh(ns ? ['ip', '-n', ns, '-o', 'link', 'show', 'dev', dev] : ['ip', '-o', 'link', 'show', 'dev', dev]);
  const m = / mtu (\d+) /.exec(r.stdout);
  if (!m) throw new Error(`no mtu in: ${r.stdout}`);
  return Number(m[1]);
}

/**
 * One VM's checks in one backend: the route (and none of the other backend's), bgp's session, a client pod with the
 * link's MTU, TCP, UDP and ping to the other VM's Pod with the source kept. Returns a summary.
 */
async function checkBackend(ctx: GuestContext, agent: AgentHandle, backend: Backend, cluster: Cluster): Promise<string> {
  const route = await routed(ctx, backend, cluster);
  const stale = await routes(protoOf(backend === 'host-gw' ? 'bgp' : 'host-gw'));
  if (stale.length) throw new Error(`vm${ctx.vm} still has the other backend's routes after the switch to ${backend}: ${stale.join('; ')}`);
  const session = backend === 'bgp' ? await established(ctx) : '';
  const client = await cniPod(agent, `client-${backend}`);
  const mtu = await linkMtu('eth0');
  const podMtu = await linkMtu('eth0', client.ns);
  if (podMtu !== mtu) throw new Error(`${backend}: the pod's eth0 MTU is ${podMtu}, not the VMs' link MTU ${mtu}`);
  const target = cluster.pods.find((p) => p.node === `vm${other(ctx)}`)!;
  expectAnswer(`${backend}: TCP to ${target.name}`, await tcp(client.ns, target.ip, 9000), target.name, client.ip);
  expectAnswer(`${backend}: UDP to ${target.name}`, await udp(client.ns, target.ip, 9001), target.name, client.ip);
  const ping = await inNs(client.ns, ['ping', '-c', '2', '-W', '5', target.ip]);
  if (!/ 0% packet loss/.test(ping)) throw new Error(`${backend}: ping ${target.name} (${target.ip}): ${ping}`);
  const line = `vm${ctx.vm} ${backend}: route "${route}"${session ? `, session ${session}` : ''}, pod MTU ${podMtu} = link, ${client.ip} -> ${target.name} ${target.ip} TCP/UDP/ping, source kept`;
  ctx.log(line);
  return line;
}

/** The agent stopped (SIGTERM, as systemd stops it) and awaited. */
async function stopAgent(agent: AgentHandle): Promise<void> {
  const p = agent.proc!;
  if (p.exitCode !== null || p.signalCode !== null) return;
  const exited = new Promise<void>((resolve) => p.once('exit', () => resolve()));
  p.kill('SIGTERM');
  await Promise.race([exited, new Promise((_, reject) => setTimeout(() => reject(new Error('the agent did not exit on SIGTERM')), SLOW))]);
}

/** The agent restarted with this config; agent.ready removed first, so the wait is for the new one. */
async function restartAgent(ctx: GuestContext, agent: AgentHandle, config: Record<string, unknown>): Promise<AgentHandle> {
  await stopAgent(agent);
  rmSync(`${agent.runDir}/agent.ready`, { force: true });
  return startAgent(ctx, config, SLOW);
}

const birdPid = async () => (await shOk(['pgrep', '-x', 'bird'])).stdout.trim();

/** bgp only, VM1: its agent restarted keeps the route (while it is down and after), the same BIRD, the traffic. */
async function bgpRestart(ctx: GuestContext, agent: AgentHandle, config: Record<string, unknown>, cluster: Cluster): Promise<{ agent: AgentHandle; line: string }> {
  const before = await routed(ctx, 'bgp', cluster);
  const pid0 = await birdPid();
  await stopAgent(agent);
  const down = (await routes('bird')).find((l) => l === before);
  if (!down) throw new Error(`the route "${before}" went with the agent's stop: ${(await routes('bird')).join('; ') || 'no proto bird route'}`);
  rmSync(`${agent.runDir}/agent.ready`, { force: true });
  const again = await startAgent(ctx, config, SLOW);
  const after = await routed(ctx, 'bgp', cluster);
  const pid1 = await birdPid();
  if (!pid0 || pid1 !== pid0) throw new Error(`BIRD was ${pid0 || 'not running'} before the agent's restart, ${pid1 || 'none'} after: not adopted`);
  const session = await established(ctx);
  const client = await cniPod(again, 'client-restart');
  const target = cluster.pods.find((p) => p.node === `vm${other(ctx)}`)!;
  expectAnswer(`after the agent's restart: TCP to ${target.name}`, await tcp(client.ns, target.ip, 9000), target.name, client.ip);
  const line = `vm1's agent restarted: route kept while down and after ("${after}"), BIRD ${pid0} adopted, ${session}, TCP across with the source kept`;
  ctx.log(line);
  return { agent: again, line };
}

async function driver(ctx: GuestContext): Promise<string> {
  const nodes = ['vm1', 'vm2'];
  const { api, dataDir } = await startControlPlane(ctx, nodes, SLOW);
  ctx.log('control plane ready');
  for (const n of nodes) publish(ctx, `kubeconfig-${n}`, await sh(['cat', `${dataDir}/nodes/${n}.kubeconfig`]).then((r) => r.stdout));
  const kubeconfig = `${dataDir}/nodes/vm1.kubeconfig`;
  let agent = await startAgent(ctx, agentConfig('host-gw', kubeconfig), SLOW);
  ctx.log('agent ready (host-gw)');
  const lines: string[] = [];
  try {
    await waitFor(async () => (await readyNodes(api)).length === nodes.length, `${nodes.length} Nodes Ready with pod CIDRs`, { timeoutMs: SLOW, intervalMs: 500 });
    const podCIDR = Object.fromEntries(await Promise.all(nodes.map(async (n) => [n, (await api.json<{ spec: { podCIDR: string } }>('GET', `/api/v1/nodes/${n}`)).spec.podCIDR] as const)));
    for (const n of nodes) await api.json('POST', '/api/v1/namespaces/default/pods', webPod(n));
    let pods: PodView[] = [];
    await waitFor(async () => (pods = await listPods(api, 'app=web')).filter((p) => p.ready && p.ip).length === nodes.length, 'every web Pod Running and Ready', { timeoutMs: SLOW, intervalMs: 500 });
    const cluster: Cluster = { podCIDR, pods };
    ctx.log(`podCIDRs ${JSON.stringify(podCIDR)}; pods: ${pods.map((p) => `${p.name}@${p.node}=${p.ip}`).join(' ')}`);
    publish(ctx, 'cluster', JSON.stringify(cluster));
    for (const backend of BACKENDS) {
      if (backend !== 'host-gw') {
        agent = await restartAgent(ctx, agent, agentConfig(backend, kubeconfig));
        ctx.log(`agent restarted (${backend})`);
      }
      lines.push(await checkBackend(ctx, agent, backend, cluster));
      lines.push(await awaitShared(ctx, `checked-${backend}-vm2`, 2 * SLOW));
      if (lines.at(-1)!.includes('FAILED')) throw new Error(`vm2: ${lines.at(-1)!}`);
      // The Pods kept their processes and addresses across the agents' restart (the kubelet adopts them).
      await waitFor(async () => {
        const now = await listPods(api, 'app=web');
        return pods.every((p) => now.some((q) => q.name === p.name && q.ip === p.ip && q.ready));
      }, `${backend}: every web Pod Ready at its first address`, { timeoutMs: SLOW, intervalMs: 500 });
      publish(ctx, `next-${backend}`, 'go');
    }
    const r = await bgpRestart(ctx, agent, agentConfig('bgp', kubeconfig), cluster);
    agent = r.agent;
    lines.push(r.line);
    publish(ctx, 'done', 'pass');
    return `2 VMs, host-gw then bgp: ${lines.join('; ')}`;
  } catch (e) {
    ctx.log(`vm1 agent log:\n${tail(agent.logFile, 30)}\nroutes:\n${(await shOk(['ip', 'route'])).stdout}\ncontrol plane log:\n${tail('/var/log/nodenet-control-plane.log', 15)}`);
    publish(ctx, 'done', 'fail');
    throw e;
  } finally {
    await stopAgent(agent).catch(() => undefined);
  }
}

async function worker(ctx: GuestContext): Promise<string> {
  const kubeconfig = await nodeKubeconfig(ctx, SLOW);
  let agent = await startAgent(ctx, agentConfig('host-gw', kubeconfig), SLOW);
  ctx.log('agent ready (host-gw)');
  const lines: string[] = [];
  try {
    const cluster = JSON.parse(await awaitShared(ctx, 'cluster', 2 * SLOW)) as Cluster;
    for (const backend of BACKENDS) {
      if (backend !== 'host-gw') {
        agent = await restartAgent(ctx, agent, agentConfig(backend, kubeconfig));
        ctx.log(`agent restarted (${backend})`);
      }
      let line: string;
      try {
        line = await checkBackend(ctx, agent, backend, cluster);
      } catch (e) {
        publish(ctx, `checked-${backend}-vm${ctx.vm}`, `vm${ctx.vm} FAILED: ${(e as Error).message}`);
        throw e;
      }
      publish(ctx, `checked-${backend}-vm${ctx.vm}`, line);
      lines.push(backend);
      // VM1's go for the next step, or its word that it failed.
      await waitFor(() => existsSync(`${ctx.share}/next-${backend}`) || existsSync(`${ctx.share}/done`), `vm1 done with ${backend}`, { timeoutMs: 2 * SLOW, intervalMs: 200 });
      if (!existsSync(`${ctx.share}/next-${backend}`)) break;
    }
    const done = await awaitShared(ctx, 'done', 2 * SLOW);
    if (done !== 'pass') throw new Error('vm1 reported a failure');
    return `agent routed by ${lines.join(' then ')}: route, pod MTU, pod to pod with the source kept`;
  } catch (e) {
    ctx.log(`vm${ctx.vm} agent log:\n${tail(agent.logFile, 30)}\nroutes:\n${(await shOk(['ip', 'route'])).stdout}`);
    throw e;
  } finally {
    await stopAgent(agent).catch(() => undefined);
  }
}

// Extra (--all, --suite routed): npm test runs host-gw and bgp between namespaces on the host's kernel, with the
// same agent code; this suite adds Debian's kernel and real VMs, and took 368 s of CI under TCG.
export const suite: VmSuite = {
  name: 'routed', vms: 2, extra: true,
  timeoutSec: { kvm: 400, tcg: 900 },
  run: (ctx) => (ctx.vm === 1 ? driver(ctx) : worker(ctx)),
};
