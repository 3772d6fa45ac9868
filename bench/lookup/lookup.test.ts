import t from 'tap';
import { FlagError } from '../../agent/src/cli/flags.js';
import { parseLookupArgs } from './args.js';
import type { CaseResult, TargetRun } from './case.js';
import { chartSpec } from './chart.js';
import { modeLabel } from './modes.js';
import { kubeServicesOrder, parseClientOutput } from './parse.js';
import { bar, elapsed } from './progress.js';
import { chartRows, formatTable, parseDocument, SCHEMA, shapeLines, type LookupDocument, type Machine } from './report.js';
import { summarize } from './stats.js';
import { changeTargets, chunk, FILE_CHUNK, fileName, fileOf, manifestFiles } from './workload.js';

t.test('percentiles are nearest-rank, the summary leaves its input alone', async (t) => {
  const xs = Array.from({ length: 100 }, (_, i) => 100 - i); // 100..1
  const s = summarize(xs);
  t.equal(s.count, 100);
  t.equal(s.p50, 50);
  t.equal(s.p90, 90);
  t.equal(s.p99, 99);
  t.equal(s.min, 1);
  t.equal(s.max, 100);
  t.equal(s.mean, 50.5);
  t.equal(xs[0], 100, 'input not sorted in place');
  t.same(Object.keys(s), ['count', 'p50', 'p90', 'p99', 'min', 'max', 'mean'], 'the results\' shape');
  t.equal(summarize([1, 2, 3, 4]).p50, 2, 'an even count: the lower middle (bench/lib/stats)');
  t.equal(summarize(Float64Array.from([7])).p99, 7);
  t.ok(Number.isNaN(summarize([]).p50), 'no samples: NaN, not 0');
});

t.test('the native client output: ns to µs, counts cross-checked', async (t) => {
  const out = ['c 25000', 'c 30000', 'c 100000', 'r 40000', 'r 42000', 'end 2000000000 3 1 115', ''].join('\n');
  const r = parseClientOutput(out);
  t.equal(r.connect.count, 3);
  t.equal(r.connect.p50, 30);
  t.equal(r.connect.max, 100);
  t.equal(r.connectsPerSecond, 1.5);
  t.equal(r.failures, 1);
  t.equal(r.firstErrno, 115);
  t.equal(r.elapsedMs, 2000);
  t.equal(r.rtt?.count, 2);
  t.equal(r.rtt?.p50, 40);
  t.equal(parseClientOutput('end 1000 0 0 0\n').rtt, null);
  t.throws(() => parseClientOutput('c 1\nc 2\n'), /no end line/);
  t.throws(() => parseClientOutput('c 1\nend 10 2 0 0\n'), /reports 2 connects but printed 1/);
  t.throws(() => parseClientOutput('c -5\nend 10 1 0 0\n'), /not a duration/);
});

t.test('the order KUBE-SERVICES walks: the jumps to per-Service chains, in rule order', async (t) => {
  const save = [
    '*nat',
    ':KUBE-SERVICES - [0:0]',
    '-A KUBE-SERVICES -d 10.96.0.7/32 -p tcp -m comment --comment "lookup/lk-7 cluster IP" -m tcp --dport 80 -j KUBE-SVC-AAAA',
    '-A KUBE-SERVICES -d 10.96.0.2/32 -p tcp -m tcp --dport 80 -j KUBE-SVC-BBBB',
    '-A KUBE-SERVICES -d 10.96.0.9/32 -p tcp -m tcp --dport 80 -j KUBE-EXT-CCCC',
    '-A KUBE-SERVICES -m addrtype --dst-type LOCAL -j KUBE-NODEPORTS',
    '-A KUBE-SVC-AAAA -d 10.96.0.1/32 -j KUBE-SVC-X',
    'COMMIT',
  ].join('\n');
  t.same(kubeServicesOrder(save), ['10.96.0.7', '10.96.0.2']);
  t.same(kubeServicesOrder(save.replace(/KUBE-/g, 'NN-'), 'NN'), ['10.96.0.7', '10.96.0.2'], 'another prefix');
});

