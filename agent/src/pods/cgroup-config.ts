/**
 * pods/cgroup-config: what the kubelet writes into a Pod's and a container's
 * cgroups, from their resources (pure), as upstream computes it:
 * - the container (kuberuntime's calculateLinuxResources): cpu.shares from
 *   the cpu request (from the limit when no request is set; 2 when neither),
 *   a CFS quota from the cpu limit over a 100 ms period, the memory limit in
 *   bytes; no limit: no quota (-1, `max`) and no memory limit;
 * - the Pod (cm's ResourceConfigForPod): a BestEffort Pod (no cpu or memory
 *   request or limit anywhere) gets shares 2 and nothing else; any other
 *   gets shares from the sum of its requests, a quota only when every
 *   container has a cpu limit (the sum of them) and a memory limit only when
 *   every container has one (the sum);
 * - the conversions of pkg/kubelet/cm/helpers_linux.go (MilliCPUToShares,
 *   MilliCPUToQuota: a quota of at least 1 ms) and cgroup_manager_linux.go
 *   (CpuSharesToCpuWeight, cgroup v2's cpu.weight from shares);
 * - the files: cgroup v1 cpu.shares, cpu.cfs_period_us, cpu.cfs_quota_us,
 *   memory.limit_in_bytes; cgroup v2 cpu.weight, cpu.max ("quota period" or
 *   "max period"), memory.max, and memory.oom.group 1 for a container (the
 *   kubelet's default on v2 since 1.28: singleProcessOOMKill false, an OOM
 *   kills the whole container; v1 always kills one process).
 * Quantities are read as resource.Quantity's MilliValue (cpu) and Value
 * (memory), rounded up. Also parsed here: /proc/self/mountinfo's cgroup
 * mounts (the shortest mount point per v1 controller, as the kubelet picks),
 * a process's own cgroups (/proc/PID/cgroup, where nodenet's subtree goes
 * on v1) and the `oom_kill` count of memory.oom_control (v1) or memory.events (v2).
 */
import { quantityNanos } from './quantity.js';

export const MIN_SHARES = 2;
export const MAX_SHARES = 262144;
export const SHARES_PER_CPU = 1024;
export const MILLI_CPU_TO_CPU = 1000;
/** The CFS period, 100 ms in µs (the kubelet's QuotaPeriod; cpuCFSQuotaPeriod is a feature gate nodenet does not have). */
export const QUOTA_PERIOD = 100_000;
/** The smallest quota the kernel takes, 1 ms in µs. */
export const MIN_QUOTA_PERIOD = 1000;

/** The controllers nodenet enforces limits with. */
export type Controller = 'cpu' | 'memory';
export const CONTROLLERS: readonly Controller[] = ['cpu', 'memory'];

/** What one cgroup holds; null: unlimited. */
export interface ResourceConfig {
  readonly cpuShares: number;
  /** µs of CPU time per period; null: no quota. */
  readonly cpuQuota: number | null;
  readonly cpuPeriod: number;
  readonly memoryLimit: bigint | null;
}

/** A container's spec.resources as written. */
export interface Resources {
  readonly requests: Readonly<Record<string, unknown>>;
  readonly limits: Readonly<Record<string, unknown>>;
}

/** MilliCPUToShares: 0 → 2 (the kernel's minimum, not its default 1024), else milli × 1024 / 1000 within [2, 262144]. */
export function milliCPUToShares(milliCPU: number): number {
  if (milliCPU === 0) return MIN_SHARES;
  const shares = Math.floor((milliCPU * SHARES_PER_CPU) / MILLI_CPU_TO_CPU);
  return Math.min(MAX_SHARES, Math.max(MIN_SHARES, shares));
}

/** MilliCPUToQuota: 0 → 0 (no quota), else milli × period / 1000, at least 1000 µs. */
export function milliCPUToQuota(milliCPU: number, period: number): number {
  if (milliCPU === 0) return 0;
  return Math.max(MIN_QUOTA_PERIOD, Math.floor((milliCPU * period) / MILLI_CPU_TO_CPU));
}

/** CpuSharesToCpuWeight (KEP-2254's linear map of [2, 262144] onto [1, 10000]). */
export function cpuSharesToWeight(shares: number): number {
  return Math.floor(((shares - 2) * 9999) / 262142) + 1;
}

/** A quantity's MilliValue (rounded up), or null when unset or not a quantity. */
function milli(q: unknown): number | null {
  const n = q === undefined || q === null ? null : quantityNanos(q);
  return n === null ? null : Number((n + 999_999n) / 1_000_000n);
}

/** A quantity's Value (rounded up), or null when unset or not a quantity. */
function value(q: unknown): bigint | null {
  const n = q === undefined || q === null ? null : quantityNanos(q);
  return n === null ? null : (n + 999_999_999n) / 1_000_000_000n;
}

