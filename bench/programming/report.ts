/**
 * bench/programming/report: the results of one run, the Markdown it
 * prints, and the comparison with the references. Pure.
 *
 * References (what each is, so the comparison is read right):
 * - The target of issue 9: a fresh agent lists and fully syncs 10,000
 *   Services with 20,000 endpoints in ≤ 3 s on this machine (compared with
 *   spawn → every Service applied, at whatever N the case has: only the
 *   10,000 row is the target's own size).
 * - Network programming latency, SIG-scalability's SLI
 *   (kubernetes/community sig-scalability/slos/network_programming_latency.md:
 *   "from when service spec or list of its Ready pods change to when it is
 *   reflected in load balancing mechanism", p99). The SLO there is still
 *   WIP with the threshold left as X; 30 s is the figure this bench's brief
 *   (and common kube-proxy alert rules) hold it to. Compared with our p99
 *   from the write's acknowledgement.
 * - Issue 12's sync targets for the agent (nftables at 30,000 Services: a
 *   full sync ≤ 3 s, a one-endpoint change ≤ 150 ms), set after KEP-3866.
 *   The KEP itself publishes no sync times (its scalability section is
 *   UNRESOLVED); the KEP-3866 figures issue 12 quotes (first-packet p99
 *   0.72 ms iptables vs 0.04 ms nftables at 30,000 Services) are data-path
 *   figures, for the lookup bench, not this one. Compared with the agent's
 *   own sync times at this run's N.
 * A ratio "N× inside" is reference / ours (bench/lib/report's ratio).
 */
import type { MachineMeta } from '../lib/machine.js';
import { formatReferences, ms, ratio, table, thousands, type ReferenceRow } from '../lib/report.js';
import { summarize, type Summary } from '../lib/stats.js';
import type { BenchArgs } from './args.js';
import type { HistogramSummary } from './metrics.js';
import type { FreshPhases } from './timeline.js';

export interface LoadFigure {
  readonly kind: 'Service' | 'EndpointSlice';
  readonly count: number;
  readonly errors: number;
  readonly firstError: string | null;
  readonly wallMs: number;
  readonly perSec: number;
  readonly latencyMs: Summary;
}

/** One list as client-node makes it, in the node's namespace with the node's token (medians of a few). */
export interface ListProbe {
  readonly kind: 'Services' | 'EndpointSlices';
  readonly items: number;
  readonly bytes: number;
  /** Request sent → last byte (node:https). */
  readonly fetchMs: number;
  readonly parseMs: number;
  /** client-node's list call, as the agent's informer makes it: fetch, parse and its ObjectSerializer. */
  readonly clientNodeMs: number;
}

/** CPU over a phase (ms), and the rest of the machine's use in CPUs (other processes, kernel threads). */
export interface CpuUse {
  readonly wallMs: number;
  readonly agentMs: number;
  /** The control plane (every process in the lab's underlay namespace). */
  readonly serverMs: number;
  /** This process (the writes, the status file reads). */
  readonly benchMs: number;
  readonly otherCpus: number;
}

export interface FreshResult {
  readonly services: number;
  readonly endpoints: number;
  /** Process spawn → the first status file with every Service and its endpoints. */
  readonly totalMs: number;
  readonly phases: FreshPhases | null;
  /** Why phases is null. */
  readonly phasesMissing: readonly string[];
  /** The first sync's rule count, from the status file. */
  readonly ruleCount: number | null;
  readonly statusBytes: number;
  /** The agent's VmRSS right after. */
  readonly rssMiB: number | null;
  readonly cpu: CpuUse;
}

