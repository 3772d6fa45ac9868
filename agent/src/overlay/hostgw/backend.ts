/**
 * overlay/hostgw/backend: flannel's host-gw backend (pkg/backend/hostgw)
 * behind the backend interface (../backend.ts).
 *
 * - No device: each other Node's pod CIDR is routed via its public IP on the
 *   underlay interface (plan.ts, pure), so pod packets cross unwrapped and the
 *   pods get the underlay's full MTU.
 * - backend-type "host-gw", backend-data "null" (flannel's: host-gw has no
 *   data; absent is read as the same, and any data a peer writes is ignored).
 * - Each plan re-finds the underlay and re-reads the main table, so the
 *   overlay's periodic sync, every 10 s here (flannel's RouteCheck), re-adds
 *   a route deleted by hand; a Node gone, its route goes.
 * - The nodes must share one L2 network: a peer this node reaches through a
 *   gateway is not routed (plan.ts) and is returned as unreachable, which the
 *   overlay reports (a warning with NN_ERR_PEER_NOT_DIRECT, a Warning Event on
 *   that Node, the status).
 * - Its leftovers (remove): every route of nodenet's protocol (78), and only
 *   those. A vxlan device left by a previous run is the overlay's to remove at
 *   setup (the registry's removeOthers).
 */
import { F } from '../../../../lib/log/fields.js';
import type { NetlinkOps } from '../../netlink/ops.js';
import type { Backend, BackendDeps, BackendSetup, BackendType, UnreachablePeer } from '../backend.js';
import type { LeaseReader, SubnetLease } from '../subnet.js';
import { findUnderlay } from '../underlay.js';
import { describeDirectOp, NODENET_PROTOCOL, planDirectRoutes, RTPROT_NODENET, type DirectRouteOp } from './plan.js';

export const HOSTGW_TYPE = 'host-gw';
/** flannel's route_network.go routeCheck period. */
export const HOSTGW_RESYNC_MS = 10_000;

/** host-gw has no backend data: whatever a peer wrote there is ignored, as flannel does. */
export const HOSTGW_LEASES: LeaseReader<null> = {
  type: HOSTGW_TYPE,
  serves: 'route',
  dataOptional: true,
  readData: () => ({ data: null }),
};

export class HostGwBackend implements Backend<null, DirectRouteOp> {
  readonly leases = HOSTGW_LEASES;
  readonly device = null;
  readonly resyncMs = HOSTGW_RESYNC_MS;
  private underlayName = '';

  constructor(private readonly deps: BackendDeps) {}

  async setup(): Promise<BackendSetup> {
    const d = this.deps;
    const u = await findUnderlay(d.netlink, { iface: d.underlayInterface, fallbackIP: d.nodeIP ?? null });
    this.underlayName = u.name;
    return {
      mtu: u.mtu,
      publicIP: u.ip,
      backendData: null,
      message: 'host-gw routes over the underlay',
      detail: { underlay: u.name, [F.ip]: u.ip, mtu: u.mtu },
    };
  }

  async plan(peers: readonly SubnetLease<null>[]): Promise<{ ops: DirectRouteOp[]; repaired: string[]; unreachable: UnreachablePeer[] }> {
    const d = this.deps;
    const u = await findUnderlay(d.netlink, { iface: d.underlayInterface, fallbackIP: d.nodeIP ?? null });
    this.underlayName = u.name;
    const routes = await d.netlink.listRoutes();
    const r = planDirectRoutes(peers, { underlay: { index: u.index, name: u.name }, routes });
    return { ops: r.ops, repaired: [], unreachable: r.notDirect };
  }

  async apply(op: DirectRouteOp): Promise<void> {
    return applyDirectRoute(this.deps.netlink, op, this.underlayName);
  }

  describe(op: DirectRouteOp): string {
    return describeDirectOp(op, this.underlayName);
  }
}

/** A direct route operation through NetlinkOps (host-gw, and vxlan's direct routing). */
export function applyDirectRoute(nl: NetlinkOps, op: DirectRouteOp, underlay: string): Promise<void> {
  switch (op.op) {
    case 'addDirectRoute': return nl.addRoute({ dst: op.dst, gw: op.gw, dev: underlay, protocol: RTPROT_NODENET });
    case 'delDirectRoute': return nl.delRoute({ dst: op.dst, ...(op.gw ? { gw: op.gw } : {}), protocol: RTPROT_NODENET });
  }
}

/** Removes every route of nodenet's protocol (host-gw's, vxlan --direct-routing's). Idempotent. */
export async function removeDirectRoutes(nl: NetlinkOps): Promise<void> {
  for (const r of await nl.listRoutes()) {
    if (r.protocol !== NODENET_PROTOCOL) continue;
    await nl.delRoute({ dst: r.dst, ...(r.gw ? { gw: r.gw } : {}), protocol: RTPROT_NODENET });
  }
}

/** The registry's entry. */
export const HOSTGW: BackendType = {
  type: HOSTGW_TYPE,
  create: (deps) => new HostGwBackend(deps) as Backend<unknown>,
  remove: removeDirectRoutes,
};
