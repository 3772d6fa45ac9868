/**
 * trace/nft-tracer: follows one new connection's first packet through an
 * nftables table, as the kernel would, and says where it ends up.
 *
 * Input is a table state: the validating fake's (NftFake.table()) or the
 * kernel's own, parsed from `nft list table` text. Like kube-proxy's
 * helpers_test.go, it does not parse arbitrary nftables: it recognises the
 * statement pieces nodenet writes, in both spellings (ours, and the kernel's
 * listing: `numgen random mod 2 0`, `meta mark set meta mark | 0x00004000`,
 * `meta mark & 0x00004000 == 0x00000000`), and throws on anything else, so a
 * renderer change cannot silently make traces meaningless.
 *
 * The walk: base chains by hook, in priority order. A packet from one of the
 * node's IPs takes output then postrouting; any other takes prerouting, then
 * input (destination is a node IP after DNAT) or forward then postrouting.
 * DNAT changes the destination seen by later chains. `numgen random` rules
 * are a random choice: the tracer follows every branch and reports all
 * endpoints reachable ("10.0.1.2:80, 10.0.2.3:80"). An affinity set lookup
 * (`ip saddr @affinity-...`) matches when the set holds the source (tests put
 * it there to stand for an earlier connection). Masquerade is what
 * postrouting does with the mark the rules set.
 */
import { cidrContains, isIPv4 } from '../../../lib/net/ip.js';
import { parseNftListing } from '../netfilter/nft/nft-listing.js';
import type { NftChainState, NftTableState } from '../netfilter/nft/nft-state.js';
import type { Protocol, TracePacket, TraceResult } from '../proxy/types.js';

/** A TracePacket, or a ping (ICMP echo request; it has no port). */
export type NftTracePacket = TracePacket | { readonly sourceIP: string; readonly protocol: 'ICMP'; readonly destIP: string; readonly destPort?: 0 };

export interface NftTraceOptions {
  /** The node's own addresses: `fib ... type local` matches them (and 127.0.0.0/8). */
  readonly nodeIPs: readonly string[];
}

export class NftTraceError extends Error {
  override name = 'NftTraceError';
}

interface Packet {
  saddr: string;
  daddr: string;
  proto: 'tcp' | 'udp' | 'sctp' | 'icmp';
  dport: number | null;
}

type Outcome = 'next' | 'return' | 'done' | 'stop';
// next: evaluate the next rule; return: back to the caller (return, or end of a
// goto'd chain); done: this base chain's evaluation ended (accept, dnat,
// masquerade); stop: the packet is dropped or rejected.

const IP = String.raw`\d{1,3}\.\d{1,3}\.\d{1,3}\.\d{1,3}`;
const NAME = String.raw`[A-Za-z_.][A-Za-z0-9_./-]*`;
const R = {
  comment: /\s*comment "[^"]*"$/,
  ctNew: /^ct state new(?= |$)/,
  destDispatch: new RegExp(String.raw`^ip daddr \. meta l4proto \. th dport vmap @(${NAME})$`),
  portDispatch: new RegExp(String.raw`^meta l4proto \. th dport vmap @(${NAME})$`),
  addrSet: new RegExp(String.raw`^ip (saddr|daddr) (!= )?@(${NAME})(?= |$)`),
  addr: new RegExp(String.raw`^ip (saddr|daddr) (!= )?(${IP}(?:/\d{1,2})?)(?= |$)`),
  fibLocal: /^fib (saddr|daddr) type local(?= |$)/,
  l4proto: /^meta l4proto (tcp|udp|sctp|icmp)(?= |$)/,
  dport: /^(tcp|udp|sctp) dport (\d+)(?= |$)/,
  numgen: /^numgen random mod (\d+) (?:== )?(\d+)(?= |$)/,
  update: new RegExp(String.raw`^update @(${NAME}) \{ ip saddr \}(?= |$)`),
  markSet: /^(?:meta )?mark set (?:meta )?mark (or|xor|\||\^) (0x[0-9a-f]+)(?= |$)/,
  markTest: /^(?:meta )?mark (?:and|&) (0x[0-9a-f]+) == (?:0x0+|0)(?= |$)/,
  dnat: new RegExp(String.raw`^dnat to (${IP}):(\d+)(?= |$)`),
  masquerade: /^masquerade(?: fully-random| random| persistent)*(?= |$)/,
  jump: new RegExp(String.raw`^(jump|goto) (${NAME})(?= |$)`),
  verdict: /^(return|drop|accept|reject)(?: with icmp (?:type )?\S+)?(?= |$)/,
};

