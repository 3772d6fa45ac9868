/**
 * overlay/bgp/config: BIRD 2's configuration for one node, written from the
 * watched Nodes (pure: text out, no I/O). The shape is Calico's confd
 * templates' (bird.cfg.template, bird_ipam.cfg.template), in BIRD 2's
 * channel syntax:
 *
 * - `router id` and the session source: the node's underlay IP;
 * - `protocol device`, to follow the interfaces;
 * - `protocol kernel`: imports nothing (learn off), exports what BGP learned
 *   (the other nodes' blocks) except this node's own block; `merge paths`
 *   (ECMP) and graceful restart on. The kernel routes are `proto bird`.
 *   No `persist`: a BIRD stopped cleanly takes its routes with it (cleanup),
 *   a killed one leaves them, and the next BIRD, started with -R (graceful
 *   restart recovery), takes them over without a flap;
 * - `protocol static nodenet_block`: this node's podCIDR as a blackhole,
 *   originated to the peers and never exported to the kernel, where it would
 *   collide with cbr0's route (Calico's blackhole block, kept out of the
 *   kernel by its kernel filter);
 * - one `protocol bgp` per session, iBGP (one ASN), `direct` (the peers are
 *   on this node's L2 network, as host-gw needs), graceful restart on
 *   (restart time 120 s, Calico's), connect delay 1 s and connect retry 3 s
 *   (Calico's: a new Node is routed in about a second, not BIRD's default
 *   5 s + 120 s), error wait 5,60. As Calico, a session is opened by one
 *   side only: the node with the higher IP connects, the other is passive;
 *   this avoids the race where two connections cross during a graceful
 *   restart and one aborts it.
 * - Imports from BGP: only blocks of the node mask inside the cluster CIDR,
 *   never this node's own; exports to BGP: blocks of the cluster CIDR (its
 *   own, and on a reflector those it reflects).
 *
 * Route reflectors (Calico's): when no Node is a reflector, every node
 * peers with every other (full mesh: n(n-1)/2 sessions). When some are
 * (`--bgp-route-reflector` on those nodes, published in their backend-data,
 * see lease.ts), a reflector peers with every node, the non-reflectors as
 * its `rr client`s, the other reflectors as plain iBGP peers, all with one
 * `rr cluster id` (so two reflectors do not reflect each other's clients'
 * routes back and forth); a non-reflector peers only with the reflectors.
 * The next hop of a reflected route stays its origin's, so traffic never
 * passes through a reflector.
 */
import { ipToInt, parseCidr, type Cidr, type IPv4 } from '../../../../lib/net/ip.js';

/** Calico's default AS number (a private ASN). */
export const DEFAULT_ASN = 64512;
/** Calico's `graceful restart time` on its mesh sessions (s). */
export const DEFAULT_GRACEFUL_RESTART_S = 120;
/** BIRD's default hold time (s), said in the file: a killed peer's routes are gone within it (restart time ≤ hold time). */
export const DEFAULT_HOLD_S = 240;
/** The cluster ID every reflector shares (the one Calico's docs use). */
export const RR_CLUSTER_ID = '244.0.0.1';
/** The static protocol that originates this node's block; the kernel export rejects it by this name. */
export const BLOCK_PROTOCOL = 'nodenet_block';
export const KERNEL_PROTOCOL = 'nodenet_kernel';

/** A BGP speaker among the Nodes: a peer of this node, or not (see sessions()). */
export interface BgpNode {
  readonly node: string;
  readonly ip: IPv4;
  readonly routeReflector: boolean;
}

export interface BirdConfigInput {
  readonly nodeName: string;
  /** The node's underlay IP: router id and session source. */
  readonly routerId: IPv4;
  readonly asn: number;
  readonly podCIDR: Cidr;
  readonly clusterCIDR: Cidr;
  /** This node reflects routes (--bgp-route-reflector). */
  readonly routeReflector: boolean;
  /** Every other Node that speaks BGP here (its lease): sessions() picks the ones to peer with. */
  readonly nodes: readonly BgpNode[];
  /** Seconds (default 120, Calico's). */
  readonly gracefulRestartS?: number;
  /** Seconds (default 240, BIRD's); keepalive is a third of it. */
  readonly holdS?: number;
  /** BIRD's log file (absent: syslog is not used, only the control socket tells). */
  readonly logFile?: string;
}

/** One BGP session of this node. */
export interface Session {
  readonly node: string;
  readonly ip: IPv4;
  /** The BIRD protocol's name: peer_<ip with _>, unique per peer and a valid symbol. */
  readonly protocol: string;
  /** This node (a reflector) reflects to it. */
  readonly rrClient: boolean;
  /** This node waits for the peer to connect (the higher IP connects). */
  readonly passive: boolean;
}

/** The BIRD protocol name of the session to `ip`. */
export const protocolName = (ip: string): string => `peer_${ip.replace(/\./g, '_')}`;

/** The peer IP a protocol name stands for, or null for a name that is no session's. */
export function protocolPeerIP(name: string): string | null {
  const m = /^peer_(\d{1,3})_(\d{1,3})_(\d{1,3})_(\d{1,3})$/.exec(name);
  return m ? m.slice(1, 5).join('.') : null;
}

