/**
 * pods/pod-runtime: what the embedded kubelet (kubelet.ts) needs of a
 * runtime, as upstream's kubelet talks to kubecontainer.Runtime: a sandbox
 * per Pod, container runs inside it, and the Pod's record on the node.
 * runtime.ts implements it with processes (a pause holder, nsenter, a shell
 * supervisor per run); runtime.fake.ts with state in memory that refuses
 * what the process runtime refuses, for the kubelet's tests without root.
 *
 * The contract both keep:
 * - names: a Pod's uid makes its sandbox's name (`pod-<uid>`, the pause
 *   holder's rule: [A-Za-z0-9][A-Za-z0-9_.-]*, at most 128 characters; not
 *   empty) and a
 *   container's name a path segment (a DNS-1123 label, as the API server
 *   validates it); anything else is refused (checkNames) before any effect,
 *   and stopping or removing under such a name is a no-op (nothing was made);
 * - startSandbox refuses a sandbox that already runs for the uid (one that
 *   died is replaced); stopSandbox is idempotent, and stopping a sandbox ends
 *   every process in it (the pause is the pod's PID 1);
 * - startContainer needs the sandbox it is given to be the uid's and to run
 *   (nsenter fails otherwise); a run ends on its own, by a signal, or with its
 *   sandbox; exitOf is asked only of a run that no longer runs;
 * - signal never throws (a run already gone is ignored); save may fail (the
 *   disk); remove is idempotent and removes the Pod's directory: its logs,
 *   volumes, /etc/hosts and resolv.conf;
 * - volumes live in the Pod's directory, `.volumes/<plugin>/<name>` as the
 *   kubelet's `volumes/kubernetes.io~configmap/<name>` (a dot: never a
 *   container's name): writeVolume projects a payload there (AtomicWriter),
 *   makeEmptyDir makes a directory, mountMemory a tmpfs on it inside the
 *   sandbox's mount namespace (never the node's); startContainer mounts the
 *   run's `mounts` in a mount namespace of the container's own (a mount
 *   request whose source is not under the Pod's directory, a subPath that
 *   leaves its volume, a relative target are refused);
 * - limits: a run started with `resources` runs in its container's cgroup
 *   (the process runtime: cgroups.ts) from its first instruction, for the
 *   controllers limitsNotEnforced does not name; a run the kernel OOM-killed
 *   there ends with `oomKilled`; the cgroups go with the sandbox's stop, and
 *   sweep removes those of Pods not kept (a crashed agent's).
 */
import { ErrorCode, NodenetError } from '../../../lib/errors/errors.js';
import type { SandboxRef } from '../netns/pause-holder.js';
import type { BackoffEntry } from './backoff.js';
import type { Controller, ResourceConfig } from './cgroup-config.js';
import type { Terminated } from './pod-status.js';

export type { SandboxRef };

/** One run of a container. */
export interface RunRecord {
  /** The run number: the container's restart count while it runs. */
  readonly run: number;
  /** nsenter's pid: the process group. */
  readonly pgid: number;
  /** The supervisor's host pid and /proc start time. */
  readonly pid: number;
  readonly procStart: string;
  readonly startedAt: number;
  /** The OOM kills counted in the container's cgroup when the run started (absent: not in a memory cgroup). */
  readonly oomKills?: number;
}

export interface ContainerRecord {
  readonly name: string;
  readonly current: RunRecord | null;
  /** The last run's end, when the container is not running (or has run before). */
  readonly last: Terminated | null;
  /** The termination before `last` (the lastState of a restarted container). */
  readonly previous: Terminated | null;
  readonly restartCount: number;
  readonly backoff: BackoffEntry | null;
}

export interface PodRecord {
  readonly version: 1;
  readonly uid: string;
  readonly namespace: string;
  readonly name: string;
  readonly sandbox: { readonly name: string; readonly pid: number; readonly startTime: string; readonly netns: string } | null;
  readonly podIP: string | null;
  readonly startedAt: number;
  readonly containers: readonly ContainerRecord[];
}

/** A volume plugin's directory name, as the kubelet's (`kubernetes.io~configmap`). */
export type VolumePlugin = 'kubernetes.io~empty-dir' | 'kubernetes.io~configmap' | 'kubernetes.io~secret' | 'kubernetes.io~downward-api' | 'kubernetes.io~projected';

/** One mount of a container: a volume's directory (or a path inside it) at a path of the container. */
export interface MountRequest {
  /** The volume's directory (volumeDir, or etc-hosts / resolv.conf from writePodFile). */
  readonly volumeDir: string;
  /** A path inside it ('' : the directory itself); made as a directory when missing, as the kubelet does. */
  readonly subPath: string;
  /** Absolute, normalised. */
  readonly target: string;
  readonly readOnly: boolean;
}

/** One run to start. */
export interface ContainerStart {
  readonly uid: string;
  readonly container: string;
  readonly run: number;
  readonly argv: readonly string[];
  readonly env: Readonly<Record<string, string>>;
  /** The working directory (null: /). */
  readonly cwd: string | null;
  /** What the container sees mounted (mount-plan.ts). */
  readonly mounts: readonly MountRequest[];
  readonly nowMs: number;
  /** Its Pod's and its own cgroup values (cgroup-config.ts); absent: no cgroup. */
  readonly resources?: { readonly pod: ResourceConfig; readonly container: ResourceConfig };
}

