/**
 * trace/report: one packet traced over a node's live rules, as `nodenet
 * trace` prints it. Pure: the rules were read by trace/live.ts; this runs
 * the mode's tracer and formats the answer for people or as JSON.
 */
import { BACKEND_COMMANDS } from '../netfilter/iptables/iptables.js';
import type { TraceResult } from '../proxy/types.js';
import { traceIptables } from './iptables-tracer.js';
import { LOCAL_VIP_TEXT, traceIpvs, type IpvsTraceInfo } from './ipvs-tracer.js';
import { traceNftables, type NftTracePacket } from './nft-tracer.js';
import type { LiveRules, TraceMode } from './live.js';

/** What `--json` prints: the TraceResult (plus iptables' matched rules and verdict) and what it was traced over. */
export interface TraceReport extends TraceResult {
  readonly mode: TraceMode;
  /** iptables and ipvs: 'nft' | 'legacy' (which iptables backend held the rules); nftables: the table. */
  readonly source: string;
  readonly netns: string | null;
  readonly packet: { readonly source: string; readonly protocol: string; readonly destination: string; readonly port: number | null };
  /** The hook the packet entered by: 'prerouting' (from a pod or the network) or 'output' (sent by the node). */
  readonly entry: 'prerouting' | 'output';
  /** The addresses treated as the node's own. */
  readonly localAddresses: readonly string[];
  /** The destination's endpoints ("ip:port"), empty for REJECT / DROP / ACCEPT. */
  readonly endpoints: readonly string[];
  /** iptables only: every rule that matched, "table/CHAIN: args". */
  readonly matched?: readonly string[];
  /** iptables and ipvs: foreign rules left out because the parser does not read them. */
  readonly skippedRules?: readonly string[];
  /** ipvs only: the virtual service, its scheduler, persistence and real servers (with weights), and what IPVS did. */
  readonly ipvs?: IpvsTraceInfo;
}

/** Runs the mode's tracer over rules already read. Pure. */
export function traceLive(live: LiveRules, args: { readonly packet: NftTracePacket; readonly netns: string | undefined }, localAddresses: readonly string[]): TraceReport {
  const pk = args.packet;
  const local = new Set(localAddresses);
  const entry = local.has(pk.sourceIP) || pk.sourceIP.startsWith('127.') ? 'output' : 'prerouting';
  let r: TraceResult & { matched?: readonly string[]; ipvs?: IpvsTraceInfo };
  if (live.mode === 'nftables') r = traceNftables(live.state, pk, { nodeIPs: [...local] });
  else if (live.mode === 'ipvs') r = traceIpvs(live, pk, { nodeIPs: [...local].filter((a) => !live.vips.includes(a)) });
  else r = traceIptables(live.dump, pk, { nodeIPs: [...local] });
  // The iptables tracer leaves the destination empty when nothing decided it: the packet goes on, untouched.
  const destination = r.destination === '' ? 'ACCEPT' : r.destination;
  const endpoints = /^\d/.test(destination) ? destination.split(', ') : [];
  return {
    mode: live.mode,
    source: live.mode === 'nftables' ? live.table : live.backend,
    netns: args.netns ?? null,
    packet: { source: pk.sourceIP, protocol: pk.protocol.toLowerCase(), destination: pk.destIP, port: pk.protocol === 'ICMP' ? null : pk.destPort },
    entry,
    localAddresses: [...local],
    visited: r.visited,
    destination,
    endpoints,
    masquerade: r.masquerade,
    ...(live.mode !== 'nftables' ? { matched: r.matched ?? [], skippedRules: live.skipped } : {}),
    ...(r.ipvs ? { ipvs: r.ipvs } : {}),
  };
}

/** The human-readable report. Pure. */
export function formatTrace(rep: TraceReport, netnsName?: string): string {
  const pk = rep.packet;
  const to = pk.port === null ? `${pk.destination} (${pk.protocol})` : `${pk.destination}:${pk.port} (${pk.protocol})`;
  const save = BACKEND_COMMANDS[rep.source === 'legacy' ? 'legacy' : 'nft'].save;
  const over = rep.mode === 'nftables' ? `nftables, table ${rep.source}` : rep.mode === 'ipvs' ? `ipvs, ${save}, ipset save, ipvsadm -Ln` : `iptables, ${save}`;
  const lines = [
    `trace ${pk.source} -> ${to} in ${netnsName ?? rep.netns ?? 'this network namespace'} (${over})`,
    rep.entry === 'output' ? 'entry: output (sent by the node itself)' : 'entry: prerouting (from a pod or from the network)',
    'chains:',
    ...rep.visited.map((c) => `  ${c}`),
  ];
  let dest: string;
  if (rep.endpoints.length === 1) dest = rep.endpoints[0]!;
  else if (rep.endpoints.length > 1) dest = `one of: ${rep.endpoints.join(', ')}`;
  else if (rep.destination === 'REJECT') dest = 'REJECT (refused: the sender gets an ICMP error at once)';
  else if (rep.destination === 'DROP') dest = 'DROP (silently dropped)';
  else if (rep.destination === 'ACCEPT') dest = `ACCEPT (not redirected: it goes on to ${pk.destination})`;
  else if (rep.destination === 'LOCAL') dest = LOCAL_VIP_TEXT;
  else dest = rep.destination;
  if (rep.ipvs) lines.push(...formatIpvs(rep.ipvs));
  lines.push(`destination: ${dest}`, `masquerade: ${rep.masquerade ? 'yes' : 'no'}`);
  return `${lines.join('\n')}\n`;
}


/** The IPVS section: route, virtual service, real servers with weights, the decision. */
function formatIpvs(i: IpvsTraceInfo): string[] {
  const out = ['ipvs:', `  route: ${i.route}`];
  if (i.virtualService !== null) {
    out.push(`  virtual service: ${i.virtualService} (scheduler ${i.scheduler}, ${i.persistentTimeout ? `persistent ${i.persistentTimeout} s` : 'not persistent'}) on ${i.hook}`);
    if (i.realServers.length === 0) out.push('  real servers: none');
    else out.push('  real servers:', ...i.realServers.map((r) => `    ${r.address}:${r.port} weight ${r.weight}${r.draining ? ' (draining: no new connections)' : ''}`));
  }
  out.push(`  ${i.note}`);
  return out;
}
