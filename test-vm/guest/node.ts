/**
 * Guest helpers for VM suites: the project's own processes started as on a
 * real node (the same binary and flags lab.ts uses, but in the VM's root
 * namespace: in a VM the node is the VM), the API server over HTTPS with a
 * kubeconfig's CA and token, the CNI shim as a runtime calls it, and waits.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { closeSync, existsSync, mkdirSync, openSync, readFileSync, renameSync, writeFileSync, copyFileSync, symlinkSync } from 'node:fs';
import { request } from 'node:https';
import { parse as parseYaml } from 'yaml';
import { nodenetNetConf } from '../../agent/src/cnitypes/nodenet-netconf.js';
import { SpawnRunner, type RunResult } from '../../agent/src/exec/runner.js';
import { timeScale, waitFor } from '../../agent/src/testing/wait.js';
import type { GuestContext } from '../suite.js';

export { timeScale, waitFor };
export const runner = new SpawnRunner();
export const NODE = process.execPath;
export const AGENT_JS = '/nodenet/dist/nodenet.js';
export const SHIM = '/nodenet/dist/nodenet-cni';

export function sh(argv: readonly string[], input?: string): Promise<RunResult> {
  return runner.run(argv, input === undefined ? {} : { input });
}
export function shOk(argv: readonly string[], input?: string): Promise<RunResult> {
  return runner.run(argv, input === undefined ? { allowFailure: true } : { allowFailure: true, input });
}

/** Writes a file in the share whole (temp + rename), so a VM reading it never sees half. */
export function publish(ctx: GuestContext, name: string, content: string): void {
  const p = `${ctx.share}/${name}`;
  writeFileSync(`${p}.tmp`, content);
  renameSync(`${p}.tmp`, p);
}

/** Waits for a file in the share another VM publishes; returns its content. */
export async function awaitShared(ctx: GuestContext, name: string, timeoutMs: number): Promise<string> {
  const p = `${ctx.share}/${name}`;
  await waitFor(() => existsSync(p), `${name} in the run share`, { timeoutMs, intervalMs: 200 });
  return readFileSync(p, 'utf8');
}

function spawnLogged(argv: readonly string[], logFile: string): ChildProcess {
  const out = openSync(logFile, 'a');
  const p = spawn(argv[0]!, argv.slice(1), { stdio: ['ignore', out, out] });
  closeSync(out);
  return p;
}

export function tail(file: string, lines = 20): string {
  try { return readFileSync(file, 'utf8').split('\n').slice(-lines).join('\n'); } catch { return '(no log)'; }
}

/** `nodenet control-plane` on this VM's underlay address; returns the admin API once /readyz answers. */
export async function startControlPlane(ctx: GuestContext, nodes: readonly string[], timeoutMs: number): Promise<{ api: Api; dataDir: string; proc: ChildProcess }> {
  const dataDir = '/var/lib/nodenet/control-plane';
  mkdirSync(dataDir, { recursive: true, mode: 0o700 });
  const ip = ctx.ip(ctx.vm);
  const proc = spawnLogged([NODE, AGENT_JS, 'control-plane', '--data-dir', dataDir, '--listen', `${ip}:6443`, '--host', ip,
    '--node', nodes.join(','), '--log-level', 'info', '--log-file', '/var/log/nodenet-control-plane.log'], '/var/log/nodenet-control-plane.stderr');
  const kc = `${dataDir}/admin.kubeconfig`;
  let api: Api | null = null;
  await waitFor(async () => {
    if (proc.exitCode !== null) throw new Error(`control plane exited: ${tail('/var/log/nodenet-control-plane.stderr')}`);
    if (!existsSync(kc)) return false;
    api ??= Api.fromKubeconfig(readFileSync(kc, 'utf8'));
    return (await api.raw('GET', '/readyz').catch(() => ({ status: 0 }))).status === 200;
  }, 'the control plane /readyz', { timeoutMs, intervalMs: 200 });
  return { api: api!, dataDir, proc };
}

export interface AgentHandle {
  /** The agent's process when this guest spawned it; null when systemd runs it (provisionAgent). */
  readonly proc: ChildProcess | null;
  readonly runDir: string;
  readonly logFile: string;
  readonly socket: string;
}