export interface ExitStatus {
  readonly exitCode: number;
  readonly signal?: number;
  /** The kernel OOM-killed in the run's memory cgroup while it ran (the kubelet's reason OOMKilled). */
  readonly oomKilled?: boolean;
}

export interface PodRuntime {
  /** The name of a Pod's sandbox. */
  sandboxName(uid: string): string;
  /** Where a run's stdout and stderr go. */
  logPath(uid: string, container: string, run: number): string;
  /** Whether a file (a log) exists. */
  exists(file: string): boolean;

  /** Writes a Pod's record durably. @throws on a failed write */
  save(r: PodRecord): void;
  /** Removes a Pod's record and its logs. Idempotent. */
  remove(uid: string): void;
  /** Every readable record (after an agent restart). */
  records(): PodRecord[];
  /** The live sandbox of a record (the same pause pid and start time), or null. */
  adoptSandbox(r: PodRecord): SandboxRef | null;

  /** Starts a Pod's sandbox, its hostname set. @throws NodenetError(Pod): a bad uid, a live sandbox of the uid, a holder that did not come up */
  startSandbox(uid: string, hostname: string): Promise<{ ref: SandboxRef; startTime: string }>;
  /** Stops a Pod's sandbox and every process in it. Idempotent. */
  stopSandbox(uid: string): Promise<void>;
  /** Whether a sandbox still runs: its pause, the same process (pid and start time). */
  sandboxRunning(sb: SandboxRef, startTime: string): boolean;

  /** Starts one run of a container in the sandbox, detached. @throws NodenetError(Pod): bad names, the sandbox not running */
  startContainer(sb: SandboxRef, start: ContainerStart): Promise<RunRecord>;
  /** Whether a run still runs. */
  running(r: RunRecord): boolean;
  /** How a run that no longer runs ended (137, SIGKILL, when it left no status). */
  exitOf(uid: string, container: string, r: RunRecord): ExitStatus;
  /** Signals a run's process group; never throws. */
  signal(r: RunRecord, sig: 'SIGTERM' | 'SIGKILL'): void;
  /** Per controller, why containers' limits are not enforced on this node (absent: enforced). */
  limitsNotEnforced(): Readonly<Partial<Record<Controller, string>>>;
  /** Removes what the runtime keeps for Pods other than `keep` (by uid) outside their records: a crashed run's cgroups. Never throws. */
  sweep(keep: ReadonlySet<string>): Promise<void>;

  /** A volume's directory in the Pod's directory (not made). */
  volumeDir(uid: string, plugin: VolumePlugin, volume: string): string;
  /** Projects `payload` into the volume's directory (AtomicWriter); whether anything changed. @throws on a bad path or a failed write */
  writeVolume(uid: string, plugin: VolumePlugin, volume: string, payload: ReadonlyMap<string, { readonly data: Buffer; readonly mode: number }>): boolean;
  /** Makes an emptyDir's directory (kept as it is when it exists). */
  makeEmptyDir(uid: string, volume: string): string;
  /** Mounts a tmpfs on an emptyDir's directory inside the sandbox's mount namespace (medium Memory); idempotent. */
  mountMemory(sb: SandboxRef, uid: string, volume: string, sizeBytes: bigint | null): Promise<void>;
  /** Writes one of the Pod's own files (its /etc/hosts, its resolv.conf); returns its path. */
  writePodFile(uid: string, name: 'etc-hosts' | 'resolv.conf', content: string): string;
  /** The node's resolv.conf, what a Pod gets until cluster DNS exists. */
  nodeResolvConf(): string;
}

/** The name of a Pod's own directory entries (never a container's: not a DNS label). */
export const POD_FILES = { volumes: '.volumes', 'etc-hosts': '.etc-hosts', 'resolv.conf': '.resolv.conf' } as const;

const SANDBOX_NAME = /^[A-Za-z0-9][A-Za-z0-9_.-]{0,127}$/;
const CONTAINER_NAME = /^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/;

/** `pod-<uid>`. */
export function sandboxNameOf(uid: string): string {
  return `pod-${uid}`;
}

/** Whether checkNames would accept these names. Pure. */
export function validNames(uid: string, container?: string): boolean {
  return uid !== '' && SANDBOX_NAME.test(sandboxNameOf(uid)) && (container === undefined || CONTAINER_NAME.test(container));
}

/** Refuses a uid that makes no sandbox name, or a container name that is no DNS-1123 label. Pure. @throws NodenetError(Pod) */
export function checkNames(uid: string, container?: string): void {
  if (!validNames(uid)) throw new NodenetError(ErrorCode.Pod, `invalid pod uid ${JSON.stringify(uid)}: its sandbox name must match ${SANDBOX_NAME.source}`);
  if (container !== undefined && !validNames(uid, container)) throw new NodenetError(ErrorCode.Pod, `invalid container name ${JSON.stringify(container)}: must be a DNS-1123 label`);
}
