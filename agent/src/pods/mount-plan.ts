/**
 * pods/mount-plan: the mounts of one container, planned (pure) and rendered
 * as the steps of a small sh script that runs in the container's own mount
 * namespace before its command (runtime.ts).
 *
 * A container is a process from the node's filesystem, so its view is the
 * node's, plus what the kubelet mounts: volumes at their mountPath
 * (readOnly honoured: a read-only bind), its own /etc/hosts and
 * /etc/resolv.conf. Every container gets a mount namespace of its own
 * (`unshare --mount`, made from the Pod's, the pause holder's; propagation
 * private), so that nothing it mounts is seen by the node or by the Pod's
 * other containers, whose volumeMounts differ, as each container has its
 * own root upstream.
 *
 * A mountPath that does not exist on the node cannot be made there (the
 * node's filesystem is the image and it is shared). The deepest existing
 * directory on its way (after the node's symlinks: /var/run/secrets/...
 * goes through /run) is shadowed instead: an overlay (lower: that
 * directory; upper: a tmpfs private to the container) is mounted on it, and
 * the missing directories are made in the overlay; the container sees the
 * node's directory copy-on-write. The mounts below it are moved back in
 * (stashed first with `mount --rbind`, then `--move`d onto the overlay).
 * When the directory is / itself (a mountPath such as /data), the overlay
 * becomes the container's root: the node's top-level mounts are bound
 * into it and the script ends with pivot_root. A mountPath inside another
 * volume of the container is made inside that volume (as runc makes it in
 * the container's rootfs). Paths the container must still share with the
 * node under an overlay are bound back in (`keep`: its run directory, where
 * its supervisor writes the exit status).
 *
 * The staging tmpfs is mounted on an empty directory of the kubelet's and
 * then used through /proc/self/fd/3 (an overlay may hide its path), its
 * sources are read from a stash of the Pod's directory (an overlay would
 * otherwise stand between a volume and its updates), and every mount(8)
 * call is -c (no canonicalisation: a /proc/self/fd path must stay one).
 * The stage is lazily unmounted at the end; the overlays keep their upper
 * directories.
 */

export type FsKind = 'dir' | 'file' | 'symlink' | 'other';

/** The node's filesystem as the planner needs it (lstat and readlink; tests give a fake). */
export interface FsView {
  kind(path: string): FsKind | null;
  readlink(path: string): string;
}

export interface ContainerMount {
  /** A host path under podDir. */
  readonly source: string;
  /** The path in the container: absolute, normalised. */
  readonly target: string;
  readonly kind: 'dir' | 'file';
  readonly readOnly: boolean;
}

export interface MountPlanInput {
  readonly mounts: readonly ContainerMount[];
  /** Host directories that must stay the node's in the container even under an overlay. */
  readonly keep: readonly string[];
  /** The mount points of the Pod's mount namespace (/proc/<pause>/mountinfo). */
  readonly mountPoints: readonly string[];
  /** The Pod's directory (every source is under it). */
  readonly podDir: string;
  /** An empty directory of the kubelet's, for the staging tmpfs. */
  readonly stage: string;
  /** The container's working directory. */
  readonly workingDir: string;
  readonly fs: FsView;
}

export type MountOp =
  | { readonly op: 'stage'; readonly path: string }
  | { readonly op: 'mkdir'; readonly path: string }
  | { readonly op: 'touch'; readonly path: string }
  | { readonly op: 'bind' | 'rbind' | 'move'; readonly source: string; readonly target: string }
  | { readonly op: 'overlay'; readonly lower: string; readonly upper: string; readonly work: string; readonly target: string }
  | { readonly op: 'ro'; readonly target: string }
  | { readonly op: 'umount'; readonly target: string }
  | { readonly op: 'unstage' }
  | { readonly op: 'pivot'; readonly root: string }
  | { readonly op: 'cd'; readonly path: string };

export type MountPlan = { readonly ok: true; readonly ops: readonly MountOp[] } | { readonly ok: false; readonly message: string };

const STAGE_FD = '/proc/self/fd/3';

