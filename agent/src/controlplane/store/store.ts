/**
 * controlplane/store/store: the embedded API server's storage, etcd's job in
 * a real cluster.
 *
 * - One global revision sequence. Each write takes the next revision when
 *   it is accepted; the revision becomes the object's resourceVersion.
 *   Revisions are never reused, also across restarts and after compaction
 *   (the high-water mark is stored); a batch that fails to commit leaves a
 *   gap, as etcd may.
 * - Optimistic concurrency: update and delete take the revision the caller
 *   read (`expectRev`) and fail with Conflict when the object changed since.
 * - Group commit: the writes accepted during one turn of the event loop are
 *   made durable in one transaction (one fsync for all of them), then
 *   acknowledged, then sent to watchers. A reader (get, list, watch) sees
 *   only committed writes; `latest()` also sees accepted ones, for the
 *   read-modify-write loops of update and patch, which would otherwise spin
 *   on a Conflict until the commit.
 * - A failed commit rejects every write not yet committed (later ones may
 *   have been computed from earlier ones) and drops them: nothing of them
 *   is visible, stored or sent.
 * - History: the newest `ringSize` events in memory, the rest of the window
 *   in the database. Compaction drops what is older than `historyMs`, on a
 *   timer; a watch from before the compacted revision gets Expired (410,
 *   "too old resource version"), and the client lists again.
 * - Watch fan-out happens in the commit itself: a watcher sees an event in
 *   the same turn its write is acknowledged, with no polling (kine, k3s's
 *   SQLite layer, polls its table every second).
 */
import { ErrorCode, NodenetError } from '../../errors/errors.js';
import { F } from '../../log/fields.js';
import { silentLogger, type Logger } from '../../log/log.js';
import { realClock, type Clock } from '../../reconcile/clock.js';
import { Indexer, type IndexFunc } from './indexer.js';
import type { Persistence, PersistedEvent } from './persistence.js';
import { grOf, keyString, namespaceOf, type EventType, type KObject, type ObjectKey, type Stored, type StoreEvent } from './types.js';

export interface StoreOptions {
  readonly persistence: Persistence;
  readonly clock?: Clock;
  readonly log?: Logger;
  /** Events kept in memory for watchers that resume (default 10,000); older ones of the window are read from the database. */
  readonly ringSize?: number;
  /** History kept for watchers that resume: at least this long (default 5 minutes). */
  readonly historyMs?: number;
  /** How often compaction runs (default 60 s). */
  readonly compactEveryMs?: number;
}

export interface WatchOptions {
  /** Only this group-resource. */
  readonly gr: string;
  /** Only this namespace (undefined: all). */
  readonly namespace?: string | undefined;
  /** Events with a revision above this one: first those in the history, then live ones. */
  readonly afterRev: number;
  /** Called synchronously, in revision order. A throw stops the watch. */
  readonly onEvent: (ev: StoreEvent) => void;
}

export interface WatchHandle {
  stop(): void;
}

interface Watcher extends WatchOptions {
  stopped: boolean;
}

type Write = { readonly ev: StoreEvent; resolve(s: Stored): void; reject(e: unknown): void };

/** A key string from an ObjectKey, or the string itself. */
function keyOf(k: ObjectKey | string): string {
  return typeof k === 'string' ? k : keyString(k);
}

export class Store {
  private readonly p: Persistence;
  private readonly clock: Clock;
  private readonly log: Logger;
  private readonly ringSize: number;
  private readonly historyMs: number;
  private readonly compactEveryMs: number;

  /** Committed objects, sorted per group-resource and indexed (indexer.ts). */
  private readonly objects = new Indexer();
  /** Accepted, not yet committed: the newest version per key (null: deleted). */
  private readonly pending = new Map<string, Stored | null>();
  private queue: Write[] = [];
  private flushScheduled = false;

  /** The last revision handed out. */
  private assigned: number;
  /** The last revision committed. */
  private committed: number;
  private compacted: number;
  /** Events in memory, ascending; the ring holds every event with rev in (ringFloor, committed]. */
  private ring: StoreEvent[] = [];
  private ringFloor: number;
  /** Watchers by the group-resource they watch: an event is offered only to its own kind's. */
  private readonly watchers = new Map<string, Set<Watcher>>();
  /** (time, committed revision) samples, for compacting to the revision of historyMs ago. */
  private samples: { at: number; rev: number }[] = [];
  private timer: unknown = null;
  private closed = false;

