/**
 * controlplane/store/local-storage: the embedded storage backend, etcd's job
 * done in this process over a local database (SQLite: sqlite-persistence.ts).
 *
 * - One global revision sequence. Each write takes the next revision when
 *   it is accepted; the revision becomes the object's resourceVersion.
 *   Revisions are never reused, also across restarts and after compaction
 *   (the high-water mark is stored); a batch that fails to commit leaves a
 *   gap, as etcd may.
 * - Compare-and-swap: update and delete take the revision the caller read
 *   and fail with a ConflictError carrying the current version, which the
 *   caller's retry starts from (storage.ts's guaranteedUpdate).
 * - Group commit: the writes accepted during one turn of the event loop are
 *   made durable in one transaction (one fsync for all of them), then
 *   acknowledged, then sent to watchers. A reader (get, list, watch) sees
 *   only committed writes; a compare-and-swap is checked against the newest
 *   accepted version, so that a write computed from an accepted one does not
 *   spin on a Conflict until the commit.
 * - A failed commit rejects every write not yet committed (later ones may
 *   have been computed from earlier ones) and drops them: nothing of them
 *   is visible, stored or sent.
 * - The current objects are kept in memory (a Map: the order and the
 *   indexes are the watch cache's job); the history is the database's,
 *   read for a watch that starts in the past and for a list at an old
 *   revision. Compaction (compactor.ts decides when) drops history; a watch
 *   or a list from below it gets Expired (410, "too old resource version").
 * - Watch fan-out happens in the commit itself: a watcher sees an event in
 *   the same turn its write is acknowledged, with no polling (kine, k3s's
 *   SQLite layer, polls its table every second).
 */
import { ErrorCode, NodenetError } from '../../lib/errors/errors.js';
import { F } from '../../lib/log/fields.js';
import { silentLogger, type Logger } from '../../lib/log/log.js';
import type { Persistence, PersistedEvent } from './persistence.js';
import { ConflictError, TxnFailed, type ListOptions, type ListResult, type Storage, type StorageWatch, type StorageWatchOptions, type TxnOp, watchHandle } from './storage.js';
import { byKey, type EventType, type KObject, type Stored, type StoreEvent } from './types.js';

export interface LocalStorageOptions {
  readonly persistence: Persistence;
  readonly log?: Logger;
  /** The backend's name (default `sqlite`). */
  readonly kind?: string;
}

interface Watcher extends StorageWatchOptions {
  stopped: boolean;
  progress: number;
}

type Write = { readonly ev: StoreEvent; resolve(s: Stored): void; reject(e: unknown): void };

const HISTORY_PAGE = 1000;

export class LocalStorage implements Storage {
  readonly kind: string;
  readonly durable: boolean = true;
  private readonly p: Persistence;
  private readonly log: Logger;

  /** Committed objects by key. */
  private readonly objects = new Map<string, Stored>();
  /** Accepted, not yet committed: the newest version per key (null: deleted). */
  private readonly pending = new Map<string, Stored | null>();
  private queue: Write[] = [];
  private flushScheduled = false;

  /** The last revision handed out. */
  private assigned: number;
  /** The last revision committed. */
  private committed: number;
  private compacted: number;
  private readonly watchers = new Set<Watcher>();
  private closed = false;

  constructor(opts: LocalStorageOptions) {
    this.p = opts.persistence;
    this.kind = opts.kind ?? 'sqlite';
    this.log = (opts.log ?? silentLogger()).child({ [F.subsys]: 'controlplane/storage' });
    const loaded = this.p.load();
    for (const o of loaded.objects) this.objects.set(o.key, { key: o.key, rev: o.rev, createRev: o.createRev, object: JSON.parse(o.json) as KObject, json: o.json });
    this.compacted = loaded.compacted;
    this.assigned = this.committed = Math.max(loaded.rev, 1);
  }

  create(key: string, obj: KObject): Promise<Stored> {
    if (this.latest(key)) return Promise.reject(new NodenetError(ErrorCode.AlreadyExists, `${key} already exists`));
    return this.accept('ADDED', key, obj, null);
  }

  update(key: string, obj: KObject, expectRev: number): Promise<Stored> {
    const cur = this.latest(key);
    if (!cur) return Promise.reject(new NodenetError(ErrorCode.NotFound, `${key} not found`));
    if (cur.rev !== expectRev) return Promise.reject(new ConflictError(key, expectRev, cur));
    return this.accept('MODIFIED', key, obj, cur);
  }