const parts = (p: string) => p.split('/').filter(Boolean);
const join = (...ps: string[]) => `/${ps.flatMap(parts).join('/')}`;
/** a is b or under it. */
const within = (a: string, b: string) => b === '/' || a === b || a.startsWith(`${b}/`);
const depth = (p: string) => parts(p).length;

interface Resolved {
  /** The real path of the deepest existing prefix. */
  readonly existing: string;
  /** What is missing below it. */
  readonly rest: readonly string[];
  /** The kind of `existing` (when rest is empty: the target's). */
  readonly kind: FsKind;
}

/** Resolves a path against the node's filesystem, following its symlinks, down to what exists. @throws Error */
export function resolvePath(fs: FsView, path: string): Resolved {
  const queue = parts(path);
  let cur: string[] = [];
  let hops = 0;
  while (queue.length) {
    const comp = queue.shift()!;
    if (comp === '.') continue;
    if (comp === '..') {
      cur.pop();
      continue;
    }
    const next = join(...cur, comp);
    const k = fs.kind(next);
    if (k === null) return { existing: join(...cur), rest: [comp, ...queue], kind: 'dir' };
    if (k === 'symlink') {
      if (++hops > 40) throw new Error(`${path}: too many levels of symbolic links`);
      const target = fs.readlink(next);
      if (target.startsWith('/')) cur = [];
      queue.unshift(...parts(target));
      continue;
    }
    if (k !== 'dir' && queue.length) throw new Error(`${path}: ${next} is not a directory`);
    cur.push(comp);
    if (k !== 'dir') return { existing: join(...cur), rest: [], kind: k };
  }
  return { existing: join(...cur), rest: [], kind: 'dir' };
}

/** The mount points strictly under `dir` that no other mount point under `dir` contains. */
function topLevelUnder(dir: string, mountPoints: readonly string[]): string[] {
  const under = [...new Set(mountPoints)].filter((m) => m !== dir && within(m, dir)).sort((a, b) => depth(a) - depth(b) || a.localeCompare(b));
  const out: string[] = [];
  for (const m of under) if (!out.some((o) => within(m, o))) out.push(m);
  return out;
}

/** The innermost mount point containing `p`. */
function mountOf(p: string, mountPoints: readonly string[]): string {
  let best = '/';
  for (const m of mountPoints) if (within(p, m) && depth(m) > depth(best)) best = m;
  return best;
}

/** Plans a container's mounts. Pure. */
export function planMounts(i: MountPlanInput): MountPlan {
  try {
    return { ok: true, ops: plan(i) };
  } catch (e) {
    return { ok: false, message: e instanceof Error ? e.message : String(e) };
  }
}

