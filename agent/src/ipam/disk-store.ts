/**
 * ipam/disk-store: the Store on disk, in host-local's layout, made crash-safe.
 *
 *   <dataDir>/<network>/
 *     10.244.1.2              one file per reserved IP: "<containerID>\r\n<ifName>"
 *     last_reserved_ip.0      the round-robin cursor of range set 0
 *     lock                    flock(2) target; its content is irrelevant
 *     .tmp-*                  in-flight writes; orphans of a crash, swept under the lock
 *
 * Crash safety (kill -9 at any instant):
 * - A reservation is written to a private tmp file, fsynced, then link()ed to
 *   its IP name. link() is atomic and fails with EEXIST if the name exists, so
 *   the IP file appears complete or not at all, and never twice. host-local's
 *   O_EXCL create-then-write has a window where the file exists but is empty;
 *   this layout has none.
 * - A crash leaves at most an orphan tmp file (not an IP name, so it holds
 *   nothing); the next process sweeps it when it first takes the lock, and so
 *   does every listAll() under the lock (i.e. every GC).
 * - A crash between link() and the caller learning the result leaves a
 *   complete reservation for that (id, ifName): a retried ADD returns it, and
 *   DEL or GC releases it like any other.
 * - The cursor file is overwritten in place (it is a hint); an unreadable
 *   cursor is ignored (round-robin restarts, nothing else).
 * - The lock is flock(2): the kernel drops it when its holder dies, so there
 *   is no stale lock to clean up. An in-process FIFO mutex sits in front.
 * - fsync: the tmp file before link, and the directory after it, so a
 *   reservation the agent has reported is durable. Releases are not fsynced:
 *   losing one to a power cut only leaks an address until GC.
 *
 * I/O style: metadata calls (open, link, unlink, readdir, reading a few-byte
 * file) are synchronous: each is a few microseconds on a local disk, while a
 * promise-API call costs a thread-pool round trip (60-400 us measured here
 * under load). Only fsync, which can take milliseconds, goes through the
 * thread pool. Every ADD lists the directory (idempotency check), as
 * host-local does, but reads only the reservation files it has not read
 * before: a reservation's owner never changes while its file exists (it is
 * written once and linked, then unlinked), so the owners of names still
 * listed are remembered. Measured before that, on this 2-core VM under
 * load: a scan of 300 reservations ~1.6 ms, an ADD ~2 ms (fsync off) to
 * ~4 ms (fsync on). A release re-reads the one file it removes and leaves
 * it when another owner has taken the name meanwhile (another process
 * released and re-reserved it).
 */
import {
  closeSync,
  constants as fsc,
  fsync,
  ftruncateSync,
  linkSync,
  lstatSync,
  mkdirSync,
  openSync,
  readdirSync,
  readFileSync,
  unlinkSync,
  writeSync,
} from 'node:fs';
import { promisify } from 'node:util';
import { join } from 'node:path';
import { ipToInt, isIPv4, type IPv4 } from '../../../lib/net/ip.js';
import { NodenetError } from '../../../lib/errors/errors.js';
import { parseNetworkName } from './config.js';
import { lockExclusive } from './flock.js';
import { ipamStoreError, storeMisuse } from './ipam-errors.js';
import { StoreLock } from './store-lock.js';
import { assertValidOwner, reservationMatches, type Reservation, type Store } from './store.js';

export const LOCK_FILE = 'lock';
export const LAST_RESERVED_PREFIX = 'last_reserved_ip.';
export const TMP_PREFIX = '.tmp-';
const RANGE_ID_RE = /^[A-Za-z0-9_.-]+$/;

export interface DiskStoreOptions {
  /** fsync each reservation and the directory (default true). Off only for throwaway stores. */
  readonly fsync?: boolean;
  /** How long withLock waits for a lock held by another process before TryAgainLater (default 10000). */
  readonly lockTimeoutMs?: number;
}

/** Format of one reservation file (host-local's). */
export function formatReservation(id: string, ifName: string): string {
  return `${id}\r\n${ifName}`;
}

/** Parse a reservation file; an empty or unreadable one yields id '' (held by nobody known, so GC releases it). */
export function parseReservation(text: string): { id: string; ifName: string } {
  const [id = '', ifName = ''] = text.split(/\r?\n/).map((s) => s.trim());
  return { id, ifName };
}

