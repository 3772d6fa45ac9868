/**
 * netns/pause-holder: pod sandboxes, i.e. a pause process holding a network,
 * IPC and UTS namespace (and optionally a pid namespace), with the network
 * namespace bind-mounted at <runDir>/netns/<name> for use as CNI_NETNS.
 *
 * Layout under runDir (one agent per runDir):
 *   netns/<name>            bind mount of /proc/PID/ns/net (like /var/run/netns/X)
 *   sandboxes/<name>.json   {name, pid, startTime, pidNamespace}: found again after an agent restart
 *   sandboxes/<name>.log    the holder's stderr
 *
 * One spawn per sandbox: `unshare --net --ipc --uts [--pid --fork --mount-proc] nodenet-pause`,
 * detached (own session), so the pod outlives an agent restart. With --fork
 * the holder is unshare's child, not unshare: its host pid is found by pid
 * parentage once it prints "ready". The bind mount is mount(2) through koffi,
 * not a spawned `mount`. The state file is written before the mount, so a
 * crash in between leaves something stopSandbox can find and clean.
 *
 * While the bind mount exists the network namespace outlives the holder (as
 * measured); stopSandbox kills the holder and removes the mount, and the
 * kernel then destroys the namespace once no process is left in it. Mounts
 * are made in the caller's mount namespace: an agent started under
 * `ip netns exec` (which unshares the mount namespace) sees its own mounts;
 * other mount namespaces only if runDir sits on a shared mount.
 */
import { spawn } from 'node:child_process';
import { closeSync, mkdirSync, openSync, readdirSync, readFileSync, readlinkSync, rmSync } from 'node:fs';
import { readJsonFile } from '../../../lib/state/read.js';
import { writeFileDurable } from '../../../lib/state/durable.js';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { ErrorCode, NodenetError } from '../../../lib/errors/errors.js';
import { MNT_DETACH, SyscallError, bindMount, umount2 } from './libc.js';
import { toNetnsPath, type NetnsPath } from './netns.js';
import { childPids, isAlive, procStat } from './proc.js';

export interface SandboxOptions {
  /** Unique per runDir; [A-Za-z0-9][A-Za-z0-9_.-]*, at most 128 characters. */
  name: string;
  runDir: string;
  /** Path to the nodenet-pause binary. */
  pauseBin: string;
  /** Also give the pod its own pid namespace, the pause being its PID 1. */
  pidNamespace?: boolean;
  /** How long to wait for the holder to report ready (default 5000 ms). */
  readyTimeoutMs?: number;
}

export interface SandboxRef {
  readonly name: string;
  readonly runDir: string;
  /** Host pid of the pause process. */
  readonly pid: number;
  readonly pidNamespace: boolean;
  /** The bind mount: usable as CNI_NETNS, and alive as long as the mount is. */
  readonly netnsPath: NetnsPath;
  /** /proc/PID/ns/ipc: valid while the holder lives. */
  readonly ipcPath: string;
  /** /proc/PID/ns/uts: valid while the holder lives. */
  readonly utsPath: string;
  /** /proc/PID/ns/pid, when pidNamespace. */
  readonly pidnsPath?: string;
}

export interface Sandbox extends SandboxRef {
  /** stopSandbox for this sandbox. Idempotent. */
  stop(opts?: StopOptions): Promise<void>;
}

export interface SandboxStatus extends Sandbox {
  /** The recorded holder still runs (same pid and start time). */
  readonly alive: boolean;
}

export interface StopOptions {
  /** Time between SIGTERM and SIGKILL (default 2000 ms). */
  graceMs?: number;
}

interface SandboxState {
  name: string;
  pid: number;
  startTime: string;
  pidNamespace: boolean;
}

const NAME_RE = /^[A-Za-z0-9][A-Za-z0-9_.-]{0,127}$/;

function paths(runDir: string, name: string): { netns: string; state: string; log: string } {
  if (!NAME_RE.test(name)) throw new NodenetError(ErrorCode.Pod, `invalid sandbox name ${JSON.stringify(name)}`);
  return {
    netns: join(runDir, 'netns', name),
    state: join(runDir, 'sandboxes', `${name}.json`),
    log: join(runDir, 'sandboxes', `${name}.log`),
  };
}

function readState(file: string): SandboxState | null {
  try {
    return readJsonFile(file, (r) => ({ name: r.string('name'), pid: r.int('pid', { min: 1 }), startTime: r.string('startTime'), pidNamespace: r.bool('pidNamespace') }));
  } catch {
    return null; // a holder that never recorded itself, or a file from something else: not a sandbox
  }
}

function writeState(file: string, s: SandboxState): void {
  writeFileDurable(file, `${JSON.stringify(s)}\n`);
}