t.test('the manifests: files of FILE_CHUNK Services, each with its slice; a change rewrites one file', async (t) => {
  const eps = { a: '10.244.1.3', b: '10.244.1.4' };
  const files = manifestFiles(2500, eps);
  t.same([...files.keys()], [fileName(0), fileName(1), fileName(2)]);
  const items = (name: string) => (JSON.parse(files.get(name)!) as { kind: string; items: Record<string, unknown>[] });
  t.equal(items(fileName(0)).kind, 'List');
  t.equal(items(fileName(0)).items.length, 2 * FILE_CHUNK);
  t.equal(items(fileName(2)).items.length, 2 * 500);
  const [svc, sl] = items(fileName(2)).items as [{ metadata: { name: string }; spec: { clusterIP: string; ports: { port: number; targetPort: number }[] } }, { endpoints: { addresses: string[] }[] }];
  t.equal(svc.metadata.name, 'lk-2001');
  t.equal(svc.spec.clusterIP, '10.96.7.209', '10.96.0.0 + 2001');
  t.same(svc.spec.ports.map((p) => [p.port, p.targetPort]), [[80, 8080]]);
  t.same(sl.endpoints.map((e) => e.addresses[0]), [eps.a, eps.b]);
  t.equal(fileOf(1), 0);
  t.equal(fileOf(1000), 0);
  t.equal(fileOf(1001), 1);
  const changed = chunk(fileOf(1500), 2500, eps, new Map([[1500, [eps.a, '10.244.1.200']]]));
  t.not(changed, files.get(fileName(1)));
  t.match(changed, /10\.244\.1\.200/);
  t.throws(() => manifestFiles(0, eps), RangeError);
  t.throws(() => manifestFiles(70000, eps), RangeError);
});

t.test('one-endpoint changes never touch the first or the last Service', async (t) => {
  t.same(changeTargets(100, 3), [26, 51, 75]);
  for (const n of [3, 4, 10, 30000]) {
    const c = changeTargets(n, 3);
    t.ok(c.length >= 1 && c.every((x) => x > 1 && x < n), `${n}: ${c}`);
  }
  t.same(changeTargets(2, 3), [], 'no Service in between');
});

t.test('the flags: defaults, lists sorted, bad values refused naming the flag', async (t) => {
  const d = parseLookupArgs([]);
  t.same(d.modes, ['iptables-legacy', 'nftables', 'ipvs']);
  t.same(d.sizes, [100, 1000, 5000, 10000, 30000]);
  t.equal(d.count, 20000);
  t.equal(d.seconds, 3);
  t.equal(d.chart, true);
  t.equal(d.vmModes, null);
  const a = parseLookupArgs(['--modes', 'nftables', '--sizes', '1000,10', '--vm-modes', 'nftables', '--no-chart', '--seconds', '0.5']);
  t.same(a.sizes, [10, 1000]);
  t.same(a.vmModes, ['nftables', 'ipvs'], 'the VM always runs IPVS');
  t.equal(a.chart, false);
  t.equal(a.seconds, 0.5);
  t.same(parseLookupArgs(['--modes', 'none', '--include', 'a.json,b.json']).modes, [], '--modes none: only the included runs');
  t.same(parseLookupArgs(['--include', 'a.json,b.json']).include, ['a.json', 'b.json']);
  t.throws(() => parseLookupArgs(['--modes', 'ebpf']), { constructor: FlagError, message: /--modes: unknown mode "ebpf"/ });
  t.throws(() => parseLookupArgs(['--sizes', '0']), /--sizes: 0 is outside/);
  t.throws(() => parseLookupArgs(['--sizes', '10,10']), /repeats/);
  t.throws(() => parseLookupArgs(['--seconds', 'x']), /--seconds/);
  t.throws(() => parseLookupArgs(['--out', '']), /--out needs/);
  t.throws(() => parseLookupArgs(['extra']), /unexpected argument "extra"/);
  t.throws(() => parseLookupArgs(['--help']), { constructor: FlagError, message: /usage: nodenet bench lookup/ });
});

const run = (p50: number, p99: number, cps: number, rtt: number | null = null): TargetRun['run'] => ({
  connect: { count: 1000, p50, p90: p50 * 1.5, p99, min: p50 / 2, max: p99 * 2, mean: p50 },
  connectsPerSecond: cps, failures: 0, firstErrno: 0, elapsedMs: 1000,
  rtt: rtt === null ? null : { count: 100, p50: rtt, p90: rtt, p99: rtt, min: rtt, max: rtt, mean: rtt },
});
const kase = (mode: CaseResult['mode'], services: number, first: number, last: number, o: Partial<CaseResult> = {}): CaseResult => ({
  mode, services, fullSyncMs: 1234.4, agentReadyMs: 2000, rules: 5000, changeSyncMs: [30, 10, 20], rssMiB: 120.4, rssHeldMiB: 95.2, order: 'x', conntrackMax: 262144, error: null,
  targets: [{ position: 'first', clusterIP: '10.96.0.1', rank: 1, run: run(first, first * 3, 20000) }, { position: 'last', clusterIP: `10.96.0.${services}`, rank: services, run: run(last, last * 3, 7000, 40) }],
  ...o,
});
const host: Machine = { where: 'host', kernel: '6.18', cpus: 2, cpuModel: 'EPYC', accel: null, versions: { nft: '1.0.6' }, iptablesBackend: 'nft' };
const vm: Machine = { ...host, where: 'vm', kernel: '6.1.0-57-amd64', accel: 'tcg' };
const doc: LookupDocument = {
  schema: SCHEMA, date: '2026-12-02T00:00:00Z', command: 'nodenet bench lookup', args: {},
  runs: [
    { machine: host, results: [kase('iptables-legacy', 100, 25, 30), kase('iptables-legacy', 10000, 25, 70), kase('nftables', 10000, 26, 26), kase('iptables', 100, 1, 1, { error: 'boom | bad' })] },
    { machine: vm, results: [kase('ipvs', 100, 400, 410)] },
  ],
  missing: [],
};

