/**
 * `nodenet lab`: labs, virtual clusters out of network namespaces on this
 * machine (lab/up.ts builds the ones that outlive the command; the demo and
 * the tests make their own in-process).
 *   nodenet lab up         a cluster: control plane, N nodes with their agents; returns once the Nodes are Ready
 *   nodenet lab add-node   one more node in a running one, configured as the others
 *   nodenet lab down       remove every trace of one
 *   nodenet lab status     its nodes and pods (or every lab)
 *   nodenet lab exec       a command in a node's or a pod's namespaces
 *   nodenet lab cleanup    remove what dead labs and crashed tests left
 *   nodenet lab kill|stop|cont|partition|heal|start TARGET   faults on an HA lab's control plane
 */
import { spawnSync } from 'node:child_process';
import type { Runner } from '../exec/runner.js';
import { haStatus, labAddNode, labDown, labExecArgv, labFault, labNodeList, labStatus, labUp, listLabs, type LabUpOptions } from '../lab/up.js';
import { HA_ACTIONS, haShapeProblem, type HaAction, type HaShape } from '../lab/ha-plan.js';
import { execTarget, labNameProblem, MAX_LAB_NODES, proxyModeProblem, type LabProxyMode } from '../lab/up-plan.js';
import type { IpvsProbeDeps } from '../netfilter/ipvs/ipvs-probe.js';
import { FlagError, parseFlags, type FlagSpecs, type ParsedFlags } from './flags.js';
import { formatTable } from './table.js';
import { OVERLAY_HEADERS, overlayRows } from '../lab/overlay-status.js';
import { packageRoot } from '../config/paths.js';
import { isOverlayBackend, OVERLAY_BACKENDS, type OverlayBackendName } from '../config/config.js';

export const LAB_USAGE = `usage: nodenet lab up [--name NAME] [--nodes N] [--proxy-mode iptables|nftables|ipvs] [--backend vxlan|host-gw|bgp|none] [--run-pods true|false]
                     [--bgp-route-reflectors NODE,...] [--etcd-members 1|3|5|7 [--api-servers M]]
       nodenet lab kill|stop|cont|partition|heal|start [--name NAME] TARGET
       nodenet lab add-node [--name NAME] [NODE]
       nodenet lab down [--name NAME]
       nodenet lab status [--name NAME]
       nodenet lab exec [--name NAME] NODE|POD -- CMD ARGS...
       nodenet lab cleanup
up: a cluster on this machine, out of network namespaces: an underlay bridge, the control plane (reached from here
    on 127.0.0.1 through a relay), N nodes (default 2) with eth0 on the underlay and an agent each (the overlay, VXLAN by
    default, host-gw: the nodes share one L2 underlay, or bgp: a BIRD 2 per node, bird2 installed; the embedded
    kubelet and the proxy, iptables by default). --bgp-route-reflectors n1[,n2]: those nodes (added ones too) run
    with --bgp-route-reflector, the others peer with them only; without it, a full iBGP mesh.
    --overlay is the older name of --backend. It keeps running after the command returns; a crashed
    lab of that name is removed first. ipvs needs a kernel with IPVS (the test-vm/ VMs or your own): without one,
    up refuses before it makes anything. NAME (default "default"): a lowercase letter, then up to 9 letters or digits.
    --etcd-members N: the control plane of the seeds' HA section instead of one process on SQLite: N etcd members
    (an odd number: Raft needs a majority) and M API servers (--api-servers, default 2) on them, each in a
    namespace of its own on the underlay, behind HAProxy on 192.168.77.1:6443; the scheduler and the controller
    manager run in every API server behind leader election. 1 member runs etcd without HA.
kill|stop|cont|partition|heal|start TARGET (an HA lab): SIGKILL, SIGSTOP, SIGCONT, its underlay port down or up,
    or a killed part started again on its data. TARGET: etcd:N, api-server:N, leader:etcd,
    leader:controller-manager or leader:scheduler (the part that leads now).
add-node: one more node in a running lab, configured as the others (its namespace with eth0 on the underlay, its
    agent with the same proxy mode, overlay and pods); returns once its Node is Ready; status, exec and down know it.
    NODE: n1..n20 (default the first free one); nI is 192.168.77.(10+I).
down: removes every trace of the lab (processes, namespaces, pods, mounts, its run directory); idempotent.
status: its nodes (underlay IP, pod CIDR, Ready, agent), each node's overlay as its agent says it (/overlay/status:
    the backend and a row per peer: routed or not and why, for bgp the session's state from BIRD's socket,
    Established, Active, Connect...), the overlay's warnings (a Node not routed: not on the L2 network with host-gw,
    or on another backend) and pods; without --name, every lab and the default's.
exec: runs CMD in a node's network namespace (n1, n2, ...) or in a pod's namespaces (NAMESPACE/NAME, or NAME in
    default); its exit code is passed through.
cleanup: remove the namespaces, processes, mounts and directories of labs whose owner process is gone
(and nn-* namespaces of crashed tests); a running lab or test is left alone.`;

