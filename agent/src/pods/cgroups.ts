/**
 * pods/cgroups: the Pods' cgroups on the node, as the kubelet's cgroupfs
 * driver keeps them (its values from cgroup-config.ts, pure).
 *
 * Where: one subtree nodenet owns at the root of each hierarchy, as the
 * kubelet's `/kubepods`: `nodenet/<node>/pod<uid>/<container>`, where
 * `<node>` is the node's name and a hash of the agent's run directory (lab
 * nodes share one machine and may share a name across labs). The v1 layout
 * has it once per hierarchy (cpu, memory); v2 once, with `+cpu +memory`
 * written into nodenet's own cgroup.subtree_control files (the root must
 * already enable them: nodenet changes nothing outside its subtree).
 *
 * Detection (detect): /proc/self/mountinfo and the v2 root's
 * cgroup.controllers and cgroup.subtree_control (chooseLayout), then the
 * node's directory is made in each hierarchy: one that cannot be made (no
 * permission, a read-only cgroupfs) leaves its controllers unenforced.
 * `notEnforced` says, per controller, why; the kubelet logs it once
 * (NN_ERR_LIMITS_NOT_ENFORCED) and tells each Pod with such a limit
 * (a LimitsNotEnforced Event).
 *
 * A container's cgroup is made and written (Pod level first: a child's CFS
 * quota may not exceed its parent's) before its process starts; the runtime
 * has the process write its own pid into every cgroup.procs before it execs
 * anything of the container (runtime.ts), so no process of the container
 * ever runs outside it. Its cgroup is kept for its next run (the limits do
 * not change) and removed with the Pod: removePod waits for the processes
 * to be gone (the sandbox's stop kills them; nsenter, outside the Pod's pid
 * namespace, follows its child within milliseconds), SIGKILLs what is left
 * after 2 s (only nodenet puts processes there), then removes the
 * directories bottom-up, and the node's when it is empty. sweep removes, at
 * the agent's start, the Pods' cgroups that no adopted Pod has (a crashed
 * run's), the same way, and never looks outside `nodenet/<node>`.
 *
 * OOM: the kernel kills in a cgroup over its memory limit and counts it
 * (`oom_kill` in v1's memory.oom_control since Linux 4.13, in v2's
 * memory.events); the runtime compares the count at a run's end with the
 * one at its start. memory.failcnt is no substitute: it counts every
 * charge that hit the limit, reclaimed or not.
 */
import { createHash } from 'node:crypto';
import { mkdirSync, readdirSync, readFileSync, rmdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { ErrorCode, NodenetError } from '../../../lib/errors/errors.js';
import { chooseLayout, parseCgroupMounts, parseOomKills, v1Files, v2Files, type CgroupFile, type CgroupLayout, type Controller, type ResourceConfig } from './cgroup-config.js';

/** The file operations on cgroupfs (the host's, or a fake in tests). */
export interface CgroupFs {
  /** @throws on a missing file */
  read(path: string): string;
  /** @throws what the kernel refuses (EINVAL, EBUSY, EACCES) */
  write(path: string, value: string): void;
  /** One level; an existing directory is fine. @throws EACCES, EROFS, ENOENT */
  mkdir(path: string): void;
  /** @throws EBUSY (processes or children in it), ENOENT */
  rmdir(path: string): void;
  /** The child directories (cgroups) of a directory; [] when it does not exist. */
  dirs(path: string): string[];
}

export const HOST_CGROUP_FS: CgroupFs = {
  read: (p) => readFileSync(p, 'utf8'),
  write: (p, v) => writeFileSync(p, v),
  mkdir: (p) => {
    try {
      mkdirSync(p);
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== 'EEXIST') throw e;
    }
  },
  rmdir: (p) => rmdirSync(p),
  dirs: (p) => {
    try {
      return readdirSync(p, { withFileTypes: true }).filter((d) => d.isDirectory()).map((d) => d.name);
    } catch {
      return [];
    }
  },
};

/** One hierarchy nodenet uses: its node directory and the controllers it enforces there. */
interface Hierarchy {
  readonly version: 1 | 2;
  /** `<mount>/nodenet`. */
  readonly top: string;
  /** `<mount>/nodenet/<node>`. */
  readonly node: string;
  readonly controllers: readonly Controller[];
}

export interface PodCgroupsOptions {
  readonly layout: CgroupLayout;
  /** The node's directory name (nodeDirName). */
  readonly node: string;
  readonly fs?: CgroupFs;
  /** How a leftover process is killed (default process.kill). */
  readonly kill?: (pid: number) => void;
  /** How long removePod waits (default setTimeout). */
  readonly sleep?: (ms: number) => Promise<void>;
  /** How long removePod waits for the processes to go before it kills them (ms; default 2000). */
  readonly drainMs?: number;
}

