/**
 * ipam/range: one allocation range (host-local's Range), parsed and
 * canonicalised. Pure.
 *
 * A Range is a subnet plus an inclusive [rangeStart, rangeEnd] window and a
 * gateway. Defaults follow host-local: gateway = network+1, rangeStart =
 * network+1, rangeEnd = broadcast-1. The gateway may sit inside the window;
 * the allocator skips it. Unlike host-local we also refuse an explicit
 * rangeStart/rangeEnd/gateway on the network or broadcast address, so neither
 * can ever be handed out. IPv4 only: an IPv6 value is rejected by name.
 */
import { isObject, show } from '../../../lib/json/read.js';
import { broadcast, intToIp, ipToInt, isIPv4, parseCidr, type Cidr, type IPv4 } from '../../../lib/net/ip.js';
import { ipamInvalid } from './ipam-errors.js';

export interface Range {
  /** Network address and prefix, host bits clear. */
  readonly subnet: Cidr;
  readonly prefix: number;
  /** First allocatable candidate, inclusive. */
  readonly rangeStart: IPv4;
  /** Last allocatable candidate, inclusive. */
  readonly rangeEnd: IPv4;
  /** Returned with each address of this range; never allocated. */
  readonly gateway: IPv4;
}

export interface RangeDefaults {
  /** Subnet to use when the range names none (the node's podCIDR). */
  readonly defaultSubnet?: string;
}

/** Parse one range object found at `field` (e.g. "ipam.ranges[0][1]"). */
export function parseRange(raw: unknown, field: string, defaults: RangeDefaults = {}): Range {
  if (!isPlainObject(raw)) throw ipamInvalid(field, 'must be an object');
  let subnetText: string;
  let subnetField = `${field}.subnet`;
  if (raw['subnet'] === undefined || raw['subnet'] === '') {
    if (defaults.defaultSubnet === undefined) throw ipamInvalid(subnetField, 'is required (no default pod CIDR is known)');
    subnetText = defaults.defaultSubnet;
    subnetField = `${subnetField} (default pod CIDR ${defaults.defaultSubnet})`;
  } else {
    subnetText = stringField(raw['subnet'], subnetField);
  }
  const { subnet, prefix } = parseSubnet(subnetText, subnetField);
  const net = ipToInt(subnet.split('/')[0] ?? '');
  const bcast = ipToInt(broadcast(subnet));

  const inside = (v: unknown, f: string, fallback: number): IPv4 => {
    if (v === undefined) return intToIp(fallback);
    const ip = parseIPv4Field(v, f);
    const n = ipToInt(ip);
    if (n < net || n > bcast) throw ipamInvalid(f, `${ip} is not in subnet ${subnet}`);
    if (n === net) throw ipamInvalid(f, `${ip} is the network address of ${subnet}`);
    if (n === bcast) throw ipamInvalid(f, `${ip} is the broadcast address of ${subnet}`);
    return ip;
  };
  const gateway = inside(raw['gateway'], `${field}.gateway`, net + 1);
  const rangeStart = inside(raw['rangeStart'], `${field}.rangeStart`, net + 1);
  const rangeEnd = inside(raw['rangeEnd'], `${field}.rangeEnd`, bcast - 1);
  const s = ipToInt(rangeStart);
  const e = ipToInt(rangeEnd);
  if (s > e) throw ipamInvalid(`${field}.rangeEnd`, `${rangeEnd} is before rangeStart ${rangeStart}`);
  const g = ipToInt(gateway);
  if (e - s + 1 - (g >= s && g <= e ? 1 : 0) < 1) {
    throw ipamInvalid(field, `range ${rangeStart}-${rangeEnd} has no allocatable address besides the gateway ${gateway}`);
  }
  return { subnet, prefix, rangeStart, rangeEnd, gateway };
}

/** Whether ip lies in [rangeStart, rangeEnd] (the gateway counts as contained, as in host-local). */
export function rangeContains(r: Range, ip: string): boolean {
  if (!isIPv4(ip)) return false;
  const n = ipToInt(ip);
  return n >= ipToInt(r.rangeStart) && n <= ipToInt(r.rangeEnd);
}

export function rangesOverlap(a: Range, b: Range): boolean {
  return ipToInt(a.rangeStart) <= ipToInt(b.rangeEnd) && ipToInt(b.rangeStart) <= ipToInt(a.rangeEnd);
}

/** Number of candidates in the window, gateway included. */
export function rangeSize(r: Range): number {
  return ipToInt(r.rangeEnd) - ipToInt(r.rangeStart) + 1;
}

export function rangeToString(r: Range): string {
  return `${r.rangeStart}-${r.rangeEnd}`;
}

/** "a.b.c.d/nn" for an address of this range. */
export function addressIn(r: Range, ip: IPv4): string {
  return `${ip}/${r.prefix}`;
}

// ---- field parsers shared by range-set.ts and config.ts ----

export const isPlainObject = isObject;

export function stringField(v: unknown, field: string): string {
  if (typeof v !== 'string') throw ipamInvalid(field, `must be a string, got ${show(v)}`);
  return v;
}

export function parseIPv4Field(v: unknown, field: string): IPv4 {
  const s = stringField(v, field);
  if (s.includes(':')) throw ipamInvalid(field, `${s} is IPv6; nodenet IPAM supports IPv4 only`);
  if (!isIPv4(s)) throw ipamInvalid(field, `${JSON.stringify(s)} is not an IPv4 address`);
  return s as IPv4;
}

/** A subnet "a.b.c.d/n" with host bits clear and room for at least 2 hosts (/30 or larger). */
export function parseSubnet(s: string, field: string): { subnet: Cidr; prefix: number } {
  const c = parseCidrField(s, field);
  if (c.prefix > 30) throw ipamInvalid(field, `${s} is too small to allocate from (/30 is the smallest)`);
  return { subnet: c.cidr, prefix: c.prefix };
}

/** A CIDR whose host bits must be clear (as the kernel wants for a route dst). */
export function parseCidrField(s: string, field: string): { cidr: Cidr; prefix: number } {
  if (s.includes(':')) throw ipamInvalid(field, `${s} is IPv6; nodenet IPAM supports IPv4 only`);
  let c;
  try {
    c = parseCidr(s);
  } catch {
    throw ipamInvalid(field, `${JSON.stringify(s)} is not an IPv4 CIDR (a.b.c.d/n)`);
  }
  if (s.split('/')[0] !== c.ip) throw ipamInvalid(field, `${s} has host bits set; the network is ${c.cidr}`);
  return { cidr: c.cidr, prefix: c.prefix };
}