export class DiskStore implements Store {
  /** <dataDir>/<network> */
  readonly dir: string;
  private readonly fsync: boolean;
  private readonly lockTimeoutMs: number;
  private readonly lock: StoreLock;
  private swept = false;
  private seq = 0;
  /** Owners of the reservation files read so far, by IP name. Entries for names no longer listed are dropped. */
  private readonly owners = new Map<string, { id: string; ifName: string }>();

  constructor(dataDir: string, network: string, opts: DiskStoreOptions = {}) {
    this.dir = join(dataDir, parseNetworkName(network, 'network'));
    this.fsync = opts.fsync ?? true;
    this.lockTimeoutMs = opts.lockTimeoutMs ?? 10_000;
    this.lock = new StoreLock(`DiskStore(${this.dir})`);
  }

  withLock<T>(fn: () => Promise<T>): Promise<T> {
    const body = async (): Promise<T> => {
      // First lock of this instance (e.g. after a restart): clear what a crash left.
      if (!this.swept) {
        await io('sweep', async () => this.sweepTmp());
        this.swept = true;
      }
      return fn();
    };
    return this.lock.run(body, async () => {
      const fd = await io('open lock', async () => {
        mkdirSync(this.dir, { recursive: true, mode: 0o755 });
        return openSync(join(this.dir, LOCK_FILE), fsc.O_RDWR | fsc.O_CREAT, 0o644);
      });
      try {
        await lockExclusive(fd, this.dir, this.lockTimeoutMs);
      } catch (e) {
        closeSync(fd);
        throw e;
      }
      // Closing the descriptor releases the flock.
      return async () => closeSync(fd);
    });
  }

  async reserve(id: string, ifName: string, ip: IPv4, rangeId: string): Promise<boolean> {
    this.lock.assertHeld('reserve');
    assertValidOwner(id, ifName);
    checkIP(ip);
    checkRangeId(rangeId);
    const path = join(this.dir, ip);
    return io(`reserve ${ip}`, async () => {
      // Fast path for a taken candidate (the allocator walks many of them); link() below stays authoritative.
      if (exists(path)) return false;
      const tmp = join(this.dir, `${TMP_PREFIX}${ip}.${process.pid}.${++this.seq}`);
      try {
        const fd = openSync(tmp, fsc.O_WRONLY | fsc.O_CREAT | fsc.O_EXCL, 0o644);
        try {
          writeSync(fd, formatReservation(id, ifName));
          if (this.fsync) await fsyncFd(fd);
        } finally {
          closeSync(fd);
        }
        try {
          linkSync(tmp, path);
        } catch (e) {
          if (errCode(e) === 'EEXIST') return false;
          throw e;
        }
        this.owners.set(ip, { id, ifName });
      } finally {
        unlinkQuiet(tmp);
      }
      if (this.fsync) {
        try {
          await fsyncDir(this.dir);
        } catch (e) {
          // Not durable: undo rather than report a reservation that may vanish.
          unlinkQuiet(path);
          throw e;
        }
      }
      // The cursor is a hint: failing to move it must not fail (and so leak) a reservation that exists.
      try {
        this.writeLast(rangeId, ip);
      } catch {
        /* ignored: round-robin restarts at worst */
      }
      return true;
    });
  }

  async lastReservedIP(rangeId: string): Promise<IPv4 | undefined> {
    checkRangeId(rangeId);
    try {
      const s = readFileSync(join(this.dir, LAST_RESERVED_PREFIX + rangeId), 'utf8').trim();
      return isIPv4(s) ? (s as IPv4) : undefined;
    } catch {
      return undefined; // only a hint
    }
  }

  async release(ip: IPv4): Promise<void> {
    this.lock.assertHeld('release');
    checkIP(ip);
    await io(`release ${ip}`, async () => unlinkQuiet(join(this.dir, ip)));
    this.owners.delete(ip);
  }

  async releaseByID(id: string, ifName: string): Promise<IPv4[]> {
    this.lock.assertHeld('releaseByID');
    assertValidOwner(id, ifName);
    const released: IPv4[] = [];
    // getByID has confirmed each owner on disk, under the lock.
    for (const ip of await this.getByID(id, ifName)) {
      await this.release(ip);
      released.push(ip);
    }
    return released;
  }

  async getByID(id: string, ifName: string): Promise<IPv4[]> {
    const out: IPv4[] = [];
    for (const r of (await this.listAll()).filter((x) => reservationMatches(x, id, ifName))) {
      // Confirm the remembered owner on disk: the few files an attachment holds are cheap to re-read.
      const owner = readOwnerQuiet(join(this.dir, r.ip));
      if (owner === null) this.owners.delete(r.ip);
      else if (reservationMatches(owner, id, ifName)) out.push(r.ip);
      else this.owners.set(r.ip, owner);
    }
    return out;
  }

