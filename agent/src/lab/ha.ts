/**
 * lab/ha: a lab's highly available control plane, and the faults users and
 * tests inflict on it (the plan and its reasons: lab/ha-plan.ts).
 *
 * HaParts builds it inside a Lab: a namespace per etcd member and per API
 * server on the underlay, the etcd members (Debian's etcd), the API servers
 * (`nodenet control-plane --storage etcd:...`, each with a data directory
 * of its own holding the first one's CA and tokens), and HAProxy in the
 * underlay namespace on 192.168.77.1:6443. Every process is recorded in the
 * lab's processes.json under its role (`etcd 2`, `api-server 1`, `haproxy`),
 * which is all `haAct` needs: `nodenet lab kill|stop|cont|partition|heal|
 * start` run in another process than the one that made the lab.
 *
 * Safety: everything is inside the lab's namespaces; the only root-namespace
 * effects are the processes and the files under the lab's run directory.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { closeSync, copyFileSync, existsSync, mkdirSync, openSync, readFileSync, writeFileSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';
import { ErrorCode, NodenetError } from '../../../lib/errors/errors.js';
import type { Runner } from '../exec/runner.js';
import { isAlive } from '../netns/proc.js';
import {
  API_PORT, apiServerArgs, apiServerIP, apiServerNetns, apiServerPort, apiServerRole, ETCD_CLIENT_PORT, etcdArgs, etcdEndpoints, etcdIP, etcdLeaderFromStatus,
  etcdNetns, etcdPort, etcdRole, HAPROXY_ROLE, haproxyConfig, serverOfIdentity, type HaAction, type HaShape, type HaTarget,
} from './ha-plan.js';
import { readProcesses, replaceProcess } from './owner.js';
import { UNDERLAY_PREFIX } from './plan.js';

/** What the HA operations need to know of a lab (from the Lab in-process, or from lab.json). */
export interface HaLab {
  readonly runner: Runner;
  readonly tag: string;
  readonly runRoot: string;
  readonly shape: HaShape;
  readonly nodes: readonly string[];
  /** The node program (dist/nodenet.js) the API servers run. */
  readonly agentJs: string;
  /** Start processes in sessions of their own that outlive this process (`lab up`). */
  readonly detached: boolean;
  /** More `nodenet control-plane` arguments for every API server. */
  readonly apiServerExtraArgs?: readonly string[];
}

export const apiServerDataDir = (runRoot: string, i: number): string => `${runRoot}/api${i}`;
const ul = (tag: string) => `nn-${tag}-ul`;

function spawnIn(netns: string, argv: readonly string[], logFile: string, detached: boolean): ChildProcess {
  const out = openSync(logFile, 'a');
  // nsenter execs the program: the pid is the program's own.
  const p = spawn('nsenter', [`--net=/var/run/netns/${netns}`, '--', ...argv], { stdio: ['ignore', out, out], detached });
  closeSync(out);
  if (detached) p.unref();
  return p;
}

function tail(file: string, n = 1500): string {
  try {
    return readFileSync(file, 'utf8').slice(-n);
  } catch {
    return '';
  }
}

/** The programs an HA lab runs, and their Debian packages. */
const HA_PROGRAMS: readonly (readonly [string, string])[] = [['etcd', 'etcd-server'], ['etcdctl', 'etcd-client'], ['haproxy', 'haproxy']];

/** @throws NotAvailable naming the packages to install when a program an HA lab runs is missing (before anything is made). */
export async function requireHaPrograms(runner: Runner): Promise<void> {
  const missing: string[] = [];
  for (const [cmd, pkg] of HA_PROGRAMS) {
    const r = await runner.run(['sh', '-c', `command -v ${cmd}`], { allowFailure: true });
    if (r.exitCode !== 0 && !missing.includes(pkg)) missing.push(pkg);
  }
  if (missing.length) throw new NodenetError(ErrorCode.NotAvailable, `the HA control plane runs Debian's etcd and HAProxy, and ${missing.join(', ')} ${missing.length > 1 ? 'are' : 'is'} not installed: apt-get install -y ${missing.join(' ')}`);
}

