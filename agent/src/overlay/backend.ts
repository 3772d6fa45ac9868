/**
 * overlay/backend: how pod traffic crosses to the other nodes, one
 * implementation per way (flannel's backend.Backend and backend.Network).
 * The overlay (overlay.ts) owns what every backend shares: the Node watch
 * and the leases (subnet.ts), the publication of this node's annotations,
 * the sync loop (coalesced, periodic, retried) and the masquerade table.
 * A backend owns what differs:
 * - its type (flannel's backend-type annotation) and its reader of a
 *   peer's backend-data;
 * - setup(): what it makes once (a device), this node's public IP and
 *   backend-data, and the pods' MTU;
 * - plan(peers): from the peers' leases and what the kernel holds now, the
 *   ordered operations that make the kernel right (re-making its device if
 *   it went); a pure planner behind it, as vxlan/plan.ts;
 * - apply(op) and describe(op), one operation at a time: an operation that
 *   fails skips the rest of that peer's (a route is never written without
 *   what it needs), and the sync retries;
 * - remove(): what cleanup takes away. The overlay also calls it, at its
 *   setup, for every backend type but its own (and those its planner takes
 *   over, `adopts`): an agent restarted with another backend converges, with
 *   no device or route of the previous one left;
 * - resyncMs: how often the sync re-reads the kernel at the least (host-gw:
 *   flannel's RouteCheck, 10 s), so a route deleted by hand comes back;
 * - the peers it makes no route to, and why (`unreachable`: host-gw's peers
 *   that are not on this node's L2 network), which the overlay reports.
 *
 * The registry below is every backend nodenet has. A Node announced with
 * another backend type than this node's is not silently skipped: the
 * subnet manager reports it (subnet.ts), saying whether nodenet has that
 * backend at all.
 */
import type { Cidr } from '../../../lib/net/ip.js';
import type { Logger } from '../../../lib/log/log.js';
import type { NetlinkOps } from '../netlink/ops.js';
import type { LeaseReader, SubnetLease } from './subnet.js';

/** One operation of a backend's plan, with the peer it is for (absent: a stale entry of nobody's). */
export interface BackendOp {
  readonly node?: string | undefined;
}

export interface BackendSetup {
  /** The pods' MTU this backend allows (underlay MTU minus its overhead). */
  readonly mtu: number;
  /** This node's public IP (flannel's public-ip), unless an admin overwrites it. */
  readonly publicIP: string;
  /** This node's backend-data, published on its Node. */
  readonly backendData: unknown;
  /** The log line saying it is set up ("vxlan device ready"), and its fields (what was done: 'created', 'kept'...). */
  readonly message: string;
  readonly detail: Readonly<Record<string, unknown>>;
}

/** A peer the backend makes no route to, and why (host-gw: one that is not on this node's L2 network). */
export interface UnreachablePeer {
  readonly node: string;
  readonly publicIP: string;
  readonly reason: string;
}

export interface Backend<D, Op extends BackendOp = BackendOp> {
  readonly leases: LeaseReader<D>;
  /** The device the backend's entries are on (logs), or null when it has none. */
  readonly device: string | null;
  /** The longest time between two syncs (ms), each re-reading the kernel and repairing; default the overlay's (60 s). */
  readonly resyncMs?: number;
  setup(): Promise<BackendSetup>;
  /** Reads the kernel, repairs the backend's device, plans; throws when it cannot read (the sync retries). */
  plan(peers: readonly SubnetLease<D>[]): Promise<{ readonly ops: readonly Op[]; readonly repaired: readonly string[]; readonly unreachable?: readonly UnreachablePeer[] }>;
  apply(op: Op): Promise<void>;
  describe(op: Op): string;
}

/** What a backend is made from. */
export interface BackendDeps {
  readonly nodeName: string;
  readonly podCIDR: Cidr;
  /** Bound to the node's namespace; the overlay's own handle. */
  readonly netlink: NetlinkOps;
  /** flannel --iface; null: the default route's interface. */
  readonly underlayInterface: string | null;
  /** The Node's InternalIP: its interface is the underlay when there is no default route. */
  readonly nodeIP?: string | null | undefined;
  /** vxlan only: flannel's DirectRouting, a plain route to the peers on this node's L2 network. */
  readonly directRouting?: boolean | undefined;
  readonly log: Logger;
}

/** What remove() may need to tell the backend's leftovers from anyone else's. */
export interface RemoveContext {
  /** The cluster's pod CIDR: a routed backend's routes are blocks inside it. */
  readonly clusterCIDR?: Cidr;
}

export interface BackendType {
  readonly type: string;
  /** A backend of this type (its data type is its own: the overlay only hands it its own leases back). */
  create(deps: BackendDeps): Backend<unknown>;
  /**
   * Removes what the backend leaves on a node (cleanup; and at the setup of another backend, a switch). Idempotent;
   * removes only what this backend made (bgp: proto bird routes inside ctx.clusterCIDR only, none without it).
   */
  remove(nl: NetlinkOps, ctx?: RemoveContext): Promise<void>;
  /** The backend types whose leftovers this one's planner takes over in place (not removed at its setup: no flap). */
  readonly adopts?: readonly string[];
}

/** The backend registry: every type nodenet has, by flannel's name. */
export class BackendRegistry {
  private readonly types = new Map<string, BackendType>();

  constructor(types: readonly BackendType[]) {
    for (const t of types) {
      if (this.types.has(t.type)) throw new Error(`overlay backend ${t.type} registered twice`);
      this.types.set(t.type, t);
    }
  }

  has(type: string): boolean {
    return this.types.has(type);
  }

  get(type: string): BackendType | undefined {
    return this.types.get(type);
  }

  get names(): readonly string[] {
    return [...this.types.keys()];
  }

  /** Removes the leftovers of every backend but `type` and those it adopts (its setup: a switch converges). */
  async removeOthers(type: BackendType, nl: NetlinkOps, ctx?: RemoveContext): Promise<string[]> {
    const removed: string[] = [];
    for (const t of this.types.values()) {
      if (t.type === type.type || type.adopts?.includes(t.type)) continue;
      await t.remove(nl, ctx);
      removed.push(t.type);
    }
    return removed;
  }

  /** Removes every backend's leftovers (a node's cleanup does not know which one ran). */
  async removeAll(nl: NetlinkOps, ctx?: RemoveContext): Promise<void> {
    for (const t of this.types.values()) await t.remove(nl, ctx);
  }
}
