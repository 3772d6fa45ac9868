/**
 * overlay/vxlan/backend: flannel's vxlan backend (pkg/backend/vxlan) behind
 * the backend interface (../backend.ts).
 *
 * - One VXLAN device, nodenet.1 (device.ts): VNI 1, UDP 8472, learning
 *   off, on the underlay interface, its MAC derived from the node name. The
 *   kernel learns nothing: every peer is told to it, from the Node objects.
 * - backend-data {"VNI":1,"VtepMAC":..} (lease.ts); the pods' MTU is the
 *   device's, underlay MTU - 50.
 * - Each plan reads the kernel's entries on the device (neighbours, FDB,
 *   routes) and plans with plan.ts (pure, ordered, no-flap); the periodic
 *   sync thereby repairs a hand-deleted entry, or device.
 * - A peer whose annotations change is updated in place: a new MAC replaces
 *   the neighbour and swaps the FDB entry; a new public IP replaces the
 *   MAC's FDB entry's destination (NLM_F_REPLACE, as flannel).
 * - directRouting (flannel's DirectRouting): the peers on this node's L2
 *   network get host-gw's route instead (plan.ts over ../hostgw/plan.ts);
 *   the pods' MTU stays the device's, since other peers may be tunneled.
 * - It adopts host-gw's leftovers: its planner replaces a proto-78 route to
 *   a peer in place and deletes the rest, so a switch from host-gw flaps
 *   nothing that stays.
 */
import { F } from '../../../../lib/log/fields.js';
import type { Logger } from '../../../../lib/log/log.js';
import { LinkNotFoundError } from '../../../../lib/errors/errors.js';
import type { NetlinkOps } from '../../netlink/ops.js';
import type { Backend, BackendDeps, BackendSetup, BackendType } from '../backend.js';
import type { SubnetLease } from '../subnet.js';
import { findUnderlay, type Underlay } from '../underlay.js';
import { applyDirectRoute, HOSTGW_TYPE } from '../hostgw/backend.js';
import { ensureVxlanDevice } from './device.js';
import { toLease, VXLAN_DEVICE, VXLAN_LEASES, VXLAN_TYPE, vtepMacFor, vxlanBackendData, type VxlanData } from './lease.js';
import { describeOp, planOverlay, type OverlayOp } from './plan.js';

export class VxlanBackend implements Backend<VxlanData, OverlayOp> {
  readonly leases = VXLAN_LEASES;
  readonly device = VXLAN_DEVICE;
  readonly vtepMac: string;
  private underlay: Underlay | null = null;
  private readonly log: Logger;

  constructor(private readonly deps: BackendDeps) {
    this.vtepMac = vtepMacFor(deps.nodeName);
    this.log = deps.log;
  }

  async setup(): Promise<BackendSetup> {
    const d = this.deps;
    this.underlay = await findUnderlay(d.netlink, { iface: d.underlayInterface, fallbackIP: d.nodeIP ?? null });
    const dev = await ensureVxlanDevice(d.netlink, { underlay: this.underlay, mac: this.vtepMac, podCIDR: d.podCIDR });
    return {
      mtu: dev.link.mtu,
      publicIP: this.underlay.ip,
      backendData: vxlanBackendData(this.vtepMac),
      message: 'vxlan device ready',
      detail: { [F.ifName]: VXLAN_DEVICE, directRouting: d.directRouting === true, underlay: this.underlay.name, [F.ip]: this.underlay.ip, mtu: dev.link.mtu, mac: this.vtepMac, actions: dev.actions },
    };
  }

  async plan(peers: readonly SubnetLease<VxlanData>[]): Promise<{ ops: OverlayOp[]; repaired: string[] }> {
    const d = this.deps;
    if (!this.underlay) return { ops: [], repaired: [] };
    const dev = await ensureVxlanDevice(d.netlink, { underlay: this.underlay, mac: this.vtepMac, podCIDR: d.podCIDR });
    const repaired = dev.actions.every((x) => x === 'kept') ? [] : [...dev.actions];
    if (repaired.length) this.log.warn({ [F.ifName]: VXLAN_DEVICE, actions: repaired }, 'vxlan device repaired');
    const device = dev.link;
    const neighs = await d.netlink.listNeighs(VXLAN_DEVICE);
    const fdb = await d.netlink.listFdb(VXLAN_DEVICE);
    const routes = await d.netlink.listRoutes();
    const ops = planOverlay(peers.map(toLease), {
      device: { index: device.index, name: device.name }, neighs, fdb, routes,
      underlay: { index: this.underlay.index, name: this.underlay.name }, directRouting: d.directRouting === true,
    });
    return { ops, repaired };
  }

  async apply(op: OverlayOp): Promise<void> {
    const nl = this.deps.netlink;
    const dev = VXLAN_DEVICE;
    switch (op.op) {
      case 'addDirectRoute':
      case 'delDirectRoute': return applyDirectRoute(nl, op, this.underlay?.name ?? '');
      case 'delRoute': return nl.delRoute({ dst: op.dst, dev, ...(op.gw ? { gw: op.gw } : {}) });
      case 'addNeigh': return nl.addNeigh({ dev, ip: op.ip, mac: op.mac, permanent: true });
      case 'appendFdb': return nl.appendFdb({ dev, mac: op.mac, dst: op.dst });
      case 'replaceFdb': return nl.replaceFdb({ dev, mac: op.mac, dst: op.dst });
      case 'addRoute': return nl.addRoute({ dst: op.dst, gw: op.gw, dev, onlink: true });
      case 'delFdb': return nl.delFdb({ dev, mac: op.mac, ...(op.dst ? { dst: op.dst } : {}) });
      case 'delNeigh': return nl.delNeigh({ dev, ip: op.ip });
    }
  }

  describe(op: OverlayOp): string {
    return describeOp(op, VXLAN_DEVICE, this.underlay?.name);
  }
}

/** The registry's entry: the backend, and its cleanup (the device; its entries and routes go with it). */
export const VXLAN: BackendType = {
  type: VXLAN_TYPE,
  create: (deps) => new VxlanBackend(deps) as Backend<unknown>,
  adopts: [HOSTGW_TYPE],
  async remove(nl: NetlinkOps) {
    try {
      await nl.deleteLink(VXLAN_DEVICE);
    } catch (e) {
      if (!(e instanceof LinkNotFoundError)) throw e;
    }
  },
};
