/**
 * pods/runtime.fake: a PodRuntime in memory for the kubelet's tests without
 * root. It keeps pod-runtime.ts's contract as the process runtime does and
 * refuses what that one refuses, with the same errors (NodenetError(Pod)):
 * a bad uid or container name, a second live sandbox for a uid, a container
 * started in a sandbox that is not the uid's or no longer runs. It also
 * refuses what would be a kubelet bug the process runtime lets through: a
 * second live run of one container, a run number going back, an empty
 * command, asking how a run that still runs ended.
 *
 * Processes: a run runs until the test ends it (exit), a signal ends it
 * (SIGTERM: 143 unless told to ignore it; SIGKILL: 137 unless told it
 * cannot die, as a process in D state), or its sandbox stops or crashes
 * (137: the pod's PID 1 took it along).
 *
 * Volumes and the Pod's files are kept in memory by path (volumeDir's
 * layout, under /fake/kubelet/<uid>/); a run's mount requests are checked
 * as the process runtime checks them (a source outside the Pod's
 * directory, a subPath with `..`, a relative target) and kept with the run.
 *
 * Limits: `notEnforced` is what limitsNotEnforced answers (default: every
 * limit enforced); a run keeps the `resources` it was started with, `oom`
 * ends it as the kernel's OOM killer would (137, oomKilled); each sweep's
 * kept uids are in `sweeps`.
 *
 * Tests see every call (`calls`), can make any step fail (`failNext`), and
 * ask what is left running or recorded (`leaks`).
 */
import { ErrorCode, NodenetError } from '../../../lib/errors/errors.js';
import type { NetnsPath } from '../netns/netns.js';
import type { Controller, ResourceConfig } from './cgroup-config.js';
import { checkNames, POD_FILES, sandboxNameOf, validNames, type ContainerStart, type ExitStatus, type MountRequest, type PodRecord, type PodRuntime, type RunRecord, type SandboxRef, type VolumePlugin } from './pod-runtime.js';

export type RuntimeStep = 'startSandbox' | 'stopSandbox' | 'startContainer' | 'save' | 'remove' | 'writeVolume' | 'mountMemory';

interface Injection {
  readonly step: RuntimeStep;
  /** The uid, or `<uid>/<container>` for startContainer; absent: any. */
  readonly match: string | undefined;
  readonly error: unknown;
  times: number;
  skip: number;
}

interface FakeSandbox {
  readonly uid: string;
  readonly ref: SandboxRef;
  readonly startTime: string;
  readonly hostname: string;
  alive: boolean;
}

interface FakeProc {
  readonly uid: string;
  readonly container: string;
  readonly rec: RunRecord;
  readonly argv: readonly string[];
  readonly env: Readonly<Record<string, string>>;
  readonly cwd: string | null;
  readonly mounts: readonly MountRequest[];
  readonly resources: ContainerStart['resources'] | null;
  alive: boolean;
  /** Set when it ended; null: SIGKILLed before it could write a status (137). */
  exit: ExitStatus | null;
  signals: string[];
}

/** How a container's runs take signals (by `<uid>/<container>`). */
export type SignalBehaviour = 'exit' | 'ignore-term' | 'unkillable';

export class FakePodRuntime implements PodRuntime {
  /** Every call, in order: `startSandbox <uid>`, `startContainer <uid>/<container>#<run>`, `signal <uid>/<container>#<run> SIGTERM`, ... */
  readonly calls: string[] = [];
  private readonly sandboxes = new Map<string, FakeSandbox>();
  private readonly procs: FakeProc[] = [];
  private readonly recs = new Map<string, string>();
  private readonly logs = new Set<string>();
  private readonly injections: Injection[] = [];
  private readonly behaviour = new Map<string, SignalBehaviour>();
  /** Volume and Pod files by path: a volume directory's files, the Pod's etc-hosts and resolv.conf. */
  private readonly files = new Map<string, { data: Buffer; mode: number }>();
  private readonly dirs = new Set<string>();
  /** `<uid>/<volume>` of the tmpfs mounted in a live sandbox (they go with it). */
  private readonly memory = new Set<string>();
  private nextPid = 1000;
  /** The uids each sweep kept. */
  readonly sweeps: string[][] = [];
  /** What limitsNotEnforced answers. */
  notEnforced: Partial<Record<Controller, string>> = {};
  /** The node's resolv.conf, as nodeResolvConf reads it. */
  resolvConf = 'nameserver 192.0.2.53\n';

