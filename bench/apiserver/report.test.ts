import t from 'tap';
import { formatReferences } from '../lib/report.js';
import { summarize, type Summary } from '../lib/stats.js';
import {
  createLabel, floorAnalysis, floorLabel, formatComparison, formatComparisonReport, formatCreates, formatEtcdCosts, formatFloor, formatLists, formatReport, formatSlope, formatTargets,
  formatWatches, references, targets, type BenchResult, type CreateCase, type EtcdFloor, type FloorCase, type ListCase, type SlopePoint, type WatchCase,
} from './report.js';

const sum = (o: Partial<Summary>): Summary => ({ n: 100, mean: 2, min: 0.5, p50: 1.5, p90: 3, p99: 4, max: 9, ...o });

function create(o: Partial<CreateCase> = {}): CreateCase {
  return {
    kind: 'closed', resource: 'Service', concurrency: 1, qps: null, requests: 2000, errors: 0, firstError: null, wallMs: 2000, perSec: 1000,
    latencyMs: sum({ p50: 0.81, p99: 3.24, max: 12.6, mean: 0.95 }), serverCpuMsPerOp: 0.7, clientCpuMsPerOp: 0.31, maxSendLagMs: null, ...o,
  };
}
const c1 = create();
const c16 = create({ concurrency: 16, perSec: 2950.4, latencyMs: sum({ p50: 5, p99: 9.62, max: 14, mean: 5.3 }), serverCpuMsPerOp: 0.3 });
const paced = create({ kind: 'paced', concurrency: null, qps: 200, requests: 5000, perSec: 199.8, latencyMs: sum({ p50: 1.2, p99: 6.7, max: 10, mean: 1.62 }), maxSendLagMs: 1.5 });
const loadSvc = create({ kind: 'load', concurrency: 16, requests: 10_000, perSec: 1234, errors: 2, firstError: '409 services "x" already exists' });
const loadEps = create({ kind: 'load', resource: 'EndpointSlice', concurrency: 16, requests: 20_000, perSec: 1500 });

const watch = (o: Partial<WatchCase> = {}): WatchCase => ({
  watchers: 10, writes: 300, events: 3000, missing: 0, writeMs: sum({ p50: 3.5, p99: 11 }), ackToEventMs: sum({ p50: -0.29, p99: -0.08 }),
  sentToEventMs: sum({ p50: 2.9, p99: 10.4, max: 11.2 }), lastWatcherMs: sum({ p50: 3.3, p99: 10.1 }), eventFirstShare: 0.996, serverCpuMsPerWrite: 1.5, ...o,
});

const list = (o: Partial<ListCase> = {}): ListCase => ({
  kind: 'Services', path: '/api/v1/namespaces/default/services', limit: null, items: 10_000, pages: 1, bytes: 6_291_456,
  fetchMs: sum({ p50: 95.2, max: 130.4 }), parseMs: sum({ p50: 41 }), totalMs: sum({ p50: 136, max: 170 }), rssAfterMiB: 250.4, peakRssMiB: 290.6, ...o,
});

t.test('labels', async (t) => {
  t.equal(createLabel(c1), '1 client');
  t.equal(createLabel(c16), '16 clients');
  t.equal(createLabel(paced), '200/s paced (open loop)');
  t.equal(createLabel(loadEps), 'load EndpointSlices, 16 clients');
});

t.test('the create table', async (t) => {
  t.equal(formatCreates([c1, c16, paced, loadSvc]), [
    '| case | creates | per second | p50 ms | p99 ms | max ms | mean ms | CPU ms/create server + client | errors |',
    '|---|---:|---:|---:|---:|---:|---:|---:|---:|',
    '| 1 client | 2,000 | 1,000 | 0.81 | 3.2 | 13 | 0.95 | 0.70 + 0.31 | 0 |',
    '| 16 clients | 2,000 | 2,950 | 5.0 | 9.6 | 14 | 5.3 | 0.30 + 0.31 | 0 |',
    '| 200/s paced (open loop) | 5,000 | 200 | 1.2 | 6.7 | 10 | 1.6 | 0.70 + 0.31 | 0 |',
    '| load Services, 16 clients | 10,000 | 1,234 | 0.81 | 3.2 | 13 | 0.95 | 0.70 + 0.31 | 2: 409 services "x" already exists |',
  ].join('\n'));
});