  constructor(opts: StoreOptions) {
    this.p = opts.persistence;
    this.clock = opts.clock ?? realClock;
    this.log = (opts.log ?? silentLogger()).child({ [F.subsys]: 'controlplane/store' });
    this.ringSize = opts.ringSize ?? 10_000;
    this.historyMs = opts.historyMs ?? 5 * 60_000;
    this.compactEveryMs = opts.compactEveryMs ?? 60_000;

    const loaded = this.p.load(this.ringSize);
    this.objects.load(loaded.objects.map((o) => ({ key: o.key, rev: o.rev, createRev: o.createRev, object: JSON.parse(o.json) as KObject, json: o.json })));
    this.compacted = loaded.compacted;
    this.assigned = this.committed = Math.max(loaded.rev, 1);
    this.ring = loaded.events.map((e) => this.eventOf(e));
    this.ringFloor = loaded.events.length < this.ringSize || loaded.events.length === 0 ? this.compacted : loaded.events[0]!.rev - 1;
    this.samples.push({ at: this.clock.now(), rev: this.committed });
    this.armCompaction();
  }

  /** The last committed revision: a list's resourceVersion. */
  get rev(): number {
    return this.committed;
  }

  /** History at or below this revision is gone. */
  get compactedRev(): number {
    return this.compacted;
  }

  /** A committed object, or undefined. */
  get(key: ObjectKey | string): Stored | undefined {
    return this.objects.get(keyOf(key));
  }

  /** The newest accepted version (committed or not), or undefined: for read-modify-write. */
  latest(key: ObjectKey | string): Stored | undefined {
    const k = keyOf(key);
    const p = this.pending.get(k);
    if (p !== undefined) return p ?? undefined;
    return this.get(k);
  }

  /**
   * Committed objects of a group-resource (in one namespace, if given), sorted by key, with the revision they are
   * current at. Costs the length of the answer, not of the store: controllers on the write path list a namespace,
   * or ask an index (byIndex).
   */
  list(gr: string, namespace?: string): { items: readonly Stored[]; rev: number } {
    return { items: this.objects.list(gr, namespace), rev: this.committed };
  }

  /**
   * Files the committed objects of `gr`, present and future, under an index (client-go's AddIndexers). Adding the
   * same name with the same function again is a no-op, so controllers that share an index each add it.
   */
  addIndex(gr: string, name: string, fn: IndexFunc): void {
    this.objects.addIndex(gr, name, fn);
  }

  /** The committed objects of `gr` filed under `value` in the index `name`, sorted by key. */
  byIndex(gr: string, name: string, value: string): readonly Stored[] {
    return this.objects.byIndex(gr, name, value);
  }

  /**
   * The objects of a group-resource as they were at revision `rev` (a consistent snapshot for paged lists),
   * rebuilt from the current state and the history in memory, sorted by key.
   * @throws Expired when the memory history no longer reaches back to rev.
   */
  listAt(gr: string, rev: number): readonly Stored[] {
    if (rev >= this.committed) return this.list(gr).items;
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
    return [...state.values()].sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
  }

  /** How many objects of each group-resource are stored (apiserver_storage_objects). */
  counts(): Map<string, number> {
    return this.objects.counts();
  }

  /** @throws AlreadyExists when the key holds an object (accepted or committed). */
  create(key: ObjectKey | string, obj: KObject): Promise<Stored> {
    const k = keyOf(key);
    if (this.latest(k)) return Promise.reject(new NodenetError(ErrorCode.AlreadyExists, `${k} already exists`));
    return this.accept('ADDED', k, obj, null);
  }

  /** @throws NotFound when the key holds nothing; Conflict when expectRev is given and the object has another revision. */
  update(key: ObjectKey | string, obj: KObject, expectRev?: number): Promise<Stored> {
    const k = keyOf(key);
    const cur = this.latest(k);
    if (!cur) return Promise.reject(new NodenetError(ErrorCode.NotFound, `${k} not found`));
    if (expectRev !== undefined && cur.rev !== expectRev) return Promise.reject(conflict(k, expectRev, cur.rev));
    return this.accept('MODIFIED', k, obj, cur);
  }

