/**
 * overlay: pod traffic between nodes, as a watch → compare → act loop,
 * flannel's shape: a subnet manager (subnet.ts: the leases on the Node
 * objects, this node's annotations) and one backend (backend.ts: VXLAN
 * today, vxlan/) that turns the peers' leases into kernel state.
 *
 * - Events only update the subnet manager and ask for a sync; the sync runs
 *   on a bounded runner (coalesced, at least every resyncMs, 60 s): publish
 *   this node's annotations when due (a merge patch; the node token may
 *   patch its own Node), then the backend plans from the peers and the
 *   kernel, and the overlay applies operation by operation (through
 *   NetlinkOps: never a process per entry). The periodic run repairs a
 *   hand-deleted entry, or device. Nothing is planned before the Node list
 *   arrived: a restarted agent never removes entries it has not yet heard
 *   about.
 * - An operation that fails skips the rest of that peer's operations (a
 *   route is never written without its neighbour and FDB entry) and asks
 *   for a retry in a second.
 * - stop() leaves everything in place, like the pods: the kernel keeps
 *   forwarding while no agent runs. cleanup() removes what every backend
 *   leaves (the device, and with it every entry and route on it) and the
 *   masquerade table.
 * - What the overlay does with a Node it cannot use, one that left, or one
 *   on another backend (reported, never silently skipped): subnet.ts. A peer
 *   the backend makes no route to (host-gw: not on this node's L2 network)
 *   is reported too, once per reason: a warning with NN_ERR_PEER_NOT_DIRECT,
 *   a Warning Event OverlayPeerNotDirect on that Node, unreachable().
 * - setup() first removes what the other backends leave (the registry's
 *   removeOthers), so an agent restarted with another backend converges.
 * - The periodic sync's period is the backend's (host-gw: 10 s, flannel's
 *   RouteCheck) unless resyncMs says otherwise.
 */
import { ErrorCode } from '../../../lib/errors/errors.js';
import { F } from '../../../lib/log/fields.js';
import type { Logger } from '../../../lib/log/log.js';
import type { Cidr } from '../../../lib/net/ip.js';
import type { Nft } from '../netfilter/nft/nft.js';
import type { NetlinkOps } from '../netlink/ops.js';
import type { Clock } from '../../../lib/reconcile/clock.js';
import type { EventRecorder } from '../../../lib/reconcile/event-recorder.js';
import type { ObjectRejection, RejectionCount } from '../../../lib/reconcile/last-good.js';
import { BoundedFrequencyRunner } from '../../../lib/reconcile/sync-runner.js';
import { BackendRegistry, type Backend, type BackendType, type RemoveContext, type UnreachablePeer } from './backend.js';
import { HOSTGW } from './hostgw/backend.js';
import { BGP } from './bgp/backend.js';
import { removeOverlayMasquerade, setupOverlayMasquerade } from './masquerade.js';
import { A_PUBLIC_IP, SubnetManager, type ForeignNode, type SubnetLease } from './subnet.js';
import { VXLAN } from './vxlan/backend.js';

/** Every overlay backend nodenet has. */
export const BACKENDS = new BackendRegistry([VXLAN, HOSTGW, BGP]);

/** The Warning Event on a peer Node this node's backend makes no route to (host-gw: not on its L2 network). */
export const REASON_PEER_NOT_DIRECT = 'OverlayPeerNotDirect';

export interface OverlayDeps {
  readonly nodeName: string;
  readonly podCIDR: Cidr;
  readonly clusterCIDR: Cidr;
  /** The backend this node runs (BACKENDS' entry). Default VXLAN. */
  readonly backend?: BackendType;
  /** The backends nodenet has, for what is said of a Node on another one. Default BACKENDS. */
  readonly registry?: BackendRegistry;
  /** Bound to the node's namespace; the overlay's own handle (its syncs do not queue behind CNI ADDs). */
  readonly netlink: NetlinkOps;
  readonly nft: Nft;
  /** flannel --iface; null: the default route's interface. */
  readonly underlayInterface: string | null;
  /** The Node's InternalIP: its interface is the underlay when there is no default route. */
  readonly nodeIP?: string | null;
  /** vxlan: flannel's DirectRouting (a plain route to the peers on this node's L2 network). */
  readonly directRouting?: boolean;
  /** Merge-patches this node's Node with these annotations. */
  readonly publish: (annotations: Record<string, string>) => Promise<void>;
  readonly clock: Clock;
  readonly log: Logger;
  /** The periodic resync (ms), re-reading the kernel. Default the backend's (host-gw 10 s), else 60 s. */
  readonly resyncMs?: number;
  /** At least this long between two syncs (ms). Default 100. */
  readonly minSyncMs?: number;
  /** Warning Events on the Nodes the overlay cannot use, or that run another backend; none when absent. */
  readonly events?: EventRecorder;
}

