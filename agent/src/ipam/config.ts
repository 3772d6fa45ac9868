/**
 * ipam/config: parse the `ipam` section of a CNI network config of
 * host-local's shape, and the requested IPs a runtime may pass. Pure.
 *
 *   { type, ranges: [[{subnet, rangeStart?, rangeEnd?, gateway?}]],
 *     routes?: [{dst, gw?}], dataDir?, resolvConf? }
 *
 * plus host-local's legacy flat form ({subnet, rangeStart, rangeEnd, gateway}
 * at the top of `ipam`), which becomes the first range set. A range without a
 * subnet, or an ipam section with no ranges at all, uses the caller's default
 * subnet (the node's podCIDR). Every error is IpamInvalid (CNI 7) and names
 * the offending field. IPv4 only. Unknown keys are ignored, as host-local does.
 */
import { ipToInt, type Cidr, type IPv4 } from '../../../lib/net/ip.js';
import { ipamInvalid } from './ipam-errors.js';
import { isPlainObject, parseCidrField, parseRange, parseIPv4Field, stringField, type RangeDefaults } from './range.js';
import { parseRangeSet, rangeSetsOverlap, type RangeSet } from './range-set.js';

export interface Route {
  readonly dst: Cidr;
  readonly gw?: IPv4;
}

export interface IpamConf {
  /** The CNI network name (the config's top-level `name`); one store per name. */
  readonly name: string;
  /** `ipam.type`: '' (absent) or 'host-local', the only IPAM nodenet runs (anything else is refused). */
  readonly type: string;
  /** One address is allocated from each range set, in order; range set i keeps round-robin state under rangeId String(i). */
  readonly rangeSets: readonly RangeSet[];
  readonly routes: readonly Route[];
  /** `ipam.dataDir`: where the store lives instead of the agent's own IPAM dir (an absolute path). */
  readonly dataDir?: string;
  /** `ipam.resolvConf`: a resolv.conf whose nameservers, domain, search and options become the result's DNS (as host-local does). */
  readonly resolvConf?: string;
}

export type IpamConfOptions = RangeDefaults;

/** The ipam.type values nodenet's own allocator serves. */
export const BUILTIN_TYPES: readonly string[] = ['host-local'];

/** `ipam.dataDir` of a raw ipam section (an absolute path), undefined when absent. DEL reads it from records without parsing the rest. */
export function ipamDataDir(ipam: unknown): string | undefined {
  if (!isPlainObject(ipam) || ipam['dataDir'] === undefined || ipam['dataDir'] === null || ipam['dataDir'] === '') return undefined;
  const d = stringField(ipam['dataDir'], 'ipam.dataDir');
  if (!d.startsWith('/')) throw ipamInvalid('ipam.dataDir', `must be an absolute path, got ${JSON.stringify(d)}`);
  return d;
}

const NETWORK_NAME_RE = /^[a-zA-Z0-9][a-zA-Z0-9_.-]*$/;

/** A CNI network name (SPEC.md): it names a directory, so it is checked strictly. */
export function parseNetworkName(v: unknown, field = 'name'): string {
  const s = stringField(v, field);
  if (!NETWORK_NAME_RE.test(s) || s.length > 253) {
    throw ipamInvalid(field, `${JSON.stringify(s)} is not a valid network name (alphanumeric first, then alphanumerics, '_', '.', '-')`);
  }
  return s;
}

/**
 * Parse `ipam` of the network named `networkName`.
 * @param opts.defaultSubnet the node's podCIDR, used for ranges without a subnet.
 */
