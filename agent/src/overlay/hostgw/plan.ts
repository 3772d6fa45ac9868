/**
 * overlay/hostgw/plan: the routes of flannel's host-gw backend
 * (pkg/backend/hostgw, pkg/backend/route_network.go), and of the direct
 * routes of vxlan --direct-routing (../vxlan/plan.ts uses this). Pure: the
 * peers' leases and the kernel's routes in, ordered operations out.
 *
 * Per peer, one route, no device:
 *   <peer podCIDR> via <peer public IP> dev <underlay> proto 78
 * which the kernel accepts only when the peer's public IP is on a connected
 * network of the underlay (the same L2: the packet goes to the peer's own
 * MAC, with the pod IPs untouched).
 *
 * Reachability (flannel's ip.DirectRouting): the kernel's route to the peer's
 * public IP, the longest prefix of the main table, must have no gateway and
 * leave by the underlay. A peer behind a gateway would be sent to that router
 * with a pod destination it does not know: "routed half-way". Such a peer
 * gets no route (one it had is removed) and is returned in `notDirect`, with
 * why; the overlay reports it (host-gw), or tunnels to it (vxlan's hybrid).
 *
 * Ownership: every route this writes carries rtm_protocol 78 (RTPROT_NODENET,
 * a number no routing daemon of iproute2's list uses); only routes of that
 * protocol are ever removed, and removed naming it, so an admin's routes, the
 * kernel's, BIRD's (proto bird) or the VXLAN device's are never touched. A
 * route to a peer's pod CIDR that is not right (another gateway, device or
 * protocol: a vxlan leftover, an admin's) is replaced in place (NLM_F_REPLACE;
 * flannel's routeAdd replaces a route to the same destination too).
 *
 * Order: stale routes of ours first (a Node gone, one now behind a gateway),
 * then the routes added or replaced. A route already right is not touched: a
 * restarted agent that finds the kernel as it left it plans nothing. The
 * periodic sync re-reads the kernel and so re-adds a route deleted by hand
 * (flannel's RouteCheck, every 10 s).
 */
import { cidrContains, parseCidr } from '../../../../lib/net/ip.js';

/** rtm_protocol of nodenet's direct routes (host-gw, vxlan --direct-routing). */
export const RTPROT_NODENET = 78;
/** How listRoutes names it. */
export const NODENET_PROTOCOL = String(RTPROT_NODENET);

/** A peer as the direct routes need it. */
export interface DirectPeer {
  readonly node: string;
  readonly podCIDR: string;
  readonly publicIP: string;
}

/** A main-table route as listRoutes gives it. */
export interface RouteView {
  readonly dst: string;
  readonly gw?: string;
  readonly ifIndex?: number;
  readonly dev?: string;
  readonly protocol: string;
}

export interface RoutesState {
  /** The underlay interface (flannel's extIface): the routes leave by it. */
  readonly underlay: { readonly index: number; readonly name: string };
  readonly routes: readonly RouteView[];
}

export type DirectRouteOp =
  | { readonly op: 'addDirectRoute'; readonly dst: string; readonly gw: string; readonly node: string }
  | { readonly op: 'delDirectRoute'; readonly dst: string; readonly gw?: string; readonly node?: string };

/** A peer no direct route is made to, and why. */
export interface NotDirect {
  readonly node: string;
  readonly publicIP: string;
  readonly reason: string;
}

/** One line per operation, as `ip` would say it (logs and tests). */
export function describeDirectOp(o: DirectRouteOp, underlay: string): string {
  switch (o.op) {
    case 'addDirectRoute': return `route replace ${o.dst} via ${o.gw} dev ${underlay} proto ${RTPROT_NODENET}`;
    case 'delDirectRoute': return `route del ${o.dst}${o.gw ? ` via ${o.gw}` : ''} proto ${RTPROT_NODENET}`;
  }
}

/**
 * Whether `ip` is on this node's L2 network: the longest-prefix route to it in the main table (nodenet's own
 * direct routes left out: they lead to pods, never to a node) has no gateway and leaves by the underlay.
 */
export function directReach(ip: string, s: RoutesState): { readonly direct: true } | { readonly direct: false; readonly reason: string } {
  let best: RouteView | null = null;
  let bestLen = -1;
  for (const r of s.routes) {
    if (r.protocol === NODENET_PROTOCOL) continue;
    const len = r.dst === 'default' ? 0 : parseCidr(r.dst).prefix;
    if (len <= bestLen) continue;
    if (r.dst !== 'default' && !cidrContains(r.dst, ip)) continue;
    best = r;
    bestLen = len;
  }
  if (!best) return { direct: false, reason: `this node has no route to ${ip}` };
  const dst = best.dst === 'default' ? 'the default route' : `the route ${best.dst}`;
  if (best.gw !== undefined) return { direct: false, reason: `this node reaches ${ip} through a gateway (${dst} via ${best.gw}): not on its L2 network` };
  if (best.ifIndex !== s.underlay.index) return { direct: false, reason: `this node reaches ${ip} over ${best.dev ?? `ifindex ${best.ifIndex ?? '?'}`} (${dst}), not over the underlay ${s.underlay.name}` };
  return { direct: true };
}

/**
 * The operations that make nodenet's direct routes exactly the direct peers' (see the header). `peers` with a pod
 * CIDR already claimed by an earlier one (by node name) are left out; `keep` are destinations another planner writes
 * over in place (vxlan's tunneled peers): an old direct route there is left to be replaced, not deleted first.
 */
export function planDirectRoutes(peers: readonly DirectPeer[], s: RoutesState, keep: ReadonlySet<string> = new Set()): { ops: DirectRouteOp[]; notDirect: NotDirect[] } {
  const want = new Map<string, DirectPeer>();
  const notDirect: NotDirect[] = [];
  for (const p of [...peers].sort((a, b) => (a.node < b.node ? -1 : a.node > b.node ? 1 : 0))) {
    if (want.has(p.podCIDR)) continue;
    const r = directReach(p.publicIP, s);
    if (!r.direct) {
      notDirect.push({ node: p.node, publicIP: p.publicIP, reason: r.reason });
      continue;
    }
    want.set(p.podCIDR, p);
  }
  const ours = s.routes.filter((r) => r.protocol === NODENET_PROTOCOL);
  const ops: DirectRouteOp[] = [];
  for (const r of ours) {
    if (want.has(r.dst) || keep.has(r.dst)) continue;
    ops.push({ op: 'delDirectRoute', dst: r.dst, ...(r.gw ? { gw: r.gw } : {}) });
  }
  for (const [dst, p] of want) {
    const have = s.routes.filter((r) => r.dst === dst);
    if (have.length === 1 && have[0]!.protocol === NODENET_PROTOCOL && have[0]!.gw === p.publicIP && have[0]!.ifIndex === s.underlay.index) continue;
    ops.push({ op: 'addDirectRoute', dst, gw: p.publicIP, node: p.node });
  }
  return { ops, notDirect };
}