export interface ChangeSample {
  /** The Service whose slice changed (1-based). */
  readonly service: number;
  /** The PUT: sent → acknowledged. */
  readonly writeMs: number;
  readonly ackToAppliedMs: number;
  readonly sentToAppliedMs: number;
  /** The sync that applied it, from the agent's log; null when not found. */
  readonly sync: {
    readonly durationMs: number;
    readonly backendMs: number | null;
    readonly scope: string | null;
    /** Negative: the sync started before the writer had its answer (the watch event came first). */
    readonly ackToStartMs: number;
    readonly endToSeenMs: number;
  } | null;
}

export interface ChangesResult {
  readonly samples: readonly ChangeSample[];
  readonly ackToAppliedMs: Summary;
  readonly sentToAppliedMs: Summary;
  readonly writeMs: Summary;
  readonly syncMs: Summary;
  readonly backendMs: Summary;
  readonly ackToSyncStartMs: Summary;
  readonly syncEndToSeenMs: Summary;
  /** Samples whose sync was partial / was found at all. */
  readonly partialSyncs: number;
  readonly matchedSyncs: number;
  /** kubeproxy_network_programming_duration_seconds over the changes (two scrapes' difference); null: not served. */
  readonly metric: HistogramSummary | null;
  readonly metricNote: string | null;
  readonly cpu: CpuUse;
}

export interface CaseResult {
  readonly mode: string;
  /** "nftables", "iptables (nft)", "iptables (legacy)". */
  readonly label: string;
  readonly services: number;
  readonly load: readonly LoadFigure[];
  readonly fresh: FreshResult | null;
  readonly lists: readonly ListProbe[];
  readonly changes: ChangesResult | null;
  readonly error: string | null;
}

export interface Meta extends MachineMeta {
  readonly nft: string;
  readonly iptables: string;
  readonly iptablesLegacy: string;
  readonly commit: string;
}

/** What a fresh agent pays before it does anything (wall ms, medians). */
export interface StartupFloor {
  /** `node -e 0`. */
  readonly nodeMs: number;
  /** `node dist/nodenet.js help`: the bundle's core (the API client and the control plane are chunks loaded on use). */
  readonly bundleMs: number;
  /** `import('@kubernetes/client-node')` alone. */
  readonly clientNodeMs: number;
}

export interface BenchResult {
  readonly meta: Meta;
  readonly args: BenchArgs;
  readonly startup: StartupFloor;
  readonly cases: readonly CaseResult[];
  readonly notes: readonly string[];
  readonly totalWallMs: number;
}

// ---- summaries ----

export function summarizeChanges(samples: readonly ChangeSample[], metric: HistogramSummary | null, metricNote: string | null, cpu: CpuUse): ChangesResult {
  const synced = samples.flatMap((s) => (s.sync ? [s.sync] : []));
  return {
    samples,
    ackToAppliedMs: summarize(samples.map((s) => s.ackToAppliedMs)),
    sentToAppliedMs: summarize(samples.map((s) => s.sentToAppliedMs)),
    writeMs: summarize(samples.map((s) => s.writeMs)),
    syncMs: summarize(synced.map((s) => s.durationMs)),
    backendMs: summarize(synced.flatMap((s) => (s.backendMs === null ? [] : [s.backendMs]))),
    ackToSyncStartMs: summarize(synced.map((s) => s.ackToStartMs)),
    syncEndToSeenMs: summarize(synced.map((s) => s.endToSeenMs)),
    partialSyncs: synced.filter((s) => s.scope === 'partial').length,
    matchedSyncs: synced.length,
    metric,
    metricNote,
    cpu,
  };
}

// ---- tables ----

const seconds = (x: number) => (Number.isFinite(x) ? `${(x / 1000).toFixed(x < 10_000 ? 2 : 1)} s` : '–');
const svcCell = (c: CaseResult) => `${thousands(c.services)} / ${thousands(c.fresh?.endpoints ?? c.services * 2)}`;
const p3 = (s: Summary) => `${ms(s.p50)} / ${ms(s.p99)} / ${ms(s.max)}`;

