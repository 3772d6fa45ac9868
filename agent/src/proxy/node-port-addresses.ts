/**
 * proxy/node-port-addresses: which of the node's addresses serve NodePorts
 * (kube-proxy's --nodeport-addresses), and what the node's "primary" IP is.
 * Pure: the caller reads links, addresses and routes (netlink) and passes them.
 *
 * The option is a list of CIDRs, or the single value `primary`:
 * - CIDRs: the node's local addresses inside them serve NodePorts. A zero
 *   CIDR (0.0.0.0/0) means every address; IPv6 CIDRs are left out, and a
 *   list left empty by that means every address too (kube-proxy's
 *   NewNodePortAddresses does both).
 * - `primary`: the node's primary IPv4 address only, as a /32.
 * - unset: kube-proxy's per-mode default. nftables mode: `primary`.
 *   iptables mode: every local address, 127.0.0.1 included (route_localnet).
 * nftables mode never serves NodePorts on 127.0.0.0/8 whatever the list says.
 *
 * "Primary" is what kube-proxy calls the node IP (the Node's InternalIP;
 * kubelet picks it, without --node-ip, as the address of the interface that
 * holds the default route). nodenet decides it from the node's own network,
 * in this order:
 * 1. the default route's preferred source (`ip route add default ... src X`);
 * 2. else the first address on the default route's interface;
 * 3. with no default route, the first address on an interface that is not
 *    loopback, the pod bridge (cbr0) or a bridge, VXLAN or dummy device.
 * Loopback and link-local addresses never count. On a lab node that is eth0's
 * underlay address; the bridge's gateway address and the VXLAN device's
 * overlay address, which no client outside the node should use as a NodePort
 * destination, are exactly the ones it leaves out. When no primary IP can be
 * found, `primary` falls back to every local address, as kube-proxy does with
 * an empty list.
 *
 * The primary IP is read once at start (as kube-proxy reads the node IP);
 * the CIDRs are matched by the kernel at each packet (`-d CIDR --dst-type
 * LOCAL`, `fib daddr type local ip daddr CIDR`), so an address added later
 * inside a CIDR serves at once.
 */
import { ErrorCode, NodenetError } from '../../../lib/errors/errors.js';
import { cidrContains, isIPv4, parseCidr, parseIPNet, type Cidr, type IPv4 } from '../../../lib/net/ip.js';

/** The special value of the option. */
export const NODE_PORT_ADDRESSES_PRIMARY = 'primary';

/** The option, validated: the primary IP, or CIDRs (null: every local address). */
export type NodePortAddressesOption = { readonly kind: 'primary' } | { readonly kind: 'cidrs'; readonly cidrs: readonly Cidr[] | null };

/** The option from config: a list of CIDRs or ['primary']. @throws NodenetError(InvalidConfig) naming the bad entry */
export function parseNodePortAddresses(values: readonly string[]): NodePortAddressesOption {
  const vs = values.map((v) => v.trim()).filter((v) => v !== '');
  if (vs.includes(NODE_PORT_ADDRESSES_PRIMARY)) {
    if (vs.length > 1) throw new NodenetError(ErrorCode.InvalidConfig, `nodePortAddresses: "${NODE_PORT_ADDRESSES_PRIMARY}" must be the only value, got ${JSON.stringify(vs)}`);
    return { kind: 'primary' };
  }
  const cidrs: Cidr[] = [];
  for (const v of vs) {
    if (v.includes(':')) {
      if (!/^[0-9a-fA-F:.]+\/\d{1,3}$/.test(v)) throw new NodenetError(ErrorCode.InvalidConfig, `nodePortAddresses: ${JSON.stringify(v)} is not a CIDR`);
      continue; // IPv6: valid, nothing for this IPv4 proxy
    }
    let c;
    try {
      c = parseCidr(v);
    } catch {
      throw new NodenetError(ErrorCode.InvalidConfig, `nodePortAddresses: ${JSON.stringify(v)} is not a CIDR (e.g. 192.168.77.0/24) or "${NODE_PORT_ADDRESSES_PRIMARY}"`);
    }
    if (c.prefix === 0) return { kind: 'cidrs', cidrs: null }; // the zero CIDR: everything, the rest does not matter
    if (!cidrs.includes(c.cidr)) cidrs.push(c.cidr);
  }
  return { kind: 'cidrs', cidrs: cidrs.length ? cidrs : null };
}

/** The parts of a link, an address and a route this module reads (netlink's LinkInfo, AddressInfo, RouteInfo). */
export interface NodeLink {
  readonly index: number;
  readonly name: string;
  readonly kind?: string;
}
export interface NodeAddress {
  readonly ifIndex: number;
  /** "a.b.c.d/nn". */
  readonly address: string;
}
export interface NodeRoute {
  readonly dst: string;
  readonly ifIndex?: number;
  readonly src?: string;
}

