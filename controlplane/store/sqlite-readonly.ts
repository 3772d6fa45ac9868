/**
 * controlplane/store/sqlite-readonly: a control plane's SQLite database
 * (sqlite-persistence.ts's schema 1 or 2) opened for reading only, the
 * source of `nodenet control-plane migrate`.
 *
 * - Read-only all the way down: SQLite opens the file with
 *   SQLITE_OPEN_READONLY, so nothing in state.db or its WAL can change
 *   (SQLite may make the `-shm` index of the WAL, which holds no data).
 *   A WAL left by a killed control plane is read, not checkpointed.
 * - The same lock as a control plane's (an exclusive flock on
 *   `state.db.lock`): a database a running control plane holds is refused
 *   (StoreLocked, naming its pid), and a control plane started during the
 *   migration is refused in turn, so the source stays at one revision.
 * - LocalStorage over it is a Storage whose writes fail: the migration
 *   reads it through the interface, like any other backend.
 */
import Database from 'better-sqlite3';
import { closeSync, existsSync } from 'node:fs';
import { ErrorCode, NodenetError } from '../../lib/errors/errors.js';
import { LocalStorage } from './local-storage.js';
import type { Loaded, PersistedEvent, Persistence } from './persistence.js';
import { eventOf, lockDatabase, storeError, type EventRow } from './sqlite-persistence.js';

export class ReadOnlySqlitePersistence implements Persistence {
  private readonly db: Database.Database;
  private lockFd: number | null;

  /** @throws InvalidConfig when there is no database at `file`; StoreLocked when a control plane holds it; Store when it is not a nodenet database */
  constructor(readonly file: string) {
    if (!existsSync(file)) throw new NodenetError(ErrorCode.InvalidConfig, `${file}: no such database (a control plane's data directory holds state.db)`);
    // The control plane's own lock, taken the same way: a running one is refused, and one started now is refused in turn.
    this.lockFd = lockDatabase(file, 'a running nodenet control plane', 'stop it first, so that nothing is written during the migration');
    try {
      this.db = new Database(file, { readonly: true, fileMustExist: true });
      const schema = this.db.prepare("SELECT value FROM meta WHERE name = 'schema'").pluck().get() as number | undefined;
      if (schema !== 1 && schema !== 2) throw new Error(`schema ${String(schema)}; this nodenet reads schemas 1 and 2`);
    } catch (e) {
      this.unlock();
      throw new NodenetError(ErrorCode.Store, `sqlite: opening ${file} read-only: ${e instanceof Error ? e.message : String(e)} (is it a nodenet control plane's state.db?)`, { cause: e });
    }
  }

  load(): Loaded {
    try {
      const objects = (this.db.prepare('SELECT key, rev, create_rev, value FROM objects').all() as { key: string; rev: number; create_rev: number; value: string }[]).map((r) => ({
        key: r.key, rev: r.rev, createRev: r.create_rev, json: r.value,
      }));
      const meta = (name: string) => (this.db.prepare('SELECT value FROM meta WHERE name = ?').pluck().get(name) as number | undefined) ?? 0;
      const maxRev = (this.db.prepare('SELECT max(m) FROM (SELECT max(rev) AS m FROM events UNION ALL SELECT max(rev) FROM objects)').pluck().get() as number | null) ?? 0;
      return { objects, rev: Math.max(meta('rev'), maxRev), compacted: meta('compacted') };
    } catch (e) {
      throw storeError(`reading ${this.file}`, e);
    }
  }

  commit(): void {
    throw new NodenetError(ErrorCode.Store, `sqlite: ${this.file} is open read-only`);
  }

  readEvents(afterRev: number, limit: number): PersistedEvent[] {
    try {
      return (this.db.prepare('SELECT * FROM events WHERE rev > ? ORDER BY rev LIMIT ?').all(afterRev, limit) as EventRow[]).map(eventOf);
    } catch (e) {
      throw storeError(`reading the history of ${this.file}`, e);
    }
  }

  compact(): void {
    throw new NodenetError(ErrorCode.Store, `sqlite: ${this.file} is open read-only`);
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

/** A control plane's database, read-only, as a Storage (its writes fail). @throws as ReadOnlySqlitePersistence */
export function openSqliteReadOnly(file: string): LocalStorage {
  const p = new ReadOnlySqlitePersistence(file);
  try {
    return new LocalStorage({ persistence: p, kind: 'sqlite' });
  } catch (e) {
    p.close();
    throw e;
  }
}
