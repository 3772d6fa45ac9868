/**
 * proxy/nftables/render: snapshot → one `nft -f` transaction, in kube-proxy's
 * nftables layout (KEP-3866), for IPv4, in one table or sharded over several (below).
 *
 * Layout (table `kube-proxy`, or `<prefix>-proxy`):
 * - base chains filter-prerouting (dstnat-10), filter-input/forward/output
 *   (filter, i.e. after DNAT), nat-prerouting/output (dstnat), nat-postrouting
 *   (srcnat);
 * - `services` dispatches with one verdict-map lookup,
 *   `ip daddr . meta l4proto . th dport vmap @service-ips`, plus
 *   `fib daddr type local ... vmap @service-nodeports` for NodePorts: the cost
 *   of finding a Service does not grow with the number of Services. With
 *   nodePortAddresses the NodePort rule is one per CIDR (`fib daddr type local
 *   ip daddr CIDR`: the local addresses inside it, as the kernel sees them at
 *   each packet, where kube-proxy fills @nodeport-ips with the addresses it
 *   found at sync time); 127.0.0.0/8 never serves NodePorts in this mode;
 * - per ServicePort: `service-<HASH>-ns/svc/proto/port` (Cluster policy),
 *   `local-...` (Local policy), `external-...` (NodePort / external IPs);
 *   `firewall-...` (loadBalancerSourceRanges);
 *   per endpoint `endpoint-<HASH>-...__ip/port` (hairpin masquerade mark,
 *   affinity update, dnat) and, with ClientIP affinity, a dynamic set
 *   `affinity-...` with the affinity timeout;
 * - Services without usable endpoints get an element in
 *   @no-endpoint-services / @no-endpoint-nodeports (reject, or drop when only
 *   Local endpoints elsewhere exist) checked by the filter chains;
 * - @cluster-ips and `cluster-ips-check`: traffic to a ClusterIP that no rule
 *   DNATed (a port the Service does not serve, or a ping) is rejected at once.
 *   `clusterIPPing: 'drop'` renders the silent drop instead for ICMP. With the
 *   Service CIDRs known, traffic to an address in them that no Service has is
 *   dropped there too (kube-proxy's "Drop traffic to unallocated ClusterIPs"),
 *   instead of being routed on towards the default gateway;
 * - LoadBalancer VIPs are elements of @service-ips like external IPs; with
 *   loadBalancerSourceRanges they are also in @firewall-ips, looked up by
 *   `firewall-check` before DNAT (from filter-prerouting and
 *   filter-output-pre-dnat, priority dstnat-10): its per-service chain returns
 *   for a source in the ranges (and for the VIPs, when a range holds the
 *   node's primary IP) and drops the rest. kube-proxy writes one
 *   `ip saddr != { ranges } drop`; a rule per range reads the same.
 *
 * Endpoint choice: kube-proxy writes `numgen random mod N vmap { 0 : goto a, ... }`,
 * one anonymous set per Service. Measured here, that made a 10k-Service load
 * take 65-91 s (kernel time). We write the iptables-style chain instead:
 * `numgen random mod N == 0 goto e0`, `numgen random mod N-1 == 0 goto e1`,
 * ..., `goto eN-1`: each draw is fresh, so rule k fires with probability
 * 1/(N-k) of what reaches it, which is uniform overall, and no set is created.
 *
 * The sharded layout (opts.shards = K > 1; the agent's default, nftablesShards 8). On every commit that adds
 * a rule with a jump, goto, DNAT or mark statement, or a verdict-map element, nf_tables revalidates the whole
 * table: it walks every chain reachable from every base chain (loops, hook types), once per path. In
 * kube-proxy's one table, at 30,000 Services that is the 30,000 service chains and 60,000 endpoint chains
 * walked from nat-prerouting and again from nat-output: measured here, 140 ms of kernel time for a
 * one-endpoint change (84 ms with one base chain), whatever the change's size; a verdict-map element alone
 * costs the same. Validation is per table, so the sharded layout spreads the Services (by a hash of
 * "ns/name") over K more tables, `kube-proxy-0` ... `kube-proxy-K-1`, each with its own nat base chains,
 * `services` and `nodeports` dispatch chains, @service-ips and @service-nodeports maps, a
 * mark-for-masquerade chain, and its Services' service-, local-, external- and endpoint- chains and affinity
 * sets; a change revalidates one shard (measured: 44 ms at K = 4, 15 ms at K = 16, same table contents).
 * The main table keeps the filter hooks and checks, @cluster-ips, @no-endpoint-*, @firewall-ips and the
 * firewall- chains, and postrouting's masquerading (on the mark any shard set). A packet meets the shards'
 * nat chains in turn and the first DNAT ends the walk (a connection gets one NAT binding per hook), so only
 * its first packet pays for the shards it passes: at most K lookups in hashed maps. The NodePort lookups run
 * at priority -99, after every shard's ClusterIP and external IP lookup at -100: kube-proxy's order
 * (@service-ips before @service-nodeports) holds across shards. K = 1 is kube-proxy's layout, exactly.
 *
 * Syncs. A full sync is one transaction that adds (creates if missing) and
 * flushes every fixed chain, set and map, recreates the base chains (so a
 * changed priority cannot wedge us), rewrites every per-service chain, re-adds
 * all elements, and deletes per-service chains and affinity sets that
 * `existing` lists but nothing uses any more. A partial sync rewrites only
 * the chains of the changed Services (and any active chain `existing` lacks),
 * adds/deletes only the map and set elements that differ from `existing`, and
 * deletes the chains no Service uses any more; it touches nothing else.
 * Each is one transaction, all-or-nothing, with one exception: a full sync of the sharded layout (not one
 * that rebuilds tables) is rendered table by table (each shard with its fixed part, Services, elements and
 * stale objects, then the main table's elements and stale objects), and a sink may commit each shard as a
 * transaction of its own while the next renders (RenderSink.beginTable/endTable; nft/netlink TableBatches).
 * On 2 CPUs that hides the kernel's commit behind the render: measured at 30,000 Services, 3.6 → 2.7 s.
 * Each table is then consistent on its own at every moment: a shard's DNAT chains and its maps commit
 * together, and the main table (filter checks, cluster-ips, masquerade on the mark) commits last, after the
 * DNATs it checks. A failure stops the sending; the backend's next sync is full. kube-proxy's iptables mode
 * is no more atomic across tables (iptables-restore commits each table in turn).
 *
 * Pure: the caller passes what is applied (`existing`) and stores the
 * returned `applied` after the transaction succeeded.
 */
