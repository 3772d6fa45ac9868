/**
 * bench/lib/proc: what a bench reads from /proc about a process (the server,
 * an agent), the machine and the disk under a data directory, parsed. Pure: the caller
 * reads the files.
 */

export interface MemoryStatus {
  /** VmRSS: resident now (KiB). */
  readonly rssKiB: number;
  /** VmHWM: the peak resident size since start or since the last reset through clear_refs (KiB). */
  readonly hwmKiB: number;
}

/** VmRSS and VmHWM from /proc/<pid>/status. @throws TypeError when either is missing. */
export function parseProcStatus(text: string): MemoryStatus {
  const kib = (field: string): number => {
    const m = new RegExp(`^${field}:\\s+(\\d+) kB$`, 'm').exec(text);
    if (!m) throw new TypeError(`/proc/<pid>/status has no ${field} line`);
    return Number(m[1]);
  };
  return { rssKiB: kib('VmRSS'), hwmKiB: kib('VmHWM') };
}

/**
 * User + system CPU time (ms) from /proc/<pid>/stat: fields 14 and 15, in
 * clock ticks. The command name (field 2) may hold spaces and parentheses,
 * so fields are counted after its last ")".
 */
export function parseProcStatCpuMs(text: string, tickMs = 10): number {
  const close = text.lastIndexOf(')');
  if (close < 0) throw new TypeError('/proc/<pid>/stat: no ")" after the command name');
  const f = text.slice(close + 2).trim().split(/\s+/);
  // f[0] is field 3 (state): utime is field 14 → f[11], stime field 15 → f[12].
  const utime = Number(f[11]);
  const stime = Number(f[12]);
  if (!Number.isFinite(utime) || !Number.isFinite(stime)) throw new TypeError('/proc/<pid>/stat: utime/stime are not numbers');
  return (utime + stime) * tickMs;
}

export interface Mount {
  readonly device: string;
  readonly mountPoint: string;
  readonly fsType: string;
}

/** The mount (from /proc/mounts) a path lives on: the longest mount point that is the path or one of its parents; the last one mounted wins a tie. */
export function mountOf(path: string, mounts: string): Mount | null {
  let best: Mount | null = null;
  for (const line of mounts.split('\n')) {
    const [device, rawPoint, fsType] = line.split(' ');
    if (!device || !rawPoint || !fsType) continue;
    const mountPoint = rawPoint.replace(/\\(\d{3})/g, (_, o: string) => String.fromCharCode(parseInt(o, 8)));
    const under = mountPoint === '/' || path === mountPoint || path.startsWith(`${mountPoint}/`);
    if (under && (!best || mountPoint.length >= best.mountPoint.length)) best = { device, mountPoint, fsType };
  }
  return best;
}

export interface CpuTotals {
  /** user + nice + system + irq + softirq + steal, all CPUs (ms). */
  readonly busyMs: number;
  /** idle + iowait, all CPUs (ms). */
  readonly idleMs: number;
}

/** The machine's CPU time so far, from the first ("cpu ") line of /proc/stat. */
export function parseProcStatTotals(text: string, tickMs = 10): CpuTotals {
  const line = text.split('\n').find((l) => l.startsWith('cpu '));
  if (!line) throw new TypeError('/proc/stat has no "cpu " line');
  const [user = 0, nice = 0, system = 0, idle = 0, iowait = 0, irq = 0, softirq = 0, steal = 0] = line.trim().split(/\s+/).slice(1).map(Number);
  return { busyMs: (user + nice + system + irq + softirq + steal) * tickMs, idleMs: (idle + iowait) * tickMs };
}

export interface ProcIdentity {
  readonly pid: number;
  /** The command name (field 2, without its parentheses). */
  readonly comm: string;
  readonly ppid: number;
}

/** pid, command name and parent pid from /proc/<pid>/stat (the name may hold spaces and parentheses). */
export function parseProcStatIdentity(text: string): ProcIdentity {
  const open = text.indexOf('(');
  const close = text.lastIndexOf(')');
  if (open < 0 || close < open) throw new TypeError('/proc/<pid>/stat: no "(command name)"');
  const pid = Number(text.slice(0, open).trim());
  const ppid = Number(text.slice(close + 2).trim().split(/\s+/)[1]);
  if (!Number.isInteger(pid) || !Number.isInteger(ppid)) throw new TypeError('/proc/<pid>/stat: pid or ppid is not a number');
  return { pid, comm: text.slice(open + 1, close), ppid };
}
