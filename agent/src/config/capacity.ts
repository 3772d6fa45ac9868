/**
 * config/capacity: what a Node reports it has (status.capacity) and what Pods may use of it (status.allocatable),
 * as the kubelet computes them (pkg/kubelet/cm: GetNodeAllocatableReservation):
 *
 *   capacity     cpu (the machine's CPUs), memory, ephemeral-storage (the filesystem of the kubelet's root
 *                directory), pods (--max-pods, 110), each replaced by `--capacity name=quantity,...` when given
 *                (lab nodes share one machine: each is given its share);
 *   allocatable  capacity − --kube-reserved − --system-reserved − the hard eviction thresholds (the kubelet's
 *                defaults: memory.available 100Mi, nodefs.available 10%), never below 0.
 *
 * Pure but for `machineCapacity`, which reads the machine.
 */
import { cpus, totalmem } from 'node:os';
import { existsSync, statfsSync } from 'node:fs';
import { dirname } from 'node:path';
import { ErrorCode, NodenetError } from '../../../lib/errors/errors.js';
import { formatQuantity, parseQuantityFormat } from '../../../controlplane/kinds/common.js';

export type ResourceMap = Readonly<Record<string, string>>;

/** The kubelet's --max-pods default. */
export const DEFAULT_MAX_PODS = 110;
/** The kubelet's default hard eviction thresholds that lower allocatable. */
export const DEFAULT_EVICTION_HARD = { memory: '100Mi', nodefsPercent: 10 } as const;

const NAMES = ['cpu', 'memory', 'ephemeral-storage', 'pods'];

/** The machine's capacity: CPUs, memory, the filesystem holding `rootDir`, and --max-pods. */
export function machineCapacity(rootDir: string, maxPods = DEFAULT_MAX_PODS): Record<string, string> {
  // The directory may not exist yet: its nearest existing ancestor is on the same filesystem.
  let dir = rootDir;
  while (!existsSync(dir) && dirname(dir) !== dir) dir = dirname(dir);
  const fs = statfsSync(dir);
  return {
    cpu: String(cpus().length),
    memory: `${Math.floor(totalmem() / 1024)}Ki`,
    'ephemeral-storage': `${Math.floor((fs.blocks * fs.bsize) / 1024)}Ki`,
    pods: String(maxPods),
  };
}

/**
 * Parses `name=quantity,...` (the kubelet's --kube-reserved / --system-reserved form, and nodenet's --capacity).
 * @throws InvalidConfig naming the flag and the bad entry
 */
export function parseResourceMap(flag: string, text: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const part of text.split(',').map((s) => s.trim()).filter(Boolean)) {
    const eq = part.indexOf('=');
    const name = eq < 0 ? part : part.slice(0, eq);
    const value = eq < 0 ? '' : part.slice(eq + 1);
    if (!NAMES.includes(name) && !name.includes('/')) throw new NodenetError(ErrorCode.InvalidConfig, `${flag}: ${JSON.stringify(name)} is not a resource nodenet reports (${NAMES.join(', ')}, or an extended resource domain/name)`);
    const q = parseQuantityFormat(value);
    if (!q || q.nanos < 0n) throw new NodenetError(ErrorCode.InvalidConfig, `${flag}: ${name}=${JSON.stringify(value)} is not a non-negative quantity`);
    if (name in out) throw new NodenetError(ErrorCode.InvalidConfig, `${flag}: ${name} given twice`);
    out[name] = value;
  }
  return out;
}

const fmt = (name: string, nanos: bigint) => formatQuantity(nanos, name === 'memory' || name === 'ephemeral-storage' ? 'bin' : 'dec');

/** Capacity and allocatable, as the kubelet reports them. */
export function nodeResources(machine: ResourceMap, o: { capacity?: ResourceMap; kubeReserved?: ResourceMap; systemReserved?: ResourceMap } = {}): { capacity: Record<string, string>; allocatable: Record<string, string> } {
  const capacity: Record<string, string> = { ...machine, ...(o.capacity ?? {}) };
  const allocatable: Record<string, string> = {};
  for (const [name, value] of Object.entries(capacity)) {
    const cap = parseQuantityFormat(value)!.nanos;
    let reserved = 0n;
    for (const r of [o.kubeReserved, o.systemReserved]) if (r?.[name] !== undefined) reserved += parseQuantityFormat(r[name])!.nanos;
    if (name === 'memory') reserved += parseQuantityFormat(DEFAULT_EVICTION_HARD.memory)!.nanos;
    if (name === 'ephemeral-storage') reserved += (cap * BigInt(DEFAULT_EVICTION_HARD.nodefsPercent)) / 100n;
    const left = cap - reserved;
    capacity[name] = fmt(name, cap);
    allocatable[name] = fmt(name, left > 0n ? left : 0n);
  }
  return { capacity, allocatable };
}