/** What a watch source delivers (watch/cluster-watch.ts's handler shape; objects are unknown here). */
export interface NodeEvents {
  add(o: unknown): void;
  update(prev: unknown, cur: unknown): void;
  delete(last: unknown): void;
}

export class Overlay {
  private readonly subnets: SubnetManager<unknown>;
  private readonly backend: Backend<unknown>;
  readonly backendType: string;
  private readonly runner: BoundedFrequencyRunner;
  private readonly log: Logger;
  private setupDone: { readonly mtu: number; readonly publicIP: string } | null = null;
  private firstSynced = false;
  private readonly firstSyncWaiters: (() => void)[] = [];
  private readonly type: BackendType;
  private readonly unreachableNow = new Map<string, UnreachablePeer>();
  /** Syncs done, operations applied, operations failed (status and tests). */
  syncs = 0;
  applied = 0;
  failed = 0;

  readonly handler: NodeEvents = {
    add: (o) => this.subnets.onNode(null, o),
    update: (p, c) => this.subnets.onNode(p, c),
    delete: (o) => this.subnets.onNodeGone(o),
  };

  constructor(private readonly deps: OverlayDeps) {
    this.log = deps.log.child({ [F.subsys]: 'overlay' });
    const type = deps.backend ?? VXLAN;
    this.type = type;
    this.backendType = type.type;
    this.backend = type.create({ nodeName: deps.nodeName, podCIDR: deps.podCIDR, netlink: deps.netlink, underlayInterface: deps.underlayInterface, nodeIP: deps.nodeIP, directRouting: deps.directRouting, log: this.log });
    this.subnets = new SubnetManager({
      nodeName: deps.nodeName, podCIDR: deps.podCIDR, backend: this.backend.leases, knownBackend: (t) => (deps.registry ?? BACKENDS).has(t),
      log: this.log, events: deps.events, changed: () => this.runner.request(),
    });
    this.runner = new BoundedFrequencyRunner({
      fn: () => this.sync(),
      clock: deps.clock,
      minIntervalMs: deps.minSyncMs ?? 100,
      maxIntervalMs: deps.resyncMs ?? this.backend.resyncMs ?? 60_000,
      log: this.log,
    });
  }

  /** The pods' MTU the backend allows. Known after setup(). */
  get mtu(): number {
    if (!this.setupDone) throw new Error('overlay: mtu before setup()');
    return this.setupDone.mtu;
  }

  /** The underlay IP this node publishes (unless overwritten). Known after setup(). */
  get publicIP(): string {
    if (!this.setupDone) throw new Error('overlay: publicIP before setup()');
    return this.setupDone.publicIP;
  }

  /** The peers' leases the overlay follows now, by node name (a kept last good lease included). */
  peers(): ReadonlyMap<string, SubnetLease<unknown>> {
    return this.subnets.peers();
  }

  /** The Nodes whose current version the overlay cannot use, and whether their last good lease is still followed. */
  rejected(): ObjectRejection<'Node'>[] {
    return this.subnets.rejected();
  }

  /** Rejections so far and peers followed from their last good lease now (the agent's metrics). */
  rejectionCounts(): RejectionCount {
    return this.subnets.rejectionCounts();
  }

  /** The Nodes announced with another backend type than this node's (status, metrics). */
  foreignNodes(): ForeignNode[] {
    return this.subnets.foreign();
  }

  /** The peers the backend makes no route to now, and why (host-gw: not on this node's L2 network). */
  unreachable(): UnreachablePeer[] {
    return [...this.unreachableNow.values()].sort((a, b) => (a.node < b.node ? -1 : a.node > b.node ? 1 : 0));
  }

  /** Removes what the other backends left, sets this one up (its device), then the masquerade table. Call once, before the events. */
  async setup(): Promise<void> {
    const d = this.deps;
    const others = await (d.registry ?? BACKENDS).removeOthers(this.type, d.netlink, { clusterCIDR: d.clusterCIDR });
    this.log.debug({ backends: others }, 'what other overlay backends leave removed');
    const s = await this.backend.setup();
    this.setupDone = { mtu: s.mtu, publicIP: s.publicIP };
    this.subnets.setOwn({ backendData: s.backendData, publicIP: s.publicIP });
    await setupOverlayMasquerade(d.nft, { clusterCIDR: d.clusterCIDR, podCIDR: d.podCIDR });
    this.log.info({ backend: this.backendType, ...s.detail }, s.message);
  }

