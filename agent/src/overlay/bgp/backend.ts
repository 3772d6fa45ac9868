/**
 * overlay/bgp/backend: Calico's way behind the backend interface
 * (../backend.ts): every node a router, the pod blocks exchanged by iBGP
 * through the node's own BIRD 2 (bird.ts), no device, no encapsulation.
 *
 * What is nodenet's and what is BIRD's:
 * - nodenet: the leases (the subnet manager: podCIDR, public IP, and this
 *   backend's data {ASN, RouteReflector}), BIRD's configuration from them
 *   (config.ts: who peers with whom, what is imported and exported), BIRD's
 *   process (started, adopted after an agent restart, re-configured when the
 *   peers change, started again with graceful restart recovery if it died),
 *   and the status read from BIRD's socket;
 * - BIRD: the sessions, originating this node's block, learning the
 *   others', and every route in the kernel (`proto bird`): nodenet never
 *   writes a route of this backend.
 *
 * The pods' MTU is the underlay's. A plan is one operation or none: make
 * BIRD run with the configuration the leases give (when the text changed,
 * or BIRD is not running); the periodic sync thereby notices a dead BIRD.
 */
import { F } from '../../../../lib/log/fields.js';
import { cidrContains, parseCidr, parseIPv4, type Cidr } from '../../../../lib/net/ip.js';
import type { Runner } from '../../exec/runner.js';
import type { NetlinkOps, RouteInfo } from '../../netlink/ops.js';
import type { Backend, BackendDeps, BackendOp, BackendSetup, BackendType } from '../backend.js';
import type { SubnetLease } from '../subnet.js';
import { findUnderlay } from '../underlay.js';
import { Bird, stopBird, type BirdAction } from './bird.js';
import { birdConfig, sessions, DEFAULT_ASN } from './config.js';
import { BGP_TYPE, bgpBackendData, bgpLeases, type BgpData } from './lease.js';
import type { PeerSession } from './protocols.js';

/** BIRD's protocol number in the kernel (rtm_protocol, RTPROT_BIRD): the routes this backend's BIRD writes. */
export const RTPROT_BIRD = 12;

export interface BgpOptions {
  /** The node's run directory: BIRD's files are under <runDir>/bgp. */
  readonly runDir: string;
  readonly clusterCIDR: Cidr;
  /** --bgp-asn (default 64512, Calico's). */
  readonly asn?: number;
  /** --bgp-route-reflector: this node reflects. */
  readonly routeReflector?: boolean;
  /** Seconds (config.ts's defaults: 120 and 240). */
  readonly gracefulRestartS?: number;
  readonly holdS?: number;
  /** Runs in the node's namespace (the agent's runner): bird, birdc. */
  readonly runner: Runner;
  readonly bird?: string;
  readonly birdc?: string;
}

export interface BirdOp extends BackendOp {
  readonly op: 'bird';
  readonly text: string;
  readonly sessions: number;
}

/** A peer's session as the status shows it: the Node, its IP, BIRD's state. */
export interface BgpPeerStatus extends PeerSession {
  readonly node: string | null;
}

export class BgpBackend implements Backend<BgpData, BirdOp> {
  readonly leases;
  readonly device = null;
  readonly bird: Bird;
  private readonly asn: number;
  private publicIP: string | null = null;
  private applied: string | null = null;
  private names = new Map<string, string>();
  lastAction: BirdAction | null = null;

  constructor(private readonly deps: BackendDeps, private readonly opts: BgpOptions) {
    this.asn = opts.asn ?? DEFAULT_ASN;
    this.leases = bgpLeases(this.asn);
    this.bird = new Bird({ runDir: opts.runDir, runner: opts.runner, log: deps.log, ...(opts.bird ? { bird: opts.bird } : {}), ...(opts.birdc ? { birdc: opts.birdc } : {}) });
  }

  async setup(): Promise<BackendSetup> {
    const d = this.deps;
    const u = await findUnderlay(d.netlink, { iface: d.underlayInterface, fallbackIP: d.nodeIP ?? null });
    this.publicIP = u.ip;
    const rr = this.opts.routeReflector === true;
    return {
      mtu: u.mtu,
      publicIP: u.ip,
      backendData: bgpBackendData({ asn: this.asn, routeReflector: rr }),
      message: 'bgp backend ready: BIRD routes the pods',
      detail: { underlay: u.name, [F.ip]: u.ip, mtu: u.mtu, asn: this.asn, routeReflector: rr, socket: this.bird.paths.socket },
    };
  }

