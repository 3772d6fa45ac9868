/**
 * bench/overlay/report: the results of one run, their summaries, and the
 * Markdown the bench prints. Pure.
 *
 * Throughput is the median of the repeated iperf3 runs (nearest-rank, so a
 * median is a run that happened), with the lowest and highest beside it;
 * latency is the p50 and p99 of every sample (bench/lib/stats).
 *
 * The reference: flannel users typically see 80–95% of the underlay's TCP
 * throughput across nodes over VXLAN (the encapsulation: 50 bytes per
 * packet, a second pass through the stack, UDP checksums); nodenet's goal
 * is ≥ 90%. The share is case (b) / case (c), both medians, measured in the
 * same run on the same lab, so the machine's speed at the time cancels out
 * as far as it can.
 *
 * Those users' figures come from machines whose NIC segments and whose wire
 * is the limit; here every hop is CPU work on the same cores as the
 * reference. The bare cases (bare.ts) put a number on what that allows: the
 * same data path built by hand without nodenet, (e) with no netfilter at all
 * (the most any VXLAN pod overlay can reach on this machine) and (f) with
 * the conntrack and NAT hooks every Kubernetes node with Services has. The
 * report gives (b) against both, so nodenet's own cost and the machine's
 * ceiling read apart.
 *
 * The routed backends (issue 29) are measured in the same run: (i) host-gw
 * and (j) BGP, pods on a pair of nodes each, against the routed path built
 * by hand, (g) with no netfilter and (h) with conntrack (the fair ceiling:
 * their nodes run the same hooks). The targets: each ≥ 95% of its bare
 * ceiling, each ≥ 5 points of the underlay above VXLAN's (b) in the same
 * run, and BGP's figure the same as host-gw's (the same data path: a
 * difference beyond the runs' spread is a finding).
 */
import type { MachineMeta } from '../lib/machine.js';
import { table, thousands } from '../lib/report.js';
import { median, summarize } from '../lib/stats.js';
import { BARE_CASES, ROUTED_CASES, type BenchArgs, type CaseName } from './args.js';
import type { IperfRun } from './parse.js';

export const FLANNEL_SHARE_RANGE: readonly [number, number] = [80, 95];
export const GOAL_SHARE_PCT = 90;
/** Issue 29: host-gw and BGP reach ≥ 95% of their bare ceiling, and beat VXLAN by ≥ 5 points of the underlay. */
export const ROUTED_CEILING_GOAL_PCT = 95;
export const ROUTED_LEAD_GOAL_POINTS = 5;

export interface ThroughputSummary {
  readonly runs: readonly IperfRun[];
  /** Received Gbit/s. */
  readonly medianGbps: number;
  readonly minGbps: number;
  readonly maxGbps: number;
  /** Medians over the runs; null when iperf3 gave none. */
  readonly retransmits: number | null;
  readonly cpuSenderPct: number | null;
  readonly cpuReceiverPct: number | null;
  /**
   * CPU-seconds per GB received: iperf3's own CPU at both ends (getrusage, which here includes the
   * softirq packet work the kernel runs in their context: veth hands packets on in the sender's),
   * over the received rate; median over the runs. Less sensitive to what else the machine runs than
   * the throughput itself.
   */
  readonly cpuSecondsPerGB: number | null;
  /** The whole machine's busy CPUs over each run (/proc/stat: iperf3, the kernel's packet work, everyone else), median; null when not measured. */
  readonly busyCpus: number | null;
}

export interface LatencySummary {
  readonly n: number;
  /** Sent but not answered (ping only; 0 for TCP). */
  readonly lost: number;
  readonly minUs: number;
  readonly p50Us: number;
  readonly p99Us: number;
  readonly maxUs: number;
}

export interface CaseResult {
  readonly name: CaseName;
  readonly fromIP: string;
  readonly toIP: string;
  /** The sender's interface MTU. */
  readonly mtu: number | null;
  readonly throughput: ThroughputSummary | null;
  readonly ping: LatencySummary | null;
  readonly rr: LatencySummary | null;
  readonly errors: readonly string[];
}

export interface Mtus {
  /** The nodes' eth0. */
  readonly underlay: number | null;
  readonly vxlan: number | null;
  readonly bridge: number | null;
  readonly pod: number | null;
}

export interface Meta extends MachineMeta {
  readonly iperf3: string;
  readonly ping: string;
  readonly commit: string;
}

