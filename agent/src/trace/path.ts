/**
 * trace/path: a packet's way across the nodes of a cluster, after the
 * Service rules of the node it starts on have decided its destination.
 * Pure: the routes, neighbours, FDB entries and links of every node were
 * read by the caller (trace/cluster.ts, over netlink); this follows them
 * the way the kernel does, hop by hop:
 *
 *   - the route lookup on the node (longest prefix, the main table): a
 *     local address ends the trip on the node itself; a route on the pod
 *     bridge delivers to the pod; an onlink route on the VXLAN device
 *     names the remote VTEP's address, whose permanent neighbour entry
 *     gives its MAC, whose FDB entry gives the remote node's underlay IP:
 *     the packet is encapsulated (UDP 8472) to that node, and the trip goes
 *     on there; a route of the routed backends (no tunnel) names the peer
 *     node's underlay IP as its gateway on the underlay interface: host-gw's
 *     (`proto 78`, nodenet's own protocol number) or BIRD's (`proto bird`,
 *     12: learned over BGP, the next hop the peer's address); the packet is
 *     forwarded to that node as it is, and the trip goes on there; any other
 *     route leaves the cluster (its gateway);
 *   - at each hop the masquerade decision: the Service rules' (kube-proxy's
 *     mark) on the first node, and the overlay's (flannel's rule: a pod's
 *     packet to the cluster network keeps its source; one leaving it is
 *     masqueraded to the node's address).
 *
 * A missing entry is the answer too: no neighbour for the VTEP, no FDB
 * entry for its MAC, or an underlay IP no node owns (a VTEP's, or the
 * gateway of a host-gw or BGP route) is where the packet is lost, and the
 * trace says so.
 */
import { cidrContains, isIPv4, parseIPNet } from '../../../lib/net/ip.js';
import type { AddressInfo, FdbEntry, LinkInfo, NeighInfo, RouteInfo } from '../netlink/ops.js';

/** One node's network, as netlink lists it in the node's namespace. */
export interface NodeNetwork {
  readonly name: string;
  readonly links: readonly LinkInfo[];
  readonly addresses: readonly AddressInfo[];
  readonly routes: readonly RouteInfo[];
  /** Neighbour entries of the VXLAN device (others may be left out). */
  readonly neighs: readonly NeighInfo[];
  /** Static FDB entries of the VXLAN device. */
  readonly fdb: readonly FdbEntry[];
}

export interface PathOptions {
  /** The cluster's pod network (flannel's masquerade rule); null: every pod packet keeps its source. */
  readonly clusterCIDR: string | null;
  /** Pod IP → "namespace/name", to name where a packet lands. */
  readonly pods?: ReadonlyMap<string, string>;
}

export interface PathStart {
  readonly node: string;
  readonly source: string;
  /** The destination after the first node's Service rules (the endpoint's IP, or the original one). */
  readonly destination: string;
  /** Whether the Service rules marked the packet for masquerade. */
  readonly serviceMasquerade: boolean;
}

export type HopKind = 'local' | 'pod' | 'overlay' | 'routed' | 'out' | 'lost';

/** rtm_protocol of host-gw's routes (overlay/hostgw's RTPROT_NODENET), as RouteInfo lists it. */
export const PROTO_HOSTGW = '78';
/** rtm_protocol of BIRD's routes (rt_protos: 12 bird), as RouteInfo lists it; 'bird' accepted too. */
export const PROTO_BIRD = '12';

/** Which routed backend wrote a route, from its protocol; null for any other. Pure. */
export function routedBackend(r: RouteInfo): 'host-gw' | 'bgp' | null {
  if (r.protocol === PROTO_HOSTGW) return 'host-gw';
  if (r.protocol === PROTO_BIRD || r.protocol === 'bird') return 'bgp';
  return null;
}

export interface Hop {
  readonly node: string;
  readonly kind: HopKind;
  /** What the kernel did, for people. */
  readonly text: string;
  /** The route that matched ("dst via gw dev X"), when one did. */
  readonly route?: string;
  /** The packet's source as it leaves this hop. */
  readonly source: string;
  /** overlay hops: the VTEP, its MAC and the remote underlay IP the packet is sent to. */
  readonly vtep?: { readonly ip: string; readonly mac: string; readonly underlayIP: string; readonly remoteNode: string | null };
  /** routed hops (no tunnel): the gateway (the peer's underlay IP, BGP's next hop), its node, and who wrote the route. */
  readonly routed?: { readonly gateway: string; readonly remoteNode: string | null; readonly backend: 'host-gw' | 'bgp' | null; readonly protocol: string };
  /** Whether this hop masquerades the packet (and why). */
  readonly masquerade: { readonly yes: boolean; readonly why: string };
}

export interface PathResult {
  readonly hops: readonly Hop[];
  /** Where it ends: 'pod' (delivered), 'local' (to a node), 'out' (leaves the cluster) or 'lost'. */
  readonly end: HopKind;
}

