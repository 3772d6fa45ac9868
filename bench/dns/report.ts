/**
 * bench/dns/report: bench:dns's figures, summarised and printed. Pure.
 *
 * Per case and server, dnsperf's rate (completed queries over its run time, its own figure), the p50/p99 of
 * the per-query latencies it prints with -v (nearest rank, bench/lib/stats), its lost queries, and the
 * answers whose rcode was not the case's (a cluster or external name must get NOERROR, a missing Service
 * NXDOMAIN). Latency is under saturation: dnsperf keeps --outstanding queries in flight, so p50 is mostly
 * queueing at the server, as in CoreDNS's own published runs (perf-tests/dns, also dnsperf).
 */
import { ms, table, thousands } from '../lib/report.js';
import type { MachineMeta } from '../lib/machine.js';
import { summarize } from '../lib/stats.js';
import type { DnsBenchArgs, ServerName } from './args.js';
import type { DnsperfRun } from './parse.js';
import { CASES, type CaseName } from './workload.js';

export const SERVER_LABELS: Readonly<Record<ServerName, string>> = { nodenet: 'nodenet dns', dnsmasq: 'dnsmasq' };
export const CASE_LABELS: Readonly<Record<CaseName, string>> = {
  cluster: '(a) cluster names',
  external: '(b) cached external names',
  nxdomain: '(c) NXDOMAIN',
};
export const EXPECTED_RCODE: Readonly<Record<CaseName, string>> = { cluster: 'NOERROR', external: 'NOERROR', nxdomain: 'NXDOMAIN' };

export interface CaseResult {
  readonly case: CaseName;
  readonly server: ServerName;
  readonly qps: number;
  readonly sent: number;
  readonly completed: number;
  readonly lost: number;
  readonly p50Ms: number;
  readonly p99Ms: number;
  readonly maxMs: number;
  readonly avgMs: number;
  readonly rcodes: Readonly<Record<string, number>>;
  /** Completed answers whose rcode was not EXPECTED_RCODE[case]. */
  readonly wrongRcode: number;
  /** Queries the fake upstream got during the measured run (0: all from cache). */
  readonly upstreamQueries: number;
}

export function caseResult(c: CaseName, server: ServerName, run: DnsperfRun, upstreamQueries: number): CaseResult {
  const s = summarize(run.latenciesMs);
  const expected = EXPECTED_RCODE[c];
  const wrong = Object.entries(run.rcodes).reduce((a, [k, v]) => (k === expected ? a : a + v), 0);
  return {
    case: c, server, qps: run.qps, sent: run.sent, completed: run.completed, lost: run.lost,
    p50Ms: s.p50, p99Ms: s.p99, maxMs: s.max, avgMs: run.avgLatencyMs, rcodes: run.rcodes, wrongRcode: wrong, upstreamQueries,
  };
}

export type Change = 'create' | 'delete';

export interface FreshnessResult {
  readonly server: ServerName;
  readonly change: Change;
  /** How the change reached the server: the API write, or the hosts file rewritten and SIGHUP. */
  readonly via: string;
  /** From the change (the API request sent; the file's rewrite begun) to the first poll answer showing it (ms). */
  readonly samplesMs: readonly number[];
  /** Samples that never showed the change within the poll's limit. */
  readonly timeouts: number;
}

/** dnsmasq without a reload: the hosts file rewritten, polled this long, and whether the answer was still the old one. */
export interface NoReloadCheck {
  readonly waitedMs: number;
  readonly stillStale: boolean;
}

export interface Verification {
  readonly server: ServerName;
  readonly checked: number;
  /** Answers equal to the API's ClusterIP (cluster names), the fake upstream's address (external), or NXDOMAIN (missing). */
  readonly agreed: number;
  readonly mismatches: readonly string[];
}

export interface DnsMeta extends MachineMeta {
  readonly dnsperf: string;
  readonly dnsmasq: string;
  readonly commit: string;
  readonly pinning: string;
}