/** The node agent with this config (lab.ts's fields), in the VM's root namespace; resolves at agent.ready. */
export async function startAgent(ctx: GuestContext, config: Record<string, unknown>, timeoutMs: number): Promise<AgentHandle> {
  const dir = '/var/lib/nodenet/agent';
  const runDir = '/run/nodenet/agent';
  mkdirSync(`${dir}/state`, { recursive: true });
  mkdirSync(runDir, { recursive: true });
  const logFile = '/var/log/nodenet-agent.log';
  const socket = `${runDir}/cni.sock`;
  const cfg = { nodeName: `vm${ctx.vm}`, stateDir: `${dir}/state`, runDir, cniSocket: socket, logFile, logLevel: 'debug', ...config };
  writeFileSync(`${dir}/agent.json`, JSON.stringify(cfg, null, 2));
  const spawnedAt = new Date().toISOString();
  const proc = spawnLogged([NODE, AGENT_JS, 'agent', '--config', `${dir}/agent.json`], '/var/log/nodenet-agent.stderr');
  await waitFor(() => {
    if (proc.exitCode !== null) throw new Error(`agent exited: ${tail('/var/log/nodenet-agent.stderr')}`);
    return existsSync(`${runDir}/agent.ready`);
  }, 'agent.ready', { timeoutMs, intervalMs: 100 });
  // The start's timeline, kept in the run directory on the host: when it was spawned, then the agent's own log lines up to ready.
  try {
    writeFileSync(`${ctx.share}/agent-start-vm${ctx.vm}.log`, `${JSON.stringify({ time: spawnedAt, msg: 'agent spawned (guest)' })}\n${readFileSync(logFile, 'utf8')}`);
  } catch { /* diagnostics only */ }
  return { proc, runDir, logFile, socket };
}

/**
 * test-vm/provision/nodenet.sh from the repository, as the Vagrantfile runs it (`bash /vagrant/test-vm/provision/
 * nodenet.sh ...`), with the run share as the folder it hands kubeconfigs over in (NODENET_SHARE; the Vagrant
 * path's .nodenet-vagrant/). The project is mounted, already built, where the script installs it (/opt/nodenet), so
 * it skips the install (rsync, npm ci: the VMs have no network) and does the rest: the CLI link, the config, the
 * systemd units, started. Needs a suite booted with systemd (VmSuite.init). Returns the script's output.
 */
export async function provision(ctx: GuestContext, args: readonly string[], timeoutMs: number): Promise<string> {
  if (!existsSync('/opt/nodenet')) { mkdirSync('/opt', { recursive: true }); symlinkSync(ctx.repo, '/opt/nodenet'); }
  const env = { ...process.env as Record<string, string>, NODENET_SRC: '/opt/nodenet', NODENET_SHARE: `${ctx.share}/vagrant`, NODENET_WAIT_SECONDS: String(Math.ceil(timeoutMs / 1000)) };
  const r = await runner.run(['bash', `${ctx.repo}/test-vm/provision/nodenet.sh`, ...args], { env, allowFailure: true, timeoutMs: timeoutMs + 30_000 });
  if (r.exitCode !== 0) throw new Error(`nodenet.sh ${args.join(' ')} exited with ${r.exitCode}: ${r.stdout}${r.stderr}`);
  ctx.log(`nodenet.sh ${args.join(' ')}: ${r.stdout.trim().split('\n').pop() ?? ''}`);
  return r.stdout;
}

/** The admin API nodenet.sh control-plane handed over in the share, once /readyz answers. */
export async function provisionedApi(ctx: GuestContext, timeoutMs: number): Promise<Api> {
  const api = Api.fromKubeconfig(readFileSync(`${ctx.share}/vagrant/admin.kubeconfig`, 'utf8'));
  await waitFor(async () => (await api.raw('GET', '/readyz').catch(() => ({ status: 0 }))).status === 200, 'the control plane /readyz', { timeoutMs, intervalMs: 200 });
  return api;
}

/** Where nodenet.sh's agent config puts the agent's run directory, log and CNI socket. */
export const PROVISIONED_AGENT: AgentHandle = { proc: null, runDir: '/run/nodenet', logFile: '/var/log/nodenet-agent.log', socket: '/run/nodenet/cni.sock' };

/** `nodenet.sh agent vmN IP MODE`: the agent as a systemd unit; resolves once it is ready. */
export async function provisionAgent(ctx: GuestContext, mode: string, timeoutMs: number): Promise<AgentHandle> {
  await provision(ctx, ['agent', `vm${ctx.vm}`, ctx.ip(ctx.vm), mode], timeoutMs);
  await waitFor(async () => {
    const state = (await shOk(['systemctl', 'is-active', 'nodenet-agent'])).stdout.trim();
    if (state === 'failed') throw new Error(`nodenet-agent.service failed: ${await journal('nodenet-agent')}`);
    return existsSync(`${PROVISIONED_AGENT.runDir}/agent.ready`);
  }, 'agent.ready (nodenet-agent.service)', { timeoutMs, intervalMs: 200 });
  return PROVISIONED_AGENT;
}

/** A unit's last journal lines (its stderr; the agent's pino log is in its log file). */
export async function journal(unit: string, lines = 20): Promise<string> {
  return (await shOk(['journalctl', '-u', unit, '-n', String(lines), '--no-pager', '-o', 'cat'])).stdout;
}

/** A unit's property (`systemctl show -p NAME --value`). */
export async function unitProperty(unit: string, name: string): Promise<string> {
  return (await shOk(['systemctl', 'show', '-p', name, '--value', unit])).stdout.trim();
}