import { ErrorCode, NodenetError } from '../../../../lib/errors/errors.js';
import { cidrContains } from '../../../../lib/net/ip.js';
import { L4_PROTOCOL_NUMBERS } from '../../../../lib/net/protocols.js';
import type { EndpointInfo, ProxyNodeConfig, ProxySnapshot, ServicePortInfo, SyncScope } from '../types.js';
import { spnString } from '../types.js';
import { compact, flat } from '../flat.js';
import { externallyAccessible, externalPolicyLocal, internalPolicyLocal, usesClusterEndpoints, usesLocalEndpoints } from '../categorize.js';
import { categorizeSorted } from './endpoints.js';
import { endpointObjects, serviceKeyOfObject, servicePortChains, shardOf, shardTableName, tableName } from './names.js';
import { CowMap, CowSet, type MutableMap, type MutableSet } from './cow.js';
import { ipv4Bytes, type NlCommand, type NlMatch, type NlRule } from '../../netfilter/nft/netlink/commands.js';

export interface NftablesRenderOptions {
  /**
   * What happens to a ping (any ICMP) sent to a ClusterIP. 'reject' (the
   * default, kube-proxy's nftables mode): the node answers at once with ICMP
   * port unreachable. 'drop': the packet is dropped silently and ping waits,
   * which is what users of the iptables mode see.
   */
  readonly clusterIPPing?: 'reject' | 'drop';
  /**
   * 1 (the default): kube-proxy's layout, one table. K > 1: the sharded layout (below): the Services' DNAT
   * objects spread over K more tables, so that a change revalidates a K-th of them.
   */
  readonly shards?: number;
}

/** The containers whose elements point at a Service's DNAT chains: in its shard's table when sharded. */
const SHARD_CONTAINERS: ReadonlySet<ElementContainer> = new Set(['service-ips', 'service-nodeports']);

/** The sets and maps whose elements nodenet manages. */
export const ELEMENT_CONTAINERS = ['cluster-ips', 'service-ips', 'service-nodeports', 'no-endpoint-services', 'no-endpoint-nodeports', 'firewall-ips'] as const;
export type ElementContainer = (typeof ELEMENT_CONTAINERS)[number];

export interface NftElement {
  /** "ns/svc:port", or null for cluster-ips elements (shared by a Service's ports). */
  readonly comment: string | null;
  /** The verdict of a map element; null in a set. */
  readonly value: string | null;
}

/** One Service's share of the table (all its ports). */
export interface ServiceContribution {
  readonly chains: readonly string[];
  readonly affinitySets: ReadonlyMap<string, number>;
  readonly elements: readonly ElementEntry[];
}

export interface ElementEntry {
  readonly container: ElementContainer;
  readonly key: string;
  readonly el: NftElement;
}

/** What nodenet's table holds after a sync; the renderer's `existing` input. */
export interface NftablesApplied {
  /** Per-service chains (service-, local-, external-, endpoint-). */
  readonly chains: ReadonlySet<string>;
  /** Affinity sets with their timeout in seconds. */
  readonly affinitySets: ReadonlyMap<string, number>;
  /** Elements of each managed set/map, keyed "a . b . c". */
  readonly elements: ReadonlyMap<ElementContainer, ReadonlyMap<string, NftElement>>;
  /**
   * What each Service (key "ns/name") contributed. A partial sync diffs only
   * the changed Services against this. Empty when the record came from
   * listing the kernel, which allows full syncs only.
   */
  readonly services: ReadonlyMap<string, ServiceContribution>;
  /**
   * Tables a full sync deletes first and builds again (from the kernel's listing: they hold another layout,
   * another shard count's, which the record of names cannot follow). Never set on the record of a sync.
   */
  readonly resetTables?: readonly string[];
}

/**
 * Where a render can go instead of a text: line by line, the per-service
 * chains and rules (nine of ten lines of a full sync) as the nf_tables
 * commands themselves, whose text is never built, the rest as text lines.
 * A command is exactly what netfilter/nft/netlink/commands.ts parses from
 * the line the text render writes in its place (render-netlink.test.ts);
 * its `line` is 0, the line number being its place in the transaction,
 * counted as the text render counts lines (comment lines included).
 */
export interface RenderSink {
  text(line: string): void;
  command(cmd: NlCommand): void;
  /** What comes until endTable(table) is all of table `table` (and the main table's firewall chains, if any). */
  beginTable?(table: string): void;
  /**
   * Everything of table `table` has been rendered (a full sync of the sharded layout, table by table: each shard
   * table in turn, the main table last, without this call). A sink may commit that table's part at once, as a
   * transaction of its own, while the rest is rendered.
   */
  endTable?(table: string): void;
}

export interface NftablesRender {
  /** One `nft -f` transaction ('' when rendered to a sink). */
  readonly text: string;
  /** Lines of the transaction (what a sink received). */
  readonly lines: number;
  /** `add rule` commands in `text`. */
  readonly ruleCount: number;
  /** Elements added or deleted by `text`. */
  readonly elementCount: number;
  /** Per-service chains (re)written by `text`. */
  readonly chainsWritten: number;
  /** What the table holds once `text` applied; pass it as `existing` next time. */
  readonly applied: NftablesApplied;
}

export const EMPTY_APPLIED: NftablesApplied = {
  chains: new Set(),
  affinitySets: new Map(),
  elements: new Map(ELEMENT_CONTAINERS.map((c) => [c, new Map()])),
  services: new Map(),
};

/** Fixed object names (kube-proxy's). */
export const CH = {
  filterPrerouting: 'filter-prerouting',
  filterInput: 'filter-input',
  filterForward: 'filter-forward',
  filterOutput: 'filter-output',
  natPrerouting: 'nat-prerouting',
  natOutput: 'nat-output',
  natPostrouting: 'nat-postrouting',
  services: 'services',
  serviceEndpointsCheck: 'service-endpoints-check',
  nodeportEndpointsCheck: 'nodeport-endpoints-check',
  clusterIPsCheck: 'cluster-ips-check',
  firewallCheck: 'firewall-check',
  filterOutputPreDnat: 'filter-output-pre-dnat',
  rejectChain: 'reject-chain',
  markMasq: 'mark-for-masquerade',
  masquerading: 'masquerading',
  // The sharded layout's shard tables only:
  nodeports: 'nodeports',
  natPreroutingNodeports: 'nat-prerouting-nodeports',
  natOutputNodeports: 'nat-output-nodeports',
} as const;

