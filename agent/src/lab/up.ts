/**
 * lab/up: labs that outlive the command that made them: `nodenet lab up`,
 * `down`, `status` and `exec`. The tests and the demo build labs in-process
 * with the Lab class; this builds the same lab with it, but starts every
 * long-running process detached (its own session, stdio to files), so that
 * the cluster keeps running after `lab up` returns to the shell:
 * - the control plane, in the underlay namespace (Lab.startControlPlane);
 * - the relay in the underlay namespace from a unix socket in the run
 *   directory to the API server, and the loopback relay in the root
 *   namespace on 127.0.0.1:<a free port> to that socket (the same two hops
 *   as LabControlPlane.localAccess, each a process of its own here);
 * - one agent per node (VNode.startAgent), with the overlay, the embedded
 *   kubelet and the proxy.
 * Each is recorded in processes.json as it starts, and the control plane
 * becomes the lab's owner (see lab/up-plan.ts for the rule). lab.json holds
 * what `status` and `exec` need: the nodes, the port, the kubeconfig.
 * `add-node` adds one more node, configured as the others, to a running
 * lab: the control plane made a token for every node a lab may have
 * (n1..n20) at `up`, so nothing restarts.
 *
 * The only things in the root namespace are the loopback listener and the
 * files under the run directory; `down` removes every trace and is
 * idempotent, on a running, half-made or crashed lab alike.
 */
import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { ErrorCode, NodenetError } from '../../../lib/errors/errors.js';
import type { Runner } from '../exec/runner.js';
import { requireIpvs, type IpvsProbeDeps } from '../netfilter/ipvs/ipvs-probe.js';
import { isAlive } from '../netns/proc.js';
import { writeFileDurable } from '../../../lib/state/durable.js';
import { readJsonFile } from '../../../lib/state/read.js';
import { pausePath } from '../config/paths.js';
import type { OverlayBackendName } from '../config/config.js';
import { REASON_PEER_NOT_DIRECT } from '../overlay/overlay.js';
import { REASON_BACKEND_MISMATCH } from '../overlay/subnet.js';
import { ProcessPodRuntime } from '../pods/runtime.js';
import { AGENT_JS, Lab, LabControlPlane, relayScript, VNode } from './lab.js';
import { haAct, etcdLeader, leaseHolder, requireHaPrograms, type HaLab } from './ha.js';
import { haShapeProblem, parseHaTarget, type HaAction, type HaShape } from './ha-plan.js';
import { applyLeftovers } from './leftovers.js';
import { labDir } from './nodes.js';
import { DEFAULT_METRICS_ADDRESS, readNodeOverlay, type NodeOverlay } from './overlay-status.js';
import { ownerAlive, readOwner, readProcesses, recordProcess, writeOwner, type LabProcess } from './owner.js';
import { CLUSTER_CIDR, labRoot } from './plan.js';
import { addNodeName, allReady, labCondition, labNameProblem, labNamespaces, labNodeNames, MAX_LAB_NODES, nodeRows, podRows, upAction, type ExecTarget, type LabCondition, type LabProxyMode, type NodeRow, type PodRow } from './up-plan.js';

export const LAB_RECORD = 'lab.json';

/** What `lab up` leaves in lab.json. */
export interface LabRecord {
  readonly name: string;
  readonly nodes: readonly string[];
  /** The loopback relay's port: the API server at https://127.0.0.1:<port>. */
  readonly port: number;
  /** The admin kubeconfig for the loopback URL. */
  readonly kubeconfig: string;
  readonly proxyMode: string;
  /** The nodes' overlay backend (vxlan, host-gw, none: the agent's `backend`). */
  readonly overlay: string;
  readonly runPods: boolean;
  /** An HA control plane's shape (lab/ha-plan.ts); null: one control plane on SQLite. */
  readonly ha: HaShape | null;
  /** bgp: the nodes that run with --bgp-route-reflector (the others peer with them only); [] for a full mesh. */
  readonly bgpRouteReflectors: readonly string[];
  readonly createdAt: string;
}

