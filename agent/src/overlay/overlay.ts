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
 * - A Node update the overlay cannot use never takes a peer away (issue 24;
 *   flannel's kube subnet manager ignores a Node it cannot turn into a lease
 *   the same way): the peer keeps its last good lease, so its route, FDB
 *   entry and neighbour stay, and the rejection is said once: a warning, a
 *   count (nodenet_overlay_objects_rejected_total), and a Warning Event on
 *   the Node (reconcile/last-good.ts). What takes a peer away is what the
 *   node itself says (lease.ts classes each reason):
 *   - the Node is deleted: its entries go at once;
 *   - its annotations say, well-formed, that it is on another network
 *     (another backend type, another VNI): its agent left this overlay.
 *   What keeps the last good lease, as "cannot use this update":
 *   - a malformed value (garbage public-ip, a podCIDR that is no CIDR, bad
 *     backend-data, a podCIDR claiming this node's own): nobody's statement
 *     that the node left; kube-apiserver refuses most of them and makes
 *     spec.podCIDR immutable once set;
 *   - a value gone missing (podCIDR or an annotation removed): the API
 *     server forbids unsetting spec.podCIDR, and a node's own agent puts its
 *     annotations back (onOwn below), so this is an edit in progress or a
 *     mistake, not a departure.
 *   A Node that never had a lease is as before: missing values mean "not a
 *   peer yet" (a joining node, said at debug level); a malformed one is
 *   skipped and said once like the rest. A new Node under a kept peer's
 *   name (another uid) that the overlay cannot use is not kept.
 * - A peer whose annotations change is updated in place: a new MAC replaces
 *   the neighbour and swaps the FDB entry; a new public IP deletes the MAC's
 *   FDB entry and appends it again with the new destination (NetlinkOps has
 *   append only, and the kernel ignores an append to an existing unicast
 *   entry; flannel uses NLM_F_REPLACE), a gap of one netlink round trip.
 */
import { LinkNotFoundError } from '../../../lib/errors/errors.js';
import { F } from '../../../lib/log/fields.js';
import type { Logger } from '../../../lib/log/log.js';
import type { Cidr } from '../../../lib/net/ip.js';
import type { Nft } from '../netfilter/nft/nft.js';
import type { LinkInfo, NetlinkOps } from '../netlink/ops.js';
import type { Clock } from '../../../lib/reconcile/clock.js';
import { objectReference, type EventRecorder } from '../../../lib/reconcile/event-recorder.js';
import { LastGood, type ObjectRejection, type RejectionCount } from '../../../lib/reconcile/last-good.js';
import { BoundedFrequencyRunner } from '../../../lib/reconcile/sync-runner.js';
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
  /** Warning Events on the Nodes the overlay cannot use; none when absent. */
  readonly events?: EventRecorder;
}

/** What a watch source delivers (watch/cluster-watch.ts's handler shape; objects are unknown here). */
export interface NodeEvents {
  add(o: unknown): void;
  update(prev: unknown, cur: unknown): void;
  delete(last: unknown): void;
}

export class VxlanOverlay {
  /** The peers followed, by node name: each one's lease, or its last good lease while its Node is one the overlay cannot use. */
  private readonly leases = new Map<string, Lease>();
  private readonly skips = new Map<string, string>();
  private readonly lastGood: LastGood<Lease, 'Node'>;
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
    add: (o) => this.onNode(null, o),
    update: (p, c) => this.onNode(p, c),
    delete: (o) => this.onNodeGone(o),
  };

  constructor(private readonly deps: OverlayDeps) {
    this.log = deps.log.child({ [F.subsys]: 'overlay' });
    this.lastGood = new LastGood<Lease, 'Node'>({ kind: 'Node', log: this.log, keyField: F.node, serves: 'route, FDB entry and neighbour', events: deps.events });
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

  /** The peers' leases the overlay follows now, by node name (a kept last good lease included). */
  peers(): ReadonlyMap<string, Lease> {
    return this.leases;
  }

  /** The Nodes whose current version the overlay cannot use, and whether their last good lease is still followed. */
  rejected(): ObjectRejection<'Node'>[] {
    return this.lastGood.rejected();
  }

  /** Rejections so far and peers followed from their last good lease now (the agent's metrics). */
  rejectionCounts(): RejectionCount {
    return this.lastGood.counts();
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

  private onNodeGone(o: unknown): void {
    const { name } = nodeMeta(o);
    if (!name || name === this.deps.nodeName) return;
    const had = this.leases.get(name);
    this.leases.delete(name);
    this.skips.delete(name);
    this.lastGood.forget(name);
    if (had) this.log.info({ [F.node]: name }, 'peer node gone');
    this.runner.request();
  }

  /** A Node added (prev null) or updated: follow its lease, keep the last good one, or leave it (see the header). */
  private onNode(prev: unknown, o: unknown): void {
    const { name, annotations } = nodeMeta(o);
    if (!name) return;
    if (name === this.deps.nodeName) return void this.onOwn(annotations);
    const had = this.leases.get(name);
    let r = leaseFromNode(o);
    if ('lease' in r && r.lease.podCIDR === this.deps.podCIDR) r = { skip: `its spec.podCIDR ${r.lease.podCIDR} is this node's`, class: 'invalid', field: 'spec.podCIDR' };
    if ('lease' in r) {
      this.lastGood.accept(name);
      this.leases.set(name, r.lease);
      this.skips.delete(name);
      if (!had || had.publicIP !== r.lease.publicIP || had.vtepMac !== r.lease.vtepMac || had.podCIDR !== r.lease.podCIDR) {
        this.log.info({ [F.node]: name, podCIDR: r.lease.podCIDR, [F.ip]: r.lease.publicIP, mac: r.lease.vtepMac }, had ? 'peer lease changed' : 'peer lease');
      }
    } else if (r.class === 'elsewhere' || (r.class === 'pending' && !had)) {
      // The node says it is on another network, or it is not a peer yet: nothing to follow.
      this.lastGood.accept(name);
      this.leases.delete(name);
      if (had) this.log.info({ [F.node]: name, [F.reason]: r.skip }, 'peer left this network');
      else if (this.skips.get(name) !== r.skip) this.log.debug({ [F.node]: name, [F.reason]: r.skip }, 'node is not a peer (yet)');
      this.skips.set(name, r.skip);
    } else {
      // An update the overlay cannot use: the last good lease stays followed (a peer's), or the Node is skipped.
      const serving = this.lastGood.get(name) ?? (had ? { value: had, uid: metaString(prev, 'uid'), resourceVersion: metaString(prev, 'resourceVersion') } : null);
      const keep = this.lastGood.reject(name, objectReference(o, 'Node', 'v1'), r.field, r.skip, serving);
      if (keep) {
        this.leases.set(name, keep);
        this.skips.delete(name);
      } else {
        this.leases.delete(name);
        this.skips.set(name, r.skip);
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

/** A string in an object's metadata (uid, resourceVersion), from an unknown watch object. */
function metaString(o: unknown, k: string): string | undefined {
  const m = typeof o === 'object' && o !== null ? (o as { metadata?: unknown }).metadata : undefined;
  const v = typeof m === 'object' && m !== null ? (m as Record<string, unknown>)[k] : undefined;
  return typeof v === 'string' && v !== '' ? v : undefined;
}
