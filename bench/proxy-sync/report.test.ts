import t from 'tap';
import { commandTime, evaluateTargets, targets30k, formatTable, formatTargets, ms, parseCaseResult, splitLine, type CaseResult, type SyncMeasure } from './report.js';

const sync = (o: Partial<SyncMeasure> = {}): SyncMeasure => ({
  ok: true, wallMs: 100, durationMs: 90, scope: 'full', changedServices: null, renderMs: null, applyMs: null, kernelMs: null, commands: [], error: null, ...o,
});
const change = (d: number, wall = d + 5): SyncMeasure => sync({ wallMs: wall, durationMs: d, scope: 'partial', changedServices: 1 });

function result(o: Partial<CaseResult> = {}): CaseResult {
  return {
    mode: 'nftables', services: 10000, netns: 'nn-bps-1-nftables-10000', iptablesBackend: null, feedMs: 300,
    full: sync({ wallMs: 2410.4, durationMs: 2400.2, renderMs: 900, applyMs: 1500 }), rules: 72002, elements: 21000,
    kernelEndpointChains: 20000, rssBaselineMiB: 95, rssMiB: 310.6, rssAfterGcMiB: 250.2, heapUsedMiB: 150,
    changes: [change(60), change(40), change(50)], restoreFloor: null, restart: sync({ durationMs: 2500 }), restartSkipped: null, capped: false, error: null,
    ...o,
  };
}

t.test('statistics and number formats', async (t) => {
  const row = (changes: SyncMeasure[]) => formatTable([result({ changes })], 600).split('\n')[2]!.split(' | ')[4];
  t.equal(row([change(60), change(40), change(50)]), '50 / 60', 'the change p50 of an odd count: the middle one');
  t.equal(row([change(60), change(40), change(50), change(45)]), '45 / 60', 'of an even count: the lower middle (bench/lib/stats), not the mean of the two');
  t.equal(ms(4.56), '4.6');
  t.equal(ms(12345.6), '12,346');
  t.equal(ms(NaN), '–');
});

t.test('the table: one row per case, the columns the issue asks for', async (t) => {
  const ipt = result({
    mode: 'iptables', iptablesBackend: 'nft', services: 30000, rules: 250000, elements: null,
    full: sync({ ok: false, durationMs: 600000, wallMs: 600000, error: 'killed' }), changes: [], restart: null, capped: true,
    rssMiB: null, rssAfterGcMiB: null, error: 'full sync failed: killed',
  });
  const skipped = result({ mode: 'iptables-legacy', iptablesBackend: 'legacy', services: 1000, rules: 8309, elements: null, restart: null, restartSkipped: '--no-restart', restoreFloor: { noopMs: 31.2, replaceMs: 8.04 }, rssAfterGcMiB: null,
    changes: [change(5), sync({ ok: false, scope: 'partial', error: 'boom' })] });
  const text = formatTable([result(), ipt, skipped], 600);
  t.equal(text, [
    '| mode | Services | rules/elements | full sync (ms) | one-endpoint change p50/max (ms) | restart full sync (ms) | restore floor no-op / replace (ms) | RSS (MiB): after the sync / after the GC |',
    '|---|---:|---:|---:|---:|---:|---:|---:|',
    '| nftables | 10,000 | 72,002 + 21,000 | 2,400 | 50 / 60 | 2,500 | – | 311 / 250 |',
    '| iptables (nft) | 30,000 | 250,000 | > 600,000 (capped) | capped | – | – | – |',
    '| iptables (legacy) | 1,000 | 8,309 | 2,400 | 5.0 / 5.0 (1 failed) | skipped | 31 / 8.0 | 311 |',
  ].join('\n'));
});

