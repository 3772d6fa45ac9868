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
import { ErrorCode, NodenetError } from '../../lib/errors/errors.js';
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

/** One operation of a transaction. */
export type TxnOp =
  | { readonly op: 'create'; readonly key: string; readonly obj: KObject }
  | { readonly op: 'update'; readonly key: string; readonly obj: KObject; readonly expectRev: number }
  /** Deletes the key; with expectRev, only at that revision. Without it, a key that holds nothing is left alone (no event). */
  | { readonly op: 'delete'; readonly key: string; readonly expectRev?: number };

/** A transaction failed: `index` is the operation whose check failed (`cause` says how); nothing of it was stored. */
export class TxnFailed extends NodenetError {
  constructor(
    readonly index: number,
    readonly op: TxnOp,
    override readonly cause: NodenetError,
  ) {
    super(cause.code, cause.message, { cause });
  }
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
  /**
   * Several writes, all or nothing (etcd's Txn): every check (create-if-absent, compare-and-swap) is made before any
   * write, and the writes are stored in one transaction. A Service and the allocations it holds go in one (their
   * lock is the allocations' create-if-absent). Resolves to what each operation stored (a delete: the object as
   * deleted; a delete of nothing: undefined). The writes may share one revision (etcd) or take consecutive ones.
   * @throws TxnFailed naming the operation whose check failed
   */
  txn(ops: readonly TxnOp[]): Promise<(Stored | undefined)[]>;
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

/**
 * What a guaranteed update does with the current object: write this object, delete it, or leave it (a no-op answer).
 * `also`: more operations for the same transaction (a Service's allocation objects).
 */
export type UpdateDecision =
  | { readonly write: KObject; readonly also?: readonly TxnOp[] }
  | { readonly delete: true; readonly also?: readonly TxnOp[] }
  | { readonly keep: true };

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
 * @throws NotFound when the key holds nothing; Conflict after `attempts` lost races; TxnFailed when one of the
 *   decision's `also` operations failed its check (the caller decides whether to try again)
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
    const main: TxnOp = 'delete' in decision ? { op: 'delete', key, expectRev: cur.rev } : { op: 'update', key, obj: decision.write, expectRev: cur.rev };
    try {
      let stored: Stored;
      if (decision.also?.length) stored = (await storage.txn([main, ...decision.also]))[0]!;
      else stored = 'delete' in decision ? await storage.delete(key, cur.rev) : await storage.update(key, decision.write, cur.rev);
      return { outcome: 'delete' in decision ? 'deleted' : 'written', stored, from: cur };
    } catch (e) {
      // A transaction's own operation lost the race: as a plain compare-and-swap would have.
      const err = e instanceof TxnFailed && e.index === 0 ? e.cause : e;
      if (!(err instanceof ConflictError) || attempt + 1 >= attempts) throw err;
      cur = err.current;
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

/** A backend's handle on one of its watches: `w.progress` is its delivered mark; stop() marks it stopped and calls `remove`. */
export function watchHandle(w: { stopped: boolean; progress: number }, remove: () => void): StorageWatch {
  return {
    get progressRev() {
      return w.progress;
    },
    stop: () => {
      w.stopped = true;
      remove();
    },
  };
}

/** The prefix of a group-resource's keys, or of one namespace's of it. */
export function prefixOf(gr: string, namespace?: string): string {
  return namespace === undefined ? `${gr}/` : `${gr}/${namespace}/`;
}
