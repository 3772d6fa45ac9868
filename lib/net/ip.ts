/**
 * net/ip: pure IPv4 and CIDR helpers with branded types.
 * An IPv4 or Cidr value has been parsed and normalised; mint them only here.
 */
declare const ipv4Brand: unique symbol;
declare const cidrBrand: unique symbol;
export type IPv4 = string & { readonly [ipv4Brand]: true };
export type Cidr = string & { readonly [cidrBrand]: true };

export interface ParsedCidr {
  /** Network address (host bits cleared unless keepHost). */
  readonly ip: IPv4;
  readonly prefix: number;
  readonly cidr: Cidr;
}

const IPV4_RE = /^(\d{1,3})\.(\d{1,3})\.(\d{1,3})\.(\d{1,3})$/;

export function isIPv4(s: string): boolean {
  const m = IPV4_RE.exec(s);
  if (!m) return false;
  return m.slice(1).every((o) => Number(o) <= 255 && String(Number(o)) === o);
}

export function parseIPv4(s: string): IPv4 {
  if (!isIPv4(s)) throw new TypeError(`not an IPv4 address: ${JSON.stringify(s)}`);
  return s as IPv4;
}

export function ipToInt(ip: string): number {
  const p = parseIPv4(ip).split('.').map(Number);
  return ((p[0]! << 24) >>> 0) + (p[1]! << 16) + (p[2]! << 8) + p[3]!;
}

export function intToIp(n: number): IPv4 {
  const u = n >>> 0;
  return `${u >>> 24}.${(u >>> 16) & 255}.${(u >>> 8) & 255}.${u & 255}` as IPv4;
}

export function prefixMask(prefix: number): number {
  return prefix === 0 ? 0 : (0xffffffff << (32 - prefix)) >>> 0;
}

/** Parses "a.b.c.d/n". Host bits are cleared from `ip` and `cidr`. */
export function parseCidr(s: string): ParsedCidr {
  const [ip, pfx, ...rest] = s.split('/');
  if (ip === undefined || pfx === undefined || rest.length || !/^\d{1,2}$/.test(pfx) || Number(pfx) > 32 || !isIPv4(ip)) {
    throw new TypeError(`not an IPv4 CIDR: ${JSON.stringify(s)}`);
  }
  const prefix = Number(pfx);
  const net = intToIp((ipToInt(ip) & prefixMask(prefix)) >>> 0);
  return { ip: net, prefix, cidr: `${net}/${prefix}` as Cidr };
}

/** Parses "a.b.c.d/n" keeping the host part (an interface address). */
export function parseIPNet(s: string): { ip: IPv4; prefix: number; network: ParsedCidr } {
  const [ip, pfx] = s.split('/');
  const network = parseCidr(s);
  return { ip: parseIPv4(ip ?? ''), prefix: Number(pfx), network };
}

export function cidrContains(cidr: string, ip: string): boolean {
  const c = parseCidr(cidr);
  return ((ipToInt(ip) & prefixMask(c.prefix)) >>> 0) === ipToInt(c.ip);
}

export function broadcast(cidr: string): IPv4 {
  const c = parseCidr(cidr);
  return intToIp((ipToInt(c.ip) | (~prefixMask(c.prefix) >>> 0)) >>> 0);
}

export function nthIp(cidr: string, n: number): IPv4 {
  const c = parseCidr(cidr);
  return intToIp(ipToInt(c.ip) + n);
}
