/**
 * trace/ipvs-tracer: walks a new connection's first packet through a node in
 * IPVS mode (kube-proxy's ipvs proxier layout, proxy/ipvs/), for `nodenet
 * trace --mode ipvs` and the IPVS mode's packet-flow tests.
 *
 * Order, as the kernel runs the hooks:
 *   1. nat PREROUTING (from a pod or the network) or nat OUTPUT (sent by the
 *      node): KUBE-SERVICES & co match the ipsets and mark for masquerade;
 *      nothing DNATs there in IPVS mode;
 *   2. routing: a ClusterIP / external IP / LB VIP is LOCAL (it sits on
 *      kube-ipvs0), as are the node IPs: the packet goes to INPUT;
 *   3. filter INPUT (KUBE-IPVS-FILTER rejects a new packet to a kube-ipvs0
 *      address that is not a service IP:port, a ping included, when the
 *      filter is on), or filter OUTPUT / FORWARD;
 *   4. IPVS, on the INPUT hook (LOCAL_IN; for the node's own packets on
 *      LOCAL_OUT): the virtual service of (protocol, destination, port)
 *      picks one of its real servers with weight > 0 (weight 0 ones are
 *      draining: they keep their connections and get no new one); with no
 *      such real server IPVS answers with an ICMP port unreachable
 *      (ip_vs_leave), i.e. REJECT; no virtual service: the node itself
 *      takes the packet (LOCAL for a kube-ipvs0 address);
 *   5. the rewritten packet leaves through nat POSTROUTING (KUBE-POSTROUTING:
 *      MASQUERADE when marked, or the hairpin KUBE-LOOP-BACK set).
 * Steps 1, 3 and 5 are the iptables tracer's walk (ipset matches included);
 * the mark set in step 1 is carried into step 5.
 *
 * Test infrastructure and `nodenet trace`: pure, no I/O.
 */
import { cidrContains, parseIPv4 } from '../../../lib/net/ip.js';
import { parseRuleArgs, type IptChain, type IptDump, type IptTableDump } from '../netfilter/iptables/iptables-parse.js';
import type { IpsetState } from '../netfilter/iptables/ipset-parse.js';
import type { IptablesTable } from '../netfilter/iptables/iptables-types.js';
import { vsKey, type IpvsProtocol, type VirtualServerState } from '../netfilter/ipvs/ipvs-types.js';
import type { TracePacket, TraceResult } from '../proxy/types.js';
import { traceIptables } from './iptables-tracer.js';
import type { NftTracePacket } from './nft-tracer.js';

/** The node's IPVS-mode state, as `iptables-save`, `ipset save`, `ipvsadm -Ln` and `ip addr show dev kube-ipvs0` give it. */
export interface IpvsTraceState {
  /** The nat and filter tables. */
  readonly dump: IptDump;
  /** By set name. */
  readonly ipsets: ReadonlyMap<string, IpsetState>;
  readonly services: readonly VirtualServerState[];
  /** The addresses on kube-ipvs0 (without prefix length). */
  readonly vips: readonly string[];
}

export interface IpvsTraceOptions {
  /** The node's own addresses (not the VIPs); 127.0.0.0/8 is always local. */
  readonly nodeIPs: readonly string[];
}

export interface IpvsRealServerInfo {
  readonly address: string;
  readonly port: number;
  readonly weight: number;
  /** Weight 0: draining, no new connection goes to it. */
  readonly draining: boolean;
}

/** What IPVS did with the packet. */
export interface IpvsTraceInfo {
  /** The routing decision for the (unchanged) destination. */
  readonly route: string;
  /** The hook IPVS looked at the packet on: LOCAL_IN (INPUT) or LOCAL_OUT (sent by the node); null when it never got there. */
  readonly hook: 'LOCAL_IN' | 'LOCAL_OUT' | null;
  /** "TCP/10.96.0.10:80", or null when no virtual service has the packet's protocol, address and port. */
  readonly virtualService: string | null;
  readonly scheduler: string | null;
  /** ClientIP affinity timeout in seconds, 0 when not persistent. */
  readonly persistentTimeout: number;
  readonly realServers: readonly IpvsRealServerInfo[];
  /** What IPVS decided, in words. */
  readonly note: string;
}