export interface LabUpOptions {
  readonly runner: Runner;
  readonly name: string;
  readonly nodes: number;
  readonly proxyMode: LabProxyMode;
  /** The overlay backend of every node (lab.json's `overlay`). */
  readonly overlay: OverlayBackendName;
  readonly runPods: boolean;
  /** etcd members and API servers behind HAProxy (lab/ha.ts); absent: one control plane on SQLite. */
  readonly ha?: HaShape;
  /** bgp: the nodes (n<i>, added ones too) that reflect routes; absent or []: a full mesh. */
  readonly bgpRouteReflectors?: readonly string[];
  /** How ipvs mode looks for IPVS before anything is made (default: the real /proc/net/ip_vs); a seam for tests. */
  readonly ipvsExists?: IpvsProbeDeps['exists'];
  /** Default labRoot(). */
  readonly root?: string;
  /** Progress lines. */
  readonly say: (line: string) => void;
  /** How long to wait for every Node to be Ready (default 120 s). */
  readonly readyTimeoutMs?: number;
}

function checkName(name: string): void {
  const p = labNameProblem(name);
  if (p) throw new NodenetError(ErrorCode.InvalidConfig, p);
}

export function readLabRecord(dir: string): LabRecord | null {
  try {
    return readJsonFile(`${dir}/${LAB_RECORD}`, (r) => ({
      name: r.string('name'),
      nodes: r.stringArray('nodes'),
      port: r.int('port', { min: 1, max: 65535 }),
      kubeconfig: r.string('kubeconfig'),
      proxyMode: r.string('proxyMode'),
      overlay: r.string('overlay'),
      runPods: r.bool('runPods'),
      ha: r.optObject('ha') ? { etcdMembers: r.optObject('ha')!.int('etcdMembers', { min: 1 }), apiServers: r.optObject('ha')!.int('apiServers', { min: 1 }) } : null,
      // Absent in a lab.json written before route reflectors.
      bgpRouteReflectors: r.raw('bgpRouteReflectors') === undefined ? [] : r.stringArray('bgpRouteReflectors'),
      createdAt: r.string('createdAt'),
    }));
  } catch {
    return null;
  }
}

/** The state of the lab named `name` under `root`. */
export function labState(name: string, root = labRoot()): LabCondition {
  const dir = labDir(name, root);
  return labCondition(existsSync(dir), readOwner(dir), ownerAlive);
}

async function waitForFile(file: string, what: string, alive: () => boolean, timeoutMs = 10_000): Promise<string> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    try {
      return readFileSync(file, 'utf8');
    } catch {
      /* not yet */
    }
    if (!alive()) throw new Error(`${what} exited at start`);
    if (Date.now() > deadline) throw new Error(`${what} did not start in ${timeoutMs / 1000} s`);
    await sleep(25);
  }
}

async function kubectlJson(runner: Runner, kubeconfig: string, args: readonly string[]): Promise<unknown> {
  const r = await runner.run(['kubectl', '--kubeconfig', kubeconfig, ...args, '-o', 'json'], { allowFailure: true });
  if (r.exitCode !== 0) throw new NodenetError(ErrorCode.NotAvailable, `kubectl ${args.join(' ')}: ${r.stderr.trim() || `exit ${r.exitCode}`}`);
  return JSON.parse(r.stdout) as unknown;
}

/**
 * Builds the lab and returns once every Node is Ready. A crashed lab of the
 * same name is removed first; a running one is refused. In ipvs mode a
 * kernel without IPVS is refused before anything is touched (else every
 * agent would refuse to start, one by one). On failure,
 * everything made so far is removed and the error says what failed, with
 * the tail of the failing process's output.
 */