  /** After `skip` (default 0) calls, the next `times` (default 1) calls of `step` (for `match` only, if given) throw `error`. */
  failNext(step: RuntimeStep, o: { match?: string; error?: unknown; times?: number; skip?: number } = {}): void {
    this.injections.push({ step, match: o.match, error: o.error ?? new NodenetError(ErrorCode.Pod, `injected failure in ${step}`), times: o.times ?? 1, skip: o.skip ?? 0 });
  }

  /** How `<uid>/<container>`'s runs take signals from now on. */
  onSignal(uid: string, container: string, b: SignalBehaviour): void {
    this.behaviour.set(`${uid}/${container}`, b);
  }

  // --- what a test does to the processes -------------------------------------------------------------------

  /** The live run of a container ends on its own with `exitCode` (128+n: signal n). @throws if none runs */
  exit(uid: string, container: string, exitCode: number): void {
    const p = this.live(uid, container);
    if (!p) throw new Error(`FakePodRuntime: no run of ${uid}/${container} to exit`);
    this.end(p, exitCode > 128 && exitCode < 160 ? { exitCode, signal: exitCode - 128 } : { exitCode });
  }

  /** The kernel OOM-kills the live run of a container in its memory cgroup: 137, oomKilled. @throws if none runs, or it has no memory limit to exceed */
  oom(uid: string, container: string): void {
    const p = this.live(uid, container);
    if (!p) throw new Error(`FakePodRuntime: no run of ${uid}/${container} to OOM-kill`);
    if (p.resources?.container.memoryLimit == null || this.notEnforced.memory) throw new Error(`FakePodRuntime: ${uid}/${container} runs without a memory limit: nothing OOM-kills it`);
    this.end(p, { exitCode: 137, signal: 9, oomKilled: true });
  }

  /** The pause process dies (OOM, a kill from outside): the sandbox and every process in it are gone. */
  crashSandbox(uid: string): void {
    const sb = this.sandboxes.get(uid);
    if (!sb?.alive) throw new Error(`FakePodRuntime: no live sandbox for ${uid}`);
    this.killSandbox(sb);
  }

  // --- what a test looks at --------------------------------------------------------------------------------

  /** The live run of a container, or null. */
  current(uid: string, container: string): { readonly run: number; readonly argv: readonly string[]; readonly env: Readonly<Record<string, string>>; readonly cwd: string | null; readonly mounts: readonly MountRequest[]; readonly signals: readonly string[]; readonly resources: { readonly pod: ResourceConfig; readonly container: ResourceConfig } | null } | null {
    const p = this.live(uid, container);
    return p ? { run: p.rec.run, argv: p.argv, env: p.env, cwd: p.cwd, mounts: p.mounts, signals: p.signals, resources: p.resources ?? null } : null;
  }

  /** A file of a volume or of the Pod (its content), or null. */
  file(path: string): string | null {
    return this.files.get(path)?.data.toString('utf8') ?? null;
  }

  /** A file's mode, or null. */
  fileMode(path: string): number | null {
    return this.files.get(path)?.mode ?? null;
  }

  /** The files under a directory, relative, with their content. */
  filesUnder(dir: string): Record<string, string> {
    return Object.fromEntries([...this.files].filter(([k]) => k.startsWith(`${dir}/`)).map(([k, v]) => [k.slice(dir.length + 1), v.data.toString('utf8')]));
  }

  /** Whether a tmpfs is mounted on the emptyDir `volume` of the Pod's live sandbox. */
  memoryMounted(uid: string, volume: string): boolean {
    return this.memory.has(`${uid}/${volume}`) && !!this.sandboxes.get(uid)?.alive;
  }

  /** The hostname of a Pod's live sandbox, or null. */
  hostname(uid: string): string | null {
    const sb = this.sandboxes.get(uid);
    return sb?.alive ? sb.hostname : null;
  }

  /** A record as saved, or null. */
  record(uid: string): PodRecord | null {
    const r = this.recs.get(uid);
    return r === undefined ? null : (JSON.parse(r) as PodRecord);
  }