function toSandbox(runDir: string, s: SandboxState, netnsPath: NetnsPath): Sandbox {
  const ref: SandboxRef = {
    name: s.name,
    runDir,
    pid: s.pid,
    pidNamespace: s.pidNamespace,
    netnsPath,
    ipcPath: `/proc/${s.pid}/ns/ipc`,
    utsPath: `/proc/${s.pid}/ns/uts`,
    ...(s.pidNamespace ? { pidnsPath: `/proc/${s.pid}/ns/pid` } : {}),
  };
  return { ...ref, stop: (opts?: StopOptions) => stopSandbox(runDir, s.name, opts) };
}

/**
 * Starts a pause holder and bind-mounts its network namespace.
 * @throws NodenetError(Pod) if a live sandbox of that name exists, or the holder does not come up.
 * A stale sandbox of that name (holder gone) is cleaned up first.
 */
export async function startSandbox(opts: SandboxOptions): Promise<Sandbox> {
  const p = paths(opts.runDir, opts.name);
  mkdirSync(join(opts.runDir, 'netns'), { recursive: true, mode: 0o755 });
  mkdirSync(join(opts.runDir, 'sandboxes'), { recursive: true, mode: 0o700 });
  const existing = readState(p.state);
  if (existing && isAlive(existing.pid, existing.startTime)) {
    throw new NodenetError(ErrorCode.Pod, `sandbox ${opts.name} already exists (pid ${existing.pid})`);
  }
  await stopSandbox(opts.runDir, opts.name); // clear leftovers of a dead one

  const pidNamespace = opts.pidNamespace === true;
  const argv = ['--net', '--ipc', '--uts', ...(pidNamespace ? ['--pid', '--fork', '--mount-proc'] : []), opts.pauseBin];
  const logFd = openSync(p.log, 'w', 0o600);
  let child;
  try {
    child = spawn('unshare', argv, { detached: true, stdio: ['ignore', 'pipe', logFd] });
  } finally {
    closeSync(logFd);
  }
  const starterPid = child.pid;
  const stdout = child.stdout;
  if (!stdout) throw new NodenetError(ErrorCode.Pod, `sandbox ${opts.name}: no stdout pipe from unshare`);

  const fail = (msg: string, cause?: unknown): NodenetError => {
    let log = '';
    try { log = readFileSync(p.log, 'utf8').slice(0, 2000); } catch { /* none */ }
    return new NodenetError(ErrorCode.Pod, `sandbox ${opts.name}: ${msg}${log ? `: ${log.trim()}` : ''}`, { cause, details: log });
  };

  try {
    await new Promise<void>((resolve, reject) => {
      let buf = '';
      const timer = setTimeout(() => reject(fail('the pause holder did not report ready')), opts.readyTimeoutMs ?? 5000);
      const done = (err?: NodenetError): void => {
        clearTimeout(timer);
        stdout.removeAllListeners('data');
        child.removeListener('exit', onExit);
        child.removeListener('error', onError);
        if (err) reject(err); else resolve();
      };
      const onExit = (code: number | null, signal: string | null): void => {
        // Give the log file a moment: stderr may land after 'exit'.
        done(fail(`the pause holder exited (code ${code ?? 'none'}, signal ${signal ?? 'none'}) before it was ready`));
      };
      const onError = (e: Error): void => done(fail('cannot start unshare', e));
      stdout.setEncoding('utf8');
      stdout.on('data', (d: string) => {
        buf += d;
        if (/^ready \d+\n/m.test(buf)) done();
      });
      child.once('exit', onExit);
      child.once('error', onError);
    });
  } catch (e) {
    if (starterPid !== undefined) try { process.kill(starterPid, 'SIGKILL'); } catch { /* gone */ }
    stdout.destroy();
    throw e;
  }
  stdout.destroy();
  child.unref();
  if (starterPid === undefined) throw fail('unshare has no pid');

  let pid = starterPid;
  if (pidNamespace) {
    const kids = childPids(starterPid);
    if (kids.length !== 1 || kids[0] === undefined) {
      try { process.kill(starterPid, 'SIGKILL'); } catch { /* gone */ }
      throw fail(`expected one child of unshare ${starterPid}, found ${kids.length}`);
    }
    pid = kids[0];
  }
  const stat = procStat(pid);
  if (!stat) throw fail(`the pause holder ${pid} vanished`);
  const state: SandboxState = { name: opts.name, pid, startTime: stat.startTime, pidNamespace };
  writeState(p.state, state);

  try {
    closeSync(openSync(p.netns, 'a', 0o444));
    bindMount(`/proc/${pid}/ns/net`, p.netns);
  } catch (e) {
    await stopSandbox(opts.runDir, opts.name);
    throw fail(`bind mount of /proc/${pid}/ns/net at ${p.netns} failed`, e);
  }
  return toSandbox(opts.runDir, state, toNetnsPath(p.netns));
}