export async function labUp(o: LabUpOptions): Promise<LabRecord> {
  checkName(o.name);
  const haProblem = o.ha ? haShapeProblem(o.ha) : null;
  if (haProblem) throw new NodenetError(ErrorCode.InvalidConfig, haProblem);
  if (o.ha) await requireHaPrograms(o.runner);
  const nodes = labNodeNames(o.nodes);
  if (o.bgpRouteReflectors?.length && o.overlay !== 'bgp') throw new NodenetError(ErrorCode.InvalidConfig, `route reflectors (${o.bgpRouteReflectors.join(', ')}) are for the bgp backend, not ${o.overlay}`);
  if (o.proxyMode === 'ipvs') await requireIpvs('lab up --proxy-mode ipvs', { runner: o.runner, ...(o.ipvsExists ? { exists: o.ipvsExists } : {}) });
  const root = o.root ?? labRoot();
  const cond = labState(o.name, root);
  const action = upAction(cond);
  if (action === 'refuse' && cond.state === 'running') {
    throw new NodenetError(ErrorCode.AlreadyExists, `lab ${o.name} is already up (its control plane is pid ${cond.owner.pid}): use it (export KUBECONFIG=${labDir(o.name, root)}/kubeconfig), or nodenet lab down --name ${o.name}`);
  }
  if (action === 'clean-then-create' && cond.state === 'crashed') {
    const removed = await labDown(o.runner, o.name, root);
    o.say(`removed what the crashed lab ${o.name} left (${cond.why}): ${removed.length} item(s)`);
  } else {
    // No lab directory, but namespaces of that name (a crash before the directory was made): not ours to keep.
    await labDown(o.runner, o.name, root);
  }
  const lab = await Lab.create(o.name, { runner: o.runner, root });
  const dir = lab.runRoot;
  try {
    if (o.ha) o.say(`control plane: ${o.ha.etcdMembers} etcd member(s) (192.168.77.231-) and ${o.ha.apiServers} API server(s) (192.168.77.241-), each in a namespace of its own, behind HAProxy on https://192.168.77.1:6443...`);
    else o.say(`control plane in ${lab.ul} (https://192.168.77.1:6443)...`);
    // A token for every node the lab may have (n1..n20), not only the first ones: `lab add-node` starts a node's
    // agent with its kubeconfig and needs no restart (a running control plane makes no tokens).
    const cp = await lab.startControlPlane({ nodes: labNodeNames(MAX_LAB_NODES), detached: true, ...(o.ha ? { ha: o.ha } : {}) });
    // From here the lab belongs to its control plane (in HA, to HAProxy, which no fault target stops): this
    // command exits, the lab stays.
    writeOwner(dir, { tag: o.name, namespacePrefix: `nn-${o.name}-` }, cp.pid!);
    const nsRelay = await cp.startSocketRelay({ detached: true });
    recordProcess(dir, 'relay (underlay)', nsRelay.pid!);
    const portFile = `${dir}/loopback.port`;
    const local = spawn(process.execPath, ['-e', relayScript({ host: '127.0.0.1', port: 0, portFile }, { unix: cp.apiSocket })], { detached: true, stdio: 'ignore' });
    local.unref();
    recordProcess(dir, 'relay (loopback)', local.pid!);
    const port = Number(await waitForFile(portFile, 'the loopback relay', () => local.exitCode === null));
    const url = `https://127.0.0.1:${port}`;
    const kubeconfig = `${dir}/kubeconfig`;
    writeFileSync(kubeconfig, readFileSync(cp.kubeconfig, 'utf8').replace(cp.url, url), { mode: 0o600 });
    o.say(`API server on ${url}`);
    const reflectors = o.bgpRouteReflectors ?? [];
    for (const n of nodes) {
      const config = nodeConfig({ ...o, bgpRouteReflectors: reflectors }, n);
      const node = await lab.addNode(n, { clusterCIDR: CLUSTER_CIDR, config });
      o.say(`node ${n}: ${node.ns}, eth0 ${node.underlayIP}, agent starting...`);
      try {
        await node.startAgent({ detached: true });
      } catch (e) {
        const log = tail(node.logFile, 15);
        throw new Error(`the agent of ${n} did not start (config ${JSON.stringify(config)}): ${(e as Error).message}${log ? `\nlast lines of ${node.logFile}:\n${log}` : ''}`, { cause: e });
      }
      recordProcess(dir, `agent ${n}`, node.agentPid!);
    }
    const rec: LabRecord = { name: o.name, nodes, port, kubeconfig, proxyMode: o.proxyMode, overlay: o.overlay, runPods: o.runPods, ha: o.ha ?? null, bgpRouteReflectors: reflectors, createdAt: new Date().toISOString() };
    writeFileDurable(`${dir}/${LAB_RECORD}`, `${JSON.stringify(rec, null, 2)}\n`);
    o.say('waiting for every Node to be Ready...');
    const deadline = Date.now() + (o.readyTimeoutMs ?? 120_000);
    let rows: NodeRow[] = [];
    let lastErr = '';
    while (!allReady(rows, nodes.length)) {
      if (Date.now() > deadline) throw new Error(`the Nodes are not all Ready after ${(o.readyTimeoutMs ?? 120_000) / 1000} s: ${JSON.stringify(rows)} ${lastErr}`);
      for (const p of readProcesses(dir)) if (!isAlive(p.pid, p.startTime)) throw new Error(`${p.role} (pid ${p.pid}) exited while the Nodes came up`);
      await sleep(300);
      try {
        rows = nodeRows(await kubectlJson(o.runner, kubeconfig, ['get', 'nodes']));
      } catch (e) {
        lastErr = (e as Error).message;
      }
    }
    return rec;
  } catch (e) {
    await labDown(o.runner, o.name, root).catch(() => undefined);
    if (e instanceof NodenetError) throw e;
    throw new NodenetError(ErrorCode.NotAvailable, `lab ${o.name} did not come up, and what was made is removed again: ${(e as Error).message}`, { cause: e });
  }
}