  /** What is left: live sandboxes and runs (`<uid>/<container>#<run>`), records. */
  leaks(): { sandboxes: string[]; processes: string[]; records: string[]; files: string[] } {
    return {
      sandboxes: [...this.sandboxes.values()].filter((s) => s.alive).map((s) => s.ref.name),
      processes: this.procs.filter((p) => p.alive).map((p) => `${p.uid}/${p.container}#${p.rec.run}`),
      records: [...this.recs.keys()],
      files: [...this.files.keys(), ...this.dirs],
    };
  }

  /** Puts a record on "disk" as an earlier agent left it (with its sandbox and runs still running, if `live`). */
  seed(r: PodRecord, live: boolean): void {
    this.recs.set(r.uid, JSON.stringify(r));
    if (!live || !r.sandbox) return;
    const ref = this.ref(r.uid, r.sandbox.pid);
    this.sandboxes.set(r.uid, { uid: r.uid, ref, startTime: r.sandbox.startTime, hostname: r.name, alive: true });
    for (const c of r.containers) {
      if (!c.current) continue;
      this.procs.push({ uid: r.uid, container: c.name, rec: c.current, argv: ['seeded'], env: {}, cwd: null, mounts: [], resources: null, alive: true, exit: null, signals: [] });
      this.logs.add(this.logPath(r.uid, c.name, c.current.run));
    }
  }

  // --- PodRuntime ------------------------------------------------------------------------------------------

  sandboxName(uid: string): string {
    return sandboxNameOf(uid);
  }

  logPath(uid: string, container: string, run: number): string {
    return `/fake/kubelet/${uid}/${container}/${run}.log`;
  }

  exists(file: string): boolean {
    return this.logs.has(file) || this.files.has(file) || this.dirs.has(file);
  }

  save(r: PodRecord): void {
    this.enter('save', r.uid, `save ${r.uid}`);
    checkNames(r.uid);
    this.recs.set(r.uid, JSON.stringify(r));
  }

  remove(uid: string): void {
    this.enter('remove', uid, `remove ${uid}`);
    this.recs.delete(uid);
    const under = (f: string) => f.startsWith(`/fake/kubelet/${uid}/`);
    for (const f of [...this.logs]) if (under(f)) this.logs.delete(f);
    for (const f of [...this.files.keys()]) if (under(f)) this.files.delete(f);
    for (const f of [...this.dirs]) if (under(f)) this.dirs.delete(f);
  }

  records(): PodRecord[] {
    return [...this.recs.values()].map((r) => JSON.parse(r) as PodRecord);
  }

  adoptSandbox(r: PodRecord): SandboxRef | null {
    if (!r.sandbox) return null;
    const sb = this.sandboxes.get(r.uid);
    return sb?.alive && sb.ref.pid === r.sandbox.pid && sb.startTime === r.sandbox.startTime ? sb.ref : null;
  }

  async startSandbox(uid: string, hostname: string): Promise<{ ref: SandboxRef; startTime: string }> {
    this.enter('startSandbox', uid, `startSandbox ${uid}`);
    checkNames(uid);
    const was = this.sandboxes.get(uid);
    if (was?.alive) throw new NodenetError(ErrorCode.Pod, `sandbox ${sandboxNameOf(uid)} already exists (holder ${was.ref.pid})`);
    const h = hostname.slice(0, 63);
    if (!/^[A-Za-z0-9]([A-Za-z0-9.-]*[A-Za-z0-9])?$/.test(h)) throw new NodenetError(ErrorCode.Pod, `nsenter --uts -- hostname ${h} exited 1: hostname: the specified hostname is invalid`);
    const ref = this.ref(uid, this.nextPid++);
    const startTime = String(this.nextPid);
    this.sandboxes.set(uid, { uid, ref, startTime, hostname: h, alive: true });
    return { ref, startTime };
  }

  async stopSandbox(uid: string): Promise<void> {
    this.enter('stopSandbox', uid, `stopSandbox ${uid}`);
    if (!validNames(uid)) return;
    const sb = this.sandboxes.get(uid);
    if (sb?.alive) this.killSandbox(sb);
    this.sandboxes.delete(uid);
  }

  sandboxRunning(sb: SandboxRef, startTime: string): boolean {
    const own = [...this.sandboxes.values()].find((x) => x.ref.name === sb.name);
    return !!own?.alive && own.ref.pid === sb.pid && own.startTime === startTime;
  }