/** Starts etcd member i (new: at the lab's start; existing: on its data again). */
export function startEtcdMember(lab: HaLab, i: number, state: 'new' | 'existing'): ChildProcess {
  const dataDir = `${lab.runRoot}/etcd${i}`;
  mkdirSync(dataDir, { recursive: true, mode: 0o700 });
  const p = spawnIn(etcdNetns(lab.tag, i), ['etcd', ...etcdArgs(lab.tag, i, lab.shape.etcdMembers, dataDir, state)], `${lab.runRoot}/etcd${i}.log`, lab.detached);
  replaceProcess(lab.runRoot, etcdRole(i), p.pid!);
  return p;
}

/** Starts API server i on its data directory (which holds the first one's CA and tokens once that one ran). */
export function startApiServer(lab: HaLab, i: number): ChildProcess {
  const dataDir = apiServerDataDir(lab.runRoot, i);
  mkdirSync(dataDir, { recursive: true, mode: 0o700 });
  const argv = [process.execPath, lab.agentJs, ...apiServerArgs(i, lab.shape.etcdMembers, dataDir, lab.nodes, `${lab.runRoot}/api${i}.log`, lab.apiServerExtraArgs ?? [])];
  const p = spawnIn(apiServerNetns(lab.tag, i), argv, `${lab.runRoot}/api${i}.stderr`, lab.detached);
  replaceProcess(lab.runRoot, apiServerRole(i), p.pid!);
  return p;
}

function startHaproxy(lab: HaLab): ChildProcess {
  const cfg = `${lab.runRoot}/haproxy.cfg`;
  writeFileSync(cfg, haproxyConfig(lab.shape.apiServers));
  const p = spawnIn(ul(lab.tag), ['haproxy', '-db', '-f', cfg], `${lab.runRoot}/haproxy.log`, lab.detached);
  replaceProcess(lab.runRoot, HAPROXY_ROLE, p.pid!);
  return p;
}

/** Runs argv in the underlay namespace (etcdctl, kubectl: they reach every part from there). */
function inUnderlay(lab: HaLab, argv: readonly string[]) {
  return lab.runner.run(['nsenter', `--net=/var/run/netns/${ul(lab.tag)}`, '--', ...argv], { allowFailure: true });
}

/** Waits until etcd serves a quorum read through its members. */
export async function waitEtcd(lab: HaLab, timeoutMs = 30_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const r = await inUnderlay(lab, ['etcdctl', `--endpoints=${etcdEndpoints(lab.shape.etcdMembers)}`, '--command-timeout=2s', 'get', 'nn-ready']);
    if (r.exitCode === 0) return;
    if (Date.now() > deadline) throw new Error(`etcd has no quorum after ${timeoutMs / 1000} s: ${r.stderr.trim()}\n${tail(`${lab.runRoot}/etcd1.log`)}`);
    await sleep(200);
  }
}

/** Waits until API server i answers /readyz (directly, not through the balancer). */
export async function waitApiServer(lab: HaLab, i: number, alive: () => boolean, timeoutMs = 30_000): Promise<void> {
  const kc = `${apiServerDataDir(lab.runRoot, i)}/admin.kubeconfig`;
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (!alive()) throw new Error(`API server ${i} exited at start: ${tail(`${lab.runRoot}/api${i}.stderr`)}`);
    if (existsSync(kc)) {
      const r = await inUnderlay(lab, ['kubectl', '--kubeconfig', kc, '--server', `https://${apiServerIP(i)}:${API_PORT}`, 'get', '--raw', '/readyz']);
      if (r.exitCode === 0) return;
    }
    if (Date.now() > deadline) throw new Error(`API server ${i} not ready after ${timeoutMs / 1000} s: ${tail(`${lab.runRoot}/api${i}.stderr`)}`);
    await sleep(150);
  }
}

/** The parts a LabControlPlane runs in HA mode. */
export class HaParts {
  readonly procs = new Map<string, ChildProcess>();

  constructor(readonly lab: HaLab, private readonly addHost: (name: string, addr: string, port: string) => Promise<unknown>) {}

  /** The balancer's pid: the part that stays while members and servers are killed (the lab's owner under `lab up`). */
  get pid(): number | null {
    return this.procs.get(HAPROXY_ROLE)?.pid ?? null;
  }