export interface BenchResult {
  readonly meta: Meta;
  readonly args: BenchArgs;
  readonly mtus: Mtus;
  readonly cases: readonly CaseResult[];
  readonly notes: readonly string[];
  readonly totalWallMs: number;
}

const medianOrNull = (xs: readonly (number | null)[]): number | null => {
  const v = xs.filter((x): x is number => x !== null);
  return v.length ? median(v) : null;
};

/** @throws RangeError for no runs (a case with none has no summary: null) */
export function summarizeThroughput(runs: readonly IperfRun[], busyCpus: readonly number[] = []): ThroughputSummary {
  if (runs.length === 0) throw new RangeError('summarizeThroughput: no runs');
  const g = runs.map((r) => r.receivedBps / 1e9);
  return {
    runs,
    medianGbps: median(g),
    minGbps: Math.min(...g),
    maxGbps: Math.max(...g),
    retransmits: medianOrNull(runs.map((r) => r.retransmits)),
    cpuSenderPct: medianOrNull(runs.map((r) => r.cpuSenderPct)),
    cpuReceiverPct: medianOrNull(runs.map((r) => r.cpuReceiverPct)),
    busyCpus: medianOrNull(busyCpus),
    cpuSecondsPerGB: medianOrNull(runs.map(cpuSecondsPerGB)),
  };
}

/** One run's CPU-seconds per GB received (both ends' iperf3 CPU); null without CPU figures. */
export function cpuSecondsPerGB(r: IperfRun): number | null {
  if (r.cpuSenderPct === null || r.cpuReceiverPct === null || !(r.receivedBps > 0)) return null;
  return (r.cpuSenderPct + r.cpuReceiverPct) / 100 / (r.receivedBps / 8e9);
}

/** Samples in µs; `sent` the number of probes (lost = sent − samples). */
export function summarizeLatency(samplesUs: readonly number[], sent = samplesUs.length): LatencySummary {
  const s = summarize(samplesUs);
  return { n: s.n, lost: Math.max(0, sent - s.n), minUs: s.min, p50Us: s.p50, p99Us: s.p99, maxUs: s.max };
}

/** Case `name`'s median throughput as a % of case `of`'s; null without both. */
export function shareOf(cases: readonly CaseResult[], name: CaseName, of: CaseName): number | null {
  const c = cases.find((x) => x.name === of)?.throughput;
  const x = cases.find((y) => y.name === name)?.throughput;
  if (!c || !x || !(c.medianGbps > 0)) return null;
  return (100 * x.medianGbps) / c.medianGbps;
}

/** The case's median throughput as a % of the underlay's (case c); null without both. */
export function shareOfUnderlay(cases: readonly CaseResult[], name: CaseName): number | null {
  return shareOf(cases, name, 'underlay');
}

/** The underlay's CPU cost per GB as a % of the case's: the share the case would get with the same CPU; null without both. */
export function perCpuShareOfUnderlay(cases: readonly CaseResult[], name: CaseName): number | null {
  const c = cases.find((x) => x.name === 'underlay')?.throughput?.cpuSecondsPerGB ?? null;
  const x = cases.find((y) => y.name === name)?.throughput?.cpuSecondsPerGB ?? null;
  if (c === null || x === null || !(x > 0)) return null;
  return (100 * c) / x;
}

export const CASE_LABELS: Readonly<Record<CaseName, { label: string; path: string }>> = {
  'same-node': { label: '(a) pod → pod, one node', path: 'pod eth0 → veth → cbr0 → veth → pod' },
  'cross-node': { label: '(b) pod → pod, across nodes', path: 'pod → cbr0 → nodenet.1 (VXLAN) → eth0 → underlay → eth0 → nodenet.1 → cbr0 → pod' },
  underlay: { label: '(c) node → node, underlay', path: 'eth0 → veth → ul0 bridge → veth → eth0 (the reference)' },
  'bare-vxlan': { label: '(d) host → host, bare VXLAN', path: 'vx0 (VXLAN) → eth0 → underlay → eth0 → vx0; by hand, no agent, no netfilter' },
  'bare-pods': { label: '(e) pod → pod, bare path', path: 'pod → br0 → vx0 (VXLAN) → underlay → vx0 → br0 → pod; by hand, no agent, no netfilter (the ceiling)' },
  'bare-pods-conntrack': { label: '(f) pod → pod, bare path + conntrack', path: 'as (e), with conntrack and NAT hooks (a masquerade rule), as on every node with Services' },
  'bare-routed': { label: '(g) pod → pod, bare routed path', path: 'pod → br0 → route via the peer → eth0 → underlay → eth0 → br0 → pod; by hand, no tunnel, no netfilter (the routed ceiling)' },
  'bare-routed-conntrack': { label: '(h) pod → pod, bare routed path + conntrack', path: 'as (g), with conntrack and NAT hooks, as host-gw or BGP on a node with Services' },
  'cross-node-hostgw': { label: '(i) pod → pod, across nodes, host-gw', path: 'pod → cbr0 → route via the peer node (proto 78) → eth0 → underlay → eth0 → cbr0 → pod; no tunnel' },
  'cross-node-bgp': { label: '(j) pod → pod, across nodes, BGP', path: 'pod → cbr0 → BIRD\'s route via the peer node (proto bird) → eth0 → underlay → eth0 → cbr0 → pod; no tunnel' },
};