/** A node's agent config in a lab made by `up`: every node the same, the ones `add-node` adds too (but bgp's route reflectors). */
export function nodeConfig(r: Pick<LabRecord, 'proxyMode' | 'overlay' | 'runPods' | 'bgpRouteReflectors'>, node: string): Record<string, unknown> {
  return { proxyMode: r.proxyMode, backend: r.overlay, runPods: r.runPods, ...(r.bgpRouteReflectors.includes(node) ? { bgpRouteReflector: true } : {}) };
}

export interface LabAddNodeOptions {
  readonly runner: Runner;
  readonly name: string;
  /** n<i>; default the first free one (lab/up-plan.ts addNodeName). */
  readonly node?: string;
  /** Default labRoot(). */
  readonly root?: string;
  /** Progress lines. */
  readonly say: (line: string) => void;
  /** How long to wait for the new Node to be Ready (default 120 s). */
  readonly readyTimeoutMs?: number;
}

/**
 * One more node in a running lab made by `up`, configured as the others: its namespace with eth0 on the underlay
 * (n<i> at 192.168.77.(10+i)), its agent detached with the kubeconfig the control plane made for n<i> at `up`.
 * Returns once its Node is Ready; then its agent is in processes.json and the node in lab.json, so `status`, `exec`
 * and `down` know it. The node's directory is claimed first (mkdir), so two add-nodes never build one node; on
 * failure, what was made for the node is removed again and the lab is as it was.
 */