t.test('the watch table', async (t) => {
  t.equal(formatWatches([watch(), watch({ watchers: 100, events: 29_990, missing: 10, eventFirstShare: 1, serverCpuMsPerWrite: 12.25 })]), [
    '| watchers | writes | events received | write p50 / p99 ms | ack → event p50 / p99 ms | sent → event p50 / p99 / max ms | sent → last watcher p50 / p99 ms | event before ack | server CPU ms/write |',
    '|---|---:|---:|---:|---:|---:|---:|---:|---:|',
    '| 10 | 300 | 3,000 / 3,000 | 3.5 / 11 | -0.29 / -0.08 | 2.9 / 10 / 11 | 3.3 / 10 | 100% | 1.5 |',
    '| 100 | 300 | 29,990 / 30,000 (10 missing) | 3.5 / 11 | -0.29 / -0.08 | 2.9 / 10 / 11 | 3.3 / 10 | 100% | 12 |',
  ].join('\n'));
});

t.test('the list table', async (t) => {
  t.equal(formatLists([list(), list({ kind: 'EndpointSlices', items: 20_000, limit: 500, pages: 40, peakRssMiB: null })]), [
    '| list | response MiB | fetch p50 / max ms | parse p50 ms | fetch + parse p50 / max ms | server RSS after / peak MiB |',
    '|---|---:|---:|---:|---:|---:|',
    '| 10,000 Services, one request | 6.0 | 95 / 130 | 41 | 136 / 170 | 250 / 291 |',
    '| 20,000 EndpointSlices, pages of 500 (40) | 6.0 | 95 / 130 | 41 | 136 / 170 | 250 / – |',
  ].join('\n'));
});

t.test('references: the SLO per create case and per full list, vcluster against the paced and the widest closed case', async (t) => {
  const rows = references([c1, c16, paced], [list(), list({ limit: 500, pages: 20 }), list({ kind: 'EndpointSlices', items: 20_000, fetchMs: sum({ max: 260 }) })]);
  t.equal(formatReferences(rows), [
    '| reference | theirs | nodenet | ratio |',
    '|---|---:|---:|---:|',
    '| SIG-scalability SLO: mutating API call p99 ≤ 1 s | 1,000 ms | 1 client: p99 3.2 ms | 309× inside |',
    '| SIG-scalability SLO: mutating API call p99 ≤ 1 s | 1,000 ms | 16 clients: p99 9.6 ms | 104× inside |',
    '| SIG-scalability SLO: mutating API call p99 ≤ 1 s | 1,000 ms | 200/s paced (open loop): p99 6.7 ms | 149× inside |',
    '| SIG-scalability SLO: LIST (namespace) p99 ≤ 30 s | 30,000 ms | 10,000 Services: slowest 130 ms | 230× inside |',
    '| SIG-scalability SLO: LIST (namespace) p99 ≤ 30 s | 30,000 ms | 20,000 EndpointSlices: slowest 260 ms | 115× inside |',
    '| vcluster load test, k3s on SQLite, 200 qps: mean 1.4 s | 1,400 ms | 200/s paced (open loop): mean 1.6 ms | 864× inside |',
    '| vcluster load test, k3s on SQLite, 200 qps: mean 1.4 s | 1,400 ms | 16 clients: mean 5.3 ms | 264× inside |',
    '| vcluster load test: offered rate | 200 creates/s | 16 clients: 2,950 creates/s | 15× the rate |',
  ].join('\n'));
  t.same(references([], []), [], 'nothing measured, nothing compared');
  const slow = references([create({ latencyMs: sum({ p99: 2500, mean: 2000 }), perSec: 150 })], []);
  t.match(slow.map((r) => r.ratio), ['2.5× over', '1.4× over', '0.8× the rate']);
});

const e1 = create({ perSec: 1100, serverCpuMsPerOp: 0.5 });
const e16 = create({ concurrency: 16, perSec: 3000, serverCpuMsPerOp: 0.25 });
const t1 = create({ perSec: 800, serverCpuMsPerOp: 0.9, latencyMs: sum({ p99: 5.55 }) });
const t16 = create({ concurrency: 16, perSec: 1400, serverCpuMsPerOp: 0.5 });
const slope: SlopePoint[] = [
  { services: 1, slices: 0, cases: [e1, e16] },
  { services: 10_001, slices: 20_000, cases: [c1, c16] },
  { services: 30_000, slices: 20_000, cases: [t1, t16] },
];