function plan(i: MountPlanInput): MountOp[] {
  const ops: MountOp[] = [];
  for (const m of i.mounts) if (!within(m.source, i.podDir)) throw new Error(`mount source ${m.source} is not under the Pod's directory`);
  // 1. Where each target is: inside an earlier mount of the container, or on the node (resolved).
  const sorted = [...i.mounts].sort((a, b) => depth(a.target) - depth(b.target) || a.target.localeCompare(b.target));
  interface Placed { readonly m: ContainerMount; readonly real: string; readonly missing: readonly string[]; readonly inside: Placed | null }
  const placed: Placed[] = [];
  for (const m of sorted) {
    const outer = [...placed].reverse().find((p) => p.m.kind === 'dir' && within(m.target, p.m.target) && m.target !== p.m.target) ?? null;
    if (outer) {
      const rel = parts(m.target.slice(outer.m.target.length));
      const missing = resolveInside(i.fs, outer.m.source, rel);
      placed.push({ m, real: join(outer.real, ...outer.missing, ...rel.slice(0, rel.length - missing.length)), missing, inside: outer });
      continue;
    }
    const r = resolvePath(i.fs, m.target);
    if (!r.rest.length && (r.kind === 'dir') !== (m.kind === 'dir')) throw new Error(`cannot mount ${m.kind === 'dir' ? 'a directory' : 'a file'} on ${m.target}: it is ${r.kind === 'dir' ? 'a directory' : 'not a directory'} on the node`);
    placed.push({ m, real: r.existing, missing: r.rest, inside: null });
  }
  // 2. The directories to shadow: the deepest existing one on the way to each missing target, unless an overlay
  //    already covers it (under a shallower one and on the same filesystem).
  const wanted = [...new Set(placed.filter((p) => !p.inside && p.missing.length).map((p) => p.real))].sort((a, b) => depth(a) - depth(b) || a.localeCompare(b));
  const shadows: string[] = [];
  for (const a of wanted) {
    const covered = shadows.some((s) => within(a, s) && within(s, mountOf(a, i.mountPoints)));
    if (!covered) shadows.push(a);
  }
  const rootMode = shadows[0] === '/';
  const root = `${STAGE_FD}/root`;
  /** A node path as the script reaches it before the pivot (root mode: inside the new root). */
  const at = (p: string) => (rootMode ? join(root, p) : p);
  const needStage = shadows.length > 0;
  const src = (p: string) => (needStage ? join(`${STAGE_FD}/pod`, p.slice(i.podDir.length)) : p);
  if (needStage) {
    ops.push({ op: 'stage', path: i.stage }, { op: 'mkdir', path: `${STAGE_FD}/pod` }, { op: 'rbind', source: i.podDir, target: `${STAGE_FD}/pod` });
  }
  // A bind copy of a tree that holds the stage holds a copy of it: that copy goes.
  const dropStageCopy = (copyOf: string, placedAt: string) => {
    if (within(i.stage, copyOf)) ops.push({ op: 'umount', target: join(placedAt, i.stage.slice(copyOf === '/' ? 0 : copyOf.length)) });
  };
  shadows.forEach((a, n) => {
    if (/[,:\\]/.test(a)) throw new Error(`cannot shadow ${a} for a missing mountPath: overlayfs takes no ',', ':' or '\\' in a path`);
    const dir = `${STAGE_FD}/${n}`;
    const target = a === '/' ? root : at(a);
    const subs = topLevelUnder(a, i.mountPoints).filter((m) => i.fs.kind(m) !== null);
    const inPlace = !rootMode;
    ops.push({ op: 'mkdir', path: `${dir}/u` }, { op: 'mkdir', path: `${dir}/w` });
    if (a === '/') ops.push({ op: 'mkdir', path: root });
    const stashes = subs.map((m, j) => ({ m, stash: `${dir}/s${j}` }));
    if (inPlace) {
      for (const s of stashes) {
        ops.push(i.fs.kind(s.m) === 'dir' ? { op: 'mkdir', path: s.stash } : { op: 'touch', path: s.stash }, { op: 'rbind', source: s.m, target: s.stash });
      }
    }
    ops.push({ op: 'overlay', lower: a, upper: `${dir}/u`, work: `${dir}/w`, target });
    for (const s of stashes) {
      ops.push(inPlace ? { op: 'move', source: s.stash, target: s.m } : { op: 'rbind', source: s.m, target: at(s.m) });
      dropStageCopy(s.m, at(s.m));
    }
  });
  /** Whether a node path lies where an overlay shows a copy of the node's directory. */
  const overlaid = (p: string) => shadows.some((s) => within(p, s) && within(s, mountOf(p, i.mountPoints)));
  // 3. The missing directories (and the files for file mounts) in the overlays, then the volumes, parents first.
  for (const p of placed) {
    const target = join(p.real, ...p.missing);
    if (p.missing.length) {
      const dirPath = p.m.kind === 'dir' ? target : join(p.real, ...p.missing.slice(0, -1));
      if (dirPath !== p.real || p.m.kind === 'dir') ops.push({ op: 'mkdir', path: at(dirPath) });
      if (p.m.kind === 'file') ops.push({ op: 'touch', path: at(target) });
    }
    ops.push({ op: p.m.kind === 'dir' ? 'rbind' : 'bind', source: src(p.m.source), target: at(target) });
  }
  for (const k of i.keep) if (!within(k, i.podDir)) throw new Error(`kept path ${k} is not under the Pod's directory`);
  for (const k of i.keep) if (overlaid(k)) ops.push({ op: 'bind', source: src(k), target: at(k) });
  for (const p of placed) if (p.m.readOnly) ops.push({ op: 'ro', target: at(join(p.real, ...p.missing)) });
  if (rootMode) ops.push({ op: 'pivot', root });
  else if (needStage) ops.push({ op: 'unstage' });
  ops.push({ op: 'cd', path: i.workingDir || '/' });
  return ops;
}