export interface IpvsTraceResult extends TraceResult {
  /** Every iptables rule that matched, as "table/CHAIN: args", in order. */
  readonly matched: readonly string[];
  readonly ipvs: IpvsTraceInfo;
}

/** The destination of a packet to a kube-ipvs0 address no virtual service takes (the formatted form lives in report.ts). */
export const LOCAL_VIP_TEXT = 'LOCAL: answered by the node (kube-ipvs0 holds the VIP)';

export function traceIpvs(state: IpvsTraceState, packet: NftTracePacket, opts: IpvsTraceOptions): IpvsTraceResult {
  const vips = new Set(state.vips);
  const local = new Set([...opts.nodeIPs, ...state.vips]);
  const isLocal = (ip: string): boolean => local.has(ip) || cidrContains('127.0.0.0/8', ip);
  // The node's own packet: from one of its addresses, a VIP included (the source it picks for a VIP on kube-ipvs0).
  const fromLocal = isLocal(packet.sourceIP);
  const icmp = packet.protocol === 'ICMP';
  const dport = packet.protocol === 'ICMP' ? 0 : packet.destPort;

  // Steps 1-3 (and POSTROUTING for the node's own packets, cut off below: IPVS rewrites before it).
  // For the node's own packets IPVS runs on LOCAL_OUT before filter OUTPUT, so `-m ipvs` (KUBE-IPVS-OUT-FILTER) sees its connection.
  const first = traceIptables(state.dump, packet, { nodeIPs: opts.nodeIPs, localAddrs: state.vips, ipsets: state.ipsets, ipvsServices: state.services });
  const cut = <T extends string>(list: readonly T[]): T[] => {
    const i = list.findIndex((c) => c === 'nat/POSTROUTING' || c.startsWith('nat/POSTROUTING:'));
    return i < 0 ? [...list] : list.slice(0, i);
  };

  const dstLocal = isLocal(packet.destIP);
  const route = dstLocal
    ? vips.has(packet.destIP)
      ? `${packet.destIP} is local (on kube-ipvs0): ${fromLocal ? 'OUTPUT' : 'INPUT'}`
      : `${packet.destIP} is local (a node address): ${fromLocal ? 'OUTPUT' : 'INPUT'}`
    : `${packet.destIP} is not local: ${fromLocal ? 'OUTPUT' : 'FORWARD'}`;
  const base = { route, hook: null, virtualService: null, scheduler: null, persistentTimeout: 0, realServers: [] } as const;

  if (first.verdict !== 'ACCEPT') {
    return { visited: first.visited, matched: first.matched, destination: first.verdict, masquerade: false, ipvs: { ...base, note: `not seen by IPVS: ${first.verdict} in filter` } };
  }
  if (!dstLocal) {
    return { ...first, ipvs: { ...base, note: 'not seen by IPVS: the destination is not local' } };
  }

  const hook: 'LOCAL_OUT' | 'LOCAL_IN' = fromLocal ? 'LOCAL_OUT' : 'LOCAL_IN';
  const tp: TracePacket | null = packet.protocol === 'ICMP' ? null : packet;
  const vs = tp === null ? undefined : state.services.find((s) => s.protocol === (tp.protocol as IpvsProtocol) && s.address === tp.destIP && s.port === dport);
  if (!vs || tp === null) {
    const why = icmp ? 'IPVS does not balance ICMP' : `no virtual service ${packet.protocol}/${packet.destIP}:${dport}`;
    const visited = [...first.visited];
    if (vips.has(packet.destIP)) {
      return { visited, matched: first.matched, destination: 'LOCAL', masquerade: false, ipvs: { ...base, hook, note: `${why}: the node takes the packet itself (kube-ipvs0 holds ${packet.destIP})` } };
    }
    return { ...first, ipvs: { ...base, hook, note: `${why}: the node takes the packet itself` } };
  }

  const realServers = vs.dests.map((d) => ({ address: d.address, port: d.port, weight: d.weight, draining: d.weight === 0 }));
  const usable = realServers.filter((d) => d.weight > 0);
  const key = vsKey(vs);
  const info = { route, hook, virtualService: key, scheduler: vs.scheduler, persistentTimeout: vs.persistentTimeout, realServers };
  const visited = [...cut(first.visited), `ipvs/${hook}: ${key} ${vs.scheduler}${vs.persistentTimeout ? ` persistent ${vs.persistentTimeout}` : ''}`];
  const matched = cut(first.matched);
  if (usable.length === 0) {
    const why = realServers.length ? `every real server of ${key} has weight 0 (draining)` : `${key} has no real servers`;
    return { visited, matched, destination: 'REJECT', masquerade: false, ipvs: { ...info, note: `${why}: IPVS answers with ICMP port unreachable` } };
  }
  const persist = vs.persistentTimeout > 0 ? `; persistent: a client keeps the real server first chosen for ${vs.persistentTimeout} s` : '';
  const drained = realServers.length > usable.length ? `; ${realServers.length - usable.length} draining (weight 0) take no new connection` : '';
  const note = `${vs.scheduler} picks one of ${usable.length} real server(s) with weight > 0${drained}${persist}`;

  // Step 5: each possible rewrite through nat POSTROUTING, with the mark step 1 left on the packet.
  const mark = markAfter(state.dump, matched);
  let masquerade = false;
  const post: string[] = [];
  const postMatched: string[] = [];
  for (const rs of usable) {
    const r = postrouting(state, tp, rs, mark);
    masquerade ||= r.masquerade;
    if (post.length === 0) post.push(...r.visited);
    for (const m of r.matched) if (!postMatched.includes(m)) postMatched.push(m);
  }
  return {
    visited: [...visited, ...post],
    matched: [...matched, ...postMatched],
    destination: usable.map((d) => `${d.address}:${d.port}`).join(', '),
    masquerade,
    ipvs: { ...info, note },
  };
}