  async startContainer(sb: SandboxRef, s: ContainerStart): Promise<RunRecord> {
    const key = `${s.uid}/${s.container}`;
    this.enter('startContainer', key, `startContainer ${key}#${s.run}`);
    checkNames(s.uid, s.container);
    const own = this.sandboxes.get(s.uid);
    if (sb.name !== sandboxNameOf(s.uid)) throw new NodenetError(ErrorCode.Pod, `could not start container ${s.container}: sandbox ${sb.name} is not pod ${s.uid}'s`);
    if (!own?.alive || own.ref.pid !== sb.pid) throw new NodenetError(ErrorCode.Pod, `could not start container ${s.container}: nsenter: cannot open /proc/${sb.pid}/ns/ipc: No such file or directory`);
    if (!Number.isInteger(s.run) || s.run < 0) throw new Error(`FakePodRuntime: bad run number ${s.run}`);
    if (s.argv.length === 0) throw new Error(`FakePodRuntime: ${key}: an empty command`);
    const running = this.live(s.uid, s.container);
    if (running) throw new Error(`FakePodRuntime: ${key} already runs (run ${running.rec.run}): a second run would be a second process`);
    const before = this.procs.filter((p) => p.uid === s.uid && p.container === s.container).map((p) => p.rec.run);
    if (before.some((r) => r > s.run)) throw new Error(`FakePodRuntime: ${key}: run ${s.run} after run ${Math.max(...before)}`);
    for (const m of s.mounts) {
      if (!m.volumeDir.startsWith(`/fake/kubelet/${s.uid}/`)) throw new NodenetError(ErrorCode.Pod, `could not start container ${s.container}: mount source ${m.volumeDir} is not the Pod's`);
      if (!m.target.startsWith('/') || m.target.split('/').includes('..')) throw new NodenetError(ErrorCode.Pod, `could not start container ${s.container}: mount target ${JSON.stringify(m.target)} is not an absolute path`);
      if (m.subPath.startsWith('/') || m.subPath.split('/').includes('..')) throw new NodenetError(ErrorCode.Pod, `could not start container ${s.container}: subPath ${JSON.stringify(m.subPath)} must be relative, without '..'`);
      if (!this.exists(m.volumeDir) && ![...this.files.keys()].some((f) => f.startsWith(`${m.volumeDir}/`))) throw new Error(`FakePodRuntime: ${key}: mount of ${m.volumeDir}, which the kubelet never made`);
    }
    const pid = this.nextPid++;
    const rec: RunRecord = { run: s.run, pgid: pid, pid, procStart: String(pid), startedAt: s.nowMs };
    this.procs.push({ uid: s.uid, container: s.container, rec, argv: [...s.argv], env: { ...s.env }, cwd: s.cwd, mounts: [...s.mounts], resources: s.resources ?? null, alive: true, exit: null, signals: [] });
    this.logs.add(this.logPath(s.uid, s.container, s.run));
    return rec;
  }

  running(r: RunRecord): boolean {
    return this.proc(r)?.alive ?? false;
  }

  exitOf(uid: string, container: string, r: RunRecord): ExitStatus {
    const p = this.proc(r);
    if (!p || p.uid !== uid || p.container !== container) throw new Error(`FakePodRuntime: exitOf ${uid}/${container}: run ${r.run} (pid ${r.pid}) is not one of its runs`);
    if (p.alive) throw new Error(`FakePodRuntime: exitOf ${uid}/${container}#${r.run}: it still runs`);
    return p.exit ?? { exitCode: 137, signal: 9 };
  }

