/**
 * controlplane/store/indexer: the committed objects in memory, kept so that
 * no read a controller or a request makes on the write path costs in
 * proportion to the store (client-go's ThreadSafeStore with its Indexers,
 * in small).
 *
 * - Per group-resource, a Map by key and the objects sorted by key, kept
 *   sorted on every change rather than re-sorted on the next list, in
 *   chunks of at most 1,024 (a change splices one chunk: one sorted array
 *   of 30,000 cost 20-70 µs per insert near its front). A key is
 *   `<gr>/<namespace>/<name>`, so one namespace's objects are one
 *   contiguous run: a list of a namespace is two binary searches and a
 *   copy of the run.
 * - Named indexes per group-resource (client-go's `Indexers`): an index
 *   function maps an object to the values it is filed under; `byIndex`
 *   gives the objects filed under one value, sorted by key. An index added
 *   late is built from what is already there. The same name may be added
 *   again with the same function (two controllers sharing one index); with
 *   another function it is refused, as client-go refuses it.
 *
 * Pure (no I/O); the watch cache owns one and feeds it what the backend's watch delivers. The
 * arrays handed out are copies: a caller may keep one across later writes.
 */
import { ErrorCode, NodenetError } from '../../lib/errors/errors.js';
import { byKey, grOf, type Stored } from './types.js';

/** The values an object is filed under in one index (none: it is not in that index). */
export type IndexFunc = (s: Stored) => readonly string[];

interface Index {
  readonly fn: IndexFunc;
  /** value -> key -> object */
  readonly values: Map<string, Map<string, Stored>>;
}

interface Resource {
  readonly byKey: Map<string, Stored>;
  /** Every object of the group-resource, ascending by key. */
  readonly sorted: SortedRun;
  readonly indexes: Map<string, Index>;
}


