/**
 * proxy/iptables/render: snapshot → iptables-restore input, in kube-proxy's
 * layout (pkg/proxy/iptables/proxier.go syncProxyRules). Pure.
 *
 * nat:
 *   PREROUTING, OUTPUT → P-SERVICES: one rule per ClusterIP (→ SVC or SVL),
 *     external IP (→ EXT) and load-balancer VIP (→ FW with source ranges, else
 *     EXT), then, last, `--dst-type LOCAL → P-NODEPORTS` (one rule per
 *     nodePortAddresses CIDR, `-d CIDR --dst-type LOCAL`, when they are set:
 *     the local addresses inside the CIDRs, read by the kernel at each packet,
 *     where kube-proxy lists the matching addresses it found at sync time).
 *   P-NODEPORTS: one rule per NodePort → EXT.
 *   P-FW-x: loadBalancerSourceRanges: `-s <range> → EXT` per range (and the
 *     VIPs themselves when a range holds the node's primary IP); what falls
 *     through keeps the VIP as destination and is dropped by filter
 *     P-PROXY-FIREWALL.
 *   P-SVC-x (Cluster policy) / P-SVL-x (Local policy): masquerade off-cluster
 *     sources to the ClusterIP, optional ClientIP affinity (`recent --rcheck`),
 *     then one rule per endpoint, `statistic --probability 1/(n-i)` on all but
 *     the last.
 *   P-EXT-x: NodePort/external traffic: masquerade (Cluster policy) or the
 *     Local-policy short-circuits for pod and node traffic, then → SVC/SVL.
 *   P-SEP-x: hairpin masquerade (`-s <endpoint>`), then DNAT (and `recent --set`).
 *   POSTROUTING → P-POSTROUTING: MASQUERADE --random-fully what P-MARK-MASQ marked.
 * filter: P-SERVICES (REJECT ClusterIPs without endpoints, DROP with no local
 *   ones), P-EXTERNAL-SERVICES (the same for NodePorts, external IPs and LB
 *   VIPs), P-NODEPORTS (ACCEPT health check NodePorts, from INPUT),
 *   P-PROXY-FIREWALL (DROP VIP traffic not DNATed: outside the source ranges),
 *   P-FORWARD (accept marked / established), P-FIREWALL (martian localhost).
 * mangle/nat/filter: P-PROXY-CANARY, empty, declared on full syncs: its
 *   absence tells the proxier someone flushed our rules. The periodic check
 *   reads mangle's only (kube-proxy's Monitor: the smallest table); a partial
 *   sync's filter and nat blocks open with `-S P-PROXY-CANARY`, which fails the
 *   restore when that table was flushed and commits nothing by itself.
 * Above LARGE_CLUSTER_ENDPOINTS endpoints the per-endpoint rules carry no
 *   comment (kube-proxy's large cluster mode). A full sync may also carry the
 *   missing jumps from built-in chains (extras.jumps), last in their block.
 *
 * Applied with --noflush: each declared chain (`:C - [0:0]`) is flushed and
 * rewritten, undeclared chains are left alone. A partial sync (KEP-3453)
 * declares only the changed Services' SVC/SVL/EXT/SEP chains plus the
 * top-level and filter chains (which mention every Service); other Services'
 * chains stay in the kernel as they are. Chains in `existingChains` that no
 * Service uses any more are declared (flushing them) and then deleted with
 * -X, which iptables-restore --noflush only accepts for a declared chain.
 *
 * A partial sync also leaves out any top-level chain whose rules are exactly
 * what the last successful sync wrote (`previous.topLevel`), and reuses the
 * top-level lines of the Services it does not rewrite (`previous.serviceTops`)
 * instead of rendering them again (130 ms at 10,000 Services). This goes beyond
 * kube-proxy, which rewrites P-SERVICES on every sync: at 10,000 Services
 * that chain is 10,001 rules, and re-sending it made a one-endpoint change
 * take 0.9 s with iptables-nft instead of 0.1 s. A full sync always writes
 * everything, so a hand-edited top-level chain is repaired by the next one.
 *
 * Output order is deterministic: Services by "ns/name:port/PROTO", endpoints
 * by "ip:port" (kube-proxy's string order).
 */
