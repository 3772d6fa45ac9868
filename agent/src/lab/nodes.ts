/**
 * lab/nodes: the nodes of a lab, read back from its run directory (each
 * VNode writes `<runRoot>/<node>/agent.json`, its agent's config), for the
 * commands that look into a lab from outside (`nodenet trace --lab`).
 */
import { readdirSync } from 'node:fs';
import { readJsonFile } from '../../../lib/state/read.js';
import { readOwner } from './owner.js';
import { labRoot } from './plan.js';

export interface LabNodeInfo {
  readonly name: string;
  /** The node's network namespace, a path. */
  readonly netns: string;
  readonly runDir: string;
  readonly clusterCIDR: string | null;
}

/** The run directory of the lab named `name` under `root` (labs are named by their tag). */
export function labDir(name: string, root = labRoot()): string {
  return `${root}/${name}`;
}

/** A lab's nodes, in name order. @throws Error when there is no lab there. */
export function labNodes(runRoot: string): LabNodeInfo[] {
  const owner = readOwner(runRoot);
  if (!owner) throw new Error(`no lab at ${runRoot} (no owner.json)`);
  const out: LabNodeInfo[] = [];
  let entries: string[];
  try {
    entries = readdirSync(runRoot);
  } catch {
    entries = [];
  }
  for (const d of entries.sort()) {
    let cfg: { nodeName: string; runDir: string; clusterCIDR: string | null };
    try {
      cfg = readJsonFile(`${runRoot}/${d}/agent.json`, (r) => ({ nodeName: r.string('nodeName'), runDir: r.string('runDir'), clusterCIDR: r.optString('clusterCIDR') ?? null }));
    } catch {
      continue;
    }
    out.push({ name: cfg.nodeName, netns: `/var/run/netns/${owner.namespacePrefix}${d}`, runDir: cfg.runDir, clusterCIDR: cfg.clusterCIDR });
  }
  return out;
}
