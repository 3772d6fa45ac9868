/**
 * ipam/store.fake: an in-memory Store that validates like the disk store:
 * an IP is held by one attachment at most (reserve of a taken IP is false),
 * mutations outside withLock throw, withLock is not reentrant, ids and IPs
 * are checked. Releasing an unknown IP is a no-op, as on disk.
 */
import { ipToInt, isIPv4, type IPv4 } from '../../../lib/net/ip.js';
import { storeMisuse } from './ipam-errors.js';
import { StoreLock } from './store-lock.js';
import { assertValidOwner, reservationMatches, type Reservation, type Store } from './store.js';

export class FakeStore implements Store {
  private readonly held = new Map<IPv4, { id: string; ifName: string }>();
  private readonly last = new Map<string, IPv4>();
  private readonly lock = new StoreLock('FakeStore');
  /** Number of reserve() calls, successful or not (lets tests see how hard the allocator searched). */
  reserveCalls = 0;

  /** Seed reservations directly (test set-up), bypassing the lock. Throws on a duplicate IP. */
  seed(rs: readonly Reservation[], last: Readonly<Record<string, IPv4>> = {}): this {
    for (const r of rs) {
      checkIP(r.ip);
      if (this.held.has(r.ip)) throw storeMisuse(`seed: ${r.ip} given twice`);
      this.held.set(r.ip, { id: r.id, ifName: r.ifName });
    }
    for (const [k, v] of Object.entries(last)) this.last.set(k, checkIP(v));
    return this;
  }

  withLock<T>(fn: () => Promise<T>): Promise<T> {
    return this.lock.run(fn);
  }

  async reserve(id: string, ifName: string, ip: IPv4, rangeId: string): Promise<boolean> {
    this.lock.assertHeld('reserve');
    assertValidOwner(id, ifName);
    checkIP(ip);
    if (rangeId === '') throw storeMisuse('reserve: empty rangeId');
    this.reserveCalls++;
    if (this.held.has(ip)) return false;
    this.held.set(ip, { id, ifName });
    this.last.set(rangeId, ip);
    return true;
  }

  async lastReservedIP(rangeId: string): Promise<IPv4 | undefined> {
    return this.last.get(rangeId);
  }

  async release(ip: IPv4): Promise<void> {
    this.lock.assertHeld('release');
    checkIP(ip);
    this.held.delete(ip);
  }

  async releaseByID(id: string, ifName: string): Promise<IPv4[]> {
    this.lock.assertHeld('releaseByID');
    assertValidOwner(id, ifName);
    const out = await this.getByID(id, ifName);
    for (const ip of out) this.held.delete(ip);
    return out;
  }

  async getByID(id: string, ifName: string): Promise<IPv4[]> {
    return (await this.listAll()).filter((r) => reservationMatches(r, id, ifName)).map((r) => r.ip);
  }

  async listAll(): Promise<Reservation[]> {
    return [...this.held]
      .map(([ip, o]) => ({ ip, id: o.id, ifName: o.ifName }))
      .sort((a, b) => ipToInt(a.ip) - ipToInt(b.ip));
  }
}

function checkIP(ip: string): IPv4 {
  if (!isIPv4(ip)) throw storeMisuse(`not an IPv4 address: ${JSON.stringify(ip)}`);
  return ip as IPv4;
}


// Compile-time check that the fake keeps up with the interface.
const _check: Store = new FakeStore();
void _check;