export function formatFresh(cases: readonly CaseResult[]): string {
  const head = ['mode', 'Services / endpoints', 'spawn → all applied', 'start-up', 'registration', 'agent start', 'lists = served + delivered + watches open', 'queue',
    'first sync (backend)', 'status file', 'rules', 'RSS MiB', 'CPU ms agent / server', 'others (CPUs)'];
  return table(head, cases.filter((c) => c.fresh).map((c) => {
    const f = c.fresh!;
    const p = f.phases;
    const cell = (x: number | undefined) => (p ? ms(x ?? NaN) : '–');
    return [
      c.label, svcCell(c), seconds(f.totalMs), cell(p?.startupMs), cell(p?.registrationMs), cell(p?.agentStartMs),
      p ? (p.deliverMs === null || p.watchOpenMs === null ? `${ms(p.listMs)} (served ${ms(p.servedMs)})` : `${ms(p.listMs)} = ${ms(p.servedMs)} + ${ms(p.deliverMs)} + ${ms(p.watchOpenMs)}`) : '–',
      p ? `${ms(p.queueMs)}${p.failedSyncs ? ` (${p.failedSyncs} failed sync${p.failedSyncs > 1 ? 's' : ''})` : ''}` : '–', p ? `${ms(p.syncMs)} (${ms(p.backendMs ?? NaN)})` : '–', cell(p?.statusMs),
      f.ruleCount === null ? '–' : thousands(f.ruleCount), f.rssMiB === null ? '–' : f.rssMiB.toFixed(0),
      `${thousands(f.cpu.agentMs)} / ${thousands(f.cpu.serverMs)}`, f.cpu.otherCpus.toFixed(2),
    ];
  }));
}

export function formatLists(cases: readonly CaseResult[]): string {
  const head = ['mode', 'Services', 'list', 'items', 'MiB', 'HTTP (to last byte)', 'JSON.parse', 'client-node list call', 'client-node beyond HTTP + parse'];
  return table(head, cases.flatMap((c) => c.lists.map((l) => [
    c.label, thousands(c.services), l.kind, thousands(l.items), (l.bytes / 1048576).toFixed(1), ms(l.fetchMs), ms(l.parseMs), ms(l.clientNodeMs),
    ms(l.clientNodeMs - l.fetchMs - l.parseMs),
  ])));
}

function metricCell(ch: ChangesResult): string {
  const m = ch.metric;
  if (!m) return '–';
  const bound = (s: number) => (Number.isNaN(s) ? '–' : Number.isFinite(s) ? `≤ ${s} s` : `> ${m.topBound} s`);
  return `${m.count}, mean ${ms(m.mean * 1000)} ms, p50 ${bound(m.p50AtMost)}, p99 ${bound(m.p99AtMost)}`;
}

export function formatChanges(cases: readonly CaseResult[]): string {
  const head = ['mode', 'Services', 'changes', 'ack → applied p50 / p99 / max ms', 'sent → applied p50 / p99 ms', 'write p50 ms', 'agent sync p50 / max ms (backend p50)',
    'ack → sync start p50 ms', 'sync end → seen p50 ms', 'kubeproxy_network_programming_duration_seconds', 'agent CPU ms / change', 'others (CPUs)'];
  return table(head, cases.filter((c) => c.changes).map((c) => {
    const ch = c.changes!;
    return [
      c.label, thousands(c.services), `${ch.samples.length}${ch.partialSyncs < ch.samples.length ? ` (${ch.partialSyncs} partial syncs)` : ''}`, p3(ch.ackToAppliedMs),
      `${ms(ch.sentToAppliedMs.p50)} / ${ms(ch.sentToAppliedMs.p99)}`, ms(ch.writeMs.p50), `${ms(ch.syncMs.p50)} / ${ms(ch.syncMs.max)} (${ms(ch.backendMs.p50)})`,
      ms(ch.ackToSyncStartMs.p50), ms(ch.syncEndToSeenMs.p50), metricCell(ch), ms(ch.cpu.agentMs / Math.max(1, ch.samples.length)), ch.cpu.otherCpus.toFixed(2),
    ];
  }));
}

