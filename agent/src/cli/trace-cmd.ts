/**
 * `nodenet trace`: where would the kernel send this packet? Runs the
 * packet-flow tracers of testing/ (the ones the renderers' tests use) over
 * the live rules of a node's network namespace.
 *
 *   nodenet trace [--netns NAME|PATH] [--mode auto|iptables|nftables|ipvs]
 *                 [--prefix KUBE] [--from-node] [--json] SRC PROTO DST [PORT]
 *
 * The trace is of the first packet of a new connection. A packet whose
 * source is one of the namespace's addresses (or any source with
 * --from-node) is traced as sent by the node itself (the OUTPUT hook); any
 * other as arriving from a pod or the network (PREROUTING). The tracers are
 * narrow on purpose (they know the rules nodenet writes) and ignore other
 * tables: a foreign nftables table or iptables rule the parser does not
 * understand is not part of the answer (the latter is reported).
 *
 * Exit codes: 0 a trace was printed; 2 a usage error (the message names the
 * bad argument); 1 the rules could not be read or are not there.
 */
import type { Runner } from '../exec/runner.js';
import { isIPv4, parseIPv4 } from '../../../lib/net/ip.js';
import { toNetnsPath } from '../netns/netns.js';
import type { Protocol } from '../proxy/types.js';
import type { NftTracePacket } from '../trace/nft-tracer.js';
import { formatTrace, traceLive, type TraceReport } from '../trace/report.js';
import { stringify as toYaml } from 'yaml';
import { FlagError, OUTPUT_FLAGS, outputFormat, parseFlags, type FlagSpecs } from './flags.js';
import { netnsFlag, prefixFlag } from './node-flags.js';
import { readLiveRules, TraceReadError, TraceUsageError, type TraceMode } from '../trace/live.js';
import { formatClusterTrace, traceCluster, type ClusterTrace, type ClusterTraceDeps } from '../trace/cluster.js';
import type { LabNodeInfo } from '../lab/nodes.js';

class HelpRequested extends Error {}

export type { TraceReport };

export const TRACE_USAGE = `usage: nodenet trace [--netns NAME|PATH | --lab NAME [--node N]] [--mode auto|iptables|nftables|ipvs] [--prefix KUBE] [--from-node] [-o json|yaml]
                     SRC tcp|udp|sctp|icmp DST [PORT]
Traces a new connection's first packet through a node's live Service rules: the chains it visits, where it ends up, masquerade.
With --lab, across the lab's nodes: from the node SRC is on (or --node), through its Service rules, then for each endpoint
the route, the local bridge, the VXLAN device (neighbour, FDB entry, remote underlay IP) or a routed backend's route via
the remote node (host-gw's proto 78, BGP's proto bird with its next hop), and the remote node's bridge to the pod, with
the masquerade decision at each hop.`;

export interface TraceDeps {
  readonly runner: Runner;
  /** The IPv4 addresses of a namespace (the caller's own when netns is undefined); compose reads them over netlink. */
  readonly localAddresses: (netns?: string) => Promise<string[]>;
  /** Throws unless a network namespace file exists at path (default: toNetnsPath's check). */
  readonly checkNetns?: (path: string) => void;
  readonly stdout?: (s: string) => void;
  readonly stderr?: (s: string) => void;
  /** --lab: a node's links, addresses, routes (host-gw's and BIRD's among them) and VXLAN entries (compose reads them over netlink in its namespace). */
  readonly readNetwork?: ClusterTraceDeps['readNetwork'];
  /** --lab NAME: the lab's nodes (lab/nodes.ts). */
  readonly labNodes?: (lab: string) => readonly LabNodeInfo[];
}

export interface TraceArgs {
  /** Namespace path, or undefined for the process's own. */
  readonly netns: string | undefined;
  /** As the user named it (for messages). */
  readonly netnsName: string | undefined;
  readonly mode: 'auto' | TraceMode;
  readonly prefix: string;
  readonly fromNode: boolean;
  readonly output: 'text' | 'json' | 'yaml';
  readonly packet: NftTracePacket;
  /** --lab NAME: trace across the lab's nodes. */
  readonly lab?: string;
  /** --node N (with --lab): the node the packet starts on. */
  readonly node?: string;
}

const SPECS: FlagSpecs = { netns: { type: 'string' }, lab: { type: 'string' }, node: { type: 'string' }, mode: { type: 'string' }, prefix: { type: 'string' }, 'from-node': { type: 'boolean' }, ...OUTPUT_FLAGS };

const PROTOCOLS: Readonly<Record<string, Protocol | 'ICMP'>> = { tcp: 'TCP', udp: 'UDP', sctp: 'SCTP', icmp: 'ICMP' };

