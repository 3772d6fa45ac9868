/**
 * controlplane/store/watch-cache: the objects of the whole store in memory,
 * filled from the storage backend's own watch, per process
 * (kube-apiserver's `storage/cacher`, in small). Every read of the API
 * server and of the controllers is served here; only writes go to the
 * backend.
 *
 * - **Filled by list, then watch.** start() lists everything at one
 *   revision (in pages), then watches from that revision with the previous
 *   object of each change. `rev` is the revision the cache has reached.
 * - **Reads.** get, list (a group-resource or one namespace of it: a
 *   namespace is a contiguous run of keys) and the controllers' named
 *   indexes (indexer.ts) answer synchronously from memory, as client-go's
 *   listers do. A read that must see every acknowledged write (a GET or a
 *   LIST without resourceVersion, which kube-apiserver answers from etcd or
 *   from a cache it has made wait) first calls `fresh()`: it asks the
 *   backend for its current revision and waits until the cache has reached
 *   it. Progress notifications are not trusted for this (etcd 3.4 can send
 *   one ahead of events: etcd#15220); an event, or the backend watch's own
 *   delivered mark, is.
 * - **History.** At least the newest `ringSize` events are kept (up to a
 *   quarter more, trimmed in steps); `listAt` rebuilds a
 *   group-resource at a revision within them (paged lists keep their
 *   snapshot). A list at an older revision goes to the backend (async).
 * - **Watches.** A watch from a revision the ring holds is replayed from it
 *   and then fed live, synchronously as each event arrives. A watch from an
 *   older revision is served by a backend watch of its own (the backend
 *   keeps the history to its compaction; below that, 410). Each watch
 *   reports the revision it has delivered everything up to, for bookmarks.
 * - **A broken backend watch** (the backend restarted, compacted past the
 *   cache, failed) ends every watch of the cache with an error, as a
 *   cacher's re-list does, and the cache lists and watches again.
 */
import { ErrorCode, NodenetError } from '../../lib/errors/errors.js';
import { F } from '../../lib/log/fields.js';
import { silentLogger, type Logger } from '../../lib/log/log.js';
import { realClock, type Clock } from '../../lib/reconcile/clock.js';
import { Indexer, type IndexFunc } from './indexer.js';
import { prefixOf, type Storage, type StorageWatch } from './storage.js';
import { byKey, grOf, namespaceOf, type Stored, type StoreEvent } from './types.js';

export interface WatchCacheOptions {
  readonly storage: Storage;
  readonly clock?: Clock;
  readonly log?: Logger;
  /** Events kept in memory for watches that resume and lists at a revision (default 10,000). */
  readonly ringSize?: number;
  /** How long a consistent read waits for the cache to reach the backend's revision (default 3 s, kube-apiserver's). */
  readonly freshTimeoutMs?: number;
  /** Objects per page of the initial list (default 10,000). */
  readonly pageSize?: number;
}

export interface CacheWatchOptions {
  /** Only this group-resource. */
  readonly gr: string;
  /** Only this namespace (undefined: all). */
  readonly namespace?: string | undefined;
  /** Events with a revision above this one: first those in the history, then live ones. */
  readonly afterRev: number;
  /** Called in revision order. A throw stops the watch. */
  readonly onEvent: (ev: StoreEvent) => void;
  /**
   * The watch ended with an error (Expired: the revision is compacted, list again). May be called before watch()
   * returns. Without it, watch() throws what it can tell at once and later errors only end the watch.
   */
  readonly onError?: (err: NodenetError) => void;
}

export interface CacheWatch {
  /** Every event of the watch up to this revision has been delivered: what a bookmark may carry. */
  readonly progressRev: number;
  stop(): void;
}

interface Watcher extends CacheWatchOptions {
  stopped: boolean;
}

interface Waiter {
  readonly rev: number;
  resolve(): void;
}

export class WatchCache {
  readonly storage: Storage;
  private readonly clock: Clock;
  private readonly log: Logger;
  private readonly ringSize: number;
  private readonly freshTimeoutMs: number;
  private readonly pageSize: number;