export function formatLoad(cases: readonly CaseResult[]): string {
  const head = ['mode', 'Services', 'created', 'per second', 'p50 / p99 ms', 'errors'];
  return table(head, cases.flatMap((c) => c.load.map((l) => [
    c.label, thousands(c.services), `${thousands(l.count)} ${l.kind}s`, thousands(l.perSec), `${ms(l.latencyMs.p50)} / ${ms(l.latencyMs.p99)}`,
    l.errors ? `${l.errors}: ${l.firstError ?? '?'}` : '0',
  ])));
}

// ---- references ----

export const FRESH_TARGET_MS = 3000;
export const FRESH_TARGET_SERVICES = 10_000;
export const PROGRAMMING_SLO_P99_MS = 30_000;
export const FULL_SYNC_TARGET_MS = 3000;
export const CHANGE_SYNC_TARGET_MS = 150;
export const SYNC_TARGET_SERVICES = 30_000;

export function references(cases: readonly CaseResult[]): ReferenceRow[] {
  const rows: ReferenceRow[] = [];
  const at = (c: CaseResult) => `${c.label}, ${thousands(c.services)} Services`;
  for (const c of cases) {
    if (c.fresh) {
      const note = c.services === FRESH_TARGET_SERVICES ? '' : ` (the target is for ${thousands(FRESH_TARGET_SERVICES)})`;
      rows.push({ reference: 'issue 9: fresh agent, list + full sync of 10,000 Services / 20,000 endpoints ≤ 3 s', theirs: seconds(FRESH_TARGET_MS), ours: `${at(c)}: ${seconds(c.fresh.totalMs)}${note}`, ratio: ratio(FRESH_TARGET_MS, c.fresh.totalMs) });
    }
  }
  for (const c of cases) {
    if (c.changes) {
      rows.push({ reference: 'SIG-scalability network programming latency p99 (SLO WIP; held to 30 s)', theirs: seconds(PROGRAMMING_SLO_P99_MS), ours: `${at(c)}: p99 ${ms(c.changes.ackToAppliedMs.p99)} ms`, ratio: ratio(PROGRAMMING_SLO_P99_MS, c.changes.ackToAppliedMs.p99) });
    }
  }
  for (const c of cases.filter((x) => x.mode === 'nftables')) {
    const note = ` (the target is for ${thousands(SYNC_TARGET_SERVICES)})`;
    if (c.fresh?.phases) rows.push({ reference: 'issue 12 (after KEP-3866): nftables full sync ≤ 3 s', theirs: seconds(FULL_SYNC_TARGET_MS), ours: `${at(c)}: ${ms(c.fresh.phases.syncMs)} ms${note}`, ratio: ratio(FULL_SYNC_TARGET_MS, c.fresh.phases.syncMs) });
    if (c.changes && c.changes.matchedSyncs) rows.push({ reference: 'issue 12 (after KEP-3866): nftables one-endpoint change sync ≤ 150 ms', theirs: `${CHANGE_SYNC_TARGET_MS} ms`, ours: `${at(c)}: p50 ${ms(c.changes.syncMs.p50)} ms, max ${ms(c.changes.syncMs.max)} ms${note}`, ratio: ratio(CHANGE_SYNC_TARGET_MS, c.changes.syncMs.max) });
  }
  return rows;
}

// ---- the whole report ----

