/**
 * proxy/versioned-map: an immutable string-keyed map iterated in sorted key
 * order, whose next version costs what changed, not its size. Pure.
 *
 * The proxier hands a new ProxySnapshot to the backend on every sync and
 * the backend (and onSyncDone's consumers) may keep it, so a snapshot must
 * never change once handed out; but rebuilding and sorting 30,000
 * ServicePorts for a sync that changed one was most of a partial sync's
 * time outside the backend. A version here is a sorted base Map (never
 * mutated after it is built) plus a small delta of the keys changed since
 * (also never mutated: the next version copies it). When the delta grows
 * past a sixteenth of the base the next version is compacted into a new
 * base, from the sorted merge, without a sort: amortized O(1) per change.
 * Values are never undefined (undefined in with() means delete).
 */

const ABSENT: unique symbol = Symbol('absent');
type Slot<V> = V | typeof ABSENT;

function cmp(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

/** Index of the first element of sorted `arr` that is >= k. */
function lowerBound(arr: readonly string[], k: string): number {
  let lo = 0;
  let hi = arr.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (arr[mid]! < k) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

const MIN_DELTA_BEFORE_COMPACT = 256;

export class VersionedSortedMap<V extends object | string | number | boolean | null> implements ReadonlyMap<string, V> {
  /**
   * `base` must be in sorted key order; `delta` overrides it (ABSENT = deleted);
   * `added` lists, sorted, the delta keys with a value that base lacks.
   */
  private constructor(
    private readonly base: ReadonlyMap<string, V>,
    private readonly delta: ReadonlyMap<string, Slot<V>>,
    private readonly added: readonly string[],
    readonly size: number,
  ) {}

  static empty<V extends object | string | number | boolean | null>(): VersionedSortedMap<V> {
    return new VersionedSortedMap<V>(new Map(), new Map(), [], 0);
  }

  /** From entries in any order (sorted here); the last value of a repeated key wins. */
  static from<V extends object | string | number | boolean | null>(entries: Iterable<readonly [string, V]>): VersionedSortedMap<V> {
    const m = new Map<string, V>();
    for (const [k, v] of entries) m.set(k, v);
    const keys = [...m.keys()].sort(cmp);
    const base = new Map<string, V>();
    for (const k of keys) base.set(k, m.get(k)!);
    return new VersionedSortedMap(base, new Map(), [], base.size);
  }

  /**
   * The next version: each key of `updates` set to its value, or deleted when
   * the value is undefined. This version stays as it was.
   */
  with(updates: ReadonlyMap<string, V | undefined>): VersionedSortedMap<V> {
    if (updates.size === 0) return this;
    const delta = new Map<string, Slot<V>>(this.delta);
    let added: string[] | null = null;
    let size = this.size;
    for (const [k, v] of updates) {
      const had = this.hasIn(delta, k);
      const inBase = this.base.has(k);
      if (v === undefined) {
        if (!had) continue;
        size--;
        if (inBase) delta.set(k, ABSENT);
        else {
          delta.delete(k);
          added ??= [...this.added];
          added.splice(lowerBound(added, k), 1);
        }
        continue;
      }
      if (!had) {
        size++;
        if (!inBase) {
          added ??= [...this.added];
          added.splice(lowerBound(added, k), 0, k);
        }
      }
      if (inBase && this.base.get(k) === v) delta.delete(k);
      else delta.set(k, v);
    }
    const next = new VersionedSortedMap<V>(this.base, delta, added ?? this.added, size);
    return delta.size > Math.max(MIN_DELTA_BEFORE_COMPACT, this.base.size >> 4) ? next.compact() : next;
  }

  /** The same contents with an empty delta (a fresh sorted base, built from the merge: no sort). */
  compact(): VersionedSortedMap<V> {
    if (this.delta.size === 0) return this;
    return new VersionedSortedMap<V>(new Map(this.entries()), new Map(), [], this.size);
  }

  private hasIn(delta: ReadonlyMap<string, Slot<V>>, k: string): boolean {
    const d = delta.get(k);
    return d !== undefined ? d !== ABSENT : this.base.has(k);
  }

  get(k: string): V | undefined {
    if (this.delta.size > 0) {
      const d = this.delta.get(k);
      if (d !== undefined) return d === ABSENT ? undefined : d;
    }
    return this.base.get(k);
  }

  has(k: string): boolean {
    return this.hasIn(this.delta, k);
  }

  /** Entries in sorted key order. */
  *entries(): MapIterator<[string, V]> {
    if (this.delta.size === 0) {
      yield* this.base.entries();
      return undefined;
    }
    const added = this.added;
    let i = 0;
    for (const [k, v] of this.base) {
      while (i < added.length && added[i]! < k) {
        const a = added[i++]!;
        yield [a, this.delta.get(a) as V];
      }
      const d = this.delta.get(k);
      if (d === ABSENT) continue;
      yield [k, d === undefined ? v : d];
    }
    while (i < added.length) {
      const a = added[i++]!;
      yield [a, this.delta.get(a) as V];
    }
    return undefined;
  }

  *keys(): MapIterator<string> {
    for (const [k] of this.entries()) yield k;
    return undefined;
  }

  *values(): MapIterator<V> {
    for (const [, v] of this.entries()) yield v;
    return undefined;
  }

  [Symbol.iterator](): MapIterator<[string, V]> {
    return this.entries();
  }

  forEach(fn: (value: V, key: string, map: ReadonlyMap<string, V>) => void, thisArg?: unknown): void {
    for (const [k, v] of this.entries()) fn.call(thisArg, v, k, this);
  }

  get [Symbol.toStringTag](): string {
    return 'VersionedSortedMap';
  }
}