const errText = (e: unknown) => (e instanceof Error ? e.message : String(e));

/** `<node name>-<8 hex of the run directory>`: unique per agent on one machine, readable, a valid cgroup name. */
export function nodeDirName(nodeName: string, runDir: string): string {
  const safe = nodeName.replace(/[^A-Za-z0-9_.-]/g, '_').slice(0, 63) || 'node';
  return `${safe}-${createHash('sha256').update(runDir).digest('hex').slice(0, 8)}`;
}

/**
 * Removes a node's Pod cgroups and its directory, for whoever ends a node without its agent stopping the Pods
 * (the lab's destroy, after it killed the pause holders): what a kubelet would sweep at its next start.
 */
export async function removeNodeCgroups(nodeName: string, runDir: string): Promise<void> {
  await PodCgroups.detect({ node: nodeDirName(nodeName, runDir) }).sweep(new Set());
}

const POD_PREFIX = 'pod';
const podDirName = (uid: string) => `${POD_PREFIX}${uid}`;

export class PodCgroups {
  /** Per controller, why its limits are not enforced (absent: enforced). */
  readonly notEnforced: Readonly<Partial<Record<Controller, string>>>;
  private readonly hierarchies: readonly Hierarchy[];
  private readonly fs: CgroupFs;

  /** The machine's layout (mountinfo, the v2 root's files) with the node's directories made; never throws. */
  static detect(o: { readonly node: string; readonly fs?: CgroupFs; readonly mountinfo?: string }): PodCgroups {
    const fs = o.fs ?? HOST_CGROUP_FS;
    let mountinfo = o.mountinfo;
    if (mountinfo === undefined) {
      try { mountinfo = readFileSync('/proc/self/mountinfo', 'utf8'); } catch { mountinfo = ''; }
    }
    const mounts = parseCgroupMounts(mountinfo);
    const tryRead = (p: string) => { try { return fs.read(p); } catch { return null; } };
    const layout = chooseLayout(mounts, mounts.v2 === null ? { controllers: null, subtreeControl: null } : { controllers: tryRead(join(mounts.v2, 'cgroup.controllers')), subtreeControl: tryRead(join(mounts.v2, 'cgroup.subtree_control')) });
    return new PodCgroups({ layout, node: o.node, fs });
  }

  constructor(private readonly o: PodCgroupsOptions) {
    this.fs = o.fs ?? HOST_CGROUP_FS;
    const missing: Partial<Record<Controller, string>> = { ...o.layout.missing };
    const hs: Hierarchy[] = [];
    if (o.layout.version === 2) {
      if (o.layout.controllers.length) hs.push({ version: 2, top: join(o.layout.mount, 'nodenet'), node: join(o.layout.mount, 'nodenet', o.node), controllers: o.layout.controllers });
    } else {
      // cpu and memory may share one hierarchy (comounted): one directory for both.
      const byMount = new Map<string, Controller[]>();
      for (const [c, at] of Object.entries(o.layout.mounts) as [Controller, string][]) byMount.set(at, [...(byMount.get(at) ?? []), c]);
      for (const [at, cs] of byMount) hs.push({ version: 1, top: join(at, 'nodenet'), node: join(at, 'nodenet', o.node), controllers: cs });
    }
    // Made now, so that a hierarchy nodenet may not write is known before any Pod: its controllers are not enforced.
    this.hierarchies = hs.filter((h) => {
      try {
        this.ensureNode(h);
        return true;
      } catch (e) {
        for (const c of h.controllers) missing[c] = `cannot make ${h.node}: ${errText(e)}`;
        return false;
      }
    });
    this.notEnforced = missing;
  }

  /** Every directory nodenet has for a Pod (for tests and the sweep). */
  podDirs(uid: string): string[] {
    return this.hierarchies.map((h) => join(h.node, podDirName(uid)));
  }

  /**
   * Makes (or keeps) the Pod's and the container's cgroups with their values; returns the cgroup.procs files the
   * container's process must join, and the container's OOM kill count now (null: unknown).
   * @throws NodenetError(Pod) when a cgroup cannot be made or written
   */
  prepare(uid: string, container: string, pod: ResourceConfig, ctr: ResourceConfig): { procs: string[]; oomKills: number | null } {
    const procs: string[] = [];
    for (const h of this.hierarchies) {
      const podDir = join(h.node, podDirName(uid));
      const ctrDir = join(podDir, container);
      try {
        this.ensureNode(h);
        this.fs.mkdir(podDir);
        if (h.version === 2) this.fs.write(join(podDir, 'cgroup.subtree_control'), h.controllers.map((c) => `+${c}`).join(' '));
        this.writeAll(podDir, this.files(h, pod, false));
        this.fs.mkdir(ctrDir);
        this.writeAll(ctrDir, this.files(h, ctr, true));
      } catch (e) {
        throw new NodenetError(ErrorCode.Pod, `could not set up the cgroup of container ${container}: ${errText(e)}`, { cause: e });
      }
      procs.push(join(ctrDir, 'cgroup.procs'));
    }
    return { procs, oomKills: this.oomKills(uid, container) };
  }

