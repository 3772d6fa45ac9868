/**
 * pods/local-pods: Pods as Kubernetes builds them, without Kubernetes.
 *
 * A pod is a pause holder owning new network, IPC and UTS namespaces (and,
 * optionally, a PID namespace with pause as PID 1), its netns bind-mounted so
 * it can be passed as CNI_NETNS; its network comes from a CNI ADD through the
 * real nodenet-cni shim, exactly as a runtime calls it (env + config on stdin);
 * its apps are processes that join the pause's namespaces. An app that dies
 * and is started again keeps the pod's IP, because pause holds the netns.
 *
 * State: <runDir>/pods/<name>.json. This is the `nodenet pod` CLI's engine and
 * a sibling of the embedded kubelet (pods/kubelet.ts), which runs the Pods an API server binds.
 */
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { openSync, closeSync, readdirSync, rmSync } from 'node:fs';
import type { ObjectReader } from '../../../lib/json/read.js';
import { writeFileDurable } from '../../../lib/state/durable.js';
import { isMissingFile, readJsonFile } from '../../../lib/state/read.js';
import { ErrorCode, NodenetError } from '../../../lib/errors/errors.js';
import type { Runner } from '../exec/runner.js';
import { joinCommand, startSandbox, stopSandbox, type SandboxRef } from '../netns/pause-holder.js';
import { isAlive } from '../netns/proc.js';

export interface PodDeps {
  readonly runner: Runner;
  /** The nodenet-cni executable (or any CNI plugin). */
  readonly shim: readonly string[];
  readonly pauseBin: string;
  /** Where pods' records, logs and netns bind mounts live. */
  readonly runDir: string;
  /** CNI_PATH for the plugin. */
  readonly cniPath: string;
}

export interface AppRecord {
  readonly pid: number;
  readonly argv: readonly string[];
}

export interface PodRecord {
  readonly name: string;
  readonly containerId: string;
  readonly ifName: string;
  readonly sandbox: SandboxRef;
  readonly ip: string;
  readonly cniConf: unknown;
  readonly cniResult: unknown;
  readonly apps: readonly AppRecord[];
}

const NAME_RE = /^[a-z0-9]([a-z0-9-]{0,38}[a-z0-9])?$/;

function readPodRecord(r: ObjectReader): PodRecord {
  const sb = r.object('sandbox');
  const sandbox: SandboxRef = {
    name: sb.string('name'),
    runDir: sb.string('runDir'),
    pid: sb.int('pid', { min: 1 }),
    pidNamespace: sb.bool('pidNamespace'),
    netnsPath: sb.string('netnsPath') as SandboxRef['netnsPath'],
    ipcPath: sb.string('ipcPath'),
    utsPath: sb.string('utsPath'),
    ...(sb.optString('pidnsPath') === undefined ? {} : { pidnsPath: sb.optString('pidnsPath')! }),
  };
  return {
    name: r.string('name'),
    containerId: r.string('containerId'),
    ifName: r.string('ifName'),
    sandbox,
    ip: r.string('ip'),
    cniConf: r.raw('cniConf'),
    cniResult: r.raw('cniResult'),
    apps: r.objects('apps').map((a) => ({ pid: a.int('pid', { min: 1 }), argv: a.stringArray('argv') })),
  };
}

export class LocalPods {
  constructor(private readonly deps: PodDeps) {}

  private get dir(): string {
    return `${this.deps.runDir}/pods`;
  }

  private save(p: PodRecord): void {
    writeFileDurable(`${this.dir}/${p.name}.json`, JSON.stringify(p, null, 2));
  }

  get(name: string): PodRecord {
    if (!NAME_RE.test(name)) throw new NodenetError(ErrorCode.Pod, `no pod named ${JSON.stringify(name)}`);
    try {
      return readJsonFile(`${this.dir}/${name}.json`, readPodRecord);
    } catch (e) {
      throw new NodenetError(ErrorCode.Pod, isMissingFile(e) ? `no pod named ${JSON.stringify(name)}` : `pod ${name}: ${(e as Error).message}`, { cause: e });
    }
  }

  list(): PodRecord[] {
    let names: string[] = [];
    try { names = readdirSync(this.dir).filter((n) => n.endsWith('.json')); } catch { /* none yet */ }
    return names.map((n) => this.get(n.slice(0, -5)));
  }

