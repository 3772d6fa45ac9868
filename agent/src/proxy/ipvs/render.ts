/**
 * proxy/ipvs/render: the few iptables rules IPVS mode still needs, from the
 * plan's sets, as iptables-restore --noflush input (kube-proxy's
 * writeIptablesRules). Pure. The rules match sets, never single Services,
 * so their number does not grow with the Services: the whole of it is
 * written on every sync that changes it.
 *
 * nat:
 *   P-SERVICES (from PREROUTING, OUTPUT): loopback sources RETURN; LB VIPs
 *     → P-LOAD-BALANCER; ClusterIP traffic from outside the cluster CIDR →
 *     P-MARK-MASQ (with no cluster CIDR: what leaves a VIP as source, i.e.
 *     the node's own connections); external IPs → P-MARK-MASQ, then ACCEPT
 *     (they are local, on kube-ipvs0); local destinations → P-NODE-PORT;
 *     ClusterIP and LB traffic ACCEPT (nothing after us must touch it).
 *   P-NODE-PORT: Local-policy NodePorts RETURN (the client's address is
 *     kept), the others → P-MARK-MASQ, per protocol (bitmap:port sets; SCTP
 *     by ip,port).
 *   P-LOAD-BALANCER: Local-policy VIPs RETURN, the others → P-MARK-MASQ.
 *   P-POSTROUTING: hairpin (KUBE-LOOP-BACK: an endpoint reaching itself)
 *     MASQUERADE; unmarked RETURN; clear the mark; MASQUERADE --random-fully.
 *   P-MARK-MASQ: set the mark bit.
 * filter:
 *   P-FORWARD: marked and established traffic ACCEPT.
 *   P-NODE-PORT (from INPUT): health check NodePorts ACCEPT.
 *   P-PROXY-FIREWALL → P-SOURCE-RANGES-FIREWALL for VIPs with source
 *     ranges: sources in the ranges RETURN, the rest DROP.
 *   P-IPVS-FILTER (from INPUT; on unless --ipvs-filter=false): traffic to a
 *     service IP:port RETURNs; any other NEW packet to an address on
 *     kube-ipvs0 is REJECTed (kubernetes#72236), a ping included. Without
 *     it the node answers pings to ClusterIPs and serves its own ports on
 *     them.
 *   P-IPVS-OUT-FILTER (from OUTPUT): the node's own connections to a LB
 *     VIP:port whose source ranges do not hold the node are DROPped
 *     (`-s VIP -m ipvs --vaddr VIP --vproto P --vport N`, kubernetes#119656):
 *     IPVS takes them on LOCAL_OUT, so the INPUT firewall never sees them.
 *   P-PROXY-CANARY in nat and filter: empty; its absence means our rules
 *   were flushed.
 * Two things differ from kube-proxy: the external-IP ACCEPT keeps only the
 * `--dst-type LOCAL` rule (the physdev variant is redundant once the IPs sit
 * on kube-ipvs0), and MASQUERADE is always --random-fully.
 */
import { masqueradeMark } from '../iptables/render.js';
import type { JumpRule } from '../../netfilter/iptables/iptables-types.js';
import { quoteArg } from '../../netfilter/iptables/iptables-types.js';
import type { ProxyNodeConfig } from '../types.js';
import type { IpvsNames, SetId } from './names.js';
import type { IpvsPlan } from './plan.js';

export interface IpvsIptablesRender {
  readonly text: string;
  readonly ruleCount: number;
  /** Chains declared (flushed and rewritten), "table/chain". */
  readonly chains: readonly string[];
}

const q = quoteArg;