export function formatReport(r: BenchResult): string {
  const m = r.meta;
  const a = r.args;
  const out = [
    `nodenet network programming${a.quick ? ' (--quick)' : ''}: ${m.cpus} × ${m.cpuModel}, ${thousands(m.memTotalMiB)} MiB, kernel ${m.kernel}, Node ${m.node}, ${m.nft}, ${m.iptables}; commit ${m.commit}`,
    `Per case a lab of its own: \`nodenet control-plane\` (dist/nodenet.js) in the underlay namespace, N ClusterIP Services with one EndpointSlice of 2 endpoints each written through the API over HTTPS (${a.loadConcurrency} clients), ` +
      `then a fresh agent on one virtual node (proxyMinSyncMs ${a.minSyncMs}, log level debug) watching them.`,
    '',
    'Fresh agent: process spawn → the first proxy-status.json with every Service and both its endpoints. Phases from the agent\'s and the server\'s logs (ms): ' +
      'start-up = spawn → its first API request; registration = → pod CIDR from node IPAM (the Node, its Lease; loading the API client if not done yet); agent start = → its first LIST reaches the server; ' +
      'lists = → "proxy started": both lists served (the server\'s side), then delivered (client-node decodes them, the proxy\'s handlers take every object, until its watches are requested), ' +
      'then both watches open; queue = → the first sync starts; ' +
      'first sync = the agent\'s durationMs (the backend\'s render + apply in brackets); status file = sync end → the bench saw the file. ' +
      `CPU: the agent's and the control plane's CPU time over spawn → applied; others: what the rest of the machine (other processes, kernel threads) used meanwhile, in CPUs of ${m.cpus}.`,
    '',
    formatFresh(r.cases),
    '',
    `What loading the agent's code costs, measured in this run (medians of 5): \`node -e 0\` ${ms(r.startup.nodeMs)} ms; \`node dist/nodenet.js help\` (the bundle's core) ${ms(r.startup.bundleMs)} ms; ` +
      `\`import('@kubernetes/client-node')\` alone ${ms(r.startup.clientNodeMs)} ms (an agent on an API server loads it, in start-up or registration).`,
    '',
    'The same lists made again from the node\'s namespace with its token once the agent had synced (medians of 3): node:https to the last byte, JSON.parse, and client-node\'s list call (what the informer runs: fetch, parse and its ObjectSerializer):',
    '',
    formatLists(r.cases),
    '',
    `Network programming latency: ${a.changes} times per case, one EndpointSlice's second endpoint replaced by one PUT (its trigger-time annotation set to the send time), ` +
      `timed from the PUT's acknowledgement to the moment the bench saw proxy-status.json show it (fs.watch on the run dir, stat poll every 10 ms). ` +
      `The next change waits proxyMinSyncMs + 50 ms after, so no change waits for the agent's minimum sync interval. The agent's own split from its log; the metric is its /metrics histogram over the same changes (kube-proxy's buckets: ≤ 0.25 s is the first).`,
    '',
    formatChanges(r.cases),
    '',
    'Loading the API server (before the agent starts):',
    '',
    formatLoad(r.cases),
    '',
    'References:',
    '',
    formatReferences(references(r.cases)),
  ];
  const failed = r.cases.filter((c) => c.fresh?.phases?.failedSyncs);
  if (failed.length) {
    out.push('', 'First syncs that failed before one succeeded (the time is in "queue"):',
      ...failed.map((c) => `- ${c.label}, ${thousands(c.services)} Services: ${c.fresh!.phases!.failedSyncs} failed, the first with: ${c.fresh!.phases!.firstError ?? '(no message)'}`));
  }
  const errors = r.cases.filter((c) => c.error);
  if (errors.length) out.push('', 'Errors:', ...errors.map((c) => `- ${c.label}, ${thousands(c.services)} Services: ${c.error}`));
  if (r.notes.length) out.push('', 'Notes:', ...r.notes.map((n) => `- ${n}`));
  out.push('', `Total bench time ${(r.totalWallMs / 1000).toFixed(0)} s; load average ${m.loadavgBefore.map((x) => x.toFixed(2)).join(' ')} before, ${m.loadavgAfter.map((x) => x.toFixed(2)).join(' ')} after.`);
  return out.join('\n');
}
