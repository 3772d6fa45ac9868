/**
 * pods/cgroups: the Pods' cgroups on the node, as the kubelet's cgroupfs
 * driver keeps them (its values from cgroup-config.ts, pure).
 *
 * Where: one subtree nodenet owns, as the kubelet's `/kubepods`:
 * `nodenet/<node>/pod<uid>/<container>`, where `<node>` is the node's name
 * and a hash of the agent's run directory (lab nodes share one machine and
 * may share a name across labs).
 * - cgroup v1: once per hierarchy (cpu, memory), under the cgroup the agent
 *   itself is in there (/proc/self/cgroup): `<mount>/<agent's path>/nodenet`.
 *   Whoever accounts for the agent (a systemd unit's slice, a sandbox that
 *   runs it) keeps accounting for its Pods: their memory is charged to, and
 *   limited by, the agent's cgroup too, and they never escape to the root.
 * - cgroup v2: once, at the root, `<mount>/nodenet`, with `+cpu +memory`
 *   written into nodenet's own cgroup.subtree_control files (the root must
 *   already enable them: nodenet changes nothing outside its subtree). Not
 *   under the agent's cgroup: v2's "no internal processes" rule forbids a
 *   cgroup that holds processes (the agent) to enable controllers for its
 *   children, so the agent's cgroup cannot delegate cpu and memory to a
 *   subtree while the agent is in it; the kubelet too puts its kubepods at
 *   the root there.
 * The node's directories are recorded in `<runDir>/cgroups.json` as they are
 * made (placementRecord), so that whoever ends the node later (the lab's
 * destroy: removeNodeCgroups, from another cgroup than the agent's) and the
 * agent's next run (started from another cgroup, maybe) find them.
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
 * directories bottom-up, the node's when it is empty and `nodenet` when it
 * is (an empty cgroup left under the agent's would keep whoever made the
 * agent's from removing it; an agent that finds `nodenet` gone between its
 * two mkdirs makes it again). sweep removes, at the agent's start, the Pods'
 * cgroups that no adopted Pod has (a crashed run's), the same way, in the
 * node's directories of this placement and of the record, and never looks
 * outside `nodenet/<node>`. The node's directory at a hierarchy's root
 * (where nodenet put it before it nested under the agent's cgroup), when
 * not recorded, is not known to be nodenet's alone: its Pods' directories
 * go only once empty, and no process there is ever killed.
 *
 * OOM: the kernel kills in a cgroup over its memory limit and counts it
 * (`oom_kill` in v1's memory.oom_control since Linux 4.13, in v2's
 * memory.events); the runtime compares the count at a run's end with the
 * one at its start. memory.failcnt is no substitute: it counts every
 * charge that hit the limit, reclaimed or not.
 */
import { createHash } from 'node:crypto';
import { mkdirSync, readdirSync, readFileSync, rmdirSync, rmSync, writeFileSync } from 'node:fs';
import { basename, dirname, join, posix } from 'node:path';
import { ErrorCode, NodenetError } from '../../../lib/errors/errors.js';
import { writeFileDurable } from '../../../lib/state/durable.js';
import { chooseLayout, parseCgroupMounts, parseOomKills, parseProcCgroup, v1Files, v2Files, type CgroupFile, type CgroupLayout, type Controller, type ProcCgroups, type ResourceConfig } from './cgroup-config.js';

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

/** Where a node keeps the list of its cgroup directories (the text of `<runDir>/cgroups.json`). */
export interface PlacementRecord {
  /** null: no record. */
  load(): string | null;
  /** null: removes the record. */
  save(text: string | null): void;
}

export const CGROUPS_RECORD = 'cgroups.json';

/** The record in the node's run directory. */
export function placementRecord(runDir: string): PlacementRecord {
  const file = join(runDir, CGROUPS_RECORD);
  return {
    load: () => {
      try {
        return readFileSync(file, 'utf8');
      } catch {
        return null;
      }
    },
    save: (text) => (text === null ? rmSync(file, { force: true }) : writeFileDurable(file, text)),
  };
}

/** One hierarchy nodenet uses: its node directory and the controllers it enforces there. */
interface Hierarchy {
  readonly version: 1 | 2;
  /** `<mount>/<the agent's cgroup>/nodenet` (v1), `<mount>/nodenet` (v2). */
  readonly top: string;
  /** `<top>/<node>`. */
  readonly node: string;
  readonly controllers: readonly Controller[];
}

