/**
 * bench/apiserver/report: the results of one run, the tables it prints and
 * the comparison with the published references. Pure.
 *
 * References (what each is, so the ratio is read right):
 * - SIG-scalability's API call latency SLOs (kubernetes/community,
 *   sig-scalability/slos/slos.md): mutating API calls for single objects,
 *   p99 ≤ 1 s per (resource, verb); non-streaming LIST of a namespace or
 *   the cluster, p99 ≤ 30 s. Compared with our p99 (a create) and our
 *   slowest full list.
 * - vcluster's published load test (vcluster.com, "Load Tests"): k3s with
 *   SQLite, the intensive case, 5,000 Secrets at 200 qps, 1.4 s average
 *   response time. Compared with our mean at the same offered rate (the
 *   paced case), and with the mean of 16 closed-loop clients.
 * A ratio "N× inside" is reference / nodenet: how many times over nodenet
 * would have to slow down to reach the reference.
 */
import type { MachineMeta } from '../lib/machine.js';
import { formatReferences, mib, ms, ratio, table, thousands, type ReferenceRow } from '../lib/report.js';
import type { Summary } from '../lib/stats.js';

export interface CreateCase {
  /** 'closed': N clients back to back; 'paced': an open loop at a fixed rate; 'load': filling the store for the lists. */
  readonly kind: 'closed' | 'paced' | 'load';
  readonly resource: 'Service' | 'EndpointSlice';
  readonly concurrency: number | null;
  readonly qps: number | null;
  readonly requests: number;
  readonly errors: number;
  readonly firstError: string | null;
  readonly wallMs: number;
  /** Successful creates per second of wall time. */
  readonly perSec: number;
  /** Request sent (paced: its scheduled time) → response received, successful creates only. */
  readonly latencyMs: Summary;
  /** Server process CPU (user + system) per request; 10 ms ticks, so meaningful over many requests. */
  readonly serverCpuMsPerOp: number;
  /** This (client) process's CPU per request: a client near one core's worth would be the bottleneck, not the server. */
  readonly clientCpuMsPerOp: number;
  /** Paced only: the latest a request left after its scheduled time. */
  readonly maxSendLagMs: number | null;
}

export interface WatchCase {
  readonly watchers: number;
  readonly writes: number;
  /** Events received for the timed writes, over all watchers (expected: watchers × writes). */
  readonly events: number;
  readonly missing: number;
  /** The write itself: sent → response. */
  readonly writeMs: Summary;
  /** Response received → event received, per (write, watcher); negative: the event came first. */
  readonly ackToEventMs: Summary;
  /** Request sent → event received, per (write, watcher). */
  readonly sentToEventMs: Summary;
  /** Per write: request sent → the last of the watchers has it. */
  readonly lastWatcherMs: Summary;
  /** Share of events that arrived before their write's response. */
  readonly eventFirstShare: number;
  /** Server CPU per timed write: the commit, the response and the fan-out to every watcher. */
  readonly serverCpuMsPerWrite: number;
}

export interface ListCase {
  readonly kind: 'Services' | 'EndpointSlices';
  readonly path: string;
  /** null: one request for everything; else the page size (limit=, continue=). */
  readonly limit: number | null;
  readonly items: number;
  readonly pages: number;
  /** Bytes of one complete list (all pages). */
  readonly bytes: number;
  /** Per repeat: first request sent → last byte of the last page. */
  readonly fetchMs: Summary;
  /** Per repeat: decoding and JSON.parse of every page. */
  readonly parseMs: Summary;
  readonly totalMs: Summary;
  /** Server VmRSS right after this row's lists. */
  readonly rssAfterMiB: number;
  /** Server VmHWM over this row's lists (reset before them); null when the kernel would not reset it. */
  readonly peakRssMiB: number | null;
}

export interface MemoryPoints {
  /** Server VmRSS after start, before any load. */
  readonly idleMiB: number;
  readonly afterLoadMiB: number;
  readonly afterAllMiB: number;
  /** VmHWM at the end: the peak of the whole run (unless reset by clear_refs: then since the last reset). */
  readonly endHwmMiB: number;
}

export interface Meta extends MachineMeta {
  readonly dataDirFs: string;
  /** 4 KiB write + fdatasync in the data directory: the floor of one durable commit. */
  readonly fsyncMs: Summary;
  readonly serverLogLevel: string;
  /** CPUs' worth of time the rest of the machine used during the run, on average (machine busy − server − client): other processes, and kernel threads (some of them working for the bench: the journal, loopback softirqs). */
  readonly otherCpus: number;
  readonly quick: boolean;
}

/** The closed-loop creates at one size of the store: how the write path's cost grows with what the store holds. */
export interface SlopePoint {
  /** Services in the store (every namespace) when the cases started. */
  readonly services: number;
  readonly slices: number;
  /** One closed-loop case per concurrency. */
  readonly cases: readonly CreateCase[];
}