  private readonly objects = new Indexer();
  private current = 0;
  /** Events in memory, ascending; the ring holds every event with rev in (ringFloor, current]. */
  private ring: StoreEvent[] = [];
  private ringFloor = 0;
  /** Watches served from the cache, by the group-resource they watch. */
  private readonly watchers = new Map<string, Set<Watcher>>();
  /** Watches served by a backend watch of their own (they began below the ring). */
  private readonly direct = new Set<{ stop(): void; fail(err: NodenetError): void }>();
  private waiters: Waiter[] = [];
  private backendWatch: StorageWatch | null = null;
  private started = false;
  private closed = false;
  /** A pending re-list (after the backend watch broke). */
  private relisting: Promise<void> | null = null;

  constructor(opts: WatchCacheOptions) {
    this.storage = opts.storage;
    this.clock = opts.clock ?? realClock;
    this.log = (opts.log ?? silentLogger()).child({ [F.subsys]: 'controlplane/watch-cache' });
    this.ringSize = opts.ringSize ?? 10_000;
    this.freshTimeoutMs = opts.freshTimeoutMs ?? 3000;
    this.pageSize = opts.pageSize ?? 10_000;
  }

  /** Lists the backend and starts watching it. */
  async start(): Promise<void> {
    if (this.started) return;
    this.started = true;
    await this.fill();
  }

  /**
   * Starts from a list of everything the caller already made at one revision (an embedded backend can list
   * synchronously: LocalStorage.snapshot()), then watches from that revision. For tests that build a store in a
   * synchronous setup; the control plane uses start().
   */
  startFrom(snapshot: { readonly items: readonly Stored[]; readonly rev: number }): void {
    if (this.started) throw new Error('watch cache: started twice');
    this.started = true;
    this.load(snapshot.items, snapshot.rev);
  }

  /** The revision the cache has reached: a list's resourceVersion. */
  get rev(): number {
    return this.current;
  }

  /** A cached object, or undefined. */
  get(key: string): Stored | undefined {
    return this.objects.get(key);
  }

  /** The cached objects of a group-resource (in one namespace, if given), sorted by key, and the revision they are at. */
  list(gr: string, namespace?: string): { items: readonly Stored[]; rev: number } {
    return { items: this.objects.list(gr, namespace), rev: this.current };
  }

  /**
   * The objects of a group-resource as they were at revision `rev`, rebuilt from the cache and its ring.
   * @throws Expired when the ring no longer reaches back to rev (listFromStorage then asks the backend)
   */
  listAt(gr: string, rev: number): readonly Stored[] {
    if (rev >= this.current) return this.list(gr).items;
    if (rev < this.ringFloor) throw new NodenetError(ErrorCode.Expired, `too old resource version: ${rev} (${this.ringFloor})`);
    const state = new Map<string, Stored>();
    for (const s of this.list(gr).items) state.set(s.key, s);
    // Undo the events after rev, newest first.
    for (let i = this.ring.length - 1; i >= 0 && this.ring[i]!.rev > rev; i--) {
      const ev = this.ring[i]!;
      if (grOf(ev.key) !== gr) continue;
      if (ev.type === 'ADDED') state.delete(ev.key);
      else state.set(ev.key, ev.prev!);
    }
    return [...state.values()].sort(byKey);
  }

  /** The objects of a group-resource at `rev` from the backend (older than the ring). @throws Expired when compacted */
  async listFromStorage(gr: string, rev: number): Promise<readonly Stored[]> {
    const out: Stored[] = [];
    let after: string | undefined;
    for (;;) {
      const page = await this.storage.list(prefixOf(gr), { rev, limit: this.pageSize, ...(after !== undefined ? { after } : {}) });
      out.push(...page.items);
      if (!page.more || !page.items.length) return out;
      after = page.items[page.items.length - 1]!.key;
    }
  }

  /** Files the cached objects of `gr`, present and future, under an index (client-go's AddIndexers). */
  addIndex(gr: string, name: string, fn: IndexFunc): void {
    this.objects.addIndex(gr, name, fn);
  }

  /** The cached objects of `gr` filed under `value` in the index `name`, sorted by key. */
  byIndex(gr: string, name: string, value: string): readonly Stored[] {
    return this.objects.byIndex(gr, name, value);
  }

  /** How many objects of each group-resource are cached (apiserver_storage_objects). */
  counts(): Map<string, number> {
    return this.objects.counts();
  }

