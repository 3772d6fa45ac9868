/**
 * overlay: flannel's vxlan backend for one node, as a watch → compare → act
 * loop. Design notes:
 *
 * - One VXLAN device, nodenet.1 (device.ts): VNI 1, UDP 8472, learning
 *   off, on the underlay interface, its MAC derived from the node name. The
 *   kernel learns nothing: every peer is told to it, from the Node objects.
 * - Leases live on the Nodes (lease.ts): spec.podCIDR from node IPAM and
 *   flannel's annotations, which this node publishes on its own Node (a
 *   merge patch; the node token may patch its own Node). At start it
 *   asserts all four; afterwards it re-publishes only when the backend
 *   annotations go missing or wrong, so an admin's change of public-ip
 *   holds until the next start (public-ip-overwrite holds across starts).
 * - Events only record the peer's lease and ask for a sync; the sync runs
 *   on a bounded runner (coalesced, at least every resyncMs, 60 s), reads
 *   the kernel's entries on the device (neighbours, FDB, routes), plans
 *   (plan.ts: pure, ordered, no-flap) and applies operation by operation
 *   through NetlinkOps: never a process per entry. The periodic run repairs
 *   a hand-deleted entry, or device. Nothing is planned before the Node
 *   list arrived: a restarted agent never removes entries it has not yet
 *   heard about.
 * - An operation that fails skips the rest of that peer's operations (a
 *   route is never written without its neighbour and FDB entry) and asks
 *   for a retry in a second.
 * - stop() leaves everything in place, like the pods: the kernel keeps
 *   forwarding while no agent runs. cleanup() removes the device (and with
 *   it every entry and route on it) and the masquerade table.
 * - A peer whose annotations change is updated in place: a new MAC replaces
 *   the neighbour and swaps the FDB entry; a new public IP deletes the MAC's
 *   FDB entry and appends it again with the new destination (NetlinkOps has
 *   append only, and the kernel ignores an append to an existing unicast
 *   entry; flannel uses NLM_F_REPLACE), a gap of one netlink round trip.
 */
import { LinkNotFoundError } from '../errors/errors.js';
import { F } from '../log/fields.js';
import type { Logger } from '../log/log.js';
import type { Cidr } from '../net/ip.js';
import type { Nft } from '../netfilter/nft.js';
import type { LinkInfo, NetlinkOps } from '../netlink/ops.js';
import type { Clock } from '../reconcile/clock.js';
import { BoundedFrequencyRunner } from '../reconcile/sync-runner.js';
import { ensureVxlanDevice, findUnderlay, type Underlay } from './device.js';
import {
  A_BACKEND_DATA, A_BACKEND_TYPE, A_PUBLIC_IP, A_PUBLIC_IP_OVERWRITE, A_SUBNET_MANAGER, VXLAN_DEVICE,
  annotationsHold, leaseAnnotations, leaseFromNode, nodeMeta, vtepMacFor, type Lease,
} from './lease.js';
import { removeOverlayMasquerade, setupOverlayMasquerade } from './masquerade.js';
import { describeOp, planOverlay, type OverlayOp } from './plan.js';

export interface OverlayDeps {
  readonly nodeName: string;
  readonly podCIDR: Cidr;
  readonly clusterCIDR: Cidr;
  /** Bound to the node's namespace; the overlay's own handle (its syncs do not queue behind CNI ADDs). */
  readonly netlink: NetlinkOps;
  readonly nft: Nft;
  /** flannel --iface; null: the default route's interface. */
  readonly underlayInterface: string | null;
  /** The Node's InternalIP: its interface is the underlay when there is no default route. */
  readonly nodeIP?: string | null;
  /** Merge-patches this node's Node with these annotations. */
  readonly publish: (annotations: Record<string, string>) => Promise<void>;
  readonly clock: Clock;
  readonly log: Logger;
  /** The periodic resync (ms), re-reading the kernel. Default 60 s. */
  readonly resyncMs?: number;
  /** At least this long between two syncs (ms). Default 100. */
  readonly minSyncMs?: number;
}

/** What a watch source delivers (watch/cluster-watch.ts's handler shape; objects are unknown here). */
export interface NodeEvents {
  add(o: unknown): void;
  update(prev: unknown, cur: unknown): void;
  delete(last: unknown): void;
}

export class VxlanOverlay {
  private readonly leases = new Map<string, Lease>();
  private readonly skips = new Map<string, string>();
  private readonly runner: BoundedFrequencyRunner;
  private readonly log: Logger;
  private underlay: Underlay | null = null;
  private device: LinkInfo | null = null;
  /** The annotations to publish at the next sync, null when none are due. */
  private toPublish: Record<string, string> | null = null;
  private seenOwn = false;
  private firstSynced = false;
  private readonly firstSyncWaiters: (() => void)[] = [];
  readonly vtepMac: string;
  /** Syncs done, operations applied, operations failed (status and tests). */
  syncs = 0;
  applied = 0;
  failed = 0;

  readonly handler: NodeEvents = {
    add: (o) => this.onNode(o, false),
    update: (_p, c) => this.onNode(c, false),
    delete: (o) => this.onNode(o, true),
  };