  private async cni(command: 'ADD' | 'DEL', p: { containerId: string; netns: string; ifName: string; conf: unknown }) {
    return this.deps.runner.run(this.deps.shim, {
      input: JSON.stringify(p.conf),
      allowFailure: true,
      env: { CNI_COMMAND: command, CNI_CONTAINERID: p.containerId, CNI_NETNS: p.netns, CNI_IFNAME: p.ifName, CNI_PATH: this.deps.cniPath },
    });
  }

  /** Starts the pause holder and wires the pod with CNI ADD. On failure nothing is left behind. */
  async create(name: string, cniConf: unknown, opts: { pidNamespace?: boolean; ifName?: string } = {}): Promise<PodRecord> {
    if (!NAME_RE.test(name)) throw new NodenetError(ErrorCode.Pod, `pod name ${JSON.stringify(name)}: lower-case letters, digits and '-', at most 40`);
    try { this.get(name); throw new NodenetError(ErrorCode.Pod, `pod ${name} already exists`); } catch (e) { if (e instanceof NodenetError && e.message.includes('already')) throw e; }
    const containerId = randomBytes(32).toString('hex');
    const ifName = opts.ifName ?? 'eth0';
    const sb = await startSandbox({ name, runDir: this.deps.runDir, pauseBin: this.deps.pauseBin, pidNamespace: opts.pidNamespace ?? false });
    try {
      await this.deps.runner.run(['nsenter', `--uts=${sb.utsPath}`, '--', 'hostname', name]);
      const r = await this.cni('ADD', { containerId, netns: sb.netnsPath, ifName, conf: cniConf });
      if (r.exitCode !== 0) throw new NodenetError(ErrorCode.Pod, `CNI ADD for pod ${name} failed: ${r.stdout.trim() || r.stderr.trim()}`);
      const result = JSON.parse(r.stdout) as { ips?: { address?: string }[] };
      const ip = result.ips?.[0]?.address?.split('/')[0] ?? '';
      const { stop: _stop, ...ref } = sb;
      const rec: PodRecord = { name, containerId, ifName, sandbox: ref, ip, cniConf, cniResult: result, apps: [] };
      this.save(rec);
      return rec;
    } catch (e) {
      await sb.stop();
      throw e;
    }
  }

  /** Starts an app process inside the pod's namespaces, detached, its output in <runDir>/pods/<name>.log. */
  startApp(name: string, argv: readonly string[]): AppRecord {
    const pod = this.get(name);
    const out = openSync(`${this.dir}/${name}.log`, 'a');
    const [cmd, ...args] = joinCommand(pod.sandbox, argv);
    const child = spawn(cmd!, args, { detached: true, stdio: ['ignore', out, out] });
    closeSync(out);
    child.unref();
    if (!child.pid) throw new NodenetError(ErrorCode.Pod, `could not start ${argv.join(' ')} in pod ${name}`);
    const app = { pid: child.pid, argv: [...argv] };
    this.save({ ...pod, apps: [...pod.apps.filter((a) => isAlive(a.pid)), app] });
    return app;
  }

  /** Kills an app's whole process group (nsenter does not forward signals). */
  stopApp(name: string, pid: number, signal: NodeJS.Signals = 'SIGKILL'): void {
    const pod = this.get(name);
    try { process.kill(-pid, signal); } catch { /* already gone */ }
    this.save({ ...pod, apps: pod.apps.filter((a) => a.pid !== pid) });
  }

  /** Runs a command inside the pod, to completion. */
  async exec(name: string, argv: readonly string[], opts: { input?: string; allowFailure?: boolean } = {}) {
    const pod = this.get(name);
    return this.deps.runner.run(joinCommand(pod.sandbox, argv), opts);
  }

  joinArgv(name: string, argv: readonly string[]): string[] {
    return joinCommand(this.get(name).sandbox, argv);
  }

  /** Kills the apps, runs CNI DEL, stops pause. Idempotent. */
  async remove(name: string): Promise<void> {
    let pod: PodRecord;
    try { pod = this.get(name); } catch { await stopSandbox(this.deps.runDir, name); return; }
    for (const a of pod.apps) { try { process.kill(-a.pid, 'SIGKILL'); } catch { /* gone */ } }
    const r = await this.cni('DEL', { containerId: pod.containerId, netns: pod.sandbox.netnsPath, ifName: pod.ifName, conf: pod.cniConf });
    if (r.exitCode !== 0) throw new NodenetError(ErrorCode.Pod, `CNI DEL for pod ${name} failed: ${r.stdout.trim() || r.stderr.trim()}`);
    await stopSandbox(this.deps.runDir, name);
    rmSync(`${this.dir}/${name}.json`, { force: true });
    rmSync(`${this.dir}/${name}.log`, { force: true });
  }
}