  async listAll(): Promise<Reservation[]> {
    return io('list', async () => {
      const names = listDir(this.dir);
      if (this.lock.held()) this.sweepTmp(names);
      const listed = new Set(names);
      for (const ip of this.owners.keys()) if (!listed.has(ip)) this.owners.delete(ip);
      const out: { key: number; r: Reservation }[] = [];
      for (const name of names) {
        if (!isIPv4(name)) continue;
        let owner = this.owners.get(name);
        if (!owner) {
          let text: string;
          try {
            text = readFileSync(join(this.dir, name), 'utf8');
          } catch (e) {
            if (errCode(e) === 'ENOENT') continue; // released meanwhile (a reader outside the lock)
            throw e;
          }
          owner = parseReservation(text);
          // Only a complete, readable owner is remembered; an unreadable one is read again next time.
          if (owner.id !== '') this.owners.set(name, owner);
        }
        out.push({ key: ipToInt(name), r: { ip: name as IPv4, ...owner } });
      }
      return out.sort((a, b) => a.key - b.key).map((x) => x.r);
    });
  }

  /** Remove tmp files. Only under the lock: every writer creates them under it, so any found now is an orphan. */
  private sweepTmp(names?: string[]): void {
    this.lock.assertHeld('sweep');
    for (const n of names ?? listDir(this.dir)) if (n.startsWith(TMP_PREFIX)) unlinkQuiet(join(this.dir, n));
  }

  /**
   * Overwrite last_reserved_ip.<rangeId> in place: the IP at offset 0, then the file cut to its length.
   * It is only a hint, so no temp file and rename (which cost a new inode and, on ext4, a forced
   * writeback per ADD): a crash between the two steps leaves another valid address (a longer old one's
   * tail) or, at worst, text that does not parse and is ignored.
   */
  private writeLast(rangeId: string, ip: IPv4): void {
    const fd = openSync(join(this.dir, LAST_RESERVED_PREFIX + rangeId), fsc.O_WRONLY | fsc.O_CREAT | fsc.O_NOFOLLOW, 0o644);
    try {
      writeSync(fd, ip, 0);
      ftruncateSync(fd, Buffer.byteLength(ip));
    } finally {
      closeSync(fd);
    }
  }
}

/** The owner recorded in a reservation file, or null when it is gone. */
function readOwnerQuiet(path: string): { id: string; ifName: string } | null {
  try {
    return parseReservation(readFileSync(path, 'utf8'));
  } catch (e) {
    if (errCode(e) === 'ENOENT') return null;
    throw e;
  }
}

/** Directory entries; [] if the directory does not exist yet. */
function listDir(dir: string): string[] {
  try {
    return readdirSync(dir);
  } catch (e) {
    if (errCode(e) === 'ENOENT') return [];
    throw e;
  }
}

const fsyncFd = promisify(fsync);

async function fsyncDir(dir: string): Promise<void> {
  const fd = openSync(dir, fsc.O_RDONLY | fsc.O_DIRECTORY);
  try {
    await fsyncFd(fd);
  } finally {
    closeSync(fd);
  }
}

/** Whether the name exists; a symlink squatting it counts as taken and is never followed. */
function exists(path: string): boolean {
  try {
    lstatSync(path);
    return true;
  } catch (e) {
    if (errCode(e) === 'ENOENT') return false;
    throw e;
  }
}

function unlinkQuiet(path: string): void {
  try {
    unlinkSync(path);
  } catch (e) {
    if (errCode(e) !== 'ENOENT') throw e;
  }
}

function checkIP(ip: string): void {
  if (!isIPv4(ip)) throw storeMisuse(`not an IPv4 address: ${JSON.stringify(ip)}`);
}

function checkRangeId(rangeId: string): void {
  if (!RANGE_ID_RE.test(rangeId)) throw storeMisuse(`invalid rangeId ${JSON.stringify(rangeId)}`);
}

function errCode(e: unknown): string | undefined {
  return typeof e === 'object' && e !== null && 'code' in e && typeof e.code === 'string' ? e.code : undefined;
}

/** Run an fs step, turning a non-Nodenet failure into IpamStore (CNI 5). */
async function io<T>(what: string, fn: () => Promise<T>): Promise<T> {
  try {
    return await fn();
  } catch (e) {
    if (e instanceof NodenetError) throw e;
    throw ipamStoreError(`ipam store: ${what}: ${e instanceof Error ? e.message : String(e)}`, e);
  }
}
