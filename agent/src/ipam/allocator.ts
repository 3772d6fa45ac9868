/**
 * ipam/allocator: give one attachment one address from one range set. Pure
 * over a Store (no fs): all state lives in the store.
 *
 * Strategy (host-local's): round-robin. Candidates start just after the range
 * set's last reserved IP (or at the first range's rangeStart when there is
 * none, or when it lies outside the set), walk each range up to rangeEnd,
 * then continue with the next range, wrapping, until every candidate has been
 * tried once. The gateway is skipped. A crash-looping pod therefore does not
 * get the same IP again until the whole set has gone round.
 *
 * Idempotency: if the attachment already holds an address in this range set
 * (a retried ADD), that address is returned and nothing new is reserved.
 *
 * Precondition: the caller holds store.withLock for the whole call, so the
 * existence check and the reservation are one atomic step.
 */
import { intToIp, ipToInt, type IPv4 } from '../../../lib/net/ip.js';
import { ipamExhausted, ipamInvalid } from './ipam-errors.js';
import { addressIn, rangeSize, type Range } from './range.js';
import { rangeFor, rangeSetToString, type RangeSet } from './range-set.js';
import type { Store } from './store.js';

export interface AllocateRequest {
  /** Key for this range set's round-robin cursor (host-local: the set's index in the config). */
  readonly rangeId: string;
  readonly id: string;
  readonly ifName: string;
  /** Reserve exactly this IP or fail (CNI_ARGS IP=, runtimeConfig ips). Must lie in the range set. */
  readonly requestedIP?: IPv4;
}

export interface Allocation {
  /** "a.b.c.d/nn", the prefix being the range's subnet's. */
  readonly address: string;
  readonly ip: IPv4;
  readonly gateway?: IPv4;
  /** True when the attachment already held this IP (a retried ADD); nothing was reserved. */
  readonly existing: boolean;
}

export async function allocate(store: Store, set: RangeSet, req: AllocateRequest): Promise<Allocation> {
  if (set.length === 0) throw ipamInvalid('ipam.ranges', 'empty range set');
  const setText = rangeSetToString(set);
  const result = (r: Range, ip: IPv4, existing: boolean): Allocation => ({ address: addressIn(r, ip), ip, gateway: r.gateway, existing });

  // A retried ADD must not leak a second address.
  const held = (await store.getByID(req.id, req.ifName)).filter((ip) => rangeFor(set, ip) !== undefined);
  const mine = held[0];
  if (mine !== undefined) {
    if (req.requestedIP !== undefined && req.requestedIP !== mine) {
      throw ipamInvalid('requested IP', `${req.requestedIP} was requested but ${req.id}/${req.ifName} already holds ${mine} in range set ${setText}`);
    }
    return result(rangeFor(set, mine)!, mine, true);
  }

  if (req.requestedIP !== undefined) {
    const ip = req.requestedIP;
    const r = rangeFor(set, ip);
    if (!r) throw ipamInvalid('requested IP', `${ip} is not in range set ${setText}`);
    if (ip === r.gateway) throw ipamInvalid('requested IP', `${ip} is the gateway of ${r.subnet}`);
    if (!(await store.reserve(req.id, req.ifName, ip, req.rangeId))) {
      const owner = (await store.listAll()).find((x) => x.ip === ip);
      const by = owner ? ` (held by ${owner.id}/${owner.ifName || '?'})` : '';
      throw ipamInvalid('requested IP', `${ip} is already allocated${by}`);
    }
    return result(r, ip, false);
  }

  for (const [r, ip] of candidates(set, await store.lastReservedIP(req.rangeId))) {
    if (await store.reserve(req.id, req.ifName, ip, req.rangeId)) return result(r, ip, false);
  }
  throw ipamExhausted(setText);
}

/**
 * Every allocatable candidate of the set exactly once, in round-robin order
 * starting after `last`. Exported for tests.
 */
export function* candidates(set: RangeSet, last: IPv4 | undefined): Generator<[Range, IPv4]> {
  const total = set.reduce((n, r) => n + rangeSize(r), 0);
  let ri = set.findIndex((r) => last !== undefined && ipToInt(last) >= ipToInt(r.rangeStart) && ipToInt(last) <= ipToInt(r.rangeEnd));
  let cur: number;
  if (ri >= 0 && last !== undefined) {
    cur = ipToInt(last);
  } else {
    // Position on the last range's end, so the first step wraps to ranges[0].rangeStart.
    ri = set.length - 1;
    cur = ipToInt(set[ri]!.rangeEnd);
  }
  for (let n = 0; n < total; n++) {
    let r = set[ri]!;
    if (cur === ipToInt(r.rangeEnd)) {
      ri = (ri + 1) % set.length;
      r = set[ri]!;
      cur = ipToInt(r.rangeStart);
    } else {
      cur++;
    }
    const ip = intToIp(cur);
    if (ip !== r.gateway) yield [r, ip];
  }
}
