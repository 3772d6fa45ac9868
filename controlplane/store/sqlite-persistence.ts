/**
 * controlplane/store/sqlite-persistence: LocalStorage's disk, one SQLite file.
 *
 *   objects(id, key UNIQUE, rev, create_rev, value)    the current state
 *   events(rev PRIMARY KEY, key, type, create_rev, value, prev_rev, prev)
 *                                                      the history window
 *   meta(name PRIMARY KEY, value)                      'rev': a high-water mark, written by compaction
 *                                                      'compacted': history gone up to here
 *
 * WAL with synchronous=FULL: a commit returns once its WAL frames are
 * fsynced, so an acknowledged write survives a crash or a power loss
 * (synchronous=NORMAL, kine's setting, survives only a process crash).
 * LocalStorage commits a whole batch per transaction, so one fsync covers every
 * write accepted in an event-loop turn. A revision is never handed out
 * twice: the highest one committed is the newest history row's, and when
 * compaction removes the rows that carried it, the compaction's own
 * transaction records it as the high-water mark first. (Until 2026-12-04
 * every commit wrote the mark: one more page in every fsynced WAL frame set.)
 *
 * The objects table is a rowid table with a unique index on the key (schema
 * 2): a write appends its row and inserts a small entry into the key's
 * index. As a WITHOUT ROWID table keyed by the key (schema 1, until
 * 2026-12-05) every insert at a random key (a ClusterIP's allocation
 * object, `ipaddresses.networking.k8s.io//<random address>`) split and
 * rewrote a leaf of whole rows: measured on 24,000 creates in batches of 16,
 * 0.125 ms per Service create with its IPAddress against 0.071 ms now.
 * A schema-1 database is rebuilt to schema 2 when it is opened.
 *
 * One process owns a database: LocalStorage above decides revisions in memory,
 * so two processes on one file would hand out the same ones. Opening takes
 * an exclusive flock on `<file>.lock` (the kernel drops it when the process
 * dies, even by SIGKILL) and a second opener is refused, naming the pid
 * that holds it; close() releases it.
 */
import Database from 'better-sqlite3';
import { closeSync, ftruncateSync, mkdirSync, openSync, readFileSync, writeSync } from 'node:fs';
import { dirname } from 'node:path';
import { ErrorCode, NodenetError } from '../../lib/errors/errors.js';
import { tryLockExclusive } from '../../lib/state/flock.js';
import type { EventType } from './types.js';
import type { Loaded, PersistedEvent, PersistedObject, Persistence } from './persistence.js';

const TYPES: readonly EventType[] = ['ADDED', 'MODIFIED', 'DELETED'];
const SCHEMA_VERSION = 2;

/** A row of the events table (also read by sqlite-readonly.ts). */
export interface EventRow {
  rev: number;
  key: string;
  type: number;
  create_rev: number;
  value: string;
  prev_rev: number;
  prev: string | null;
}

export interface SqliteOptions {
  /** fsync each commit (default true). Off only for throwaway stores. */
  readonly durable?: boolean;
}

export class SqlitePersistence implements Persistence {
  private readonly db: Database.Database;
  private readonly stmts;
  private readonly commitTx: (events: readonly PersistedEvent[]) => void;
  /** The open lock file; its flock is this process's claim on the database. */
  private lockFd: number | null;

  constructor(readonly file: string, opts: SqliteOptions = {}) {
    try {
      mkdirSync(dirname(file), { recursive: true, mode: 0o700 });
    } catch (e) {
      throw storeError(`opening ${file}`, e);
    }
    this.lockFd = lockDatabase(file);
    try {
      this.db = new Database(file);
      this.db.pragma('journal_mode = WAL');
      this.db.pragma(`synchronous = ${opts.durable === false ? 'OFF' : 'FULL'}`);
      this.db.pragma('foreign_keys = OFF');
      this.migrate();
    } catch (e) {
      this.unlock();
      throw storeError(`opening ${file}`, e);
    }
    const db = this.db;
    this.stmts = {
      upsert: db.prepare('INSERT INTO objects(key, rev, create_rev, value) VALUES (?, ?, ?, ?) ON CONFLICT(key) DO UPDATE SET rev = excluded.rev, create_rev = excluded.create_rev, value = excluded.value'),
      remove: db.prepare('DELETE FROM objects WHERE key = ?'),
      event: db.prepare('INSERT INTO events(rev, key, type, create_rev, value, prev_rev, prev) VALUES (?, ?, ?, ?, ?, ?, ?)'),
      setMeta: db.prepare('INSERT INTO meta(name, value) VALUES (?, ?) ON CONFLICT(name) DO UPDATE SET value = excluded.value'),
      getMeta: db.prepare('SELECT value FROM meta WHERE name = ?').pluck(),
      after: db.prepare('SELECT * FROM events WHERE rev > ? ORDER BY rev LIMIT ?'),
      objects: db.prepare('SELECT key, rev, create_rev, value FROM objects'),
      compact: db.prepare('DELETE FROM events WHERE rev <= ?'),
      maxRev: db.prepare('SELECT max(m) FROM (SELECT max(rev) AS m FROM events UNION ALL SELECT max(rev) FROM objects)').pluck(),
    };
    this.commitTx = db.transaction((events: readonly PersistedEvent[]) => {
      for (const e of events) {
        if (e.type === 'DELETED') this.stmts.remove.run(e.key);
        else this.stmts.upsert.run(e.key, e.rev, e.createRev, e.json);
        this.stmts.event.run(e.rev, e.key, TYPES.indexOf(e.type), e.createRev, e.json, e.prevRev, e.prevJson);
      }
    });
  }