  /**
   * Waits until the cache holds every write the backend has acknowledged (a consistent read), and returns the
   * revision it reached. @throws Timeout after freshTimeoutMs
   */
  async fresh(): Promise<number> {
    const target = await this.storage.currentRev();
    await this.waitFor(target);
    return this.current;
  }

  /** Waits until the cache has reached rev. @throws Timeout after freshTimeoutMs */
  waitFor(rev: number): Promise<void> {
    this.noteProgress();
    if (this.current >= rev) return Promise.resolve();
    if (this.closed) return Promise.reject(new NodenetError(ErrorCode.Store, 'watch cache closed'));
    return new Promise<void>((resolve, reject) => {
      const timer = this.clock.setTimeout(() => {
        this.waiters = this.waiters.filter((w) => w !== waiter);
        reject(new NodenetError(ErrorCode.Timeout, `Too large resource version: ${rev}, current: ${this.current}`));
      }, this.freshTimeoutMs);
      const waiter: Waiter = {
        rev,
        resolve: () => {
          this.clock.clearTimeout(timer);
          resolve();
        },
      };
      this.waiters.push(waiter);
    });
  }

  /**
   * Delivers the events after `afterRev` (history, then live) to onEvent, in order.
   * @throws Expired (without onError) when afterRev is below what the backend keeps and the backend says so at once
   */
  watch(opts: CacheWatchOptions): CacheWatch {
    if (this.closed) throw new NodenetError(ErrorCode.Store, 'watch cache closed');
    if (opts.afterRev < this.ringFloor) return this.watchStorage(opts);
    const w: Watcher = { ...opts, stopped: false };
    const matches = (ev: StoreEvent) => grOf(ev.key) === w.gr && (w.namespace === undefined || namespaceOf(ev.key) === w.namespace);
    for (const ev of this.ringAfter(opts.afterRev)) {
      if (w.stopped) break;
      if (matches(ev)) this.deliver(w, ev);
    }
    if (!w.stopped) {
      let set = this.watchers.get(w.gr);
      if (!set) this.watchers.set(w.gr, (set = new Set()));
      set.add(w);
    }
    const cache = this;
    return {
      get progressRev() {
        return cache.current;
      },
      stop: () => {
        w.stopped = true;
        this.watchers.get(w.gr)?.delete(w);
      },
    };
  }

  /**
   * The backend dropped its history at and below rev (the compactor says so): the ring drops it too, so that a
   * watch or a paged list from there gets the 410 it would get from the backend, and its client lists again.
   */
  compacted(rev: number): void {
    const to = Math.min(rev, this.current);
    if (to <= this.ringFloor) return;
    let i = 0;
    while (i < this.ring.length && this.ring[i]!.rev <= to) i++;
    if (i) this.ring = this.ring.slice(i);
    this.ringFloor = to;
  }

  /** Stops the backend watch; watches get nothing more. The backend is the caller's to close. */
  close(): void {
    if (this.closed) return;
    this.closed = true;
    this.backendWatch?.stop();
    this.backendWatch = null;
    for (const set of this.watchers.values()) for (const w of set) w.stopped = true;
    this.watchers.clear();
    for (const d of this.direct) d.stop();
    this.direct.clear();
    for (const w of this.waiters) w.resolve();
    this.waiters = [];
  }

  /** A watch that began below the ring: the backend replays its history and feeds it live. */
  private watchStorage(opts: CacheWatchOptions): CacheWatch {
    let stopped = false;
    let sync: NodenetError | null = null;
    let returned = false;
    const fail = (err: NodenetError) => {
      if (stopped) return;
      stopped = true;
      entry.stop();
      if (opts.onError) opts.onError(err);
      else if (!returned) sync = err;
      else this.log.debug({ [F.err]: err }, 'a watch from the backend ended');
    };
    let handle: StorageWatch | null = null;
    const entry = {
      stop: () => {
        stopped = true;
        handle?.stop();
        this.direct.delete(entry);
      },
      fail,
    };
    this.direct.add(entry);
    const h: StorageWatch = (handle = this.storage.watch({
      prefix: prefixOf(opts.gr, opts.namespace),
      afterRev: opts.afterRev,
      onEvent: (ev) => {
        if (!stopped) opts.onEvent(ev);
      },
      onError: fail,
    }));
    if (stopped) h.stop();
    returned = true;
    if (sync) throw sync;
    return {
      get progressRev() {
        return h.progressRev;
      },
      stop: entry.stop,
    };
  }