export interface BenchResult {
  readonly meta: Meta;
  readonly creates: readonly CreateCase[];
  /** Ascending by size: the empty store first; the point at --services holds the same closed cases as `creates`. */
  readonly slope: readonly SlopePoint[];
  readonly load: readonly CreateCase[];
  readonly watches: readonly WatchCase[];
  readonly lists: readonly ListCase[];
  readonly memory: MemoryPoints;
  /** Things worth knowing that the run noticed (server quirks, workarounds). */
  readonly notes: readonly string[];
  readonly totalWallMs: number;
}

// ---- tables ----

export function createLabel(c: CreateCase): string {
  const what = c.resource === 'Service' ? 'Services' : 'EndpointSlices';
  if (c.kind === 'paced') return `${thousands(c.qps ?? NaN)}/s paced (open loop)`;
  if (c.kind === 'load') return `load ${what}, ${c.concurrency} clients`;
  return `${c.concurrency} client${c.concurrency === 1 ? '' : 's'}`;
}

export function formatCreates(cases: readonly CreateCase[]): string {
  const head = ['case', 'creates', 'per second', 'p50 ms', 'p99 ms', 'max ms', 'mean ms', 'CPU ms/create server + client', 'errors'];
  return table(head, cases.map((c) => [
    createLabel(c), thousands(c.requests), thousands(c.perSec), ms(c.latencyMs.p50), ms(c.latencyMs.p99), ms(c.latencyMs.max), ms(c.latencyMs.mean),
    `${ms(c.serverCpuMsPerOp)} + ${ms(c.clientCpuMsPerOp)}`, c.errors ? `${c.errors}: ${c.firstError ?? '?'}` : '0',
  ]));
}

export function formatWatches(cases: readonly WatchCase[]): string {
  const head = ['watchers', 'writes', 'events received', 'write p50 / p99 ms', 'ack → event p50 / p99 ms', 'sent → event p50 / p99 / max ms', 'sent → last watcher p50 / p99 ms', 'event before ack', 'server CPU ms/write'];
  return table(head, cases.map((w) => [
    String(w.watchers), thousands(w.writes), `${thousands(w.events)} / ${thousands(w.watchers * w.writes)}${w.missing ? ` (${thousands(w.missing)} missing)` : ''}`,
    `${ms(w.writeMs.p50)} / ${ms(w.writeMs.p99)}`, `${ms(w.ackToEventMs.p50)} / ${ms(w.ackToEventMs.p99)}`,
    `${ms(w.sentToEventMs.p50)} / ${ms(w.sentToEventMs.p99)} / ${ms(w.sentToEventMs.max)}`, `${ms(w.lastWatcherMs.p50)} / ${ms(w.lastWatcherMs.p99)}`,
    `${Math.round(w.eventFirstShare * 100)}%`, ms(w.serverCpuMsPerWrite),
  ]));
}

export function listLabel(l: ListCase): string {
  return `${thousands(l.items)} ${l.kind}, ${l.limit === null ? 'one request' : `pages of ${thousands(l.limit)} (${l.pages})`}`;
}

export function formatLists(cases: readonly ListCase[]): string {
  const head = ['list', 'response MiB', 'fetch p50 / max ms', 'parse p50 ms', 'fetch + parse p50 / max ms', 'server RSS after / peak MiB'];
  return table(head, cases.map((l) => [
    listLabel(l), mib(l.bytes), `${ms(l.fetchMs.p50)} / ${ms(l.fetchMs.max)}`, ms(l.parseMs.p50), `${ms(l.totalMs.p50)} / ${ms(l.totalMs.max)}`,
    `${l.rssAfterMiB.toFixed(0)} / ${l.peakRssMiB === null ? '–' : l.peakRssMiB.toFixed(0)}`,
  ]));
}

/** Per point and concurrency: creates/s, p99, server CPU per create and that CPU over the empty store's. */
export function formatSlope(points: readonly SlopePoint[]): string {
  const concs = [...new Set(points.flatMap((p) => p.cases.map((c) => c.concurrency ?? 0)))].sort((a, b) => a - b);
  const base = points[0];
  const head = ['Services + EndpointSlices in the store', ...concs.flatMap((n) => [`${n} client${n === 1 ? '' : 's'}: creates/s`, 'p99 ms', 'server CPU ms/create', 'CPU × the empty store\'s'])];
  return table(head, points.map((p) => [
    `${thousands(p.services)} + ${thousands(p.slices)}`,
    ...concs.flatMap((n) => {
      const c = p.cases.find((x) => x.concurrency === n);
      const b = base?.cases.find((x) => x.concurrency === n);
      if (!c) return ['–', '–', '–', '–'];
      return [thousands(c.perSec), ms(c.latencyMs.p99), ms(c.serverCpuMsPerOp), b ? `${(c.serverCpuMsPerOp / b.serverCpuMsPerOp).toFixed(2)}×` : '–'];
    }),
  ]));
}

