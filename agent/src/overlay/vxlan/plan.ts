/**
 * overlay/plan: what to change on the VXLAN device so the kernel matches the
 * peers' leases. Pure: leases and the kernel's current entries in, an
 * ordered list of operations out (applied one by one through NetlinkOps).
 *
 * Per peer, flannel's vxlan backend (pkg/backend/vxlan/vxlan_network.go):
 *   neigh  <peer .0> lladdr <peer VTEP MAC> dev nodenet.1 permanent
 *   fdb    <peer VTEP MAC> dev nodenet.1 dst <peer public IP>
 *   route  <peer podCIDR> via <peer .0> dev nodenet.1 onlink
 *
 * Ownership: only entries on the device are ours. Routes on other devices,
 * neighbours elsewhere, are never looked at; on the device, a route or an
 * FDB entry no lease explains is removed, and so is a permanent neighbour
 * (the kernel's own, non-permanent ones are left to it).
 *
 * Order:
 *  1. stale routes go first, so nothing is routed towards a neighbour or an
 *     FDB entry about to disappear;
 *  2. neighbours, then FDB entries, are written (added or replaced);
 *  3. then routes: a route whose gateway has no neighbour yet makes the
 *     kernel ARP for it over VXLAN, which nobody answers (learning is off),
 *     and the entry it leaves behind (FAILED) would shadow ours for a while
 *     ("make sure this is done last", flannel);
 *  4. last, the stale FDB entries and neighbours (a peer's new MAC is
 *     written before its old one goes).
 * A peer whose public IP changed: its MAC's FDB entry has the old
 * destination removed just before the new one is appended (step 2). The
 * kernel keeps one destination per unicast MAC: NLM_F_APPEND on an existing
 * unicast entry is silently ignored (vxlan_fdb_update_existing appends only
 * to the all-zero and multicast entries), so appending first would leave the
 * old destination alone and the delete would then remove the entry.
 * An entry already right is not touched (no delete + add): a restarted agent
 * that finds the kernel as it left it plans nothing.
 *
 * flannel's hybrid, --direct-routing (vxlan_network.go's directRoute): a
 * peer on this node's L2 network (../hostgw/plan.ts decides, as flannel's
 * ip.DirectRouting) gets host-gw's route instead, `<podCIDR> via <public IP>
 * dev <underlay> proto 78`, and no neighbour or FDB entry; the others are
 * tunneled as above. Those direct routes are host-gw's planner's, planned
 * first (a peer that becomes direct has its tunnel route replaced in place,
 * then its neighbour and FDB entry go). Without direct routing, nodenet's
 * proto-78 routes are still planned away: the ones to a peer are replaced
 * in place by its tunnel route, the rest deleted (a switch from host-gw, or
 * from --direct-routing, leaves nothing behind).
 */
import { parseCidr } from '../../../../lib/net/ip.js';
import { describeDirectOp, directReach, planDirectRoutes, type DirectRouteOp } from '../hostgw/plan.js';
import type { Lease } from './lease.js';

/** What the kernel holds on the device (listNeighs/listFdb/listRoutes; other devices' entries are ignored). */
export interface DeviceState {
  /** The VXLAN device's ifindex and name. */
  readonly device: { readonly index: number; readonly name: string };
  readonly neighs: readonly { readonly ifIndex: number; readonly ip: string; readonly mac?: string; readonly permanent: boolean }[];
  readonly fdb: readonly { readonly ifIndex: number; readonly mac: string; readonly dst?: string }[];
  readonly routes: readonly { readonly dst: string; readonly gw?: string; readonly ifIndex?: number; readonly dev?: string; readonly onlink: boolean; readonly protocol: string }[];
  /** The underlay interface (direct routes leave by it); absent: no peer is routed directly. */
  readonly underlay?: { readonly index: number; readonly name: string };
  /** flannel's DirectRouting: peers on the underlay's L2 network get a plain route (needs `underlay`). */
  readonly directRouting?: boolean;
}

export type OverlayOp =
  | { readonly op: 'delRoute'; readonly dst: string; readonly gw?: string; readonly node?: string }
  | { readonly op: 'addNeigh'; readonly ip: string; readonly mac: string; readonly node: string }
  | { readonly op: 'appendFdb'; readonly mac: string; readonly dst: string; readonly node: string }
  | { readonly op: 'replaceFdb'; readonly mac: string; readonly dst: string; readonly node: string }
  | { readonly op: 'addRoute'; readonly dst: string; readonly gw: string; readonly node: string }
  | { readonly op: 'delFdb'; readonly mac: string; readonly dst?: string; readonly node?: string }
  | { readonly op: 'delNeigh'; readonly ip: string; readonly node?: string }
  | DirectRouteOp;

/** A peer's gateway on the overlay: its pod CIDR's network address (flannel's .0, on its nodenet.1 as /32). */
export function gatewayOf(podCIDR: string): string {
  return parseCidr(podCIDR).ip;
}