  async start(): Promise<void> {
    const { shape, tag } = this.lab;
    for (let i = 1; i <= shape.etcdMembers; i++) await this.addHost(`etcd${i}`, `${etcdIP(i)}/${UNDERLAY_PREFIX}`, etcdPort(tag, i));
    for (let i = 1; i <= shape.apiServers; i++) await this.addHost(`api${i}`, `${apiServerIP(i)}/${UNDERLAY_PREFIX}`, apiServerPort(tag, i));
    for (let i = 1; i <= shape.etcdMembers; i++) this.procs.set(etcdRole(i), startEtcdMember(this.lab, i, 'new'));
    await waitEtcd(this.lab);
    // The first API server makes the CA, the ServiceAccount signing key and the tokens; the others start with
    // copies (one cluster, one trust).
    const first = startApiServer(this.lab, 1);
    this.procs.set(apiServerRole(1), first);
    await waitApiServer(this.lab, 1, () => first.exitCode === null && first.signalCode === null);
    const src = apiServerDataDir(this.lab.runRoot, 1);
    for (let i = 2; i <= shape.apiServers; i++) {
      const dst = apiServerDataDir(this.lab.runRoot, i);
      mkdirSync(`${dst}/pki`, { recursive: true, mode: 0o700 });
      for (const f of ['pki/ca.crt', 'pki/ca.key', 'pki/sa.key', 'pki/sa.pub', 'tokens.json']) copyFileSync(`${src}/${f}`, `${dst}/${f}`);
      this.procs.set(apiServerRole(i), startApiServer(this.lab, i));
    }
    for (let i = 2; i <= shape.apiServers; i++) {
      const p = this.procs.get(apiServerRole(i))!;
      await waitApiServer(this.lab, i, () => p.exitCode === null && p.signalCode === null);
    }
    this.procs.set(HAPROXY_ROLE, startHaproxy(this.lab));
  }

  /** Kills every part (the lab's destroy removes the namespaces). */
  async stop(signal: NodeJS.Signals): Promise<void> {
    for (const p of readProcesses(this.lab.runRoot)) {
      if (!(p.role === HAPROXY_ROLE || p.role.startsWith('etcd ') || p.role.startsWith('api-server '))) continue;
      if (!isAlive(p.pid, p.startTime)) continue;
      try {
        process.kill(p.pid, 'SIGCONT');
        process.kill(p.pid, signal);
      } catch { /* gone */ }
    }
    const deadline = Date.now() + 10_000;
    while (Date.now() < deadline && readProcesses(this.lab.runRoot).some((p) => (p.role === HAPROXY_ROLE || p.role.startsWith('etcd ') || p.role.startsWith('api-server ')) && isAlive(p.pid, p.startTime))) await sleep(50);
    this.procs.clear();
  }
}

/** The running process recorded under a role, or null. */
function recorded(lab: HaLab, role: string): { pid: number; startTime: string } | null {
  const p = readProcesses(lab.runRoot).find((x) => x.role === role);
  return p && isAlive(p.pid, p.startTime) ? p : null;
}

/** Which etcd member leads now (0: none answers as leader). */
export async function etcdLeader(lab: HaLab): Promise<number> {
  const r = await inUnderlay(lab, ['etcdctl', `--endpoints=${etcdEndpoints(lab.shape.etcdMembers)}`, '--command-timeout=2s', 'endpoint', 'status', '-w', 'json']);
  return etcdLeaderFromStatus(r.stdout);
}

/** Which API server holds a leader-election Lease now (0: none known). */
export async function leaseHolder(lab: HaLab, lease: 'kube-controller-manager' | 'kube-scheduler'): Promise<{ server: number; holder: string }> {
  const kc = `${apiServerDataDir(lab.runRoot, 1)}/admin.kubeconfig`;
  const r = await inUnderlay(lab, ['kubectl', '--kubeconfig', kc, '--request-timeout=5s', 'get', 'lease', '-n', 'kube-system', lease, '-o', 'jsonpath={.spec.holderIdentity}']);
  const holder = r.stdout.trim();
  const ids = new Map<number, string>();
  for (let i = 1; i <= lab.shape.apiServers; i++) {
    try {
      ids.set(i, readFileSync(`${apiServerDataDir(lab.runRoot, i)}/identity`, 'utf8').trim());
    } catch { /* never started */ }
  }
  return { server: serverOfIdentity(holder, ids), holder };
}