/** The letter of a case's label: "(b)". */
const letter = (name: CaseName): string => CASE_LABELS[name].label.split(' ')[0]!;

// ---- numbers ----

/** Gbit/s: two decimals below 10, one above. */
export function gbps(x: number): string {
  if (!Number.isFinite(x)) return '–';
  return x < 10 ? x.toFixed(2) : x.toFixed(1);
}

/** µs: one decimal below 100, whole above (with separators). */
export function us(x: number): string {
  if (!Number.isFinite(x)) return '–';
  return x < 100 ? x.toFixed(1) : thousands(x);
}

export function pct(x: number | null): string {
  return x === null || !Number.isFinite(x) ? '–' : `${x.toFixed(0)}%`;
}

const pair = (l: LatencySummary | null) => (l && l.n > 0 ? `${us(l.p50Us)} / ${us(l.p99Us)}${l.lost ? ` (${l.lost} lost)` : ''}` : '–');

/**
 * What the bare cases say about case (b): the machine's ceiling for any VXLAN pod overlay (e / c), the
 * VXLAN device alone (d / c), the kernel work of a node with Services (f / c), and (b) against (f) and (e).
 * null when the run had neither (e) nor (f) beside (b).
 */
export function ceilingLine(cases: readonly CaseResult[]): string | null {
  const s = (n: CaseName, of: CaseName = 'underlay') => shareOf(cases, n, of);
  const e = s('bare-pods');
  const f = s('bare-pods-conntrack');
  const d = s('bare-vxlan');
  const bf = s('cross-node', 'bare-pods-conntrack');
  const be = s('cross-node', 'bare-pods');
  if (bf === null && be === null) return null;
  const parts: string[] = [];
  if (e !== null) parts.push(`with no agent and no netfilter, (e) ${pct(e)} of the underlay${d !== null ? ` (the VXLAN device alone, host to host: (d) ${pct(d)})` : ''}`);
  if (f !== null) parts.push(`with the conntrack and NAT hooks every node with Services runs, (f) ${pct(f)}`);
  const against = [bf !== null ? `${pct(bf)} of (f)` : null, be !== null ? `${pct(be)} of (e)` : null].filter((x) => x !== null).join(' and ');
  let line = `The kernel's ceiling on this lab: the same data path built by hand reaches, ${parts.join(', and ')}. nodenet's overlay (b) is ${against}.`;
  if (e !== null && e < GOAL_SHARE_PCT) line += ` No VXLAN pod overlay can pass (e) on this machine, so the goal of ≥ ${GOAL_SHARE_PCT}% is above what this lab allows.`;
  const g = s('bare-routed');
  const h = s('bare-routed-conntrack');
  if (g !== null || h !== null) {
    line += ` Without a tunnel (the routed path of host-gw and BGP, by hand): ${[g !== null ? `(g) ${pct(g)} with no netfilter` : null, h !== null ? `(h) ${pct(h)} with conntrack` : null].filter((x) => x !== null).join(', ')}` +
      `${h !== null && f !== null ? `, ${(h - f).toFixed(0)} points above the VXLAN path's (f)` : ''}.`;
  }
  return line;
}

/**
 * The routed backends against issue 29's targets, a line each: (i) and (j) against their bare ceiling ((h), with
 * conntrack, the fair one; (g) beside it), both against VXLAN's (b) in points of the underlay, and BGP against
 * host-gw (the same data path: their runs' ranges overlap, or the difference is a finding). Empty without (i) or (j).
 */
