import t from 'tap';
import { checkTargets, table, targetsTable, type PluginKind, type Row } from './report.js';

const row = (plugin: string, kind: PluginKind, conc: number, addP50: number, perSec: number): Row => ({
  plugin, kind, conc,
  add: { p50: addP50, p99: addP50 * 2, perSec },
  del: { p50: addP50, p99: addP50 * 2, perSec },
  agentAdd: kind === 'nodenet' ? { p50: 4, p99: 9 } : null,
  agentDel: null,
  cpuPerAdd: { plugin: 30, agent: kind === 'nodenet' ? 6 : null },
});

const rows: Row[] = [
  row('floor', 'floor', 1, 25.5, 38),
  row('floor', 'floor', 16, 400, 72),
  row('nodenet, 0 Services', 'nodenet', 1, 33.5, 28),
  row('nodenet, 0 Services', 'nodenet', 16, 500, 57.6),
  row('nodenet, 10,000 Services', 'nodenet', 1, 33.8, 27),
  row('nodenet, 10,000 Services', 'nodenet', 16, 520, 57.5),
  row('reference', 'reference', 1, 15.1, 60),
  row('reference', 'reference', 16, 130, 122),
];

t.test('latency: ADD p50 at concurrency 1 against floor + 8 ms, the limit itself included', async (t) => {
  const lat = checkTargets(rows).filter((c) => c.target === 'latency');
  t.same(lat.map((c) => [c.plugin, c.value, c.met]), [['nodenet, 0 Services', 33.5, true], ['nodenet, 10,000 Services', 33.8, false]]);
  t.equal(lat[0]!.floor, 25.5);
  t.equal(lat[0]!.limit, 33.5);
  t.equal(lat[0]!.reference, 15.1);
});

t.test('rate: ADDs/s at concurrency 16 against 0.8 × the floor\'s', async (t) => {
  const rate = checkTargets(rows).filter((c) => c.target === 'rate');
  t.same(rate.map((c) => [c.plugin, c.met]), [['nodenet, 0 Services', true], ['nodenet, 10,000 Services', false]]);
  t.equal(rate[0]!.limit, 72 * 0.8);
  t.equal(rate[0]!.reference, 122);
});

t.test('only nodenet rows are checked; no floor row, no target; NaN is never met', async (t) => {
  t.equal(checkTargets(rows).length, 4);
  t.same(checkTargets(rows.filter((r) => r.kind !== 'floor')), []);
  const onlyC1 = checkTargets(rows.filter((r) => !(r.kind === 'floor' && r.conc === 16)));
  t.same(onlyC1.map((c) => c.target), ['latency', 'latency']);
  const nan = checkTargets([row('floor', 'floor', 1, 25, 1), row('n', 'nodenet', 1, NaN, 0)]);
  t.equal(nan[0]!.met, false);
  t.equal(checkTargets(rows.filter((r) => r.kind !== 'reference'))[0]!.reference, null);
  const withExec = [row('/bin/true', 'exec-floor', 1, 3, 300), row('/bin/true', 'exec-floor', 16, 40, 600), ...rows];
  t.same(checkTargets(withExec), checkTargets(rows), 'the /bin/true rows are shown, never the floor the targets are set against');
});

t.test('tables: every row, and the targets with the verdicts', async (t) => {
  const tab = table(rows, 48);
  t.match(tab, /^48 pods per batch/);
  t.match(tab, /\| nodenet, 0 Services \| 1 \| 33\.5 \/ 67\.0 \| .* \| 4\.0 \/ 9\.0 \| – \| 30\.0 \+ 6\.0 \|/);
  t.match(tab, /\| floor \| 16 \| 400 \/ 800 \|/);
  const tt = targetsTable(checkTargets(rows));
  t.match(tt, /\| ADD p50 at concurrency 1 ≤ floor \+ 8 ms \| nodenet, 0 Services \| 25\.5 ms \| 33\.5 ms \| 33\.5 ms \| 15\.1 ms \| yes \|/);
  t.match(tt, /\| ADD p50 at concurrency 1 ≤ floor \+ 8 ms \| nodenet, 10,000 Services \| .* \| \*\*no\*\* \|/);
  t.match(tt, /\| ADDs\/s at concurrency 16 ≥ 0\.8 × floor \| nodenet, 0 Services \| 72\.0\/s \| 57\.6\/s \| 57\.6\/s \| 122\/s \| yes \|/);
  t.equal(targetsTable([]), 'targets: no floor row to compare with\n');
});
