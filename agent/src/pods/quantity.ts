/**
 * pods/quantity: resource quantities as the kubelet's downward API reads
 * them (pure). A quantity ("500m", "1Gi", "2", "1e3") is parsed exactly, in
 * nano-units, as resource.ParseQuantity reads it (a finer value rounds up);
 * a resourceFieldRef's value is ceil(quantity / divisor), in milli-units
 * for CPU and in units for memory and ephemeral storage
 * (convertResourceCPUToString, convertResourceMemoryToString). A limit the
 * container does not set is the node's allocatable amount, as the kubelet
 * defaults it for the downward API (MergeContainerResourceLimits); a limit
 * the container sets (cpu and memory, enforced with cgroups) reads as set.
 */

// The one quantity parser (resource.ParseQuantity, in nano-units, a finer value rounded up): the API server's.
import { quantityNanos } from '../../../controlplane/kinds/common.js';

export { quantityNanos };

const ceilDiv = (a: bigint, b: bigint): bigint => (a >= 0n ? (a + b - 1n) / b : a / b);

/** The resources a resourceFieldRef may name (the kubelet's list, hugepages aside: nodenet has none). */
export const RESOURCE_FIELDS = ['limits.cpu', 'limits.memory', 'limits.ephemeral-storage', 'requests.cpu', 'requests.memory', 'requests.ephemeral-storage'] as const;
export type ResourceField = (typeof RESOURCE_FIELDS)[number];

export function isResourceField(s: string): s is ResourceField {
  return (RESOURCE_FIELDS as readonly string[]).includes(s);
}

/** The node's allocatable resources, as quantities (the Node's status.allocatable). */
export interface NodeAllocatable {
  readonly cpu: string;
  readonly memory: string;
  readonly 'ephemeral-storage': string;
}

/**
 * The value a resourceFieldRef reads for a container whose spec.resources is `resources`: the request
 * (0 when unset) or the limit (the node's allocatable amount when unset), divided by `divisor`
 * (default 1) and rounded up. @throws Error on a divisor that is no positive quantity
 */
export function resourceFieldValue(field: ResourceField, resources: { readonly requests?: Readonly<Record<string, unknown>>; readonly limits?: Readonly<Record<string, unknown>> }, divisor: unknown, node: NodeAllocatable): string {
  const [kind, name] = field.split('.') as ['limits' | 'requests', 'cpu' | 'memory' | 'ephemeral-storage'];
  const set = kind === 'limits' ? resources.limits : resources.requests;
  let q = quantityNanos(set?.[name]);
  if (q === null) q = kind === 'limits' ? (quantityNanos(node[name]) ?? 0n) : 0n;
  const d = divisor === undefined || divisor === null || divisor === '' || quantityNanos(divisor) === 0n ? 1_000_000_000n : quantityNanos(divisor);
  if (d === null || d <= 0n) throw new Error(`invalid divisor ${JSON.stringify(divisor)}`);
  // CPU in milli-units (MilliValue, rounded up), the others in units (Value, rounded up).
  const unit = name === 'cpu' ? 1_000_000n : 1_000_000_000n;
  return String(ceilDiv(ceilDiv(q, unit), ceilDiv(d, unit) || 1n));
}