class Tracer {
  readonly visited: string[] = [];
  readonly outputs: string[] = [];
  final: 'DROP' | 'REJECT' | null = null;
  mark = 0;
  masquerade = false;
  private depth = 0;

  /** The table whose chain runs now: jumps, gotos and set lookups stay in it. */
  private t: NftTableState;

  constructor(
    first: NftTableState,
    private readonly nodeIPs: ReadonlySet<string>,
    readonly pkt: Packet,
  ) {
    this.t = first;
  }

  /** Runs a base chain of table `t`. */
  runBase(t: NftTableState, name: string): Outcome {
    this.t = t;
    return this.runChain(name);
  }

  isLocal(ip: string): boolean {
    return this.nodeIPs.has(ip) || cidrContains('127.0.0.0/8', ip);
  }

  private chain(name: string): NftChainState {
    const c = this.t.chains.get(name);
    if (!c) throw new NftTraceError(`rule refers to unknown chain ${name}`);
    return c;
  }

  /** Runs a chain; returns how it ended for the caller. */
  runChain(name: string): Outcome {
    if (++this.depth > 64) throw new NftTraceError(`chain nesting too deep at ${name} (a loop?)`);
    try {
      this.visited.push(name);
      for (const rule of this.chain(name).rules) {
        const o = this.runRule(name, rule);
        if (o === 'next') continue;
        return o;
      }
      return 'return';
    } finally {
      this.depth--;
    }
  }

  private lookup(setName: string, key: string): string | null | undefined {
    const s = this.t.sets.get(setName);
    if (!s) throw new NftTraceError(`rule refers to unknown set or map ${setName}`);
    const e = s.elements.get(key);
    return e === undefined ? undefined : e.value;
  }

  /** Executes a verdict ("goto x", "drop", ...). `maybe`: the rule is one branch of a random choice. */
  private verdict(v: string, maybe: boolean, rule: string): Outcome {
    const j = R.jump.exec(v);
    if (j && j[0] === v) {
      const o = this.runChain(j[2]!);
      if (maybe) return 'next'; // follow every branch of a random choice, then the rest of the chain
      if (o === 'stop' || o === 'done') return o;
      return j[1] === 'jump' ? 'next' : 'return';
    }
    const m = R.verdict.exec(v);
    if (m && m[0] === v) {
      switch (m[1]) {
        case 'return':
          return 'return';
        case 'accept':
          return 'done';
        case 'drop':
          this.final = 'DROP';
          return 'stop';
        default:
          this.final = 'REJECT';
          return 'stop';
      }
    }
    throw new NftTraceError(`unsupported verdict ${JSON.stringify(v)} in rule: ${rule}`);
  }

  private runRule(chain: string, raw: string): Outcome {
    let rest = raw.replace(R.comment, '').trim();
    let maybe = false;
    const p = this.pkt;
    const take = (re: RegExp): RegExpExecArray | null => {
      const m = re.exec(rest);
      if (m) rest = rest.slice(m[0].length).trimStart();
      return m;
    };
    while (rest !== '') {
      let m: RegExpExecArray | null;
      if (take(R.ctNew)) continue; // traces are of new connections
      if ((m = take(R.destDispatch))) {
        if (p.dport === null) return 'next';
        const v = this.lookup(m[1]!, `${p.daddr} . ${p.proto} . ${p.dport}`);
        return v === undefined ? 'next' : this.verdict(v ?? '', maybe, raw);
      }
      if ((m = take(R.portDispatch))) {
        if (p.dport === null) return 'next';
        const v = this.lookup(m[1]!, `${p.proto} . ${p.dport}`);
        return v === undefined ? 'next' : this.verdict(v ?? '', maybe, raw);
      }
      if ((m = take(R.addrSet))) {
        const ip = m[1] === 'saddr' ? p.saddr : p.daddr;
        const member = this.lookup(m[3]!, ip) !== undefined;
        if (member === (m[2] !== undefined)) return 'next';
        continue;
      }
      if ((m = take(R.addr))) {
        const ip = m[1] === 'saddr' ? p.saddr : p.daddr;
        const v = m[3]!;
        const match = v.includes('/') ? cidrContains(v, ip) : v === ip;
        if (match === (m[2] !== undefined)) return 'next';
        continue;
      }
      if ((m = take(R.fibLocal))) {
        if (!this.isLocal(m[1] === 'saddr' ? p.saddr : p.daddr)) return 'next';
        continue;
      }
      if ((m = take(R.l4proto))) {
        if (m[1] !== p.proto) return 'next';
        continue;
      }
      if ((m = take(R.dport))) {
        if (m[1] !== p.proto || Number(m[2]) !== p.dport) return 'next';
        continue;
      }
      if ((m = take(R.numgen))) {
        const mod = Number(m[1]);
        const k = Number(m[2]);
        if (k >= mod) return 'next'; // can never match
        maybe = mod > 1;
        continue;
      }
      if ((m = take(R.update))) {
        if (!this.t.sets.has(m[1]!)) throw new NftTraceError(`rule updates unknown set ${m[1]}`);
        continue;
      }
      if ((m = take(R.markSet))) {
        const v = parseInt(m[2]!, 16);
        this.mark = m[1] === 'or' || m[1] === '|' ? this.mark | v : this.mark ^ v;
        continue;
      }
      if ((m = take(R.markTest))) {
        if ((this.mark & parseInt(m[1]!, 16)) !== 0) return 'next';
        continue;
      }
      if ((m = take(R.dnat))) {
        this.outputs.push(`${m[1]}:${m[2]}`);
        return maybe ? 'next' : 'done';
      }
      if (take(R.masquerade)) {
        this.masquerade = true;
        return 'done';
      }
      // A verdict ends the rule: it must be the whole rest.
      return this.verdict(rest, maybe, raw);
    }
    return 'next';
  }
}