/**
 * A node directory that may hold this node's Pods' cgroups. `owned`: nodenet's for sure (this placement's, made by
 * this agent, or recorded): what is left in it after the drain time is killed. Not owned (the root placement found
 * by name, or the caller's own placement at removal, neither recorded): a Pod's directory goes only once empty.
 */
interface Place {
  readonly node: string;
  readonly owned: boolean;
  /** Where this agent makes its Pods' cgroups (kept in the record while the agent runs). */
  readonly current: boolean;
}

export interface PodCgroupsOptions {
  readonly layout: CgroupLayout;
  /** The node's directory name (nodeDirName). */
  readonly node: string;
  /** The agent's own cgroups (parseProcCgroup of /proc/self/cgroup): on v1 nodenet's subtree goes under them; absent: at each hierarchy's root. */
  readonly self?: ProcCgroups;
  /** Where the node's directories are recorded (placementRecord); absent: nowhere. */
  readonly record?: PlacementRecord;
  /**
   * false: nothing is made, and this placement is the caller's, not the agent's (removeNodeCgroups: only removal,
   * waiting the drain time for the processes of directories it does not own). Default true.
   */
  readonly make?: boolean;
  readonly fs?: CgroupFs;
  /** How a leftover process is killed (default process.kill). */
  readonly kill?: (pid: number) => void;
  /** How long removePod waits (default setTimeout). */
  readonly sleep?: (ms: number) => Promise<void>;
  /** How long removePod waits for the processes to go before it kills them (ms; default 2000). */
  readonly drainMs?: number;
}

export interface DetectOptions extends Omit<PodCgroupsOptions, 'layout' | 'self'> {
  /** /proc/self/mountinfo's text and /proc/self/cgroup's: both read from the host when mountinfo is not given. */
  readonly mountinfo?: string;
  /** /proc/self/cgroup's text (only with mountinfo; absent: the process is at each hierarchy's root). */
  readonly procCgroup?: string;
}

const errText = (e: unknown) => (e instanceof Error ? e.message : String(e));
const errCode = (e: unknown) => (e as NodeJS.ErrnoException | null)?.code;

/** `<node name>-<8 hex of the run directory>`: unique per agent on one machine, readable, a valid cgroup name. */
export function nodeDirName(nodeName: string, runDir: string): string {
  const safe = nodeName.replace(/[^A-Za-z0-9_.-]/g, '_').slice(0, 63) || 'node';
  return `${safe}-${createHash('sha256').update(runDir).digest('hex').slice(0, 8)}`;
}

/**
 * Removes a node's Pod cgroups and its directories, for whoever ends a node without its agent stopping the Pods
 * (the lab's destroy, after it killed the pause holders, before it removes the run directory): what a kubelet would
 * sweep at its next start. It finds them where the agent recorded them (placementRecord(runDir)), wherever the agent
 * ran; without a record, at each hierarchy's root and under the caller's own cgroup. Makes nothing.
 */
export async function removeNodeCgroups(nodeName: string, runDir: string, o: Omit<DetectOptions, 'node' | 'record' | 'make'> = {}): Promise<void> {
  await PodCgroups.detect({ ...o, node: nodeDirName(nodeName, runDir), record: placementRecord(runDir), make: false }).sweep(new Set());
}

const POD_PREFIX = 'pod';
const podDirName = (uid: string) => `${POD_PREFIX}${uid}`;
const TOP = 'nodenet';

export class PodCgroups {
  /** Per controller, why its limits are not enforced (absent: enforced). */
  readonly notEnforced: Readonly<Partial<Record<Controller, string>>>;
  private readonly hierarchies: readonly Hierarchy[];
  private readonly places: readonly Place[];
  private readonly fs: CgroupFs;
  private saved: string | null | undefined;