export async function labAddNode(o: LabAddNodeOptions): Promise<{ record: LabRecord; node: string; ready: number }> {
  const root = o.root ?? labRoot();
  const { dir, record } = upRecord(o.name, root);
  const cond = labState(o.name, root);
  if (cond.state !== 'running') throw new NodenetError(ErrorCode.NotAvailable, `lab ${o.name} is not running (${cond.state === 'crashed' ? cond.why : 'absent'}): nodenet lab up --name ${o.name} makes it again`);
  // A node directory without a node in lab.json (an add-node under way, or one that crashed) is not offered.
  const claimed = o.node === undefined ? readdirSync(dir).filter((d) => /^n\d+$/.test(d)) : [];
  const pick = addNodeName([...new Set([...record.nodes, ...claimed])], o.node);
  if ('problem' in pick) throw new NodenetError(ErrorCode.InvalidConfig, `lab ${o.name}: ${pick.problem}`);
  const n = pick.name;
  const lab = Lab.attach(o.name, { runner: o.runner, root });
  const cp = new LabControlPlane(lab, labNodeNames(MAX_LAB_NODES), [], record.ha);
  lab.controlPlane = cp;
  if (!existsSync(cp.nodeKubeconfig(n))) {
    throw new NodenetError(ErrorCode.NotAvailable, `lab ${o.name}'s control plane has no credentials for ${n} (no ${cp.nodeKubeconfig(n)}: a lab made before add-node, which made them for its first nodes only): nodenet lab down --name ${o.name}, then up again`);
  }
  try {
    mkdirSync(`${dir}/${n}`);
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'EEXIST') throw new NodenetError(ErrorCode.AlreadyExists, `lab ${o.name}: ${dir}/${n} exists (another add-node of ${n} runs, or one crashed: nodenet lab add-node --name ${o.name} n<i> with another i)`);
    throw e;
  }
  const config = nodeConfig(record, n);
  const node = new VNode(lab, n, pick.index, { clusterCIDR: CLUSTER_CIDR, config });
  try {
    await node.create();
    o.say(`node ${n}: ${node.ns}, eth0 ${node.underlayIP}, agent starting...`);
    try {
      await node.startAgent({ detached: true });
    } catch (e) {
      const log = tail(node.logFile, 15);
      throw new Error(`the agent of ${n} did not start (config ${JSON.stringify(config)}): ${(e as Error).message}${log ? `\nlast lines of ${node.logFile}:\n${log}` : ''}`, { cause: e });
    }
    o.say(`waiting for the Node ${n} to be Ready...`);
    const limitMs = o.readyTimeoutMs ?? 120_000;
    const deadline = Date.now() + limitMs;
    let rows: NodeRow[] = [];
    let lastErr = '';
    while (!rows.some((r) => r.name === n && r.ready === 'Ready')) {
      if (Date.now() > deadline) throw new Error(`the Node ${n} is not Ready after ${limitMs / 1000} s: ${JSON.stringify(rows.find((r) => r.name === n) ?? 'not registered')} ${lastErr}`);
      if (node.agentPid === null) throw new Error(`the agent of ${n} exited while its Node came up: ${node.agentStderr()}`);
      await sleep(300);
      try {
        rows = nodeRows(await kubectlJson(o.runner, record.kubeconfig, ['get', 'nodes']));
      } catch (e) {
        lastErr = (e as Error).message;
      }
    }
    recordProcess(dir, `agent ${n}`, node.agentPid!);
    // Read again: another add-node (of another name) may have written it meanwhile.
    const now = readLabRecord(dir) ?? record;
    const updated: LabRecord = { ...now, nodes: [...now.nodes.filter((x) => x !== n), n] };
    writeFileDurable(`${dir}/${LAB_RECORD}`, `${JSON.stringify(updated, null, 2)}\n`);
    return { record: updated, node: n, ready: rows.filter((r) => r.ready === 'Ready').length };
  } catch (e) {
    await node.destroy().catch(() => undefined);
    rmSync(node.dir, { recursive: true, force: true });
    // The Node it may have registered, which would stay NotReady.
    await o.runner.run(['kubectl', '--kubeconfig', record.kubeconfig, 'delete', 'node', n, '--ignore-not-found', '--wait=false'], { allowFailure: true }).catch(() => undefined);
    if (e instanceof NodenetError) throw e;
    throw new NodenetError(ErrorCode.NotAvailable, `node ${n} did not join lab ${o.name}, and what was made for it is removed again: ${(e as Error).message}`, { cause: e });
  }
}

function tail(file: string, lines: number): string {
  try {
    return readFileSync(file, 'utf8').trimEnd().split('\n').slice(-lines).join('\n');
  } catch {
    return '';
  }
}

/**
 * Removes every trace of the lab: its recorded processes (control plane,
 * agents, relays), every process in its namespaces, the pod sandboxes under
 * its nodes and their Pods' cgroups, the mounts under its run directory, its
 * namespaces and the run directory (lab/leftovers.ts applyLeftovers).
 * Idempotent. Returns a line per thing removed (and one per thing left behind).
 */
export async function labDown(runner: Runner, name: string, root = labRoot()): Promise<string[]> {
  checkName(name);
  const dir = labDir(name, root);
  const all = (await runner.run(['ip', 'netns', 'list'], { allowFailure: true })).stdout.split('\n').map((l) => l.split(' ')[0] ?? '').filter(Boolean);
  return applyLeftovers(runner, { labDirs: existsSync(dir) ? [dir] : [], namespaces: labNamespaces(all, name) });
}

export interface LabSummary {
  readonly name: string;
  readonly state: LabCondition['state'];
  /** Made by `lab up` (else by a test or the demo, in-process). */
  readonly up: boolean;
  readonly nodes: number;
  readonly port: number | null;
}

/** Every lab under `root`. */
export function listLabs(root = labRoot()): LabSummary[] {
  let names: string[] = [];
  try {
    names = readdirSync(root, { withFileTypes: true }).filter((d) => d.isDirectory()).map((d) => d.name).sort();
  } catch {
    return [];
  }
  return names.map((name) => {
    const dir = join(root, name);
    const rec = readLabRecord(dir);
    return { name, state: labCondition(true, readOwner(dir), ownerAlive).state, up: rec !== null, nodes: rec?.nodes.length ?? 0, port: rec?.port ?? null };
  });
}