  /** Lists everything at one revision, replaces the cache's contents, and watches from there. */
  private async fill(): Promise<void> {
    const items: Stored[] = [];
    let rev: number | undefined;
    let after: string | undefined;
    for (;;) {
      const page = await this.storage.list('', { limit: this.pageSize, ...(rev !== undefined ? { rev } : {}), ...(after !== undefined ? { after } : {}) });
      rev ??= page.rev;
      items.push(...page.items);
      if (!page.more || !page.items.length) break;
      after = page.items[page.items.length - 1]!.key;
    }
    if (this.closed) return;
    this.load(items, rev!);
  }

  private load(items: readonly Stored[], rev: number): void {
    this.objects.load(items);
    this.current = rev;
    this.ring = [];
    this.ringFloor = rev;
    this.backendWatch = this.storage.watch({ prefix: '', afterRev: rev, onEvent: (ev) => this.apply(ev), onError: (err) => this.broken(err) });
    this.release();
  }

  private apply(ev: StoreEvent): void {
    // The writes of one transaction may share a revision (etcd's do): an equal revision is the next write of it.
    if (ev.rev < this.current || (ev.rev === this.current && this.objects.get(ev.key)?.rev === ev.rev)) return;
    if (ev.type === 'DELETED') this.objects.remove(ev.key);
    else this.objects.put(ev.cur);
    this.current = ev.rev;
    this.ring.push(ev);
    // Trimmed in steps of a quarter of the ring, not per event: a slice per event copied the whole ring each time.
    if (this.ring.length > this.ringSize + Math.max(1, this.ringSize >> 2)) {
      const drop = this.ring.length - this.ringSize;
      this.ringFloor = this.ring[drop - 1]!.rev;
      this.ring = this.ring.slice(drop);
    }
    const ns = namespaceOf(ev.key);
    for (const w of this.watchers.get(grOf(ev.key)) ?? []) if (w.namespace === undefined || w.namespace === ns) this.deliver(w, ev);
    this.release();
  }

  /** The backend watch ended: every watch of the cache ends (its clients list again), and the cache refills. */
  private broken(err: NodenetError): void {
    if (this.closed || this.relisting) return;
    this.log.warn({ [F.err]: err }, 'the storage watch ended; the cache lists again and its watches end');
    this.backendWatch = null;
    const gone = new NodenetError(ErrorCode.Expired, `too old resource version: the cache is re-listing (${err.message})`);
    for (const set of this.watchers.values()) {
      for (const w of set) {
        w.stopped = true;
        w.onError?.(gone);
      }
    }
    this.watchers.clear();
    this.relisting = (async () => {
      for (let delay = 100; !this.closed; delay = Math.min(delay * 2, 5000)) {
        try {
          await this.fill();
          return;
        } catch (e) {
          this.log.error({ [F.err]: e }, 'listing the storage failed; retrying');
          await new Promise<void>((r) => this.clock.setTimeout(r, delay));
        }
      }
    })().finally(() => {
      this.relisting = null;
    });
  }

  /** Takes the backend watch's delivered mark as the cache's revision (no event may be pending below it). */
  private noteProgress(): void {
    const p = this.backendWatch?.progressRev ?? 0;
    if (p > this.current) {
      this.current = p;
      this.release();
    }
  }

  private release(): void {
    if (!this.waiters.length) return;
    const keep: Waiter[] = [];
    for (const w of this.waiters) (w.rev <= this.current ? w.resolve() : keep.push(w));
    this.waiters = keep;
  }

  private deliver(w: Watcher, ev: StoreEvent): void {
    // A watch from a revision the cache has not reached yet starts above it.
    if (w.stopped || ev.rev <= w.afterRev) return;
    try {
      w.onEvent(ev);
    } catch (err) {
      this.log.warn({ [F.err]: err }, 'a watcher failed; its watch is stopped');
      w.stopped = true;
      this.watchers.get(w.gr)?.delete(w);
    }
  }

  private *ringAfter(rev: number): Generator<StoreEvent> {
    let lo = 0;
    let hi = this.ring.length;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (this.ring[mid]!.rev <= rev) lo = mid + 1;
      else hi = mid;
    }
    for (let i = lo; i < this.ring.length; i++) yield this.ring[i]!;
  }
}
