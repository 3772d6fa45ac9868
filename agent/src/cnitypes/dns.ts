/**
 * cnitypes/dns: the CNI `dns` object (config and result share it):
 * nameservers, domain, search, options, all optional.
 */
import { invalidField, isIP, optString, optStringArray, type JsonObject } from './fields.js';
import type { CniDNS } from './result.js';
import { join } from '../../../lib/json/read.js';

export function dnsFrom(o: JsonObject, p: string): CniDNS {
  const out: { -readonly [K in keyof CniDNS]: CniDNS[K] } = {};
  const ns = optStringArray(o, 'nameservers', p);
  if (ns) {
    ns.forEach((s, i) => {
      if (!isIP(s)) throw invalidField(`${join(p, 'nameservers')}[${i}]`, `not an IP address: ${JSON.stringify(s)}`);
    });
    if (ns.length) out.nameservers = ns;
  }
  const domain = optString(o, 'domain', p);
  if (domain) out.domain = domain;
  const search = optStringArray(o, 'search', p);
  if (search?.length) out.search = search;
  const options = optStringArray(o, 'options', p);
  if (options?.length) out.options = options;
  return out;
}
