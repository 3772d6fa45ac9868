/**
 * controlplane/store/etcd/etcd-storage: the storage interface (../storage.ts)
 * on etcd, as kube-apiserver stores (k8s.io/apiserver/pkg/storage/etcd3:
 * store.go, watcher.go, compact.go), written for nodenet.
 *
 * - One etcd key per object: `<prefix>/<key>` (default prefix `/registry`,
 *   so `/registry/services/default/web`, `/registry/nodes//n1`). The value
 *   is the object's JSON without `metadata.resourceVersion`: the version is
 *   etcd's `mod_revision`, set on every read, never stored.
 * - Each write is one Txn. A create compares `create_revision` to 0; an
 *   update or a delete with a precondition compares `mod_revision`; the
 *   failure branch reads the key, so a lost race returns the current object
 *   for the retry (ConflictError) in the same round trip. A transaction of
 *   several writes (a Service and its IPAddress) is one Txn too: all its
 *   writes take one revision.
 * - Reads without a revision are linearizable (a quorum read); lists at a
 *   revision are etcd ranges at that revision, paged by key.
 * - Watches: one etcd watch per storage watch, with `prev_kv` (a delete
 *   carries the object as it was), over the whole keyspace, filtered here to
 *   the watch's prefix: every revision reaches it as an event, so its
 *   delivered mark is exact (the watch cache's single watch takes every key
 *   anyway; a watch of one prefix, from older than the cache's ring, is
 *   rare): a consistent read takes the
 *   current revision from a quorum read and waits for the cache to reach
 *   it, and no etcd progress notification is trusted (etcd 3.4.23 predates
 *   the fix of etcd#15220, where a notification could run ahead of events).
 *   A broken stream is opened again from the revision after the last one
 *   delivered, never from a response header's revision (the npm `etcd3`
 *   package does the latter and skips events during a catch-up): etcd
 *   sends the events of one revision in one response, so nothing is lost or
 *   repeated. A watch from a compacted revision ends with 410 (Expired).
 * - Compaction, kube-apiserver's way: `compact_rev_key` (under the prefix)
 *   holds the last revision compacted, and its etcd `version` is a logical
 *   clock: a replica compacts only if the key's version is still the one it
 *   saw, so with several API servers one compacts per round.
 */
import { ErrorCode, NodenetError } from '../../../lib/errors/errors.js';
import { F } from '../../../lib/log/fields.js';
import { silentLogger, type Logger } from '../../../lib/log/log.js';
import { Event_EventType, type KeyValue } from '../../../proto/etcd/kv.js';
import { Compare_CompareResult, Compare_CompareTarget, TxnRequest, WatchRequest, type Compare, type DeepPartial, type RequestOp, type ResponseOp, type WatchResponse } from '../../../proto/etcd/rpc.js';
import { ConflictError, TxnFailed, watchHandle, type ListOptions, type ListResult, type Storage, type StorageWatch, type StorageWatchOptions, type TxnOp } from '../storage.js';
import type { KObject, Stored, StoreEvent } from '../types.js';
import { EtcdClient, etcdError, prefixEnd } from './client.js';

export interface EtcdStorageOptions {
  readonly client: EtcdClient;
  /** The key prefix (default `/registry`, kube-apiserver's). */
  readonly prefix?: string;
  readonly log?: Logger;
  /** Close the client with the storage (default true). */
  readonly ownsClient?: boolean;
}

const COMPACT_KEY = 'compact_rev_key';
/** etcd's default --max-request-bytes is 1.5 MiB: a value this size is refused by etcd itself (failNextWrite). */
const TOO_LARGE = 2 * 1024 * 1024;

export class EtcdStorage implements Storage {
  readonly kind = 'etcd';
  readonly durable = true;
  readonly client: EtcdClient;
  private readonly prefix: string;
  private readonly log: Logger;
  private readonly watches = new Set<EtcdWatch>();
  private closed = false;
  /** compact_rev_key's etcd version when this replica last looked (kube-apiserver's compactTime). */
  private compactVersion = -1;
  /** Test hook: the next write's value is made too large for etcd, which refuses it. */
  failNext = 0;