/** Parses the command line (no I/O besides the netns existence check). @throws FlagError naming the bad argument. */
export function parseTraceArgs(argv: readonly string[], checkNetns: (path: string) => void): TraceArgs {
  const p = parseFlags(argv, SPECS);
  if (p.help) throw new HelpRequested();
  const output = outputFormat(p, ['text', 'json', 'yaml'] as const, 'text');
  if (p.rest.length) throw new FlagError(`unexpected arguments after --: ${p.rest.join(' ')}`);

  const mode = p.flags.get('mode') ?? 'auto';
  if (mode !== 'auto' && mode !== 'iptables' && mode !== 'nftables' && mode !== 'ipvs') throw new FlagError(`--mode ${JSON.stringify(mode)}: expected auto, iptables, nftables or ipvs`);
  const prefix = prefixFlag(p);

  const lab = p.flags.get('lab');
  const node = p.flags.get('node');
  if (lab !== undefined && p.flags.has('netns')) throw new FlagError('--lab and --netns: give one (--lab traces across the lab\'s nodes; --node picks where it starts)');
  if (lab === '') throw new FlagError('--lab needs a lab name');
  if (node !== undefined && lab === undefined) throw new FlagError('--node needs --lab (without it, --netns names the node)');
  const ns = netnsFlag(p, checkNetns);
  const netns = ns?.path;
  const netnsName = ns?.name;

  const [src, proto, dst, port, ...extra] = p.positional;
  if (src === undefined || proto === undefined || dst === undefined) throw new FlagError(`need SRC PROTO DST [PORT], got ${p.positional.length} argument(s)`);
  if (!isIPv4(src)) throw new FlagError(`SRC ${JSON.stringify(src)} is not an IPv4 address`);
  const protocol = PROTOCOLS[proto.toLowerCase()];
  if (protocol === undefined) throw new FlagError(`PROTO ${JSON.stringify(proto)}: expected tcp, udp, sctp or icmp`);
  if (!isIPv4(dst)) throw new FlagError(`DST ${JSON.stringify(dst)} is not an IPv4 address`);
  if (extra.length) throw new FlagError(`unexpected argument ${JSON.stringify(extra[0])} after PORT`);

  let packet: NftTracePacket;
  if (protocol === 'ICMP') {
    if (port !== undefined) throw new FlagError(`unexpected argument ${JSON.stringify(port)}: icmp (a ping) has no port`);
    packet = { sourceIP: src, protocol: 'ICMP', destIP: dst };
  } else {
    if (port === undefined) throw new FlagError(`PORT is missing: ${proto} needs a destination port`);
    const n = /^\d{1,5}$/.test(port) ? Number(port) : NaN;
    if (!(n >= 1 && n <= 65535)) throw new FlagError(`PORT ${JSON.stringify(port)}: expected a number from 1 to 65535`);
    packet = { sourceIP: parseIPv4(src), protocol, destIP: parseIPv4(dst), destPort: n };
  }
  return { netns, netnsName, mode, prefix, fromNode: p.flags.has('from-node'), output, packet, ...(lab === undefined ? {} : { lab }), ...(node === undefined ? {} : { node }) };
}

function defaultCheckNetns(path: string): void {
  toNetnsPath(path);
}

/** `nodenet trace ...`; returns the exit code. */
export async function traceCommand(argv: readonly string[], deps: TraceDeps): Promise<number> {
  const out = deps.stdout ?? ((s: string) => void process.stdout.write(s));
  const err = deps.stderr ?? ((s: string) => void process.stderr.write(s));
  let args: TraceArgs;
  try {
    args = parseTraceArgs(argv, deps.checkNetns ?? defaultCheckNetns);
  } catch (e) {
    if (e instanceof HelpRequested) {
      out(`${TRACE_USAGE}\n`);
      return 0;
    }
    if (!(e instanceof FlagError)) throw e;
    err(`nodenet trace: ${e.message}\n${TRACE_USAGE}\n`);
    return 2;
  }
  if (args.lab !== undefined) return traceLab(args, deps, out, err);
  const live = { runner: deps.runner, ...(args.netns === undefined ? {} : { netns: args.netns }) };
  let rep: TraceReport;
  try {
    const addresses = deps.localAddresses(args.netns).catch((e: unknown) => {
      throw new TraceReadError(`cannot list the namespace's addresses: ${e instanceof Error ? e.message : String(e)}`, { cause: e });
    });
    const [rules, addrs] = await Promise.all([readLiveRules(live, args.mode, args.prefix), addresses]);
    const local = args.fromNode && !addrs.includes(args.packet.sourceIP) ? [...addrs, args.packet.sourceIP] : addrs;
    rep = traceLive(rules, args, local);
  } catch (e) {
    return failed(e, err);
  }
  if (rep.skippedRules?.length) {
    const n = rep.skippedRules.length;
    err(`nodenet trace: warning: ${n} foreign rule(s) not understood were left out of the trace, e.g. ${rep.skippedRules.slice(0, 3).join(' | ')}\n`);
  }
  out(render(args.output, rep, () => formatTrace(rep, args.netnsName)));
  return 0;
}

/** A trace that could not be made: a usage error (exit 2) or the rules unreadable (exit 1), said on stderr. */
function failed(e: unknown, err: (s: string) => void): 1 | 2 {
  err(`nodenet trace: ${e instanceof Error ? e.message : String(e)}\n`);
  return e instanceof TraceUsageError ? 2 : 1;
}

function render(output: TraceArgs['output'], rep: unknown, text: () => string): string {
  return output === 'json' ? `${JSON.stringify(rep, null, 2)}\n` : output === 'yaml' ? toYaml(rep) : text();
}

/** `nodenet trace --lab NAME ...`: across the lab's nodes. */
async function traceLab(args: TraceArgs, deps: TraceDeps, out: (s: string) => void, err: (s: string) => void): Promise<number> {
  if (!deps.readNetwork || !deps.labNodes) throw new Error('traceCommand: --lab needs readNetwork and labNodes');
  let rep: ClusterTrace;
  try {
    const nodes = deps.labNodes(args.lab!);
    if (nodes.length === 0) throw new TraceReadError(`lab ${args.lab} has no nodes`);
    rep = await traceCluster({ runner: deps.runner, readNetwork: deps.readNetwork }, nodes, {
      packet: args.packet, mode: args.mode, prefix: args.prefix, clusterCIDR: nodes.find((n) => n.clusterCIDR)?.clusterCIDR ?? null,
      ...(args.node === undefined ? {} : { node: args.node }),
    });
  } catch (e) {
    return failed(e, err);
  }
  out(render(args.output, rep, () => formatClusterTrace(rep)));
  return 0;
}
