/**
 * testing/node-networks: the networks of a lab's nodes as netlink lists
 * them (links, addresses, routes, the VXLAN device's neighbour and FDB
 * entries), for the path tracer's tests: node N on 192.168.77.(10+N), its
 * pods on cbr0 in 10.244.N.0/24, nodenet.1 with an onlink route, a
 * neighbour and an FDB entry for each other node of 1..3; or, for the
 * routed backends (routedNode), no device and a route per other node's pod
 * CIDR via its underlay IP on eth0: host-gw's (proto 78) or BIRD's (proto
 * bird, listed as 12).
 */
import type { LinkInfo, RouteInfo } from '../netlink/ops.js';
import type { NodeNetwork } from '../trace/path.js';

const link = (index: number, name: string, kind?: string, mac = `02:00:00:00:00:0${index}`): LinkInfo => ({
  index, name, mac, mtu: 1500, up: true, promisc: false, ...(kind ? { kind } : {}), ...(kind === 'vxlan' ? { vxlan: { vni: 1, port: 8472, learning: false } } : {}),
});
const route = (dst: string, ifIndex: number, extra: Partial<RouteInfo> = {}): RouteInfo => ({ dst, ifIndex, onlink: false, scope: 'universe', protocol: 'boot', ...extra });

/** A node of a 3-node overlay: eth0 on 192.168.77.0/24, cbr0 with its pod CIDR, nodenet.1 with routes to the others. */
export function overlayNode(i: number, opts: { skipNeigh?: number; skipFdb?: number } = {}): NodeNetwork {
  const others = [1, 2, 3].filter((j) => j !== i);
  return {
    name: `n${i}`,
    links: [link(1, 'lo'), link(2, 'eth0'), link(3, 'cbr0', 'bridge'), link(4, 'nodenet.1', 'vxlan', `0e:00:00:00:00:0${i}`)],
    addresses: [
      { ifIndex: 1, address: '127.0.0.1/8' },
      { ifIndex: 2, address: `192.168.77.1${i}/24` },
      { ifIndex: 3, address: `10.244.${i}.1/24` },
      { ifIndex: 4, address: `10.244.${i}.0/32` },
    ],
    routes: [
      route('default', 2, { gw: '192.168.77.1' }),
      route('192.168.77.0/24', 2, { scope: 'link', protocol: 'kernel' }),
      route(`10.244.${i}.0/24`, 3, { scope: 'link', protocol: 'kernel' }),
      ...others.map((j) => route(`10.244.${j}.0/24`, 4, { gw: `10.244.${j}.0`, onlink: true })),
    ],
    neighs: others.filter((j) => j !== opts.skipNeigh).map((j) => ({ ifIndex: 4, ip: `10.244.${j}.0`, mac: `0e:00:00:00:00:0${j}`, permanent: true })),
    fdb: others.filter((j) => j !== opts.skipFdb).map((j) => ({ ifIndex: 4, mac: `0e:00:00:00:00:0${j}`, dst: `192.168.77.1${j}`, permanent: true })),
  };
}


/** A node of a 3-node routed cluster: no VXLAN device, each other node's pod CIDR via its underlay IP on eth0 (host-gw: proto 78; bgp: BIRD's 12). */
export function routedNode(i: number, backend: 'host-gw' | 'bgp', opts: { skipRoute?: number; gateway?: (j: number) => string } = {}): NodeNetwork {
  const others = [1, 2, 3].filter((j) => j !== i && j !== opts.skipRoute);
  return {
    name: `n${i}`,
    links: [link(1, 'lo'), link(2, 'eth0'), link(3, 'cbr0', 'bridge')],
    addresses: [
      { ifIndex: 1, address: '127.0.0.1/8' },
      { ifIndex: 2, address: `192.168.77.1${i}/24` },
      { ifIndex: 3, address: `10.244.${i}.1/24` },
    ],
    routes: [
      route('default', 2, { gw: '192.168.77.1' }),
      route('192.168.77.0/24', 2, { scope: 'link', protocol: 'kernel' }),
      route(`10.244.${i}.0/24`, 3, { scope: 'link', protocol: 'kernel' }),
      ...others.map((j) => route(`10.244.${j}.0/24`, 2, { gw: opts.gateway?.(j) ?? `192.168.77.1${j}`, protocol: backend === 'host-gw' ? '78' : '12' })),
    ],
    neighs: [],
    fdb: [],
  };
}
