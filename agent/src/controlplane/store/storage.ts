/**
 * controlplane/store/storage: the interface between the API server and the
 * database that holds the cluster (kube-apiserver's
 * `k8s.io/apiserver/pkg/storage/interfaces.go`, in small).
 *
 * A backend owns revisions: each write takes the next revision of one
 * global, monotonic sequence, which is the object's resourceVersion.
 * Everything is asynchronous, as over a network (etcd): a backend may
 * acknowledge a write before its watchers hear of it, and a caller that
 * must see its own writes asks for the current revision and waits for it
 * (watch-cache.ts does). Three parts use this interface and nothing below
 * it: the watch cache (list, watch), the REST layer's writes (create,
 * guaranteedUpdate, delete) and the compactor.
 *
 * Backends: `LocalStorage` (local-storage.ts) over SQLite, the embedded
 * default; `MemoryStorage` (memory-storage.ts), an in-memory fake that
 * delivers watch events late, as etcd may; etcd next (issue 26). The
 * contract every backend keeps is one test suite (storage.contract.ts).
 *
 * Keys are `<group-resource>/<namespace>/<name>` (types.ts); a prefix
 * selects a group-resource (`pods/`) or one namespace of it (`pods/ns/`).
 */
import { ErrorCode, NodenetError } from '../../errors/errors.js';
import type { KObject, Stored, StoreEvent } from './types.js';

export interface ListOptions {
  /** The revision to list at (default: the current one). @throws Expired when it is compacted */
  readonly rev?: number;
  /** Only keys after this one (a page's continue point). */
  readonly after?: string;
  /** At most this many items (default: all). */
  readonly limit?: number;
}

export interface ListResult {
  /** Sorted by key. */
  readonly items: readonly Stored[];
  /** The revision the list is consistent at. */
  readonly rev: number;
  /** More keys follow the last item (the limit cut the list). */
  readonly more: boolean;
}

export interface StorageWatchOptions {
  /** Keys with this prefix ('' for all). */
  readonly prefix: string;
  /** Events with a revision above this one: first the history, then live ones. */
  readonly afterRev: number;
  /** Each event once, in revision order, with the version it replaced. A throw stops the watch. */
  readonly onEvent: (ev: StoreEvent) => void;
  /**
   * The watch ended and no event follows: Expired (410) when afterRev is below the compacted revision, Store when
   * the backend failed. May be called before watch() returns.
   */
  readonly onError: (err: NodenetError) => void;
}

export interface StorageWatch {
  /** Every event of the watch up to this revision has been delivered (a bookmark may carry it). */
  readonly progressRev: number;
  stop(): void;
}

export interface Storage {
  /** The backend's name for logs and metrics: `sqlite`, `memory`, `etcd`. */
  readonly kind: string;
  /** An acknowledged write survives a crash of this process (and, for SQLite, of the machine). */
  readonly durable: boolean;
  /** Stores obj under key if the key holds nothing. @throws AlreadyExists */
  create(key: string, obj: KObject): Promise<Stored>;
  /**
   * Replaces the object under key if its revision is expectRev (a compare-and-swap).
   * @throws NotFound; a ConflictError carrying the current version when the revision differs
   */
  update(key: string, obj: KObject, expectRev: number): Promise<Stored>;
  /**
   * Deletes the object under key (if its revision is expectRev, when given). Resolves to the object as deleted:
   * its resourceVersion is the deletion's revision.
   * @throws NotFound; ConflictError as update
   */
  delete(key: string, expectRev?: number): Promise<Stored>;
  /** The object under key now (read after every acknowledged write), or at revision rev. @throws Expired */
  get(key: string, opts?: { readonly rev?: number }): Promise<Stored | undefined>;
  /** The objects under a prefix, sorted by key, at one revision; paged by `after` and `limit`. */
  list(prefix: string, opts?: ListOptions): Promise<ListResult>;
  /** @throws Store when the backend is closed */
  watch(opts: StorageWatchOptions): StorageWatch;
  /** The revision of the last acknowledged write, read as a write would be (etcd: a quorum read). */
  currentRev(): Promise<number>;
  /** History at or below this revision is gone. */
  compactedRev(): Promise<number>;
  /** Drops the history at and below rev (at most the current revision). */
  compact(rev: number): Promise<void>;
  /** Finishes what was acknowledged and releases the database. Watches get nothing more. */
  close(): Promise<void>;
}