export const SLO_MUTATING_P99_MS = 1000;
export const SLO_LIST_P99_MS = 30_000;
export const VCLUSTER_K3S_SQLITE_MEAN_MS = 1400;
export const VCLUSTER_QPS = 200;

// ---- targets (issue 24: the write path must not grow with the store) ----

export const TARGET_C1_PER_SEC = 700;
export const TARGET_C16_PER_SEC = 1500;
export const TARGET_CPU_VS_EMPTY = 1.5;
/** SIG-scalability's mutating-call SLO (p99 ≤ 1 s), with a factor of 20 to spare. */
export const TARGET_PACED_P99_MS = SLO_MUTATING_P99_MS / 20;

export interface TargetRow {
  readonly target: string;
  readonly measured: string;
  /** null: this run has no such case. */
  readonly met: boolean | null;
}

/** The slope's point the main create cases ran at (the store holding --services and --slices). */
function mainPoint(r: Pick<BenchResult, 'creates' | 'slope'>): SlopePoint | undefined {
  return r.slope.find((p) => p.cases.some((c) => r.creates.includes(c)));
}

/** Issue 24's targets, judged at the run's main point (the store holding --services and --slices). */
export function targets(r: Pick<BenchResult, 'creates' | 'slope'>): TargetRow[] {
  const closed = (n: number) => r.creates.find((c) => c.kind === 'closed' && c.concurrency === n);
  const main = mainPoint(r);
  const base = r.slope[0];
  const at = main ? ` (${thousands(main.services)} Services + ${thousands(main.slices)} EndpointSlices)` : '';
  const rows: TargetRow[] = [];
  for (const [n, want] of [[1, TARGET_C1_PER_SEC], [16, TARGET_C16_PER_SEC]] as const) {
    const c = closed(n);
    rows.push({ target: `${n} client${n === 1 ? '' : 's'}: ≥ ${thousands(want)} creates/s${at}`, measured: c ? `${thousands(c.perSec)}/s` : 'not run', met: c ? c.perSec >= want : null });
  }
  for (const c of main && base && main !== base ? main.cases : []) {
    const b = base!.cases.find((x) => x.concurrency === c.concurrency);
    const x = b ? c.serverCpuMsPerOp / b.serverCpuMsPerOp : NaN;
    rows.push({
      target: `${createLabel(c)}: server CPU per create ≤ ${TARGET_CPU_VS_EMPTY}× the empty store's${at}`,
      measured: b ? `${ms(c.serverCpuMsPerOp)} ms against ${ms(b.serverCpuMsPerOp)} ms: ${x.toFixed(2)}×` : 'no empty-store case',
      met: b ? x <= TARGET_CPU_VS_EMPTY : null,
    });
  }
  for (const c of r.creates.filter((x) => x.kind === 'paced')) {
    rows.push({ target: `${createLabel(c)}: p99 ≤ ${ms(TARGET_PACED_P99_MS)} ms (the SLO's 1 s ÷ 20)${at}`, measured: `p99 ${ms(c.latencyMs.p99)} ms`, met: c.latencyMs.p99 <= TARGET_PACED_P99_MS });
  }
  return rows;
}

export function formatTargets(rows: readonly TargetRow[]): string {
  return table(['target', 'measured', 'met'], rows.map((t) => [t.target, t.measured, t.met === null ? '–' : t.met ? 'yes' : '**no**']));
}

// ---- references ----