export interface LabStatus {
  readonly record: LabRecord;
  readonly state: LabCondition['state'];
  readonly nodes: readonly (NodeRow & { readonly agent: string })[];
  readonly pods: readonly PodRow[];
  readonly processes: readonly (LabProcess & { readonly alive: boolean })[];
  /** The overlay's Warning Events on the Nodes: a peer not routed (not on the L2 network, another backend). */
  readonly overlayWarnings: readonly OverlayWarning[];
  /** Why the API could not be asked, when it could not. */
  readonly apiError: string | null;
  /** Each node's overlay as its agent says it (/overlay/status): backend, peers, bgp's session states. */
  readonly overlay: readonly NodeOverlay[];
}

/** An overlay Warning Event on a Node, as `lab status` shows it. */
export interface OverlayWarning {
  /** The Node the Event is on (the peer). */
  readonly node: string;
  /** The node whose agent said it. */
  readonly from: string;
  readonly reason: string;
  readonly count: number;
  readonly last: string;
  readonly message: string;
}

const OVERLAY_REASONS: ReadonlySet<string> = new Set([REASON_PEER_NOT_DIRECT, REASON_BACKEND_MISMATCH]);

/** The overlay's Warning Events on Nodes, from a `kubectl get events -A -o json` list (pure), newest last. */
export function overlayWarnings(list: unknown): OverlayWarning[] {
  const o = (v: unknown): Record<string, unknown> => (typeof v === 'object' && v !== null && !Array.isArray(v) ? (v as Record<string, unknown>) : {});
  const s = (v: unknown): string => (typeof v === 'string' ? v : '');
  const items = Array.isArray(o(list)['items']) ? (o(list)['items'] as unknown[]) : [];
  return items.map(o)
    .filter((e) => s(e['type']) === 'Warning' && OVERLAY_REASONS.has(s(e['reason'])) && s(o(e['involvedObject'])['kind']) === 'Node')
    .map((e) => ({
      node: s(o(e['involvedObject'])['name']),
      from: s(o(e['source'])['host']) || s(e['reportingInstance']) || '-',
      reason: s(e['reason']),
      count: typeof e['count'] === 'number' ? e['count'] : 1,
      last: s(e['lastTimestamp']) || s(e['eventTime']) || s(o(e['metadata'])['creationTimestamp']),
      message: s(e['message']),
    }))
    .sort((a, b) => (a.last < b.last ? -1 : a.last > b.last ? 1 : 0));
}

/** The metrics address a lab node's agent was started with (its agent.json), else the agent's default. */
function agentMetricsAddress(nodeDir: string): string {
  try {
    const v = (JSON.parse(readFileSync(`${nodeDir}/agent.json`, 'utf8')) as Record<string, unknown>)['metricsBindAddress'];
    return typeof v === 'string' && v && !v.endsWith(':0') ? v : DEFAULT_METRICS_ADDRESS;
  } catch {
    return DEFAULT_METRICS_ADDRESS;
  }
}

function upRecord(name: string, root: string): { dir: string; record: LabRecord } {
  checkName(name);
  const dir = labDir(name, root);
  const record = readLabRecord(dir);
  if (!record) throw new NodenetError(ErrorCode.NotFound, `no lab ${name} made by nodenet lab up (no ${dir}/${LAB_RECORD})`);
  return { dir, record };
}

/** The lab's Nodes and Pods from the API (through the loopback kubeconfig) and its processes. */
export async function labStatus(runner: Runner, name: string, root = labRoot()): Promise<LabStatus> {
  const { dir, record } = upRecord(name, root);
  const processes = readProcesses(dir).map((p) => ({ ...p, alive: isAlive(p.pid, p.startTime) }));
  const agentOf = (n: string) => {
    const p = processes.find((x) => x.role === `agent ${n}`);
    return p ? `${p.pid} ${p.alive ? 'running' : 'dead'}` : '-';
  };
  let nodes: NodeRow[] = [];
  let pods: PodRow[] = [];
  let warnings: OverlayWarning[] = [];
  let apiError: string | null = null;
  try {
    nodes = nodeRows(await kubectlJson(runner, record.kubeconfig, ['get', 'nodes']));
    pods = podRows(await kubectlJson(runner, record.kubeconfig, ['get', 'pods', '-A']));
    warnings = overlayWarnings(await kubectlJson(runner, record.kubeconfig, ['get', 'events', '-A']));
  } catch (e) {
    apiError = (e as Error).message;
  }
  const seen = new Set(nodes.map((n) => n.name));
  const rows = [...nodes, ...record.nodes.filter((n) => !seen.has(n)).map((n) => ({ name: n, internalIP: '-', podCIDR: '-', ready: 'Unknown' }))];
  // Asked of each running agent in its node's namespace (its metrics address is loopback there).
  const overlay = record.overlay === 'none' ? [] : await Promise.all(record.nodes.map((n) => {
    const p = processes.find((x) => x.role === `agent ${n}`);
    if (!p?.alive) return { node: n, status: null, error: 'its agent is not running' };
    return readNodeOverlay(runner, n, `/var/run/netns/nn-${name}-${n}`, agentMetricsAddress(`${dir}/${n}`));
  }));
  return { record, state: labState(name, root).state, nodes: rows.map((n) => ({ ...n, agent: agentOf(n.name) })), pods, processes, overlayWarnings: warnings, apiError, overlay };
}