export function routedLines(cases: readonly CaseResult[]): string[] {
  const s = (n: CaseName, of: CaseName = 'underlay') => shareOf(cases, n, of);
  const routed = (['cross-node-hostgw', 'cross-node-bgp'] as const).filter((n) => cases.some((c) => c.name === n && c.throughput));
  if (routed.length === 0) return [];
  const name = { 'cross-node-hostgw': 'host-gw', 'cross-node-bgp': 'BGP' } as const;
  const lines: string[] = [];
  for (const n of routed) {
    const h = s(n, 'bare-routed-conntrack');
    const g = s(n, 'bare-routed');
    const u = s(n);
    const fair = h ?? g;
    const against = [h !== null ? `${pct(h)} of (h), the routed path by hand with conntrack (the fair ceiling: nodenet's nodes run the same hooks)` : null, g !== null ? `${pct(g)} of (g), with no netfilter` : null].filter((x) => x !== null);
    const target = fair === null
      ? `its bare ceiling not measured (needs (h) or (g)), so the target of ≥ ${ROUTED_CEILING_GOAL_PCT}% of it cannot be checked`
      : `${fair >= ROUTED_CEILING_GOAL_PCT ? 'meets' : 'below'} the target of ≥ ${ROUTED_CEILING_GOAL_PCT}% of its bare ceiling (${h !== null ? '(h)' : '(g), (h) not measured'})`;
    lines.push(`**${name[n]} across nodes ${letter(n)}: ${pct(u)} of the underlay${against.length ? `, ${against.join(' and ')}` : ''}: ${target}.**`);
  }
  const b = s('cross-node');
  if (b !== null) {
    const leads = routed.map((n) => ({ n, d: s(n)! - b })).filter((x) => Number.isFinite(x.d));
    const met = leads.filter((x) => x.d >= ROUTED_LEAD_GOAL_POINTS).map((x) => name[x.n]);
    const missed = leads.filter((x) => x.d < ROUTED_LEAD_GOAL_POINTS).map((x) => name[x.n]);
    const verdictText = missed.length === 0 ? `met by ${met.length > 1 ? 'both' : met[0]}` : met.length === 0 ? `not met${leads.length > 1 ? ' by either' : ''}` : `met by ${met.join(', ')}, not by ${missed.join(', ')}`;
    lines.push(`Routed against VXLAN in the same run (points of the underlay over (b)'s ${pct(b)}): ${leads.map((x) => `${name[x.n]} ${letter(x.n)} ${x.d >= 0 ? '+' : '−'}${Math.abs(x.d).toFixed(0)}`).join(', ')}; ` +
      `the target of ≥ ${ROUTED_LEAD_GOAL_POINTS} points ${verdictText}.`);
  } else {
    lines.push(`Routed against VXLAN: not measured (needs the cross-node case (b)).`);
  }
  const hg = cases.find((c) => c.name === 'cross-node-hostgw')?.throughput;
  const bgp = cases.find((c) => c.name === 'cross-node-bgp')?.throughput;
  if (hg && bgp && Math.min(hg.runs.length, bgp.runs.length) < 3) {
    lines.push(`BGP against host-gw (the same data path: a route via the peer, no tunnel): (j) is ${pct(shareOf(cases, 'cross-node-bgp', 'cross-node-hostgw'))} of (i), ` +
      `from ${hg.runs.length} and ${bgp.runs.length} run(s): too few to tell a difference from the run-to-run spread (--repeat 3 or more).`);
  } else if (hg && bgp) {
    const d = (s('cross-node-bgp') ?? NaN) - (s('cross-node-hostgw') ?? NaN);
    const overlap = bgp.minGbps <= hg.maxGbps && hg.minGbps <= bgp.maxGbps;
    const diff = Number.isFinite(d) ? `${d >= 0 ? '+' : '−'}${Math.abs(d).toFixed(0)} points of the underlay` : `${pct(shareOf(cases, 'cross-node-bgp', 'cross-node-hostgw'))} of host-gw's`;
    lines.push(`BGP against host-gw (the same data path: a route via the peer, no tunnel): (j) is ${pct(shareOf(cases, 'cross-node-bgp', 'cross-node-hostgw'))} of (i), ${diff}; ` +
      `their runs' ranges (i) ${gbps(hg.minGbps)}–${gbps(hg.maxGbps)} and (j) ${gbps(bgp.minGbps)}–${gbps(bgp.maxGbps)} Gbit/s ` +
      (overlap ? 'overlap: no difference beyond the run-to-run spread, as the same path should give.' : 'do not overlap: a difference beyond the run-to-run spread, a finding (the kernel forwards both alike; look at the routes\' attributes, BIRD\'s CPU, the run order).'));
  }
  return lines;
}