export function renderIpvsIptables(plan: IpvsPlan, cfg: ProxyNodeConfig): IpvsIptablesRender {
  const n = plan.names;
  const set = (id: SetId) => plan.sets.get(id)!;
  const nonEmpty = (id: SetId): boolean => set(id).entries.size > 0;
  const mark = masqueradeMark(cfg.masqueradeBit);
  const nat: string[] = [];
  const filter: string[] = [];
  const match = (id: SetId, flags: string): string => `-m comment --comment ${q(set(id).comment)} -m set --match-set ${set(id).name} ${flags}`;

  nat.push(`-A ${n.nat.services} -s 127.0.0.0/8 -j RETURN`);
  // kube-proxy's ipsetWithIptablesChain, in its order (a Local set before its general one).
  const chained: [SetId, 'nat' | 'filter', string, string, string, string][] = [
    ['loopBack', 'nat', n.nat.postrouting, 'MASQUERADE', 'dst,dst,src', ''],
    ['loadBalancer', 'nat', n.nat.services, n.nat.loadBalancer, 'dst,dst', ''],
    ['loadBalancerLocal', 'nat', n.nat.loadBalancer, 'RETURN', 'dst,dst', ''],
    ['nodePortLocalTCP', 'nat', n.nat.nodePort, 'RETURN', 'dst', 'tcp'],
    ['nodePortTCP', 'nat', n.nat.nodePort, n.nat.markMasq, 'dst', 'tcp'],
    ['nodePortLocalUDP', 'nat', n.nat.nodePort, 'RETURN', 'dst', 'udp'],
    ['nodePortUDP', 'nat', n.nat.nodePort, n.nat.markMasq, 'dst', 'udp'],
    ['nodePortLocalSCTP', 'nat', n.nat.nodePort, 'RETURN', 'dst,dst', 'sctp'],
    ['nodePortSCTP', 'nat', n.nat.nodePort, n.nat.markMasq, 'dst,dst', 'sctp'],
    ['loadBalancerFW', 'filter', n.filter.proxyFirewall, n.filter.sourceRangesFirewall, 'dst,dst', ''],
    ['loadBalancerSourceCIDR', 'filter', n.filter.sourceRangesFirewall, 'RETURN', 'dst,dst,src', ''],
    ['loadBalancerSourceIP', 'filter', n.filter.sourceRangesFirewall, 'RETURN', 'dst,dst,src', ''],
  ];
  for (const [id, table, from, to, flags, p] of chained) {
    if (!nonEmpty(id)) continue;
    const rule = `-A ${from}${p ? ` -p ${p}` : ''} ${match(id, flags)} -j ${to}`;
    (table === 'nat' ? nat : filter).push(rule);
  }
  if (nonEmpty('clusterIP')) {
    if (cfg.clusterCIDR) nat.push(`-A ${n.nat.services} ${match('clusterIP', 'dst,dst')} ! -s ${cfg.clusterCIDR} -j ${n.nat.markMasq}`);
    else nat.push(`-A ${n.nat.services} ${match('clusterIP', 'src,dst')} -j ${n.nat.markMasq}`);
  }
  if (nonEmpty('externalIP')) {
    nat.push(`-A ${n.nat.services} ${match('externalIP', 'dst,dst')} -j ${n.nat.markMasq}`);
    nat.push(`-A ${n.nat.services} ${match('externalIP', 'dst,dst')} -m addrtype --dst-type LOCAL -j ACCEPT`);
  }
  if (nonEmpty('externalIPLocal')) nat.push(`-A ${n.nat.services} ${match('externalIPLocal', 'dst,dst')} -m addrtype --dst-type LOCAL -j ACCEPT`);
  nat.push(`-A ${n.nat.services} -m addrtype --dst-type LOCAL -j ${n.nat.nodePort}`);
  nat.push(`-A ${n.nat.loadBalancer} -j ${n.nat.markMasq}`);
  filter.push(`-A ${n.filter.sourceRangesFirewall} -j DROP`);
  for (const e of plan.noNodeAccess) {
    filter.push(`-A ${n.filter.ipvsOutFilter} -s ${e.ip} -m ipvs --vaddr ${e.ip} --vproto ${e.protocol} --vport ${e.port} -j DROP`);
  }
  for (const id of ['clusterIP', 'loadBalancer'] as const) {
    if (nonEmpty(id)) nat.push(`-A ${n.nat.services} -m set --match-set ${set(id).name} dst,dst -j ACCEPT`);
  }
  filter.push(`-A ${n.filter.forward} -m comment --comment ${q('kubernetes forwarding rules')} -m mark --mark ${mark}/${mark} -j ACCEPT`);
  filter.push(`-A ${n.filter.forward} -m comment --comment ${q('kubernetes forwarding conntrack rule')} -m conntrack --ctstate RELATED,ESTABLISHED -j ACCEPT`);
  filter.push(`-A ${n.filter.nodePort} ${match('healthCheckNodePort', 'dst')} -j ACCEPT`);
  if (plan.options.filter) {
    for (const id of ['loadBalancer', 'clusterIP', 'externalIP', 'externalIPLocal'] as const) filter.push(`-A ${n.filter.ipvsFilter} -m set --match-set ${set(id).name} dst,dst -j RETURN`);
    filter.push(`-A ${n.filter.ipvsFilter} -m set --match-set ${set('healthCheckNodePort').name} dst -j RETURN`);
    filter.push(`-A ${n.filter.ipvsFilter} -m conntrack --ctstate NEW -m set --match-set ${set('ipvsIPs').name} dst -j REJECT`);
  }
  nat.push(`-A ${n.nat.postrouting} -m mark ! --mark ${mark}/${mark} -j RETURN`);
  nat.push(`-A ${n.nat.postrouting} -j MARK --xor-mark ${mark}`);
  nat.push(`-A ${n.nat.postrouting} -m comment --comment ${q('kubernetes service traffic requiring SNAT')} -j MASQUERADE --random-fully`);
  nat.push(`-A ${n.nat.markMasq} -j MARK --or-mark ${mark}`);

  const natChains = [n.nat.services, n.nat.postrouting, n.nat.nodePort, n.nat.loadBalancer, n.nat.markMasq, n.canary];
  const filterChains = [n.filter.forward, n.filter.nodePort, n.filter.proxyFirewall, n.filter.sourceRangesFirewall, n.filter.ipvsFilter, n.filter.ipvsOutFilter, n.canary];
  const block = (table: string, chains: readonly string[], rules: readonly string[]): string => [`*${table}`, ...chains.map((c) => `:${c} - [0:0]`), ...rules, 'COMMIT'].join('\n');
  return {
    text: `${block('filter', filterChains, filter)}\n${block('nat', natChains, nat)}\n`,
    ruleCount: nat.length + filter.length,
    chains: [...filterChains.map((c) => `filter/${c}`), ...natChains.map((c) => `nat/${c}`)],
  };
}