/** What the main table leaves to the shard tables in the sharded layout. */
const SHARD_ONLY_CHAINS: ReadonlySet<string> = new Set([CH.natPrerouting, CH.natOutput, CH.services, CH.markMasq]);

const SHARD_BASE_CHAINS: readonly { name: string; spec: string }[] = [
  { name: CH.natPrerouting, spec: 'type nat hook prerouting priority -100' },
  { name: CH.natOutput, spec: 'type nat hook output priority -100' },
  { name: CH.natPreroutingNodeports, spec: 'type nat hook prerouting priority -99' },
  { name: CH.natOutputNodeports, spec: 'type nat hook output priority -99' },
];

const BASE_CHAINS: readonly { name: string; spec: string }[] = [
  // Pre-DNAT filtering: loadBalancerSourceRanges must see the VIP as destination.
  { name: CH.filterPrerouting, spec: 'type filter hook prerouting priority -110' },
  { name: CH.filterOutputPreDnat, spec: 'type filter hook output priority -110' },
  // The checks run after DNAT: a packet that was DNATed to an endpoint no longer has a Service IP as destination.
  { name: CH.filterInput, spec: 'type filter hook input priority 0' },
  { name: CH.filterForward, spec: 'type filter hook forward priority 0' },
  { name: CH.filterOutput, spec: 'type filter hook output priority 0' },
  { name: CH.natPrerouting, spec: 'type nat hook prerouting priority -100' },
  { name: CH.natOutput, spec: 'type nat hook output priority -100' },
  { name: CH.natPostrouting, spec: 'type nat hook postrouting priority 100' },
];

const REGULAR_CHAINS: readonly { name: string; comment?: string }[] = [
  { name: CH.services },
  { name: CH.serviceEndpointsCheck },
  { name: CH.nodeportEndpointsCheck },
  { name: CH.clusterIPsCheck },
  { name: CH.firewallCheck },
  { name: CH.rejectChain, comment: 'helper for @no-endpoint-services / @no-endpoint-nodeports' },
  { name: CH.markMasq },
  { name: CH.masquerading },
];

const CONTAINER_DECLS: Readonly<Record<ElementContainer, string>> = {
  'cluster-ips': 'set %T cluster-ips { type ipv4_addr ; comment "Active ClusterIPs" ; }',
  'service-ips': 'map %T service-ips { type ipv4_addr . inet_proto . inet_service : verdict ; comment "ClusterIP and ExternalIP traffic" ; }',
  'service-nodeports': 'map %T service-nodeports { type inet_proto . inet_service : verdict ; comment "NodePort traffic" ; }',
  'no-endpoint-services':
    'map %T no-endpoint-services { type ipv4_addr . inet_proto . inet_service : verdict ; comment "vmap to drop or reject packets to services with no endpoints" ; }',
  'no-endpoint-nodeports':
    'map %T no-endpoint-nodeports { type inet_proto . inet_service : verdict ; comment "vmap to drop or reject packets to service nodeports with no endpoints" ; }',
  'firewall-ips': 'map %T firewall-ips { type ipv4_addr . inet_proto . inet_service : verdict ; comment "destinations that are subject to LoadBalancerSourceRanges" ; }',
};

/** An address for a rule: a /32 as the bare IP (how nft lists it). */
function nftAddr(cidr: string): string {
  return cidr.endsWith('/32') ? cidr.slice(0, -3) : cidr;
}

/**
 * The NodePort destination matches for nodePortAddresses: none when null
 * (the caller writes its any-local-address rule); otherwise one per CIDR,
 * skipping those inside 127.0.0.0/8 and excluding it from wider ones.
 */
function nodePortMatches(cidrs: readonly string[]): string[] {
  const out: string[] = [];
  for (const c of cidrs) {
    const net = c.split('/')[0]!;
    if (cidrContains('127.0.0.0/8', net)) continue; // no localhost NodePorts in nftables mode
    out.push(`ip daddr ${nftAddr(c)}${cidrContains(c, '127.0.0.0') ? ' ip daddr != 127.0.0.0/8' : ''}`);
  }
  return out;
}

export function masqueradeMark(bit: number): string {
  return `0x${(2 ** bit).toString(16)}`;
}

/** A rule body as text, or (rendering to a sink) as its netlink form: only the one the render needs is built. */
type RuleBody = string | { readonly nl: NlRule };

/** `ip saddr|daddr [!=] CIDR` as a match, or null for what the netlink parser leaves to nft (a /0). */
function ipMatch(field: 'saddr' | 'daddr', neq: boolean, cidr: string): NlMatch | null {
  const slash = cidr.indexOf('/');
  const prefix = slash < 0 ? 32 : Number(cidr.slice(slash + 1));
  if (!(prefix >= 1 && prefix <= 32)) return null;
  return { kind: 'ip', field, neq, addr: ipv4Bytes(slash < 0 ? cidr : cidr.slice(0, slash)), prefix };
}
const GOTO_REJECT = `goto ${CH.rejectChain}`;
const verdictRule = (kind: 'jump' | 'goto', chain: string, matches: NlMatch[] = []): { nl: NlRule } => ({ nl: { matches, stmt: { kind: 'verdict', verdict: { kind, chain } }, comment: null } });

/** The per-service part of a render: chains with their rules, affinity sets, elements. */
interface ServicePortPlan {
  readonly chains: Map<string, RuleBody[]>;
  readonly affinitySets: Map<string, number>;
  readonly elements: ElementEntry[];
}