  /** The OOM kills counted in a container's cgroup so far (null: no memory controller, no cgroup, or a kernel that does not count). */
  oomKills(uid: string, container: string): number | null {
    const h = this.hierarchies.find((x) => x.controllers.includes('memory'));
    if (!h) return null;
    const dir = join(h.node, podDirName(uid), container);
    try {
      return parseOomKills(this.fs.read(join(dir, h.version === 2 ? 'memory.events' : 'memory.oom_control')));
    } catch {
      return null;
    }
  }

  /** Removes a Pod's cgroups once their processes are gone (those left after the drain time are SIGKILLed). Whether all went. */
  async removePod(uid: string): Promise<boolean> {
    let ok = true;
    for (const h of this.hierarchies) {
      ok = (await this.removeTree(join(h.node, podDirName(uid)))) && ok;
      this.removeNodeIfEmpty(h);
    }
    return ok;
  }

  /** Removes the Pods' cgroups of this node that no Pod in `keep` (by uid) has: a crashed run's leftovers. Returns the uids removed. */
  async sweep(keep: ReadonlySet<string>): Promise<string[]> {
    const gone = new Set<string>();
    for (const h of this.hierarchies) {
      for (const d of this.fs.dirs(h.node)) {
        if (!d.startsWith(POD_PREFIX) || keep.has(d.slice(POD_PREFIX.length))) continue;
        if (await this.removeTree(join(h.node, d))) gone.add(d.slice(POD_PREFIX.length));
      }
      this.removeNodeIfEmpty(h);
    }
    return [...gone];
  }

  // --- inside ----------------------------------------------------------------------------------------------

  private files(h: Hierarchy, cfg: ResourceConfig, container: boolean): CgroupFile[] {
    const all = h.version === 2 ? v2Files(cfg, { container }) : v1Files(cfg);
    return h.controllers.flatMap((c) => all[c]);
  }

  private writeAll(dir: string, files: readonly CgroupFile[]): void {
    for (const [f, v] of files) {
      try {
        this.fs.write(join(dir, f), v);
      } catch (e) {
        throw new Error(`writing ${v} to ${join(dir, f)}: ${errText(e)}`, { cause: e });
      }
    }
  }

  private ensureNode(h: Hierarchy): void {
    this.fs.mkdir(h.top);
    if (h.version === 2) this.fs.write(join(h.top, 'cgroup.subtree_control'), h.controllers.map((c) => `+${c}`).join(' '));
    this.fs.mkdir(h.node);
    if (h.version === 2) this.fs.write(join(h.node, 'cgroup.subtree_control'), h.controllers.map((c) => `+${c}`).join(' '));
  }

  private removeNodeIfEmpty(h: Hierarchy): void {
    if (this.fs.dirs(h.node).length) return;
    try { this.fs.rmdir(h.node); } catch { /* gone, or a Pod came meanwhile */ }
  }

  private procsOf(dir: string): number[] {
    try {
      return this.fs.read(join(dir, 'cgroup.procs')).split('\n').filter(Boolean).map(Number).filter((n) => Number.isInteger(n) && n > 0);
    } catch {
      return [];
    }
  }

  /** A cgroup and its children, bottom-up, once empty. */
  private async removeTree(dir: string): Promise<boolean> {
    let ok = true;
    for (const d of this.fs.dirs(dir)) ok = (await this.removeTree(join(dir, d))) && ok;
    const sleep = this.o.sleep ?? ((ms: number) => new Promise<void>((r) => setTimeout(r, ms)));
    const drain = this.o.drainMs ?? 2000;
    let waited = 0;
    let killed = false;
    for (;;) {
      const pids = this.procsOf(dir);
      if (!pids.length) break;
      if (waited >= drain && !killed) {
        for (const pid of pids) try { (this.o.kill ?? ((p: number) => process.kill(p, 'SIGKILL')))(pid); } catch { /* gone */ }
        killed = true;
      } else if (waited >= drain * 2) return false;
      await sleep(20);
      waited += 20;
    }
    try {
      this.fs.rmdir(dir);
      return ok;
    } catch (e) {
      return (e as NodeJS.ErrnoException).code === 'ENOENT' && ok;
    }
  }
}