export function parseIpamConf(networkName: unknown, ipam: unknown, opts: IpamConfOptions = {}): IpamConf {
  const name = parseNetworkName(networkName);
  if (!isPlainObject(ipam)) throw ipamInvalid('ipam', 'must be an object');
  const type = ipam['type'] === undefined ? '' : stringField(ipam['type'], 'ipam.type');
  if (type !== '' && !BUILTIN_TYPES.includes(type)) {
    throw ipamInvalid(
      'ipam.type',
      `${JSON.stringify(type)} is not supported: nodenet allocates with its built-in host-local IPAM and does not delegate to IPAM plugins; use "host-local" or leave ipam.type out`,
    );
  }

  const sets: RangeSet[] = [];
  const fields: string[] = [];
  const legacyKeys = ['subnet', 'rangeStart', 'rangeEnd', 'gateway'] as const;
  if (legacyKeys.some((k) => ipam[k] !== undefined)) {
    const legacy: Record<string, unknown> = {};
    for (const k of legacyKeys) if (ipam[k] !== undefined) legacy[k] = ipam[k];
    // Parsed as a bare range so that errors name "ipam.subnet", "ipam.rangeStart", ...
    sets.push([parseRange(legacy, 'ipam', opts)]);
    fields.push('ipam');
  }
  if (ipam['ranges'] !== undefined) {
    const ranges = ipam['ranges'];
    if (!Array.isArray(ranges)) throw ipamInvalid('ipam.ranges', 'must be an array of range sets');
    ranges.forEach((rs: unknown, i) => {
      sets.push(parseRangeSet(rs, `ipam.ranges[${i}]`, opts));
      fields.push(`ipam.ranges[${i}]`);
    });
  }
  if (sets.length === 0) {
    if (opts.defaultSubnet === undefined) throw ipamInvalid('ipam.ranges', 'no IP ranges specified and no default pod CIDR is known');
    sets.push([parseRange({}, 'ipam', opts)]);
    fields.push('ipam.ranges');
  }
  for (let i = 0; i < sets.length; i++) {
    for (let j = i + 1; j < sets.length; j++) {
      if (rangeSetsOverlap(sets[i]!, sets[j]!)) throw ipamInvalid(fields[j]!, `overlaps ${fields[i]}`);
    }
  }

  const routes: Route[] = [];
  if (ipam['routes'] !== undefined) {
    const raw = ipam['routes'];
    if (!Array.isArray(raw)) throw ipamInvalid('ipam.routes', 'must be an array');
    raw.forEach((r: unknown, i) => routes.push(parseRoute(r, `ipam.routes[${i}]`)));
  }

  const conf: { -readonly [K in keyof IpamConf]: IpamConf[K] } = { name, type, rangeSets: sets, routes };
  const dataDir = ipamDataDir(ipam);
  if (dataDir !== undefined) conf.dataDir = dataDir;
  if (ipam['resolvConf'] !== undefined) {
    const rc = stringField(ipam['resolvConf'], 'ipam.resolvConf');
    if (!rc.startsWith('/')) throw ipamInvalid('ipam.resolvConf', `must be an absolute path, got ${JSON.stringify(rc)}`);
    conf.resolvConf = rc;
  }
  return conf;
}

function parseRoute(raw: unknown, field: string): Route {
  if (!isPlainObject(raw)) throw ipamInvalid(field, 'must be an object');
  const dst = parseCidrField(stringField(raw['dst'], `${field}.dst`), `${field}.dst`).cidr;
  if (raw['gw'] === undefined) return { dst };
  return { dst, gw: parseIPv4Field(raw['gw'], `${field}.gw`) };
}

export interface RequestedIPSources {
  /** CNI_ARGS ("K=V;K=V"); its `IP` key may list several addresses separated by ','. */
  readonly cniArgs?: string;
  /** runtimeConfig.ips (the "ips" capability): ["10.1.2.3" or "10.1.2.3/24", ...]. */
  readonly runtimeConfigIPs?: unknown;
  /** The config's args.cni.ips. */
  readonly argsIPs?: unknown;
}

/**
 * Collect the IPs a runtime asked for (host-local's IPArgs): CNI_ARGS IP=,
 * args.cni.ips and runtimeConfig.ips, in that order, without duplicates. A
 * prefix length on an entry is accepted and dropped.
 */
export function parseRequestedIPs(src: RequestedIPSources): IPv4[] {
  const out: IPv4[] = [];
  const add = (v: unknown, field: string): void => {
    const s = stringField(v, field);
    const ip = parseIPv4Field(s.includes('/') ? s.slice(0, s.indexOf('/')) : s, field);
    if (s.includes('/')) parseIPv4WithPrefix(s, field);
    if (!out.includes(ip)) out.push(ip);
  };
  if (src.cniArgs !== undefined && src.cniArgs !== '') {
    for (const pair of src.cniArgs.split(';')) {
      const eq = pair.indexOf('=');
      if (eq < 0 || pair.slice(0, eq) !== 'IP') continue;
      pair
        .slice(eq + 1)
        .split(',')
        .forEach((v) => add(v.trim(), 'CNI_ARGS IP'));
    }
  }
  const list = (v: unknown, field: string): void => {
    if (v === undefined) return;
    if (!Array.isArray(v)) throw ipamInvalid(field, 'must be an array of IP addresses');
    v.forEach((x: unknown, i) => add(x, `${field}[${i}]`));
  };
  list(src.argsIPs, 'args.cni.ips');
  list(src.runtimeConfigIPs, 'runtimeConfig.ips');
  return out;
}

function parseIPv4WithPrefix(s: string, field: string): void {
  const pfx = s.slice(s.indexOf('/') + 1);
  if (!/^\d{1,2}$/.test(pfx) || Number(pfx) > 32) throw ipamInvalid(field, `${JSON.stringify(s)} has an invalid prefix length`);
}

/** Sort helper for callers that want IPs in address order. */
export function compareIPs(a: string, b: string): number {
  return ipToInt(a) - ipToInt(b);
}