  signal(r: RunRecord, sig: 'SIGTERM' | 'SIGKILL'): void {
    const p = this.proc(r);
    this.calls.push(`signal ${p ? `${p.uid}/${p.container}#${p.rec.run}` : `pid ${r.pid}`} ${sig}`);
    if (!p?.alive) return;
    p.signals.push(sig);
    const b = this.behaviour.get(`${p.uid}/${p.container}`) ?? 'exit';
    if (sig === 'SIGTERM' && b === 'exit') this.end(p, { exitCode: 143, signal: 15 });
    if (sig === 'SIGKILL' && b !== 'unkillable') this.end(p, null);
  }

  limitsNotEnforced(): Readonly<Partial<Record<Controller, string>>> {
    return { ...this.notEnforced };
  }

  async sweep(keep: ReadonlySet<string>): Promise<void> {
    this.sweeps.push([...keep].sort());
  }

  volumeDir(uid: string, plugin: VolumePlugin, volume: string): string {
    checkNames(uid);
    if (!/^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/.test(volume)) throw new NodenetError(ErrorCode.Pod, `invalid volume name ${JSON.stringify(volume)}: must be a DNS-1123 label`);
    return `/fake/kubelet/${uid}/${POD_FILES.volumes}/${plugin}/${volume}`;
  }

  writeVolume(uid: string, plugin: VolumePlugin, volume: string, payload: ReadonlyMap<string, { readonly data: Buffer; readonly mode: number }>): boolean {
    const dir = this.volumeDir(uid, plugin, volume);
    this.enter('writeVolume', `${uid}/${volume}`, `writeVolume ${uid}/${volume}`);
    for (const p of payload.keys()) if (!p || p.startsWith('/') || p.split('/').some((x) => x === '..') || p.startsWith('..')) throw new Error(`invalid path ${JSON.stringify(p)}`);
    const before = this.filesUnder(dir);
    const after = Object.fromEntries([...payload].map(([k, v]) => [k, v.data.toString('utf8')]));
    const modes = [...payload].every(([k, v]) => this.files.get(`${dir}/${k}`)?.mode === v.mode);
    if (JSON.stringify(Object.entries(before).sort()) === JSON.stringify(Object.entries(after).sort()) && modes && this.dirs.has(dir)) return false;
    for (const k of Object.keys(before)) this.files.delete(`${dir}/${k}`);
    for (const [k, v] of payload) this.files.set(`${dir}/${k}`, { data: Buffer.from(v.data), mode: v.mode });
    this.dirs.add(dir);
    return true;
  }

  makeEmptyDir(uid: string, volume: string): string {
    const dir = this.volumeDir(uid, 'kubernetes.io~empty-dir', volume);
    this.dirs.add(dir);
    return dir;
  }

  async mountMemory(sb: SandboxRef, uid: string, volume: string, _sizeBytes: bigint | null): Promise<void> {
    this.enter('mountMemory', `${uid}/${volume}`, `mountMemory ${uid}/${volume}`);
    const own = this.sandboxes.get(uid);
    if (!own?.alive || own.ref.pid !== sb.pid) throw new NodenetError(ErrorCode.Pod, `nsenter: cannot open /proc/${sb.pid}/ns/mnt: No such file or directory`);
    this.makeEmptyDir(uid, volume);
    this.memory.add(`${uid}/${volume}`);
  }

  writePodFile(uid: string, name: 'etc-hosts' | 'resolv.conf', content: string): string {
    checkNames(uid);
    const f = `/fake/kubelet/${uid}/${POD_FILES[name]}`;
    this.files.set(f, { data: Buffer.from(content), mode: 0o644 });
    return f;
  }

  nodeResolvConf(): string {
    return this.resolvConf;
  }

  // --- inside ----------------------------------------------------------------------------------------------

  private enter(step: RuntimeStep, key: string, call: string): void {
    this.calls.push(call);
    const i = this.injections.findIndex((x) => x.step === step && (x.match === undefined || x.match === key));
    if (i < 0) return;
    const inj = this.injections[i]!;
    if (inj.skip > 0) {
      inj.skip--;
      return;
    }
    if (--inj.times <= 0) this.injections.splice(i, 1);
    throw inj.error;
  }

  private ref(uid: string, pid: number): SandboxRef {
    const name = sandboxNameOf(uid);
    return { name, runDir: '/fake', pid, pidNamespace: true, netnsPath: `/fake/netns/${name}` as NetnsPath, ipcPath: `/proc/${pid}/ns/ipc`, utsPath: `/proc/${pid}/ns/uts`, pidnsPath: `/proc/${pid}/ns/pid` };
  }

  private live(uid: string, container: string): FakeProc | undefined {
    return this.procs.find((p) => p.alive && p.uid === uid && p.container === container);
  }

  private proc(r: RunRecord): FakeProc | undefined {
    return this.procs.find((p) => p.rec.pid === r.pid && p.rec.procStart === r.procStart);
  }

  private end(p: FakeProc, exit: ExitStatus | null): void {
    p.alive = false;
    p.exit = exit;
  }

  private killSandbox(sb: FakeSandbox): void {
    sb.alive = false;
    for (const m of [...this.memory]) if (m.startsWith(`${sb.uid}/`)) this.memory.delete(m);
    for (const p of this.procs) if (p.alive && p.uid === sb.uid) this.end(p, null);
  }
}
