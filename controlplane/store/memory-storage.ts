/**
 * controlplane/store/memory-storage: an in-memory storage backend, written
 * apart from LocalStorage so that the contract suite checks the interface
 * and not one implementation of it. It behaves as a remote store does:
 *
 * - a write is applied and acknowledged at once, one revision per write
 *   (no group commit);
 * - watch events arrive later than the acknowledgement (on a later turn of
 *   the event loop, as over etcd's gRPC stream), so a reader above must
 *   wait for the revision it needs (the watch cache's consistent reads);
 * - the whole history is kept until compaction (etcd's MVCC), and get and
 *   list at any revision in it are answered from it.
 *
 * It validates what it is given (keys of three parts, revisions it handed
 * out) and injects failures: `failNext` makes the next writes reject with
 * nothing stored and no revision taken. `data` is what a restart keeps:
 * a new MemoryStorage over the same data is the same store reopened.
 * Not durable: nothing survives the process.
 */
import { ErrorCode, NodenetError } from '../../lib/errors/errors.js';
import { ConflictError, TxnFailed, type ListOptions, type ListResult, type Storage, type StorageWatch, type StorageWatchOptions, type TxnOp, watchHandle } from './storage.js';
import { byKey, type EventType, type KObject, type Stored, type StoreEvent } from './types.js';

/** The state a restart keeps. */
export class MemoryData {
  rev = 1;
  compacted = 0;
  readonly objects = new Map<string, Stored>();
  /** Every event above `compacted`, ascending. */
  history: StoreEvent[] = [];
}

interface Watcher extends StorageWatchOptions {
  stopped: boolean;
  progress: number;
  /** Events not delivered yet. */
  readonly queue: StoreEvent[];
  scheduled: boolean;
}

export class MemoryStorage implements Storage {
  readonly kind = 'memory';
  readonly durable = false;
  /** Writes to fail (nothing stored) before the next one succeeds. */
  failNext = 0;
  private readonly watchers = new Set<Watcher>();
  private closed = false;

  constructor(readonly data: MemoryData = new MemoryData()) {}

  create(key: string, obj: KObject): Promise<Stored> {
    return this.write(() => {
      if (this.data.objects.has(key)) throw new NodenetError(ErrorCode.AlreadyExists, `${key} already exists`);
      return this.commit('ADDED', key, obj, null);
    });
  }

  update(key: string, obj: KObject, expectRev: number): Promise<Stored> {
    return this.write(() => {
      const cur = this.data.objects.get(key);
      if (!cur) throw new NodenetError(ErrorCode.NotFound, `${key} not found`);
      if (cur.rev !== expectRev) throw new ConflictError(key, expectRev, cur);
      return this.commit('MODIFIED', key, obj, cur);
    });
  }

  delete(key: string, expectRev?: number): Promise<Stored> {
    return this.write(() => {
      const cur = this.data.objects.get(key);
      if (!cur) throw new NodenetError(ErrorCode.NotFound, `${key} not found`);
      if (expectRev !== undefined && cur.rev !== expectRev) throw new ConflictError(key, expectRev, cur);
      return this.commit('DELETED', key, cur.object, cur);
    });
  }

  /** As etcd's Txn: every write of one transaction takes the same revision. */
  async txn(ops: readonly TxnOp[]): Promise<(Stored | undefined)[]> {
    this.open();
    const view = new Map<string, boolean>();
    const has = (key: string) => (view.has(key) ? view.get(key)! : this.data.objects.has(key));
    for (const [i, o] of ops.entries()) {
      const c = this.data.objects.get(o.key);
      let err: NodenetError | null = null;
      if (o.op === 'create') err = has(o.key) ? new NodenetError(ErrorCode.AlreadyExists, `${o.key} already exists`) : null;
      else if (o.op === 'update' || o.expectRev !== undefined) {
        const want = o.op === 'update' ? o.expectRev : o.expectRev!;
        err = !has(o.key) ? new NodenetError(ErrorCode.NotFound, `${o.key} not found`) : view.has(o.key) || c!.rev !== want ? new ConflictError(o.key, want, c) : null;
      }
      if (err) throw new TxnFailed(i, o, err);
      view.set(o.key, o.op !== 'delete');
    }
    if (this.failNext > 0) {
      this.failNext--;
      throw new NodenetError(ErrorCode.Store, 'memory storage: injected write failure');
    }
    const rev = ++this.data.rev;
    return ops.map((o) => {
      const c = this.data.objects.get(o.key);
      if (o.op === 'delete') return c ? this.commit('DELETED', o.key, c.object, c, rev) : undefined;
      return this.commit(o.op === 'create' ? 'ADDED' : 'MODIFIED', o.key, o.obj, o.op === 'create' ? null : c!, rev);
    });
  }

