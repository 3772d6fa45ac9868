/**
 * controlplane/store/persistence: what LocalStorage needs from a disk.
 * LocalStorage holds the current objects in memory and decides everything
 * (revisions, preconditions, who sees what); a Persistence only makes a
 * batch of changes durable in one transaction, gives them back after a
 * restart, and keeps the history window. Two implementations: SQLite
 * (sqlite-persistence.ts) and a validating in-memory fake
 * (persistence.fake.ts) for unit tests, which also injects failures.
 */
import type { EventType } from './types.js';

/** A row of the current state. */
export interface PersistedObject {
  readonly key: string;
  readonly rev: number;
  readonly createRev: number;
  readonly json: string;
}

/** A row of the history: the change made at `rev`. `prevJson` is the version it replaced (null for ADDED). */
export interface PersistedEvent {
  readonly rev: number;
  readonly key: string;
  readonly type: EventType;
  readonly createRev: number;
  readonly json: string;
  readonly prevRev: number;
  readonly prevJson: string | null;
}

export interface Loaded {
  readonly objects: readonly PersistedObject[];
  /** The highest revision ever committed (0 for a new database). */
  readonly rev: number;
  /** History up to and including this revision is gone. */
  readonly compacted: number;
}

export interface Persistence {
  /** Reads the current state. */
  load(): Loaded;
  /**
   * Makes `events` (ascending revisions, all above every revision committed
   * before) durable in one transaction: the objects they leave and the
   * history rows. Synchronous; when it throws, nothing of the batch is stored.
   */
  commit(events: readonly PersistedEvent[]): void;
  /** History rows with rev > afterRev, ascending, at most `limit`. */
  readEvents(afterRev: number, limit: number): PersistedEvent[];
  /**
   * Drops history rows with rev <= rev and records the new compacted revision, and rev as the high-water mark
   * (load()'s `rev` never falls below a revision once committed, even when no row carries it any more).
   */
  compact(rev: number): void;
  close(): void;
}