function planServicePort(svc: ServicePortInfo, endpoints: readonly EndpointInfo[], cfg: ProxyNodeConfig, cmds: boolean): ServicePortPlan {
  const spn = svc.spn;
  const comment = spnString(spn);
  const proto = svc.protocol.toLowerCase();
  const names = servicePortChains(spn);
  const cat = categorizeSorted(svc, endpoints);
  const chains = new Map<string, RuleBody[]>();
  const affinitySets = new Map<string, number>();
  const elements: ElementEntry[] = [];
  const affinity = svc.affinityTimeoutSeconds;

  const usesClusterChain = cat.cluster.length > 0 && usesClusterEndpoints(svc);
  const usesLocalChain = cat.local.length > 0 && usesLocalEndpoints(svc);
  const internalChain = internalPolicyLocal(svc) ? names.local : names.cluster;
  const hasInternal = cat.hasAny && (!internalPolicyLocal(svc) || cat.local.length > 0);
  const externalPolicyChain = externalPolicyLocal(svc) ? names.local : names.cluster;
  const hasExternal = cat.hasAny && (!externalPolicyLocal(svc) || cat.local.length > 0);
  const usesExternalChain = cat.hasAny && externallyAccessible(svc);
  // No endpoints at all: reject. Endpoints exist but none for this policy (Local): drop.
  const noEndpointVerdict = !cat.hasAny ? GOTO_REJECT : 'drop';
  // Source ranges apply whenever the Service has VIPs (kube-proxy), endpoints or not.
  const usesFirewall = svc.loadBalancerVIPs.length > 0 && svc.loadBalancerSourceRanges.length > 0;

  // Chains first (declared in this order), rules filled below.
  if (usesClusterChain) chains.set(names.cluster, []);
  if (usesLocalChain) chains.set(names.local, []);
  if (usesExternalChain) chains.set(names.external, []);
  if (usesFirewall) chains.set(names.firewall, []);
  for (const ep of cat.allReachable) chains.set(endpointObjects(spn, ep).chain, []);

  // Elements.
  // Element keys and values are kept in the applied record: flat strings (proxy/flat.ts).
  const dest = (ip: string, port: number) => flat(ip, ' . ', proto, ' . ', String(port));
  elements.push({ container: 'cluster-ips', key: svc.clusterIP, el: { comment: null, value: null } });
  if (hasInternal) elements.push({ container: 'service-ips', key: dest(svc.clusterIP, svc.port), el: { comment, value: flat('goto ', internalChain) } });
  else elements.push({ container: 'no-endpoint-services', key: dest(svc.clusterIP, svc.port), el: { comment, value: noEndpointVerdict } });
  for (const eip of svc.externalIPs) {
    if (cat.hasAny) elements.push({ container: 'service-ips', key: dest(eip, svc.port), el: { comment, value: flat('goto ', names.external) } });
    if (!hasExternal) elements.push({ container: 'no-endpoint-services', key: dest(eip, svc.port), el: { comment, value: noEndpointVerdict } });
  }
  for (const vip of svc.loadBalancerVIPs) {
    if (cat.hasAny) elements.push({ container: 'service-ips', key: dest(vip, svc.port), el: { comment, value: flat('goto ', names.external) } });
    if (usesFirewall) elements.push({ container: 'firewall-ips', key: dest(vip, svc.port), el: { comment, value: flat('goto ', names.firewall) } });
    if (!hasExternal) elements.push({ container: 'no-endpoint-services', key: dest(vip, svc.port), el: { comment, value: noEndpointVerdict } });
  }
  if (svc.nodePort !== 0) {
    const np = flat(proto, ' . ', String(svc.nodePort));
    if (cat.hasAny) elements.push({ container: 'service-nodeports', key: np, el: { comment, value: flat('goto ', names.external) } });
    if (!hasExternal) elements.push({ container: 'no-endpoint-nodeports', key: np, el: { comment, value: noEndpointVerdict } });
  }

  // Internal (ClusterIP) traffic from outside the pod network is masqueraded,
  // in case the endpoint is on another node (kube-proxy's localDetector).
  if (hasInternal && cfg.clusterCIDR) {
    const notPods = cmds ? ipMatch('saddr', true, cfg.clusterCIDR) : null;
    chains.get(internalChain)?.push(notPods ? verdictRule('jump', CH.markMasq, [ipMatch('daddr', false, svc.clusterIP)!, notPods]) : `ip daddr ${svc.clusterIP} ip saddr != ${cfg.clusterCIDR} jump ${CH.markMasq}`);
  }

  if (usesExternalChain) {
    const ext = chains.get(names.external)!;
    if (!externalPolicyLocal(svc)) {
      // Cluster policy: the endpoint may be on another node, masquerade so replies come back here.
      ext.push(cmds ? verdictRule('jump', CH.markMasq) : `jump ${CH.markMasq}`);
    } else {
      // Local policy keeps the client's source IP, except for traffic from pods
      // and from the node itself, which is sent to any endpoint (short-circuit).
      if (cfg.clusterCIDR) ext.push(`ip saddr ${cfg.clusterCIDR} goto ${names.cluster} comment "short-circuit pod traffic"`);
      ext.push(`fib saddr type local jump ${CH.markMasq} comment "masquerade local traffic"`);
      ext.push(`fib saddr type local goto ${names.cluster} comment "short-circuit local traffic"`);
    }
    if (hasExternal) ext.push(cmds ? verdictRule('goto', externalPolicyChain) : `goto ${externalPolicyChain}`);
  }

  if (usesFirewall) {
    // Only VIP-style load balancers keep the client's address; behind a NodePort-style one these ranges never match.
    const fw = chains.get(names.firewall)!;
    for (const range of svc.loadBalancerSourceRanges) fw.push(`ip saddr ${nftAddr(range)} return`);
    // A VIP that is also a local address: the node's own request loops back with the VIP as source.
    const primary = cfg.primaryIP ?? null;
    if (primary && svc.loadBalancerSourceRanges.some((r) => cidrContains(r, primary))) {
      for (const vip of svc.loadBalancerVIPs) fw.push(`ip saddr ${vip} return`);
    }
    fw.push(`drop comment "${comment} traffic not in loadBalancerSourceRanges"`);
  }

  if (affinity !== null) {
    for (const ep of cat.allReachable) affinitySets.set(endpointObjects(spn, ep).affinitySet, affinity);
  }

  const writeEndpointChoice = (chain: string, eps: readonly EndpointInfo[]) => {
    const rules = chains.get(chain)!;
    const objs = eps.map((ep) => endpointObjects(spn, ep));
    // A client with a live affinity entry goes back to its endpoint.
    if (affinity !== null) {
      for (const o of objs) rules.push(cmds ? verdictRule('goto', o.chain, [{ kind: 'ip-in-set', field: 'saddr', set: o.affinitySet }]) : `ip saddr @${o.affinitySet} goto ${o.chain}`);
    }
    // Uniform choice without anonymous sets: rule k fires with probability 1/(N-k).
    objs.forEach((o, k) => {
      const left = objs.length - k;
      if (cmds) rules.push(verdictRule('goto', o.chain, left > 1 ? [{ kind: 'numgen', mod: left, value: 0 }] : []));
      else rules.push(left > 1 ? `numgen random mod ${left} == 0 goto ${o.chain}` : `goto ${o.chain}`);
    });
  };
  if (usesClusterChain) writeEndpointChoice(names.cluster, cat.cluster);
  if (usesLocalChain) writeEndpointChoice(names.local, cat.local);

  for (const ep of cat.allReachable) {
    const o = endpointObjects(spn, ep);
    const rules = chains.get(o.chain)!;
    // Hairpin: a pod reaching itself through the Service must be masqueraded, or its reply would bypass the DNAT.
    const l4 = L4_PROTOCOL_NUMBERS[proto];
    if (cmds && l4 !== undefined) {
      const addr = ipv4Bytes(ep.ip);
      rules.push(verdictRule('jump', CH.markMasq, [{ kind: 'ip', field: 'saddr', neq: false, addr, prefix: 32 }]));
      if (affinity !== null) rules.push({ nl: { matches: [], stmt: { kind: 'update-saddr', set: o.affinitySet }, comment: null } });
      rules.push({ nl: { matches: [{ kind: 'l4proto', proto: l4 }], stmt: { kind: 'dnat', addr, port: ep.port }, comment: null } });
    } else {
      rules.push(`ip saddr ${ep.ip} jump ${CH.markMasq}`);
      if (affinity !== null) rules.push(`update @${o.affinitySet} { ip saddr }`);
      rules.push(`meta l4proto ${proto} dnat to ${ep.ip}:${ep.port}`);
    }
  }

  return { chains, affinitySets, elements };
}