/** The rules in built-in chains that lead into ours (kube-proxy's iptablesJumpChain for IPVS mode). */
export function ipvsBuiltinJumps(n: IpvsNames): JumpRule[] {
  return [
    { table: 'nat', builtinChain: 'OUTPUT', target: n.nat.services, comment: 'kubernetes service portals', position: 'prepend' },
    { table: 'nat', builtinChain: 'PREROUTING', target: n.nat.services, comment: 'kubernetes service portals', position: 'prepend' },
    { table: 'nat', builtinChain: 'POSTROUTING', target: n.nat.postrouting, comment: 'kubernetes postrouting rules', position: 'prepend' },
    { table: 'filter', builtinChain: 'FORWARD', target: n.filter.forward, comment: 'kubernetes forwarding rules', position: 'prepend' },
    { table: 'filter', builtinChain: 'INPUT', target: n.filter.nodePort, comment: 'kubernetes health check rules', position: 'prepend' },
    { table: 'filter', builtinChain: 'INPUT', target: n.filter.proxyFirewall, comment: 'kube-proxy firewall rules', position: 'prepend' },
    { table: 'filter', builtinChain: 'FORWARD', target: n.filter.proxyFirewall, comment: 'kube-proxy firewall rules', position: 'prepend' },
    { table: 'filter', builtinChain: 'INPUT', target: n.filter.ipvsFilter, comment: 'kubernetes ipvs access filter', position: 'prepend' },
    { table: 'filter', builtinChain: 'OUTPUT', target: n.filter.ipvsOutFilter, comment: 'kubernetes ipvs access filter', position: 'prepend' },
  ];
}

/** Every chain IPVS mode owns, per table (for cleanup). */
export function ipvsOwnedChains(n: IpvsNames): { nat: string[]; filter: string[] } {
  return {
    nat: [n.nat.services, n.nat.postrouting, n.nat.nodePort, n.nat.loadBalancer, n.nat.markMasq, n.canary],
    filter: [n.filter.forward, n.filter.nodePort, n.filter.proxyFirewall, n.filter.sourceRangesFirewall, n.filter.ipvsFilter, n.filter.ipvsOutFilter, n.canary],
  };
}