export function references(creates: readonly CreateCase[], lists: readonly ListCase[]): ReferenceRow[] {
  const rows: ReferenceRow[] = [];
  const slo = 'SIG-scalability SLO: mutating API call p99 ≤ 1 s';
  for (const c of creates) {
    rows.push({ reference: slo, theirs: `${thousands(SLO_MUTATING_P99_MS)} ms`, ours: `${createLabel(c)}: p99 ${ms(c.latencyMs.p99)} ms`, ratio: ratio(SLO_MUTATING_P99_MS, c.latencyMs.p99) });
  }
  for (const l of lists.filter((x) => x.limit === null)) {
    rows.push({ reference: 'SIG-scalability SLO: LIST (namespace) p99 ≤ 30 s', theirs: `${thousands(SLO_LIST_P99_MS)} ms`, ours: `${thousands(l.items)} ${l.kind}: slowest ${ms(l.fetchMs.max)} ms`, ratio: ratio(SLO_LIST_P99_MS, l.fetchMs.max) });
  }
  const vc = 'vcluster load test, k3s on SQLite, 200 qps: mean 1.4 s';
  const paced = creates.filter((c) => c.kind === 'paced');
  const closed = creates.filter((c) => c.kind === 'closed');
  const widest = closed.reduce<CreateCase | null>((a, c) => (a === null || (c.concurrency ?? 0) > (a.concurrency ?? 0) ? c : a), null);
  for (const c of [...paced, ...(widest ? [widest] : [])]) {
    rows.push({ reference: vc, theirs: `${thousands(VCLUSTER_K3S_SQLITE_MEAN_MS)} ms`, ours: `${createLabel(c)}: mean ${ms(c.latencyMs.mean)} ms`, ratio: ratio(VCLUSTER_K3S_SQLITE_MEAN_MS, c.latencyMs.mean) });
  }
  const fastest = closed.reduce<CreateCase | null>((a, c) => (a === null || c.perSec > a.perSec ? c : a), null);
  if (fastest) {
    const r = fastest.perSec / VCLUSTER_QPS;
    rows.push({ reference: 'vcluster load test: offered rate', theirs: `${VCLUSTER_QPS} creates/s`, ours: `${createLabel(fastest)}: ${thousands(fastest.perSec)} creates/s`, ratio: `${r >= 10 ? r.toFixed(0) : r.toFixed(1)}× the rate` });
  }
  return rows;
}

// ---- the whole report ----

export function formatReport(r: BenchResult): string {
  const m = r.meta;
  const main = mainPoint(r);
  const loaded = main ? `${thousands(main.services)} Services (the \`kubernetes\` one included) and ${thousands(main.slices)} EndpointSlices` : '';
  const out = [
    `nodenet API server${m.quick ? ' (--quick)' : ''}: ${m.cpus} × ${m.cpuModel}, ${thousands(m.memTotalMiB)} MiB, kernel ${m.kernel}, Node ${m.node}`,
    `Data dir on ${m.dataDirFs}; 4 KiB write + fdatasync there: p50 ${ms(m.fsyncMs.p50)} ms, p99 ${ms(m.fsyncMs.p99)} ms (the floor of one durable commit).`,
    `Server in its own process, from source under tsx (SQLite WAL, synchronous=FULL, logging at ${m.serverLogLevel} to a file); the client in another: node:https, keep-alive, TLS with the kubeconfig's CA, bearer token.`,
    '',
    `Durable creates, POST /api/v1/namespaces/<a namespace of the case's own>/services (201 only after the fsync), into a store already holding ${loaded || 'nothing'} ` +
      '(each case\'s Services are deleted after it, so every case starts from the same store):',
    '',
    formatCreates(r.creates),
    ...r.creates.filter((c) => c.kind === 'paced').map((c) => `(${createLabel(c)}: latency counts from each request's scheduled time; the client sent at most ${ms(c.maxSendLagMs ?? NaN)} ms late.)`),
    '',
    'The slope: the same closed-loop creates with the store empty, as above, and topped up to more Services:',
    '',
    formatSlope(r.slope),
    '',
    'Issue 24\'s targets:',
    '',
    formatTargets(targets(r)),
    '',
    'Loading the store (the same creates into `default`, 16 clients: the lists\' objects, then the slope\'s top-up):',
    '',
    formatCreates(r.load),
    '',
    'Watch delivery: one writer creates Services one at a time; every watcher (GET .../services?watch=1&resourceVersion=<rv>) must see each before the next.',
    '"ack → event": the write\'s response received → the event received at a watcher (negative: the event came first; the server fans out in the commit, before it answers).',
    '',
    formatWatches(r.watches),
    '',
    'Lists (GET, JSON; fetch = request to last byte, parse = decode + JSON.parse in the client):',
    '',
    formatLists(r.lists),
    '',
    `Server RSS: ${r.memory.idleMiB.toFixed(0)} MiB idle after start, ${r.memory.afterLoadMiB.toFixed(0)} MiB after loading, ${r.memory.afterAllMiB.toFixed(0)} MiB at the end (VmHWM at the end ${r.memory.endHwmMiB.toFixed(0)} MiB).`,
    '',
    'References:',
    '',
    formatReferences(references(r.creates, r.lists)),
  ];
  if (r.notes.length) out.push('', 'Notes:', ...r.notes.map((n) => `- ${n}`));
  out.push('', `Total bench time ${(r.totalWallMs / 1000).toFixed(0)} s; load average ${m.loadavgBefore.map((x) => x.toFixed(2)).join(' ')} before, ` +
    `${m.loadavgAfter.map((x) => x.toFixed(2)).join(' ')} after; besides the server and the client, the machine (other processes, kernel threads such as the ext4 journal's) ` +
    `used ${m.otherCpus.toFixed(2)} of the ${m.cpus} CPUs on average during the run.`);
  return out.join('\n');
}
