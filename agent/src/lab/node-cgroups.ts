/**
 * lab/node-cgroups: a lab node's Pod cgroups, removed with the lab.
 *
 * Every lab teardown (Lab.destroy, `nodenet lab down`, the leftover sweep of
 * lab/leftovers.ts) SIGKILLs the node's agent: its kubelet never stops the
 * Pods, so their cgroups (`.../nodenet/<node>-<hash>/pod<uid>/<container>`,
 * pods/cgroups.ts) would stay under /sys/fs/cgroup once the pause holders and
 * apps are killed. The teardown calls removeLabNodeCgroups after the node's
 * processes are gone and before its run directory is deleted: the agent's
 * record there (`<runDir>/cgroups.json`) says where they are, wherever the
 * agent ran. The node is named as its agent was started (`<node
 * dir>/agent.json`: the node name and the run directory, whose hash names its
 * cgroup directory). What is left is returned as a line, never thrown: the
 * rest of the teardown goes on.
 */
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { readJsonFile } from '../../../lib/state/read.js';
import { CGROUPS_RECORD, removeNodeCgroups } from '../pods/cgroups.js';

/** What a lab node's agent was started with (its agent.json). */
export interface LabNodeAgent {
  readonly nodeName: string;
  readonly runDir: string;
}

/** The node name and run directory in `<nodeDir>/agent.json`; null when there is none (not a node, or no agent ever started there). */
export function readNodeAgent(nodeDir: string): LabNodeAgent | null {
  try {
    return readJsonFile(join(nodeDir, 'agent.json'), (r) => ({ nodeName: r.string('nodeName'), runDir: r.string('runDir') }));
  } catch {
    return null;
  }
}

export interface NodeCgroupsRemoval {
  /** The node's recorded cgroup directories (one per hierarchy) that are gone now. */
  readonly removed: readonly string[];
  /** What is left and why (a line for the teardown's report); null when nothing is. */
  readonly problem: string | null;
}

/** The node directories the record in `runDir` names ([] without a readable one). */
function recorded(runDir: string): string[] {
  try {
    return readJsonFile(join(runDir, CGROUPS_RECORD), (r) => r.stringArray('nodeDirs'));
  } catch {
    return [];
  }
}

const errText = (e: unknown) => (e instanceof Error ? e.message : String(e));

/**
 * Removes the node's Pod cgroups and its cgroup directories (removeNodeCgroups: leftover processes there killed,
 * the record deleted). Call it once the node's agent and pause holders are killed. Never throws: what is left
 * (a directory still there, or removal failing) is in `problem`.
 */
export async function removeLabNodeCgroups(node: LabNodeAgent, remove: (nodeName: string, runDir: string) => Promise<void> = removeNodeCgroups): Promise<NodeCgroupsRemoval> {
  const before = recorded(node.runDir);
  try {
    await remove(node.nodeName, node.runDir);
  } catch (e) {
    return { removed: before.filter((d) => !existsSync(d)), problem: `cgroups of node ${node.nodeName} not removed: ${errText(e)}` };
  }
  // The record keeps the directories that could not go (a process that survived SIGKILL, a cgroupfs refusing).
  const left = recorded(node.runDir).filter((d) => existsSync(d));
  return { removed: before.filter((d) => !existsSync(d)), problem: left.length ? `cgroups of node ${node.nodeName} left: ${left.join(', ')}` : null };
}
