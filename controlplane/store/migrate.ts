/**
 * controlplane/store/migrate: `nodenet control-plane migrate`, every object
 * of one store copied into another through the storage interface
 * (storage.ts): a stopped control plane's SQLite database into etcd.
 *
 * - One revision of the source: every page is listed at the revision the
 *   migration started at, so the copy is one consistent cut (the SQLite
 *   source is also locked and read-only: sqlite-readonly.ts).
 * - The source is never written. The target is written only with
 *   create-if-absent, in transactions of up to 64 objects and 1 MiB (etcd
 *   refuses more than 128 operations or 1.5 MiB in one request by
 *   default), so a key someone else wrote meanwhile stops the migration
 *   rather than being overwritten.
 * - A target that already holds objects is refused, unless the caller
 *   allows it: then a key holding the same object (the body, without its
 *   resourceVersion) is skipped, and a key holding a different one stops
 *   the migration before anything is written. Running a migration that
 *   failed half-way again with it allowed finishes the job.
 * - Objects keep everything (uid, creationTimestamp, generation, owner
 *   references, finalizers) but their resourceVersion: the target hands
 *   out its own revisions, so they restart, and objects copied in one
 *   transaction share one. Clients must list again afterwards, as after
 *   k3s's move from SQLite to etcd.
 * - Everything comes along, the allocation objects (IPAddresses) and the
 *   controllers' claims (pod CIDRs, load-balancer IPs) included: they are
 *   objects like the others. The history is not copied.
 * - At the end the target is read back at its revision and compared with
 *   the source, key by key; the counts per resource are the report.
 */
import { join } from 'node:path';
import { ErrorCode, NodenetError } from '../../lib/errors/errors.js';
import { EtcdClient, parseEtcdEndpoints } from './etcd/client.js';
import { EtcdStorage } from './etcd/etcd-storage.js';
import { openSqliteReadOnly } from './sqlite-readonly.js';
import { TxnFailed, type Storage, type TxnOp } from './storage.js';
import { grOf, type KObject, type Stored } from './types.js';

export interface MigrateOptions {
  /** Objects per page listed from either store (default 500, at least 2). */
  readonly pageSize?: number;
  /** Objects per transaction on the target (default 64). */
  readonly batch?: number;
  /** Bytes of objects per transaction on the target (default 1 MiB); a larger object goes alone. */
  readonly batchBytes?: number;
  /** The target may hold objects already (see the header). */
  readonly allowNonEmpty?: boolean;
  /** After each transaction: objects copied and skipped so far. */
  readonly onProgress?: (p: { readonly copied: number; readonly skipped: number }) => void;
  /** Milliseconds, for the report's duration (default performance.now). */
  readonly now?: () => number;
}

export interface ResourceCount {
  /** The group-resource (`services`, `endpointslices.discovery.k8s.io`, `ipaddresses.networking.k8s.io`, ...). */
  readonly resource: string;
  readonly copied: number;
  /** Already in the target, the same (only when a non-empty target was allowed). */
  readonly skipped: number;
}

export interface MigrationReport {
  /** The source's revision: what was copied is the source as it was then. */
  readonly sourceRev: number;
  /** The target's revision before and after. */
  readonly targetRevBefore: number;
  readonly targetRev: number;
  readonly copied: number;
  readonly skipped: number;
  /** Keys in the target that the source lacks (left alone; only when a non-empty target was allowed). */
  readonly extra: number;
  /** Source objects found in the target, the same, when it was read back. */
  readonly verified: number;
  /** Transactions written to the target. */
  readonly transactions: number;
  /** Sorted by resource. */
  readonly resources: readonly ResourceCount[];
  readonly ms: number;
}

const DEFAULT_PAGE = 500;
const DEFAULT_BATCH = 64;
const DEFAULT_BATCH_BYTES = 1 << 20;

/** An object as compared between stores: its JSON without metadata.resourceVersion (which each store sets its own). */
export function bodyOf(o: Readonly<KObject>): string {
  const { resourceVersion: _rv, ...meta } = o.metadata ?? {};
  return JSON.stringify({ ...o, metadata: meta });
}

/** Every object under the storage, in key order, listed page by page at one revision (the first page's, when none is given). */
export async function* walk(s: Storage, pageSize: number, rev?: number): AsyncGenerator<Stored> {
  let at = rev;
  let after: string | undefined;
  for (;;) {
    const page = await s.list('', { limit: pageSize, ...(at !== undefined ? { rev: at } : {}), ...(after !== undefined ? { after } : {}) });
    at ??= page.rev;
    for (const item of page.items) yield item;
    const last = page.items[page.items.length - 1];
    if (!page.more || !last) return;
    after = last.key;
  }
}

/** Walks two key-ordered sequences side by side: each key once, with what each side holds. */
async function merge(a: AsyncGenerator<Stored>, b: AsyncGenerator<Stored>, each: (key: string, a: Stored | undefined, b: Stored | undefined) => void): Promise<void> {
  let x = await a.next();
  let y = await b.next();
  while (!x.done || !y.done) {
    if (!x.done && (y.done || x.value.key < y.value.key)) {
      each(x.value.key, x.value, undefined);
      x = await a.next();
    } else if (x.done || y.value.key < x.value.key) {
      each(y.value.key, undefined, y.value);
      y = await b.next();
    } else {
      each(x.value.key, x.value, y.value);
      x = await a.next();
      y = await b.next();
    }
  }
}

const few = (keys: readonly string[]) => `${keys.slice(0, 5).join(', ')}${keys.length > 5 ? ` and ${keys.length - 5} more` : ''}`;