export interface LabCmdDeps {
  readonly runner: Runner;
  readonly cleanupLabs: () => Promise<readonly string[]>;
  readonly stdout: (s: string) => void;
  readonly stderr?: (s: string) => void;
  /** How `up --proxy-mode ipvs` looks for IPVS (default: the real /proc/net/ip_vs); a seam for tests. */
  readonly ipvsExists?: IpvsProbeDeps['exists'];
}

const NAME: FlagSpecs = { name: { type: 'string' } };
const SPECS: Readonly<Record<string, FlagSpecs>> = {
  up: { ...NAME, nodes: { type: 'string' }, 'proxy-mode': { type: 'string' }, backend: { type: 'string' }, overlay: { type: 'string' }, 'run-pods': { type: 'string' }, 'bgp-route-reflectors': { type: 'string' }, 'etcd-members': { type: 'string' }, 'api-servers': { type: 'string' } },
  ...Object.fromEntries(HA_ACTIONS.map((a) => [a, NAME])),
  'add-node': NAME,
  down: NAME,
  status: NAME,
  exec: NAME,
  cleanup: {},
};

/** What `lab up`'s flags give labUp (its other options are the command's deps). */
export type LabUpArgs = Pick<LabUpOptions, 'name' | 'nodes' | 'proxyMode' | 'overlay' | 'runPods' | 'ha' | 'bgpRouteReflectors'>;

function noArgs(p: ParsedFlags): void {
  if (p.positional.length || p.rest.length) throw new FlagError(`unexpected argument ${JSON.stringify([...p.positional, ...p.rest][0])}`);
}

/** --name, checked (pure). */
export function labName(p: ParsedFlags): string {
  const name = p.flags.get('name') ?? 'default';
  const problem = labNameProblem(name);
  if (problem) throw new FlagError(`--name: ${problem}`);
  return name;
}

/** --proxy-mode (pure): iptables (the default), nftables or ipvs; `demo` takes the same. */
export function proxyModeFlag(p: ParsedFlags): LabProxyMode {
  const mode = p.flags.get('proxy-mode') ?? 'iptables';
  const problem = proxyModeProblem(mode);
  if (problem) throw new FlagError(problem);
  return mode as LabProxyMode;
}

/** --backend (pure), or its older name --overlay: vxlan (the default), host-gw, bgp or none; both given, they must agree. */
export function backendFlag(p: ParsedFlags): OverlayBackendName {
  const b = p.flags.get('backend');
  const o = p.flags.get('overlay');
  if (b !== undefined && o !== undefined && b !== o) throw new FlagError(`--backend ${b} and --overlay ${o} disagree: --overlay is the older name of --backend; give one`);
  const v = b ?? o ?? 'vxlan';
  if (!isOverlayBackend(v)) throw new FlagError(`--${b !== undefined ? 'backend' : 'overlay'} must be ${OVERLAY_BACKENDS.join(', ').replace(/, (?=[^,]*$)/, ' or ')}, got ${JSON.stringify(v)}`);
  return v;
}

