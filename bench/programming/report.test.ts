import t from 'tap';
import { summarize } from '../lib/stats.js';
import { parseBenchArgs } from './args.js';
import {
  formatChanges, formatFresh, formatLists, formatReport, references, summarizeChanges,
  type BenchResult, type CaseResult, type ChangeSample, type CpuUse, type FreshResult,
} from './report.js';

const cpu: CpuUse = { wallMs: 2000, agentMs: 1500, serverMs: 400, benchMs: 50, otherCpus: 0.25 };
const fresh = (o: Partial<FreshResult> = {}): FreshResult => ({
  services: 10_000, endpoints: 20_000, totalMs: 4321,
  phases: { startupMs: 900, registrationMs: 120, agentStartMs: 300, listMs: 1500, servedMs: 180, deliverMs: 1200, watchOpenMs: 120, queueMs: 1, failedSyncs: 0, firstError: null, syncMs: 1450, backendMs: 1300, rules: 72_020, statusMs: 50, totalMs: 4321 },
  phasesMissing: [], ruleCount: 72_020, statusBytes: 1_400_000, rssMiB: 251.6, cpu, ...o,
});
const sample = (i: number, ack: number, sync: ChangeSample['sync'] = { durationMs: ack - 10, backendMs: ack - 40, scope: 'partial', ackToStartMs: 1, endToSeenMs: 9 }): ChangeSample =>
  ({ service: i, writeMs: 5, ackToAppliedMs: ack, sentToAppliedMs: ack + 5, sync });
const samples = [sample(1, 100), sample(2, 150), sample(3, 120, null), sample(4, 400, { durationMs: 380, backendMs: null, scope: 'full', ackToStartMs: -2, endToSeenMs: 20 })];

const nft = (o: Partial<CaseResult> = {}): CaseResult => ({
  mode: 'nftables', label: 'nftables', services: 10_000,
  load: [{ kind: 'Service', count: 10_000, errors: 0, firstError: null, wallMs: 9000, perSec: 1111, latencyMs: summarize([10, 12, 30]) }],
  fresh: fresh(),
  lists: [{ kind: 'Services', items: 10_001, bytes: 6_291_456, fetchMs: 80, parseMs: 60, clientNodeMs: 900 }],
  changes: summarizeChanges(samples, { count: 4, mean: 0.2, p50AtMost: 0.25, p99AtMost: 0.5, topBound: 300 }, null, cpu),
  error: null, ...o,
});

t.test('summarizeChanges: latencies over every sample, sync figures over those whose sync was found', async (t) => {
  const c = summarizeChanges(samples, null, 'no metrics', cpu);
  t.equal(c.ackToAppliedMs.n, 4);
  t.equal(c.ackToAppliedMs.max, 400);
  t.equal(c.syncMs.n, 3);
  t.equal(c.backendMs.n, 2, 'a sync without a backend line has no backend figure');
  t.equal(c.matchedSyncs, 3);
  t.equal(c.partialSyncs, 2);
  t.equal(c.ackToSyncStartMs.min, -2);
  t.equal(c.metricNote, 'no metrics');
});

t.test('the fresh table: phases, rules, RSS and CPU; a case without phases shows dashes', async (t) => {
  const out = formatFresh([nft(), nft({ mode: 'iptables', label: 'iptables (nft)', services: 100, fresh: fresh({ services: 100, endpoints: 200, totalMs: 2500, phases: null, phasesMissing: ['x'] }) })]);
  const rows = out.split('\n');
  t.match(rows[0], /^\| mode \| Services \/ endpoints \| spawn → all applied \| start-up \|/);
  t.equal(rows[2], '| nftables | 10,000 / 20,000 | 4.32 s | 900 | 120 | 300 | 1,500 = 180 + 1,200 + 120 | 1.0 | 1,450 (1,300) | 50 | 72,020 | 252 | 1,500 / 400 | 0.25 |');
  t.equal(rows[3], '| iptables (nft) | 100 / 200 | 2.50 s | – | – | – | – | – | – | – | 72,020 | 252 | 1,500 / 400 | 0.25 |');
  t.equal(formatFresh([nft({ fresh: null })]).split('\n').length, 2, 'a case that failed before its fresh sync has no row');
});