async function waitGone(pid: number, startTime: string, ms: number): Promise<boolean> {
  const deadline = Date.now() + ms;
  while (isAlive(pid, startTime)) {
    if (Date.now() >= deadline) return false;
    await sleep(10);
  }
  return true;
}

/**
 * Stops a sandbox: SIGTERM to the holder (SIGKILL after graceMs), unmount and
 * remove the netns file, remove the state. Idempotent: anything already gone is fine.
 * With a pid namespace, the kernel kills every process of the pod with its PID 1;
 * without one, processes joined with joinCommand survive and keep the network
 * namespace alive: stop them first.
 */
export async function stopSandbox(runDir: string, name: string, opts: StopOptions = {}): Promise<void> {
  const p = paths(runDir, name);
  const s = readState(p.state);
  if (s && isAlive(s.pid, s.startTime)) {
    try { process.kill(s.pid, 'SIGTERM'); } catch { /* gone */ }
    if (!(await waitGone(s.pid, s.startTime, opts.graceMs ?? 2000))) {
      try { process.kill(s.pid, 'SIGKILL'); } catch { /* gone */ }
      if (!(await waitGone(s.pid, s.startTime, 2000))) {
        throw new NodenetError(ErrorCode.Pod, `sandbox ${name}: holder ${s.pid} survived SIGKILL`);
      }
    }
  }
  try {
    umount2(p.netns, MNT_DETACH);
  } catch (e) {
    // EINVAL: not a mount point (already unmounted); ENOENT: no file.
    if (!(e instanceof SyscallError && (e.code === 'EINVAL' || e.code === 'ENOENT'))) {
      throw new NodenetError(ErrorCode.Pod, `sandbox ${name}: umount ${p.netns}: ${String(e)}`, { cause: e });
    }
  }
  rmSync(p.netns, { force: true });
  rmSync(p.state, { force: true });
  rmSync(`${p.state}.tmp`, { force: true });
  rmSync(p.log, { force: true });
}

/**
 * The sandboxes recorded under runDir (e.g. after an agent restart), live or not.
 * A dead one still has its stop() for cleanup; its netnsPath may no longer be a namespace.
 */
export function listSandboxes(runDir: string): SandboxStatus[] {
  let files: string[];
  try {
    files = readdirSync(join(runDir, 'sandboxes'));
  } catch {
    return [];
  }
  const out: SandboxStatus[] = [];
  for (const f of files.sort()) {
    if (!f.endsWith('.json')) continue;
    const s = readState(join(runDir, 'sandboxes', f));
    if (!s || `${s.name}.json` !== f || !NAME_RE.test(s.name)) continue;
    const alive = isAlive(s.pid, s.startTime);
    out.push({ ...toSandbox(runDir, s, join(runDir, 'netns', s.name) as NetnsPath), alive });
  }
  return out;
}

/**
 * Pause holders started under runDir that no record names: a holder is started before its record is written, so an
 * agent killed in between leaves one behind. Each holder's stderr is its sandbox log under runDir/sandboxes, which
 * tells it apart from every other process. (With a pid namespace, unshare and the holder both hold it.)
 */
export function unrecordedHolders(runDir: string): number[] {
  const prefix = `${join(runDir, 'sandboxes')}/`;
  const recorded = new Set(listSandboxes(runDir).map((s) => s.name));
  const out: number[] = [];
  for (const d of readdirSync('/proc')) {
    if (!/^\d+$/.test(d)) continue;
    let target: string;
    try {
      target = readlinkSync(`/proc/${d}/fd/2`);
    } catch {
      continue;
    }
    if (!target.startsWith(prefix)) continue;
    const name = target.slice(prefix.length).replace(/ \(deleted\)$/, '').replace(/\.log$/, '');
    if (!recorded.has(name) || target.endsWith(' (deleted)')) out.push(Number(d));
  }
  return out;
}

export interface JoinOptions {
  /** Working directory inside the sandbox (entering the mount namespace resets it to /). */
  cwd?: string;
}

/**
 * argv that runs `argv` inside the sandbox's namespaces. With a pid namespace
 * it also enters the holder's mount namespace, whose /proc is the pod's, and
 * nsenter forks: the app is nsenter's child (PID >1 in the pod), so signal the
 * whole process group (spawn detached, kill -PGID) to reach it.
 */
export function joinCommand(sb: SandboxRef, argv: readonly string[], opts: JoinOptions = {}): string[] {
  const out = ['nsenter', `--net=${sb.netnsPath}`, `--ipc=${sb.ipcPath}`, `--uts=${sb.utsPath}`];
  if (sb.pidnsPath) out.push(`--pid=${sb.pidnsPath}`, `--mount=/proc/${sb.pid}/ns/mnt`);
  if (opts.cwd !== undefined) out.push(`--wd=${opts.cwd}`);
  out.push('--', ...argv);
  return out;
}
