/**
 * proxy/nftables/cow: copy-on-write Set and Map for the applied-state record.
 *
 * A partial sync's record is the previous one plus a few changes. Copying it
 * whole (90,000 chain names and ~70,000 elements at 30,000 Services) was most
 * of a one-Service render (~100 ms and the garbage after it). These share
 * the previous record's contents (`base`, never mutated: a record is
 * immutable once rendered) and hold only their own changes; a record whose
 * changes grow past an eighth of its base is flattened into a plain copy, so
 * lookups stay two probes and the cost is amortised. The previous record
 * keeps reading the same as before: render stays pure.
 *
 * Iteration order: base order, then additions (an overridden Map key keeps
 * its place). Nothing relies on the order of a record.
 */

export interface MutableSet<T> extends ReadonlySet<T> {
  add(v: T): unknown;
  delete(v: T): boolean;
}

export interface MutableMap<K, V> extends ReadonlyMap<K, V> {
  set(k: K, v: V): unknown;
  delete(k: K): boolean;
}

const tooBig = (changes: number, base: number) => changes > 64 + base / 8;

export class CowSet<T> implements MutableSet<T> {
  private constructor(
    private readonly base: ReadonlySet<T>,
    /** Not in base. */
    private readonly added: Set<T>,
    /** In base, deleted here. */
    private readonly removed: Set<T>,
  ) {}

  /** A set reading as `src`, sharing its contents. */
  static from<T>(src: ReadonlySet<T>): CowSet<T> {
    if (src instanceof CowSet) {
      const s = src as CowSet<T>;
      if (tooBig(s.added.size + s.removed.size, s.base.size)) return new CowSet(new Set(s), new Set(), new Set());
      return new CowSet(s.base, new Set(s.added), new Set(s.removed));
    }
    return new CowSet(src, new Set(), new Set());
  }

  get size(): number {
    return this.base.size - this.removed.size + this.added.size;
  }
  has(v: T): boolean {
    return this.added.has(v) || (this.base.has(v) && !this.removed.has(v));
  }
  add(v: T): this {
    if (this.base.has(v)) this.removed.delete(v);
    else this.added.add(v);
    return this;
  }
  delete(v: T): boolean {
    if (this.added.delete(v)) return true;
    if (this.base.has(v) && !this.removed.has(v)) {
      this.removed.add(v);
      return true;
    }
    return false;
  }
  *values(): SetIterator<T> {
    for (const v of this.base) if (!this.removed.has(v)) yield v;
    yield* this.added;
  }
  keys(): SetIterator<T> {
    return this.values();
  }
  *entries(): SetIterator<[T, T]> {
    for (const v of this.values()) yield [v, v];
  }
  [Symbol.iterator](): SetIterator<T> {
    return this.values();
  }
  forEach(cb: (value: T, value2: T, set: ReadonlySet<T>) => void, thisArg?: unknown): void {
    for (const v of this.values()) cb.call(thisArg, v, v, this);
  }
}

export class CowMap<K, V> implements MutableMap<K, V> {
  private constructor(
    private readonly base: ReadonlyMap<K, V>,
    /** Set here: new keys and overrides of base keys. */
    private readonly over: Map<K, V>,
    /** Base keys deleted here (never also in `over`). */
    private readonly removed: Set<K>,
    /** Keys of `over` that base lacks. */
    private extra: number,
  ) {}

  static from<K, V>(src: ReadonlyMap<K, V>): CowMap<K, V> {
    if (src instanceof CowMap) {
      const m = src as CowMap<K, V>;
      if (tooBig(m.over.size + m.removed.size, m.base.size)) return new CowMap(new Map(m), new Map(), new Set(), 0);
      return new CowMap(m.base, new Map(m.over), new Set(m.removed), m.extra);
    }
    return new CowMap(src, new Map(), new Set(), 0);
  }

  get size(): number {
    return this.base.size - this.removed.size + this.extra;
  }
  has(k: K): boolean {
    return this.over.has(k) || (!this.removed.has(k) && this.base.has(k));
  }
  get(k: K): V | undefined {
    if (this.over.has(k)) return this.over.get(k);
    return this.removed.has(k) ? undefined : this.base.get(k);
  }
  set(k: K, v: V): this {
    if (this.base.has(k)) this.removed.delete(k);
    else if (!this.over.has(k)) this.extra++;
    this.over.set(k, v);
    return this;
  }
  delete(k: K): boolean {
    const had = this.has(k);
    if (this.over.delete(k) && !this.base.has(k)) this.extra--;
    if (this.base.has(k)) this.removed.add(k);
    return had;
  }
  *entries(): MapIterator<[K, V]> {
    for (const [k, v] of this.base) {
      if (this.removed.has(k)) continue;
      yield [k, this.over.has(k) ? (this.over.get(k) as V) : v];
    }
    for (const [k, v] of this.over) if (!this.base.has(k)) yield [k, v];
  }
  *keys(): MapIterator<K> {
    for (const [k] of this.entries()) yield k;
  }
  *values(): MapIterator<V> {
    for (const [, v] of this.entries()) yield v;
  }
  [Symbol.iterator](): MapIterator<[K, V]> {
    return this.entries();
  }
  forEach(cb: (value: V, key: K, map: ReadonlyMap<K, V>) => void, thisArg?: unknown): void {
    for (const [k, v] of this.entries()) cb.call(thisArg, v, k, this);
  }
}