function elementText(key: string, el: NftElement): string {
  return `${key}${el.comment !== null ? ` comment "${el.comment}"` : ''}${el.value !== null ? ` : ${el.value}` : ''}`;
}

const sameElement = (a: NftElement, b: NftElement) => a.value === b.value && a.comment === b.comment;

function affinitySetDecl(t: string, name: string, timeout: number): string {
  return `add set ${t} ${name} { type ipv4_addr ; flags dynamic,timeout ; timeout ${timeout}s ; }`;
}

const EMPTY_KEYS: ReadonlySet<string> = new Set();

/** Shared by every Service without ClientIP affinity: the applied record keeps no empty Map per Service (~200 bytes each). */
const NO_AFFINITY_SETS: ReadonlyMap<string, number> = new Map();

const EMPTY_CONTRIBUTION: ServiceContribution = { chains: [], affinitySets: NO_AFFINITY_SETS, elements: [] };

/** A Service's plan: its ports' chains (with rules, in order), affinity sets and elements. */
interface ServicePlan {
  readonly chains: Map<string, RuleBody[]>;
  readonly contribution: ServiceContribution;
}

function planService(ports: readonly ServicePortInfo[], snapshot: ProxySnapshot, cfg: ProxyNodeConfig, cmds: boolean): ServicePlan {
  const chains = new Map<string, RuleBody[]>();
  const affinitySets = new Map<string, number>();
  const elements: ElementEntry[] = [];
  for (const svc of ports) {
    const p = planServicePort(svc, snapshot.endpoints.get(spnString(svc.spn)) ?? [], cfg, cmds);
    for (const [c, r] of p.chains) chains.set(c, r);
    for (const [s, t] of p.affinitySets) affinitySets.set(s, t);
    elements.push(...p.elements);
  }
  // The contribution is kept in the applied record: exact-size arrays (proxy/flat.ts).
  return { chains, contribution: { chains: compact([...chains.keys()]), affinitySets: affinitySets.size > 0 ? affinitySets : NO_AFFINITY_SETS, elements: compact(elements) } };
}

/** "ns/name" of a ServicePort, made once per object (ports keep their objects across snapshots). */
const serviceKeys = new WeakMap<ServicePortInfo, string>();
function serviceKeyOf(svc: ServicePortInfo): string {
  let k = serviceKeys.get(svc);
  if (k === undefined) {
    k = `${svc.spn.namespace}/${svc.spn.name}`;
    serviceKeys.set(svc, k);
  }
  return k;
}

/** The NodePort dispatch rules (of `services`, or of a shard's `nodeports`). */
function nodePortDispatch(npCidrs: readonly string[] | null): string[] {
  if (npCidrs === null) return ['fib daddr type local ip daddr != 127.0.0.0/8 meta l4proto . th dport vmap @service-nodeports'];
  return nodePortMatches(npCidrs).map((m) => `fib daddr type local ${m} meta l4proto . th dport vmap @service-nodeports`);
}

/**
 * The fixed part of one shard table (the sharded layout): its DNAT hooks, the dispatch maps and chains, its own
 * mark-for-masquerade (chains cannot jump across tables; the main table's postrouting masquerades on the mark).
 * NodePorts are looked up at priority -99, after every shard's ClusterIP and external IP lookup at -100, which
 * keeps kube-proxy's order (service-ips before service-nodeports) across shards: nat chains stop at the first DNAT.
 */
function renderShardFixed(T: string, cfg: ProxyNodeConfig, out: { push(...lines: string[]): void }, rule: (chain: string, body: string) => void): void {
  out.push(`add table ${T} { comment "rules for kube-proxy: a shard of the Services" ; }`);
  for (const b of SHARD_BASE_CHAINS) out.push(`add chain ${T} ${b.name}`, `delete chain ${T} ${b.name}`, `add chain ${T} ${b.name} { ${b.spec} ; }`);
  for (const c of [CH.services, CH.nodeports, CH.markMasq]) out.push(`add chain ${T} ${c}`, `flush chain ${T} ${c}`);
  for (const c of SHARD_CONTAINERS) {
    const decl = CONTAINER_DECLS[c].replace('%T', T);
    out.push(`add ${decl}`, `flush map ${T} ${c}`);
  }
  rule(CH.natPrerouting, `jump ${CH.services}`);
  rule(CH.natOutput, `jump ${CH.services}`);
  rule(CH.natPreroutingNodeports, `jump ${CH.nodeports}`);
  rule(CH.natOutputNodeports, `jump ${CH.nodeports}`);
  rule(CH.services, 'ip daddr . meta l4proto . th dport vmap @service-ips');
  for (const r of nodePortDispatch(cfg.nodePortAddresses ?? null)) rule(CH.nodeports, r);
  rule(CH.markMasq, `mark set mark or ${masqueradeMark(cfg.masqueradeBit)}`);
}

