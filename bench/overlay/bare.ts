/**
 * bench/overlay/bare: the kernel's own ceiling for the overlay, built by
 * hand. Pure: the commands only; run.ts runs them in the lab.
 *
 * nodenet's overlay (case b) is flannel's data path: a pod's veth on a
 * bridge, a route to the other node's pod subnet through a VXLAN device, a
 * permanent neighbour and an FDB entry for the peer VTEP, and on every node
 * the connection tracking that kube-proxy's Services need (a reply to a
 * DNATed connection is un-NATed from the conntrack entry, so every pod
 * packet is tracked). On this lab the whole path is CPU work on the same two
 * cores as the reference, so how far below the underlay it lands is a
 * property of the kernel as much as of nodenet. These paths measure that
 * property: the same devices, addresses and MTUs set up by hand between two
 * bare namespaces on the same underlay bridge, with no agent, and
 *   (d) bare-vxlan:  host → host over the VXLAN device alone (no pods, no bridge, no netfilter);
 *   (e) bare-pods:   pod → pod over bridge + VXLAN, no netfilter at all: the most any
 *                    VXLAN pod overlay can reach here;
 *   (f) bare-pods-conntrack: the same with connection tracking and NAT hooks (a
 *                    masquerade rule, flannel's), the kernel work every Kubernetes
 *                    node with Services does.
 * Case b against case f is nodenet's own cost; case e against case c is the
 * ceiling a goal for this lab must sit under.
 *
 * The routed paths (flannel's host-gw, Calico's BGP) have no tunnel: the pod
 * subnet of a peer is a plain route via the peer's underlay address, and the
 * pods get the underlay's whole MTU. Their ceiling, by hand the same way:
 *   (g) bare-routed:           pod → pod over bridge and a route via the peer, no netfilter;
 *   (h) bare-routed-conntrack: the same with the conntrack and NAT hooks.
 *
 * Addresses: hosts on the underlay at 192.168.77.220 + i (clients outside the
 * cluster start at .200), pod subnets 10.250.i.0/24 (outside the lab's
 * cluster and Service CIDRs), the VTEP at .0/32 and the bridge at .1 as
 * flannel and nodenet have them, the pod at .2. MACs are fixed and locally
 * administered, so the peers' entries need no lookup.
 */

/** One bare host and its pod. `index` 1..9. */
export interface BareHost {
  readonly index: number;
  /** The host's and its pod's namespace names. */
  readonly hostNs: string;
  readonly podNs: string;
}

/** The VXLAN device's name on a bare host (not nodenet.1: nothing here is nodenet's). */
export const BARE_VXLAN = 'vx0';
export const BARE_BRIDGE = 'br0';
/** The VNI and port nodenet uses, so the encapsulation is the same. */
const VNI = 1;
const PORT = 8472;
/** VXLAN over IPv4 adds 50 bytes: outer Ethernet 14, IPv4 20, UDP 8, VXLAN 8. */
export const VXLAN_OVERHEAD = 50;

function checkIndex(i: number): void {
  if (!Number.isInteger(i) || i < 1 || i > 9) throw new RangeError(`bare host index must be 1..9, got ${i}`);
}

export function bareUnderlayIP(i: number): string {
  checkIndex(i);
  return `192.168.77.${220 + i}`;
}
export function bareSubnet(i: number): string {
  checkIndex(i);
  return `10.250.${i}.0/24`;
}
/** The VTEP address on vx0 (.0/32, flannel's). */
export function bareVtepIP(i: number): string {
  checkIndex(i);
  return `10.250.${i}.0`;
}
/** The bridge's address: the pod's gateway (.1). */
export function bareGatewayIP(i: number): string {
  checkIndex(i);
  return `10.250.${i}.1`;
}
export function barePodIP(i: number): string {
  checkIndex(i);
  return `10.250.${i}.2`;
}
export function bareVtepMac(i: number): string {
  checkIndex(i);
  return `0e:6e:6e:00:00:0${i}`;
}
/** The host's end of its pod's veth. */
export function barePodPeer(i: number): string {
  checkIndex(i);
  return `vp${i}`;
}

/**
 * `ip -n <host> -batch -` input: the VXLAN device on eth0, the bridge, the
 * veth to the pod (its other end created in the pod's namespace), MTUs.
 * eth0 with the underlay address exists (Lab.addUnderlayHost).
 */