  async get(key: string, opts: { readonly rev?: number } = {}): Promise<Stored | undefined> {
    this.open();
    return this.stateAt(opts.rev).get(key);
  }

  async list(prefix: string, opts: ListOptions = {}): Promise<ListResult> {
    this.open();
    const rev = opts.rev === undefined || opts.rev > this.data.rev ? this.data.rev : opts.rev;
    const all = [...this.stateAt(rev).values()]
      .filter((s) => s.key.startsWith(prefix) && (opts.after === undefined || s.key > opts.after))
      .sort(byKey);
    const limit = opts.limit && opts.limit > 0 ? opts.limit : Infinity;
    return { items: all.slice(0, limit), rev, more: all.length > limit };
  }

  watch(opts: StorageWatchOptions): StorageWatch {
    this.open();
    const w: Watcher = { ...opts, stopped: false, progress: opts.afterRev, queue: [], scheduled: false };
    const handle = watchHandle(w, () => this.watchers.delete(w));
    if (opts.afterRev < this.data.compacted) {
      w.stopped = true;
      const err = new NodenetError(ErrorCode.Expired, `too old resource version: ${opts.afterRev} (${this.data.compacted})`);
      setImmediate(() => opts.onError(err));
      return handle;
    }
    for (const ev of this.data.history) if (ev.rev > opts.afterRev) this.enqueue(w, ev);
    this.enqueue(w, null);
    this.watchers.add(w);
    return handle;
  }

  async currentRev(): Promise<number> {
    this.open();
    return this.data.rev;
  }

  async compactedRev(): Promise<number> {
    this.open();
    return this.data.compacted;
  }

  async compact(rev: number): Promise<void> {
    this.open();
    const to = Math.min(rev, this.data.rev);
    if (to <= this.data.compacted) return;
    this.data.compacted = to;
    this.data.history = this.data.history.filter((e) => e.rev > to);
  }

  async close(): Promise<void> {
    this.closed = true;
    for (const w of this.watchers) w.stopped = true;
    this.watchers.clear();
  }

  private open(): void {
    if (this.closed) throw new NodenetError(ErrorCode.Store, 'storage closed');
  }

  private write(fn: () => Stored): Promise<Stored> {
    try {
      this.open();
      if (this.failNext > 0) {
        this.failNext--;
        throw new NodenetError(ErrorCode.Store, 'memory storage: injected write failure');
      }
      return Promise.resolve(fn());
    } catch (e) {
      return Promise.reject(e);
    }
  }

  private commit(type: EventType, key: string, obj: KObject, prev: Stored | null, txnRev?: number): Stored {
    if (key.split('/').length !== 3) throw new Error(`MemoryStorage: ${JSON.stringify(key)} is not <group-resource>/<namespace>/<name>`);
    const rev = txnRev ?? ++this.data.rev;
    const object: KObject = { ...obj, metadata: { ...(obj.metadata ?? {}), resourceVersion: String(rev) } };
    const cur: Stored = { key, rev, createRev: prev && type !== 'ADDED' ? prev.createRev : rev, object, json: JSON.stringify(object) };
    if (type === 'DELETED') this.data.objects.delete(key);
    else this.data.objects.set(key, cur);
    const ev: StoreEvent = { type, rev, key, cur, prev };
    this.data.history.push(ev);
    for (const w of this.watchers) this.enqueue(w, ev);
    return cur;
  }

  /** Queues ev (null: only a progress mark at the current revision) and delivers the queue on a later turn. */
  private enqueue(w: Watcher, ev: StoreEvent | null): void {
    if (ev && ev.key.startsWith(w.prefix)) w.queue.push(ev);
    if (w.scheduled) return;
    w.scheduled = true;
    setImmediate(() => {
      w.scheduled = false;
      // Every revision up to here is queued (commits queue synchronously): once the queue is out, the watch is there.
      const mark = this.data.rev;
      const batch = w.queue.splice(0);
      for (const e of batch) {
        if (w.stopped) return;
        try {
          w.onEvent(e);
          w.progress = e.rev;
        } catch {
          w.stopped = true;
          this.watchers.delete(w);
          return;
        }
      }
      if (!w.stopped) w.progress = Math.max(w.progress, mark);
    });
  }

  /** The objects as they were at rev (default: now). @throws Expired below the compacted revision */
  private stateAt(rev?: number): Map<string, Stored> {
    if (rev === undefined || rev >= this.data.rev) return this.data.objects;
    if (rev < this.data.compacted) throw new NodenetError(ErrorCode.Expired, `too old resource version: ${rev} (${this.data.compacted})`);
    const state = new Map(this.data.objects);
    for (let i = this.data.history.length - 1; i >= 0 && this.data.history[i]!.rev > rev; i--) {
      const ev = this.data.history[i]!;
      if (ev.type === 'ADDED') state.delete(ev.key);
      else state.set(ev.key, ev.prev!);
    }
    return state;
  }
}