/**
 * The argv that runs `cmd` in a node's namespace (nsenter --net) or in a
 * pod's (nsenter --target <pause pid> --net --uts --ipc), the pod found by
 * the embedded kubelet's record under its node's run directory.
 */
export function labExecArgv(name: string, target: ExecTarget, cmd: readonly string[], root = labRoot()): string[] {
  const { dir, record } = upRecord(name, root);
  if (target.kind === 'node') {
    if (!record.nodes.includes(target.node)) throw new NodenetError(ErrorCode.NotFound, `lab ${name} has no node ${target.node} (${record.nodes.join(', ')})`);
    return ['nsenter', `--net=/var/run/netns/nn-${name}-${target.node}`, '--', ...cmd];
  }
  for (const n of record.nodes) {
    const runtime = new ProcessPodRuntime({ runDir: `${dir}/${n}/run`, pauseBin: pausePath() });
    for (const r of runtime.records()) {
      if (r.namespace !== target.namespace || r.name !== target.name) continue;
      if (!r.sandbox || !isAlive(r.sandbox.pid, r.sandbox.startTime)) throw new NodenetError(ErrorCode.NotFound, `pod ${target.namespace}/${target.name} on ${n} has no running sandbox`);
      return ['nsenter', `--target=${r.sandbox.pid}`, '--net', '--uts', '--ipc', '--', ...cmd];
    }
  }
  throw new NodenetError(ErrorCode.NotFound, `no pod ${target.namespace}/${target.name} runs on the nodes of lab ${name} (no kubelet record under ${dir}/<node>/run/kubelet)`);
}

/** The lab's node names, from lab.json. */
export function labNodeList(name: string, root = labRoot()): readonly string[] {
  return upRecord(name, root).record.nodes;
}

/** The HA operations' view of a lab made by `lab up --etcd-members`. @throws InvalidConfig when it has no HA control plane */
export function haLabOf(runner: Runner, name: string, root = labRoot()): HaLab {
  const { dir, record } = upRecord(name, root);
  if (!record.ha) throw new NodenetError(ErrorCode.InvalidConfig, `lab ${name} has one control plane on SQLite: kill, stop, cont, partition, heal and start work on a lab made with --etcd-members N [--api-servers M]`);
  return { runner, tag: name, runRoot: dir, shape: record.ha, nodes: record.nodes, agentJs: AGENT_JS, detached: true };
}

/** `nodenet lab kill|stop|cont|partition|heal|start TARGET`: a line saying what was done. */
export async function labFault(runner: Runner, name: string, action: HaAction, targetWord: string, root = labRoot()): Promise<string> {
  const lab = haLabOf(runner, name, root);
  const target = parseHaTarget(targetWord, lab.shape);
  if (typeof target === 'string') throw new NodenetError(ErrorCode.InvalidConfig, target);
  return haAct(lab, action, target);
}

/** An HA lab's control plane as `lab status` shows it: who leads etcd and the two leases. */
export async function haStatus(runner: Runner, name: string, root = labRoot()): Promise<{ etcdLeader: number; controllerManager: number; scheduler: number } | null> {
  const { record } = upRecord(name, root);
  if (!record.ha) return null;
  const lab = haLabOf(runner, name, root);
  const [e, cm, sc] = await Promise.all([etcdLeader(lab), leaseHolder(lab, 'kube-controller-manager'), leaseHolder(lab, 'kube-scheduler')]);
  return { etcdLeader: e, controllerManager: cm.server, scheduler: sc.server };
}