/** One line per operation, as `ip`/`bridge` would say it (logs and tests); direct routes on `underlay`. */
export function describeOp(o: OverlayOp, dev: string, underlay = 'the underlay'): string {
  switch (o.op) {
    case 'addDirectRoute':
    case 'delDirectRoute': return describeDirectOp(o, underlay);
    case 'delRoute': return `route del ${o.dst}${o.gw ? ` via ${o.gw}` : ''} dev ${dev}`;
    case 'addNeigh': return `neigh replace ${o.ip} lladdr ${o.mac} dev ${dev} nud permanent`;
    case 'appendFdb': return `fdb append ${o.mac} dev ${dev} dst ${o.dst}`;
    case 'replaceFdb': return `fdb replace ${o.mac} dev ${dev} dst ${o.dst}`;
    case 'addRoute': return `route replace ${o.dst} via ${o.gw} dev ${dev} onlink`;
    case 'delFdb': return `fdb del ${o.mac} dev ${dev}${o.dst ? ` dst ${o.dst}` : ''}`;
    case 'delNeigh': return `neigh del ${o.ip} dev ${dev}`;
  }
}

/**
 * The operations that make the device's entries exactly the leases'. Leases
 * with a pod CIDR already claimed by an earlier lease (by node name order)
 * are left out, so two peers never fight over one route.
 */
export function planOverlay(leases: readonly Lease[], cur: DeviceState): OverlayOp[] {
  const dev = cur.device.index;
  const byDst = new Map<string, Lease>();
  for (const l of [...leases].sort((a, b) => (a.node < b.node ? -1 : a.node > b.node ? 1 : 0))) {
    if (!byDst.has(l.podCIDR)) byDst.set(l.podCIDR, l);
  }
  // The hybrid: the peers on this L2 network are host-gw's (their routes planned first), the others tunneled.
  const routes = { underlay: cur.underlay ?? { index: -1, name: '' }, routes: cur.routes };
  const direct = cur.directRouting && cur.underlay ? [...byDst.values()].filter((l) => directReach(l.publicIP, routes).direct) : [];
  for (const l of direct) byDst.delete(l.podCIDR);
  const directOps = planDirectRoutes(direct, routes, new Set(byDst.keys())).ops;
  const directDst = new Set<string>(direct.map((l) => l.podCIDR));
  const peers = [...byDst.values()];

  const wantNeigh = new Map(peers.map((l) => [gatewayOf(l.podCIDR), l] as const));
  const wantFdb = new Map<string, Lease>(peers.map((l) => [`${l.vtepMac}|${l.publicIP}`, l]));
  const wantRoute = byDst;

  const haveNeigh = new Map(cur.neighs.filter((n) => n.ifIndex === dev).map((n) => [n.ip, n] as const));
  const haveFdb = new Set(cur.fdb.filter((f) => f.ifIndex === dev).map((f) => `${f.mac}|${f.dst ?? ''}`));
  const fdbGone = new Set<string>();
  const ourRoutes = cur.routes.filter((r) => r.ifIndex === dev && r.protocol !== 'kernel');
  const haveRoute = new Map(ourRoutes.map((r) => [r.dst, r] as const));

  const ops: OverlayOp[] = [...directOps];
  // 1. Stale routes (a peer's that is now routed directly is replaced in place by its direct route, above).
  for (const r of ourRoutes) {
    if (wantRoute.has(r.dst) || directDst.has(r.dst)) continue;
    ops.push({ op: 'delRoute', dst: r.dst, ...(r.gw ? { gw: r.gw } : {}) });
  }
  // 2. Neighbours and FDB entries.
  for (const [ip, l] of wantNeigh) {
    const n = haveNeigh.get(ip);
    if (n && n.permanent && n.mac === l.vtepMac) continue;
    ops.push({ op: 'addNeigh', ip, mac: l.vtepMac, node: l.node });
  }
  for (const [key, l] of wantFdb) {
    if (haveFdb.has(key)) continue;
    // The MAC has an entry with another destination (a new public IP): replaced in place, in one request, so
    // the peer is never without one (an append to a unicast entry that has a destination changes nothing).
    const old = cur.fdb.filter((f) => f.ifIndex === dev && f.mac === l.vtepMac && !wantFdb.has(`${f.mac}|${f.dst ?? ''}`));
    for (const f of old) fdbGone.add(`${f.mac}|${f.dst ?? ''}`);
    ops.push({ op: old.length ? 'replaceFdb' : 'appendFdb', mac: l.vtepMac, dst: l.publicIP, node: l.node });
  }
  // 3. Routes, last of what is added.
  for (const [dst, l] of wantRoute) {
    const gw = gatewayOf(dst);
    const r = haveRoute.get(dst);
    if (r && r.gw === gw && r.onlink) continue;
    ops.push({ op: 'addRoute', dst, gw, node: l.node });
  }
  // 4. Stale FDB entries, then stale neighbours.
  for (const f of cur.fdb) {
    const k = `${f.mac}|${f.dst ?? ''}`;
    if (f.ifIndex !== dev || wantFdb.has(k) || fdbGone.has(k)) continue;
    fdbGone.add(k);
    ops.push({ op: 'delFdb', mac: f.mac, ...(f.dst ? { dst: f.dst } : {}) });
  }
  for (const n of haveNeigh.values()) {
    if (!n.permanent || wantNeigh.has(n.ip)) continue;
    ops.push({ op: 'delNeigh', ip: n.ip });
  }
  return ops;
}