  constructor(private readonly o: EtcdStorageOptions) {
    this.client = o.client;
    this.prefix = (o.prefix ?? '/registry').replace(/\/$/, '');
    this.log = (o.log ?? silentLogger()).child({ [F.subsys]: 'controlplane/storage' });
  }

  private k(key: string): Buffer {
    return Buffer.from(`${this.prefix}/${key}`);
  }

  private keyOf(kv: KeyValue): string {
    return kv.key.toString('utf8').slice(this.prefix.length + 1);
  }

  /** The value stored for obj: its JSON without a resourceVersion. */
  private value(obj: KObject): Buffer {
    const { resourceVersion: _rv, ...meta } = obj.metadata ?? {};
    const json = JSON.stringify({ ...obj, metadata: meta });
    if (this.failNext > 0) {
      this.failNext--;
      return Buffer.from(json + ' '.repeat(TOO_LARGE));
    }
    return Buffer.from(json);
  }

  /** An object as stored at `rev`, its resourceVersion set. */
  private make(key: string, stored: KObject | Buffer, rev: number, createRev: number): Stored {
    const raw = Buffer.isBuffer(stored) ? (JSON.parse(stored.toString('utf8')) as KObject) : stored;
    const object: KObject = { ...raw, metadata: { ...(raw.metadata ?? {}), resourceVersion: String(rev) } };
    return { key, rev, createRev, object, json: JSON.stringify(object) };
  }

  private fromKv(kv: KeyValue): Stored {
    return this.make(this.keyOf(kv), kv.value, Number(kv.modRevision), Number(kv.createRevision));
  }

  private check(): void {
    if (this.closed) throw new NodenetError(ErrorCode.Store, 'storage closed');
  }

  /**
   * The Compare, success op and failure read of one TxnOp (null compare: no check), as partials: fields left out take
   * their proto defaults in TxnRequest.fromPartial.
   */
  private parts(op: TxnOp): { cmp: DeepPartial<Compare> | null; success: DeepPartial<RequestOp>; failure: DeepPartial<RequestOp> } {
    const key = this.k(op.key);
    const failure: DeepPartial<RequestOp> = { request: { $case: 'requestRange', requestRange: { key } } };
    const cmpOf = (target: Compare_CompareTarget, targetUnion: DeepPartial<Compare>['targetUnion']): DeepPartial<Compare> => ({ result: Compare_CompareResult.EQUAL, target, key, targetUnion });
    const expectRev = (rev: number) => cmpOf(Compare_CompareTarget.MOD, { $case: 'modRevision', modRevision: BigInt(rev) });
    switch (op.op) {
      case 'create':
        return { cmp: cmpOf(Compare_CompareTarget.CREATE, { $case: 'createRevision', createRevision: 0n }), success: { request: { $case: 'requestPut', requestPut: { key, value: this.value(op.obj) } } }, failure };
      case 'update':
        return { cmp: expectRev(op.expectRev), success: { request: { $case: 'requestPut', requestPut: { key, value: this.value(op.obj), prevKv: true } } }, failure };
      case 'delete':
        return { cmp: op.expectRev === undefined ? null : expectRev(op.expectRev), success: { request: { $case: 'requestDeleteRange', requestDeleteRange: { key, prevKv: true } } }, failure };
    }
  }

  /** What a failed op's check found, as the error the interface promises. */
  private failure(op: TxnOp, current: KeyValue | undefined): NodenetError | null {
    const cur = current ? this.fromKv(current) : undefined;
    switch (op.op) {
      case 'create':
        return cur ? new NodenetError(ErrorCode.AlreadyExists, `${op.key} already exists`) : null;
      case 'update':
      case 'delete':
        if (op.expectRev === undefined) return cur ? null : new NodenetError(ErrorCode.NotFound, `${op.key} not found`);
        if (!cur) return new NodenetError(ErrorCode.NotFound, `${op.key} not found`);
        return cur.rev === op.expectRev ? null : new ConflictError(op.key, op.expectRev, cur);
    }
  }

