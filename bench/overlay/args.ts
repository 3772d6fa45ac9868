/**
 * bench/overlay/args: the bench's command line, parsed and validated. Pure.
 *
 *   --duration 5            seconds of one iperf3 TCP run (quick: 2)
 *   --repeat 5              iperf3 runs per case, interleaved across the cases (quick: 1); the median is reported
 *   --streams 1             parallel TCP streams per run (iperf3 -P)
 *   --omit 1                seconds iperf3 leaves out at the start of each run (slow start; iperf3 -O)
 *   --pings 200             ICMP echoes per case for the RTT (quick: 50); 0 skips ping
 *   --ping-interval-ms 5    between echoes (ping -i; below 200 ms needs root, which the bench has)
 *   --rr 2000               TCP 1-byte request/response round trips per case (quick: 500); 0 skips them
 *   --cases same-node,cross-node,underlay,bare-vxlan,bare-pods,bare-pods-conntrack,bare-routed,bare-routed-conntrack,cross-node-hostgw,cross-node-bgp
 *                           which paths to measure (the share needs cross-node and underlay; bare.ts says what the bare ones are;
 *                           the last two add a pair of host-gw nodes, a pair of bgp nodes)
 *   --quick                 smaller figures (well under a minute of measuring); any flag above overrides them
 *   --out FILE              where the results JSON goes (default bench/overlay/results/<date>.json)
 */
import { FlagError } from '../../agent/src/cli/flags.js';
import { benchFlags, int, list } from '../lib/args.js';

/**
 * The paths: nodenet's (a) over cbr0 on one node and (b) across nodes over nodenet.1, (c) node to node on
 * eth0 (the reference), and the kernel's own, built by hand without nodenet (bare.ts): (d) host to host over
 * VXLAN, (e) pod to pod over bridge and VXLAN with no netfilter, (f) the same with conntrack and NAT hooks, and the
 * routed path (host-gw's, BGP's) with no tunnel: (g) pod to pod over bridge and a route via the peer, (h) the same
 * with conntrack; then nodenet's routed backends across nodes: (i) host-gw (a route per peer, proto 78) and (j) BGP
 * (BIRD's routes, proto bird), each on a pair of nodes of its own in the same lab.
 */
export const CASES = ['same-node', 'cross-node', 'underlay', 'bare-vxlan', 'bare-pods', 'bare-pods-conntrack', 'bare-routed', 'bare-routed-conntrack', 'cross-node-hostgw', 'cross-node-bgp'] as const;
/** The cases on the bare hosts (bare.ts). */
export const BARE_CASES: readonly CaseName[] = ['bare-vxlan', 'bare-pods', 'bare-pods-conntrack', 'bare-routed', 'bare-routed-conntrack'];
export type CaseName = (typeof CASES)[number];
/** nodenet's routed backends across nodes, each case on its own pair of nodes: the backend they run. */
export const ROUTED_CASES: Readonly<Partial<Record<CaseName, 'host-gw' | 'bgp'>>> = { 'cross-node-hostgw': 'host-gw', 'cross-node-bgp': 'bgp' };

export interface BenchArgs {
  readonly durationS: number;
  readonly repeat: number;
  readonly streams: number;
  readonly omitS: number;
  /** 0: no ping. */
  readonly pings: number;
  readonly pingIntervalMs: number;
  /** 0: no TCP request/response. */
  readonly rr: number;
  readonly cases: readonly CaseName[];
  readonly quick: boolean;
  /** null: the dated default (defaultOut). */
  readonly out: string | null;
}

export const USAGE = 'usage: npm run bench:overlay -- [--quick] [--duration S] [--repeat N] [--streams P] [--omit S] [--pings N] ' +
  `[--ping-interval-ms MS] [--rr N] [--cases ${CASES.join(',')}] [--out FILE]`;

const FULL = { duration: 5, repeat: 5, pings: 200, rr: 2000 };
const QUICK = { duration: 2, repeat: 1, pings: 50, rr: 500 };
const STRING_FLAGS = ['duration', 'repeat', 'streams', 'omit', 'pings', 'ping-interval-ms', 'rr', 'cases', 'out'];

/** Parses argv (without node and the script). @throws FlagError naming the flag */
export function parseBenchArgs(argv: readonly string[]): BenchArgs {
  const { flags: f, quick } = benchFlags(argv, STRING_FLAGS, USAGE);
  const d = quick ? QUICK : FULL;
  const get = (k: string, dflt: number): string => f.get(k) ?? String(dflt);
  const out = f.get('out') ?? null;
  if (out === '') throw new FlagError('--out needs a file name');
  const cases = list('cases', f.get('cases') ?? CASES.join(',')).map((c) => {
    if (!(CASES as readonly string[]).includes(c)) throw new FlagError(`--cases: unknown case ${JSON.stringify(c)} (one of ${CASES.join(', ')})`);
    return c as CaseName;
  });
  const durationS = int('duration', get('duration', d.duration), 1, 600);
  const omitS = int('omit', get('omit', 1), 0, 60);
  return {
    durationS,
    repeat: int('repeat', get('repeat', d.repeat), 1, 50),
    streams: int('streams', get('streams', 1), 1, 64),
    omitS,
    pings: int('pings', get('pings', d.pings), 0, 100_000),
    pingIntervalMs: int('ping-interval-ms', get('ping-interval-ms', 5), 1, 10_000),
    rr: int('rr', get('rr', d.rr), 0, 1_000_000),
    // The bench's own order, whatever order the flag gave: the table reads a, b, c, ... j.
    cases: CASES.filter((c) => cases.includes(c)),
    quick,
    out,
  };
}

/** The dated default results file, as the other benches name theirs: bench/overlay/results/YYYY-MM-DD.json (UTC). */
export function defaultOut(now: Date): string {
  return `bench/overlay/results/${now.toISOString().slice(0, 10)}.json`;
}