/**
 * Copies every object of `source` (at its current revision) into `target`. Neither is closed.
 * @throws AlreadyExists when the target holds objects and that was not allowed; Conflict when an allowed non-empty
 *   target holds a different object under a key the source has; the target's error when a write fails (what was
 *   copied before stays: run again with a non-empty target allowed); Store when the read-back differs
 */
export async function migrateStorage(source: Storage, target: Storage, o: MigrateOptions = {}): Promise<MigrationReport> {
  const now = o.now ?? (() => performance.now());
  const t0 = now();
  const pageSize = Math.max(2, o.pageSize ?? DEFAULT_PAGE);
  const batchMax = Math.max(1, o.batch ?? DEFAULT_BATCH);
  const batchBytes = o.batchBytes ?? DEFAULT_BATCH_BYTES;
  const sourceRev = await source.currentRev();
  const targetRevBefore = await target.currentRev();

  // The target: empty, or (when allowed) holding nothing that contradicts the source.
  const skip = new Set<string>();
  let extra = 0;
  const first = await target.list('', { limit: 2 });
  if (first.items.length || first.more) {
    if (!o.allowNonEmpty) {
      throw new NodenetError(ErrorCode.AlreadyExists, `the target already holds objects (${first.items[0]?.key ?? 'several'}${first.more ? ' and more' : ''}): ` +
        'migrate into an empty one (another --etcd-prefix, or delete what is there), or allow a non-empty target to go on with a migration that stopped half-way');
    }
    const differ: string[] = [];
    await merge(walk(source, pageSize, sourceRev), walk(target, pageSize), (key, s, t) => {
      if (s && t) {
        if (bodyOf(s.object) === bodyOf(t.object)) skip.add(key);
        else differ.push(key);
      } else if (t) extra++;
    });
    if (differ.length) {
      throw new NodenetError(ErrorCode.Conflict, `the target holds ${differ.length} object(s) that differ from the source's: ${few(differ)}; nothing was written`);
    }
  }

  // The copy: create-if-absent, in batches.
  const counts = new Map<string, { copied: number; skipped: number }>();
  const count = (key: string) => {
    const gr = grOf(key);
    let c = counts.get(gr);
    if (!c) counts.set(gr, (c = { copied: 0, skipped: 0 }));
    return c;
  };
  let copied = 0;
  let transactions = 0;
  let batch: TxnOp[] = [];
  let bytes = 0;
  const flush = async () => {
    if (!batch.length) return;
    const ops = batch;
    batch = [];
    bytes = 0;
    try {
      await target.txn(ops);
    } catch (e) {
      const err = e instanceof TxnFailed ? e.cause : e;
      const why = err instanceof Error ? err.message : String(err);
      const code = err instanceof NodenetError ? err.code : ErrorCode.Store;
      throw new NodenetError(code, `writing ${ops.length} object(s) (${ops[0]!.key} .. ${ops[ops.length - 1]!.key}) failed after ${copied} were copied: ${why}. ` +
        'Run the migration again with a non-empty target allowed to go on', { cause: e });
    }
    transactions++;
    copied += ops.length;
    for (const op of ops) count(op.key).copied++;
    o.onProgress?.({ copied, skipped: skip.size });
  };
  for await (const s of walk(source, pageSize, sourceRev)) {
    if (skip.has(s.key)) {
      count(s.key).skipped++;
      continue;
    }
    if (batch.length >= batchMax || (batch.length && bytes + s.json.length > batchBytes)) await flush();
    batch.push({ op: 'create', key: s.key, obj: s.object as KObject });
    bytes += s.json.length;
  }
  await flush();

  // Read back: every source object in the target, the same.
  const targetRev = await target.currentRev();
  let verified = 0;
  const missing: string[] = [];
  const differ: string[] = [];
  await merge(walk(source, pageSize, sourceRev), walk(target, pageSize, targetRev), (key, s, t) => {
    if (!s) return;
    if (!t) missing.push(key);
    else if (bodyOf(s.object) !== bodyOf(t.object)) differ.push(key);
    else verified++;
  });
  if (missing.length || differ.length) {
    throw new NodenetError(ErrorCode.Store, `reading the target back at revision ${targetRev}: ${missing.length ? `${missing.length} object(s) missing (${few(missing)})` : ''}` +
      `${missing.length && differ.length ? '; ' : ''}${differ.length ? `${differ.length} different (${few(differ)})` : ''}: was it written to during the migration?`);
  }
  const resources = [...counts].map(([resource, c]) => ({ resource, ...c })).sort((a, b) => (a.resource < b.resource ? -1 : a.resource > b.resource ? 1 : 0));
  return { sourceRev, targetRevBefore, targetRev, copied, skipped: skip.size, extra, verified, transactions, resources, ms: now() - t0 };
}

export interface SqliteToEtcd extends Omit<MigrateOptions, 'now'> {
  /** The SQLite control plane's data directory (its state.db). */
  readonly dir: string;
  /** etcd:URL[,URL...] without the `etcd:`. */
  readonly endpoints: string;
  /** The etcd key prefix (default /registry). */
  readonly prefix?: string;
}

/**
 * `nodenet control-plane migrate --from sqlite:DIR --to etcd:URL`: the SQLite database opened read-only under its
 * lock (refused while a control plane runs on it), etcd through the etcd backend; both closed at the end.
 */
export async function migrateSqliteToEtcd(a: SqliteToEtcd): Promise<MigrationReport> {
  const source = openSqliteReadOnly(join(a.dir, 'state.db'));
  try {
    const target = new EtcdStorage({ client: new EtcdClient({ endpoints: parseEtcdEndpoints(a.endpoints), timeoutMs: 30_000 }), prefix: a.prefix ?? '/registry' });
    try {
      return await migrateStorage(source, target, a);
    } finally {
      await target.close();
    }
  } finally {
    await source.close();
  }
}