export interface DnsBenchResult {
  readonly meta: DnsMeta;
  readonly args: DnsBenchArgs;
  /** How long creating the Services through the API took (ms), and how many. */
  readonly load: { readonly services: number; readonly wallMs: number };
  readonly cases: readonly CaseResult[];
  readonly freshness: readonly FreshnessResult[];
  readonly noReload: NoReloadCheck | null;
  readonly verification: readonly Verification[];
  readonly notes: readonly string[];
}

/**
 * CoreDNS's published figure (coredns/deployment, kubernetes/Scaling_CoreDNS.md, "CPU and QPS"): CoreDNS 1.2.5
 * with the default Corefile (kubernetes plugin) on Kubernetes 1.12, one instance on a GCE n1-standard-2 node
 * (2 vCPUs, 7.5 GB), measured with kubernetes/perf-tests/dns (dnsperf): 33,669 qps for internal (cluster)
 * names at 2.608 ms average latency; "all QPS loads above pegged both vCPUs (at ~1900m)". Per busy vCPU that
 * is 33,669 / 1.9 ≈ 17,700 qps, the figure one pinned core here is compared with (a GCE vCPU is a
 * hyperthread of a 2018 Xeon; this machine's core is another CPU, so the ratio is indicative only).
 */
export const COREDNS_REFERENCE = {
  url: 'https://github.com/coredns/deployment/blob/master/kubernetes/Scaling_CoreDNS.md',
  version: 'CoreDNS 1.2.5, Kubernetes 1.12, default Corefile',
  hardware: 'GCE n1-standard-2 (2 vCPUs, both pegged at ~1.9 CPUs)',
  internalQps: 33_669,
  internalAvgMs: 2.608,
  busyCpus: 1.9,
} as const;

export function formatCoreDnsReference(cases: readonly CaseResult[]): string {
  const r = COREDNS_REFERENCE;
  const perCpu = r.internalQps / r.busyCpus;
  const ours = cases.find((c) => c.case === 'cluster' && c.server === 'nodenet');
  const line = ours
    ? `nodenet dns here: ${thousands(ours.qps)} qps for cluster names on one core, ${(100 * ours.qps / perCpu).toFixed(0)}% of CoreDNS's per-vCPU figure.`
    : 'nodenet dns was not measured in this run.';
  return `### reference: CoreDNS's published figure

${r.version}, one instance on a ${r.hardware}: ${thousands(r.internalQps)} qps for cluster names ` +
    `at ${r.internalAvgMs} ms average (kubernetes/perf-tests/dns, dnsperf), about ${thousands(perCpu)} qps per busy vCPU (${r.url}). ${line}`;
}

const pct = (xs: readonly number[], p: 50 | 100) => (xs.length ? (p === 50 ? summarize(xs).p50 : summarize(xs).max) : NaN);

/** One case's table: the servers side by side. */
export function formatCase(c: CaseName, rows: readonly CaseResult[], servers: readonly ServerName[]): string {
  const by = (s: ServerName) => rows.find((r) => r.case === c && r.server === s);
  const col = (f: (r: CaseResult) => string) => servers.map((s) => {
    const r = by(s);
    return r ? f(r) : '–';
  });
  const body = [
    ['queries/s', ...col((r) => thousands(r.qps))],
    ['p50 (ms)', ...col((r) => ms(r.p50Ms))],
    ['p99 (ms)', ...col((r) => ms(r.p99Ms))],
    ['lost', ...col((r) => `${thousands(r.lost)} of ${thousands(r.sent)}`)],
    [`not ${EXPECTED_RCODE[c]}`, ...col((r) => thousands(r.wrongRcode))],
  ];
  if (c === 'external') body.push(['upstream queries during the run', ...col((r) => thousands(r.upstreamQueries))]);
  return `### ${CASE_LABELS[c]}\n\n${table(['', ...servers.map((s) => SERVER_LABELS[s])], body)}`;
}