  private migrate(): void {
    this.db.exec(`CREATE TABLE IF NOT EXISTS meta (name TEXT PRIMARY KEY, value INTEGER NOT NULL) WITHOUT ROWID;`);
    const v = this.db.prepare("SELECT value FROM meta WHERE name = 'schema'").pluck().get() as number | undefined;
    if (v !== undefined && v !== 1 && v !== SCHEMA_VERSION) throw new Error(`database schema ${v}; this nodenet reads schema ${SCHEMA_VERSION} (and rebuilds schema 1)`);
    this.db.transaction(() => {
      if (v === 1) {
        // Schema 1 kept the objects in a WITHOUT ROWID table keyed by the key: rebuilt as schema 2's, rows unchanged.
        this.db.exec(`
          CREATE TABLE objects2 (id INTEGER PRIMARY KEY, key TEXT NOT NULL UNIQUE, rev INTEGER NOT NULL, create_rev INTEGER NOT NULL, value TEXT NOT NULL);
          INSERT INTO objects2(key, rev, create_rev, value) SELECT key, rev, create_rev, value FROM objects ORDER BY key;
          DROP TABLE objects;
          ALTER TABLE objects2 RENAME TO objects;
        `);
      }
      this.db.exec(`
        CREATE TABLE IF NOT EXISTS objects (id INTEGER PRIMARY KEY, key TEXT NOT NULL UNIQUE, rev INTEGER NOT NULL, create_rev INTEGER NOT NULL, value TEXT NOT NULL);
        CREATE TABLE IF NOT EXISTS events (rev INTEGER PRIMARY KEY, key TEXT NOT NULL, type INTEGER NOT NULL, create_rev INTEGER NOT NULL,
                                           value TEXT NOT NULL, prev_rev INTEGER NOT NULL, prev TEXT);
      `);
      this.db.prepare("INSERT INTO meta(name, value) VALUES ('schema', ?) ON CONFLICT(name) DO UPDATE SET value = excluded.value").run(SCHEMA_VERSION);
    })();
  }

  load(): Loaded {
    try {
      const objects: PersistedObject[] = (this.stmts.objects.all() as { key: string; rev: number; create_rev: number; value: string }[]).map((r) => ({
        key: r.key, rev: r.rev, createRev: r.create_rev, json: r.value,
      }));
      const hw = (this.stmts.getMeta.get('rev') as number | undefined) ?? 0;
      const rev = Math.max(hw, (this.stmts.maxRev.get() as number | null) ?? 0);
      const compacted = (this.stmts.getMeta.get('compacted') as number | undefined) ?? 0;
      return { objects, rev, compacted };
    } catch (e) {
      throw storeError('loading', e);
    }
  }

  commit(events: readonly PersistedEvent[]): void {
    if (!events.length) return;
    try {
      this.commitTx(events);
    } catch (e) {
      throw storeError(`committing ${events.length} write(s)`, e);
    }
  }

  readEvents(afterRev: number, limit: number): PersistedEvent[] {
    try {
      return (this.stmts.after.all(afterRev, limit) as EventRow[]).map(eventOf);
    } catch (e) {
      throw storeError('reading the history', e);
    }
  }

  compact(rev: number): void {
    try {
      this.db.transaction(() => {
        // Every row above rev stays, so the highest revision ever committed is either still a row's or at most rev.
        const hw = (this.stmts.getMeta.get('rev') as number | undefined) ?? 0;
        if (rev > hw) this.stmts.setMeta.run('rev', rev);
        this.stmts.compact.run(rev);
        this.stmts.setMeta.run('compacted', rev);
      })();
    } catch (e) {
      throw storeError('compacting', e);
    }
  }

  close(): void {
    if (this.db.open) this.db.close();
    this.unlock();
  }

  private unlock(): void {
    if (this.lockFd === null) return;
    closeSync(this.lockFd);
    this.lockFd = null;
  }
}

/**
 * Takes the database's lock: an exclusive flock on `<file>.lock`, which then holds this process's pid. The refusal
 * reads `<file> is in use by <holder> (pid N): <advice>` (sqlite-readonly.ts takes the same lock, with its own words).
 * @returns the open lock file (closing it releases the lock)
 * @throws StoreLocked when another process holds it; Store when the lock file cannot be opened
 */
export function lockDatabase(
  file: string,
  holder = 'another nodenet control plane',
  advice = 'one process owns a data directory (stop it, or give this one another --data-dir)',
): number {
  const path = `${file}.lock`;
  let fd: number;
  try {
    fd = openSync(path, 'a+', 0o600);
  } catch (e) {
    throw storeError(`opening the lock ${path}`, e);
  }
  let locked: boolean;
  try {
    locked = tryLockExclusive(fd);
  } catch (e) {
    closeSync(fd);
    throw storeError(`locking ${path}`, e);
  }
  if (!locked) {
    const pid = readFileSync(path, 'utf8').trim();
    closeSync(fd);
    throw new NodenetError(ErrorCode.StoreLocked, `${file} is in use by ${holder}${/^\d+$/.test(pid) ? ` (pid ${pid})` : ''}: ${advice}`);
  }
  ftruncateSync(fd, 0);
  writeSync(fd, `${process.pid}\n`);
  return fd;
}

export function eventOf(r: EventRow): PersistedEvent {
  return { rev: r.rev, key: r.key, type: TYPES[r.type]!, createRev: r.create_rev, json: r.value, prevRev: r.prev_rev, prevJson: r.prev };
}

export function storeError(what: string, e: unknown): NodenetError {
  return new NodenetError(ErrorCode.Store, `sqlite: ${what}: ${e instanceof Error ? e.message : String(e)}`, { cause: e });
}
