/**
 * lab/up-plan: the pure decisions behind `nodenet lab up|down|status|exec`
 * (lab/up.ts does the work).
 *
 * Naming: a lab made by `lab up --name NAME` is tagged NAME: its run
 * directory is <labRoot>/NAME, its namespaces nn-NAME-ul and nn-NAME-n<i>,
 * its underlay ports u<NAME><i> (at most 15 characters: NAME has at most
 * 10, i at most 2 digits). Two labs of different names share nothing but
 * the address plan (each has its own underlay namespace) and differ in
 * their loopback port.
 *
 * Ownership: the CLI that runs `lab up` exits, so the lab's owner (owner.json,
 * lab/owner.ts) becomes its control-plane process (pid and start time) once
 * that runs. While the owner lives the lab is running (a dead agent makes it
 * degraded, not gone: `lab status` shows it); when it is dead the lab has
 * crashed, and the next `lab up` of that name, `lab down` and `lab cleanup`
 * remove what it left. A lab directory without an owner record is a crash
 * too (lab/leftovers.ts says the same).
 */
import type { LabOwner } from './owner.js';
import { obj as looseObj } from '../../../lib/json/loose.js';

export const LAB_NAME_RE = /^[a-z][a-z0-9]{0,9}$/;
export const MAX_LAB_NODES = 20;

/** The proxy modes a lab (and the demo) runs its agents in; ipvs needs a kernel with IPVS (netfilter/ipvs-probe.ts). */
export const LAB_PROXY_MODES = ['iptables', 'nftables', 'ipvs'] as const;
export type LabProxyMode = (typeof LAB_PROXY_MODES)[number];

/** @returns the problem with a --proxy-mode value, or null when it is one of LAB_PROXY_MODES. */
export function proxyModeProblem(mode: string): string | null {
  if ((LAB_PROXY_MODES as readonly string[]).includes(mode)) return null;
  return `--proxy-mode must be iptables, nftables or ipvs, got ${JSON.stringify(mode)}`;
}

/** @returns the problem with a lab name, or null when it is fine. */
export function labNameProblem(name: string): string | null {
  if (LAB_NAME_RE.test(name)) return null;
  return `lab name ${JSON.stringify(name)}: a lowercase letter, then at most 9 lowercase letters or digits (it goes into namespace and interface names)`;
}

/** The node names of a lab of `n` nodes: n1..nN. */
export function labNodeNames(n: number): string[] {
  if (!Number.isInteger(n) || n < 1 || n > MAX_LAB_NODES) throw new RangeError(`nodes must be 1..${MAX_LAB_NODES}, got ${n}`);
  return Array.from({ length: n }, (_, i) => `n${i + 1}`);
}

/**
 * The node `lab add-node` adds to a lab whose nodes are `existing`: `wanted`, or the first n<i> not in the lab.
 * Only n1..n<MAX_LAB_NODES>: the control plane made a token for each of those at `up` (a running control plane
 * makes none), and n<i> is the lab's i-th underlay address and port (its index).
 * @returns the name and its index, or the problem
 */
export function addNodeName(existing: readonly string[], wanted?: string): { name: string; index: number } | { problem: string } {
  if (existing.length >= MAX_LAB_NODES) return { problem: `the lab has ${existing.length} nodes, the most a lab has` };
  if (wanted === undefined) {
    const index = Array.from({ length: MAX_LAB_NODES }, (_, i) => i + 1).find((i) => !existing.includes(`n${i}`))!;
    return { name: `n${index}`, index };
  }
  const m = /^n([1-9]\d?)$/.exec(wanted);
  const index = m ? Number(m[1]) : 0;
  if (index < 1 || index > MAX_LAB_NODES) return { problem: `node ${JSON.stringify(wanted)}: a lab's nodes are n1..n${MAX_LAB_NODES}` };
  if (existing.includes(wanted)) return { problem: `the lab has a node ${wanted} already (${existing.join(', ')})` };
  return { name: wanted, index };
}

export type LabCondition =
  | { readonly state: 'absent' }
  | { readonly state: 'running'; readonly owner: LabOwner }
  | { readonly state: 'crashed'; readonly why: string };