import { ErrorCode, NodenetError } from '../../../../lib/errors/errors.js';
import { quoteArg, type JumpRule } from '../../netfilter/iptables/iptables-types.js';
import { jumpInsertLine } from '../../netfilter/iptables/iptables-jumps.js';
import { cidrContains } from '../../../../lib/net/ip.js';
import { endpointString, spnString, type EndpointInfo, type ProxyNodeConfig, type ProxySnapshot, type SyncScope } from '../types.js';
import { categorizeEndpoints, externallyAccessible, externalPolicyLocal, internalPolicyLocal } from '../categorize.js';
import { sha1Base64 } from '../../../../lib/json/digest.js';
import { compact } from '../flat.js';
import { endpointChain, fixedChains, isServiceChain, servicePortChains, type ChainName } from './chains.js';

export interface IptablesRender {
  /** The `*filter ... COMMIT` block. */
  readonly filter: string;
  /** The `*nat ... COMMIT` block. */
  readonly nat: string;
  /** The `*mangle ... COMMIT` block with the canary (full syncs), else ''. */
  readonly mangle: string;
  /** Full iptables-restore --noflush input: filter, nat, mangle. */
  readonly text: string;
  /** `-A` lines written (filter + nat), jump inserts not counted. */
  readonly ruleCount: number;
  /** Per-service and per-endpoint nat chains that exist once this is applied (written now or kept). */
  readonly natChains: ReadonlySet<string>;
  /** Chains this input deletes (stale: in existingChains, used by no Service). */
  readonly deletedChains: readonly string[];
  /** "table/chain" → a digest of the rules of each top-level chain as rendered (written or left out as unchanged); only compared, so not kept whole (P-SERVICES is 4 MB at 30,000 Services). */
  readonly topLevel: ReadonlyMap<string, string>;
  /** Top-level chains left out of a partial sync because they did not change. */
  readonly unchangedTopLevel: readonly string[];
  /** Each Service port's top-level rules and active chains, keyed like the snapshot: reused by the next partial render. */
  readonly serviceTops: ReadonlyMap<string, ServiceTop>;
}

/** One Service port's lines in the top-level chains, and the per-service chains it keeps alive. */
export interface ServiceTop {
  readonly natTop: readonly string[];
  readonly natNodePorts: readonly string[];
  readonly filterServices: readonly string[];
  readonly filterExternal: readonly string[];
  readonly filterNodePorts: readonly string[];
  readonly filterFirewall: readonly string[];
  readonly active: readonly string[];
}

/** Beyond the ruleset itself. */
export interface RenderExtras {
  /**
   * Jumps from built-in chains to insert in this same input (full syncs: the ones an
   * iptables-save showed missing), at the end of their table's block, after the chains they
   * target are declared: one restore, one table replace, instead of a second restore.
   */
  readonly jumps?: readonly JumpRule[];
}

/**
 * kube-proxy's largeClusterEndpointsThreshold: above this many endpoints the per-endpoint rules
 * (SVC → SEP, and the SEP chains' own) carry no comment. At 30,000 Services × 2 endpoints that
 * is 180,000 comment matches of 256 bytes each that iptables-restore parses and the kernel
 * copies on every table replace.
 */
export const LARGE_CLUSTER_ENDPOINTS = 1000;

/** What a partial render may reuse from the last applied one. */
export interface IptablesPrevious {
  readonly topLevel: ReadonlyMap<string, string>;
  readonly serviceTops: ReadonlyMap<string, ServiceTop>;
}

/** kube-proxy's computeProbability: 1/n as "%0.10f" (Go rounds the exact binary value half-to-even). */
export function formatProbability(n: number): string {
  const hit = probabilities.get(n);
  if (hit !== undefined) return hit;
  const p = computeProbability(n);
  if (probabilities.size < 10_000) probabilities.set(n, p);
  return p;
}

/** formatProbability per denominator: 60,000 toFixed(100)+BigInt rounds cost 140 ms per render at 30,000 Services. */
const probabilities = new Map<number, string>();