/** The verdict on the share against the goal and flannel's range. */
export function verdict(share: number | null): string {
  if (share === null) return 'not measured (needs both the cross-node and the underlay case)';
  const [lo, hi] = FLANNEL_SHARE_RANGE;
  const where = share < lo ? `below flannel's typical ${lo}–${hi}%` : share > hi ? `above flannel's typical ${lo}–${hi}%` : `inside flannel's typical ${lo}–${hi}%`;
  return `${pct(share)}: ${share >= GOAL_SHARE_PCT ? `meets nodenet's goal of ≥ ${GOAL_SHARE_PCT}%` : `below nodenet's goal of ≥ ${GOAL_SHARE_PCT}%`}, ${where}`;
}

// ---- the report ----

export function formatCases(cases: readonly CaseResult[]): string {
  const head = ['case', 'path', 'MTU', 'TCP Gbit/s, median (min–max)', 'retransmits', 'iperf3 CPU send / recv', 'CPU-s per GB', 'ping RTT p50 / p99 µs', 'TCP RR p50 / p99 µs', 'of the underlay'];
  const rows = cases.map((c) => {
    const t = c.throughput;
    const share = c.name === 'underlay' ? (t ? '100% (reference)' : '–') : pct(shareOfUnderlay(cases, c.name));
    return [
      CASE_LABELS[c.name].label,
      CASE_LABELS[c.name].path,
      c.mtu === null ? '–' : String(c.mtu),
      t ? `${gbps(t.medianGbps)} (${gbps(t.minGbps)}–${gbps(t.maxGbps)})` : '–',
      t?.retransmits === null || t === null ? '–' : thousands(t.retransmits),
      t && t.cpuSenderPct !== null && t.cpuReceiverPct !== null ? `${t.cpuSenderPct.toFixed(0)}% / ${t.cpuReceiverPct.toFixed(0)}%` : '–',
      t?.cpuSecondsPerGB == null ? '–' : t.cpuSecondsPerGB.toFixed(2),
      pair(c.ping),
      pair(c.rr),
      share,
    ];
  });
  return table(head, rows, 2);
}

