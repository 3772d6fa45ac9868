/**
 * lab/leftovers: removes what a crashed lab, test or demo left, and only
 * that. `npm test` and `npm start` run it first (scripts/cleanup.mjs calls
 * `nodenet lab cleanup`).
 *
 * What counts as a leftover:
 * - a lab directory (under the lab root, or the legacy /run/nodenet-test)
 *   whose owner.json is missing or names a process that is gone (pid and
 *   start time), with every namespace named nn-<tag>-*;
 * - a namespace named nn-* that no live lab claims and that does not carry
 *   the pid of a live process (root tests name theirs nn-<word>-<pid>...).
 * A live owner's lab (a concurrent `npm test`, a user's `demo --keep`) and a
 * live test's scratch namespace are never touched. The plan is pure and
 * tested; applying it kills the processes a lab recorded (processes.json:
 * `nodenet lab up`'s loopback relay runs outside the lab's namespaces), the
 * processes inside the namespaces (they survive `ip netns del`) and the
 * pause holders recorded in the lab's run directories, removes its nodes'
 * Pod cgroups (lab/node-cgroups.ts: the killed agents never did), unmounts
 * what is mounted under them, then deletes.
 */
import { existsSync, readdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import type { Runner } from '../exec/runner.js';
import { listSandboxes, stopSandbox, unrecordedHolders } from '../netns/pause-holder.js';
import { isAlive } from '../netns/proc.js';
import { readNodeAgent, removeLabNodeCgroups } from './node-cgroups.js';
import { killRecorded, ownerAlive, readOwner, type LabOwner } from './owner.js';

export const NS_PREFIX = 'nn-';
export const LEGACY_LAB_ROOT = '/run/nodenet-test';

export interface LabDirState {
  readonly dir: string;
  readonly tag: string;
  readonly owner: LabOwner | null;
}

export interface LeftoverWorld {
  /** Every named network namespace. */
  readonly namespaces: readonly string[];
  readonly labs: readonly LabDirState[];
  readonly ownerAlive: (o: LabOwner) => boolean;
  readonly pidAlive: (pid: number) => boolean;
}

export interface LeftoverPlan {
  readonly labDirs: readonly string[];
  readonly namespaces: readonly string[];
}

const PID_NAMED = /^nn-[a-z]+-(\d+)(?:-|$)/;

/** What to remove. Pure. */
export function planLeftovers(w: LeftoverWorld): LeftoverPlan {
  const live = w.labs.filter((l) => l.owner !== null && w.ownerAlive(l.owner));
  const dead = w.labs.filter((l) => !live.includes(l));
  const claimed = (ns: string) => live.some((l) => ns.startsWith(`${NS_PREFIX}${l.tag}-`));
  const namespaces = w.namespaces.filter((ns) => {
    if (!ns.startsWith(NS_PREFIX) || claimed(ns)) return false;
    const m = PID_NAMED.exec(ns);
    const pid = m ? Number(m[1]) : 0;
    return !(pid > 1 && w.pidAlive(pid)); // pid 1 is always alive and owns no test
  });
  return { labDirs: dead.map((l) => l.dir), namespaces };
}

function subdirs(root: string): string[] {
  try {
    return readdirSync(root, { withFileTypes: true }).filter((d) => d.isDirectory()).map((d) => d.name);
  } catch {
    return [];
  }
}

/** The world as it is: namespaces, and the labs under `roots`. */
export async function readWorld(runner: Runner, roots: readonly string[]): Promise<LeftoverWorld> {
  const out = await runner.run(['ip', 'netns', 'list'], { allowFailure: true });
  const namespaces = out.stdout.split('\n').map((l) => l.split(' ')[0] ?? '').filter(Boolean);
  const labs: LabDirState[] = [];
  for (const root of roots) for (const tag of subdirs(root)) labs.push({ dir: join(root, tag), tag, owner: readOwner(join(root, tag)) });
  return { namespaces, labs, ownerAlive, pidAlive: (pid) => isAlive(pid) };
}

/**
 * Removes what the plan names; returns a line per thing removed, and one per thing that could not be
 * ('left behind: ...'; the rest goes on regardless).
 */
export async function applyLeftovers(runner: Runner, plan: LeftoverPlan): Promise<string[]> {
  const done: string[] = [];
  for (const dir of plan.labDirs) for (const p of killRecorded(dir)) done.push(`process ${p.pid} (${p.role})`);
  for (const ns of plan.namespaces) {
    const pids = (await runner.run(['ip', 'netns', 'pids', ns], { allowFailure: true })).stdout.split('\n').filter(Boolean);
    for (const pid of pids) {
      try {
        process.kill(Number(pid), 'SIGKILL');
      } catch {
        /* gone */
      }
    }
    await runner.run(['ip', 'netns', 'del', ns], { allowFailure: true });
    done.push(`namespace ${ns}`);
  }
  for (const dir of plan.labDirs) {
    // Pod sandboxes live in their own namespaces (not named nn-*): stop their holders by record.
    for (const node of subdirs(dir)) {
      const runDir = join(dir, node, 'run');
      if (existsSync(join(runDir, 'sandboxes'))) {
        for (const sb of listSandboxes(runDir)) await stopSandbox(runDir, sb.name, { graceMs: 0 }).catch(() => undefined);
        for (const pid of unrecordedHolders(runDir)) { try { process.kill(pid, 'SIGKILL'); } catch { /* gone */ } }
      }
      // Its Pods' processes are dead now: their cgroups go, found as the node's agent named them (agent.json).
      const agent = readNodeAgent(join(dir, node));
      if (!agent) continue;
      const cg = await removeLabNodeCgroups(agent);
      if (cg.removed.length) done.push(`cgroups of node ${agent.nodeName} (${cg.removed.length} director${cg.removed.length === 1 ? 'y' : 'ies'})`);
      if (cg.problem) done.push(`left behind: ${cg.problem}`);
    }
    const mounts = (await runner.run(['findmnt', '-rn', '-o', 'TARGET'], { allowFailure: true })).stdout.split('\n').filter((m) => m === dir || m.startsWith(`${dir}/`));
    for (const m of mounts.reverse()) await runner.run(['umount', '-l', m], { allowFailure: true });
    rmSync(dir, { recursive: true, force: true });
    done.push(`lab directory ${dir}`);
  }
  return done;
}