function prefixOf(dst: string): number {
  return dst === 'default' ? 0 : Number(dst.split('/')[1]);
}

function matches(r: RouteInfo, ip: string): boolean {
  return r.dst === 'default' || cidrContains(r.dst, ip);
}

/** The main table's route for ip: longest prefix first (ties: the first listed, as the kernel's metric order). */
export function lookupRoute(routes: readonly RouteInfo[], ip: string): RouteInfo | null {
  let best: RouteInfo | null = null;
  for (const r of routes) if (matches(r, ip) && (best === null || prefixOf(r.dst) > prefixOf(best.dst))) best = r;
  return best;
}

function describeRoute(r: RouteInfo, links: readonly LinkInfo[]): string {
  const dev = r.dev ?? links.find((l) => l.index === r.ifIndex)?.name ?? `if${r.ifIndex ?? '?'}`;
  return `${r.dst}${r.gw ? ` via ${r.gw}` : ''} dev ${dev}${r.onlink ? ' onlink' : ''}`;
}

function ownIPs(n: NodeNetwork): string[] {
  return n.addresses.map((a) => parseIPNet(a.address).ip);
}

/** The node's address a masqueraded packet leaves with: the one on the outgoing device's subnet, else its first. */
function masqueradeAddress(n: NodeNetwork, link: LinkInfo | undefined, towards: string): string {
  const onDev = n.addresses.filter((a) => a.ifIndex === link?.index).map((a) => a.address);
  const inSubnet = onDev.find((a) => cidrContains(parseIPNet(a).network.cidr, towards));
  return parseIPNet(inSubnet ?? onDev[0] ?? n.addresses.find((a) => !a.address.startsWith('127.'))?.address ?? '0.0.0.0/32').ip;
}

function inCluster(o: PathOptions, ip: string): boolean {
  return o.clusterCIDR !== null && cidrContains(o.clusterCIDR, ip);
}

