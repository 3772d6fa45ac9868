/**
 * bench/lookup/run: `nodenet bench lookup` (see args.ts for the flags). The
 * host's modes run here, one lab per case (measure.ts); IPVS runs here when
 * this kernel has it, and otherwise in a qemu VM of Debian's kernel through
 * test-vm/ (suite `lookup`, with the other modes on that same kernel for a
 * fair comparison). Then the table on stdout, and the JSON, SVG and PNG
 * under --out. A mode that could not run is said, never left out silently.
 */
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { packageRoot } from '../../agent/src/config/paths.js';
import { runVmSuite } from '../lib/vm-suite.js';
import type { Runner } from '../../agent/src/exec/runner.js';
import { probeIpvs } from '../../agent/src/netfilter/ipvs/ipvs-probe.js';
import type { LookupArgs } from './args.js';
import type { CaseResult } from './case.js';
import { describeMachine, measure } from './measure.js';
import type { LookupMode } from './modes.js';
import { Progress } from './progress.js';
import { chartRows, formatMachines, formatTable, parseDocument, REFERENCE, SCHEMA, shapeLines, type LookupDocument, type Machine, type RunSet } from './report.js';

export interface LookupDeps {
  readonly runner: Runner;
  readonly stdout: (s: string) => void;
  readonly stderr: (s: string) => void;
  readonly tty: boolean;
  readonly argv: readonly string[];
}

const fmt = (n: number) => n.toLocaleString('en-US');

/** Runs test-vm's `lookup` suite; its lookup.json, or why there is none. */
async function inVm(a: LookupArgs, modes: readonly LookupMode[], sizes: readonly number[], progress: Progress): Promise<RunSet | string> {
  const biggest = Math.max(...sizes);
  // Under TCG a case at 30,000 Services takes many minutes: the limit grows with the work asked for.
  const timeoutS = Math.round(1800 + modes.length * sizes.reduce((s, n) => s + 60 + n * 0.12, 0));
  progress.say(`IPVS: this kernel has none; running ${modes.join(', ')} at ${sizes.map(fmt).join(', ')} Services in a qemu VM (test-vm/, up to ${biggest >= 10000 ? 'hours' : 'minutes'} under TCG)`);
  const r = await runVmSuite({
    suite: 'lookup', file: 'lookup.json', timeoutS,
    params: { modes: modes.join(','), sizes: sizes.join(','), count: a.count, seconds: a.seconds, warmup: a.warmup, rtt: a.rtt, changes: a.changes },
    onLine: (line) => { if (/^test-vm: |\[lookup \d+\/\d+\]/.test(line)) progress.say(`  vm: ${line.replace(/^test-vm: /, '')}`); },
  });
  return 'why' in r ? `IPVS: ${r.why}` : (r.doc as RunSet);
}

export async function runLookup(a: LookupArgs, d: LookupDeps): Promise<number> {
  if (process.getuid?.() !== 0) {
    d.stderr('bench lookup needs root: it builds network namespaces and runs agents in them\n');
    return 2;
  }
  const progress = new Progress(d.stderr, d.tty);
  const started = new Date();
  let interrupted = false;
  const onSig = () => {
    interrupted = true;
    progress.say('interrupted: finishing the case in progress (its lab is removed), then stopping');
  };
  process.on('SIGINT', onSig);
  process.on('SIGTERM', onSig);
  const missing: string[] = [];
  const runs: RunSet[] = [];
  try {
    const ipvsHere = a.modes.includes('ipvs') ? (await probeIpvs({ runner: d.runner })).available : false;
    const hostModes = a.modes.filter((m) => m !== 'ipvs' || ipvsHere);
    const limits = { count: a.count, seconds: a.seconds, warmup: a.warmup, rtt: a.rtt, connectTimeoutMs: 1000 };
    if (hostModes.length) {
      const results: CaseResult[] = await measure({
        ...limits, modes: hostModes, sizes: a.sizes, changes: a.changes, runner: d.runner,
        progress: (i, n, what) => progress.step(i, n, what), interrupted: () => interrupted,
      });
      runs.push({ machine: describeMachine('host', null), results });
      for (const r of results) if (r.error) progress.say(`${r.mode} ${fmt(r.services)}: FAILED: ${r.error}`);
    }
    if (a.modes.includes('ipvs') && !ipvsHere && !interrupted) {
      const vmModes = a.vmModes ?? a.modes;
      const vm = await inVm(a, vmModes, a.vmSizes ?? a.sizes, progress);
      if (typeof vm === 'string') missing.push(vm);
      else runs.push(vm);
    }
  } finally {
    progress.done();
    process.removeListener('SIGINT', onSig);
    process.removeListener('SIGTERM', onSig);
  }

  for (const file of a.include) {
    try {
      const earlier = parseDocument(JSON.parse(readFileSync(file, 'utf8')) as unknown, file);
      runs.push(...earlier.runs);
      missing.push(...earlier.missing);
    } catch (e) {
      missing.push(`--include ${file}: ${e instanceof Error ? e.message : String(e)}`);
    }
  }
  const doc: LookupDocument = {
    schema: SCHEMA, date: started.toISOString(), command: `nodenet bench lookup ${d.argv.join(' ')}`.trim(),
    args: { ...a }, runs, missing,
  };
  d.stdout(`\nRule lookup: ClusterIP Services of 2 endpoints each, a client pod on the same node; latency of connect() in µs\n`);
  d.stdout(`${formatMachines(doc)}\n\n${formatTable(doc)}\n\n`);
  const shape = shapeLines(doc);
  if (shape.length) d.stdout(`The shape:\n${shape.join('\n')}\n\n`);
  d.stdout(`For comparison:\n${REFERENCE.map((l) => `- ${l}`).join('\n')}\n`);
  for (const m of missing) d.stdout(`\nNOT MEASURED: ${m}\n`);

  const dir = a.out ?? join(packageRoot(), 'bench', 'results');
  mkdirSync(dir, { recursive: true });
  const base = join(dir, `lookup-${started.toISOString().slice(0, 19).replace(/:/g, '')}`);
  writeFileSync(`${base}.json`, `${JSON.stringify(doc, null, 2)}\n`);
  const written = [`${base}.json`];
  if (a.chart) {
    const rows = chartRows(doc);
    if (rows.length) {
      const { renderChart } = await import('./chart.js');
      const title = `nodenet: the cost of finding a Service (${doc.runs.map((r) => machineName(r.machine)).join('; ')})`;
      const { svg, png } = await renderChart(rows, title);
      writeFileSync(`${base}.svg`, svg);
      writeFileSync(`${base}.png`, png);
      written.push(`${base}.svg`, `${base}.png`);
    }
  }
  d.stdout(`\nwritten: ${written.join(', ')}\n`);
  const failed = runs.flatMap((r) => r.results).filter((r) => r.error).length;
  return interrupted ? 130 : failed || missing.length ? 1 : 0;
}

function machineName(m: Machine): string {
  return m.where === 'vm' ? `IPVS in a qemu VM, kernel ${m.kernel}` : `kernel ${m.kernel}, ${m.cpus} CPUs`;
}