  /** Resolves to the object as deleted (its resourceVersion the deletion's revision). Same errors as update. */
  delete(key: ObjectKey | string, expectRev?: number): Promise<Stored> {
    const k = keyOf(key);
    const cur = this.latest(k);
    if (!cur) return Promise.reject(new NodenetError(ErrorCode.NotFound, `${k} not found`));
    if (expectRev !== undefined && cur.rev !== expectRev) return Promise.reject(conflict(k, expectRev, cur.rev));
    return this.accept('DELETED', k, cur.object, cur);
  }

  /**
   * Delivers the events after `afterRev` (from the history, then live) to onEvent, synchronously and in order.
   * @throws Expired when afterRev is below the compacted revision.
   */
  watch(opts: WatchOptions): WatchHandle {
    if (this.closed) throw new NodenetError(ErrorCode.Store, 'store closed');
    if (opts.afterRev < this.compacted) {
      throw new NodenetError(ErrorCode.Expired, `too old resource version: ${opts.afterRev} (${this.compacted})`);
    }
    const w: Watcher = { ...opts, stopped: false };
    const matches = (ev: StoreEvent) => grOf(ev.key) === w.gr && (w.namespace === undefined || namespaceOf(ev.key) === w.namespace);
    // History first, in this same turn: no event can be committed between the replay and the registration.
    try {
      if (opts.afterRev < this.ringFloor) {
        let after = opts.afterRev;
        for (;;) {
          const rows = this.p.readEvents(after, 1000).filter((r) => r.rev <= this.ringFloor);
          for (const r of rows) if (grOf(r.key) === w.gr) this.deliver(w, this.eventOf(r), matches);
          if (rows.length < 1000 || w.stopped) break;
          after = rows[rows.length - 1]!.rev;
        }
      }
      for (const ev of this.ringAfter(opts.afterRev)) {
        if (w.stopped) break;
        this.deliver(w, ev, matches);
      }
    } catch (e) {
      if (e instanceof NodenetError) throw e;
      throw new NodenetError(ErrorCode.Store, `reading the history: ${String(e)}`, { cause: e });
    }
    if (!w.stopped) {
      let set = this.watchers.get(w.gr);
      if (!set) this.watchers.set(w.gr, (set = new Set()));
      set.add(w);
    }
    return {
      stop: () => {
        w.stopped = true;
        this.watchers.get(w.gr)?.delete(w);
      },
    };
  }

  /** Drops the history at and below rev (at most the committed revision). */
  compact(rev: number): void {
    const to = Math.min(rev, this.committed);
    if (to <= this.compacted) return;
    this.p.compact(to);
    this.compacted = to;
    let i = 0;
    while (i < this.ring.length && this.ring[i]!.rev <= to) i++;
    if (i) this.ring = this.ring.slice(i);
    this.ringFloor = Math.max(this.ringFloor, to);
    this.log.debug({ rev: to }, 'history compacted');
  }

  /** Commits what was accepted, stops the timers and closes the database. Watchers get nothing more. */
  close(): void {
    if (this.closed) return;
    try {
      if (this.queue.length) this.flush();
    } finally {
      this.closed = true;
      if (this.timer !== null) this.clock.clearTimeout(this.timer);
      this.watchers.clear();
      this.p.close();
    }
  }

  private accept(type: EventType, key: string, obj: KObject, prev: Stored | null): Promise<Stored> {
    if (this.closed) return Promise.reject(new NodenetError(ErrorCode.Store, 'store closed'));
    const rev = ++this.assigned;
    const object: KObject = { ...obj, metadata: { ...(obj.metadata ?? {}), resourceVersion: String(rev) } };
    const cur: Stored = { key, rev, createRev: prev && type !== 'ADDED' ? prev.createRev : rev, object, json: JSON.stringify(object) };
    const ev: StoreEvent = { type, rev, key, cur, prev };
    this.pending.set(key, type === 'DELETED' ? null : cur);
    return new Promise<Stored>((resolve, reject) => {
      this.queue.push({ ev, resolve, reject });
      if (!this.flushScheduled) {
        this.flushScheduled = true;
        setImmediate(() => this.flush());
      }
    });
  }