/** The fixed part of a full sync: table, base chains, fixed chains, sets, maps and their rules. */
function renderFixed(T: string, cfg: ProxyNodeConfig, opts: NftablesRenderOptions, out: { push(...lines: string[]): void }, rule: (chain: string, body: string) => void, sharded: boolean): void {
  const mark = masqueradeMark(cfg.masqueradeBit);
  out.push(`add table ${T} { comment "rules for kube-proxy" ; }`);
  out.push('# base chains: recreated, so that changed hook facts cannot wedge a sync');
  for (const b of BASE_CHAINS) {
    if (sharded && SHARD_ONLY_CHAINS.has(b.name)) continue;
    out.push(`add chain ${T} ${b.name}`, `delete chain ${T} ${b.name}`, `add chain ${T} ${b.name} { ${b.spec} ; }`);
  }
  out.push('# fixed chains, sets and maps: created if missing, emptied');
  for (const c of REGULAR_CHAINS) {
    if (sharded && SHARD_ONLY_CHAINS.has(c.name)) continue;
    out.push(c.comment ? `add chain ${T} ${c.name} { comment "${c.comment}" ; }` : `add chain ${T} ${c.name}`, `flush chain ${T} ${c.name}`);
  }
  for (const c of ELEMENT_CONTAINERS) {
    if (sharded && SHARD_CONTAINERS.has(c)) continue;
    const decl = CONTAINER_DECLS[c].replace('%T', T);
    out.push(`add ${decl}`, `flush ${decl.startsWith('set') ? 'set' : 'map'} ${T} ${c}`);
  }
  out.push('# hooks');
  rule(CH.filterInput, `ct state new jump ${CH.nodeportEndpointsCheck}`);
  rule(CH.filterInput, `ct state new jump ${CH.serviceEndpointsCheck}`);
  rule(CH.filterForward, `ct state new jump ${CH.serviceEndpointsCheck}`);
  rule(CH.filterForward, `ct state new jump ${CH.clusterIPsCheck}`);
  rule(CH.filterOutput, `ct state new jump ${CH.serviceEndpointsCheck}`);
  rule(CH.filterOutput, `ct state new jump ${CH.clusterIPsCheck}`);
  rule(CH.filterPrerouting, `ct state new jump ${CH.firewallCheck}`);
  rule(CH.filterOutputPreDnat, `ct state new jump ${CH.firewallCheck}`);
  if (!sharded) {
    rule(CH.natPrerouting, `jump ${CH.services}`);
    rule(CH.natOutput, `jump ${CH.services}`);
  }
  rule(CH.natPostrouting, `jump ${CH.masquerading}`);
  out.push('# dispatch');
  const npCidrs = cfg.nodePortAddresses ?? null;
  if (!sharded) {
    rule(CH.services, 'ip daddr . meta l4proto . th dport vmap @service-ips');
    for (const r of nodePortDispatch(npCidrs)) rule(CH.services, r);
  }
  rule(CH.serviceEndpointsCheck, 'ip daddr . meta l4proto . th dport vmap @no-endpoint-services');
  if (npCidrs === null) rule(CH.nodeportEndpointsCheck, 'ip daddr != 127.0.0.0/8 meta l4proto . th dport vmap @no-endpoint-nodeports');
  else for (const m of nodePortMatches(npCidrs)) rule(CH.nodeportEndpointsCheck, `${m} meta l4proto . th dport vmap @no-endpoint-nodeports`);
  rule(CH.firewallCheck, 'ip daddr . meta l4proto . th dport vmap @firewall-ips');
  rule(CH.rejectChain, 'reject');
  out.push('# traffic to a ClusterIP that no rule DNATed: a port the Service does not serve, or a ping');
  if ((opts.clusterIPPing ?? 'reject') === 'reject') {
    rule(CH.clusterIPsCheck, 'ip daddr @cluster-ips meta l4proto icmp reject comment "Reject ping to ClusterIPs"');
  } else {
    rule(CH.clusterIPsCheck, 'ip daddr @cluster-ips meta l4proto icmp drop comment "Drop ping to ClusterIPs silently"');
  }
  rule(CH.clusterIPsCheck, 'ip daddr @cluster-ips reject comment "Reject traffic to invalid ports of ClusterIPs"');
  for (const c of cfg.serviceCIDRs ?? []) rule(CH.clusterIPsCheck, `ip daddr ${nftAddr(c)} drop comment "Drop traffic to unallocated ClusterIPs"`);
  out.push('# masquerading');
  if (!sharded) rule(CH.markMasq, `mark set mark or ${mark}`);
  rule(CH.masquerading, `mark and ${mark} == 0 return`);
  rule(CH.masquerading, `mark set mark xor ${mark}`);
  rule(CH.masquerading, 'masquerade fully-random');
}

/**
 * Renders one transaction. With a partial scope, `existing` (the `applied`
 * of the last successful sync) is required, and only the Services in
 * `scope.changed` (plus any Service the record lacks or the snapshot lost)
 * are looked at. With a full scope, `existing` names the stale per-service
 * objects to delete; it may be omitted for a table known to hold none.
 */
