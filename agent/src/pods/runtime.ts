/**
 * pods/runtime: the embedded kubelet's processes and records on the node.
 *
 * A Pod is a pause holder (netns/pause-holder.ts) with new net, IPC, UTS
 * and pid namespaces (pause is the pod's PID 1: when it goes, the kernel
 * kills every process of the pod, so nothing outlives its sandbox) and its
 * netns bind-mounted for CNI. A container is its command run through
 * `nsenter` into those namespaces, spawned detached (its own session and
 * process group), so it survives the agent. Its stdout and stderr go
 * straight to a file, one per run: `<runDir>/kubelet/<uid>/<container>/<run>.log`
 * (the current and the previous run are kept, for `kubectl logs --previous`).
 *
 * Exit codes: a process the agent did not start (after an agent restart)
 * cannot be wait()ed, so every container runs under a tiny supervisor, a
 * POSIX sh that runs the command in the foreground and then writes its exit
 * status (128+n for a signal, as a shell reports it) to `<run>.exit`:
 * `trap : TERM INT HUP` keeps the supervisor alive through the SIGTERM sent
 * to the process group (a trapped signal is reset to the default in the
 * command it runs), so the status of the command is still recorded;
 * startContainer returns once the supervisor traps (its SigCgt), so even a
 * signal sent right after the start is recorded that way (one window is
 * left: a SIGTERM between the supervisor's fork and the command's exec finds
 * the child still trapping it, and the run ends at the SIGKILL after the
 * grace period instead). A run
 * whose supervisor is gone without a file was SIGKILLed: 137. The agent
 * watches the supervisor's pid and start time (/proc/PID/stat: a reused pid
 * is never taken for it) on a poll, the same way for processes it started
 * and adopted ones. A shell costs ~1 ms and ~1 MiB per container; a Node
 * supervisor would cost 40 ms and 40 MiB, a C one a build step.
 *
 * Mounts: each run gets a mount namespace of its own, made from the
 * sandbox's (`unshare --mount`, propagation private, between nsenter and the
 * supervisor), where a short sh script (mount-plan.ts's SETUP_SCRIPT) mounts
 * what the kubelet asked (volumes, the Pod's /etc/hosts and resolv.conf, as
 * mount-plan.ts plans it against the node's filesystem and the sandbox's
 * mountinfo) and changes to the working directory before it execs the
 * supervisor (same pid throughout). Nothing is mounted in the node's mount
 * namespace: a container's mounts go with its last process, an emptyDir of
 * medium Memory (a tmpfs in the sandbox's namespace) with the Pod.
 * Volumes are files under the Pod's directory (`.volumes/<plugin>/<name>`,
 * written by the AtomicWriter), removed with it.
 *
 * Limits: with cgroups (cgroups.ts) a run started with `resources` gets its
 * Pod's and its container's cgroups made and written first; then the
 * spawned process is a tiny sh (JOIN_CGROUP) that writes its own pid into
 * each cgroup.procs and only then execs nsenter: every process of the run
 * (nsenter, the mount set-up, the supervisor, the command and what it
 * starts) is born inside the cgroup, with no window where it runs outside
 * (moving a pid after spawn would race the command's first allocations and
 * its children). A write that fails ends the run before it starts (exit
 * 125, the shell's words in the log: a start error). Cost: one sh exec, and
 * nsenter and the supervisor (~2 MiB) count against the memory limit, where
 * runc's shim does not. The run's OOM kill count at the start is recorded;
 * a run whose cgroup counted more at its end was OOM-killed (exitOf's
 * `oomKilled`). The cgroups go after the sandbox's stop (stopSandbox), and
 * a crashed agent's with sweep.
 *
 * Records: `<runDir>/kubelet/<uid>.json`, one per Pod, written durably on
 * every change: the Pod's namespace, name and uid, its sandbox (pause pid and
 * start time, netns path), IP, and per container the run, pids, start times,
 * restart count, the last termination, the back-off and the log paths.
 */