function computeProbability(n: number): string {
  if (!Number.isInteger(n) || n < 1) throw new RangeError(`probability denominator ${n}`);
  const exact = (1 / n).toFixed(100); // exact for any n we meet: 1/n has < 100 significant fraction digits
  const [ip = '0', frac = ''] = exact.split('.');
  const keep = frac.slice(0, 10);
  const rest = frac.slice(10);
  const last = Number(keep[9] ?? '0');
  const up = rest[0]! > '5' || (rest[0] === '5' && (/[1-9]/.test(rest.slice(1)) || last % 2 === 1));
  const s = (BigInt(ip + keep) + (up ? 1n : 0n)).toString().padStart(11, '0');
  return `${s.slice(0, -10)}.${s.slice(-10)}`;
}

/** The mark value for a masquerade bit, as kube-proxy prints it (bit 14 → 0x4000). */
export function masqueradeMark(bit: number): string {
  if (!Number.isInteger(bit) || bit < 0 || bit > 31) {
    throw new NodenetError(ErrorCode.InvalidConfig, `masqueradeBit ${bit} must be an integer in [0, 31]`);
  }
  return `0x${(2 ** bit).toString(16)}`;
}

/**
 * A fresh Service port's top, as the next partial render keeps it: the lists at their exact
 * size, the many empty ones one shared array (proxy/flat.ts; 30,000 of them held ~9 MiB of
 * spare capacity).
 */
function compactTop(t: ServiceTop): ServiceTop {
  return {
    natTop: compact(t.natTop),
    natNodePorts: compact(t.natNodePorts),
    filterServices: compact(t.filterServices),
    filterExternal: compact(t.filterExternal),
    filterNodePorts: compact(t.filterNodePorts),
    filterFirewall: compact(t.filterFirewall),
    active: compact(t.active),
  };
}
const c = (s: string): string => quoteArg(s);
const line = (...words: string[]): string => words.join(' ');

function byString<T>(key: (x: T) => string): (a: T, b: T) => number {
  return (a, b) => {
    const ka = key(a);
    const kb = key(b);
    return ka < kb ? -1 : ka > kb ? 1 : 0;
  };
}

/**
 * Renders the ruleset. `existingChains` (nat chain names in the kernel, or
 * those the last sync left there) enables stale-chain deletion; without it
 * nothing is deleted. Throws NodenetError(InvalidConfig) for a bad prefix or
 * masquerade bit.
 */