/** The sessions this node opens, sorted by peer IP: full mesh, or with reflectors (see the header). */
export function sessions(self: { readonly ip: IPv4; readonly routeReflector: boolean }, nodes: readonly BgpNode[]): Session[] {
  const others = nodes.filter((n) => n.ip !== self.ip);
  const anyReflector = self.routeReflector || others.some((n) => n.routeReflector);
  const peers = !anyReflector || self.routeReflector ? others : others.filter((n) => n.routeReflector);
  const seen = new Set<string>();
  const out: Session[] = [];
  for (const n of [...peers].sort((a, b) => ipToInt(a.ip) - ipToInt(b.ip))) {
    if (seen.has(n.ip)) continue; // two Nodes claiming one IP: one session (the first by name order is as good as any)
    seen.add(n.ip);
    out.push({ node: n.node, ip: n.ip, protocol: protocolName(n.ip), rrClient: self.routeReflector && !n.routeReflector, passive: ipToInt(n.ip) > ipToInt(self.ip) });
  }
  return out;
}

/** A BIRD string: BIRD's lexer has no escapes, so a quote or a line break cannot be in one. @throws for such a string */
function quote(s: string): string {
  if (/["\r\n]/.test(s)) throw new Error(`bird config: ${JSON.stringify(s)} cannot be a BIRD string (a quote or a line break)`);
  return `"${s}"`;
}

/** The whole bird.conf for this node. */
export function birdConfig(c: BirdConfigInput): string {
  const block = parseCidr(c.podCIDR);
  const cluster = parseCidr(c.clusterCIDR);
  const mask = block.prefix;
  const gr = c.gracefulRestartS ?? DEFAULT_GRACEFUL_RESTART_S;
  const hold = c.holdS ?? DEFAULT_HOLD_S;
  const keepalive = Math.max(1, Math.floor(hold / 3));
  const ss = sessions({ ip: c.routerId, routeReflector: c.routeReflector }, c.nodes);
  const out: string[] = [];
  out.push(
    `# Written by nodenet (overlay backend bgp) for node ${c.nodeName.replace(/[\r\n]/g, ' ')}; rewritten whenever the Nodes change.`,
    `router id ${c.routerId};`,
    'timeformat protocol iso long;',
    ...(c.logFile ? [`log ${quote(c.logFile)} { info, remote, warning, error, auth, fatal, bug };`] : []),
    '',
    `define NODENET_ASN = ${c.asn};`,
    `define NODENET_BLOCKS = [ ${cluster.cidr}{${mask},${mask}} ];`,
    `define NODENET_OWN_BLOCK = ${block.cidr};`,
    '',
    'protocol device {',
    '  scan time 2;',
    '}',
    '',
    '# The other nodes\' blocks into the kernel (proto bird); never this node\'s own (cbr0 holds it).',
    `protocol kernel ${KERNEL_PROTOCOL} {`,
    '  ipv4 {',
    '    import none;',
    '    export filter {',
    `      if proto = ${quote(BLOCK_PROTOCOL)} then reject;`,
    '      if net = NODENET_OWN_BLOCK then reject;',
    '      if source = RTS_BGP then accept;',
    '      reject;',
    '    };',
    '  };',
    '  learn off;',
    '  scan time 2;',
    '  graceful restart on;',
    '  merge paths on;',
    '}',
    '',
    '# This node\'s block, originated to the peers as a blackhole (Calico\'s block), kept out of the kernel above.',
    `protocol static ${BLOCK_PROTOCOL} {`,
    '  ipv4;',
    `  route ${block.cidr} blackhole;`,
    '}',
    '',
    'template bgp nodenet_peer {',
    `  local ${c.routerId} as NODENET_ASN;`,
    '  direct;',
    '  ipv4 {',
    '    import filter {',
    '      if net = NODENET_OWN_BLOCK then reject;',
    '      if net ~ NODENET_BLOCKS then accept;',
    '      reject;',
    '    };',
    '    export filter {',
    '      if net ~ NODENET_BLOCKS then accept;',
    '      reject;',
    '    };',
    '  };',
    '  graceful restart on;',
    `  graceful restart time ${gr};`,
    `  hold time ${hold};`,
    `  keepalive time ${keepalive};`,
    '  connect delay time 1;',
    '  connect retry time 3;',
    '  error wait time 5, 60;',
    ...(c.routeReflector ? [`  rr cluster id ${RR_CLUSTER_ID};`] : []),
    '}',
  );
  const mode = c.routeReflector ? 'this node is a route reflector' : ss.length && ss.length < c.nodes.length ? 'peers: the route reflectors' : 'full mesh';
  out.push('', `# Sessions (${mode}): ${ss.length}.`);
  for (const s of ss) {
    out.push(
      '',
      `# ${s.node.replace(/[\r\n]/g, ' ')}`,
      `protocol bgp ${s.protocol} from nodenet_peer {`,
      `  neighbor ${s.ip} as NODENET_ASN;`,
      ...(s.rrClient ? ['  rr client;'] : []),
      ...(s.passive ? ['  passive on;'] : []),
      '}',
    );
  }
  return `${out.join('\n')}\n`;
}