  constructor(private readonly deps: OverlayDeps) {
    this.log = deps.log.child({ [F.subsys]: 'overlay' });
    this.vtepMac = vtepMacFor(deps.nodeName);
    this.runner = new BoundedFrequencyRunner({
      fn: () => this.sync(),
      clock: deps.clock,
      minIntervalMs: deps.minSyncMs ?? 100,
      maxIntervalMs: deps.resyncMs ?? 60_000,
      log: this.log,
    });
  }

  /** The pods' MTU: the device's (underlay MTU - 50). Known after setup(). */
  get mtu(): number {
    if (!this.device) throw new Error('overlay: mtu before setup()');
    return this.device.mtu;
  }

  /** The underlay IP this node publishes (unless overwritten). Known after setup(). */
  get publicIP(): string {
    if (!this.underlay) throw new Error('overlay: publicIP before setup()');
    return this.underlay.ip;
  }

  /** The peers' leases the overlay follows now, by node name. */
  peers(): ReadonlyMap<string, Lease> {
    return this.leases;
  }

  /** Finds the underlay, makes (or keeps) the device and writes the masquerade table. Call once, before the events. */
  async setup(): Promise<void> {
    const d = this.deps;
    this.underlay = await findUnderlay(d.netlink, { iface: d.underlayInterface, fallbackIP: d.nodeIP ?? null });
    const dev = await ensureVxlanDevice(d.netlink, { underlay: this.underlay, mac: this.vtepMac, podCIDR: d.podCIDR });
    this.device = dev.link;
    await setupOverlayMasquerade(d.nft, { clusterCIDR: d.clusterCIDR, podCIDR: d.podCIDR });
    this.log.info({ [F.ifName]: VXLAN_DEVICE, underlay: this.underlay.name, [F.ip]: this.underlay.ip, mtu: dev.link.mtu, mac: this.vtepMac, actions: dev.actions }, 'vxlan device ready');
  }

  /** Every source delivered its first list: syncs may start. */
  synced(): void {
    if (!this.seenOwn) {
      // Our Node was not in the list (registration makes it first, so rarely): publish anyway; a patch of a
      // missing Node fails and is retried at the next sync.
      this.toPublish ??= leaseAnnotations({ vtepMac: this.vtepMac, publicIP: this.publicIP });
    }
    this.runner.start();
    this.runner.request();
  }

  /** Resolves after the first sync (or after timeoutMs, false). */
  whenFirstSynced(timeoutMs: number): Promise<boolean> {
    if (this.firstSynced) return Promise.resolve(true);
    return new Promise((resolve) => {
      const t = this.deps.clock.setTimeout(() => resolve(false), timeoutMs);
      this.firstSyncWaiters.push(() => {
        this.deps.clock.clearTimeout(t);
        resolve(true);
      });
    });
  }

  /** Asks for a sync now (coalesced). */
  request(): void {
    this.runner.request();
  }

  /** Stops syncing; the device and its entries stay. */
  async stop(): Promise<void> {
    this.runner.stop();
    await this.runner.whenIdle();
    for (const w of this.firstSyncWaiters.splice(0)) w();
  }

  /** Removes the device (with every entry and route on it) and the masquerade table. Idempotent. */
  async cleanup(): Promise<void> {
    await this.stop();
    await removeVxlanOverlay(this.deps.netlink, this.deps.nft);
  }

  private onOwn(annotations: Record<string, string>): void {
    const first = !this.seenOwn;
    this.seenOwn = true;
    if (!this.underlay) return;
    const publicIP = annotations[A_PUBLIC_IP_OVERWRITE] ?? this.underlay.ip;
    const wanted = leaseAnnotations({ vtepMac: this.vtepMac, publicIP });
    // At start every annotation is asserted; later only the backend ones (and a missing public-ip), so that
    // an admin's public-ip change is followed by the peers and not undone here.
    const check = first ? wanted : { [A_BACKEND_TYPE]: wanted[A_BACKEND_TYPE]!, [A_BACKEND_DATA]: wanted[A_BACKEND_DATA]!, [A_SUBNET_MANAGER]: wanted[A_SUBNET_MANAGER]! };
    const missingIP = !first && annotations[A_PUBLIC_IP] === undefined;
    if (annotationsHold(annotations, check) && !missingIP) return;
    this.toPublish = first || missingIP ? wanted : check;
    this.runner.request();
  }