  /** Every source delivered its first list: syncs may start. */
  synced(): void {
    this.subnets.synced();
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

  /** Removes what every backend leaves and the masquerade table. Idempotent. */
  async cleanup(): Promise<void> {
    await this.stop();
    await removeOverlay(this.deps.netlink, this.deps.nft, { clusterCIDR: this.deps.clusterCIDR });
  }

  /**
   * The peers the backend makes no route to: each said once per reason (a warning with its stable code, a Warning
   * Event on that Node, whose count the recorder folds); one routed again, or gone, said at info.
   */
  private noteUnreachable(list: readonly UnreachablePeer[]): void {
    const d = this.deps;
    const now = new Map(list.map((u) => [u.node, u] as const));
    for (const [node, was] of this.unreachableNow) {
      if (now.has(node)) continue;
      this.unreachableNow.delete(node);
      this.log.info({ [F.node]: node, [F.ip]: was.publicIP }, this.subnets.peers().has(node) ? 'peer routed again' : 'unreachable peer left');
    }
    for (const u of now.values()) {
      if (this.unreachableNow.get(u.node)?.reason === u.reason) continue;
      this.unreachableNow.set(u.node, u);
      const message = `Node ${u.node} (public IP ${u.publicIP}) is not on the L2 network of ${d.nodeName}, which runs the ${this.backendType} overlay backend: ${u.reason}. No route to its pods is made from ${d.nodeName} (a route via that address would be routed half-way); put the nodes on one L2 network, or run vxlan (with --direct-routing for the nodes that are)`;
      this.log.warn({ [F.node]: u.node, [F.ip]: u.publicIP, [F.code]: ErrorCode.PeerNotDirect, [F.reason]: REASON_PEER_NOT_DIRECT }, message);
      d.events?.event({ apiVersion: 'v1', kind: 'Node', name: u.node }, 'Warning', REASON_PEER_NOT_DIRECT, message);
    }
  }

  /** One sync: publish what is due, then the backend plans from the peers and the kernel, and the overlay applies. */
  async sync(): Promise<void> {
    const d = this.deps;
    const started = d.clock.now();
    this.syncs++;
    let retry = false;
    const a = this.subnets.due();
    if (a) {
      try {
        await d.publish(a);
        this.subnets.published(a);
        this.log.info({ [F.node]: d.nodeName, [F.ip]: a[A_PUBLIC_IP], backend: this.backendType }, 'lease annotations published on the Node');
      } catch (e) {
        retry = true;
        this.log.warn({ [F.err]: e instanceof Error ? e.message : String(e) }, 'publishing the lease annotations failed; retrying');
      }
    }
    const dev = this.backend.device ? { [F.ifName]: this.backend.device } : {};
    try {
      if (!this.setupDone) return;
      const { ops, unreachable } = await this.backend.plan([...this.subnets.peers().values()]);
      this.noteUnreachable(unreachable ?? []);
      const failedNodes = new Set<string>();
      let done = 0;
      for (const op of ops) {
        const node = op.node;
        if (node !== undefined && failedNodes.has(node)) continue;
        try {
          await this.backend.apply(op);
          done++;
          this.log.info({ ...dev, ...(node ? { [F.node]: node } : {}), [F.cmd]: this.backend.describe(op) }, 'overlay entry');
        } catch (e) {
          this.failed++;
          retry = true;
          if (node !== undefined) failedNodes.add(node);
          this.log.warn({ ...dev, ...(node ? { [F.node]: node } : {}), [F.cmd]: this.backend.describe(op), [F.err]: e instanceof Error ? e.message : String(e) }, 'overlay entry failed; retrying');
        }
      }
      this.applied += done;
      this.log.debug({ [F.count]: done, peers: this.subnets.peers().size, [F.durationMs]: d.clock.now() - started }, 'overlay synced');
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
}

/**
 * Removes a node's overlay, whichever backend ran: every backend's leftovers and the masquerade table. Idempotent.
 * Without the cluster CIDR, bgp's routes stay (proto bird routes are not told from a user's own BIRD's without it).
 */
export async function removeOverlay(nl: NetlinkOps, nft: Nft, ctx?: RemoveContext): Promise<void> {
  await BACKENDS.removeAll(nl, ctx);
  await removeOverlayMasquerade(nft);
}