t.test('the slope: each point against the empty store', async (t) => {
  t.equal(formatSlope(slope), [
    '| Services + EndpointSlices in the store | 1 client: creates/s | p99 ms | server CPU ms/create | CPU × the empty store\'s | 16 clients: creates/s | p99 ms | server CPU ms/create | CPU × the empty store\'s |',
    '|---|---:|---:|---:|---:|---:|---:|---:|---:|',
    '| 1 + 0 | 1,100 | 3.2 | 0.50 | 1.00× | 3,000 | 3.2 | 0.25 | 1.00× |',
    '| 10,001 + 20,000 | 1,000 | 3.2 | 0.70 | 1.40× | 2,950 | 9.6 | 0.30 | 1.20× |',
    '| 30,000 + 20,000 | 800 | 5.5 | 0.90 | 1.80× | 1,400 | 3.2 | 0.50 | 2.00× |',
  ].join('\n'));
  t.match(formatSlope([{ services: 5, slices: 0, cases: [e1] }, { services: 9, slices: 0, cases: [c16] }]), /\| 5 \+ 0 \| 1,100 \| 3\.2 \| 0\.50 \| 1\.00× \| – \| – \| – \| – \|\n\| 9 \+ 0 \| – \| – \| – \| – \| 2,950 \| 9\.6 \| 0\.30 \| – \|/, 'a case missing at a point, or at the empty store, is a dash');
});

t.test('issue 24\'s targets, judged at the main point', async (t) => {
  const rows = targets({ creates: [c1, c16, paced], slope });
  t.equal(formatTargets(rows), [
    '| target | measured | met |',
    '|---|---:|---:|',
    '| 1 client: ≥ 700 creates/s (10,001 Services + 20,000 EndpointSlices) | 1,000/s | yes |',
    '| 16 clients: ≥ 1,500 creates/s (10,001 Services + 20,000 EndpointSlices) | 2,950/s | yes |',
    '| 1 client: server CPU per create ≤ 1.5× the empty store\'s (10,001 Services + 20,000 EndpointSlices) | 0.70 ms against 0.50 ms: 1.40× | yes |',
    '| 16 clients: server CPU per create ≤ 1.5× the empty store\'s (10,001 Services + 20,000 EndpointSlices) | 0.30 ms against 0.25 ms: 1.20× | yes |',
    '| 200/s paced (open loop): p99 ≤ 50 ms (the SLO\'s 1 s ÷ 20) (10,001 Services + 20,000 EndpointSlices) | p99 6.7 ms | yes |',
  ].join('\n'));
  const slow = targets({ creates: [t1, t16, create({ kind: 'paced', concurrency: null, qps: 200, latencyMs: sum({ p99: 51 }) })], slope: [slope[0]!, slope[2]!] });
  t.same(slow.map((r) => r.met), [true, false, false, false, false], 'below a target, or above the CPU ratio, is "no"');
  t.match(formatTargets(slow), /\| \*\*no\*\* \|/);
  t.same(targets({ creates: [], slope: [] }).map((r) => [r.measured, r.met]), [['not run', null], ['not run', null]], 'a case not run is not judged');
});