import { spawn } from 'node:child_process';
import { chmodSync, closeSync, existsSync, lstatSync, mkdirSync, openSync, readdirSync, readFileSync, readlinkSync, realpathSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { AtomicWriter } from './atomic-writer.js';
import { parseMountPoints, planMounts, renderSteps, SETUP_SCRIPT, type ContainerMount, type FsView } from './mount-plan.js';
import { writeFileDurable } from '../../../lib/state/durable.js';
import { listSandboxes, startSandbox, stopSandbox, joinCommand, type SandboxRef } from '../netns/pause-holder.js';
import { childPids, isAlive, procStat } from '../netns/proc.js';
import { ErrorCode, NodenetError } from '../../../lib/errors/errors.js';
import type { Controller } from './cgroup-config.js';
import type { PodCgroups } from './cgroups.js';
import { checkNames, POD_FILES, sandboxNameOf, validNames, type ContainerStart, type ExitStatus, type MountRequest, type PodRecord, type PodRuntime as PodRuntimeContract, type RunRecord, type VolumePlugin } from './pod-runtime.js';

const SUPERVISOR = 'f=$1; shift; trap : TERM INT HUP; "$@"; s=$?; echo "$s" > "$f.tmp" && mv -f "$f.tmp" "$f"';

/** Joins the cgroups named before `--` (this very pid: `$$`), then execs the rest. */
const JOIN_CGROUP = 'while [ "$1" != -- ]; do echo $$ > "$1" || exit 125; shift; done; shift; exec "$@"';

/** How long nsenter may take to fork the container's supervisor (a loaded 2-core machine took over 5 s). */
const START_FORK_TIMEOUT_MS = 30_000;

const VOLUME_NAME = /^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/;

/** The node's filesystem for the mount planner. */
const HOST_FS: FsView = {
  kind(p) {
    try {
      const st = lstatSync(p);
      return st.isSymbolicLink() ? 'symlink' : st.isDirectory() ? 'dir' : st.isFile() ? 'file' : 'other';
    } catch {
      return null;
    }
  },
  readlink: (p) => readlinkSync(p),
};

const inside = (p: string, dir: string) => p === dir || p.startsWith(`${dir}/`);

export class ProcessPodRuntime implements PodRuntimeContract {
  /** `cgroups`: where limits are enforced (null or absent: nowhere; limitsNotEnforced says so). */
  /**
   * resolvConf: the node's resolv.conf for Pods (the kubelet's --resolv-conf, default /etc/resolv.conf): the
   * upstream of Default Pods and the search domains ClusterFirst adds; '' reads none (the kubelet's "" too).
   */
  constructor(private readonly o: { readonly runDir: string; readonly pauseBin: string; readonly cgroups?: PodCgroups | null; readonly resolvConf?: string }) {}

  limitsNotEnforced(): Readonly<Partial<Record<Controller, string>>> {
    if (this.o.cgroups) return this.o.cgroups.notEnforced;
    const why = 'the runtime was started without cgroups';
    return { cpu: why, memory: why };
  }

  async sweep(keep: ReadonlySet<string>): Promise<void> {
    await this.o.cgroups?.sweep(keep).catch(() => undefined);
  }

  get dir(): string {
    return join(this.o.runDir, 'kubelet');
  }

  sandboxName(uid: string): string {
    return sandboxNameOf(uid);
  }

  logPath(uid: string, container: string, run: number): string {
    return join(this.dir, uid, container, `${run}.log`);
  }

  exitPath(uid: string, container: string, run: number): string {
    return join(this.dir, uid, container, `${run}.exit`);
  }

  save(r: PodRecord): void {
    checkNames(r.uid);
    mkdirSync(this.dir, { recursive: true, mode: 0o700 });
    writeFileDurable(join(this.dir, `${r.uid}.json`), `${JSON.stringify(r)}\n`);
  }

  remove(uid: string): void {
    if (!validNames(uid)) return; // nothing can have been made under it
    rmSync(join(this.dir, `${uid}.json`), { force: true });
    rmSync(join(this.dir, uid), { recursive: true, force: true });
  }

  /** Every record on disk (unreadable ones are skipped: they are not ours to act on). */
  records(): PodRecord[] {
    let names: string[] = [];
    try { names = readdirSync(this.dir).filter((n) => n.endsWith('.json')); } catch { return []; }
    const out: PodRecord[] = [];
    for (const n of names) {
      try {
        const r = JSON.parse(readFileSync(join(this.dir, n), 'utf8')) as PodRecord;
        if (r.version === 1 && typeof r.uid === 'string' && `${r.uid}.json` === n) out.push(r);
      } catch { /* a torn or foreign file */ }
    }
    return out;
  }

  /** The live sandbox of a record (same pause pid and start time), or null. */
  adoptSandbox(r: PodRecord): SandboxRef | null {
    if (!r.sandbox) return null;
    const sb = listSandboxes(this.o.runDir).find((s) => s.name === r.sandbox!.name);
    if (!sb || !sb.alive || sb.pid !== r.sandbox.pid || !isAlive(sb.pid, r.sandbox.startTime)) return null;
    return sb;
  }

  /** Starts the pod's sandbox (pause with its own net, IPC, UTS and pid namespaces) and sets its hostname. */
  async startSandbox(uid: string, hostname: string): Promise<{ ref: SandboxRef; startTime: string }> {
    checkNames(uid);
    const sb = await startSandbox({ name: this.sandboxName(uid), runDir: this.o.runDir, pauseBin: this.o.pauseBin, pidNamespace: true });
    const { stop: _stop, ...ref } = sb;
    try {
      await runToEnd(['nsenter', `--uts=${ref.utsPath}`, '--', 'hostname', hostname.slice(0, 63)]);
    } catch (e) {
      await sb.stop({ graceMs: 0 });
      throw e;
    }
    return { ref, startTime: procStat(ref.pid)?.startTime ?? '' };
  }

  sandboxRunning(sb: SandboxRef, startTime: string): boolean {
    return isAlive(sb.pid, startTime || undefined);
  }

  async stopSandbox(uid: string): Promise<void> {
    if (!validNames(uid)) return; // no sandbox can have that name
    await stopSandbox(this.o.runDir, this.sandboxName(uid), { graceMs: 1000 });
    // Every process of the Pod is dying with its PID 1; its cgroups go once they are gone.
    await this.o.cgroups?.removePod(uid);
  }

  /**
   * Starts one run of a container inside the sandbox, detached, under the supervisor.
   * Older runs' files but the previous one are removed.
   */
  async startContainer(sb: SandboxRef, start: ContainerStart): Promise<RunRecord> {
    const { uid, container, run, argv, env, cwd, nowMs } = start;
    checkNames(uid, container);
    if (sb.name !== this.sandboxName(uid)) throw new NodenetError(ErrorCode.Pod, `could not start container ${container}: sandbox ${sb.name} is not pod ${uid}'s`);
    const dir = join(this.dir, uid, container);
    mkdirSync(dir, { recursive: true, mode: 0o700 });
    for (const f of readdirSync(dir)) {
      const n = Number(f.split('.')[0]);
      if (Number.isInteger(n) && n < run - 1) rmSync(join(dir, f), { force: true });
    }
    const exitFile = this.exitPath(uid, container, run);
    rmSync(exitFile, { force: true });
    const steps = this.mountSteps(sb, uid, container, start.mounts, cwd ?? '/');
    const cg = this.o.cgroups && start.resources ? this.o.cgroups.prepare(uid, container, start.resources.pod, start.resources.container) : null;
    const inCgroup = cg?.procs.length ? ['/bin/sh', '-c', JOIN_CGROUP, 'nodenet-cgroup', ...cg.procs, '--'] : [];
    const out = openSync(this.logPath(uid, container, run), 'a', 0o600);
    const [cmd, ...args] = [...inCgroup, ...joinCommand(sb, ['unshare', '--mount', '--propagation', 'private', '--', '/bin/sh', '-c', SETUP_SCRIPT, 'nodenet-mounts', ...steps, '--', '/bin/sh', '-c', SUPERVISOR, 'nodenet-run', exitFile, ...argv])];
    const oom = cg && cg.oomKills !== null ? { oomKills: cg.oomKills } : {};
    let child;
    try {
      child = spawn(cmd!, args, { detached: true, stdio: ['ignore', out, out], env: { ...env } });
    } finally {
      closeSync(out);
    }
    child.on('error', () => undefined);
    child.unref();
    const pgid = child.pid;
    if (!pgid) throw new NodenetError(ErrorCode.Pod, `could not start container ${container}: nsenter did not start`);
    const starter = procStat(pgid);
    // With a pid namespace nsenter forks: the supervisor is its child (found by parentage; its start time is fixed at the fork).
    const deadline = Date.now() + 5000;
    // nsenter alive with no child yet is a slow fork on a loaded machine, not a failure: given up on at once, it
    // would start the container anyway, untracked (found: a Pod restarted as if it had failed to start, its second
    // run refused the port the first still held). It gets longer, and is killed, group and all, before giving up.
    const forkDeadline = Date.now() + START_FORK_TIMEOUT_MS;
    for (;;) {
      const kids = childPids(pgid);
      const kid = kids[0];
      if (kid !== undefined) {
        const st = procStat(kid);
        // Once it traps SIGTERM: a SIGTERM before that would end the supervisor with no status written (137).
        if (st && (trapsTerm(kid) || Date.now() > deadline)) return { run, pgid, pid: kid, procStart: st.startTime, startedAt: nowMs, ...oom };
      }
      const alive = isAlive(pgid);
      if (alive && kid === undefined && Date.now() > forkDeadline) {
        try { process.kill(-pgid, 'SIGKILL'); } catch { /* gone meanwhile */ }
        for (let i = 0; i < 500 && isAlive(pgid); i++) await new Promise((r) => setTimeout(r, 10));
        throw new NodenetError(ErrorCode.Pod, `could not start container ${container}: nsenter did not fork it within ${START_FORK_TIMEOUT_MS / 1000} s (stopped)`);
      }
      if (!alive || (kid === undefined ? false : Date.now() > deadline)) {
        // A command that is over before it was seen: the supervisor wrote its status, the run stands for it (nsenter's ids).
        if (existsSync(exitFile) && starter) return { run, pgid, pid: pgid, procStart: starter.startTime, startedAt: nowMs, ...oom };
        // nsenter failed (a bad working directory, the sandbox gone): what it said is in the log.
        const log = readTail(this.logPath(uid, container, run), 500);
        throw new NodenetError(ErrorCode.Pod, `could not start container ${container}${log ? `: ${log.trim()}` : ''}`);
      }
      await new Promise((r) => setTimeout(r, 2));
    }
  }

  /** Whether a run's supervisor still runs. */
  running(r: RunRecord): boolean {
    return isAlive(r.pid, r.procStart);
  }

  /** The exit of a run whose supervisor is gone: its recorded status, or 137 (SIGKILLed) when none was written. */
  exitOf(uid: string, container: string, r: RunRecord): ExitStatus {
    let code = NaN;
    try { code = Number(readFileSync(this.exitPath(uid, container, r.run), 'utf8').trim()); } catch { /* killed before it could write */ }
    // The kernel counted an OOM kill in the container's cgroup since the run started.
    const kills = r.oomKills !== undefined ? this.o.cgroups?.oomKills(uid, container) ?? null : null;
    const oom = kills !== null && kills > r.oomKills! ? { oomKilled: true } : {};
    if (!Number.isInteger(code)) return { exitCode: 137, signal: 9, ...oom };
    return code > 128 && code < 160 ? { exitCode: code, signal: code - 128, ...oom } : { exitCode: code, ...oom };
  }

  /** Sends a signal to a run's process group (nsenter, the supervisor, the command and what it started). */
  signal(r: RunRecord, sig: 'SIGTERM' | 'SIGKILL'): void {
    try { process.kill(-r.pgid, sig); } catch { /* the group is gone */ }
    // The supervisor may have outlived nsenter in another group only if something moved it; signal it directly too.
    if (sig === 'SIGKILL') try { process.kill(r.pid, sig); } catch { /* gone */ }
  }

  exists(file: string): boolean {
    return existsSync(file);
  }

  volumeDir(uid: string, plugin: VolumePlugin, volume: string): string {
    checkNames(uid);
    if (!VOLUME_NAME.test(volume)) throw new NodenetError(ErrorCode.Pod, `invalid volume name ${JSON.stringify(volume)}: must be a DNS-1123 label`);
    return join(this.dir, uid, POD_FILES.volumes, plugin, volume);
  }

  writeVolume(uid: string, plugin: VolumePlugin, volume: string, payload: ReadonlyMap<string, { readonly data: Buffer; readonly mode: number }>): boolean {
    return new AtomicWriter(this.volumeDir(uid, plugin, volume), { now: Date.now }).write(new Map(payload));
  }

  makeEmptyDir(uid: string, volume: string): string {
    const d = this.volumeDir(uid, 'kubernetes.io~empty-dir', volume);
    if (!existsSync(d)) {
      mkdirSync(d, { recursive: true, mode: 0o777 });
      chmodSync(d, 0o777);
    }
    return d;
  }

  async mountMemory(sb: SandboxRef, uid: string, volume: string, sizeBytes: bigint | null): Promise<void> {
    const d = this.makeEmptyDir(uid, volume);
    let mounts: string[] = [];
    try { mounts = parseMountPoints(readFileSync(`/proc/${sb.pid}/mountinfo`, 'utf8')); } catch { /* the sandbox is gone: nsenter says so */ }
    if (mounts.includes(d)) return;
    await runToEnd(['nsenter', `--mount=/proc/${sb.pid}/ns/mnt`, '--', 'mount', '-t', 'tmpfs', '-o', `mode=0777${sizeBytes !== null ? `,size=${sizeBytes}` : ''}`, 'nodenet-emptydir', d]);
  }

  writePodFile(uid: string, name: 'etc-hosts' | 'resolv.conf', content: string): string {
    checkNames(uid);
    const f = join(this.dir, uid, POD_FILES[name]);
    mkdirSync(dirname(f), { recursive: true, mode: 0o700 });
    writeFileSync(f, content, { mode: 0o644 });
    chmodSync(f, 0o644);
    return f;
  }

  nodeResolvConf(): string {
    const f = this.o.resolvConf ?? '/etc/resolv.conf';
    if (f === '') return '';
    try { return readFileSync(f, 'utf8'); } catch { return ''; }
  }

  /** The script's steps for a run's mounts. @throws NodenetError(Pod): a request outside the Pod's directory, a subPath leaving its volume, a plan that cannot be made */
  private mountSteps(sb: SandboxRef, uid: string, container: string, requests: readonly MountRequest[], workingDir: string): string[] {
    const podDir = join(this.dir, uid);
    const stage = join(this.dir, '.stage');
    mkdirSync(stage, { recursive: true, mode: 0o700 });
    const fail = (msg: string) => new NodenetError(ErrorCode.Pod, `could not start container ${container}: ${msg}`);
    const mounts: ContainerMount[] = requests.map((m) => {
      const base = resolve(m.volumeDir);
      if (!inside(base, podDir)) throw fail(`mount source ${m.volumeDir} is not the Pod's`);
      if (!m.target.startsWith('/') || m.target.split('/').includes('..')) throw fail(`mount target ${JSON.stringify(m.target)} is not an absolute path`);
      let source = base;
      if (m.subPath) {
        if (m.subPath.startsWith('/') || m.subPath.split('/').includes('..')) throw fail(`subPath ${JSON.stringify(m.subPath)} must be relative, without '..'`);
        source = join(base, m.subPath);
        // Made when missing (a directory, as the kubelet's SafeMakeDir), never through a symlink that leaves the volume.
        let existing = source;
        while (!existsSync(existing) && existing !== base) existing = dirname(existing);
        const realBase = realpathSync(base);
        if (!inside(realpathSync(existing), realBase)) throw fail(`subPath ${JSON.stringify(m.subPath)} leaves its volume`);
        if (!existsSync(source)) mkdirSync(source, { recursive: true, mode: 0o755 });
        if (!inside(realpathSync(source), realBase)) throw fail(`subPath ${JSON.stringify(m.subPath)} leaves its volume`);
      }
      let kind: 'dir' | 'file';
      try { kind = statSync(source).isDirectory() ? 'dir' : 'file'; } catch (e) { throw fail(`mount source ${source}: ${e instanceof Error ? e.message : String(e)}`); }
      return { source, target: m.target, kind, readOnly: m.readOnly };
    });
    let mountPoints: string[];
    try { mountPoints = parseMountPoints(readFileSync(`/proc/${sb.pid}/mountinfo`, 'utf8')); } catch { throw fail(`sandbox ${sb.name} is not running`); }
    const plan = planMounts({ mounts, keep: [join(podDir, container)], mountPoints, podDir, stage, workingDir, fs: HOST_FS });
    if (!plan.ok) throw fail(plan.message);
    return renderSteps(plan.ops);
  }
}

/** Whether a process catches SIGTERM (its SigCgt mask in /proc/PID/status has bit 15). */
function trapsTerm(pid: number): boolean {
  try {
    const m = /^SigCgt:\s*([0-9a-f]+)$/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return m !== null && (BigInt(`0x${m[1]!}`) & (1n << 14n)) !== 0n;
  } catch {
    return false;
  }
}

function readTail(file: string, n: number): string {
  try {
    const t = readFileSync(file, 'utf8');
    return t.slice(-n);
  } catch {
    return '';
  }
}

/** Runs a short command to completion (set-up: hostname). @throws NodenetError(Pod) on failure */
function runToEnd(argv: readonly string[]): Promise<void> {
  return new Promise((resolve, reject) => {
    const [cmd, ...args] = argv;
    const p = spawn(cmd!, args, { stdio: ['ignore', 'ignore', 'pipe'] });
    let err = '';
    p.stderr!.on('data', (d: Buffer) => (err += d.toString()));
    p.on('error', (e) => reject(new NodenetError(ErrorCode.Pod, `${argv.join(' ')}: ${e.message}`, { cause: e })));
    p.on('exit', (code) => (code === 0 ? resolve() : reject(new NodenetError(ErrorCode.Pod, `${argv.join(' ')} exited ${code}: ${err.trim()}`))));
  });
}