/** Takes this VM's node kubeconfig from the share (VM1's control plane published it) into a local file. */
export async function nodeKubeconfig(ctx: GuestContext, timeoutMs: number): Promise<string> {
  await awaitShared(ctx, `kubeconfig-vm${ctx.vm}`, timeoutMs);
  const local = '/var/lib/nodenet/node.kubeconfig';
  mkdirSync('/var/lib/nodenet', { recursive: true });
  copyFileSync(`${ctx.share}/kubeconfig-vm${ctx.vm}`, local);
  return local;
}

/** A network namespace with its own loopback, made a pod by a CNI ADD through the real shim. */
export async function cniPod(agent: AgentHandle, name: string): Promise<{ ns: string; ip: string }> {
  await sh(['ip', 'netns', 'add', name]);
  await sh(['ip', '-n', name, 'link', 'set', 'lo', 'up']);
  const conf = nodenetNetConf({ ipMasq: false, agentSocket: agent.socket });
  const env = { CNI_COMMAND: 'ADD', CNI_CONTAINERID: name, CNI_NETNS: `/var/run/netns/${name}`, CNI_IFNAME: 'eth0', CNI_PATH: '/nodenet/dist', PATH: process.env['PATH'] ?? '/usr/bin:/bin' };
  const r = await runner.run([SHIM], { input: JSON.stringify(conf), env, allowFailure: true });
  if (r.exitCode !== 0) throw new Error(`CNI ADD ${name}: ${r.stdout}${r.stderr}`);
  const ip = (JSON.parse(r.stdout) as { ips: { address: string }[] }).ips[0]!.address.split('/')[0]!;
  return { ns: name, ip };
}

/** The Kubernetes API over HTTPS with a kubeconfig's server, CA and bearer token (no client-node: it is slow to load in a VM). */
export class Api {
  constructor(readonly server: string, readonly ca: string, readonly token: string) {}

  static fromKubeconfig(text: string): Api {
    const kc = parseYaml(text) as { clusters: { cluster: { server: string; 'certificate-authority-data': string } }[]; users: { user: { token: string } }[] };
    const c = kc.clusters[0]!.cluster;
    return new Api(c.server, Buffer.from(c['certificate-authority-data'], 'base64').toString(), kc.users[0]!.user.token);
  }

  raw(method: string, path: string, body?: unknown): Promise<{ status: number; body: string }> {
    const u = new URL(path, this.server);
    const data = body === undefined ? undefined : JSON.stringify(body);
    return new Promise((resolve, reject) => {
      const req = request({ host: u.hostname, port: u.port, path: `${u.pathname}${u.search}`, method, ca: this.ca, timeout: 15_000,
        headers: { authorization: `Bearer ${this.token}`, accept: 'application/json', ...(data ? { 'content-type': 'application/json' } : {}) } }, (res) => {
        let b = '';
        res.setEncoding('utf8');
        res.on('data', (d: string) => (b += d));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body: b }));
      });
      req.on('timeout', () => req.destroy(new Error(`${method} ${path}: timed out`)));
      req.on('error', reject);
      req.end(data);
    });
  }

  async json<T>(method: string, path: string, body?: unknown): Promise<T> {
    const r = await this.raw(method, path, body);
    if (r.status < 200 || r.status > 299) throw new Error(`${method} ${path}: ${r.status} ${r.body.slice(0, 300)}`);
    return JSON.parse(r.body) as T;
  }
}

export interface PodView { name: string; node: string; ip: string; ready: boolean }

export async function listPods(api: Api, selector: string): Promise<PodView[]> {
  const l = await api.json<{ items: { metadata: { name: string; deletionTimestamp?: string }; spec: { nodeName?: string }; status: { podIP?: string; phase?: string; conditions?: { type: string; status: string }[] } }[] }>('GET', `/api/v1/namespaces/default/pods?labelSelector=${encodeURIComponent(selector)}`);
  return l.items.filter((i) => !i.metadata.deletionTimestamp).map((i) => ({
    name: i.metadata.name, node: i.spec.nodeName ?? '', ip: i.status.podIP ?? '',
    ready: i.status.phase === 'Running' && (i.status.conditions?.some((c) => c.type === 'Ready' && c.status === 'True') ?? false),
  }));
}

export async function readyNodes(api: Api): Promise<string[]> {
  const l = await api.json<{ items: { metadata: { name: string }; spec: { podCIDR?: string }; status: { conditions?: { type: string; status: string }[] } }[] }>('GET', '/api/v1/nodes');
  return l.items.filter((n) => n.spec.podCIDR && n.status.conditions?.some((c) => c.type === 'Ready' && c.status === 'True')).map((n) => n.metadata.name).sort();
}

/** The endpoints an agent applied for a Service port (its proxy-status.json). */
export function applied(runDir: string, key: string): string[] {
  try {
    const s = JSON.parse(readFileSync(`${runDir}/proxy-status.json`, 'utf8')) as { applied?: Record<string, string[]> };
    return s.applied?.[key] ?? [];
  } catch {
    return [];
  }
}