/** A compare-and-swap failed: `current` is the object as it is now (undefined: deleted meanwhile), for the retry. */
export class ConflictError extends NodenetError {
  constructor(
    key: string,
    expected: number,
    readonly current: Stored | undefined,
  ) {
    super(ErrorCode.Conflict, `${key} has resourceVersion ${current?.rev ?? 'none (deleted)'}, not ${expected}: the object has been modified`);
  }
}

/** What a guaranteed update does with the current object: write this object, delete it, or leave it (a no-op answer). */
export type UpdateDecision = { readonly write: KObject } | { readonly delete: true } | { readonly keep: true };

export interface GuaranteedUpdateOptions {
  /** A version the caller already has (the watch cache's): tried first, read afresh on a conflict. */
  readonly cached?: Stored | undefined;
  /** Attempts before a Conflict is given up (default 16). */
  readonly attempts?: number;
}

/** What guaranteedUpdate did: the object stored, deleted or kept, and the current version it decided on. */
export interface GuaranteedUpdateResult {
  readonly outcome: 'written' | 'deleted' | 'kept';
  /** Written: the new version; deleted: the object as deleted; kept: the current version. */
  readonly stored: Stored;
  /** The version tryUpdate decided on. */
  readonly from: Stored;
}

/**
 * kube-apiserver's GuaranteedUpdate: read the current object, let tryUpdate decide, compare-and-swap on the revision
 * it read, and on a conflict decide again from the version the backend returned.
 *
 * tryUpdate may throw (a precondition, validation): the error is the caller's. `fresh` tells it whether `cur` came
 * from the backend rather than a cache, so a precondition that fails against a cached version is checked again on
 * a fresh one (throw `StaleRead` to ask for that).
 * @throws NotFound when the key holds nothing; Conflict after `attempts` lost races
 */
export async function guaranteedUpdate(
  storage: Storage,
  key: string,
  tryUpdate: (cur: Stored, fresh: boolean) => UpdateDecision | Promise<UpdateDecision>,
  opts: GuaranteedUpdateOptions = {},
): Promise<GuaranteedUpdateResult> {
  const attempts = opts.attempts ?? 16;
  let cur = opts.cached;
  let fresh = false;
  if (!cur) {
    cur = await storage.get(key);
    fresh = true;
  }
  for (let attempt = 0; ; attempt++) {
    if (!cur) throw new NodenetError(ErrorCode.NotFound, `${key} not found`);
    let decision: UpdateDecision;
    try {
      decision = await tryUpdate(cur, fresh);
    } catch (e) {
      if (e instanceof StaleRead && !fresh) {
        cur = await storage.get(key);
        fresh = true;
        continue;
      }
      throw e instanceof StaleRead ? e.cause : e;
    }
    if ('keep' in decision) return { outcome: 'kept', stored: cur, from: cur };
    try {
      const stored = 'delete' in decision ? await storage.delete(key, cur.rev) : await storage.update(key, decision.write, cur.rev);
      return { outcome: 'delete' in decision ? 'deleted' : 'written', stored, from: cur };
    } catch (e) {
      if (!(e instanceof ConflictError) || attempt + 1 >= attempts) throw e;
      cur = e.current;
      fresh = true;
    }
  }
}

/**
 * Thrown by a tryUpdate whose precondition failed on a version that may be stale: guaranteedUpdate reads the
 * object from the backend and decides again; on a fresh version it throws `cause`.
 */
export class StaleRead extends Error {
  constructor(override readonly cause: unknown) {
    super('precondition failed on a cached version');
  }
}

/** The prefix of a group-resource's keys, or of one namespace's of it. */
export function prefixOf(gr: string, namespace?: string): string {
  return namespace === undefined ? `${gr}/` : `${gr}/${namespace}/`;
}
