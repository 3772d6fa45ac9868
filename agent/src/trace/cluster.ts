/**
 * trace/cluster: `nodenet trace` across the nodes of a cluster (a lab). The
 * first packet of a new connection is traced through the Service rules of
 * the node it starts on (trace/report.ts: DNAT to which endpoint, the
 * masquerade mark), then, for each endpoint it may go to, along its path
 * (trace/path.ts): the route, the local bridge or the VXLAN device with its
 * neighbour and FDB entries and the remote underlay IP, or (host-gw, BGP)
 * the route via the remote node's underlay IP, and the remote node's bridge
 * to the pod, with the masquerade decision at each hop.
 *
 * Reads only: every node's links, addresses, routes, and the VXLAN device's
 * neighbour and FDB entries (over netlink, in the node's namespace), and the
 * source node's Service rules.
 */
import type { Runner } from '../exec/runner.js';
import { parseIPNet } from '../../../lib/net/ip.js';
import type { NftTracePacket } from './nft-tracer.js';
import { readLiveRules, TraceUsageError, type TraceMode } from './live.js';
import { formatPath, lookupRoute, tracePath, type NodeNetwork, type PathResult } from './path.js';
import { formatTrace, traceLive, type TraceReport } from './report.js';

export interface ClusterNode {
  readonly name: string;
  /** The node's network namespace (a path). */
  readonly netns: string;
}

export interface ClusterTraceDeps {
  readonly runner: Runner;
  /** A node's network as netlink lists it (compose reads it in the namespace). */
  readonly readNetwork: (name: string, netns: string) => Promise<NodeNetwork>;
}

export interface ClusterTraceArgs {
  readonly packet: NftTracePacket;
  readonly mode: 'auto' | TraceMode;
  readonly prefix: string;
  readonly clusterCIDR: string | null;
  /** The node the packet starts on; found from the source address when absent. */
  readonly node?: string;
  /** Pod IP → "namespace/name". */
  readonly pods?: ReadonlyMap<string, string>;
}

export interface ClusterTrace {
  readonly node: string;
  readonly service: TraceReport;
  /** One path per endpoint the Service rules may choose (or the destination itself when not redirected). */
  readonly paths: readonly { readonly to: string; readonly path: PathResult }[];
}

/** Which node a source address belongs to: one that owns it, else one whose pod bridge routes it. Pure. */
export function sourceNode(nets: readonly NodeNetwork[], source: string): NodeNetwork | null {
  const owner = nets.find((n) => n.addresses.some((a) => parseIPNet(a.address).ip === source));
  if (owner) return owner;
  return nets.find((n) => {
    const r = lookupRoute(n.routes, source);
    const link = r && n.links.find((l) => l.index === r.ifIndex || l.name === r.dev);
    return !!r && !r.gw && link?.kind === 'bridge';
  }) ?? null;
}

export async function traceCluster(deps: ClusterTraceDeps, nodes: readonly ClusterNode[], args: ClusterTraceArgs): Promise<ClusterTrace> {
  const nets = await Promise.all(nodes.map((n) => deps.readNetwork(n.name, n.netns)));
  const pk = args.packet;
  let start: NodeNetwork | null;
  if (args.node !== undefined) {
    start = nets.find((n) => n.name === args.node) ?? null;
    if (!start) throw new TraceUsageError(`--node ${JSON.stringify(args.node)}: no such node (${nodes.map((n) => n.name).join(', ')})`);
  } else {
    start = sourceNode(nets, pk.sourceIP);
    if (!start) throw new TraceUsageError(`no node owns ${pk.sourceIP} or has a pod on it: name the node the packet starts on with --node`);
  }
  const netns = nodes.find((n) => n.name === start.name)!.netns;
  const rules = await readLiveRules({ runner: deps.runner, netns }, args.mode, args.prefix);
  const local = start.addresses.map((a) => parseIPNet(a.address).ip);
  const service = traceLive(rules, { packet: pk, netns }, local);
  const targets = service.endpoints.length ? service.endpoints.map((e) => e.split(':')[0]!) : service.destination === 'ACCEPT' ? [pk.destIP] : [];
  const paths = targets.map((to) => ({
    to,
    path: tracePath(nets, { node: start.name, source: pk.sourceIP, destination: to, serviceMasquerade: service.masquerade }, { clusterCIDR: args.clusterCIDR, ...(args.pods ? { pods: args.pods } : {}) }),
  }));
  return { node: start.name, service, paths };
}

/** The report for people: the Service rules' part, then each path. Pure. */
export function formatClusterTrace(t: ClusterTrace): string {
  const parts = [formatTrace(t.service, `node ${t.node}`)];
  if (t.paths.length === 0) parts.push('path: none (the packet does not leave the Service rules)\n');
  for (const p of t.paths) parts.push(`${t.paths.length > 1 ? `to ${p.to}:\n` : ''}${formatPath(p.path)}`);
  return parts.join('');
}
