/**
 * controlplane/store/types: what the embedded API server stores.
 *
 * An object lives under a key `<group-resource>/<namespace>/<name>` (the
 * namespace empty for cluster-scoped kinds; a group-resource is `services`
 * or `deployments.apps` and never holds a `/`, so the key splits one way).
 * Every write takes the next revision of one global, monotonic sequence:
 * that revision is the object's `metadata.resourceVersion` and the event's
 * position in the history watchers replay.
 */

/** A Kubernetes object as JSON: the store reads only `metadata.resourceVersion`, which it sets. */
export interface KObject {
  apiVersion?: string;
  kind?: string;
  metadata?: Record<string, unknown>;
  [k: string]: unknown;
}

/** One stored object: immutable once stored (callers copy before they change anything). */
export interface Stored {
  readonly key: string;
  /** The revision of the write that made this version (its resourceVersion). */
  readonly rev: number;
  /** The revision that created the object (it survives updates). */
  readonly createRev: number;
  readonly object: Readonly<KObject>;
  /** `object` serialised, as it goes on the wire. */
  readonly json: string;
  /**
   * Read with a provider other than the first of its encryption rule (an older key, or plaintext since encryption
   * was turned on): an update writes it again even when nothing changed, as upstream's transformer marks it stale.
   */
  readonly stale?: boolean;
}

export type EventType = 'ADDED' | 'MODIFIED' | 'DELETED';

/**
 * One committed change. For DELETED, `cur` is the object as it was last,
 * with the deletion's revision as its resourceVersion (what a watcher
 * receives, as from kube-apiserver); `prev` is that last version unchanged.
 */
export interface StoreEvent {
  readonly type: EventType;
  readonly rev: number;
  readonly key: string;
  readonly cur: Stored;
  readonly prev: Stored | null;
}

/** The order of keys: every list the storage and the cache hand out is sorted by it. */
export const byKey = (a: { readonly key: string }, b: { readonly key: string }): number => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0);

/** The group-resource part of a key string. */
export function grOf(key: string): string {
  return key.slice(0, key.indexOf('/'));
}

/** The namespace part of a key string ('' for cluster-scoped). */
export function namespaceOf(key: string): string {
  const a = key.indexOf('/');
  return key.slice(a + 1, key.indexOf('/', a + 1));
}
