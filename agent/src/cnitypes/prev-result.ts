/**
 * cnitypes/prev-result: a result JSON of any supported version -> CniResult (1.1).
 *
 * Used for `prevResult` (CHECK and DEL get the result of the preceding ADD) and
 * for results of chained plugins. The result's own `cniVersion` decides its
 * format when present (libcni converts it to the config's version, but a
 * hand-written config may not); otherwise the config's version does.
 * Differences handled: 0.3.x/0.4.0 ips carry `version` ("4"/"6"), checked
 * against the address and dropped; 1.1-only fields are read from any version
 * when present (an older result simply has none). Unknown keys are ignored.
 * Errors name the field, rooted at `field` (default "prevResult").
 */
import { dnsFrom } from './dns.js';
import {
  invalidField, ipFamily, isIP, isIPPrefix, MAC_RE, objectAt, optArray, optInt, optString, reqString, type JsonObject,
} from './fields.js';
import type { CniInterface, CniIPConfig, CniResult, CniRoute } from './result.js';
import { requireSupportedVersion, versionAtLeast } from './version.js';
import { join } from '../../../lib/json/read.js';

const U32 = 0xffffffff;

export function parsePrevResult(raw: unknown, cniVersion: string, field = 'prevResult'): CniResult {
  const o = objectAt(raw, field);
  const p = field;
  const v = requireSupportedVersion(o['cniVersion'] ?? cniVersion, o['cniVersion'] === undefined ? 'cniVersion' : join(p, 'cniVersion'));
  const is0x = !versionAtLeast(v, '1.0.0');

  const interfaces: CniInterface[] = (optArray(o, 'interfaces', p) ?? []).map((raw, n) => {
    const ip = `${p}.interfaces[${n}]`;
    const i = objectAt(raw, ip);
    const out: { -readonly [K in keyof CniInterface]: CniInterface[K] } = { name: reqString(i, 'name', ip) };
    const mac = optString(i, 'mac', ip);
    if (mac !== undefined && mac !== '') {
      if (!MAC_RE.test(mac)) throw invalidField(join(ip, 'mac'), `not a MAC address: ${JSON.stringify(mac)}`);
      out.mac = mac;
    }
    const mtu = optInt(i, 'mtu', ip, 0, U32);
    if (mtu !== undefined && mtu !== 0) out.mtu = mtu;
    for (const k of ['sandbox', 'socketPath', 'pciID'] as const) {
      const s = optString(i, k, ip);
      if (s) out[k] = s;
    }
    return out;
  });

  const ips: CniIPConfig[] = (optArray(o, 'ips', p) ?? []).map((raw, n) => {
    const ip = `${p}.ips[${n}]`;
    const c = objectAt(raw, ip);
    const address = reqString(c, 'address', ip);
    if (!isIPPrefix(address)) throw invalidField(join(ip, 'address'), `not an address with prefix: ${JSON.stringify(address)}`);
    if (is0x && c['version'] !== undefined && c['version'] !== ipFamily(address)) {
      throw invalidField(join(ip, 'version'), `is ${JSON.stringify(c['version'])} but address ${address} is IPv${ipFamily(address)}`);
    }
    const out: { -readonly [K in keyof CniIPConfig]: CniIPConfig[K] } = { address };
    const gw = optString(c, 'gateway', ip);
    if (gw !== undefined && gw !== '') {
      if (!isIP(gw)) throw invalidField(join(ip, 'gateway'), `not an IP address: ${JSON.stringify(gw)}`);
      out.gateway = gw;
    }
    const idx = optInt(c, 'interface', ip, 0, U32);
    if (idx !== undefined) {
      if (idx >= interfaces.length) throw invalidField(join(ip, 'interface'), `index ${idx} names no interface (${interfaces.length} listed)`);
      out.interface = idx;
    }
    return out;
  });

  const routes: CniRoute[] = (optArray(o, 'routes', p) ?? []).map((raw, n) => routeFrom(objectAt(raw, `${p}.routes[${n}]`), `${p}.routes[${n}]`));

  const dnsRaw = o['dns'];
  const dns = dnsRaw === undefined || dnsRaw === null ? {} : dnsFrom(objectAt(dnsRaw, `${p}.dns`), `${p}.dns`);
  return { interfaces, ips, routes, dns };
}

function routeFrom(r: JsonObject, p: string): CniRoute {
  const dst = reqString(r, 'dst', p);
  if (!isIPPrefix(dst)) throw invalidField(join(p, 'dst'), `not an address with prefix: ${JSON.stringify(dst)}`);
  const out: { -readonly [K in keyof CniRoute]: CniRoute[K] } = { dst };
  const gw = optString(r, 'gw', p);
  if (gw !== undefined && gw !== '') {
    if (!isIP(gw)) throw invalidField(join(p, 'gw'), `not an IP address: ${JSON.stringify(gw)}`);
    out.gw = gw;
  }
  for (const k of ['mtu', 'advmss', 'priority', 'table', 'scope'] as const) {
    const n = optInt(r, k, p, 0, k === 'scope' ? 255 : U32);
    if (n !== undefined) out[k] = n;
  }
  return out;
}
