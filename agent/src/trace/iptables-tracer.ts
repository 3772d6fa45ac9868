/**
 * trace/iptables-tracer: walks one packet through parsed iptables rules the
 * way netfilter would, for packet-flow tests (kube-proxy's tracePacket).
 *
 * Order, as the kernel runs the hooks for a new connection:
 *   1. nat PREROUTING (a packet from elsewhere) or nat OUTPUT (from a local
 *      address): DNAT decides the destination;
 *   2. filter INPUT (destination local after DNAT), OUTPUT (locally
 *      originated) or FORWARD (everything else): ACCEPT / DROP / REJECT;
 *   3. nat POSTROUTING, unless the packet was dropped or is delivered locally:
 *      MASQUERADE / SNAT mean the source is rewritten.
 * Chains are followed through jumps, RETURN and fall-through; the packet mark
 * is tracked (MARK --set-xmark, `-m mark`), so masquerading happens only if
 * the rules really mark and then masquerade it. A jump taken under
 * `-m statistic --probability` may or may not be taken: the walk records the
 * outcome of that branch and goes on, so every reachable endpoint is
 * collected ("10.180.0.4:80, 10.180.0.5:80"). `recent --rcheck/--update`
 * never match (no history); ctstate is NEW, plus DNAT after a DNAT.
 *
 * Test infrastructure: pure, no I/O.
 */
import { cidrContains, isIPv4 } from '../../../lib/net/ip.js';
import { IP_PROTOCOL_NUMBERS } from '../../../lib/net/protocols.js';
import type { IptDump, IptRule, Negatable, SetMatch } from '../netfilter/iptables/iptables-parse.js';
import { entryParts, type IpsetState } from '../netfilter/iptables/ipset-parse.js';
import type { IptablesTable } from '../netfilter/iptables/iptables-types.js';
import type { TracePacket, TraceResult } from '../proxy/types.js';

export interface IptablesTraceOptions {
  /** The node's addresses (addrtype LOCAL; NodePorts are served on them). */
  readonly nodeIPs: readonly string[];
  /** Further local addresses (e.g. a bridge's gateway); 127.0.0.0/8 is always local. */
  readonly localAddrs?: readonly string[];
  /** The ipsets `-m set --match-set` rules look in (IPVS mode, from `ipset save`); a set not here never matches. */
  readonly ipsets?: ReadonlyMap<string, IpsetState>;
  /**
   * The IPVS virtual services (IPVS mode): a packet to one of them belongs to
   * an IPVS connection, which `-m ipvs --vaddr/--vproto/--vport` matches on.
   * Without them no `-m ipvs` rule matches.
   */
  readonly ipvsServices?: readonly { readonly protocol: string; readonly address: string; readonly port: number }[];
}

export interface IptablesTraceResult extends TraceResult {
  /** Every rule that matched, as "table/CHAIN: args", in order. */
  readonly matched: readonly string[];
  /** The filter verdict: ACCEPT (explicit or by policy), DROP or REJECT. */
  readonly verdict: 'ACCEPT' | 'DROP' | 'REJECT';
}

type Outcome = { readonly kind: 'fall' } | { readonly kind: 'return' } | { readonly kind: 'final'; readonly verdict: string };
const FALL: Outcome = { kind: 'fall' };

interface Pkt {
  src: string;
  dst: string;
  proto: string;
  dport: number;
  sport: number;
}