  delete(key: string, expectRev?: number): Promise<Stored> {
    const cur = this.latest(key);
    if (!cur) return Promise.reject(new NodenetError(ErrorCode.NotFound, `${key} not found`));
    if (expectRev !== undefined && cur.rev !== expectRev) return Promise.reject(new ConflictError(key, expectRev, cur));
    return this.accept('DELETED', key, cur.object, cur);
  }

  txn(ops: readonly TxnOp[]): Promise<(Stored | undefined)[]> {
    // Every check first, against the newest accepted versions and what the earlier operations of this one leave.
    const view = new Map<string, Stored | null>();
    const cur = (key: string) => (view.has(key) ? (view.get(key) ?? undefined) : this.latest(key));
    for (const [i, o] of ops.entries()) {
      const c = cur(o.key);
      let err: NodenetError | null = null;
      if (o.op === 'create') err = c ? new NodenetError(ErrorCode.AlreadyExists, `${o.key} already exists`) : null;
      else if (o.op === 'update') err = !c ? new NodenetError(ErrorCode.NotFound, `${o.key} not found`) : c.rev !== o.expectRev ? new ConflictError(o.key, o.expectRev, c) : null;
      else if (o.expectRev !== undefined) err = !c ? new NodenetError(ErrorCode.NotFound, `${o.key} not found`) : c.rev !== o.expectRev ? new ConflictError(o.key, o.expectRev, c) : null;
      if (err) return Promise.reject(new TxnFailed(i, o, err));
      // A placeholder: only presence matters for the later checks of this transaction.
      view.set(o.key, o.op === 'delete' ? null : (c ?? ({ key: o.key, rev: -1, createRev: -1, object: o.obj, json: '' } as Stored)));
    }
    // Accepted together, in this turn: one batch, one database transaction; a failed commit fails them all.
    return Promise.all(
      ops.map((o) => {
        if (o.op === 'create') return this.accept('ADDED', o.key, o.obj, null);
        const c = this.latest(o.key);
        if (o.op === 'update') return this.accept('MODIFIED', o.key, o.obj, c!);
        return c ? this.accept('DELETED', o.key, c.object, c) : Promise.resolve(undefined);
      }),
    );
  }

  get(key: string, opts: { readonly rev?: number } = {}): Promise<Stored | undefined> {
    try {
      if (opts.rev === undefined || opts.rev >= this.committed) return Promise.resolve(this.objects.get(key));
      return Promise.resolve(this.stateAt((k) => k === key, opts.rev).get(key));
    } catch (e) {
      return Promise.reject(e);
    }
  }

  list(prefix: string, opts: ListOptions = {}): Promise<ListResult> {
    try {
      const rev = opts.rev === undefined || opts.rev >= this.committed ? this.committed : opts.rev;
      const match = (k: string) => k.startsWith(prefix) && (opts.after === undefined || k > opts.after);
      let all: Stored[];
      if (rev === this.committed) {
        all = [];
        for (const [k, s] of this.objects) if (match(k)) all.push(s);
      } else all = [...this.stateAt(match, rev).values()];
      all.sort(byKey);
      const limit = opts.limit && opts.limit > 0 ? opts.limit : Infinity;
      return Promise.resolve({ items: all.length > limit ? all.slice(0, limit) : all, rev, more: all.length > limit });
    } catch (e) {
      return Promise.reject(e);
    }
  }

  /** Every committed object, sorted by key, and the revision: list('') without the wait, for a synchronous start. */
  snapshot(): ListResult {
    const items = [...this.objects.values()].sort(byKey);
    return { items, rev: this.committed, more: false };
  }

  watch(opts: StorageWatchOptions): StorageWatch {
    if (this.closed) throw new NodenetError(ErrorCode.Store, 'storage closed');
    const w: Watcher = { ...opts, stopped: false, progress: opts.afterRev };
    const handle = watchHandle(w, () => this.watchers.delete(w));
    if (opts.afterRev < this.compacted) {
      w.stopped = true;
      opts.onError(new NodenetError(ErrorCode.Expired, `too old resource version: ${opts.afterRev} (${this.compacted})`));
      return handle;
    }
    // The history, then registration, in this same turn: no commit can come between them.
    try {
      let after = opts.afterRev;
      while (after < this.committed && !w.stopped) {
        const rows = this.p.readEvents(after, HISTORY_PAGE);
        for (const r of rows) if (r.rev <= this.committed) this.deliver(w, eventOf(r));
        if (rows.length < HISTORY_PAGE) break;
        after = rows[rows.length - 1]!.rev;
      }
    } catch (e) {
      w.stopped = true;
      opts.onError(e instanceof NodenetError ? e : new NodenetError(ErrorCode.Store, `reading the history: ${String(e)}`, { cause: e }));
      return handle;
    }
    if (!w.stopped) {
      w.progress = Math.max(w.progress, this.committed);
      this.watchers.add(w);
    }
    return handle;
  }