/** What a lab directory's owner record says about the lab. */
export function labCondition(dirExists: boolean, owner: LabOwner | null, ownerAlive: (o: LabOwner) => boolean): LabCondition {
  if (!dirExists) return { state: 'absent' };
  if (!owner) return { state: 'crashed', why: 'it has no owner record' };
  if (ownerAlive(owner)) return { state: 'running', owner };
  return { state: 'crashed', why: `its owner (pid ${owner.pid}) is gone` };
}

/** What `lab up` does about what is there: build it, clean a crashed one first, or refuse. */
export function upAction(c: LabCondition): 'create' | 'clean-then-create' | 'refuse' {
  return c.state === 'absent' ? 'create' : c.state === 'crashed' ? 'clean-then-create' : 'refuse';
}

/** The namespaces of a lab, out of every named namespace. */
export function labNamespaces(all: readonly string[], name: string): string[] {
  return all.filter((ns) => ns.startsWith(`nn-${name}-`));
}

/** `lab exec` targets: a node of the lab, or a pod as ns/name (name alone: namespace default). */
export type ExecTarget = { readonly kind: 'node'; readonly node: string } | { readonly kind: 'pod'; readonly namespace: string; readonly name: string };

export function execTarget(word: string, nodes: readonly string[]): ExecTarget {
  if (nodes.includes(word)) return { kind: 'node', node: word };
  const parts = word.split('/');
  if (parts.length === 2 && parts[0] && parts[1]) return { kind: 'pod', namespace: parts[0], name: parts[1] };
  if (parts.length === 1 && word) return { kind: 'pod', namespace: 'default', name: word };
  throw new RangeError(`${JSON.stringify(word)}: expected a node (${nodes.join(', ')}) or a pod (NAMESPACE/NAME or NAME)`);
}

/** A Node as `lab status` shows it. */
export interface NodeRow {
  readonly name: string;
  readonly internalIP: string;
  readonly podCIDR: string;
  readonly ready: string;
}

/** A Pod as `lab status` shows it. */
export interface PodRow {
  readonly pod: string;
  readonly node: string;
  readonly ip: string;
  readonly phase: string;
}

type Obj = Record<string, unknown>;
const obj = (v: unknown): Obj => looseObj(v) ?? {};
const arr = (v: unknown): unknown[] => (Array.isArray(v) ? v : []);
const str = (v: unknown, dflt = ''): string => (typeof v === 'string' ? v : dflt);

/** The Nodes of a `kubectl get nodes -o json` list. */
export function nodeRows(list: unknown): NodeRow[] {
  return arr(obj(list)['items']).map((it) => {
    const o = obj(it);
    const status = obj(o['status']);
    const ip = arr(status['addresses']).map(obj).find((a) => a['type'] === 'InternalIP');
    const ready = arr(status['conditions']).map(obj).find((c) => c['type'] === 'Ready');
    return {
      name: str(obj(o['metadata'])['name']),
      internalIP: str(ip?.['address'], '-'),
      podCIDR: str(obj(o['spec'])['podCIDR'], '-'),
      ready: ready ? (ready['status'] === 'True' ? 'Ready' : 'NotReady') : 'Unknown',
    };
  });
}

/** The Pods of a `kubectl get pods -A -o json` list. */
export function podRows(list: unknown): PodRow[] {
  return arr(obj(list)['items']).map((it) => {
    const o = obj(it);
    const md = obj(o['metadata']);
    const status = obj(o['status']);
    return {
      pod: `${str(md['namespace'], 'default')}/${str(md['name'])}`,
      node: str(obj(o['spec'])['nodeName'], '-') || '-',
      ip: str(status['podIP'], '-') || '-',
      phase: md['deletionTimestamp'] ? 'Terminating' : str(status['phase'], 'Pending'),
    };
  });
}

/** Whether `want` nodes are listed and every one is Ready. */
export function allReady(rows: readonly NodeRow[], want: number): boolean {
  return rows.length === want && rows.every((r) => r.ready === 'Ready');
}
