/** Adapts the host-local style Ipam to the sandbox's narrow SandboxIpam: parses the raw ipam section with the node's podCIDR as default subnet. */
import type { Ipam } from '../ipam/ipam.js';
import { parseIpamConf } from '../ipam/config.js';
import type { IPv4 } from '../net/ip.js';
import type { IpamResult, SandboxIpam } from './deps.js';

export class IpamAdapter implements SandboxIpam {
  constructor(private readonly ipam: Ipam, private readonly podCIDR: string | null) {}

  private conf(raw: unknown, network: string) {
    return parseIpamConf(network, raw ?? {}, this.podCIDR ? { defaultSubnet: this.podCIDR } : {});
  }

  async add(raw: unknown, network: string, id: string, ifName: string, requestedIPs: readonly string[]): Promise<IpamResult> {
    const r = await this.ipam.add(this.conf(raw, network), { id, ifName, requestedIPs });
    return {
      ips: r.ips.map((i) => (i.gateway ? { address: i.address, gateway: i.gateway } : { address: i.address })),
      routes: r.routes.map((x) => (x.gw ? { dst: x.dst, gw: x.gw } : { dst: x.dst })),
    };
  }

  async del(_raw: unknown, network: string, id: string, ifName: string): Promise<void> {
    await this.ipam.del(network, id, ifName);
  }

  async get(_raw: unknown, network: string, id: string, ifName: string): Promise<readonly string[]> {
    return this.ipam.get(network, id, ifName);
  }

  async gc(_raw: unknown, network: string, valid: readonly { id: string; ifName: string }[]): Promise<readonly IPv4[]> {
    return this.ipam.gc(network, valid);
  }
}