export function renderIptables(
  snapshot: ProxySnapshot,
  nodeConfig: ProxyNodeConfig,
  scope: SyncScope,
  existingChains?: ReadonlySet<string>,
  previous?: IptablesPrevious,
  extras: RenderExtras = {},
): IptablesRender {
  const P = nodeConfig.prefix;
  const F = fixedChains(P);
  const mark = masqueradeMark(nodeConfig.masqueradeBit);
  const clusterCIDR = nodeConfig.clusterCIDR;

  const filterServices: string[] = []; // P-SERVICES
  const filterExternal: string[] = []; // P-EXTERNAL-SERVICES
  const filterNodePorts: string[] = []; // filter P-NODEPORTS (health check ports)
  const filterFirewall: string[] = []; // P-PROXY-FIREWALL
  const natTop: string[] = []; // P-SERVICES
  const natNodePorts: string[] = [];
  const natChainDecls: string[] = [];
  const natChainRules: string[] = [];
  const active = new Set<string>();
  const serviceTops = new Map<string, ServiceTop>();

  // Sort keys computed once per Service, not twice per comparison.
  const services = [...snapshot.services.entries()]
    .map((e) => ({ e, k: `${spnString(e[1].spn)}/${e[1].protocol}` }))
    .sort((a, b) => (a.k < b.k ? -1 : a.k > b.k ? 1 : 0))
    .map((x) => x.e);
  let totalEndpoints = 0;
  for (const [key] of services) totalEndpoints += snapshot.endpoints.get(key)?.length ?? 0;
  const largeCluster = totalEndpoints > LARGE_CLUSTER_ENDPOINTS;
  /** A per-endpoint rule's comment, left out in a large cluster (kube-proxy's appendServiceCommentLocked). */
  const epComment = (text: string): string[] => (largeCluster ? [] : ['-m', 'comment', '--comment', c(text)]);

  /** Adds one Service port's top-level lines and active chains, in Service order (top is kept: see compactTop). */
  const addTop = (key: string, top: ServiceTop): void => {
    natTop.push(...top.natTop);
    natNodePorts.push(...top.natNodePorts);
    filterServices.push(...top.filterServices);
    filterExternal.push(...top.filterExternal);
    filterNodePorts.push(...top.filterNodePorts);
    filterFirewall.push(...top.filterFirewall);
    for (const ch of top.active) active.add(ch);
    serviceTops.set(key, top);
  };

  for (const [key, svc] of services) {
    const write = scope.full || scope.changed.has(`${svc.spn.namespace}/${svc.spn.name}`);
    const reuse = write ? undefined : previous?.serviceTops.get(key);
    if (reuse) {
      addTop(key, reuse);
      continue;
    }
    const top = {
      natTop: [] as string[],
      natNodePorts: [] as string[],
      filterServices: [] as string[],
      filterExternal: [] as string[],
      filterNodePorts: [] as string[],
      filterFirewall: [] as string[],
      active: [] as string[],
    };
    const spn = spnString(svc.spn);
    const proto = svc.protocol.toLowerCase();
    const pm = ['-m', proto, '-p', proto];
    const endpoints = [...(snapshot.endpoints.get(key) ?? [])].sort(byString(endpointString));
    const cat = categorizeEndpoints(endpoints, svc);

    const { SVC: svcChain, SVL: svlChain, EXT: extChain, FW: fwChain } = servicePortChains(P, spn, svc.protocol);
    const sepNames = new Map<EndpointInfo, ChainName>();
    const sepOf = (ep: EndpointInfo): ChainName => {
      let n = sepNames.get(ep);
      if (n === undefined) {
        n = endpointChain(P, spn, svc.protocol, endpointString(ep));
        sepNames.set(ep, n);
      }
      return n;
    };
    const usesSvc = cat.cluster.length > 0;
    const usesSvl = cat.local.length > 0;

    const itpLocal = internalPolicyLocal(svc);
    const internalChain = itpLocal ? svlChain : svcChain;
    const hasInternal = cat.hasAny && (!itpLocal || cat.local.length > 0);
    const etpLocal = externalPolicyLocal(svc);
    const externalPolicyChain = etpLocal ? svlChain : svcChain;
    const hasExternal = cat.hasAny && (!etpLocal || cat.local.length > 0);
    const usesExt = cat.hasAny && externallyAccessible(svc);
    // LB VIPs with source ranges go through the FW chain first (only with endpoints: without any, the REJECT is for everyone).
    const usesFw = cat.hasAny && svc.loadBalancerVIPs.length > 0 && svc.loadBalancerSourceRanges.length > 0;
    const lbChain = usesFw ? fwChain : extChain;

    // What filter does with packets nat did not DNAT: REJECT when the Service has no
    // endpoints at all, DROP when only the Local policy finds none on this node.
    const internalFilter = !cat.hasAny ? 'REJECT' : hasInternal ? null : 'DROP';
    const externalFilter = !cat.hasAny ? 'REJECT' : hasExternal ? null : 'DROP';
    const noEpComment = c(`${spn} has no ${cat.hasAny ? 'local ' : ''}endpoints`);

    // --- top-level dispatch and filter rules: always written, for every Service.
    const clusterIPMatch = ['-m', 'comment', '--comment', c(`${spn} cluster IP`), ...pm, '-d', svc.clusterIP, '--dport', String(svc.port)];
    if (hasInternal) {
      top.natTop.push(line('-A', F.services, ...clusterIPMatch, '-j', internalChain));
    } else {
      top.filterServices.push(line('-A', F.services, '-m', 'comment', '--comment', noEpComment, ...pm, '-d', svc.clusterIP, '--dport', String(svc.port), '-j', internalFilter ?? 'REJECT'));
    }
    for (const eip of svc.externalIPs) {
      if (cat.hasAny) {
        top.natTop.push(line('-A', F.services, '-m', 'comment', '--comment', c(`${spn} external IP`), ...pm, '-d', eip, '--dport', String(svc.port), '-j', extChain));
      }
      if (externalFilter) {
        top.filterExternal.push(line('-A', F.externalServices, '-m', 'comment', '--comment', noEpComment, ...pm, '-d', eip, '--dport', String(svc.port), '-j', externalFilter));
      }
    }
    for (const vip of svc.loadBalancerVIPs) {
      const vipMatch = [...pm, '-d', vip, '--dport', String(svc.port)];
      if (cat.hasAny) top.natTop.push(line('-A', F.services, '-m', 'comment', '--comment', c(`${spn} loadbalancer IP`), ...vipMatch, '-j', lbChain));
      if (usesFw) top.filterFirewall.push(line('-A', F.proxyFirewall, '-m', 'comment', '--comment', c(`${spn} traffic not accepted by ${fwChain}`), ...vipMatch, '-j', 'DROP'));
    }
    if (externalFilter) {
      for (const vip of svc.loadBalancerVIPs) {
        top.filterExternal.push(line('-A', F.externalServices, '-m', 'comment', '--comment', noEpComment, ...pm, '-d', vip, '--dport', String(svc.port), '-j', externalFilter));
      }
    }
    if (svc.nodePort !== 0) {
      if (cat.hasAny) {
        top.natNodePorts.push(line('-A', F.nodePorts, '-m', 'comment', '--comment', c(spn), ...pm, '--dport', String(svc.nodePort), '-j', extChain));
      }
      if (externalFilter) {
        top.filterExternal.push(line('-A', F.externalServices, '-m', 'comment', '--comment', noEpComment, '-m', 'addrtype', '--dst-type', 'LOCAL', ...pm, '--dport', String(svc.nodePort), '-j', externalFilter));
      }
    }

    // No matter whether this node has local endpoints, the health check port must accept connections.
    if (svc.healthCheckNodePort !== 0) {
      top.filterNodePorts.push(line('-A', F.nodePorts, '-m', 'comment', '--comment', c(`${spn} health check node port`), '-m', 'tcp', '-p', 'tcp', '--dport', String(svc.healthCheckNodePort), '-j', 'ACCEPT'));
    }

    // --- per-service chains: every one counts as active; only changed Services' are written.
    if (usesExt) top.active.push(extChain);
    if (usesFw) top.active.push(fwChain);
    if (usesSvc) top.active.push(svcChain);
    if (usesSvl) top.active.push(svlChain);
    for (const ep of cat.allReachable) top.active.push(sepOf(ep));
    addTop(key, compactTop(top));
    if (!write) continue;

    const declare = (ch: ChainName): void => {
      natChainDecls.push(`:${ch} - [0:0]`);
    };
    // Masquerade off-cluster traffic to the ClusterIP (a static route to any node can reach Services).
    const internalMasq =
      hasInternal && clusterCIDR ? [line('-A', internalChain, ...clusterIPMatch, '!', '-s', clusterCIDR, '-j', F.markMasq)] : [];

    if (usesExt) {
      declare(extChain);
      if (!etpLocal) {
        natChainRules.push(line('-A', extChain, '-m', 'comment', '--comment', c(`masquerade traffic for ${spn} external destinations`), '-j', F.markMasq));
      } else {
        if (clusterCIDR) {
          natChainRules.push(line('-A', extChain, '-m', 'comment', '--comment', c(`pod traffic for ${spn} external destinations`), '-s', clusterCIDR, '-j', svcChain));
        }
        natChainRules.push(line('-A', extChain, '-m', 'comment', '--comment', c(`masquerade LOCAL traffic for ${spn} external destinations`), '-m', 'addrtype', '--src-type', 'LOCAL', '-j', F.markMasq));
        natChainRules.push(line('-A', extChain, '-m', 'comment', '--comment', c(`route LOCAL traffic for ${spn} external destinations`), '-m', 'addrtype', '--src-type', 'LOCAL', '-j', svcChain));
      }
      if (hasExternal) natChainRules.push(line('-A', extChain, '-j', externalPolicyChain));
    }
    if (usesFw) {
      // Only VIP-style load balancers keep the client's address; behind a NodePort-style one these ranges never match.
      declare(fwChain);
      const fwComment = ['-m', 'comment', '--comment', c(`${spn} loadbalancer IP`)];
      const primary = nodeConfig.primaryIP ?? null;
      for (const range of svc.loadBalancerSourceRanges) natChainRules.push(line('-A', fwChain, ...fwComment, '-s', range, '-j', extChain));
      // A VIP that is also a local address: the node's own request loops back with the VIP as source.
      if (primary && svc.loadBalancerSourceRanges.some((r) => cidrContains(r, primary))) {
        for (const vip of svc.loadBalancerVIPs) natChainRules.push(line('-A', fwChain, ...fwComment, '-s', vip, '-j', extChain));
      }
      // Whatever reaches the end was not DNATed: P-PROXY-FIREWALL drops it in filter.
      natChainRules.push(line('-A', fwChain, '-m', 'comment', '--comment', c(`other traffic to ${spn} will be dropped by ${F.proxyFirewall}`)));
    }
    const dispatch = (chain: ChainName, eps: readonly EndpointInfo[]): void => {
      declare(chain);
      if (chain === internalChain) natChainRules.push(...internalMasq);
      if (svc.affinityTimeoutSeconds !== null) {
        for (const ep of eps) {
          const sep = sepOf(ep);
          natChainRules.push(line('-A', chain, ...epComment(`${spn} -> ${endpointString(ep)}`), '-m', 'recent', '--name', sep, '--rcheck', '--seconds', String(svc.affinityTimeoutSeconds), '--reap', '-j', sep));
        }
      }
      eps.forEach((ep, i) => {
        const sep = sepOf(ep);
        const stat = i < eps.length - 1 ? ['-m', 'statistic', '--mode', 'random', '--probability', formatProbability(eps.length - i)] : [];
        natChainRules.push(line('-A', chain, ...epComment(`${spn} -> ${endpointString(ep)}`), ...stat, '-j', sep));
      });
    };
    if (usesSvc) dispatch(svcChain, cat.cluster);
    if (usesSvl) dispatch(svlChain, cat.local);
    for (const ep of cat.allReachable) {
      const sep = sepOf(ep);
      declare(sep);
      natChainRules.push(line('-A', sep, ...epComment(spn), '-s', ep.ip, '-j', F.markMasq));
      const affinity = svc.affinityTimeoutSeconds !== null ? ['-m', 'recent', '--name', sep, '--set'] : [];
      natChainRules.push(line('-A', sep, ...epComment(spn), ...affinity, ...pm, '-j', 'DNAT', '--to-destination', endpointString(ep)));
    }
  }

  // Stale chains: declared (which flushes them) and then deleted.
  const deleted = [...(existingChains ?? [])].filter((ch) => isServiceChain(P, ch) && !active.has(ch)).sort();
  for (const ch of deleted) natChainDecls.push(`:${ch} - [0:0]`);

  // NOTE: this must be the last rule in P-SERVICES. NodePorts on any local address, 127.0.0.1 included
  // (route_localnet), or on the local addresses inside the nodePortAddresses CIDRs.
  const lastComment = ['-m', 'comment', '--comment', c('kubernetes service nodeports; NOTE: this must be the last rule in this chain')];
  const npCidrs = nodeConfig.nodePortAddresses ?? null;
  if (npCidrs === null) natTop.push(line('-A', F.services, ...lastComment, '-m', 'addrtype', '--dst-type', 'LOCAL', '-j', F.nodePorts));
  else for (const cidr of npCidrs) natTop.push(line('-A', F.services, ...lastComment, '-d', cidr, '-m', 'addrtype', '--dst-type', 'LOCAL', '-j', F.nodePorts));

  const canary = scope.full ? [`:${F.canary} - [0:0]`] : [];
  // A partial sync trusts that the kernel still holds what the last sync wrote. `-S CANARY` first in
  // each block makes the restore fail (before anything of that table is committed) when someone
  // flushed the table, and it commits nothing by itself; the proxier then syncs in full. This is how
  // a flushed nat or filter table is noticed while the periodic canary check reads only mangle's.
  const canaryCheck = scope.full ? [] : [`-S ${F.canary}`];
  const jumpLines = (t: 'filter' | 'nat'): string[] => (extras.jumps ?? []).filter((j) => j.table === t).map(jumpInsertLine);

  const forwardRules = [
    line('-A', F.forward, '-m', 'conntrack', '--ctstate', 'INVALID', '-j', 'DROP'),
    line('-A', F.forward, '-m', 'comment', '--comment', c('kubernetes forwarding rules'), '-m', 'mark', '--mark', `${mark}/${mark}`, '-j', 'ACCEPT'),
    line('-A', F.forward, '-m', 'comment', '--comment', c('kubernetes forwarding conntrack rule'), '-m', 'conntrack', '--ctstate', 'RELATED,ESTABLISHED', '-j', 'ACCEPT'),
  ];
  const firewallRules = [
    line('-A', F.firewall, '-m', 'comment', '--comment', c('block incoming localnet connections'), '-d', '127.0.0.0/8', '!', '-s', '127.0.0.0/8', '-m', 'conntrack', '!', '--ctstate', 'RELATED,ESTABLISHED,DNAT', '-j', 'DROP'),
  ];
  const markMasqRules = [line('-A', F.markMasq, '-j', 'MARK', '--or-mark', mark)];
  const postroutingRules = [
    line('-A', F.postrouting, '-m', 'mark', '!', '--mark', `${mark}/${mark}`, '-j', 'RETURN'),
    // Clear the mark so a packet that traverses the stack again is not masqueraded twice.
    line('-A', F.postrouting, '-j', 'MARK', '--xor-mark', mark),
    line('-A', F.postrouting, '-m', 'comment', '--comment', c('kubernetes service traffic requiring SNAT'), '-j', 'MASQUERADE', '--random-fully'),
  ];

  // Top-level chains in output order; a partial sync leaves out those that did not change.
  const topLevel = new Map<string, string>();
  const unchanged: string[] = [];
  const top = (table: 'filter' | 'nat', chain: string, rules: string[]): { chain: string; rules: string[] } | null => {
    const key = `${table}/${chain}`;
    const digest = sha1Base64(rules.join('\n'));
    topLevel.set(key, digest);
    if (!scope.full && previous?.topLevel.get(key) === digest) {
      unchanged.push(key);
      return null;
    }
    return { chain, rules };
  };
  const filterTop = [
    top('filter', F.services, filterServices),
    top('filter', F.externalServices, filterExternal),
    top('filter', F.forward, forwardRules),
    top('filter', F.firewall, firewallRules),
    top('filter', F.nodePorts, filterNodePorts),
    top('filter', F.proxyFirewall, filterFirewall),
  ].filter((x) => x !== null);
  const natTopChains = [
    top('nat', F.services, natTop),
    top('nat', F.nodePorts, natNodePorts),
    top('nat', F.postrouting, postroutingRules),
    top('nat', F.markMasq, markMasqRules),
  ].filter((x) => x !== null);

  const filterAll = filterTop.flatMap((x) => x.rules);
  const filter = ['*filter', ...canaryCheck, ...filterTop.map((x) => `:${x.chain} - [0:0]`), ...canary, ...filterAll, ...jumpLines('filter'), 'COMMIT', ''].join('\n');

  // Rule order as kube-proxy writes it: P-SERVICES, P-NODEPORTS, P-MARK-MASQ, P-POSTROUTING, then per-service chains.
  const natRules = (chain: string) => natTopChains.find((x) => x.chain === chain)?.rules ?? [];
  const natAll = [...natRules(F.services), ...natRules(F.nodePorts), ...natRules(F.markMasq), ...natRules(F.postrouting), ...natChainRules];
  const nat = [
    '*nat',
    ...canaryCheck,
    ...natTopChains.map((x) => `:${x.chain} - [0:0]`),
    ...canary,
    ...natChainDecls,
    ...natAll,
    ...deleted.map((ch) => `-X ${ch}`),
    ...jumpLines('nat'),
    'COMMIT',
    '',
  ].join('\n');

  const mangle = scope.full ? ['*mangle', `:${F.canary} - [0:0]`, 'COMMIT', ''].join('\n') : '';
  return {
    filter,
    nat,
    mangle,
    text: filter + nat + mangle,
    ruleCount: filterAll.length + natAll.length,
    natChains: active,
    deletedChains: deleted,
    topLevel,
    unchangedTopLevel: unchanged,
    serviceTops,
  };
}