export interface NodeNetwork {
  readonly links: readonly NodeLink[];
  readonly addresses: readonly NodeAddress[];
  readonly routes: readonly NodeRoute[];
}

const NOT_PRIMARY_KINDS = new Set(['bridge', 'vxlan', 'dummy']);

function usable(ip: string): boolean {
  return isIPv4(ip) && !cidrContains('127.0.0.0/8', ip) && !cidrContains('169.254.0.0/16', ip) && ip !== '0.0.0.0';
}

function addressesOf(net: NodeNetwork, ifIndex: number): IPv4[] {
  const out: IPv4[] = [];
  for (const a of net.addresses) {
    if (a.ifIndex !== ifIndex) continue;
    try {
      const ip = parseIPNet(a.address).ip;
      if (usable(ip)) out.push(ip);
    } catch {
      /* not IPv4 */
    }
  }
  return out;
}

/** The node's primary IPv4 address (see the header for the order), or null. `bridge`: the pod bridge's name. */
export function primaryNodeIP(net: NodeNetwork, bridge: string): IPv4 | null {
  const own = new Set(net.addresses.map((a) => a.address.split('/')[0]));
  for (const r of net.routes) {
    if (r.dst !== 'default' && r.dst !== '0.0.0.0/0') continue;
    if (r.src && usable(r.src) && own.has(r.src)) return r.src as IPv4;
    if (r.ifIndex !== undefined) {
      const first = addressesOf(net, r.ifIndex)[0];
      if (first) return first;
    }
  }
  for (const l of net.links) {
    if (l.name === 'lo' || l.name === bridge || (l.kind !== undefined && NOT_PRIMARY_KINDS.has(l.kind))) continue;
    const first = addressesOf(net, l.index)[0];
    if (first) return first;
  }
  return null;
}

export interface ResolvedNodePortAddresses {
  /** What the renderers take (ProxyNodeConfig.nodePortAddresses): null = every local address. */
  readonly cidrs: readonly Cidr[] | null;
  /** The node's primary IP, whatever the option (the LB firewall uses it), or null. */
  readonly primaryIP: IPv4 | null;
  /**
   * Where health check servers listen (kube-proxy: 0.0.0.0 when every
   * address serves NodePorts, else the node's addresses inside the CIDRs).
   */
  readonly healthCheckAddresses: readonly string[];
  /** One line for the log: what serves NodePorts and why. */
  readonly description: string;
  /** Problems worth a warning (no primary IP found, loopback in nftables mode). */
  readonly warnings: readonly string[];
}

/**
 * Resolves the option (null: the mode's default) against the node's network.
 * Pure; `net` is read once at start.
 */
export function resolveNodePortAddresses(
  option: NodePortAddressesOption | null,
  mode: 'iptables' | 'nftables',
  net: NodeNetwork,
  opts: { readonly bridge: string },
): ResolvedNodePortAddresses {
  const primaryIP = primaryNodeIP(net, opts.bridge);
  const warnings: string[] = [];
  const opt: NodePortAddressesOption = option ?? (mode === 'nftables' ? { kind: 'primary' } : { kind: 'cidrs', cidrs: null });
  const dflt = option === null ? ` (the ${mode} mode's default)` : '';
  let cidrs: readonly Cidr[] | null;
  let description: string;
  if (opt.kind === 'primary') {
    if (primaryIP) {
      cidrs = [parseCidr(`${primaryIP}/32`).cidr];
      description = `NodePorts on the node's primary IP ${primaryIP} only${dflt}`;
    } else {
      cidrs = null;
      warnings.push('nodePortAddresses primary: no primary IP found (no default route, no address outside the bridge, VXLAN and loopback devices); NodePorts on every local address');
      description = 'NodePorts on every local address (no primary IP found)';
    }
  } else {
    cidrs = opt.cidrs;
    description = cidrs === null ? `NodePorts on every local address${mode === 'iptables' ? ', 127.0.0.1 included' : ' but 127.0.0.0/8'}${dflt}` : `NodePorts on the local addresses in ${cidrs.join(', ')}`;
    if (cidrs && mode === 'nftables' && cidrs.some((c) => cidrContains('127.0.0.0/8', c.split('/')[0]!))) {
      warnings.push('nodePortAddresses includes 127.0.0.0/8, but nftables mode has no NodePorts on localhost');
    }
  }
  let healthCheckAddresses: string[];
  if (cidrs === null) healthCheckAddresses = ['0.0.0.0'];
  else {
    healthCheckAddresses = [];
    for (const a of net.addresses) {
      let ip: IPv4;
      try {
        ip = parseIPNet(a.address).ip;
      } catch {
        continue;
      }
      if (cidrs.some((c) => cidrContains(c, ip)) && !healthCheckAddresses.includes(ip)) healthCheckAddresses.push(ip);
    }
  }
  return { cidrs, primaryIP, healthCheckAddresses, description, warnings };
}