t.test('targets: both modes at 10k under 200 ms per change (every repeat), nftables full under 5 s', async (t) => {
  const nft = result();
  const ipt = result({ mode: 'iptables', iptablesBackend: 'nft', rules: 80000, elements: null, changes: [change(150, 170), change(180, 210), change(120, 130)] });
  const v = evaluateTargets([nft, ipt], ['iptables', 'nftables']);
  t.same(v.map((x) => x.pass), [false, true, true]);
  t.match(v[0]!, { target: /iptables \(nft\)/, detail: 'wall p50 170 ms, max 210 ms over 3' });
  t.match(v[2]!, { target: 'full nftables sync at 10,000 Services < 5 s', detail: 'wall 2,410 ms' });
  t.match(formatTargets(v), /^- one-endpoint change at 10,000 Services < 200 ms, iptables \(nft\): FAIL \(wall p50 170 ms, max 210 ms over 3\)\n/);

  const slow = result({ full: sync({ wallMs: 5000 }) });
  t.equal(evaluateTargets([slow], ['nftables'])[1]!.pass, false, '5 s is not under 5 s');
  const failedChange = result({ changes: [change(10), sync({ ok: false, scope: 'partial', error: 'x' })] });
  t.match(evaluateTargets([failedChange], ['nftables'])[0]!, { pass: false, detail: 'a change sync failed' });
  const capped = result({ changes: [], capped: true });
  t.match(evaluateTargets([capped], ['nftables'])[0]!, { pass: false, detail: 'no change measured (case capped)' });
  const other = evaluateTargets([result({ services: 1000 })], ['iptables', 'nftables']);
  t.same(other.map((x) => x.pass), [null, null, null], 'no 10k case: not measured, neither pass nor fail');
  t.match(formatTargets(other), /NOT MEASURED \(no 10,000-Service case in this run\)/);
  t.equal(evaluateTargets([nft], ['iptables']).length, 1, 'no nftables verdict when nftables was not run');
});

t.test('parseCaseResult: accepts what a child prints, names the bad field otherwise', async (t) => {
  const r = result({ mode: 'iptables', iptablesBackend: 'legacy' });
  t.same(parseCaseResult(JSON.parse(JSON.stringify(r))), r);
  const floored = result({ mode: 'iptables-legacy', iptablesBackend: 'legacy', restoreFloor: { noopMs: 900, replaceMs: 1800 } });
  t.same(parseCaseResult(JSON.parse(JSON.stringify(floored))), floored, 'the restore floor crosses the boundary');
  const { restoreFloor: _drop, ...older } = r;
  t.same(parseCaseResult(JSON.parse(JSON.stringify(older))), r, 'a result from before the floor was measured: null');
  t.same(parseCaseResult(JSON.parse(JSON.stringify(result({ full: null, restart: null })))), result({ full: null, restart: null }));
  const kerneled = result({ full: sync({ renderMs: 400, applyMs: 1300, kernelMs: 830 }) });
  t.equal(parseCaseResult(JSON.parse(JSON.stringify(kerneled))).full?.kernelMs, 830, "the kernel's share of the apply crosses the boundary");
  const inVm = { ...result({}), mode: 'ipvs' as const, where: 'a qemu VM, kernel 6.1.0-57-amd64, tcg' };
  t.same(parseCaseResult(JSON.parse(JSON.stringify(inVm))), inVm, 'an IPVS case from the VM, with where it ran');
  const noKernel = JSON.parse(JSON.stringify(r)) as { full: Record<string, unknown> };
  delete noKernel.full['kernelMs'];
  t.equal(parseCaseResult(noKernel).full?.kernelMs, null, 'a result from before the kernel share was measured: null');
  const bad = (path: (o: Record<string, unknown>) => void): unknown => {
    const o = JSON.parse(JSON.stringify(r)) as Record<string, unknown>;
    path(o);
    return o;
  };
  t.throws(() => parseCaseResult(null), /result: expected an object/);
  t.throws(() => parseCaseResult(bad((o) => (o['mode'] = 'userspace'))), /result\.mode: expected one of/);
  t.throws(() => parseCaseResult(bad((o) => (o['services'] = '10'))), /result\.services: expected a number/);
  t.throws(() => parseCaseResult(bad((o) => (o['iptablesBackend'] = 'xt'))), /result\.iptablesBackend/);
  t.throws(() => parseCaseResult(bad((o) => (o['changes'] = {}))), /result\.changes: expected an array/);
  t.throws(() => parseCaseResult(bad((o) => ((o['changes'] as Record<string, unknown>[])[1]!['wallMs'] = null))), /result\.changes\[1\]\.wallMs: expected a number/);
  t.throws(() => parseCaseResult(bad((o) => ((o['full'] as Record<string, unknown>)['scope'] = 'some'))), /result\.full\.scope/);
  t.throws(() => parseCaseResult(bad((o) => delete o['capped'])), /result\.capped: expected a boolean/);
  t.throws(() => parseCaseResult(bad((o) => ((o['full'] as Record<string, unknown>)['kernelMs'] = 'x'))), /result\.full\.kernelMs: expected a number or null/);
  t.throws(() => parseCaseResult(bad((o) => (o['restoreFloor'] = { noopMs: 1 }))), /result\.restoreFloor\.replaceMs: expected a number/);
});