/** `lab up`'s flags (pure). */
export function labUpArgs(p: ParsedFlags): LabUpArgs {
  noArgs(p);
  const nodes = p.flags.get('nodes') ?? '2';
  if (!/^\d+$/.test(nodes) || Number(nodes) < 1 || Number(nodes) > MAX_LAB_NODES) throw new FlagError(`--nodes ${JSON.stringify(nodes)}: a number of nodes, 1..${MAX_LAB_NODES}`);
  const proxyMode = proxyModeFlag(p);
  const overlay = backendFlag(p);
  const runPods = p.flags.get('run-pods') ?? 'true';
  if (runPods !== 'true' && runPods !== 'false') throw new FlagError(`--run-pods must be true or false, got ${JSON.stringify(runPods)}`);
  const etcd = p.flags.get('etcd-members');
  const servers = p.flags.get('api-servers');
  if (servers !== undefined && etcd === undefined) throw new FlagError('--api-servers: several API servers share etcd; give --etcd-members too (3 for HA)');
  let ha: HaShape | undefined;
  if (etcd !== undefined) {
    if (!/^\d+$/.test(etcd)) throw new FlagError(`--etcd-members ${JSON.stringify(etcd)}: a number of members (1, 3, 5 or 7)`);
    if (servers !== undefined && !/^\d+$/.test(servers)) throw new FlagError(`--api-servers ${JSON.stringify(servers)}: a number of API servers`);
    ha = { etcdMembers: Number(etcd), apiServers: Number(servers ?? '2') };
    const problem = haShapeProblem(ha);
    if (problem) throw new FlagError(problem);
  }
  const rr = p.flags.get('bgp-route-reflectors');
  let reflectors: string[] = [];
  if (rr !== undefined) {
    if (overlay !== 'bgp') throw new FlagError(`--bgp-route-reflectors is for --backend bgp, not ${overlay}`);
    reflectors = [...new Set(rr.split(',').map((w) => w.trim()))];
    const bad = reflectors.find((w) => !/^n([1-9]|1\d|20)$/.test(w));
    if (bad !== undefined) throw new FlagError(`--bgp-route-reflectors: ${JSON.stringify(bad)} is not a lab node name (n1..n${MAX_LAB_NODES}, comma-separated)`);
  }
  return { name: labName(p), nodes: Number(nodes), proxyMode, overlay, runPods: runPods === 'true', ...(ha ? { ha } : {}), ...(reflectors.length ? { bgpRouteReflectors: reflectors } : {}) };
}

/** `lab add-node`'s flags (pure): at most one NODE. */
export function labAddNodeArgs(p: ParsedFlags): { name: string; node?: string } {
  if (p.rest.length || p.positional.length > 1) throw new FlagError(`add-node takes at most one NODE, got ${[...p.positional, ...p.rest].map((w) => JSON.stringify(w)).join(' ')}`);
  const node = p.positional[0];
  return { name: labName(p), ...(node === undefined ? {} : { node }) };
}

/** A fault subcommand's one target word (pure). */
export function labFaultArgs(p: ParsedFlags): { name: string; target: string } {
  if (p.rest.length || p.positional.length !== 1) throw new FlagError('one TARGET: etcd:N, api-server:N, leader:etcd, leader:controller-manager or leader:scheduler');
  return { name: labName(p), target: p.positional[0]! };
}

/** `lab exec`'s target and command (pure): exactly one target word, then `--` and the command. */
export function labExecArgs(p: ParsedFlags): { name: string; target: string; cmd: readonly string[] } {
  if (p.positional.length !== 1) throw new FlagError(p.positional.length ? `one target, got ${p.positional.map((w) => JSON.stringify(w)).join(' ')} (is the -- missing?)` : 'exec needs a target: a node or a pod');
  if (!p.rest.length) throw new FlagError('exec needs a command after --');
  return { name: labName(p), target: p.positional[0]!, cmd: p.rest };
}

