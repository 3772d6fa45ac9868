/**
 * overlay/underlay: the interface and address a node's overlay traffic
 * leaves by (flannel's --iface and public IP), shared by the backends.
 */
import { ErrorCode, NodenetError } from '../../../lib/errors/errors.js';
import { parseIPNet } from '../../../lib/net/ip.js';
import type { LinkInfo, NetlinkOps } from '../netlink/ops.js';

export interface Underlay {
  /** The underlay interface (flannel --iface). */
  readonly name: string;
  readonly index: number;
  /** Its address the VXLAN packets leave from: the node's public IP unless overwritten. */
  readonly ip: string;
  readonly mtu: number;
}

/**
 * The underlay: the named interface, else the one the default route leaves
 * by, else the one holding `fallbackIP` (the Node's InternalIP). Its address
 * is the default route's preferred source when it has one there, else its
 * first (primary) IPv4 address.
 * @throws NodenetError(InvalidConfig) naming what is missing.
 */
export async function findUnderlay(nl: NetlinkOps, want: { readonly iface: string | null; readonly fallbackIP?: string | null }): Promise<Underlay> {
  const links = await nl.listLinks();
  const addrs = await nl.listAddresses();
  let link: LinkInfo | undefined;
  let src: string | undefined;
  if (want.iface) {
    link = links.find((l) => l.name === want.iface);
    if (!link) throw new NodenetError(ErrorCode.InvalidConfig, `config underlayInterface: no interface ${want.iface} on this node`);
  } else {
    const def = (await nl.listRoutes()).find((r) => r.dst === 'default' && r.ifIndex !== undefined);
    if (def) {
      link = links.find((l) => l.index === def.ifIndex);
      src = def.src;
    }
    if (!link && want.fallbackIP) {
      const a = addrs.find((x) => parseIPNet(x.address).ip === want.fallbackIP);
      link = a && links.find((l) => l.index === a.ifIndex);
    }
    if (!link) throw new NodenetError(ErrorCode.InvalidConfig, 'overlay vxlan: no default route and no interface holding the node IP; name the underlay (--iface)');
  }
  const own = addrs.filter((a) => a.ifIndex === link.index).map((a) => parseIPNet(a.address).ip);
  const ip = src && own.includes(src as never) ? src : own[0];
  if (!ip) throw new NodenetError(ErrorCode.InvalidConfig, `overlay vxlan: the underlay interface ${link.name} has no IPv4 address`);
  return { name: link.name, index: link.index, ip, mtu: link.mtu };
}
