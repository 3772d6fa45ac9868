/**
 * lab/demo-ha: `nodenet demo ha`, the seeds' high-availability section
 * with real processes and real kubectl, in about a minute: 3 etcd members
 * and 2 API servers, each in a namespace of its own, behind HAProxy; two
 * nodes whose agents balance over the API servers themselves. Then, one
 * fault at a time, with the lab's own tools (lab/ha.ts, what `nodenet lab
 * kill|start` run):
 *   1. the etcd leader killed under a stream of writes: writes pause for
 *      about an election, then go on, and nothing acknowledged is lost;
 *   2. an API server killed: kubectl (through HAProxy) and the agents
 *      (through their balancers) carry on; the kubernetes EndpointSlice
 *      drops it within its lease's TTL;
 *   3. the controller manager's leader killed: the Lease changes hands
 *      and a Deployment scaled meanwhile is reconciled by the new leader;
 *   4. quorum lost (2 of 3 members down): writes fail with a clear error,
 *      never a false success; quorum back, everything continues;
 *   5. leader election inside an app (the seeds' application-level case):
 *      a Deployment of 3 replicas of `nodenet serve --leader-elect`, each an
 *      in-cluster client with its ServiceAccount's token and a Role on its
 *      Lease, spread one per node by required pod anti-affinity (topology
 *      kubernetes.io/hostname): with more replicas than nodes the last one
 *      stays Pending, and its FailedScheduling Event says why; the leader's
 *      Pod deleted, another replica takes the Lease.
 * Everything is removed on exit, also on Ctrl-C.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import type { Runner } from '../exec/runner.js';
import { etcdLeader, haAct, leaseHolder, requireHaPrograms, type HaLab } from './ha.js';
import { etcdEndpoints, type HaTarget } from './ha-plan.js';
import { describePending } from './demo.js';
import { AGENT_JS, type Lab, type VNode } from './lab.js';
import { CLUSTER_CIDR } from './plan.js';

const SLOW = Number(process.env['NODENET_TEST_TIME_SCALE']) || 1;

export interface HaDemoDeps {
  readonly runner: Runner;
  readonly createLab: (prefix: string) => Promise<Lab>;
  readonly stdout: (s: string) => void;
}

/** Seconds since t0, one decimal. */
const since = (t0: number) => ((Date.now() - t0) / 1000).toFixed(1);

/**
 * The acknowledged writes per half second of a stream, as a bar: '#' for each bucket with writes, '.' for none.
 * Pure, for the story and its test.
 */
export function writeTimeline(ackedAt: readonly number[], t0: number, t1: number, bucketMs = 500): { bar: string; longestGapMs: number } {
  const n = Math.max(1, Math.ceil((t1 - t0) / bucketMs));
  const counts = new Array<number>(n).fill(0);
  for (const t of ackedAt) counts[Math.min(n - 1, Math.max(0, Math.floor((t - t0) / bucketMs)))]!++;
  let longest = 0;
  const sorted = [...ackedAt].sort((a, b) => a - b);
  for (let i = 1; i < sorted.length; i++) longest = Math.max(longest, sorted[i]! - sorted[i - 1]!);
  return { bar: counts.map((c) => (c ? '#' : '.')).join(''), longestGapMs: longest };
}

/**
 * Step 5's app: 3 replicas of `nodenet serve --leader-elect elector` as ServiceAccount elector, spread one per
 * node by required pod anti-affinity on kubernetes.io/hostname (never two on one node; with more replicas than
 * nodes the rest stay Pending).
 */
export function electorDeployment(agentJs: string): Record<string, unknown> {
  return {
    apiVersion: 'apps/v1', kind: 'Deployment', metadata: { name: 'elector' },
    spec: {
      replicas: 3, selector: { matchLabels: { app: 'elector' } },
      template: {
        metadata: { labels: { app: 'elector' } },
        spec: {
          serviceAccountName: 'elector', terminationGracePeriodSeconds: 5,
          affinity: { podAntiAffinity: { requiredDuringSchedulingIgnoredDuringExecution: [{ labelSelector: { matchLabels: { app: 'elector' } }, topologyKey: 'kubernetes.io/hostname' }] } },
          containers: [{
            name: 'app', image: 'nodenet/host', command: [process.execPath, agentJs, 'serve', '--http', '8080', '--tcp', '', '--udp', '', '--leader-elect', 'elector'],
            env: [{ name: 'POD_NAME', valueFrom: { fieldRef: { fieldPath: 'metadata.name' } } }],
          }],
        },
      },
    },
  };
}