/** The first position in `sorted` whose key is >= key. */
function lowerBound(sorted: readonly Stored[], key: string): number {
  let lo = 0;
  let hi = sorted.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (sorted[mid]!.key < key) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/** Objects ascending by key, in chunks of at most 2 × LOAD (a B+ tree of one level, as Python's sortedcontainers). */
export class SortedRun {
  static readonly LOAD = 512;
  private chunks: Stored[][] = [];
  /** The last key of each chunk. */
  private lasts: string[] = [];

  /** Replaces the contents with `items`, already sorted by key. */
  reset(items: readonly Stored[]): void {
    this.chunks = [];
    this.lasts = [];
    for (let i = 0; i < items.length; i += SortedRun.LOAD) {
      const c = items.slice(i, i + SortedRun.LOAD);
      this.chunks.push(c);
      this.lasts.push(c[c.length - 1]!.key);
    }
  }

  /** Inserts s, or replaces the object with its key. */
  set(s: Stored): void {
    if (this.chunks.length === 0) {
      this.chunks.push([s]);
      this.lasts.push(s.key);
      return;
    }
    const c = Math.min(this.chunkOf(s.key), this.chunks.length - 1);
    const chunk = this.chunks[c]!;
    const at = lowerBound(chunk, s.key);
    if (chunk[at]?.key === s.key) {
      chunk[at] = s;
      return;
    }
    chunk.splice(at, 0, s);
    this.lasts[c] = chunk[chunk.length - 1]!.key;
    if (chunk.length > 2 * SortedRun.LOAD) {
      const tail = chunk.splice(SortedRun.LOAD);
      this.chunks.splice(c + 1, 0, tail);
      this.lasts.splice(c, 1, chunk[chunk.length - 1]!.key, tail[tail.length - 1]!.key);
    }
  }

  /** Removes the object with this key, if any. */
  delete(key: string): void {
    const c = this.chunkOf(key);
    const chunk = this.chunks[c];
    if (!chunk) return;
    const at = lowerBound(chunk, key);
    if (chunk[at]?.key !== key) return;
    chunk.splice(at, 1);
    if (chunk.length === 0) {
      this.chunks.splice(c, 1);
      this.lasts.splice(c, 1);
    } else this.lasts[c] = chunk[chunk.length - 1]!.key;
  }

  /** The objects with from <= key < to (every one without bounds), ascending, in a new array. */
  range(from?: string, to?: string): Stored[] {
    const out: Stored[] = [];
    for (let c = from === undefined ? 0 : this.chunkOf(from); c < this.chunks.length; c++) {
      const chunk = this.chunks[c]!;
      let i = from === undefined ? 0 : lowerBound(chunk, from);
      for (; i < chunk.length; i++) {
        const s = chunk[i]!;
        if (to !== undefined && s.key >= to) return out;
        out.push(s);
      }
    }
    return out;
  }

  /** The first chunk whose last key is >= key (the chunk count when every key is smaller). */
  private chunkOf(key: string): number {
    let lo = 0;
    let hi = this.lasts.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (this.lasts[mid]! < key) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  }
}

export class Indexer {
  private readonly resources = new Map<string, Resource>();

  /** Replaces everything with `items` (a restart's load): one sort, not one insert each. */
  load(items: Iterable<Stored>): void {
    const indexes = new Map([...this.resources].map(([gr, r]) => [gr, r.indexes] as const));
    this.resources.clear();
    const all = new Map<string, Stored[]>();
    for (const s of items) {
      const gr = grOf(s.key);
      this.resource(gr).byKey.set(s.key, s);
      let a = all.get(gr);
      if (!a) all.set(gr, (a = []));
      a.push(s);
    }
    for (const [gr, a] of all) this.resource(gr).sorted.reset(a.sort(byKey));
    for (const [gr, idx] of indexes) for (const [name, i] of idx) this.addIndex(gr, name, i.fn);
  }

  get(key: string): Stored | undefined {
    return this.resources.get(grOf(key))?.byKey.get(key);
  }

  /** Adds or replaces the object at s.key. */
  put(s: Stored): void {
    const r = this.resource(grOf(s.key));
    const old = r.byKey.get(s.key);
    r.byKey.set(s.key, s);
    r.sorted.set(s);
    for (const idx of r.indexes.values()) {
      if (old) unfile(idx, old);
      file(idx, s);
    }
  }

  /** Removes the object at key, if any. */
  remove(key: string): void {
    const r = this.resources.get(grOf(key));
    const old = r?.byKey.get(key);
    if (!r || !old) return;
    r.byKey.delete(key);
    r.sorted.delete(key);
    for (const idx of r.indexes.values()) unfile(idx, old);
  }

  /** The objects of a group-resource, in one namespace if given, ascending by key (a copy). */
  list(gr: string, namespace?: string): Stored[] {
    const r = this.resources.get(gr);
    if (!r) return [];
    if (namespace === undefined) return r.sorted.range();
    // '/' + 1 is '0': every key of the namespace sorts in [gr/ns/, gr/ns0).
    return r.sorted.range(`${gr}/${namespace}/`, `${gr}/${namespace}0`);
  }

  /** How many objects of each group-resource there are. */
  counts(): Map<string, number> {
    return new Map([...this.resources].map(([gr, r]) => [gr, r.byKey.size]));
  }

  /**
   * Files every object of `gr`, present and future, under `fn`'s values in the index `name`.
   * @throws Internal when `name` is already an index of `gr` with another function
   */
  addIndex(gr: string, name: string, fn: IndexFunc): void {
    const r = this.resource(gr);
    const was = r.indexes.get(name);
    if (was) {
      if (was.fn === fn) return;
      throw new NodenetError(ErrorCode.Internal, `index ${JSON.stringify(name)} of ${gr} exists with another function`);
    }
    const idx: Index = { fn, values: new Map() };
    for (const s of r.byKey.values()) file(idx, s);
    r.indexes.set(name, idx);
  }

  /**
   * The objects filed under `value` in the index `name` of `gr`, ascending by key.
   * @throws Internal when `gr` has no such index (a controller that forgot to add it)
   */
  byIndex(gr: string, name: string, value: string): Stored[] {
    const idx = this.resources.get(gr)?.indexes.get(name);
    if (!idx) throw new NodenetError(ErrorCode.Internal, `${gr} has no index ${JSON.stringify(name)}`);
    const m = idx.values.get(value);
    return m ? [...m.values()].sort(byKey) : [];
  }

  private resource(gr: string): Resource {
    let r = this.resources.get(gr);
    if (!r) this.resources.set(gr, (r = { byKey: new Map(), sorted: new SortedRun(), indexes: new Map() }));
    return r;
  }
}

function file(idx: Index, s: Stored): void {
  for (const v of idx.fn(s)) {
    let m = idx.values.get(v);
    if (!m) idx.values.set(v, (m = new Map()));
    m.set(s.key, s);
  }
}

function unfile(idx: Index, s: Stored): void {
  for (const v of idx.fn(s)) {
    const m = idx.values.get(v);
    if (!m) continue;
    m.delete(s.key);
    if (m.size === 0) idx.values.delete(v);
  }
}