/** The packet mark after the matched rules' MARK targets, in order. */
function markAfter(dump: IptDump, matched: readonly string[]): number {
  let mark = 0;
  for (const m of matched) {
    const slash = m.indexOf('/');
    const colon = m.indexOf(': ');
    const table = m.slice(0, slash) as IptablesTable;
    const chain = m.slice(slash + 1, colon);
    const args = m.slice(colon + 2);
    const rule = dump.tables.get(table)?.chains.get(chain)?.rules.find((r) => r.args === args);
    if (rule?.target?.kind === 'MARK') mark = ((mark & ~rule.target.mask) ^ rule.target.value) >>> 0;
  }
  return mark;
}

/**
 * nat POSTROUTING for the packet IPVS rewrote to `rs`: the iptables tracer
 * over the nat table alone, entered with a PREROUTING that only restores
 * the mark; its own steps (PREROUTING, filter) are left out of the answer.
 */
function postrouting(state: IpvsTraceState, packet: TracePacket, rs: { address: string; port: number }, mark: number): { visited: string[]; matched: string[]; masquerade: boolean } {
  const nat = state.dump.tables.get('nat');
  if (!nat) return { visited: [], matched: [], masquerade: false };
  const chains = new Map<string, IptChain>(nat.chains);
  const setMark = parseRuleArgs('PREROUTING', ['-j', 'MARK', '--set-xmark', `0x${mark.toString(16)}/0xffffffff`]);
  chains.set('PREROUTING', { name: 'PREROUTING', builtin: true, policy: 'ACCEPT', rules: [setMark] });
  const natOnly: IptTableDump = { name: 'nat', chains };
  const dump: IptDump = { tables: new Map([['nat', natOnly]]) };
  const r = traceIptables(dump, { ...packet, destIP: parseIPv4(rs.address), destPort: rs.port }, { nodeIPs: [], ipsets: state.ipsets });
  const keep = (c: string): boolean => !c.startsWith('nat/PREROUTING') && !c.startsWith('filter/');
  return { visited: r.visited.filter(keep), matched: r.matched.filter(keep), masquerade: r.masquerade };
}
