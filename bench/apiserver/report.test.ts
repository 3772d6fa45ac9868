import t from 'tap';
import { formatReferences } from '../lib/report.js';
import { summarize, type Summary } from '../lib/stats.js';
import {
  createLabel, formatCreates, formatLists, formatReport, formatSlope, formatTargets, formatWatches, references, targets,
  type BenchResult, type CreateCase, type ListCase, type SlopePoint, type WatchCase,
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
