/**
 * cnitypes/result: the CNI result in its 1.1 shape, and its encoding for the
 * version the runtime asked for.
 *
 * The agent builds every result as a CniResult (1.1) and encodes it once, at
 * the boundary, in the config's cniVersion:
 * - 1.1.0: everything.
 * - 1.0.0: without the fields 1.1 added (interface mtu/socketPath/pciID, route
 *   mtu/advmss/priority/table/scope).
 * - 0.3.0, 0.3.1, 0.4.0: as 1.0.0, plus `"version": "4"|"6"` in each ip.
 * Empty lists and an empty dns are omitted, as upstream's encoder does.
 * The reverse direction (any version's JSON -> CniResult) is prev-result.ts.
 */
import { ErrorCode, NodenetError } from '../../../lib/errors/errors.js';
import { ipFamily } from './fields.js';
import { requireSupportedVersion, versionAtLeast } from './version.js';

export interface CniInterface {
  readonly name: string;
  readonly mac?: string;
  /** 1.1 */
  readonly mtu?: number;
  /** The netns path for a container interface; absent for host interfaces. */
  readonly sandbox?: string;
  /** 1.1 */
  readonly socketPath?: string;
  /** 1.1 */
  readonly pciID?: string;
}

export interface CniIPConfig {
  /** Address with prefix, host bits kept: "10.244.1.5/24". */
  readonly address: string;
  readonly gateway?: string;
  /** Index into `interfaces`. */
  readonly interface?: number;
}

export interface CniRoute {
  readonly dst: string;
  readonly gw?: string;
  /** 1.1 */
  readonly mtu?: number;
  /** 1.1 */
  readonly advmss?: number;
  /** 1.1 */
  readonly priority?: number;
  /** 1.1 */
  readonly table?: number;
  /** 1.1 */
  readonly scope?: number;
}

export interface CniDNS {
  readonly nameservers?: readonly string[];
  readonly domain?: string;
  readonly search?: readonly string[];
  readonly options?: readonly string[];
}

export interface CniResult {
  readonly interfaces: readonly CniInterface[];
  readonly ips: readonly CniIPConfig[];
  readonly routes: readonly CniRoute[];
  readonly dns: CniDNS;
}

export function isEmptyDNS(d: CniDNS): boolean {
  return !d.nameservers?.length && !d.domain && !d.search?.length && !d.options?.length;
}

/**
 * The result JSON for `cniVersion` (a supported version, else
 * IncompatibleVersionError). Throws an internal NodenetError if an ip names an
 * interface index that does not exist: that is a bug in the caller.
 */
export function encodeResult(result: CniResult, cniVersion: string): string {
  const v = requireSupportedVersion(cniVersion, 'cniVersion');
  const is11 = versionAtLeast(v, '1.1.0');
  const is0x = !versionAtLeast(v, '1.0.0');

  const interfaces = result.interfaces.map((i) => {
    const o: Record<string, unknown> = { name: i.name };
    if (i.mac) o['mac'] = i.mac;
    if (is11 && i.mtu !== undefined && i.mtu !== 0) o['mtu'] = i.mtu;
    if (i.sandbox) o['sandbox'] = i.sandbox;
    if (is11 && i.socketPath) o['socketPath'] = i.socketPath;
    if (is11 && i.pciID) o['pciID'] = i.pciID;
    return o;
  });
  const ips = result.ips.map((ip, n) => {
    if (ip.interface !== undefined && (ip.interface < 0 || ip.interface >= result.interfaces.length)) {
      throw new NodenetError(ErrorCode.Internal, `result ips[${n}].interface ${ip.interface} names no interface`);
    }
    const o: Record<string, unknown> = {};
    if (is0x) o['version'] = ipFamily(ip.address);
    if (ip.interface !== undefined) o['interface'] = ip.interface;
    o['address'] = ip.address;
    if (ip.gateway) o['gateway'] = ip.gateway;
    return o;
  });
  const routes = result.routes.map((r) => {
    const o: Record<string, unknown> = { dst: r.dst };
    if (r.gw) o['gw'] = r.gw;
    if (is11) {
      for (const k of ['mtu', 'advmss', 'priority', 'table', 'scope'] as const) {
        if (r[k] !== undefined) o[k] = r[k];
      }
    }
    return o;
  });

  const out: Record<string, unknown> = { cniVersion: v };
  if (interfaces.length) out['interfaces'] = interfaces;
  if (ips.length) out['ips'] = ips;
  if (routes.length) out['routes'] = routes;
  if (!isEmptyDNS(result.dns)) {
    const d = result.dns;
    const dns: Record<string, unknown> = {};
    if (d.nameservers?.length) dns['nameservers'] = d.nameservers;
    if (d.domain) dns['domain'] = d.domain;
    if (d.search?.length) dns['search'] = d.search;
    if (d.options?.length) dns['options'] = d.options;
    out['dns'] = dns;
  }
  return JSON.stringify(out);
}