/** A container's cgroup (calculateLinuxResources, with the CFS quota on as the kubelet's default). */
export function containerConfig(r: Resources): ResourceConfig {
  const cpuRequest = milli(r.requests['cpu']);
  const cpuLimit = milli(r.limits['cpu']) ?? 0;
  const memoryLimit = value(r.limits['memory']) ?? 0n;
  const cpuShares = cpuRequest === null && cpuLimit > 0 ? milliCPUToShares(cpuLimit) : milliCPUToShares(cpuRequest ?? 0);
  return { cpuShares, cpuQuota: cpuLimit > 0 ? milliCPUToQuota(cpuLimit, QUOTA_PERIOD) : null, cpuPeriod: QUOTA_PERIOD, memoryLimit: memoryLimit > 0n ? memoryLimit : null };
}

/** A Pod's cgroup (ResourceConfigForPod over its containers; nodenet runs no init containers, and no Pod-level resources). */
export function podConfig(containers: readonly Resources[]): ResourceConfig {
  let cpuRequests = 0;
  let cpuLimits = 0;
  let memoryLimits = 0n;
  let cpuLimitsDeclared = true;
  let memoryLimitsDeclared = true;
  let bestEffort = true;
  for (const c of containers) {
    const cpuLimit = milli(c.limits['cpu']) ?? 0;
    const memoryLimit = value(c.limits['memory']) ?? 0n;
    // The API server defaults a request to its limit (SetDefaults_Pod); a Pod stored without that reads the same.
    const cpuRequest = milli(c.requests['cpu']) ?? cpuLimit;
    const memoryRequest = value(c.requests['memory']) ?? memoryLimit;
    if (cpuLimit === 0) cpuLimitsDeclared = false;
    if (memoryLimit === 0n) memoryLimitsDeclared = false;
    if (cpuRequest > 0 || cpuLimit > 0 || memoryRequest > 0n || memoryLimit > 0n) bestEffort = false;
    cpuRequests += cpuRequest;
    cpuLimits += cpuLimit;
    memoryLimits += memoryLimit;
  }
  if (bestEffort) return { cpuShares: MIN_SHARES, cpuQuota: null, cpuPeriod: QUOTA_PERIOD, memoryLimit: null };
  return {
    cpuShares: milliCPUToShares(cpuRequests),
    cpuQuota: cpuLimitsDeclared && containers.length > 0 ? milliCPUToQuota(cpuLimits, QUOTA_PERIOD) : null,
    cpuPeriod: QUOTA_PERIOD,
    memoryLimit: memoryLimitsDeclared && containers.length > 0 ? memoryLimits : null,
  };
}

/** Which limits a container sets, of those nodenet enforces. */
export function limitsSet(r: Resources): Controller[] {
  return CONTROLLERS.filter((c) => (c === 'cpu' ? (milli(r.limits['cpu']) ?? 0) > 0 : (value(r.limits['memory']) ?? 0n) > 0n));
}

/** One file of a cgroup and what goes in it, in the order to write. */
export type CgroupFile = readonly [file: string, value: string];

/** cgroup v1: the files of each controller's hierarchy. */
export function v1Files(cfg: ResourceConfig): Record<Controller, CgroupFile[]> {
  return {
    cpu: [['cpu.shares', String(cfg.cpuShares)], ['cpu.cfs_period_us', String(cfg.cpuPeriod)], ['cpu.cfs_quota_us', cfg.cpuQuota === null ? '-1' : String(cfg.cpuQuota)]],
    memory: [['memory.limit_in_bytes', cfg.memoryLimit === null ? '-1' : String(cfg.memoryLimit)]],
  };
}

/** cgroup v2: the files of each controller in the one hierarchy (`container`: memory.oom.group too). */
export function v2Files(cfg: ResourceConfig, o: { readonly container: boolean }): Record<Controller, CgroupFile[]> {
  return {
    cpu: [['cpu.weight', String(cpuSharesToWeight(cfg.cpuShares))], ['cpu.max', `${cfg.cpuQuota === null ? 'max' : cfg.cpuQuota} ${cfg.cpuPeriod}`]],
    memory: [['memory.max', cfg.memoryLimit === null ? 'max' : String(cfg.memoryLimit)], ...(o.container ? [['memory.oom.group', '1'] as const] : [])],
  };
}

/** The cgroup file systems mounted (the whole hierarchy, root `/`, only: a bind mount of a subtree is not used). */
export interface CgroupMounts {
  /** The cgroup2 mount point, or null. */
  readonly v2: string | null;
  /** v1 controller → its mount point (the shortest, as the kubelet's getCgroupSubsystemsV1). */
  readonly v1: Readonly<Record<string, string>>;
}