export function formatFreshness(f: readonly FreshnessResult[], noReload: NoReloadCheck | null): string {
  const rows = f.map((x) => [SERVER_LABELS[x.server], x.change, x.via, String(x.samplesMs.length), ms(pct(x.samplesMs, 50)), ms(pct(x.samplesMs, 100)), String(x.timeouts)]);
  let s = `### (d) answer freshness after a Service change\n\n${table(['server', 'change', 'how it reached the server', 'samples', 'p50 (ms)', 'max (ms)', 'timed out'], rows, 3)}`;
  if (noReload) {
    s += `\n\ndnsmasq without a reload: the hosts file rewritten with a new name, polled for ${ms(noReload.waitedMs)} ms: ` +
      `${noReload.stillStale ? 'still NXDOMAIN (it never re-reads --addn-hosts on its own; SIGHUP does)' : 'the new name was answered (unexpected)'}.`;
  }
  return s;
}

/** Whether the machine had more to run than the bench's own two busy processes (a server and dnsperf) before it began. */
const busy = (m: DnsMeta): boolean => (m.loadavgBefore[0] ?? 0) > 2.5;

export function formatReport(r: DnsBenchResult): string {
  const a = r.args;
  const m = r.meta;
  const head = [
    `## bench:dns — ${m.date.slice(0, 10)}`,
    '',
    `${thousands(a.services)} Services in ${a.namespaces} namespaces (created through the API in ${(r.load.wallMs / 1000).toFixed(1)} s), served by ` +
      `${a.servers.map((s) => SERVER_LABELS[s]).join(' and ')}; ${m.pinning}. dnsperf ${m.dnsperf}: -l ${a.durationS} -c ${a.clients} -q ${a.outstanding}, UDP, ` +
      'per-query latencies from -v (p50/p99 nearest rank). Machine: ' +
      `${m.cpus} × ${m.cpuModel}, kernel ${m.kernel}, node ${m.node}, ${m.dnsmasq}, commit ${m.commit}; ` +
      `load average ${m.loadavgBefore[0]?.toFixed(1) ?? '?'} before, ${m.loadavgAfter[0]?.toFixed(1) ?? '?'} after${busy(m) ? ` (other work shared the ${m.cpus} cores: the figures are low and noisy)` : ''}.`,
  ].join('\n');
  const parts = [head, ...CASES.map((c) => formatCase(c, r.cases, a.servers))];
  if (r.freshness.length || r.noReload) parts.push(formatFreshness(r.freshness, r.noReload));
  parts.push(formatCoreDnsReference(r.cases));
  if (r.verification.length) {
    parts.push(`### answers checked\n\n${table(['server', 'names asked', 'as expected', 'first mismatches'], r.verification.map((v) => [SERVER_LABELS[v.server], String(v.checked), String(v.agreed), v.mismatches.slice(0, 3).join('; ') || '–']))}`);
  }
  if (r.notes.length) parts.push(`Notes:\n${r.notes.map((n) => `- ${n}`).join('\n')}`);
  return parts.join('\n\n');
}

/** The chart's data: queries/s and p99 per case per server. */
export interface ChartRow {
  readonly case: string;
  readonly order: number;
  readonly server: string;
  readonly qps: number;
  readonly p99Ms: number;
}

/** The chart's short case names (the axis has room for about 15 characters a case). */
const CHART_LABELS: Readonly<Record<CaseName, string>> = { cluster: '(a) cluster', external: '(b) external', nxdomain: '(c) NXDOMAIN' };

export function chartRows(cases: readonly CaseResult[]): ChartRow[] {
  return cases.map((c) => ({ case: CHART_LABELS[c.case], order: CASES.indexOf(c.case), server: SERVER_LABELS[c.server], qps: c.qps, p99Ms: c.p99Ms }));
}

/** Every figure a full result must have as a positive finite number (the smoke test's check), as name → value. */
export function figures(r: DnsBenchResult): Record<string, number> {
  const out: Record<string, number> = {};
  for (const c of r.cases) {
    out[`${c.case}/${c.server}/qps`] = c.qps;
    out[`${c.case}/${c.server}/p50Ms`] = c.p50Ms;
    out[`${c.case}/${c.server}/p99Ms`] = c.p99Ms;
    out[`${c.case}/${c.server}/completed`] = c.completed;
  }
  for (const f of r.freshness) {
    out[`freshness/${f.server}/${f.change}/p50Ms`] = pct(f.samplesMs, 50);
    out[`freshness/${f.server}/${f.change}/maxMs`] = pct(f.samplesMs, 100);
  }
  return out;
}
