/**
 * ipam/store: the persistence contract the pure allocator works against
 * (host-local's backend.Store, reshaped for async Node).
 *
 * A store holds, for one CNI network, a set of reservations: IP -> the
 * attachment (containerID, ifName) that holds it, plus one "last reserved IP"
 * hint per range set (round-robin cursor). An IP is held by at most one
 * attachment at any time; that is the invariant every implementation keeps.
 *
 * Locking: callers run whole operations (allocate, release, GC) inside
 * `withLock`. Mutating methods (`reserve`, `release`, `releaseByID`) have the
 * PRECONDITION that the caller is inside `withLock` of the same store;
 * implementations check it and throw rather than race. Reads may run outside
 * the lock but then only see a snapshot that may already be stale.
 */
import type { IPv4 } from '../../../lib/net/ip.js';
import { storeMisuse } from './ipam-errors.js';

/** One attachment, CNI's primary key for an ADD: (containerID, ifName). */
export interface Attachment {
  readonly id: string;
  readonly ifName: string;
}

/** One reservation as stored. `ifName` is '' for a legacy record (containerID only). */
export interface Reservation extends Attachment {
  readonly ip: IPv4;
}

export interface Store {
  /**
   * Run `fn` holding the store's exclusive lock (in-process and, for the disk
   * store, across processes). The lock is released when `fn` settles, also on
   * throw. Not reentrant: calling withLock from inside `fn` throws instead of
   * deadlocking. Waiters are served in FIFO order.
   */
  withLock<T>(fn: () => Promise<T>): Promise<T>;

  /**
   * Reserve `ip` for (id, ifName) and record it as range set `rangeId`'s last
   * reserved IP. Returns false, changing nothing, if `ip` is already held by
   * anyone (including the same attachment). Atomic: after a crash the
   * reservation either exists completely or not at all.
   * Precondition: inside withLock; id and ifName non-empty, without CR/LF.
   */
  reserve(id: string, ifName: string, ip: IPv4, rangeId: string): Promise<boolean>;

  /** The last IP reserved for range set `rangeId`, or undefined if none (or unreadable: it is only a hint). */
  lastReservedIP(rangeId: string): Promise<IPv4 | undefined>;

  /** Release `ip` whoever holds it. Idempotent: an unknown IP is a no-op. Precondition: inside withLock. */
  release(ip: IPv4): Promise<void>;

  /**
   * Release every IP held by (id, ifName), including legacy records holding
   * `id` with no ifName. Idempotent: returns [] when nothing matched.
   * Returns the released IPs in ascending order. Precondition: inside withLock.
   */
  releaseByID(id: string, ifName: string): Promise<IPv4[]>;

  /** IPs held by (id, ifName) (legacy records of `id` included), ascending. */
  getByID(id: string, ifName: string): Promise<IPv4[]>;

  /** Every reservation, ascending by IP. Records with unreadable owners come back with id ''. */
  listAll(): Promise<Reservation[]>;
}

/** Whether a stored record belongs to (id, ifName); a legacy record ('' ifName) matches any ifName of its id. */
export function reservationMatches(r: Attachment, id: string, ifName: string): boolean {
  return r.id === id && (r.ifName === ifName || r.ifName === '');
}

/**
 * The owner rule every store enforces: a container id that is non-empty,
 * trimmed and single-line, and an ifName without whitespace or '/', so the
 * record survives host-local's "<id>\r\n<ifName>" file format.
 */
export function assertValidOwner(id: string, ifName: string): void {
  if (id === '' || id !== id.trim() || /[\r\n]/.test(id)) throw storeMisuse(`invalid container id ${JSON.stringify(id)}`);
  if (ifName === '' || /[\s/]/.test(ifName)) throw storeMisuse(`invalid ifName ${JSON.stringify(ifName)}`);
}