t.test('the list and change tables', async (t) => {
  t.equal(formatLists([nft()]).split('\n')[2], '| nftables | 10,000 | Services | 10,001 | 6.0 | 80 | 60 | 900 | 760 |');
  const row = formatChanges([nft()]).split('\n')[2]!;
  t.equal(row, '| nftables | 10,000 | 4 (2 partial syncs) | 120 / 400 / 400 | 125 / 405 | 5.0 | 140 / 380 (60) | 1.0 | 9.0 | 4, mean 200 ms, p50 ≤ 0.25 s, p99 ≤ 0.5 s | 375 | 0.25 |');
  const noMetric = nft({ changes: summarizeChanges(samples.slice(0, 1), null, 'skipped', cpu) });
  t.match(formatChanges([noMetric]).split('\n')[2], /\| 1 \| 100 \/ 100 \/ 100 \| .* \| – \| 1,500 \| 0\.25 \|$/);
});

t.test('references: the fresh target, the SLO per case, the nftables sync targets', async (t) => {
  const rows = references([nft(), nft({ mode: 'iptables', label: 'iptables (nft)', services: 100, fresh: fresh({ services: 100, totalMs: 1500 }) })]);
  t.same(rows.map((r) => [r.ours, r.ratio]), [
    ['nftables, 10,000 Services: 4.32 s', '1.4× over'],
    ['iptables (nft), 100 Services: 1.50 s (the target is for 10,000)', '2.0× inside'],
    ['nftables, 10,000 Services: p99 400 ms', '75× inside'],
    ['iptables (nft), 100 Services: p99 400 ms', '75× inside'],
    ['nftables, 10,000 Services: 1,450 ms (the target is for 30,000)', '2.1× inside'],
    ['nftables, 10,000 Services: p50 140 ms, max 380 ms (the target is for 30,000)', '2.5× over'],
  ]);
  t.match(rows[0]!.reference, /issue 9: .* ≤ 3 s/);
  t.match(rows[2]!.reference, /SIG-scalability network programming latency p99 \(SLO WIP; held to 30 s\)/);
  t.same(references([nft({ fresh: null, changes: null })]), [], 'nothing measured, nothing compared');
});

t.test('the whole report: header, every table, errors and notes', async (t) => {
  const r: BenchResult = {
    meta: {
      date: '2026-12-01T16:00:00.000Z', kernel: '6.18.0', cpus: 2, cpuModel: 'AMD EPYC', memTotalMiB: 24_105, node: 'v20.20.2', nft: 'nftables v1.0.6',
      iptables: 'iptables v1.8.9 (nf_tables)', iptablesLegacy: 'iptables v1.8.9 (legacy)', commit: 'abc1234', loadavgBefore: [1, 2, 3], loadavgAfter: [2, 2, 2],
    },
    args: parseBenchArgs(['--quick']),
    startup: { nodeMs: 45, bundleMs: 1234, clientNodeMs: 987 },
    cases: [nft(), nft({ mode: 'iptables', label: 'iptables (nft)', fresh: null, changes: null, lists: [], error: 'timed out after 900 s waiting for every one of the 10,000 Services applied' })],
    notes: ['a note'],
    totalWallMs: 61_000,
  };
  const out = formatReport(r);
  t.match(out, /^nodenet network programming \(--quick\): 2 × AMD EPYC, 24,105 MiB, kernel 6\.18\.0, Node v20\.20\.2/);
  t.match(out, /proxyMinSyncMs 100/);
  t.match(out, /`node -e 0` 45 ms; `node dist\/nodenet\.js help` \(the bundle's core\) 1,234 ms; `import\('@kubernetes\/client-node'\)` alone 987 ms \(an agent/);
  for (const head of ['| mode | Services / endpoints |', '| mode | Services | list |', '| mode | Services | changes |', '| mode | Services | created |', '| reference | theirs | nodenet | ratio |']) {
    t.ok(out.includes(head), head);
  }
  t.match(out, /Errors:\n- iptables \(nft\), 10,000 Services: timed out after 900 s/);
  t.match(out, /Notes:\n- a note/);
  t.match(out, /Total bench time 61 s; load average 1\.00 2\.00 3\.00 before/);
});