export function formatReport(r: BenchResult): string {
  const a = r.args;
  const m = r.meta;
  const share = shareOfUnderlay(r.cases, 'cross-node');
  const b = r.cases.find((c) => c.name === 'cross-node');
  const c = r.cases.find((x) => x.name === 'underlay');
  const lines: string[] = [];
  const routed = r.cases.filter((x) => ROUTED_CASES[x.name] !== undefined).map((x) => ROUTED_CASES[x.name]!);
  lines.push(routed.length ? `## Throughput and latency across nodes: VXLAN, ${routed.map((b) => (b === 'bgp' ? 'BGP' : b)).join(' and ')}` : '## Throughput and latency over the VXLAN overlay');
  lines.push('');
  const bare = r.cases.some((x) => BARE_CASES.includes(x.name));
  const pairs = routed.map((b, i) => `n${3 + 2 * i}/n${4 + 2 * i} with backend ${b}${b === 'bgp' ? ' (BIRD 2, iBGP)' : ''}`);
  const nodes = routed.length
    ? `${['Two', 'Four', 'Six'][routed.length]} virtual nodes in one cluster (network namespaces on one underlay bridge): n1/n2 with backend vxlan, ${pairs.join(', ')}; ` +
      'each pair sees the others\' Nodes as another backend\'s (a Warning Event, no route); no proxy; pods through the real CNI shim'
    : 'Two virtual nodes (network namespaces on one underlay bridge), agents with overlay vxlan, pods through the real CNI shim';
  lines.push(nodes +
    `${bare ? '; beside them on the same underlay, bare hosts with the same data path set up by hand (bench/overlay/bare.ts)' : ''}. ` +
    `iperf3 TCP: ${a.repeat} run${a.repeat > 1 ? 's' : ''} of ${a.durationS} s per case (first ${a.omitS} s left out, ${a.streams} stream${a.streams > 1 ? 's' : ''}), interleaved across the cases. ` +
    (a.pings ? `ping: ${thousands(a.pings)} echoes every ${a.pingIntervalMs} ms. ` : '') +
    (a.rr ? `TCP RR: ${thousands(a.rr)} 1-byte round trips, Node at both ends.` : ''));
  lines.push('');
  lines.push(formatCases(r.cases));
  lines.push('');
  lines.push(`**Overlay share of the underlay (b / c): ${verdict(share)}.** Reference: flannel users typically see ${FLANNEL_SHARE_RANGE[0]}–${FLANNEL_SHARE_RANGE[1]}% of the underlay over VXLAN; nodenet's goal here is ≥ ${GOAL_SHARE_PCT}%.`);
  const ceiling = ceilingLine(r.cases);
  if (ceiling !== null) lines.push(ceiling);
  lines.push(...routedLines(r.cases));
  const perCpu = perCpuShareOfUnderlay(r.cases, 'cross-node');
  if (perCpu !== null) {
    lines.push(`Per CPU (the underlay's CPU-seconds per GB over the overlay's, iperf3's own CPU at both ends, which includes the kernel's packet work in their context): ${pct(perCpu)}. ` +
      'Every node of this lab shares the same cores, so both ends\' encapsulation, bridges and netfilter hooks are paid from one CPU budget.');
  }
  if (b?.ping && c?.ping && b.ping.n && c.ping.n) {
    lines.push(`Latency the overlay adds (b − c, ping p50): ${us(b.ping.p50Us - c.ping.p50Us)} µs${b.rr && c.rr && b.rr.n && c.rr.n ? `; TCP RR p50: ${us(b.rr.p50Us - c.rr.p50Us)} µs` : ''}.`);
  }
  const routedLat = r.cases.filter((x) => ROUTED_CASES[x.name] !== undefined && x.ping?.n && c?.ping?.n);
  if (routedLat.length) lines.push(`Latency the routed backends add (ping p50 over (c)): ${routedLat.map((x) => `${letter(x.name)} ${us(x.ping!.p50Us - c!.ping!.p50Us)} µs`).join(', ')}.`);
  const mt = r.mtus;
  const mtu = (x: number | null) => (x === null ? '–' : String(x));
  const busy = r.cases.filter((x) => x.throughput?.busyCpus != null).map((x) => `${letter(x.name)} ${x.throughput!.busyCpus!.toFixed(2)}`);
  if (busy.length) lines.push(`The machine's busy CPUs during the throughput runs (median per run, of ${m.cpus}; iperf3 at both ends, the kernel's packet work and every other process): ${busy.join(', ')}.`);
  lines.push(`MTUs: underlay (nodes' eth0) ${mtu(mt.underlay)}, nodenet.1 ${mtu(mt.vxlan)}, cbr0 ${mtu(mt.bridge)}, pods' eth0 ${mtu(mt.pod)}${routed.length ? ' (VXLAN\'s; the routed backends\' pods: the table\'s MTU column)' : ''}.`);
  lines.push('');
  lines.push(`Machine: kernel ${m.kernel}, ${m.cpus} cores (${m.cpuModel}), ${thousands(m.memTotalMiB)} MiB, Node ${m.node}, ${m.iperf3}, ${m.ping}; commit ${m.commit}; ` +
    `load average ${m.loadavgBefore.map((x) => x.toFixed(2)).join(' ')} before, ${m.loadavgAfter.map((x) => x.toFixed(2)).join(' ')} after; ${(r.totalWallMs / 1000).toFixed(0)} s in all.`);
  const errs = r.cases.flatMap((x) => x.errors.map((e) => `${CASE_LABELS[x.name].label}: ${e}`));
  if (errs.length || r.notes.length) {
    lines.push('');
    for (const e of [...errs, ...r.notes]) lines.push(`- ${e}`);
  }
  return `${lines.join('\n')}\n`;
}

/** One bar of the chart: a case's share of the underlay. */
export interface ShareBar {
  readonly case: string;
  readonly order: number;
  /** nodenet's, the bare ceiling's, or the reference. */
  readonly kind: 'nodenet' | 'by hand' | 'reference';
  readonly sharePct: number;
}

/** The chart's bars: every measured case's median throughput as a share of the underlay's, in the table's order. */
export function shareBars(cases: readonly CaseResult[]): ShareBar[] {
  const out: ShareBar[] = [];
  cases.forEach((c, i) => {
    const share = c.name === 'underlay' ? (c.throughput ? 100 : null) : shareOfUnderlay(cases, c.name);
    if (share === null) return;
    out.push({ case: CASE_LABELS[c.name].label, order: i, kind: c.name === 'underlay' ? 'reference' : BARE_CASES.includes(c.name) ? 'by hand' : 'nodenet', sharePct: Math.round(share * 10) / 10 });
  });
  return out;
}