/** The cgroup mounts of a /proc/PID/mountinfo text. */
export function parseCgroupMounts(mountinfo: string): CgroupMounts {
  let v2: string | null = null;
  const v1: Record<string, string> = {};
  for (const line of mountinfo.split('\n')) {
    const [pre, post] = line.split(' - ');
    if (!pre || !post) continue;
    const f = pre.split(' ');
    const [fstype, , superOpts] = post.split(' ');
    const root = f[3];
    const point = f[4]?.replace(/\\(\d{3})/g, (_m, o: string) => String.fromCharCode(parseInt(o, 8)));
    if (root !== '/' || !point) continue;
    if (fstype === 'cgroup2') {
      if (v2 === null || point.length < v2.length) v2 = point;
    } else if (fstype === 'cgroup') {
      for (const opt of (superOpts ?? '').split(',')) {
        if (opt === 'rw' || opt === 'ro' || opt.includes('=')) continue;
        const prev = v1[opt];
        if (prev === undefined || point.length < prev.length) v1[opt] = point;
      }
    }
  }
  return { v2, v1 };
}

/** A process's cgroups (/proc/PID/cgroup): per v1 controller its path in that controller's hierarchy, and its v2 path. */
export interface ProcCgroups {
  readonly v1: Readonly<Record<string, string>>;
  /** The `0::` line's path, or null. */
  readonly v2: string | null;
}

/**
 * The cgroups of a /proc/PID/cgroup text: `id:controllers:path` lines, v1's controllers comma-separated (comounted
 * ones share a path; `name=` hierarchies have no controller), v2's line `0::path`. A path is absolute; one that is
 * not (a cgroup outside the reader's cgroup namespace shows as `/..`) is left out.
 */
export function parseProcCgroup(text: string): ProcCgroups {
  const v1: Record<string, string> = {};
  let v2: string | null = null;
  for (const line of text.split('\n')) {
    const a = line.indexOf(':');
    const b = a < 0 ? -1 : line.indexOf(':', a + 1);
    if (b < 0) continue;
    const [id, controllers, path] = [line.slice(0, a), line.slice(a + 1, b), line.slice(b + 1)];
    if (!path.startsWith('/') || path.split('/').includes('..')) continue;
    if (id === '0' && controllers === '') v2 = path;
    else for (const c of controllers.split(',')) if (c && !c.includes('=')) v1[c] = path;
  }
  return { v1, v2 };
}

/** How nodenet uses the machine's cgroups: one v2 hierarchy, or a v1 hierarchy per controller. */
export type CgroupLayout =
  | { readonly version: 2; readonly mount: string; readonly controllers: readonly Controller[]; readonly missing: Readonly<Partial<Record<Controller, string>>> }
  | { readonly version: 1; readonly mounts: Readonly<Partial<Record<Controller, string>>>; readonly missing: Readonly<Partial<Record<Controller, string>>> };

/**
 * The layout, from the mounts and the v2 root's cgroup.controllers and cgroup.subtree_control (null: unreadable):
 * v2 when the cgroup2 mount has the cpu or memory controller (unified; in a hybrid it has none, they are v1's),
 * a controller usable only when the root enables it for its children (nodenet never changes the root's
 * subtree_control: nothing outside its own subtree); else v1, per controller mounted.
 */
export function chooseLayout(m: CgroupMounts, v2Root: { readonly controllers: string | null; readonly subtreeControl: string | null }): CgroupLayout {
  const have = new Set((v2Root.controllers ?? '').split(/\s+/).filter(Boolean));
  if (m.v2 !== null && CONTROLLERS.some((c) => have.has(c))) {
    const enabled = new Set((v2Root.subtreeControl ?? '').split(/\s+/).filter(Boolean));
    const missing: Partial<Record<Controller, string>> = {};
    const controllers: Controller[] = [];
    for (const c of CONTROLLERS) {
      if (!have.has(c)) missing[c] = `the cgroup v2 hierarchy at ${m.v2} has no ${c} controller`;
      else if (!enabled.has(c)) missing[c] = `the cgroup v2 root does not enable ${c} for its children (${m.v2}/cgroup.subtree_control), and nodenet does not change it`;
      else controllers.push(c);
    }
    return { version: 2, mount: m.v2, controllers, missing };
  }
  const mounts: Partial<Record<Controller, string>> = {};
  const missing: Partial<Record<Controller, string>> = {};
  for (const c of CONTROLLERS) {
    const at = m.v1[c];
    if (at !== undefined) mounts[c] = at;
    else missing[c] = m.v2 !== null ? `no cgroup v1 hierarchy has the ${c} controller, and the cgroup v2 hierarchy at ${m.v2} has none` : `no cgroup hierarchy with the ${c} controller is mounted`;
  }
  return { version: 1, mounts, missing };
}

/** The `oom_kill N` count of memory.oom_control (v1, Linux 4.13+) or memory.events (v2), or null when the file has none. */
export function parseOomKills(text: string): number | null {
  const m = /^oom_kill (\d+)$/m.exec(text);
  return m ? Number(m[1]) : null;
}