/** Follows one packet from `start.node` to its end. Pure. */
export function tracePath(nodes: readonly NodeNetwork[], start: PathStart, o: PathOptions): PathResult {
  const hops: Hop[] = [];
  const dst = start.destination;
  if (!isIPv4(dst) || !isIPv4(start.source)) throw new TypeError('tracePath: IPv4 source and destination expected');
  let node = nodes.find((n) => n.name === start.node);
  let source = start.source;
  let first = true;
  const seen = new Set<string>();
  const byUnderlay = (ip: string) => nodes.find((n) => ownIPs(n).includes(ip)) ?? null;
  const podName = (ip: string) => (o.pods?.get(ip) ? ` (${o.pods.get(ip)})` : '');
  while (node) {
    if (seen.has(node.name)) {
      hops.push({ node: node.name, kind: 'lost', text: 'a routing loop: the packet came back to a node it left', source, masquerade: { yes: false, why: '' } });
      return { hops, end: 'lost' };
    }
    seen.add(node.name);
    const serviceMasq = first && start.serviceMasquerade;
    first = false;
    if (ownIPs(node).includes(dst)) {
      hops.push({ node: node.name, kind: 'local', text: `${dst} is this node's own address: delivered to the node`, source, masquerade: { yes: false, why: 'delivered locally' } });
      return { hops, end: 'local' };
    }
    const r = lookupRoute(node.routes, dst);
    if (!r) {
      hops.push({ node: node.name, kind: 'lost', text: `no route to ${dst}: the kernel drops it (network unreachable)`, source, masquerade: { yes: false, why: '' } });
      return { hops, end: 'lost' };
    }
    const link = node.links.find((l) => l.index === r.ifIndex || (r.dev !== undefined && l.name === r.dev));
    const route = describeRoute(r, node.links);
    if (link?.kind === 'vxlan') {
      const gw = r.gw ?? dst;
      const neigh = node.neighs.find((n) => n.ip === gw && n.ifIndex === link.index);
      const masq = serviceMasq
        ? { yes: true, why: 'the Service rules marked it (kube-proxy masquerade)' }
        : { yes: false, why: inCluster(o, source) ? 'pod to pod inside the cluster network: the source is kept' : 'not from the cluster network' };
      if (masq.yes) source = masqueradeAddress(node, link, gw);
      if (!neigh?.mac) {
        hops.push({ node: node.name, kind: 'lost', text: `route ${route}, but no neighbour entry for the VTEP ${gw} on ${link.name}: the kernel cannot build the inner frame`, route, source, masquerade: masq });
        return { hops, end: 'lost' };
      }
      const fdb = node.fdb.find((f) => f.mac === neigh.mac && f.ifIndex === link.index && f.dst);
      if (!fdb?.dst) {
        hops.push({ node: node.name, kind: 'lost', text: `route ${route}, VTEP ${gw} is ${neigh.mac}, but no FDB entry for that MAC on ${link.name}: nowhere to send the VXLAN packet`, route, source, masquerade: masq });
        return { hops, end: 'lost' };
      }
      const remote = byUnderlay(fdb.dst);
      const vx = link.vxlan ? `VNI ${link.vxlan.vni}, UDP ${link.vxlan.port}` : 'VXLAN';
      hops.push({
        node: node.name, kind: 'overlay', route, source, masquerade: masq,
        text: `route ${route}; neighbour ${gw} is ${neigh.mac}; FDB ${neigh.mac} → ${fdb.dst}: encapsulated (${vx}) to ${fdb.dst}${remote ? ` (node ${remote.name})` : ' (no node in this cluster has that address)'}`,
        vtep: { ip: gw, mac: neigh.mac, underlayIP: fdb.dst, remoteNode: remote?.name ?? null },
      });
      if (!remote) return { hops, end: 'lost' };
      node = remote;
      continue;
    }
    if (link?.kind === 'bridge' && !r.gw) {
      const masq = serviceMasq ? { yes: true, why: 'the Service rules marked it (kube-proxy masquerade: hairpin or from outside)' } : { yes: false, why: 'delivered on the node\'s own pod bridge' };
      if (masq.yes) source = masqueradeAddress(node, link, dst);
      hops.push({ node: node.name, kind: 'pod', route, source, masquerade: masq, text: `route ${route}: bridged on ${link.name} to the pod ${dst}${podName(dst)}` });
      return { hops, end: 'pod' };
    }
    // A routed backend's route: host-gw's or BIRD's, or any route to the cluster network via a node's address.
    const backend = routedBackend(r);
    const gwNode = r.gw ? byUnderlay(r.gw) : null;
    if (r.gw && link?.kind !== 'bridge' && (backend !== null || (gwNode !== null && inCluster(o, dst)))) {
      let masq: Hop['masquerade'];
      if (serviceMasq) masq = { yes: true, why: 'the Service rules marked it (kube-proxy masquerade)' };
      else if (inCluster(o, source) && !inCluster(o, dst)) masq = { yes: true, why: 'a pod\'s packet leaving the cluster network (the overlay\'s masquerade rule)' };
      else masq = { yes: false, why: inCluster(o, source) ? 'pod to pod inside the cluster network: the source is kept' : 'not from the cluster network' };
      if (masq.yes) source = masqueradeAddress(node, link, r.gw);
      const where = gwNode ? ` (node ${gwNode.name})` : ' (no node in this cluster has that address)';
      const how = backend === 'host-gw'
        ? `routed via ${r.gw}${where}, host-gw route (proto 78)`
        : backend === 'bgp'
          ? `BGP-learned route (proto bird) via ${r.gw}${where}`
          : `routed via ${r.gw}${where}`;
      hops.push({
        node: node.name, kind: gwNode ? 'routed' : 'lost', route, source, masquerade: masq,
        text: `route ${route}: ${how}, out of ${link?.name ?? 'the node'} with no tunnel`,
        routed: { gateway: r.gw, remoteNode: gwNode?.name ?? null, backend, protocol: r.protocol },
      });
      if (!gwNode) return { hops, end: 'lost' };
      node = gwNode;
      continue;
    }
    // Any other route leaves the cluster network (the node's uplink, its gateway).
    let masq: Hop['masquerade'];
    if (serviceMasq) masq = { yes: true, why: 'the Service rules marked it (kube-proxy masquerade)' };
    else if (inCluster(o, source) && !inCluster(o, dst)) masq = { yes: true, why: 'a pod\'s packet leaving the cluster network (the overlay\'s masquerade rule)' };
    else masq = { yes: false, why: inCluster(o, source) ? 'to the cluster network' : 'not from a pod' };
    if (masq.yes) source = masqueradeAddress(node, link, r.gw ?? dst);
    const next = byUnderlay(r.gw ?? dst);
    hops.push({ node: node.name, kind: 'out', route, source, masquerade: masq, text: `route ${route}: out of ${link?.name ?? 'the node'}${r.gw ? ` to the gateway ${r.gw}` : ''}${next ? ` (node ${next.name})` : ''}` });
    if (!next) return { hops, end: 'out' };
    node = next;
  }
  hops.push({ node: start.node, kind: 'lost', text: `no node named ${start.node}`, source, masquerade: { yes: false, why: '' } });
  return { hops, end: 'lost' };
}

/** The path for people, one line per hop. Pure. */
export function formatPath(p: PathResult): string {
  const lines = ['path:'];
  p.hops.forEach((h, i) => {
    lines.push(`  ${i + 1}. ${h.node}: ${h.text}`);
    lines.push(`     masquerade: ${h.masquerade.yes ? `yes, source now ${h.source}` : 'no'}${h.masquerade.why ? ` (${h.masquerade.why})` : ''}`);
  });
  const end = { pod: 'delivered to the pod', local: 'delivered to a node', out: 'left the cluster', lost: 'lost (see the last hop)', overlay: '', routed: '' }[p.end];
  lines.push(`end: ${end}`);
  return `${lines.join('\n')}\n`;
}