/** The base chains of a hook across the tables, in priority order (the tables' order among equal priorities). */
function baseChains(tables: readonly NftTableState[], hook: string): { table: NftTableState; chain: NftChainState }[] {
  const out = tables.flatMap((table) => [...table.chains.values()].filter((c) => c.base?.hook === hook).map((chain) => ({ table, chain })));
  return out.sort((a, b) => a.chain.base!.priority - b.chain.base!.priority);
}



/**
 * Traces a packet through `source` (a table state, or `nft list table` text
 * holding one table). destination: the endpoint(s) "ip:port" (comma-joined
 * when a random choice remains), "REJECT", "DROP", or "ACCEPT" when nothing
 * touched the packet. masquerade: postrouting masqueraded it.
 */
export function traceNftables(source: NftTableState | readonly NftTableState[] | string, packet: NftTracePacket, opts: NftTraceOptions): TraceResult {
  let tables: readonly NftTableState[];
  if (typeof source === 'string') {
    tables = parseNftListing(source).filter((x) => x.family === 'ip');
    if (!tables.length) throw new NftTraceError('expected a table in the listing, got none');
  } else tables = Array.isArray(source) ? source : [source as NftTableState];
  if (!tables.length) throw new NftTraceError('no table to trace through');
  if (!isIPv4(packet.sourceIP) || !isIPv4(packet.destIP)) throw new NftTraceError('packet addresses must be IPv4');
  const proto = packet.protocol.toLowerCase() as Lowercase<Protocol> | 'icmp';
  const pkt: Packet = { saddr: packet.sourceIP, daddr: packet.destIP, proto, dport: proto === 'icmp' ? null : (packet.destPort ?? null) };
  const tr = new Tracer(tables[0]!, new Set(opts.nodeIPs), pkt);

  let dnatDone = false;
  const runHook = (hook: string): boolean => {
    for (const { table, chain: c } of baseChains(tables, hook)) {
      const before = tr.outputs.length;
      // nat chains of a hook stop at the first DNAT (the connection has its binding): later ones are not run.
      if (c.base?.type === 'nat' && hook !== 'postrouting' && dnatDone) continue;
      const o = tr.runBase(table, c.name);
      if (o === 'stop') return false;
      if (tr.outputs.length > before) {
        if (c.base?.type === 'nat') dnatDone = true;
        // DNAT happened: later chains see the (first) endpoint as destination.
        const [ip, port] = tr.outputs[before]!.split(':');
        pkt.daddr = ip!;
        pkt.dport = Number(port);
      }
    }
    return true;
  };

  const fromNode = tr.isLocal(pkt.saddr);
  let alive: boolean;
  if (fromNode) {
    alive = runHook('output') && runHook('postrouting');
  } else {
    alive = runHook('prerouting');
    if (alive) alive = tr.isLocal(pkt.daddr) ? runHook('input') : runHook('forward') && runHook('postrouting');
  }
  const destination = !alive ? (tr.final ?? 'DROP') : tr.outputs.length ? tr.outputs.join(', ') : 'ACCEPT';
  return { visited: tr.visited, destination, masquerade: alive && tr.masquerade };
}