export function hostScript(h: BareHost, underlayMtu: number): string {
  checkIndex(h.index);
  const i = h.index;
  const mtu = underlayMtu - VXLAN_OVERHEAD;
  return [
    `link add ${BARE_VXLAN} address ${bareVtepMac(i)} type vxlan id ${VNI} dstport ${PORT} local ${bareUnderlayIP(i)} dev eth0 nolearning`,
    `link set ${BARE_VXLAN} mtu ${mtu}`,
    `addr add ${bareVtepIP(i)}/32 dev ${BARE_VXLAN}`,
    `link set ${BARE_VXLAN} up`,
    `link add ${BARE_BRIDGE} type bridge`,
    `link set ${BARE_BRIDGE} mtu ${mtu}`,
    `addr add ${bareGatewayIP(i)}/24 dev ${BARE_BRIDGE}`,
    `link set ${BARE_BRIDGE} up`,
    `link add ${barePodPeer(i)} mtu ${mtu} type veth peer name eth0 netns ${h.podNs}`,
    `link set ${barePodPeer(i)} master ${BARE_BRIDGE}`,
    `link set ${barePodPeer(i)} up`,
    '',
  ].join('\n');
}

/** `ip -n <pod> -batch -` input: the pod's address and default route through its host's bridge. */
export function podScript(h: BareHost, underlayMtu: number): string {
  checkIndex(h.index);
  const i = h.index;
  return [
    `link set eth0 mtu ${underlayMtu - VXLAN_OVERHEAD}`,
    `addr add ${barePodIP(i)}/24 dev eth0`,
    'link set eth0 up',
    `route add default via ${bareGatewayIP(i)}`,
    '',
  ].join('\n');
}

/**
 * `ip -n <host> -batch -` input for reaching `peer`: the neighbour entry for
 * its VTEP, then the onlink route to its pod subnet (last: the kernel must
 * never ARP for a gateway it cannot reach, flannel's order). The FDB entry
 * is `bridge fdb append` (peerFdb), before both.
 */
export function peerScript(peer: BareHost): string {
  checkIndex(peer.index);
  const j = peer.index;
  return [
    `neigh add ${bareVtepIP(j)} lladdr ${bareVtepMac(j)} dev ${BARE_VXLAN} nud permanent`,
    `route add ${bareSubnet(j)} via ${bareVtepIP(j)} dev ${BARE_VXLAN} onlink`,
    '',
  ].join('\n');
}

/** `bridge -n <host> ...` argv tail: the peer VTEP's MAC behind its underlay address. */
export function peerFdb(peer: BareHost): string[] {
  checkIndex(peer.index);
  return ['fdb', 'append', bareVtepMac(peer.index), 'dev', BARE_VXLAN, 'dst', bareUnderlayIP(peer.index)];
}

/**
 * `nft -f -` input for a host with conntrack (case f): flannel's masquerade
 * for pods leaving the cluster network, as nodenet's overlay table has it.
 * The rule is what turns conntrack on for every packet of the namespace (a
 * NAT chain without a NAT rule does not: measured) and its chain adds the
 * NAT hooks; it is consulted only for a connection's first packet and never
 * matches the pod-to-pod traffic measured. Nothing per packet beyond what
 * the kernel does for every node with Services or a masquerade rule.
 */
export const CONNTRACK_NFT = [
  'table ip nodenet-bench-conntrack {',
  '  chain postrouting {',
  '    type nat hook postrouting priority srcnat; policy accept;',
  '    ip saddr 10.250.0.0/16 ip daddr != 10.250.0.0/16 masquerade',
  '  }',
  '}',
  '',
].join('\n');

/**
 * `ip -n <host> -batch -` input for a routed host (cases g and h): the bridge and the veth to the pod, at the
 * underlay's MTU, no tunnel device.
 */
export function routedHostScript(h: BareHost, underlayMtu: number): string {
  checkIndex(h.index);
  const i = h.index;
  return [
    `link add ${BARE_BRIDGE} type bridge`,
    `link set ${BARE_BRIDGE} mtu ${underlayMtu}`,
    `addr add ${bareGatewayIP(i)}/24 dev ${BARE_BRIDGE}`,
    `link set ${BARE_BRIDGE} up`,
    `link add ${barePodPeer(i)} mtu ${underlayMtu} type veth peer name eth0 netns ${h.podNs}`,
    `link set ${barePodPeer(i)} master ${BARE_BRIDGE}`,
    `link set ${barePodPeer(i)} up`,
    '',
  ].join('\n');
}

/** `ip -n <pod> -batch -` input for a routed host's pod: the underlay's MTU. */
export function routedPodScript(h: BareHost, underlayMtu: number): string {
  return podScript(h, underlayMtu + VXLAN_OVERHEAD);
}

/** `ip -n <host> -batch -` input for reaching a routed `peer`: its pod subnet via its underlay address on eth0 (host-gw's route). */
export function routedPeerScript(peer: BareHost): string {
  checkIndex(peer.index);
  return `route add ${bareSubnet(peer.index)} via ${bareUnderlayIP(peer.index)} dev eth0\n`;
}