  /** What one op stored, from its response at the transaction's revision. */
  private result(op: TxnOp, r: ResponseOp | undefined, rev: number): Stored | undefined {
    const res = r?.response;
    if (op.op === 'create') return this.make(op.key, op.obj, rev, rev);
    if (op.op === 'update') {
      const prev = res?.$case === 'responsePut' ? res.responsePut.prevKv : undefined;
      return this.make(op.key, op.obj, rev, prev ? Number(prev.createRevision) : rev);
    }
    const prev = res?.$case === 'responseDeleteRange' ? res.responseDeleteRange.prevKvs[0] : undefined;
    if (!prev) return undefined;
    return this.make(op.key, prev.value, rev, Number(prev.createRevision));
  }

  async txn(ops: readonly TxnOp[]): Promise<(Stored | undefined)[]> {
    this.check();
    const parts = ops.map((op) => this.parts(op));
    const res = await this.client.txn(TxnRequest.fromPartial({ compare: parts.flatMap((p) => (p.cmp ? [p.cmp] : [])), success: parts.map((p) => p.success), failure: parts.map((p) => p.failure) }));
    const rev = Number(res.header?.revision ?? 0n);
    if (!res.succeeded) {
      for (let i = 0; i < ops.length; i++) {
        const r = res.responses[i]?.response;
        const kv = r?.$case === 'responseRange' ? r.responseRange.kvs[0] : undefined;
        const err = parts[i]!.cmp ? this.failure(ops[i]!, kv) : null;
        if (err) throw new TxnFailed(i, ops[i]!, err);
      }
      // Every check holds on the versions read: the keys moved between the compare and the read. The caller retries.
      throw new TxnFailed(0, ops[0]!, new NodenetError(ErrorCode.Conflict, `${ops[0]!.key}: the transaction's checks failed on versions that changed since`));
    }
    const out = ops.map((op, i) => this.result(op, res.responses[i], rev));
    // A delete of nothing (no precondition) is no write: nothing to report.
    return out;
  }

  private async one(op: TxnOp): Promise<Stored | undefined> {
    try {
      return (await this.txn([op]))[0];
    } catch (e) {
      throw e instanceof TxnFailed ? e.cause : e;
    }
  }

  async create(key: string, obj: KObject): Promise<Stored> {
    return (await this.one({ op: 'create', key, obj }))!;
  }

  async update(key: string, obj: KObject, expectRev: number): Promise<Stored> {
    return (await this.one({ op: 'update', key, obj, expectRev }))!;
  }

  async delete(key: string, expectRev?: number): Promise<Stored> {
    const r = await this.one(expectRev === undefined ? { op: 'delete', key } : { op: 'delete', key, expectRev });
    if (!r) throw new NodenetError(ErrorCode.NotFound, `${key} not found`);
    return r;
  }

  async get(key: string, opts: { readonly rev?: number } = {}): Promise<Stored | undefined> {
    this.check();
    const res = await this.client.range({ key: this.k(key), revision: BigInt(opts.rev ?? 0) });
    return res.kvs[0] ? this.fromKv(res.kvs[0]) : undefined;
  }

  async list(prefix: string, opts: ListOptions = {}): Promise<ListResult> {
    this.check();
    const start = opts.after !== undefined ? Buffer.concat([this.k(opts.after), Buffer.from([0])]) : this.k(prefix);
    const res = await this.client.range({ key: start, rangeEnd: prefixEnd(this.k(prefix)), revision: BigInt(opts.rev ?? 0), limit: BigInt(opts.limit ?? 0) }, 30_000);
    const items = res.kvs.filter((kv) => this.keyOf(kv) !== COMPACT_KEY).map((kv) => this.fromKv(kv));
    return { items, rev: opts.rev ?? Number(res.header?.revision ?? 0n), more: res.more };
  }

  async currentRev(): Promise<number> {
    this.check();
    const res = await this.client.range({ key: this.k(COMPACT_KEY), keysOnly: true });
    return Number(res.header?.revision ?? 0n);
  }

