/**
 * json/loose: reading parts of an object decoded from JSON without a schema
 * (a Kubernetes object as the control plane and the kubelet handle it):
 * each returns the value when it has the expected type and an empty one
 * otherwise, never throws. Validation is the strategies' job; these are for
 * code that reads what validation already admitted. Pure.
 */

export type O = Record<string, unknown>;

/** v when it is a plain object (not an array, not null). */
export const obj = (v: unknown): O | undefined => (v && typeof v === 'object' && !Array.isArray(v) ? (v as O) : undefined);

/** v when it is an array, else []. */
export const arr = (v: unknown): unknown[] => (Array.isArray(v) ? v : []);

/** v when it is a string, else ''. */
export const str = (v: unknown): string => (typeof v === 'string' ? v : '');

/** The plain objects of an array (others dropped). */
export const objs = (v: unknown): O[] => arr(v).map(obj).filter((x): x is O => x !== undefined);