  private onNode(o: unknown, gone: boolean): void {
    const { name, annotations } = nodeMeta(o);
    if (!name) return;
    if (name === this.deps.nodeName) {
      if (!gone) this.onOwn(annotations);
      return;
    }
    const had = this.leases.get(name);
    if (gone) {
      this.leases.delete(name);
      this.skips.delete(name);
      if (had) this.log.info({ [F.node]: name }, 'peer node gone');
    } else {
      const r = leaseFromNode(o);
      let skip = 'skip' in r ? r.skip : null;
      if ('lease' in r && r.lease.podCIDR === this.deps.podCIDR) skip = `its spec.podCIDR ${r.lease.podCIDR} is this node's`;
      if ('lease' in r && skip === null) {
        this.leases.set(name, r.lease);
        this.skips.delete(name);
        if (!had || had.publicIP !== r.lease.publicIP || had.vtepMac !== r.lease.vtepMac || had.podCIDR !== r.lease.podCIDR) {
          this.log.info({ [F.node]: name, podCIDR: r.lease.podCIDR, [F.ip]: r.lease.publicIP, mac: r.lease.vtepMac }, had ? 'peer lease changed' : 'peer lease');
        }
      } else {
        this.leases.delete(name);
        if (this.skips.get(name) !== skip) this.log.debug({ [F.node]: name, [F.reason]: skip }, 'node is not a peer (yet)');
        this.skips.set(name, skip ?? '');
      }
    }
    this.runner.request();
  }

  /** One sync: publish what is due, make sure of the device, read the kernel, plan, apply. */
  async sync(): Promise<void> {
    const d = this.deps;
    const started = d.clock.now();
    this.syncs++;
    let retry = false;
    if (this.toPublish) {
      const a = this.toPublish;
      try {
        await d.publish(a);
        if (this.toPublish === a) this.toPublish = null;
        this.log.info({ [F.node]: d.nodeName, [F.ip]: a[A_PUBLIC_IP], mac: this.vtepMac }, 'lease annotations published on the Node');
      } catch (e) {
        retry = true;
        this.log.warn({ [F.err]: e instanceof Error ? e.message : String(e) }, 'publishing the lease annotations failed; retrying');
      }
    }
    try {
      if (this.underlay) {
        const dev = await ensureVxlanDevice(d.netlink, { underlay: this.underlay, mac: this.vtepMac, podCIDR: d.podCIDR });
        if (!dev.actions.every((x) => x === 'kept')) this.log.warn({ [F.ifName]: VXLAN_DEVICE, actions: dev.actions }, 'vxlan device repaired');
        this.device = dev.link;
      }
      const device = this.device;
      if (!device) return;
      const neighs = await d.netlink.listNeighs(VXLAN_DEVICE);
      const fdb = await d.netlink.listFdb(VXLAN_DEVICE);
      const routes = await d.netlink.listRoutes();
      const ops = planOverlay([...this.leases.values()], { device: { index: device.index, name: device.name }, neighs, fdb, routes });
      const failedNodes = new Set<string>();
      let done = 0;
      for (const op of ops) {
        const node = op.node;
        if (node !== undefined && failedNodes.has(node)) continue;
        try {
          await this.apply(op);
          done++;
          this.log.info({ [F.ifName]: VXLAN_DEVICE, ...(node ? { [F.node]: node } : {}), [F.cmd]: describeOp(op, VXLAN_DEVICE) }, 'overlay entry');
        } catch (e) {
          this.failed++;
          retry = true;
          if (node !== undefined) failedNodes.add(node);
          this.log.warn({ [F.ifName]: VXLAN_DEVICE, ...(node ? { [F.node]: node } : {}), [F.cmd]: describeOp(op, VXLAN_DEVICE), [F.err]: e instanceof Error ? e.message : String(e) }, 'overlay entry failed; retrying');
        }
      }
      this.applied += done;
      this.log.debug({ [F.count]: done, peers: this.leases.size, [F.durationMs]: d.clock.now() - started }, 'overlay synced');
    } catch (e) {
      retry = true;
      this.log.warn({ [F.err]: e instanceof Error ? e.message : String(e) }, 'overlay sync failed; retrying');
    } finally {
      if (retry) this.runner.retryAfter(1000);
      if (!this.firstSynced) {
        this.firstSynced = true;
        for (const w of this.firstSyncWaiters.splice(0)) w();
      }
    }
  }

  private async apply(op: OverlayOp): Promise<void> {
    const nl = this.deps.netlink;
    const dev = VXLAN_DEVICE;
    switch (op.op) {
      case 'delRoute': return nl.delRoute({ dst: op.dst, dev, ...(op.gw ? { gw: op.gw } : {}) });
      case 'addNeigh': return nl.addNeigh({ dev, ip: op.ip, mac: op.mac, permanent: true });
      case 'appendFdb': return nl.appendFdb({ dev, mac: op.mac, dst: op.dst });
      case 'replaceFdb': return nl.replaceFdb({ dev, mac: op.mac, dst: op.dst });
      case 'addRoute': return nl.addRoute({ dst: op.dst, gw: op.gw, dev, onlink: true });
      case 'delFdb': return nl.delFdb({ dev, mac: op.mac, ...(op.dst ? { dst: op.dst } : {}) });
      case 'delNeigh': return nl.delNeigh({ dev, ip: op.ip });
    }
  }
}

/** Removes a node's overlay: the device (its entries and routes go with it) and the masquerade table. Idempotent. */
export async function removeVxlanOverlay(nl: NetlinkOps, nft: Nft): Promise<void> {
  try {
    await nl.deleteLink(VXLAN_DEVICE);
  } catch (e) {
    if (!(e instanceof LinkNotFoundError)) throw e;
  }
  await removeOverlayMasquerade(nft);
}