  private flush(): void {
    this.flushScheduled = false;
    const batch = this.queue;
    if (!batch.length) return;
    this.queue = [];
    try {
      this.p.commit(batch.map(({ ev }) => rowOf(ev)));
    } catch (e) {
      // Nothing of the batch was stored. Later accepted writes are in `batch` too (one queue), so the
      // overlay is empty again and every writer learns its write failed.
      this.pending.clear();
      const err = e instanceof NodenetError ? e : new NodenetError(ErrorCode.Store, `storing ${batch.length} write(s) failed: ${String(e)}`, { cause: e });
      this.log.error({ [F.err]: e, [F.count]: batch.length }, 'commit failed; the writes were not stored');
      for (const w of batch) w.reject(err);
      return;
    }
    for (const { ev } of batch) {
      if (ev.type === 'DELETED') this.objects.remove(ev.key);
      else this.objects.put(ev.cur);
      if (this.pending.get(ev.key) === (ev.type === 'DELETED' ? null : ev.cur)) this.pending.delete(ev.key);
      this.ring.push(ev);
    }
    this.committed = batch[batch.length - 1]!.ev.rev;
    if (this.ring.length > this.ringSize) {
      const drop = this.ring.length - this.ringSize;
      this.ringFloor = this.ring[drop - 1]!.rev;
      this.ring = this.ring.slice(drop);
    }
    for (const w of batch) w.resolve(w.ev.cur);
    for (const { ev } of batch) {
      const ns = namespaceOf(ev.key);
      for (const watcher of this.watchers.get(grOf(ev.key)) ?? []) this.deliver(watcher, ev, () => watcher.namespace === undefined || ns === watcher.namespace);
    }
  }

  private deliver(w: Watcher, ev: StoreEvent, matches: (ev: StoreEvent) => boolean): void {
    if (w.stopped || !matches(ev)) return;
    try {
      w.onEvent(ev);
    } catch (err) {
      this.log.warn({ [F.err]: err }, 'a watcher failed; its watch is stopped');
      w.stopped = true;
      this.watchers.get(w.gr)?.delete(w);
    }
  }

  private *ringAfter(rev: number): Generator<StoreEvent> {
    // Binary search for the first event above rev.
    let lo = 0;
    let hi = this.ring.length;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (this.ring[mid]!.rev <= rev) lo = mid + 1;
      else hi = mid;
    }
    for (let i = lo; i < this.ring.length; i++) yield this.ring[i]!;
  }

  private eventOf(r: PersistedEvent): StoreEvent {
    const cur: Stored = { key: r.key, rev: r.rev, createRev: r.createRev, object: JSON.parse(r.json) as KObject, json: r.json };
    const prev: Stored | null =
      r.prevJson === null ? null : { key: r.key, rev: r.prevRev, createRev: r.createRev, object: JSON.parse(r.prevJson) as KObject, json: r.prevJson };
    return { type: r.type, rev: r.rev, key: r.key, cur, prev };
  }

  private armCompaction(): void {
    this.timer = this.clock.setTimeout(() => {
      this.timer = null;
      if (this.closed) return;
      const now = this.clock.now();
      this.samples.push({ at: now, rev: this.committed });
      // The newest sample at least historyMs old is the revision to compact to.
      let to = -1;
      while (this.samples.length > 1 && this.samples[1]!.at <= now - this.historyMs) this.samples.shift();
      if (this.samples[0]!.at <= now - this.historyMs) to = this.samples[0]!.rev;
      try {
        if (to > this.compacted) this.compact(to);
      } catch (e) {
        this.log.error({ [F.err]: e }, 'compaction failed; retried at the next interval');
      }
      this.armCompaction();
    }, this.compactEveryMs);
  }
}

function conflict(key: string, expected: number, actual: number): NodenetError {
  return new NodenetError(ErrorCode.Conflict, `${key} has resourceVersion ${actual}, not ${expected}: the object has been modified`);
}

function rowOf(ev: StoreEvent): PersistedEvent {
  return {
    rev: ev.rev,
    key: ev.key,
    type: ev.type,
    createRev: ev.cur.createRev,
    json: ev.cur.json,
    prevRev: ev.prev?.rev ?? 0,
    prevJson: ev.prev?.json ?? null,
  };
}