t.test('splitLine: the commands a sync ran, and the rest', async (t) => {
  const m = sync({ durationMs: 1010, commands: [{ cmd: 'nft -j list tables ip', startMs: 1000, ms: 840.2, exitCode: 0 }, { cmd: 'nft -f -', startMs: 1850, ms: 130, exitCode: 0 }] });
  t.equal(splitLine(m), '1,010 ms = nft -j list tables ip 840 + nft -f - 130 + other 40');
  const par = sync({
    durationMs: 100,
    commands: [
      { cmd: 'a', startMs: 0, ms: 10, exitCode: 0 },
      { cmd: 'b', startMs: 1, ms: 7, exitCode: 1 },
      { cmd: 'c', startMs: 2, ms: 12, exitCode: 1 },
      { cmd: 'restore', startMs: 20, ms: 60, exitCode: 0 },
    ],
  });
  t.equal(commandTime(par.commands), 74, 'overlaps counted once: [0,14] + [20,80]');
  t.equal(splitLine(par), '100 ms = a 10 || b 7.0 || c 12 + restore 60 + other 26');
  t.equal(splitLine(sync({ durationMs: 5.5, commands: [] })), '5.5 ms = other 5.5');
  t.throws(() => parseCaseResult({ ...JSON.parse(JSON.stringify(result())), full: { ...sync(), commands: [{ cmd: 1 }] } }), /result\.full\.commands\[0\]\.cmd/);
});

t.test('targets at 30,000 Services: nftables (either layout) full ≤ 3 s and every change ≤ 150 ms; RSS held ≤ 250 MiB in every mode', async (t) => {
  const sharded = result({ mode: 'nftables-sharded', services: 30000, full: sync({ durationMs: 2900 }), changes: [change(90), change(150), change(80)], rssAfterGcMiB: 221 });
  const one = result({ services: 30000, full: sync({ durationMs: 4800 }), changes: [change(190), change(140)], rssAfterGcMiB: 218 });
  const legacy = result({ mode: 'iptables-legacy', iptablesBackend: 'legacy', services: 30000, rssAfterGcMiB: 260 });
  const v = targets30k([sharded, one, legacy], ['nftables-sharded', 'nftables', 'iptables-legacy']);
  t.same(v.map((x) => [x.target, x.pass]), [
    ['full sync at 30,000 Services ≤ 3 s, nftables (8 shards)', true],
    ['one-endpoint change at 30,000 Services ≤ 150 ms, nftables (8 shards)', true],
    ['RSS held at 30,000 Services ≤ 250 MiB, nftables (8 shards)', true],
    ['full sync at 30,000 Services ≤ 3 s, nftables', false],
    ['one-endpoint change at 30,000 Services ≤ 150 ms, nftables', false],
    ['RSS held at 30,000 Services ≤ 250 MiB, nftables', true],
    ['RSS held at 30,000 Services ≤ 250 MiB, iptables (legacy)', false],
  ]);
  t.match(v[1]!.detail, 'p50 90 ms, max 150 ms over 3');
  t.same(targets30k([result()], ['nftables']).map((x) => x.pass), [null, null, null], 'no 30,000-Service case: not measured');
});

t.test('IPVS cases: the mode, and where they ran when not here', async (t) => {
  const label = (o: Partial<CaseResult>) => formatTable([result({ mode: 'ipvs', elements: null, ...o })], 600).split('\n')[2]!.split(' | ')[0];
  t.equal(label({}), '| IPVS');
  t.equal(label({ where: 'a qemu VM, kernel 6.1.0-57-amd64, tcg' }), '| IPVS (a qemu VM, kernel 6.1.0-57-amd64, tcg)');
});