  /** The machine's layout (mountinfo, the v2 root's files) and the agent's cgroups, with the node's directories made (unless make is false); never throws. */
  static detect(o: DetectOptions): PodCgroups {
    const fs = o.fs ?? HOST_CGROUP_FS;
    const host = (f: string) => { try { return readFileSync(f, 'utf8'); } catch { return ''; } };
    const mountinfo = o.mountinfo ?? host('/proc/self/mountinfo');
    const procCgroup = o.procCgroup ?? (o.mountinfo === undefined ? host('/proc/self/cgroup') : '');
    const mounts = parseCgroupMounts(mountinfo);
    const tryRead = (p: string) => { try { return fs.read(p); } catch { return null; } };
    const layout = chooseLayout(mounts, mounts.v2 === null ? { controllers: null, subtreeControl: null } : { controllers: tryRead(join(mounts.v2, 'cgroup.controllers')), subtreeControl: tryRead(join(mounts.v2, 'cgroup.subtree_control')) });
    const { mountinfo: _m, procCgroup: _p, ...rest } = o;
    return new PodCgroups({ ...rest, layout, self: parseProcCgroup(procCgroup), fs });
  }

  constructor(private readonly o: PodCgroupsOptions) {
    this.fs = o.fs ?? HOST_CGROUP_FS;
    const make = o.make ?? true;
    const missing: Partial<Record<Controller, string>> = { ...o.layout.missing };
    const hs: Hierarchy[] = [];
    /** Per hierarchy (mount point), the node's directory at its root. */
    const roots: string[] = [];
    if (o.layout.version === 2) {
      // At the root: see the header (no internal processes).
      if (o.layout.controllers.length) hs.push({ version: 2, top: join(o.layout.mount, TOP), node: join(o.layout.mount, TOP, o.node), controllers: o.layout.controllers });
    } else {
      // cpu and memory may share one hierarchy (comounted): one directory for both.
      const byMount = new Map<string, Controller[]>();
      for (const [c, at] of Object.entries(o.layout.mounts) as [Controller, string][]) byMount.set(at, [...(byMount.get(at) ?? []), c]);
      for (const [at, cs] of byMount) {
        const top = join(at, o.self?.v1[cs[0]!] ?? '/', TOP);
        hs.push({ version: 1, top, node: join(top, o.node), controllers: cs });
        roots.push(join(at, TOP, o.node));
      }
    }
    // Made now, so that a hierarchy nodenet may not write is known before any Pod: its controllers are not enforced.
    this.hierarchies = !make ? [] : hs.filter((h) => {
      try {
        this.ensureNode(h);
        return true;
      } catch (e) {
        for (const c of h.controllers) missing[c] = `cannot make ${h.node}: ${errText(e)}`;
        return false;
      }
    });
    this.notEnforced = missing;
    const recorded = new Set(this.loadRecord());
    const places = new Map<string, Place>();
    const add = (node: string, owned: boolean, current: boolean) => { if (!places.has(node)) places.set(node, { node, owned: owned || recorded.has(node), current }); };
    for (const h of this.hierarchies) add(h.node, true, true);
    for (const d of recorded) add(d, true, false);
    if (!make) for (const h of hs) add(h.node, false, false);
    for (const d of roots) add(d, false, false);
    this.places = [...places.values()];
    if (make) this.saveRecord();
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

  /** Removes a Pod's cgroups (wherever the node has some) once their processes are gone (in nodenet's own, those left after the drain time are SIGKILLed). Whether all went. */
  async removePod(uid: string): Promise<boolean> {
    let ok = true;
    for (const p of this.places) {
      if (!p.current && !this.fs.dirs(p.node).includes(podDirName(uid))) continue;
      ok = (await this.removeTree(join(p.node, podDirName(uid)), p.owned ? 'kill' : 'wait')) && ok;
      this.removeNodeIfEmpty(p);
    }
    this.saveRecord();
    return ok;
  }

  /**
   * Removes the Pods' cgroups of this node that no Pod in `keep` (by uid) has: a crashed run's leftovers, in this
   * placement's and the recorded node directories; at the roots (unrecorded) only empty ones, at once. Returns the
   * uids whose cgroups went.
   */
  async sweep(keep: ReadonlySet<string>): Promise<string[]> {
    const gone = new Set<string>();
    const removal = this.o.make === false;
    for (const p of this.places) {
      for (const d of this.fs.dirs(p.node)) {
        if (!d.startsWith(POD_PREFIX) || keep.has(d.slice(POD_PREFIX.length))) continue;
        if (await this.removeTree(join(p.node, d), p.owned ? 'kill' : removal ? 'wait' : 'now')) gone.add(d.slice(POD_PREFIX.length));
      }
      this.removeNodeIfEmpty(p);
    }
    this.saveRecord();
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
    for (let attempt = 1; ; attempt++) {
      try {
        this.fs.mkdir(h.top);
        if (h.version === 2) this.fs.write(join(h.top, 'cgroup.subtree_control'), h.controllers.map((c) => `+${c}`).join(' '));
        this.fs.mkdir(h.node);
        if (h.version === 2) this.fs.write(join(h.node, 'cgroup.subtree_control'), h.controllers.map((c) => `+${c}`).join(' '));
        return;
      } catch (e) {
        // Another agent removed the (empty) `nodenet` between the two mkdirs: made again.
        if (errCode(e) !== 'ENOENT' || attempt >= 3) throw e;
      }
    }
  }

  /** The node's directory once it has no Pod, then `nodenet` once it has no node. */
  private removeNodeIfEmpty(p: Place): void {
    for (const dir of [p.node, dirname(p.node)]) {
      if (this.fs.dirs(dir).length) return;
      try { this.fs.rmdir(dir); } catch { return; /* gone, or a Pod or a node came meanwhile */ }
    }
  }

  /** The recorded node directories that can be this node's: `<a cgroup mount>/.../nodenet/<node>`, normalized. */
  private loadRecord(): string[] {
    const text = this.o.record?.load() ?? null;
    if (text === null) return [];
    let v: unknown;
    try { v = JSON.parse(text); } catch { return []; }
    const dirs = typeof v === 'object' && v !== null && 'nodeDirs' in v && Array.isArray(v.nodeDirs) ? (v.nodeDirs as unknown[]) : [];
    const l = this.o.layout;
    const mounts = l.version === 2 ? [l.mount] : Object.values(l.mounts);
    return dirs.filter((d): d is string => typeof d === 'string' && posix.isAbsolute(d) && posix.normalize(d) === d
      && basename(d) === this.o.node && basename(dirname(d)) === TOP && mounts.some((m) => d.startsWith(`${m}/`)));
  }

  /** Records this placement's node directories and the recorded ones still there (none: no record). Never throws. */
  private saveRecord(): void {
    if (!this.o.record) return;
    const dirs = this.places.filter((p) => p.current || (p.owned && this.fs.dirs(dirname(p.node)).includes(basename(p.node)))).map((p) => p.node);
    const text = dirs.length ? `${JSON.stringify({ nodeDirs: dirs })}\n` : null;
    if (text === this.saved) return;
    try {
      this.o.record.save(text);
      this.saved = text;
    } catch { /* the next save tries again; without it, removal falls back to the roots and the caller's cgroup */ }
  }

  private procsOf(dir: string): number[] {
    try {
      return this.fs.read(join(dir, 'cgroup.procs')).split('\n').filter(Boolean).map(Number).filter((n) => Number.isInteger(n) && n > 0);
    } catch {
      return [];
    }
  }

  /**
   * A cgroup and its children, bottom-up, once empty. `kill`: what is left after the drain time is SIGKILLed;
   * `wait`: the drain time is waited, nothing killed; `now`: only what is empty already.
   */
  private async removeTree(dir: string, how: 'kill' | 'wait' | 'now'): Promise<boolean> {
    let ok = true;
    for (const d of this.fs.dirs(dir)) ok = (await this.removeTree(join(dir, d), how)) && ok;
    const sleep = this.o.sleep ?? ((ms: number) => new Promise<void>((r) => setTimeout(r, ms)));
    const drain = this.o.drainMs ?? 2000;
    const limit = how === 'kill' ? drain * 2 : how === 'wait' ? drain : 0;
    let waited = 0;
    let killed = false;
    for (;;) {
      const pids = this.procsOf(dir);
      if (!pids.length) break;
      if (how === 'kill' && waited >= drain && !killed) {
        for (const pid of pids) try { (this.o.kill ?? ((p: number) => process.kill(p, 'SIGKILL')))(pid); } catch { /* gone */ }
        killed = true;
      } else if (waited >= limit) return false;
      await sleep(20);
      waited += 20;
    }
    try {
      this.fs.rmdir(dir);
      return ok;
    } catch (e) {
      return errCode(e) === 'ENOENT' && ok;
    }
  }
}