  currentRev(): Promise<number> {
    return Promise.resolve(this.committed);
  }

  compactedRev(): Promise<number> {
    return Promise.resolve(this.compacted);
  }

  compact(rev: number): Promise<void> {
    const to = Math.min(rev, this.committed);
    if (to <= this.compacted) return Promise.resolve();
    try {
      this.p.compact(to);
    } catch (e) {
      return Promise.reject(e);
    }
    this.compacted = to;
    this.log.debug({ [F.rev]: to }, 'history compacted');
    return Promise.resolve();
  }

  close(): Promise<void> {
    if (this.closed) return Promise.resolve();
    try {
      if (this.queue.length) this.flush();
    } finally {
      this.closed = true;
      this.watchers.clear();
      this.p.close();
    }
    return Promise.resolve();
  }

  /** The newest accepted version (committed or not). */
  private latest(key: string): Stored | undefined {
    const p = this.pending.get(key);
    if (p !== undefined) return p ?? undefined;
    return this.objects.get(key);
  }

  /** The objects whose keys match, as they were at rev: the current ones with the history after rev undone. */
  private stateAt(match: (key: string) => boolean, rev: number): Map<string, Stored> {
    if (rev < this.compacted) throw new NodenetError(ErrorCode.Expired, `too old resource version: ${rev} (${this.compacted})`);
    const state = new Map<string, Stored>();
    for (const [k, s] of this.objects) if (match(k)) state.set(k, s);
    const later: PersistedEvent[] = [];
    for (let after = rev; ; ) {
      const rows = this.p.readEvents(after, HISTORY_PAGE);
      for (const r of rows) if (r.rev <= this.committed && match(r.key)) later.push(r);
      if (rows.length < HISTORY_PAGE) break;
      after = rows[rows.length - 1]!.rev;
    }
    // Undo newest first.
    for (let i = later.length - 1; i >= 0; i--) {
      const ev = eventOf(later[i]!);
      if (ev.type === 'ADDED') state.delete(ev.key);
      else state.set(ev.key, ev.prev!);
    }
    return state;
  }

  private accept(type: EventType, key: string, obj: KObject, prev: Stored | null): Promise<Stored> {
    if (this.closed) return Promise.reject(new NodenetError(ErrorCode.Store, 'storage closed'));
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
      if (ev.type === 'DELETED') this.objects.delete(ev.key);
      else this.objects.set(ev.key, ev.cur);
      if (this.pending.get(ev.key) === (ev.type === 'DELETED' ? null : ev.cur)) this.pending.delete(ev.key);
    }
    this.committed = batch[batch.length - 1]!.ev.rev;
    for (const w of batch) w.resolve(w.ev.cur);
    for (const { ev } of batch) for (const watcher of this.watchers) this.deliver(watcher, ev);
    for (const watcher of this.watchers) watcher.progress = this.committed;
  }

  private deliver(w: Watcher, ev: StoreEvent): void {
    if (w.stopped || !ev.key.startsWith(w.prefix)) return;
    try {
      w.onEvent(ev);
      w.progress = ev.rev;
    } catch (err) {
      this.log.warn({ [F.err]: err }, 'a watcher failed; its watch is stopped');
      w.stopped = true;
      this.watchers.delete(w);
    }
  }
}

function eventOf(r: PersistedEvent): StoreEvent {
  const cur: Stored = { key: r.key, rev: r.rev, createRev: r.createRev, object: JSON.parse(r.json) as KObject, json: r.json };
  const prev: Stored | null =
    r.prevJson === null ? null : { key: r.key, rev: r.prevRev, createRev: r.createRev, object: JSON.parse(r.prevJson) as KObject, json: r.prevJson };
  return { type: r.type, rev: r.rev, key: r.key, cur, prev };
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