t.test('the table: a row per case, medians, failures said in the row', async (t) => {
  const table = formatTable(doc).split('\n');
  t.equal(table.length, 2 + 5);
  t.match(table[3], /^\| iptables \(legacy\) \| 10,000 \| 5,000 \| 1,234 \| 20 \| 120 \/ 95 \| 25\.0 \/ 70\.0 \| 75\.0 \/ 210 \| 20,000 \/ 7,000 \| 40\.0 \|$/);
  t.match(table[5], /^\| iptables \(nft\) \| 100 \| failed: boom \/ bad/);
  t.match(table[6], /^\| ipvs \(VM\) \| 100 \|/);
  const older = formatTable({ ...doc, runs: [{ machine: host, results: [(({ rssHeldMiB: _held, ...rest }) => rest)(kase('nftables', 100, 26, 26))] }] }).split('\n');
  t.match(older[2], /\| 120 \/ – \|/, 'a result from before the held RSS was measured shows a dash');
  t.equal(modeLabel('iptables'), 'iptables');
});

t.test('the chart data: p50 and p99 to the first and last Service, per machine; failed cases left out', async (t) => {
  const rows = chartRows(doc);
  t.equal(rows.length, 4 * 4, '4 good cases x 2 targets x 2 statistics');
  t.ok(rows.every((r) => r.mode !== 'iptables (nft)'));
  const r = rows.find((x) => x.mode === 'iptables (legacy)' && x.services === 10000 && x.stat === 'p99' && x.target === 'last Service');
  t.equal(r?.latencyUs, 210);
  t.equal(rows.filter((x) => x.machine.startsWith('qemu VM')).length, 4);
  t.ok(rows.filter((x) => x.machine.startsWith('qemu VM')).every((x) => x.mode === 'ipvs'), 'the facet says VM; the mode name does not repeat it');
  const spec = chartSpec(rows, 'title') as { data: { values: unknown[] }; facet: Record<string, { field: string }>; spec: { encoding: Record<string, { field: string; scale?: { type?: string } }> } };
  t.equal(spec.data.values.length, rows.length);
  t.equal(spec.facet['row']!.field, 'machine');
  t.equal(spec.facet['column']!.field, 'stat');
  t.equal(spec.spec.encoding['x']!.field, 'services');
  t.equal(spec.spec.encoding['x']!.scale?.type, 'log');
  t.equal(spec.spec.encoding['color']!.field, 'mode');
  t.equal(spec.spec.encoding['strokeDash']!.field, 'target');
  const vl = await import('vega-lite');
  t.ok(vl.compile(spec as never).spec, 'Vega-Lite compiles the spec');
});

t.test('the shape, in words: last vs first at the largest N of each mode', async (t) => {
  const lines = shapeLines(doc);
  t.equal(lines.length, 3, 'iptables (legacy), nftables, ipvs; the failed mode has none');
  t.match(lines[0], /iptables \(legacy\) at 10,000 Services: the last Service's connect p50 is 2\.80× the first's/);
  t.match(lines[1], /nftables at 10,000 Services: .* 1\.00×/);
  t.match(lines[2], /ipvs \(VM\) at 100/);
});

t.test('the progress bar', async (t) => {
  t.equal(bar(0, 4, 8), '[········]');
  t.equal(bar(2, 4, 8), '[####····]');
  t.equal(bar(9, 4, 8), '[########]');
  t.equal(elapsed(61_500), '1:01');
});

t.test('an earlier result file joins a run only when it is one', async (t) => {
  const back = parseDocument(JSON.parse(JSON.stringify(doc)) as unknown, 'x.json');
  t.equal(back.runs.length, 2);
  t.same(back.runs[1]!.machine, vm);
  t.throws(() => parseDocument({ schema: 'other' }, 'x.json'), /x\.json is not a nodenet\.bench\.lookup\/v1 result file/);
  t.throws(() => parseDocument({ schema: SCHEMA, runs: [{}] }, 'x.json'), /runs must be a list/);
  t.same(parseDocument({ schema: SCHEMA, runs: [] }, 'x.json').missing, [], 'missing defaults to none');
});