/** A ping is traced too: no rule nodenet writes matches ICMP (they say -p tcp/udp/sctp), which is the point. */
export function traceIptables(dump: IptDump, packet: TracePacket | { readonly sourceIP: string; readonly protocol: 'ICMP'; readonly destIP: string }, opts: IptablesTraceOptions): IptablesTraceResult {
  const local = new Set<string>([...opts.nodeIPs, ...(opts.localAddrs ?? [])]);
  const isLocal = (ip: string): boolean => local.has(ip) || cidrContains('127.0.0.0/8', ip);
  const visited: string[] = [];
  const matched: string[] = [];
  const dnat: string[] = [];
  let mark = 0;
  let masquerade = false;
  let explicitAccept = false;
  let ctDnat = false;

  const pkt: Pkt = { src: packet.sourceIP, dst: packet.destIP, proto: packet.protocol.toLowerCase(), dport: packet.protocol === 'ICMP' ? 0 : packet.destPort, sport: 40000 };
  const fromLocal = isLocal(pkt.src);

  const neg = <T>(m: Negatable<T> | null, test: (v: T) => boolean): boolean => (m === null ? true : test(m.value) !== m.negated);
  const addrType = (ip: string): string => (isLocal(ip) ? 'LOCAL' : 'UNICAST');
  const portIn = (spec: string, port: number): boolean => {
    const [a, b] = spec.split(':');
    return b === undefined ? Number(a) === port : port >= Number(a || 0) && port <= Number(b || 65535);
  };

  const matches = (r: IptRule): boolean => {
    if (!neg(r.source, (c) => cidrContains(c, pkt.src))) return false;
    if (!neg(r.destination, (c) => cidrContains(c, pkt.dst))) return false;
    if (!neg(r.protocol, (p) => p === 'all' || p === pkt.proto)) return false;
    if (r.inInterface || r.outInterface) return false; // interfaces are unknown to the tracer
    if (!neg(r.dport, (p) => portIn(p, pkt.dport))) return false;
    if (!neg(r.sport, (p) => portIn(p, pkt.sport))) return false;
    if (!neg(r.srcType, (t) => t.split(',').includes(addrType(pkt.src)))) return false;
    if (!neg(r.dstType, (t) => t.split(',').includes(addrType(pkt.dst)))) return false;
    if (!neg(r.mark, (m) => ((mark & m.mask) >>> 0) === m.value)) return false;
    if (!neg(r.ctstate, (states) => states.includes('NEW') || (ctDnat && states.includes('DNAT')))) return false;
    if (r.recent && r.recent.mode !== 'set') return false; // no history: rcheck/update/remove never match
    for (const m of r.matchSets ?? []) if (setHas(opts.ipsets?.get(m.name), m, pkt) === m.negated) return false;
    if (r.ipvs) {
      // xt_ipvs: the connection IPVS keeps for the packet; its virtual service is the packet's (protocol, destination, port).
      const vs = opts.ipvsServices?.find((x) => x.protocol.toLowerCase() === pkt.proto && x.address === pkt.dst && x.port === pkt.dport);
      if (!vs) return false;
      if (!neg(r.ipvs.vaddr, (c) => cidrContains(c, vs.address))) return false;
      if (!neg(r.ipvs.vproto, (p) => p === IP_PROTOCOL_NUMBERS[pkt.proto])) return false;
      if (!neg(r.ipvs.vport, (p) => p === vs.port)) return false;
    }
    return true;
  };

  const run = (table: IptablesTable, chainName: string, depth: number): Outcome => {
    const chain = dump.tables.get(table)?.chains.get(chainName);
    if (!chain) return FALL;
    if (depth > 64) throw new Error(`iptables-tracer: jump depth over 64 at ${table}/${chainName}`);
    visited.push(`${table}/${chainName}`);
    for (const r of chain.rules) {
      if (!matches(r)) continue;
      matched.push(`${table}/${chainName}: ${r.args}`);
      const t = r.target;
      if (t === null) continue;
      let out: Outcome;
      switch (t.kind) {
        case 'MARK':
          mark = ((mark & ~t.mask) ^ t.value) >>> 0;
          continue;
        case 'chain':
          out = run(table, t.chain, depth + 1);
          if (out.kind !== 'final') {
            if (r.goto) return FALL;
            continue;
          }
          break;
        case 'RETURN':
          out = { kind: 'return' };
          break;
        case 'ACCEPT':
        case 'DROP':
          out = { kind: 'final', verdict: t.kind };
          break;
        case 'REJECT':
          out = { kind: 'final', verdict: 'REJECT' };
          break;
        case 'DNAT':
          dnat.push(t.toDestination);
          out = { kind: 'final', verdict: 'DNAT' };
          break;
        case 'SNAT':
        case 'MASQUERADE':
          masquerade = true;
          out = { kind: 'final', verdict: t.kind };
          break;
      }
      // A probabilistic rule may not have been taken: later rules still see the packet.
      if (r.probability !== null && out.kind === 'final') continue;
      return out;
    }
    return FALL;
  };

  // 1. nat PREROUTING / OUTPUT
  run('nat', fromLocal ? 'OUTPUT' : 'PREROUTING', 0);
  const first = dnat[0];
  if (first !== undefined) {
    const m = /^(\d+\.\d+\.\d+\.\d+)(?::(\d+))?/.exec(first);
    if (m && isIPv4(m[1]!)) {
      pkt.dst = m[1]!;
      if (m[2] !== undefined) pkt.dport = Number(m[2]);
    }
    ctDnat = true;
  }

  // 2. filter
  const toLocal = isLocal(pkt.dst);
  const hook = fromLocal ? 'OUTPUT' : toLocal ? 'INPUT' : 'FORWARD';
  const f = run('filter', hook, 0);
  let verdict: 'ACCEPT' | 'DROP' | 'REJECT' = 'ACCEPT';
  if (f.kind === 'final' && (f.verdict === 'DROP' || f.verdict === 'REJECT')) verdict = f.verdict;
  else if (f.kind === 'final' && f.verdict === 'ACCEPT') explicitAccept = true;
  else if (dump.tables.get('filter')?.chains.get(hook)?.policy === 'DROP') verdict = 'DROP';

  // 3. nat POSTROUTING
  if (verdict === 'ACCEPT' && !(toLocal && !fromLocal)) run('nat', 'POSTROUTING', 0);

  const destination = verdict !== 'ACCEPT' ? verdict : dnat.length ? dnat.join(', ') : explicitAccept ? 'ACCEPT' : '';
  return { visited, matched, destination, masquerade, verdict };
}

/** Whether the packet's element (picked by the match's src/dst flags) is a member of the set. */
function setHas(set: IpsetState | undefined, m: SetMatch, pkt: Pkt): boolean {
  if (!set) return false;
  const ip = (i: number): string => (m.flags[i] === 'src' ? pkt.src : pkt.dst);
  const port = (i: number): number => (m.flags[i] === 'src' ? pkt.sport : pkt.dport);
  if (!['tcp', 'udp', 'sctp'].includes(pkt.proto) && set.type !== 'hash:ip') return false;
  switch (set.type) {
    case 'hash:ip': return set.entries.has(ip(0));
    case 'bitmap:port': return set.entries.has(String(port(0)));
    case 'hash:ip,port': return set.entries.has(`${ip(0)},${pkt.proto}:${port(1)}`);
    case 'hash:ip,port,ip': return set.entries.has(`${ip(0)},${pkt.proto}:${port(1)},${ip(2)}`);
    case 'hash:ip,port,net':
      for (const e of set.entries) {
        const p = entryParts(set.type, e);
        if (p.ip === ip(0) && p.proto === pkt.proto && p.port === port(1) && p.net && cidrContains(p.net, ip(2))) return true;
      }
      return false;
  }
}