export async function labCommand(argv: readonly string[], deps: LabCmdDeps): Promise<number> {
  const [sub, ...tail] = argv;
  const say = (s: string) => deps.stdout(`${s}\n`);
  if (sub === undefined || sub === '-h' || sub === '--help') {
    say(LAB_USAGE);
    return sub === undefined ? 2 : 0;
  }
  const spec = SPECS[sub];
  if (!spec) throw new FlagError(`unknown lab subcommand ${JSON.stringify(sub)} (up, add-node, down, status, exec, cleanup, ${HA_ACTIONS.join(', ')})`);
  const p = parseFlags(tail, spec);
  if (p.help) {
    say(LAB_USAGE);
    return 0;
  }
  switch (sub) {
    case 'up': {
      const a = labUpArgs(p);
      const rec = await labUp({ runner: deps.runner, ...a, say: (s) => say(`  ${s}`), ...(deps.ipvsExists ? { ipvsExists: deps.ipvsExists } : {}) });
      say(`lab ${rec.name} is up: ${rec.nodes.length} node(s) Ready, proxy ${rec.proxyMode}, overlay ${rec.overlay}${rec.bgpRouteReflectors.length ? ` (route reflectors ${rec.bgpRouteReflectors.join(', ')})` : ''}${rec.runPods ? ', pods run by the agents' : ''}${rec.ha ? `, control plane: ${rec.ha.etcdMembers} etcd member(s), ${rec.ha.apiServers} API server(s) behind HAProxy` : ''}.
Use it with the real kubectl:
  export KUBECONFIG=${rec.kubeconfig}
  kubectl get nodes -o wide
  kubectl create deployment web --image=nodenet/host --replicas=2 -- ${process.execPath} ${packageRoot()}bin/nodenet.js serve
  kubectl expose deployment web --port 80 --target-port 8080
  kubectl get pods,services -o wide
Look inside:
  nodenet lab status${rec.name === 'default' ? '' : ` --name ${rec.name}`}
  nodenet lab exec${rec.name === 'default' ? '' : ` --name ${rec.name}`} n1 -- ip -br addr
  nodenet lab exec${rec.name === 'default' ? '' : ` --name ${rec.name}`} ${rec.nodes[rec.nodes.length - 1]} -- curl -s http://<the web Service's CLUSTER-IP>/hostname
${rec.ha ? `Break it and watch it heal:
  nodenet lab kill${rec.name === 'default' ? '' : ` --name ${rec.name}`} leader:etcd
  nodenet lab kill${rec.name === 'default' ? '' : ` --name ${rec.name}`} leader:controller-manager
  nodenet lab start${rec.name === 'default' ? '' : ` --name ${rec.name}`} etcd:N
` : ''}Remove it: nodenet lab down${rec.name === 'default' ? '' : ` --name ${rec.name}`}`);
      return 0;
    }
    case 'kill':
    case 'stop':
    case 'cont':
    case 'partition':
    case 'heal':
    case 'start': {
      const a = labFaultArgs(p);
      say(await labFault(deps.runner, a.name, sub as HaAction, a.target));
      return 0;
    }
    case 'add-node': {
      const a = labAddNodeArgs(p);
      const r = await labAddNode({ runner: deps.runner, ...a, say: (s) => say(`  ${s}`) });
      const nameFlag = r.record.name === 'default' ? '' : ` --name ${r.record.name}`;
      say(`node ${r.node} joined lab ${r.record.name}: ${r.ready} of ${r.record.nodes.length} node(s) Ready.
  kubectl get nodes -o wide
  nodenet lab exec${nameFlag} ${r.node} -- ip -br addr`);
      return 0;
    }
    case 'down': {
      noArgs(p);
      const name = labName(p);
      const removed = await labDown(deps.runner, name);
      say(removed.length ? `lab ${name} removed:\n${removed.map((r) => `  ${r}`).join('\n')}` : `no lab ${name}: nothing to remove`);
      return 0;
    }
    case 'status': {
      noArgs(p);
      // Without --name: every lab when there are several, then the default lab (or the only one `lab up` made).
      const upLabs = listLabs().filter((l) => l.up || p.flags.has('name'));
      const name = p.flags.has('name') ? labName(p) : (upLabs.find((l) => l.name === 'default') ?? (upLabs.length === 1 ? upLabs[0] : undefined))?.name;
      if (!p.flags.has('name')) {
        const labs = listLabs();
        if (!labs.length) say('no labs (nodenet lab up makes one)');
        else if (labs.length > 1 || !name) say(formatTable(['LAB', 'STATE', 'MADE BY', 'NODES', 'API'], labs.map((l) => [l.name, l.state, l.up ? 'lab up' : 'test/demo', l.up ? String(l.nodes) : '-', l.port ? `https://127.0.0.1:${l.port}` : '-'])));
      }
      if (!name) return 0;
      const st = await labStatus(deps.runner, name);
      say(`lab ${name}: ${st.state}, API https://127.0.0.1:${st.record.port}, KUBECONFIG=${st.record.kubeconfig}, proxy ${st.record.proxyMode}, overlay ${st.record.overlay}${st.record.bgpRouteReflectors.length ? ` (route reflectors ${st.record.bgpRouteReflectors.join(', ')})` : ''}`);
      if (st.apiError) say(`the API did not answer: ${st.apiError}`);
      if (st.record.ha) {
        const h = await haStatus(deps.runner, name);
        const role = (r: string) => st.processes.filter((x) => x.role.startsWith(r)).map((x) => `${x.role.split(' ')[1]}${x.alive ? '' : ' (dead)'}`).join(' ');
        say(`control plane: etcd members ${role('etcd ')}, leader ${h?.etcdLeader || 'none'}; API servers ${role('api-server ')} behind HAProxy; kube-controller-manager on API server ${h?.controllerManager || '?'}, kube-scheduler on ${h?.scheduler || '?'}`);
      }
      say(`\n${formatTable(['NODE', 'UNDERLAY IP', 'POD CIDR', 'STATUS', 'AGENT'], st.nodes.map((n) => [n.name, n.internalIP, n.podCIDR, n.ready, n.agent])).trimEnd()}`);
      if (st.overlay.length) {
        say(`\noverlay (each node's agent, /overlay/status${st.record.overlay === 'bgp' ? '; bgp: each session as BIRD\'s socket says it' : ''}):\n${formatTable([...OVERLAY_HEADERS], overlayRows(st.overlay)).trimEnd()}`);
      }
      if (st.overlayWarnings.length) {
        say(`\noverlay warnings (Warning Events on the Nodes; kubectl get events --field-selector reason=<REASON>):\n${formatTable(['NODE', 'FROM', 'REASON', 'COUNT', 'LAST', 'MESSAGE'], st.overlayWarnings.map((w) => [w.node, w.from, w.reason, String(w.count), w.last, w.message])).trimEnd()}`);
      }
      say(`\n${st.pods.length ? formatTable(['POD', 'NODE', 'IP', 'PHASE'], st.pods.map((r) => [r.pod, r.node, r.ip, r.phase])).trimEnd() : 'no pods'}`);
      const dead = st.processes.filter((x) => !x.alive);
      if (dead.length) say(`\nnot running: ${dead.map((x) => `${x.role} (pid ${x.pid})`).join(', ')}`);
      return 0;
    }
    case 'exec': {
      const a = labExecArgs(p);
      let target;
      try {
        target = execTarget(a.target, labNodeList(a.name));
      } catch (e) {
        if (e instanceof RangeError) throw new FlagError(e.message);
        throw e;
      }
      const [cmd, ...args] = labExecArgv(a.name, target, a.cmd);
      const r = spawnSync(cmd!, args, { stdio: 'inherit' });
      if (r.error) throw r.error;
      return r.status ?? 128 + (r.signal ? ({ SIGHUP: 1, SIGINT: 2, SIGKILL: 9, SIGTERM: 15 } as Record<string, number>)[r.signal] ?? 0 : 0);
    }
    default: {
      noArgs(p);
      const removed = await deps.cleanupLabs();
      say(removed.length ? `removed ${removed.length} leftover(s):\n${removed.map((r) => `  ${r}`).join('\n')}` : 'nothing left over');
      return 0;
    }
  }
}