/** The components of `rel` missing in the volume directory `source` (symlinks inside it are the volume's own). */
function resolveInside(fs: FsView, source: string, comps: readonly string[]): string[] {
  let cur = source;
  for (let n = 0; n < comps.length; n++) {
    const next = join(cur, comps[n]!);
    const k = fs.kind(next);
    if (k === null) return comps.slice(n);
    cur = next;
  }
  return [];
}

/**
 * The setup script: $@ is the steps, `--`, then the command it execs. Every step that fails stops it (set -e)
 * with mount(8)'s own message on stderr, which is the container's log.
 */
export const SETUP_SCRIPT = [
  'set -e',
  'while [ "$#" -gt 0 ] && [ "$1" != -- ]; do',
  '  case "$1" in',
  '    stage) mount -t tmpfs -o mode=0700 nodenet-stage "$2"; exec 3< "$2"; shift 2;;',
  '    mkdir) mkdir -p -- "$2"; shift 2;;',
  '    touch) [ -e "$2" ] || : > "$2"; shift 2;;',
  '    bind) mount -c --bind -- "$2" "$3"; shift 3;;',
  '    rbind) mount -c --rbind -- "$2" "$3"; shift 3;;',
  '    move) mount -c --move -- "$2" "$3"; shift 3;;',
  '    overlay) mount -c -t overlay nodenet-overlay -o "lowerdir=$2,upperdir=$3,workdir=$4" -- "$5"; shift 5;;',
  '    ro) mount -c -o remount,bind,ro -- "$2"; shift 2;;',
  '    umount) umount -c -l -- "$2"; shift 2;;',
  '    unstage) umount -c -l /proc/self/fd/3; exec 3<&-; shift;;',
  '    pivot) cd -- "$2"; mkdir .nodenet-oldroot; pivot_root . .nodenet-oldroot; cd /; umount -l /.nodenet-oldroot; rmdir /.nodenet-oldroot; exec 3<&-; shift 2;;',
  '    cd) cd -- "$2"; shift 2;;',
  '    *) echo "nodenet: unknown mount step $1" >&2; exit 127;;',
  '  esac',
  'done',
  'shift',
  'exec "$@"',
].join('\n');

/** The steps as the script's arguments. */
export function renderSteps(ops: readonly MountOp[]): string[] {
  return ops.flatMap((o): string[] => {
    switch (o.op) {
      case 'stage': return ['stage', o.path];
      case 'mkdir': case 'touch': return [o.op, o.path];
      case 'bind': case 'rbind': case 'move': return [o.op, o.source, o.target];
      case 'overlay': return ['overlay', o.lower, o.upper, o.work, o.target];
      case 'ro': case 'umount': return [o.op, o.target];
      case 'unstage': return ['unstage'];
      case 'pivot': return ['pivot', o.root];
      case 'cd': return ['cd', o.path];
    }
  });
}

/** Decodes a path of /proc/PID/mountinfo (octal escapes: \040 for a space). */
function unescapeMountinfo(s: string): string {
  return s.replace(/\\([0-7]{3})/g, (_, o: string) => String.fromCharCode(parseInt(o, 8)));
}

/** The mount points of a /proc/PID/mountinfo text. Pure. */
export function parseMountPoints(mountinfo: string): string[] {
  return mountinfo.split('\n').filter(Boolean).map((l) => unescapeMountinfo(l.split(' ')[4] ?? '')).filter((p) => p.startsWith('/'));
}