/** The concrete part a target names now (a leader resolved). @throws NotFound when no part leads. */
export async function resolveTarget(lab: HaLab, t: HaTarget): Promise<{ kind: 'etcd' | 'api-server'; index: number }> {
  if (t.kind !== 'leader') return t;
  if (t.of === 'etcd') {
    const i = await etcdLeader(lab);
    if (!i) throw new NodenetError(ErrorCode.NotFound, 'no etcd member leads now (no quorum?)');
    return { kind: 'etcd', index: i };
  }
  const { server, holder } = await leaseHolder(lab, t.of === 'scheduler' ? 'kube-scheduler' : 'kube-controller-manager');
  if (!server) throw new NodenetError(ErrorCode.NotFound, `no API server of this lab holds the ${t.of} lease now (holder ${JSON.stringify(holder)})`);
  return { kind: 'api-server', index: server };
}

/**
 * Does `action` to the part `target` names: kill (SIGKILL), stop (SIGSTOP), cont (SIGCONT), partition (its
 * underlay port down), heal (up), start (a killed part again, on its data). Returns a line saying what was done.
 */
export async function haAct(lab: HaLab, action: HaAction, target: HaTarget): Promise<string> {
  const part = await resolveTarget(lab, target);
  const role = part.kind === 'etcd' ? etcdRole(part.index) : apiServerRole(part.index);
  const lead = target.kind === 'leader' ? `; the ${target.of} leader` : '';
  const what = part.kind === 'etcd' ? `etcd member ${part.index} (${etcdIP(part.index)}:${ETCD_CLIENT_PORT}${lead})` : `API server ${part.index} (${apiServerIP(part.index)}:${API_PORT}${lead})`;
  const proc = recorded(lab, role);
  const port = part.kind === 'etcd' ? etcdPort(lab.tag, part.index) : apiServerPort(lab.tag, part.index);
  switch (action) {
    case 'kill':
    case 'stop':
    case 'cont': {
      if (!proc) throw new NodenetError(ErrorCode.NotFound, `${what} is not running (nodenet lab start ${part.kind}:${part.index})`);
      if (action === 'kill') {
        process.kill(proc.pid, 'SIGCONT');
        process.kill(proc.pid, 'SIGKILL');
        const deadline = Date.now() + 5000;
        while (isAlive(proc.pid, proc.startTime) && Date.now() < deadline) await sleep(20);
        return `killed ${what} (pid ${proc.pid}, SIGKILL)`;
      }
      process.kill(proc.pid, action === 'stop' ? 'SIGSTOP' : 'SIGCONT');
      return `${action === 'stop' ? 'paused' : 'continued'} ${what} (pid ${proc.pid}, ${action === 'stop' ? 'SIGSTOP' : 'SIGCONT'})`;
    }
    case 'partition':
    case 'heal': {
      const r = await lab.runner.run(['ip', '-n', ul(lab.tag), 'link', 'set', port, action === 'partition' ? 'down' : 'up'], { allowFailure: true });
      if (r.exitCode !== 0) throw new NodenetError(ErrorCode.NotAvailable, `${action} ${what}: ${r.stderr.trim()}`);
      return action === 'partition' ? `partitioned ${what}: its underlay port ${port} is down` : `healed ${what}: its underlay port ${port} is up`;
    }
    case 'start': {
      if (proc) throw new NodenetError(ErrorCode.AlreadyExists, `${what} is running already (pid ${proc.pid})`);
      const p = part.kind === 'etcd' ? startEtcdMember(lab, part.index, 'existing') : startApiServer(lab, part.index);
      if (part.kind === 'api-server') await waitApiServer(lab, part.index, () => isAlive(p.pid!, readProcesses(lab.runRoot).find((x) => x.role === role)?.startTime ?? ''));
      return `started ${what} again (pid ${p.pid})`;
    }
  }
}