/** A replica of step 5's app exited: the demo stops there, with what it printed (never retried away). */
class CrashedReplica extends Error {}

interface ElectorPod {
  metadata: { name: string };
  spec: { nodeName?: string };
  status: {
    phase?: string;
    conditions?: { type: string; status: string; reason?: string }[];
    containerStatuses?: { ready?: boolean; restartCount?: number; lastState?: unknown }[];
  };
}

export async function runHaDemo(deps: HaDemoDeps): Promise<number> {
  const say = (s = '') => deps.stdout(`${s}\n`);
  await requireHaPrograms(deps.runner);
  const lab = await deps.createLab('demoha');
  let cleaning: Promise<void> | null = null;
  const cleanup = (): Promise<void> => {
    cleaning ??= (async () => {
      try { say('\ncleaning up: agents, API servers, etcd members, HAProxy, namespaces'); } catch { /* stdout gone */ }
      const left = await lab.destroy();
      // What teardown could not remove (a Pod's cgroup, a mount): said, so it is not left silently.
      try { for (const l of left) say(`left behind: ${l}`); } catch { /* stdout gone */ }
    })();
    return cleaning;
  };
  const onSignal = () => void cleanup().then(() => process.exit(130));
  process.once('SIGINT', onSignal);
  process.once('SIGTERM', onSignal);
  const step = (n: number, title: string) => say(`\n== ${n}. ${title}`);
  const explain = (s: string) => say(`   ${s}`);
  const indent = (s: string) => s.trimEnd().split('\n').map((l) => `   | ${l}`).join('\n');
  try {
    say('nodenet demo ha: the seeds\' highly available control plane on this machine');
    const t0 = Date.now();
    // Without the cluster's DNS (the coredns addon): this demo is the control plane's, and two more Node processes
    // per lab only slow the elections it shows on a small machine.
    const cp = await lab.startControlPlane({ nodes: ['node1', 'node2'], ha: { etcdMembers: 3, apiServers: 2 }, args: ['--disable', 'coredns'] });
    const ha: HaLab = cp.haLab();
    const nodes: VNode[] = [];
    for (const name of ['node1', 'node2']) {
      nodes.push(await lab.addNode(name, { clusterCIDR: CLUSTER_CIDR, config: { overlay: 'vxlan', runPods: true, proxyMode: 'iptables', proxyMinSyncMs: 100, logLevel: 'info' } }));
    }
    await Promise.all(nodes.map((n) => n.startAgent()));
    const kubectl = (args: readonly string[]) => cp.kubectl(['--request-timeout=8s', ...args], true);
    const out = async (args: readonly string[]) => {
      const r = await kubectl(args);
      if (r.exitCode !== 0) throw new Error(`demo: kubectl ${args.join(' ')}: ${r.stderr.trim()}`);
      return r.stdout;
    };
    const act = async (action: Parameters<typeof haAct>[1], target: HaTarget) => say(`   $ nodenet lab ${action} ${target.kind === 'leader' ? `leader:${target.of}` : `${target.kind}:${target.index}`}\n   ${await haAct(ha, action, target)}`);
    const until = async (what: string, f: () => Promise<boolean>, ms = 60_000) => {
      const end = Date.now() + ms * SLOW;
      while (!(await f().catch(() => false))) {
        if (Date.now() > end) throw new Error(`demo: timed out waiting for ${what}`);
        await sleep(200);
      }
    };
    const untilValue = async <T>(what: string, f: () => Promise<T | null>, seenLast: () => string, ms = 60_000): Promise<T> => {
      const end = Date.now() + ms * SLOW;
      for (;;) {
        const v = await f().catch((e: unknown) => {
          if (e instanceof CrashedReplica) throw e;
          return null;
        });
        if (v !== null) return v;
        if (Date.now() > end) throw new Error(`demo: timed out waiting for ${what}; last seen: ${seenLast() || 'nothing'}`);
        await sleep(200);
      }
    };
    const etcdStatus = async () => (await deps.runner.run(['nsenter', `--net=/var/run/netns/${lab.ul}`, '--', 'etcdctl', `--endpoints=${etcdEndpoints(3)}`, '--command-timeout=2s', 'endpoint', 'status', '-w', 'table'], { allowFailure: true })).stdout;
    await until('both Nodes Ready', async () => ((await out(['get', 'nodes'])).match(/\sReady\s/g) ?? []).length === 2);
    say(`up in ${since(t0)} s:`);
    say('   etcd        3 members, 192.168.77.231-233, each in its own namespace (Raft: a majority of 2 commits)');
    say('   API servers 2, 192.168.77.241-242, stateless: everything they know is in etcd');
    say('   HAProxy     192.168.77.1:6443, the one address kubectl and the kubeconfigs name (health checks of /readyz)');
    say('   nodes       node1, node2: their agents follow the kubernetes EndpointSlice and balance over the API servers');
    say(indent(await etcdStatus()));
    say(indent(await out(['get', 'endpointslice', 'kubernetes'])));
    say(indent(await out(['get', 'lease', '-n', 'kube-system'])));
    explain('each API server renews a lease every 10 s, and the kubernetes EndpointSlice lists those alive;');
    explain('the scheduler and the controller manager run in both, and the Leases say which one acts.');

    // ---- 1. the etcd leader ----
    step(1, 'the etcd leader killed under a stream of writes');
    const acked: string[] = [];
    const ackedAt: number[] = [];
    let refused = 0;
    let stop = false;
    const w0 = Date.now();
    const writer = (async () => {
      for (let n = 0; !stop; n++) {
        const r = await kubectl(['create', 'service', 'clusterip', `w${n}`, '--tcp=80:80']);
        if (r.exitCode === 0) {
          acked.push(`w${n}`);
          ackedAt.push(Date.now());
        } else refused++;
      }
    })();
    await sleep(2000);
    const killAt = Date.now();
    const leader = await etcdLeader(ha);
    await act('kill', { kind: 'leader', of: 'etcd' });
    const killed = Date.now();
    await sleep(5000);
    // A write in flight to the killed leader waits out the etcd client's deadline (5 s) before it is refused, and on
    // a busy machine each kubectl takes half a second: the stream goes on until writes are acknowledged again.
    await until('writes acknowledged after the kill', async () => ackedAt.filter((t) => t > killed).length >= 3);
    stop = true;
    await writer;
    const tl = writeTimeline(ackedAt, w0, Date.now());
    const names = new Set((await out(['get', 'svc', '-o', 'name'])).split('\n').map((l) => l.replace('service/', '')));
    const lost = acked.filter((n) => !names.has(n));
    say(`   writes per half second: ${tl.bar}   (the kill at ${((killAt - w0) / 1000).toFixed(1)} s)`);
    say(`   ${acked.length} writes acknowledged, ${refused} refused while there was no leader, the longest pause ${(tl.longestGapMs / 1000).toFixed(1)} s; lost: ${lost.length}`);
    say(indent(await etcdStatus()));
    explain(`member ${leader} is gone; the other two elected a leader (a majority of 3 is 2) and writes went on.`);
    await act('start', { kind: 'etcd', index: leader });

    // ---- 2. an API server ----
    step(2, 'an API server killed: kubectl and the agents carry on');
    await act('kill', { kind: 'api-server', index: 1 });
    const k0 = Date.now();
    say(indent(await out(['get', 'nodes'])));
    await out(['create', 'service', 'clusterip', 'after-kill', '--tcp=80:80']);
    const ip = (await out(['get', 'svc', 'after-kill', '-o', 'jsonpath={.spec.clusterIP}'])).trim();
    await until('node2 to program a Service made after the kill', async () => (await nodes[1]!.exec(['iptables-save'], true)).stdout.includes(`${ip}/32`));
    explain(`kubectl went through HAProxy to the other server; node2's agent watched the new Service (${ip}) through its balancer.`);
    await until('the slice to drop the killed server', async () => !(await out(['get', 'endpointslice', 'kubernetes', '-o', 'jsonpath={.endpoints[*].addresses[0]}'])).includes('192.168.77.241'));
    say(indent(await out(['get', 'endpointslice', 'kubernetes'])));
    explain(`the killed server's lease was not renewed: ${since(k0)} s after the kill it left the kubernetes EndpointSlice.`);
    await act('start', { kind: 'api-server', index: 1 });

    // ---- 3. the controller manager's leader ----
    step(3, 'the controller manager\'s leader killed: the Lease changes hands');
    await out(['create', 'deployment', 'web', '--image=nodenet/host', '--replicas=1', '--', 'sleep', '3600']);
    await until('the web ReplicaSet', async () => /web-/.test(await out(['get', 'rs', '-o', 'name'])));
    const before = await leaseHolder(ha, 'kube-controller-manager');
    say(`   kube-controller-manager is held by API server ${before.server} (${before.holder})`);
    await act('kill', { kind: 'leader', of: 'controller-manager' });
    const c0 = Date.now();
    await out(['scale', 'deployment', 'web', '--replicas=3']);
    say('   $ kubectl scale deployment web --replicas=3   (while no controller manager acts)');
    await until('another leader', async () => { const h = await leaseHolder(ha, 'kube-controller-manager'); return h.server > 0 && h.server !== before.server; });
    const after = await leaseHolder(ha, 'kube-controller-manager');
    say(`   ${since(c0)} s later API server ${after.server} holds it (lease 15 s, retries every 2 s)`);
    await until('the scale reconciled', async () => (await out(['get', 'rs', '-l', 'app=web', '-o', 'jsonpath={.items[0].spec.replicas}'])).trim() === '3');
    say(indent(await out(['get', 'deployment,rs', '-l', 'app=web'])));
    explain('the new leader\'s Deployment controller saw the scale and set the ReplicaSet to 3: one acts, never two.');
    await act('start', { kind: 'api-server', index: before.server });

    // ---- 4. quorum ----
    step(4, 'quorum lost: 2 of 3 etcd members down');
    const lead = await etcdLeader(ha) || 1;
    const others = [1, 2, 3].filter((i) => i !== lead);
    for (const i of others) await act('kill', { kind: 'etcd', index: i });
    const r = await kubectl(['create', 'service', 'clusterip', 'no-quorum', '--tcp=80:80']);
    say(`   $ kubectl create service clusterip no-quorum\n   ${(r.exitCode === 0 ? r.stdout : r.stderr).trim()}`);
    explain(r.exitCode === 0 ? 'UNEXPECTED: a write without a quorum succeeded' : 'one member cannot commit alone: the write fails, and says so; it is never acknowledged falsely.');
    for (const i of others) await act('start', { kind: 'etcd', index: i });
    await until('writes to go on', async () => (await kubectl(['create', 'service', 'clusterip', 'quorum-back', '--tcp=80:80'])).exitCode === 0);
    say(indent(await out(['get', 'svc', 'quorum-back'])));
    explain('quorum back: everything continues where it was.');

    // ---- 5. leader election inside an app ----
    step(5, 'leader election inside an app: 3 replicas spread one per node, one Lease, from inside their Pods');
    const rbac = ['create serviceaccount elector', 'create role elector --verb=get,create,update --resource=leases.coordination.k8s.io', 'create rolebinding elector --role=elector --serviceaccount=default:elector'];
    for (const c of rbac) await out(c.split(' '));
    const app = electorDeployment(AGENT_JS);
    const applied = await cp.kubectl(['apply', '-f', '-'], true, JSON.stringify(app));
    if (applied.exitCode !== 0) throw new Error(`demo: kubectl apply elector: ${applied.stderr.trim()}`);
    say('   $ kubectl create serviceaccount elector; create role elector --verb=get,create,update --resource=leases; create rolebinding ...');
    say('   $ kubectl apply  (a Deployment of 3: nodenet serve --leader-elect elector, as ServiceAccount elector,');
    say('     with required pod anti-affinity on kubernetes.io/hostname: never two replicas on one node)');
    const holder = async () => (await kubectl(['get', 'lease', 'elector', '-o', 'jsonpath={.spec.holderIdentity}'])).stdout.trim();
    await until('a leader among the replicas', async () => (await holder()) !== '');
    // More replicas than nodes: one runs on each node, the last waits, and its FailedScheduling Event says why.
    // What was seen last goes into the error if that never comes.
    let seen = '';
    const pending = nodes.length < 3 ? await untilValue('the replica with no node left to be unschedulable', async () => {
      const pods = JSON.parse(await out(['get', 'pods', '-l', 'app=elector', '-o', 'json'])) as { items: ElectorPod[] };
      const scheduled = (p: ElectorPod) => p.status.conditions?.find((c) => c.type === 'PodScheduled');
      const ctr = (p: ElectorPod) => p.status.containerStatuses?.[0];
      seen = pods.items.map((p) => `${p.metadata.name} ${p.status.phase ?? '?'} on ${p.spec.nodeName || '-'} PodScheduled=${scheduled(p)?.status ?? '?'}${scheduled(p)?.reason ? ` (${scheduled(p)!.reason})` : ''} ready=${String(ctr(p)?.ready ?? false)} restarts=${ctr(p)?.restartCount ?? 0}`).join(', ');
      // Nothing restarts a replica but its own exit (no probes): a restart is a crash, said with what it printed.
      const crashed = pods.items.find((p) => (ctr(p)?.restartCount ?? 0) > 0);
      if (crashed) {
        const prev = await kubectl(['logs', '--previous', crashed.metadata.name]);
        throw new CrashedReplica(`demo: replica ${crashed.metadata.name} exited (${JSON.stringify(ctr(crashed)?.lastState ?? {})}); its previous run printed:\n${(prev.stdout + prev.stderr).trim().slice(-3000)}`);
      }
      const stuck = pods.items.find((p) => scheduled(p)?.status === 'False' && scheduled(p)?.reason === 'Unschedulable');
      if (!stuck || pods.items.filter((p) => p.status.phase === 'Running' && ctr(p)?.ready === true).length !== nodes.length) return null;
      const event = describePending(await out(['describe', 'pod', stuck.metadata.name])).split('\n').filter((l) => /FailedScheduling/.test(l)).pop();
      if (!event) seen += `; no FailedScheduling event of ${stuck.metadata.name} yet`;
      return event ? { name: stuck.metadata.name, event } : null;
    }, () => seen) : null;
    const first = await holder();
    say(indent(await out(['get', 'pods', '-l', 'app=elector', '-o', 'wide'])));
    if (pending) {
      say(`   $ kubectl describe pod ${pending.name}   (its Events)`);
      say(indent(pending.event));
      explain(`${nodes.length} nodes, 3 replicas: one per node, and the last waits for a node without a replica (a node added would take it).`);
    }
    say(indent(await out(['get', 'lease', 'elector'])));
    explain(`${first} leads: each replica reads and renews the Lease through the API with its own token (client-go's 15/10/2 s).`);
    const l0 = Date.now();
    await out(['delete', 'pod', first, '--wait=false']);
    say(`   $ kubectl delete pod ${first}`);
    await until('another replica leading', async () => { const h = await holder(); return h !== '' && h !== first; });
    const second = await holder();
    say(`   ${since(l0)} s later ${second} holds the Lease (the deleted leader released it on SIGTERM; killed, it would expire in 15 s)`);
    explain('the seeds\' pattern for an app that must act once: several replicas for availability, one leader at a time.');
    say('\ndone: the state lives in etcd, any API server serves it, and one elected leader acts.');
    return r.exitCode === 0 || lost.length ? 1 : 0;
  } finally {
    await cleanup();
  }
}