  /** The configuration the leases give. */
  configText(peers: readonly SubnetLease<BgpData>[]): { text: string; sessions: number } {
    if (!this.publicIP) throw new Error('bgp backend: plan before setup()');
    const routerId = parseIPv4(this.publicIP);
    const nodes = peers.map((l) => ({ node: l.node, ip: l.publicIP, routeReflector: l.data.routeReflector }));
    this.names = new Map(nodes.map((n) => [n.ip as string, n.node]));
    const input = {
      nodeName: this.deps.nodeName, routerId, asn: this.asn, podCIDR: this.deps.podCIDR, clusterCIDR: this.opts.clusterCIDR,
      routeReflector: this.opts.routeReflector === true, nodes, logFile: this.bird.paths.log,
      ...(this.opts.gracefulRestartS !== undefined ? { gracefulRestartS: this.opts.gracefulRestartS } : {}),
      ...(this.opts.holdS !== undefined ? { holdS: this.opts.holdS } : {}),
    };
    return { text: birdConfig(input), sessions: sessions({ ip: routerId, routeReflector: input.routeReflector }, nodes).length };
  }

  async plan(peers: readonly SubnetLease<BgpData>[]): Promise<{ ops: BirdOp[]; repaired: string[] }> {
    if (!this.publicIP) return { ops: [], repaired: [] };
    const { text, sessions: n } = this.configText(peers);
    const alive = this.bird.pid !== null;
    if (text === this.applied && alive) return { ops: [], repaired: [] };
    return { ops: [{ op: 'bird', text, sessions: n }], repaired: this.applied !== null && !alive ? ['bird'] : [] };
  }

  async apply(op: BirdOp): Promise<void> {
    this.lastAction = await this.bird.ensure(op.text);
    this.applied = op.text;
  }

  describe(op: BirdOp): string {
    return `bird ${this.bird.paths.config}: ${op.sessions} BGP session${op.sessions === 1 ? '' : 's'}`;
  }

  /** Each session's state, from BIRD's socket, with the Node it is to. @throws when BIRD does not answer */
  async peerStatus(): Promise<BgpPeerStatus[]> {
    return (await this.bird.sessions()).map((s) => ({ ...s, node: this.names.get(s.peerIP) ?? null }));
  }
}

/**
 * Whether a kernel route is one this backend's BIRD could have installed: proto bird, and a block inside the
 * cluster CIDR (config.ts imports nothing else). A user's own BIRD on the same machine writes proto bird routes
 * too: those outside the cluster CIDR are never nodenet's.
 */
export function isClusterBirdRoute(r: Pick<RouteInfo, 'dst' | 'protocol'>, clusterCIDR: Cidr): boolean {
  if (r.protocol !== String(RTPROT_BIRD) && r.protocol !== 'bird') return false;
  if (r.dst === 'default' || !r.dst.includes('/')) return false;
  const [ip, len] = r.dst.split('/') as [string, string];
  return Number(len) >= parseCidr(clusterCIDR).prefix && cidrContains(clusterCIDR, ip);
}

/** Deletes the routes BIRD left in this namespace's kernel (proto bird) inside the cluster CIDR, through netlink. */
export async function removeBirdRoutes(nl: NetlinkOps, clusterCIDR: Cidr): Promise<number> {
  let n = 0;
  for (const r of await nl.listRoutes()) {
    if (!isClusterBirdRoute(r, clusterCIDR)) continue;
    await nl.delRoute({ dst: r.dst, ...(r.gw ? { gw: r.gw } : {}), protocol: RTPROT_BIRD });
    n++;
  }
  return n;
}

/** The backend with this node's options (compose passes it to the overlay); its cleanup also stops BIRD. */
export function bgpBackendType(opts: BgpOptions): BackendType & { readonly last: () => BgpBackend | null } {
  let last: BgpBackend | null = null;
  return {
    type: BGP_TYPE,
    create: (deps) => {
      last = new BgpBackend(deps, opts);
      return last as unknown as Backend<unknown>;
    },
    async remove(nl: NetlinkOps) {
      await stopBird(opts.runDir, { nodeRunner: opts.runner, clusterCIDR: opts.clusterCIDR });
      await removeBirdRoutes(nl, opts.clusterCIDR);
    },
    last: () => last,
  };
}

/**
 * The registry's entry: the type, for the Nodes announced with it; a node runs it through bgpBackendType (it needs
 * the run directory and the flags). Its remove() deletes the kernel routes a BIRD left (proto bird) inside the cluster
 * CIDR it is given, and nothing without one (a proto bird route elsewhere is another BIRD's); the BIRD process itself
 * is stopped by stopBird(runDir), which the agent calls when it runs another backend.
 */
export const BGP: BackendType = {
  type: BGP_TYPE,
  create: () => {
    throw new Error('the bgp backend needs its options: bgpBackendType({ runDir, clusterCIDR, runner, ... })');
  },
  remove: async (nl, ctx) => void (ctx?.clusterCIDR ? await removeBirdRoutes(nl, ctx.clusterCIDR) : 0),
};