  async compactedRev(): Promise<number> {
    this.check();
    const res = await this.client.range({ key: this.k(COMPACT_KEY) });
    const kv = res.kvs[0];
    return kv ? Number(kv.value.toString('utf8')) || 0 : 0;
  }

  /**
   * kube-apiserver's compaction round: record rev in compact_rev_key if its version is still the one this replica
   * saw, then compact etcd to it. A replica that lost the race (another compacted this round) only learns the version.
   */
  async compact(rev: number): Promise<void> {
    this.check();
    const key = this.k(COMPACT_KEY);
    const cur = await this.client.range({ key });
    const kv = cur.kvs[0];
    const done = kv ? Number(kv.value.toString('utf8')) || 0 : 0;
    const version = kv ? Number(kv.version) : 0;
    if (this.compactVersion !== -1 && this.compactVersion !== version) {
      // Another replica compacted since this one last looked: its turn this round.
      this.compactVersion = version;
      return;
    }
    if (rev <= done) {
      this.compactVersion = version;
      return;
    }
    const head = Number(cur.header?.revision ?? 0n);
    if (rev > head) rev = head;
    const res = await this.client.txn(
      TxnRequest.fromPartial({
        compare: [{ result: Compare_CompareResult.EQUAL, target: Compare_CompareTarget.VERSION, key, targetUnion: { $case: 'version', version: BigInt(version) } }],
        success: [{ request: { $case: 'requestPut', requestPut: { key, value: Buffer.from(String(rev)) } } }],
      }),
    );
    if (!res.succeeded) {
      this.compactVersion = -1;
      return;
    }
    this.compactVersion = version + 1;
    try {
      await this.client.compact({ revision: BigInt(rev), physical: false });
    } catch (e) {
      // Compacted already (by etcd's own auto-compaction, say): the history below rev is gone either way.
      if (!(e instanceof NodenetError && e.code === 'NN_ERR_EXPIRED')) throw e;
    }
    this.log.info({ rev }, 'etcd compacted');
  }

  watch(opts: StorageWatchOptions): StorageWatch {
    this.check();
    const w = new EtcdWatch(this, opts, this.log);
    this.watches.add(w);
    w.begin();
    return watchHandle(w, () => {
      w.close();
      this.watches.delete(w);
    });
  }

  /**
   * For EtcdWatch: the etcd range every watch covers, the whole keyspace (see the header): every revision reaches it
   * as an event, so its delivered mark follows the store's revision exactly, whatever the prefix it delivers.
   */
  watchRange(): { key: Buffer; rangeEnd: Buffer } {
    return { key: Buffer.from([0]), rangeEnd: Buffer.from([0]) };
  }

  /** For EtcdWatch: the storage key of an etcd key, or null when it is not one of ours under the prefix. */
  ownKey(kv: KeyValue, prefix: string): string | null {
    const full = kv.key.toString('utf8');
    if (!full.startsWith(`${this.prefix}/`)) return null;
    const key = full.slice(this.prefix.length + 1);
    if (key === COMPACT_KEY || !key.startsWith(prefix)) return null;
    return key;
  }

  /** For EtcdWatch: a stored version. */
  stored(kv: KeyValue, key: string, rev?: number): Stored {
    return this.make(key, kv.value, rev ?? Number(kv.modRevision), Number(kv.createRevision));
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    for (const w of this.watches) w.close();
    this.watches.clear();
    if (this.o.ownsClient !== false) this.client.close();
  }
}

/** One storage watch on one etcd watch stream, re-opened from the revision after the last delivered. */
class EtcdWatch {
  stopped = false;
  /** Every event up to this revision has been delivered. */
  progress: number;
  private stream: ReturnType<EtcdClient['watch']> | null = null;
  private retryMs = 100;
  private timer: NodeJS.Timeout | null = null;

  constructor(
    private readonly s: EtcdStorage,
    private readonly o: StorageWatchOptions,
    private readonly log: Logger,
  ) {
    this.progress = o.afterRev;
  }