export function renderNftables(
  snapshot: ProxySnapshot,
  cfg: ProxyNodeConfig,
  scope: SyncScope,
  existing?: NftablesApplied,
  opts: NftablesRenderOptions = {},
  /** Render line by line into this instead of a text (the netlink path; see RenderSink). */
  sink?: RenderSink,
): NftablesRender {
  if (!scope.full && !existing) {
    throw new NodenetError(ErrorCode.Internal, 'nftables: a partial sync needs the state of the last successful sync');
  }
  // Tables the kernel holds in another layout are deleted first: then nothing of theirs is stale.
  const reset = scope.full ? (existing?.resetTables ?? []) : [];
  const prev = existing && !reset.length ? existing : EMPTY_APPLIED;
  const table = tableName(cfg.prefix);
  const T = `ip ${table}`;
  const shards = Math.max(1, Math.floor(opts.shards ?? 1));
  const sharded = shards > 1;
  const shardTables = sharded ? Array.from({ length: shards }, (_, i) => shardTableName(cfg.prefix, i)) : [];
  /** The table of a Service's DNAT objects (all but its firewall chains). */
  const tableOfService = (key: string): string => (sharded ? shardTables[shardOf(key, shards)]! : table);
  /** The table of a per-service object, by its name. */
  const tableOfObject = (name: string): string => (sharded && !name.startsWith('firewall-') ? tableOfService(serviceKeyOfObject(name) ?? '') : table);
  const lines: string[] = [];
  let lineCount = 0;
  // Text lines go to the text, or to the sink; with a sink, per-service chains and rules go as commands.
  const out = {
    push(...ls: string[]): void {
      lineCount += ls.length;
      if (sink) for (const l of ls) sink.text(l);
      else for (const l of ls) lines.push(l);
    },
  };
  let ruleCount = 0;
  let elementCount = 0;
  let chainsWritten = 0;
  const ruleIn = (tbl: string, chain: string, body: RuleBody) => {
    if (typeof body === 'string') out.push(`add rule ip ${tbl} ${chain} ${body}`);
    else {
      lineCount++;
      sink!.command({ line: 0, table: tbl, op: 'add-rule', chain, rule: body.nl });
    }
    ruleCount++;
  };
  const rule = (chain: string, body: RuleBody) => ruleIn(table, chain, body);
  const chainLines = (tbl: string, c: string) => {
    if (!sink) return out.push(`add chain ip ${tbl} ${c}`, `flush chain ip ${tbl} ${c}`);
    lineCount += 2;
    sink.command({ line: 0, table: tbl, op: 'add-chain', chain: c });
    sink.command({ line: 0, table: tbl, op: 'flush-chain', chain: c });
  };

  // The ServicePorts of the Services this sync looks at, grouped by Service
  // (ports in spnString order). A partial sync groups only those: at 30,000
  // Services, grouping and sorting them all was most of a one-Service render.
  const byService = new Map<string, ServicePortInfo[]>();
  const k = new Set<string>(scope.full ? [] : scope.changed);
  // A partial sync still walks every ServicePort (a Service the record lacks, or lost, is changed too);
  // each port's Service key is made once per object, so the walk builds no strings.
  const present = new Set<string>();
  for (const svc of snapshot.services.values()) {
    const key = serviceKeyOf(svc);
    if (!scope.full) {
      present.add(key);
      if (!prev.services.has(key)) k.add(key);
      else if (!k.has(key)) continue;
    }
    const list = byService.get(key);
    if (list) list.push(svc);
    else byService.set(key, [svc]);
  }
  if (!scope.full) for (const s of prev.services.keys()) if (!present.has(s)) k.add(s);
  const bySpn = (a: ServicePortInfo, b: ServicePortInfo) => {
    const x = spnString(a.spn);
    const y = spnString(b.spn);
    return x < y ? -1 : x > y ? 1 : 0;
  };
  for (const list of byService.values()) if (list.length > 1) list.sort(bySpn);
  const keys = scope.full ? [...byService.keys()].sort() : [...k].sort();
  // A full sync of the sharded layout (not rebuilding tables) is rendered table by table: each shard with its
  // fixed part, its Services, its elements and its stale objects, then the main table's elements and stale objects
  // (its fixed part comes first, as in every full sync). A sink may then commit each shard while the next renders.
  const byTable = scope.full && sharded && !reset.length;
  const shardFixed = (st: string): void => {
    out.push(`# shard ${st}`);
    renderShardFixed(`ip ${st}`, cfg, out, (chain, body) => ruleIn(st, chain, body));
  };

  if (scope.full) {
    if (reset.length) {
      out.push('# tables in another layout: deleted, then built again');
      for (const r of reset) out.push(`add table ip ${r}`, `delete table ip ${r}`);
    }
    renderFixed(T, cfg, opts, out, rule, sharded);
    if (!byTable) for (const st of shardTables) shardFixed(st);
  }

  // The new record starts from the old one for a partial sync, empty for a full one.
  // (A partial sync's record shares the old one's contents: copy-on-write, cow.ts.)
  const chains: MutableSet<string> = scope.full ? new Set() : CowSet.from(prev.chains);
  const affinitySets: MutableMap<string, number> = scope.full ? new Map() : CowMap.from(prev.affinitySets);
  const elements = new Map<ElementContainer, MutableMap<string, NftElement>>(
    ELEMENT_CONTAINERS.map((c) => [c, scope.full ? new Map() : CowMap.from(prev.elements.get(c) ?? new Map<string, NftElement>())]),
  );
  const services: MutableMap<string, ServiceContribution> = scope.full ? new Map() : CowMap.from(prev.services);
  const staleChains = new Set<string>();
  const staleSets = new Map<string, number>();
  const adds: string[] = [];
  // A full sync writes the elements grouped by container (in ELEMENT_CONTAINERS order).
  // And by table: consecutive elements of one set go as one message (the encoder merges them), so the shards'
  // are not interleaved (30,000 messages instead of a few at 30,000 Services, +1 s).
  const allTables = [table, ...shardTables];
  const addsBy = new Map<string, string[]>(ELEMENT_CONTAINERS.flatMap((c) => allTables.map((tb) => [`${c} ${tb}`, []] as [string, string[]])));
  const dels: string[] = [];
  const addElement = (tbl: string, e: ElementEntry) => {
    const line = `add element ip ${tbl} ${e.container} { ${elementText(e.key, e.el)} }`;
    if (scope.full) addsBy.get(`${e.container} ${tbl}`)!.push(line);
    else adds.push(line);
    elementCount++;
  };
  const delElement = (tbl: string, container: ElementContainer, key: string) => {
    dels.push(`delete element ip ${tbl} ${container} { ${key} }`);
    elementCount++;
  };

  const renderService = (key: string): void => {
    const ports = byService.get(key);
    const plan = ports ? planService(ports, snapshot, cfg, sink !== undefined) : { chains: new Map<string, RuleBody[]>(), contribution: EMPTY_CONTRIBUTION };
    const neu = plan.contribution;
    const old = scope.full ? EMPTY_CONTRIBUTION : (prev.services.get(key) ?? EMPTY_CONTRIBUTION);
    const st = tableOfService(key);
    const tableOfChain = (c: string) => (sharded && c.startsWith('firewall-') ? table : st);
    const tableOfContainer = (c: ElementContainer) => (sharded && SHARD_CONTAINERS.has(c) ? st : table);

    // Chains and affinity sets of this Service: rewritten whole.
    if (plan.chains.size) {
      out.push(`# ${key}`);
      for (const c of plan.chains.keys()) chainLines(tableOfChain(c), c);
      for (const [s, t] of neu.affinitySets) out.push(affinitySetDecl(`ip ${st}`, s, t));
      for (const [c, rules] of plan.chains) { const tc = tableOfChain(c); for (const r of rules) ruleIn(tc, c, r); }
      chainsWritten += plan.chains.size;
    }
    for (const c of old.chains) if (!plan.chains.has(c)) {
      staleChains.add(c);
      chains.delete(c);
    }
    for (const c of neu.chains) chains.add(c);
    for (const [s, t] of old.affinitySets) if (!neu.affinitySets.has(s)) {
      staleSets.set(s, t);
      affinitySets.delete(s);
    }
    for (const [s, t] of neu.affinitySets) affinitySets.set(s, t);

    // Elements: what the Service no longer has goes, a changed value is
    // delete + add. Two Services claiming one key (say the same external
    // IP:port) is a user error: the one that had it keeps it.
    // (Nothing to diff against when the Service had no elements: the common case of a full sync.)
    const neuKeys = old.elements.length ? new Set(neu.elements.map((e) => `${e.container} ${e.key}`)) : EMPTY_KEYS;
    const oldKeys = old.elements.length ? new Set(old.elements.map((e) => `${e.container} ${e.key}`)) : EMPTY_KEYS;
    for (const e of old.elements) {
      if (neuKeys.has(`${e.container} ${e.key}`)) continue;
      const m = elements.get(e.container)!;
      const cur = m.get(e.key);
      if (cur && sameElement(cur, e.el)) {
        delElement(tableOfContainer(e.container), e.container, e.key);
        m.delete(e.key);
      }
    }
    for (const e of neu.elements) {
      const m = elements.get(e.container)!;
      const cur = m.get(e.key);
      if (cur && sameElement(cur, e.el)) continue;
      if (cur && !oldKeys.has(`${e.container} ${e.key}`)) continue; // another Service's
      if (cur) delElement(tableOfContainer(e.container), e.container, e.key);
      addElement(tableOfContainer(e.container), e);
      m.set(e.key, e.el);
    }

    if (ports) services.set(key, neu);
    else services.delete(key);
  };

  // Stale per-service objects: flush every stale chain first (stale chains may
  // reference each other), then delete. `add` first so that a record that
  // drifted from the kernel cannot fail the transaction.
  const writeStale = (staleC: Iterable<string>, staleSet: Iterable<[string, number]>): void => {
    // A name can be stale for one Service and live for another only if two
    // Services render the same object, which names rule out; be safe anyway.
    const stale = [...staleC].filter((c) => !chains.has(c)).sort();
    const staleS = [...staleSet].filter(([s]) => !affinitySets.has(s)).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    if (!stale.length && !staleS.length) return;
    out.push('# stale per-service objects');
    for (const c of stale) out.push(`add chain ip ${tableOfObject(c)} ${c}`, `flush chain ip ${tableOfObject(c)} ${c}`);
    for (const c of stale) out.push(`delete chain ip ${tableOfObject(c)} ${c}`);
    for (const [s, t] of staleS) out.push(affinitySetDecl(`ip ${tableOfObject(s)}`, s, t), `delete set ip ${tableOfObject(s)} ${s}`);
  };
  /** A full sync's elements of table `tb` (or of every table), grouped by container: the containers were flushed. */
  const writeAdds = (tbs: readonly string[]): void => {
    if (!tbs.some((tb) => ELEMENT_CONTAINERS.some((c) => addsBy.get(`${c} ${tb}`)!.length))) return;
    out.push('# elements');
    for (const c of ELEMENT_CONTAINERS) for (const tb of tbs) for (const a of addsBy.get(`${c} ${tb}`)!) out.push(a);
  };

  if (byTable) {
    // Anything the record holds that this sync did not write is stale: found per table, by name.
    const prevChains = new Map<string, string[]>(allTables.map((tb) => [tb, []]));
    const prevSets = new Map<string, [string, number][]>(allTables.map((tb) => [tb, []]));
    for (const c of prev.chains) prevChains.get(tableOfObject(c))?.push(c);
    for (const [s, t] of prev.affinitySets) prevSets.get(tableOfObject(s))?.push([s, t]);
    const keysOf = new Map<string, string[]>(shardTables.map((st) => [st, []]));
    for (const key of keys) keysOf.get(tableOfService(key))!.push(key);
    for (const st of shardTables) {
      sink?.beginTable?.(st);
      shardFixed(st);
      for (const key of keysOf.get(st)!) renderService(key);
      writeAdds([st]);
      writeStale(prevChains.get(st)!, prevSets.get(st)!);
      sink?.endTable?.(st);
    }
    writeAdds([table]);
    writeStale(prevChains.get(table)!, prevSets.get(table)!);
  } else {
    for (const key of keys) renderService(key);
    if (scope.full) {
      // Anything the record holds that this sync did not write is stale.
      for (const c of prev.chains) if (!chains.has(c)) staleChains.add(c);
      for (const [s, t] of prev.affinitySets) if (!affinitySets.has(s)) staleSets.set(s, t);
    }
    if (dels.length) out.push('# elements removed or changed', ...dels);
    if (scope.full) writeAdds(allTables);
    else if (adds.length) out.push('# elements added or changed', ...adds);
    // (The few stale names only, not the whole record: at 30,000 Services that is 90,000 chains.)
    writeStale(staleChains, staleSets);
  }

  return {
    text: sink ? '' : lines.join('\n') + '\n',
    lines: lineCount,
    ruleCount,
    elementCount,
    chainsWritten,
    applied: { chains, affinitySets, elements, services },
  };
}
