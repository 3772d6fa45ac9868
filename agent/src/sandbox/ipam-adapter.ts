/**
 * sandbox/ipam-adapter: the host-local style Ipam as the sandbox's narrow
 * SandboxIpam. Parses the raw ipam section with the node's podCIDR as the
 * default subnet, honours ipam.dataDir (the store's directory) and
 * ipam.resolvConf (read on ADD into the result's DNS).
 */
import { readFile } from 'node:fs/promises';
import type { Ipam } from '../ipam/ipam.js';
import { ipamDataDir, parseIpamConf } from '../ipam/config.js';
import { ipamInvalid } from '../ipam/ipam-errors.js';
import { parseResolvConf } from '../ipam/resolv-conf.js';
import type { IPv4 } from '../../../lib/net/ip.js';
import { addressIn } from '../ipam/range.js';
import { rangeFor } from '../ipam/range-set.js';
import type { IpamResult, SandboxIpam } from './deps.js';

/** ipam.dataDir when the raw section carries a readable one; DEL must work even when the rest does not parse. */
function dataDirOf(raw: unknown): string | undefined {
  try {
    return ipamDataDir(raw);
  } catch {
    return undefined;
  }
}

export class IpamAdapter implements SandboxIpam {
  constructor(private readonly ipam: Ipam, private readonly podCIDR: string | null) {}

  private conf(raw: unknown, network: string) {
    return parseIpamConf(network, raw ?? {}, this.podCIDR ? { defaultSubnet: this.podCIDR } : {});
  }

  async add(raw: unknown, network: string, id: string, ifName: string, requestedIPs: readonly string[]): Promise<IpamResult> {
    const conf = this.conf(raw, network);
    let dns: Record<string, unknown> | undefined;
    if (conf.resolvConf) {
      let text: string;
      try {
        text = await readFile(conf.resolvConf, 'utf8');
      } catch (e) {
        throw ipamInvalid('ipam.resolvConf', `cannot read ${conf.resolvConf}: ${(e as NodeJS.ErrnoException).code ?? String(e)}`);
      }
      dns = { ...parseResolvConf(text) };
    }
    const r = await this.ipam.add(conf, { id, ifName, requestedIPs });
    return {
      ips: r.ips.map((i) => (i.gateway ? { address: i.address, gateway: i.gateway } : { address: i.address })),
      routes: r.routes.map((x) => (x.gw ? { dst: x.dst, gw: x.gw } : { dst: x.dst })),
      ...(dns ? { dns } : {}),
    };
  }

  async del(raw: unknown, network: string, id: string, ifName: string): Promise<void> {
    await this.ipam.del(network, id, ifName, dataDirOf(raw));
  }

  async get(raw: unknown, network: string, id: string, ifName: string): Promise<readonly string[]> {
    return this.ipam.get(network, id, ifName, dataDirOf(raw));
  }

  async gc(raw: unknown, network: string, valid: readonly { id: string; ifName: string }[]): Promise<readonly IPv4[]> {
    return this.ipam.gc(network, valid, dataDirOf(raw));
  }

  async find(id: string, ifName: string): Promise<readonly { network: string; ips: readonly string[] }[]> {
    return this.ipam.find(id, ifName);
  }

  addresses(raw: unknown, network: string, ips: readonly string[]): readonly string[] {
    let sets: ReturnType<IpamAdapter['conf']>['rangeSets'] = [];
    try {
      sets = this.conf(raw, network).rangeSets;
    } catch {
      return [...ips]; // a config that no longer parses: the IPs as they are
    }
    return ips.map((ip) => {
      for (const set of sets) {
        const r = rangeFor(set, ip as IPv4);
        if (r) return addressIn(r, ip as IPv4);
      }
      return ip;
    });
  }
}