  /**
   * Opens the watch, the first time after checking the storage's compacted revision: history at and below it is gone
   * (the interface's rule), though etcd still serves the compaction revision itself.
   */
  begin(): void {
    this.s.compactedRev().then(
      (compacted) => {
        if (this.o.afterRev < compacted) this.fail(new NodenetError(ErrorCode.Expired, `too old resource version: ${this.o.afterRev} (${compacted})`));
        else this.start();
      },
      (e: unknown) => this.fail(etcdError(e, 'watch')),
    );
  }

  start(): void {
    if (this.stopped) return;
    const client = this.s.client;
    const generation = client.generation;
    let stream: ReturnType<EtcdClient['watch']>;
    try {
      stream = client.watch();
    } catch (e) {
      return this.fail(etcdError(e, 'watch'));
    }
    this.stream = stream;
    const { key, rangeEnd } = this.s.watchRange();
    stream.on('data', (r: WatchResponse) => {
      if (this.stopped || this.stream !== stream) return;
      this.retryMs = 100;
      this.onResponse(r, stream, generation);
    });
    const broken = (why: unknown) => {
      if (this.stopped || this.stream !== stream) return;
      this.stream = null;
      this.log.debug({ [F.err]: why instanceof Error ? why.message : String(why), rev: this.progress }, 'etcd watch broken; opening it again from the last delivered revision');
      this.again();
    };
    stream.on('error', broken);
    stream.on('end', () => broken('stream ended'));
    stream.write(WatchRequest.fromPartial({ requestUnion: { $case: 'createRequest', createRequest: { key, rangeEnd, startRevision: BigInt(this.progress + 1), prevKv: true } } }));
  }

  private again(): void {
    if (this.stopped || this.timer) return;
    const ms = this.retryMs;
    this.retryMs = Math.min(this.retryMs * 2, 2000);
    this.timer = setTimeout(() => {
      this.timer = null;
      this.start();
    }, ms);
  }

  private onResponse(r: WatchResponse, stream: ReturnType<EtcdClient['watch']>, generation: number): void {
    if (r.canceled) {
      this.stream = null;
      stream.cancel();
      if (r.compactRevision > 0n) {
        return this.fail(new NodenetError(ErrorCode.Expired, `too old resource version: ${this.progress + 1} (${Number(r.compactRevision)})`));
      }
      if (/no leader/i.test(r.cancelReason)) {
        // This member is cut off from its leader (etcd's WithRequireLeader): another may serve.
        if (this.s.client.generation === generation) this.s.client.rotate();
        return this.again();
      }
      if (r.created || r.cancelReason) return this.fail(new NodenetError(ErrorCode.Store, `etcd watch canceled: ${r.cancelReason || 'no reason given'}`));
      return this.again();
    }
    if (!r.events.length) return; // created, or a progress notification: not trusted (etcd#15220)
    const out: StoreEvent[] = [];
    let last = this.progress;
    for (const ev of r.events) {
      const kv = ev.kv;
      if (!kv) continue;
      const rev = Number(kv.modRevision);
      if (rev <= this.progress) continue; // never twice
      last = Math.max(last, rev);
      const key = this.s.ownKey(kv, this.o.prefix);
      if (key === null) continue;
      const prev = ev.prevKv ? this.s.stored(ev.prevKv, key) : null;
      if (ev.type === Event_EventType.DELETE) {
        if (!prev) {
          return this.fail(new NodenetError(ErrorCode.Expired, `the version of ${key} before its deletion at ${rev} is compacted: list again`));
        }
        out.push({ type: 'DELETED', rev, key, cur: this.s.stored(ev.prevKv!, key, rev), prev });
      } else {
        out.push({ type: kv.createRevision === kv.modRevision ? 'ADDED' : 'MODIFIED', rev, key, cur: this.s.stored(kv, key), prev });
      }
    }
    for (const e of out) {
      if (this.stopped) return;
      try {
        this.o.onEvent(e);
      } catch {
        this.close();
        return;
      }
    }
    this.progress = last;
  }

  private fail(err: NodenetError): void {
    if (this.stopped) return;
    this.close();
    this.o.onError(err);
  }

  close(): void {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    const s = this.stream;
    this.stream = null;
    s?.cancel();
  }
}
