/**
 * What lab-cli.priv.test.ts and lab-cli-ha.priv.test.ts share: the real CLI and kubectl, and what a removed lab
 * must not leave behind.
 */
import type { Test } from 'tap';
import { existsSync, readdirSync } from 'node:fs';
import { connect } from 'node:net';
import { REPO } from '../agent/src/lab/lab.js';
import { readNodeAgent, type LabNodeAgent } from '../agent/src/lab/node-cgroups.js';
import type { LabProcess } from '../agent/src/lab/owner.js';
import { labRoot } from '../agent/src/lab/plan.js';
import { isAlive } from '../agent/src/netns/proc.js';
import { labNodeCgroupDirs } from '../agent/src/testing/cgroups.js';
import { runner } from '../agent/src/testing/lab.js';

export const dirOf = (name: string) => `${labRoot()}/${name}`;

export const nodenet = (...args: string[]) => runner.run([process.execPath, `${REPO}bin/nodenet.js`, ...args], { allowFailure: true, timeoutMs: 240_000 });
export const kubectl = (kubeconfig: string, ...args: string[]) => runner.run(['kubectl', '--kubeconfig', kubeconfig, ...args], { allowFailure: true, timeoutMs: 60_000 });

export async function namespacesOf(name: string): Promise<string[]> {
  return (await runner.run(['ip', 'netns', 'list'])).stdout.split('\n').map((l) => l.split(' ')[0] ?? '').filter((n) => n.startsWith(`nn-${name}-`));
}

export function portOpen(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const c = connect(port, '127.0.0.1');
    c.once('connect', () => { c.destroy(); resolve(true); });
    c.once('error', () => resolve(false));
  });
}

export async function readyNodes(kubeconfig: string): Promise<string[]> {
  const r = await kubectl(kubeconfig, 'get', 'nodes', '-o', 'jsonpath={range .items[*]}{.metadata.name}={.status.conditions[?(@.type=="Ready")].status}{"\\n"}{end}');
  return r.stdout.split('\n').filter((l) => l.endsWith('=True')).map((l) => l.split('=')[0]!).sort();
}

/** The lab's nodes as their agents were started (read before `down` removes the run directory). */
export function nodeAgents(name: string): LabNodeAgent[] {
  let dirs: string[] = [];
  try { dirs = readdirSync(dirOf(name)); } catch { /* no lab */ }
  return dirs.map((d) => readNodeAgent(`${dirOf(name)}/${d}`)).filter((a): a is LabNodeAgent => a !== null);
}

/** What a removed lab must not leave, checked against what it had recorded (its processes, its nodes). */
export async function assertGone(t: Test, name: string, recorded: readonly LabProcess[], port: number, nodes: readonly LabNodeAgent[]): Promise<void> {
  t.same(labNodeCgroupDirs(nodes), [], `no cgroup of the nodes ${nodes.map((n) => n.nodeName).join(', ')} under /sys/fs/cgroup/*/**/nodenet/`);
  t.same(await namespacesOf(name), [], `no namespace nn-${name}-*`);
  t.equal(existsSync(dirOf(name)), false, 'no run directory');
  t.same(recorded.filter((p) => isAlive(p.pid, p.startTime)).map((p) => p.role), [], 'no recorded process runs');
  t.equal(await portOpen(port), false, `nothing listens on 127.0.0.1:${port}`);
  const mounts = (await runner.run(['findmnt', '-rn', '-o', 'TARGET'])).stdout.split('\n').filter((m) => m.startsWith(`${dirOf(name)}/`));
  t.same(mounts, [], 'no mount under the run directory');
}

