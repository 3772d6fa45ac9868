/**
 * testing/cgroups: what a lab's nodes have under /sys/fs/cgroup, for the
 * root tests that check a lab's teardown leaves none of it (the embedded
 * kubelet's `.../nodenet/<node>-<hash>/pod<uid>/<container>`, pods/cgroups.ts).
 */
import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import { nodeDirName } from '../pods/cgroups.js';
import type { LabNodeAgent } from '../lab/node-cgroups.js';

function subdirs(dir: string): string[] {
  try {
    return readdirSync(dir, { withFileTypes: true }).filter((d) => d.isDirectory()).map((d) => d.name);
  } catch {
    return [];
  }
}

/**
 * Every node directory nodenet has on this machine: `<root>/<hierarchy>/.../nodenet/<child>`, with `nodenet`
 * at most `maxDepth` levels below the hierarchy's mount (v1: under the agents' own cgroups; v2: at its root).
 */
export function nodenetCgroupDirs(root = '/sys/fs/cgroup', maxDepth = 4): string[] {
  const out: string[] = [];
  const walk = (dir: string, depth: number) => {
    for (const d of subdirs(dir)) {
      const p = join(dir, d);
      if (d === 'nodenet') out.push(...subdirs(p).map((c) => join(p, c)));
      else if (depth < maxDepth) walk(p, depth + 1);
    }
  };
  // A v2 mount at the root itself (its children are cgroups), or one per v1 hierarchy (and v2's 'unified').
  walk(root, 0);
  return out.sort();
}

/** The node directories of these lab nodes (named as their agents name them) found on the machine. */
export function labNodeCgroupDirs(nodes: readonly LabNodeAgent[], root = '/sys/fs/cgroup'): string[] {
  const names = new Set(nodes.map((n) => nodeDirName(n.nodeName, n.runDir)));
  return nodenetCgroupDirs(root).filter((d) => names.has(d.slice(d.lastIndexOf('/') + 1)));
}

/** The Pod cgroups (pod<uid>) in those directories. */
export function labPodCgroupDirs(nodes: readonly LabNodeAgent[], root = '/sys/fs/cgroup'): string[] {
  return labNodeCgroupDirs(nodes, root).flatMap((d) => subdirs(d).filter((c) => c.startsWith('pod')).map((c) => join(d, c)));
}