t.test('the whole report: header, sections, notes', async (t) => {
  const r: BenchResult = {
    meta: {
      date: '2026-12-01T00:00:00.000Z', node: 'v20.20.2', kernel: '6.18.44', cpus: 2, cpuModel: 'AMD EPYC', memTotalMiB: 24105, dataDirFs: 'ext4 (/dev/vda, mounted on /)',
      fsyncMs: summarize([0.4, 0.5, 0.6]), serverLogLevel: 'info', loadavgBefore: [0.5, 0.4, 0.3], loadavgAfter: [1.5, 0.9, 0.5], otherCpus: 0.05, quick: false,
    },
    creates: [c1, c16, paced], slope, load: [loadSvc, loadEps], watches: [watch()], lists: [list()],
    memory: { idleMiB: 106.2, afterLoadMiB: 240.8, afterAllMiB: 260.1, endHwmMiB: 300.4 },
    notes: ['a note'], totalWallMs: 95_400,
  };
  const text = formatReport(r);
  t.match(text, /^nodenet API server: 2 × AMD EPYC, 24,105 MiB, kernel 6\.18\.44, Node v20\.20\.2\n/);
  t.match(text, /Data dir on ext4 \(\/dev\/vda, mounted on \/\); 4 KiB write \+ fdatasync there: p50 0\.50 ms, p99 0\.60 ms/);
  t.match(text, /into a store already holding 10,001 Services \(the `kubernetes` one included\) and 20,000 EndpointSlices \(each case's Services are deleted after it/);
  t.match(text, /Server RSS: 106 MiB idle after start, 241 MiB after loading, 260 MiB at the end \(VmHWM at the end 300 MiB\)\./);
  t.match(text, /\nNotes:\n- a note\n/);
  t.match(text, /Total bench time 95 s; load average 0\.50 0\.40 0\.30 before, 1\.50 0\.90 0\.50 after; besides the server and the client, the machine .* used 0\.05 of the 2 CPUs/);
  t.match(text, /\| 200\/s paced \(open loop\) \|.*\n\(200\/s paced \(open loop\): latency counts from each request's scheduled time; the client sent at most 1\.5 ms late\.\)\n/);
  t.notMatch(formatReport({ ...r, notes: [] }), /Notes:/);
  t.match(formatReport({ ...r, meta: { ...r.meta, quick: true } }), /^nodenet API server \(--quick\):/);
  const sections = ['| case |', '| Services + EndpointSlices in the store |', '| target |', '| watchers |', '| list |', '| reference |'].map((h) => text.indexOf(h));
  t.ok(sections.every((i, k) => i > 0 && (k === 0 || i > sections[k - 1]!)), 'creates, the slope, the targets, watches, lists, references, in that order');
});

// ---- etcd ----

const meta = (o: Partial<BenchResult['meta']> = {}): BenchResult['meta'] => ({
  date: '2026-12-05T00:00:00.000Z', node: 'v20.20.2', kernel: '6.18.44', cpus: 2, cpuModel: 'AMD EPYC', memTotalMiB: 24105, dataDirFs: 'ext4 (/dev/vda, mounted on /)',
  fsyncMs: summarize([0.2, 0.25, 0.3]), serverLogLevel: 'info', loadavgBefore: [0.5, 0.4, 0.3], loadavgAfter: [1.5, 0.9, 0.5], otherCpus: 0.05, quick: false, ...o,
});
const cost = { walFsyncsPerOp: 3, walFsyncMeanMs: 0.5, proposalsPerOp: 1, backendCommitMeanMs: 8 };
const ec1 = create({ perSec: 300, latencyMs: sum({ p50: 3, p99: 9 }), serverCpuMsPerOp: 1.2, storeCpuMsPerOp: 2, etcdCost: cost });
const ec16 = create({ concurrency: 16, perSec: 900, latencyMs: sum({ p50: 17, p99: 40 }), serverCpuMsPerOp: 0.9, storeCpuMsPerOp: 1.1, etcdCost: { ...cost, walFsyncsPerOp: 0.5 } });
const sqliteRun: BenchResult = {
  meta: meta(), creates: [c1, c16, paced], slope, load: [loadSvc], watches: [watch()], lists: [list()],
  memory: { idleMiB: 106, afterLoadMiB: 240, afterAllMiB: 260, endHwmMiB: 300 }, notes: [], totalWallMs: 80_000,
};
const etcdRun: BenchResult = {
  ...sqliteRun, meta: meta({ storage: { kind: 'etcd', detail: 'etcd 3.4.23, 3 members on 127.0.0.1' } }), creates: [ec1, ec16],
  slope: [{ services: 1, slices: 0, cases: [{ ...ec1 }, { ...ec16 }] }, { services: 10_001, slices: 20_000, cases: [ec1, ec16] }],
  watches: [watch({ ackToEventMs: sum({ p50: 0.4 }), sentToEventMs: sum({ p50: 3.3, p99: 12 }) })], lists: [list({ fetchMs: sum({ p50: 120 }) })],
};
const fc = (o: Partial<FloorCase>): FloorCase => ({
  op: 'put', clients: 1, requests: 2000, errors: 0, firstError: null, wallMs: 4000, perSec: 500, latencyMs: sum({ p50: 1.8, p99: 6 }), etcdCpuMsPerOp: 1.5, clientCpuMsPerOp: 0.4, cost, ...o,
});
const floor: EtcdFloor = {
  version: '3.4.23', members: 3, clientMember: 0, leaderMember: 1, valueBytes: [595, 383],
  cases: [
    fc({ op: 'range-serializable', perSec: 2000, latencyMs: sum({ p50: 0.5, p99: 2 }), cost: null }),
    fc({ op: 'range-linearizable', perSec: 1500, latencyMs: sum({ p50: 0.7, p99: 2.5 }), cost: null }),
    fc({}),
    fc({ clients: 16, perSec: 1800, latencyMs: sum({ p50: 8, p99: 20 }), etcdCpuMsPerOp: 0.6, cost: { ...cost, walFsyncsPerOp: 0.4 } }),
    fc({ op: 'txn-create-2', perSec: 450, latencyMs: sum({ p50: 2, p99: 7 }) }),
    fc({ op: 'txn-create-2', clients: 16, perSec: 1600, latencyMs: sum({ p50: 9, p99: 22 }), etcdCpuMsPerOp: 0.7, cost: { ...cost, walFsyncsPerOp: 0.45 } }),
  ],
};

t.test('the create table with etcd: its members\' CPU between the server\'s and the client\'s; what etcd did per create', async (t) => {
  t.match(formatCreates([ec1]), /\| CPU ms\/create server \+ etcd \+ client \|[^\n]*\n[^\n]*\n\| 1 client \| 2,000 \| 300 \| 3\.0 \| 9\.0 \| 9\.0 \| 2\.0 \| 1\.2 \+ 2\.0 \+ 0\.31 \| 0 \|/);
  t.equal(formatEtcdCosts([ec1, c16]), [
    '| case | raft entries / create | WAL fsyncs / create (all members) | WAL fsync mean ms | etcd CPU ms/create |',
    '|---|---:|---:|---:|---:|',
    '| 1 client | 1.00 | 3.00 | 0.50 | 2.0 |',
  ].join('\n'), 'SQLite\'s cases have no row');
  t.match(formatReport(etcdRun), /\(etcd 3\.4\.23, 3 members on 127\.0\.0\.1, logging at info/);
  t.match(formatReport(etcdRun), /201 only after the etcd quorum committed it/);
  t.match(formatReport(etcdRun), /What etcd did per create/);
  t.match(formatReport(etcdRun), /besides the server, etcd's members and the client/);
  t.match(formatReport(etcdRun), /on etcd the event comes back through the server's etcd watch/);
  t.match(formatReport(sqliteRun), /the server fans out in the commit, before it answers/);
  t.notMatch(formatReport(sqliteRun), /What etcd did|etcd's members/);
});

t.test('the floor: one row per case, labelled by what it costs', async (t) => {
  t.equal(floorLabel({ op: 'range-linearizable', clients: 1 }), 'read, linearizable (a raft round trip: ReadIndex), 1 client');
  t.equal(floorLabel({ op: 'txn-create-2', clients: 16 }), 'txn: two creates-if-absent (nodenet\'s Service write), 16 clients');
  const text = formatFloor(floor);
  t.match(text, /\| read, serializable \(one member, no raft\), 1 client \| 2,000 \| 2,000 \| 0\.50 \| 2\.0 \| 1\.5 \| 0\.40 \| – \| – \| – \| 0 \|/);
  t.match(text, /\| put \(one key\), 16 clients \| 2,000 \| 1,800 \| 8\.0 \| 20 \| 0\.60 \| 0\.40 \| 1\.00 \| 0\.40 \| 0\.50 \| 0 \|/);
  t.equal(text.split('\n').length, 2 + floor.cases.length);
});

t.test('side by side: SQLite, etcd, etcd alone and the ratio; a place for the failover figures', async (t) => {
  const text = formatComparison({ runs: [sqliteRun, etcdRun], floor, failover: null });
  t.match(text, /^\|  \| SQLite \| etcd, 3 members \| etcd alone \| nodenet on etcd against etcd alone \|/);
  t.match(text, /\| durable creates\/s, 1 client \(10,001 Services \+ 20,000 EndpointSlices in the store\) \| 1,000 \| 300 \| 450 \| 67% of its rate \|/);
  t.match(text, /\| p50 \/ p99 ms, 16 clients \| 5\.0 \/ 9\.6 \| 17 \/ 40 \| 9\.0 \/ 22 \| 1\.9× its p50 \|/);
  t.match(text, /\| CPU ms per create, 1 client: server \+ etcd \| 0\.70 \+ – \| 1\.2 \+ 2\.0 \| – \+ 1\.5 \| – \|/);
  t.match(text, /\| watch delivery, 10 watchers: write acknowledged → event p50 ms \(negative: the event first\) \| -0\.29 \| 0\.40 \| – \| – \|/);
  t.match(text, /\| list 10,000 Services, one request: fetch p50 ms \| 95 \| 120 \| – \| – \|/);
  t.match(text, /\| failover: the etcd leader killed → the first acknowledged write \| no failover \(one process\) \| not measured \(--failover N, as root\) \| – \| – \|/);
  const measured = formatComparison({ runs: [sqliteRun, etcdRun], floor, failover: { etcdLeaderKilledToWriteMs: 1234, apiServerKilledToWatchMs: null, controllerLeaderKilledToReconcileMs: 16_500 } });
  t.match(measured, /leader killed → the first acknowledged write \| no failover \(one process\) \| 1,234 ms \|/);
  t.match(measured, /first reconcile by the new leader \| no failover \(one process\) \| 16,500 ms \|/);
  t.match(measured, /its watch resumed on another \| no failover \(one process\) \| not measured/);
  t.match(formatComparison({ runs: [sqliteRun, etcdRun], floor, failover: { etcdLeaderKilledToWriteMs: 1500, apiServerKilledToWatchMs: 300, controllerLeaderKilledToReconcileMs: 16_000, samples: { etcdLeader: [1200, 1500, 2100], apiServer: [300], controllerLeader: [16_000] } } }), /the first acknowledged write \| no failover \(one process\) \| 1,500 ms \(1,200–2,100, 3 rounds\) \|/, 'the median, and the range of the rounds');
  t.match(formatComparison({ runs: [etcdRun], floor: null, failover: null }), /\| durable creates\/s, 1 client [^|]*\| – \| 300 \| – \| – \|/, 'a backend not run, or no floor: dashes');
});

t.test('the floor in words: the disk, a raft round trip, the sum, how near nodenet comes, the published figures', async (t) => {
  const lines = floorAnalysis({ runs: [sqliteRun, etcdRun], floor, failover: null });
  t.match(lines[0], /4 KiB write \+ fdatasync in the data directory takes p50 0\.25 ms \(p99 0\.30 ms\); etcd's own WAL fsyncs averaged 0\.50 ms during the 1-client puts/);
  t.match(lines[1], /takes 0\.20 ms more than a serializable one \(p50 0\.70 against 0\.50 ms/);
  t.match(lines[2], /≈ 1\.2 ms here; etcd alone takes p50 1\.8 ms for a put \(500\/s\) and 2\.0 ms for nodenet's transaction of two creates \(450\/s\)/);
  t.match(lines[3], /nodenet on etcd, 1 client: p50 3\.0 ms, 300 creates\/s, 67% of etcd alone's rate for the same transaction: the other 1\.0 ms are the API server's/);
  t.match(lines[4], /16 clients: etcd alone 1,800 puts\/s and 1,600 transactions\/s .*nodenet on etcd 900 creates\/s, 56% of it/);
  t.match(lines[5], /583 writes\/s with 1 client, 44,341\/s with 1,000\. Here, 3 members on one disk and 2 CPUs: 500 puts\/s with 1 client \(0\.9× the published: the members, the client/);
  t.same(floorAnalysis({ runs: [sqliteRun], floor: null, failover: null }), [], 'no floor, no words');
});

t.test('the report of several backends: each run under its heading, then side by side and the floor', async (t) => {
  const text = formatComparisonReport({ runs: [sqliteRun, etcdRun], floor, failover: null });
  const at = ['## SQLite', '## etcd', '## Side by side', '## The floor: etcd alone (3.4.23, 3 members, the client on member 0, the raft leader member 1; values of 595 and 383 bytes)'].map((h) => text.indexOf(h));
  t.ok(at.every((i, k) => i >= 0 && (k === 0 || i > at[k - 1]!)), 'in that order');
  t.notMatch(formatComparisonReport({ runs: [etcdRun], floor: null, failover: null }), /## The floor/);
});
