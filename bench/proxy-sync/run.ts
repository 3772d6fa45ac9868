/**
 * bench/proxy-sync: how long the proxy takes to program N Services, and to
 * apply a one-endpoint change at that size, per mode, with the agent's RSS.
 *
 *   npm run bench:proxy -- [--sizes 1000,10000,30000] [--modes iptables,nftables]
 *                          [--repeat 3] [--cap-s 600] [--no-restart] [--out FILE]
 *
 * Each (mode, size) runs in a child process of its own (case.ts): a real
 * Proxier and the real backend in a fresh scratch namespace
 * nn-bps-<pid>-<mode>-<size>; the child prints its result as one JSON line.
 * The child runs from an esbuild bundle of this file (dist/bench/proxy-sync.mjs,
 * built at the start, npm packages with native addons left external as in
 * dist/nodenet.js) on plain node, as the agent runs from dist/nodenet.js: under
 * the tsx loader the same process holds ~27 MiB more (its transform caches and
 * source maps), which is the loader's, not the agent's.
 * This process collects them, prints a Markdown table and the verdict on the
 * targets (a one-endpoint change at 10,000 Services under 200 ms in both
 * modes; a full nftables sync at 10,000 Services under 5 s), and writes JSON
 * only when --out is given. Needs root; touches nothing outside its
 * namespaces, and removes each one after its case (also on SIGINT).
 * IPVS mode needs the kernel's IPVS: where this kernel has none, its cases
 * run inside a qemu VM booted from Debian's kernel (test-vm suite proxy-sync,
 * the same bundle and case code), and their results join this run's table,
 * labelled with where they ran.
 */
import { spawn, execFileSync, type ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { build } from 'esbuild';
import { cpus, loadavg } from 'node:os';
import { dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { benchArgs } from '../lib/args.js';
import { isRoot } from '../lib/machine.js';
import { NATIVE_EXTERNAL, REQUIRE_BANNER } from '../../scripts/esm-bundle.mjs';
import { removeNetns } from '../../agent/src/netns/scratch-netns.js';
import { probeIpvs } from '../../agent/src/netfilter/ipvs/ipvs-probe.js';
import { SpawnRunner } from '../../agent/src/exec/runner.js';
import { caseNetns, parseBenchArgs, type BenchArgs, type CaseSpec } from './args.js';
import { runCase } from './case.js';
import { waitQuiet } from './quiet.js';
import { caseArgv, caseOutput, RESULT_MARK } from './child.js';
import { runVmSuite } from '../lib/vm-suite.js';
import { modeLabel, type BenchMode } from '../lib/proxy-modes.js';
import { evaluateTargets, targets30k, formatTable, formatTargets, ms, parseCaseResult, splitLine, type CaseResult } from './report.js';

const SELF = fileURLToPath(import.meta.url);
const ROOT = new URL('../..', import.meta.url).pathname;

/** Bundles this file for the case processes (see the header); returns its path. */
async function bundleSelf(): Promise<string> {
  const out = `${ROOT}dist/bench/proxy-sync.mjs`;
  await build({
    entryPoints: [SELF], outfile: out, bundle: true, platform: 'node', target: 'node20', format: 'esm',
    external: [...NATIVE_EXTERNAL, 'esbuild'], logLevel: 'warning',
    banner: { js: REQUIRE_BANNER },
  });
  return out;
}

function version(argv: string[]): string {
  try {
    return execFileSync(argv[0]!, argv.slice(1), { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] }).split('\n')[0]!.trim();
  } catch {
    return 'unavailable';
  }
}

/** A result for a case whose child died without printing one. */
function lostCase(spec: CaseSpec, why: string): CaseResult {
  return {
    mode: spec.mode, services: spec.services, netns: spec.netns, iptablesBackend: null, feedMs: 0, full: null, rules: null, elements: null,
    kernelEndpointChains: null, rssBaselineMiB: 0, rssMiB: null, rssAfterGcMiB: null, heapUsedMiB: null, changes: [], restoreFloor: null, restart: null, restartSkipped: null, capped: false, error: why,
  };
}

/** The IPVS cases in test-vm's proxy-sync suite; their results, or one lost case per size saying why. */
async function ipvsInVm(sizes: readonly number[], args: BenchArgs): Promise<CaseResult[]> {
  const lost = (i: number, why: string) => lostCase({ mode: 'ipvs', services: sizes[i] ?? 0, netns: '-' }, why);
  console.error(`[bench:proxy] ipvs: this kernel has none; running ${sizes.join(', ')} Services in a qemu VM (test-vm/, minutes to hours under TCG)`);
  const r = await runVmSuite({
    suite: 'proxy-sync', file: 'proxy-sync.json',
    // Under TCG a full sync at 30,000 Services takes minutes: the limit grows with the work asked for.
    timeoutS: Math.round(1800 + sizes.reduce((s, n) => s + 120 + n * 0.05 * (args.restart ? 2 : 1), 0)),
    params: { modes: 'ipvs', sizes: sizes.join(','), repeat: args.repeat, restart: args.restart ? 1 : 0, cap: args.capS },
    onLine: (l) => { if (/^test-vm: |\[proxy-sync\]/.test(l)) console.error(`[bench:proxy]   vm: ${l.replace(/^test-vm: /, '')}`); },
    onSpawn: (p) => (current = p),
  });
  if ('why' in r) return sizes.map((_, i) => lost(i, `this kernel has no IPVS, and ${r.why}`));
  return (r.doc as { results: unknown[] }).results.map((x, i) => {
    try {
      return parseCaseResult(x);
    } catch (e) {
      return lost(i, `unreadable VM result: ${e instanceof Error ? e.message : String(e)}`);
    }
  });
}

let current: ChildProcess | null = null;
let interrupted = false;

function runChild(script: string, spec: CaseSpec, args: BenchArgs): Promise<CaseResult> {
  const argv = caseArgv(script, spec, args);
  return new Promise((resolve) => {
    const child = spawn(process.execPath, argv, { stdio: ['ignore', 'pipe', 'inherit'] });
    current = child;
    let out = '';
    child.stdout!.setEncoding('utf8').on('data', (d: string) => (out += d));
    // Safety net beyond the child's own cap (a sync killed at the cap returns at once).
    const watchdog = setTimeout(() => child.kill('SIGTERM'), (args.capS + 180) * 1000);
    child.on('close', (code, signal) => {
      clearTimeout(watchdog);
      current = null;
      if (existsSync(`/run/netns/${spec.netns}`)) removeNetns(spec.netns); // the child removes it; this covers a child that was killed
      try {
        const x = caseOutput(out);
        resolve(x === null ? lostCase(spec, `case process exited ${signal ?? code} without a result`) : parseCaseResult(x));
      } catch (e) {
        resolve(lostCase(spec, `unreadable result: ${e instanceof Error ? e.message : String(e)}`));
      }
    });
  });
}

function progress(r: CaseResult): string {
  const change = r.changes.map((c) => ms(c.durationMs ?? c.wallMs)).join(', ');
  const kernel = r.full?.kernelMs != null ? ` of which the kernel ${ms(r.full.kernelMs)}` : '';
  const split = r.full?.renderMs != null ? ` (render ${ms(r.full.renderMs)}, apply ${ms(r.full.applyMs ?? NaN)}${kernel})` : '';
  return `${modeLabel(r)} ${r.services}: full ${r.full ? ms(r.full.wallMs) : '–'} ms wall${split}; changes ${change || '–'} ms; ` +
    `restart ${r.restart ? ms(r.restart.wallMs) : r.restartSkipped ?? '–'}; ` +
    `${r.restoreFloor ? `restore floor ${ms(r.restoreFloor.noopMs)} no-op / ${ms(r.restoreFloor.replaceMs)} replace ms; ` : ''}RSS ${r.rssMiB?.toFixed(0) ?? '–'} MiB${r.rssAfterGcMiB != null ? ` (${r.rssAfterGcMiB.toFixed(0)} after the GC)` : ''}${r.error ? `; ERROR ${r.error}` : ''}` +
    (r.full ? `\n    full:   ${splitLine(r.full)}` : '') +
    r.changes.map((c, i) => `\n    change ${i + 1}: ${splitLine(c)}${c.renderMs != null ? ` (backend: render ${ms(c.renderMs)}, apply ${ms(c.applyMs ?? NaN)}${c.kernelMs != null ? ` of which the kernel ${ms(c.kernelMs)}` : ''})` : ''}`).join('');
}

async function main(): Promise<number> {
  const args = benchArgs(parseBenchArgs);
  if (args === 2) return 2;
  if (args.case) {
    const r = await runCase(args.case, { repeat: args.repeat, capS: args.capS, restart: args.restart });
    process.stdout.write(`${RESULT_MARK}${JSON.stringify(r)}\n`);
    return r.error ? 1 : 0;
  }

  if (!isRoot('bench:proxy', 'it creates network namespaces and programs netfilter inside them')) return 2;
  process.on('SIGINT', () => {
    interrupted = true;
    current?.kill('SIGINT'); // the child removes its namespace and exits; runChild's close handler removes it again
  });

  const startedAt = new Date();
  const meta = {
    date: startedAt.toISOString(),
    kernel: version(['uname', '-r']),
    node: process.version,
    nft: version(['nft', '--version']),
    iptables: version(['iptables', '-V']),
    cpus: cpus().length,
    loadavgBefore: loadavg(),
    args: { sizes: args.sizes, modes: args.modes, repeat: args.repeat, capS: args.capS, restart: args.restart },
  };
  const script = await bundleSelf();
  const results: CaseResult[] = [];
  const ipvsHere = args.modes.includes('ipvs') && (await probeIpvs({ runner: new SpawnRunner() })).available;
  for (const mode of args.modes as readonly BenchMode[]) {
    if (mode === 'ipvs' && !ipvsHere) {
      if (interrupted) break;
      for (const r of await ipvsInVm(args.sizes, args)) {
        results.push(r);
        console.error(`[bench:proxy] ${progress(r)}`);
      }
      continue;
    }
    for (const size of args.sizes) {
      if (interrupted) break;
      const spec: CaseSpec = { mode, services: size, netns: caseNetns(process.pid, mode, size) };
      const waited = await waitQuiet();
      console.error(`[bench:proxy] ${mode} ${size} Services in ${spec.netns}${waited > 250 ? ` (after ${(waited / 1000).toFixed(1)} s for the CPUs to go idle)` : ''} ...`);
      const r = await runChild(script, spec, args);
      if (interrupted) {
        console.error(`[bench:proxy] interrupted: ${modeLabel(r)} ${size} did not finish and is left out`);
        break;
      }
      results.push(r);
      console.error(`[bench:proxy] ${progress(r)}`);
    }
  }

  const table = formatTable(results, args.capS);
  const verdicts = evaluateTargets(results, args.modes);
  const big = targets30k(results, args.modes);
  console.log(`\nProxy sync, ${meta.cpus} CPUs, kernel ${meta.kernel}, Node ${meta.node}, ${meta.nft}, ${meta.iptables}`);
  console.log(`Services: ClusterIP TCP 80 (every 10th also NodePort), 2 endpoints each; ${args.repeat} one-endpoint changes per case.`);
  console.log(`Times are Proxier.lastSync.durationMs; RSS is the process right after the full sync, then after the full GC the agent runs after a large full sync (node/full-gc.ts) and 1 s.\n`);
  console.log(table);
  console.log(`\nTargets (wall time around syncNow()):\n${formatTargets(verdicts)}`);
  console.log(`\nTargets at 30,000 Services (issue 12; the syncs' own durations, RSS after the sync's collection):\n${formatTargets(big)}`);
  const errors = results.filter((r) => r.error);
  for (const r of errors) console.log(`\n${modeLabel(r)} ${r.services}: ${r.capped ? 'CAPPED: ' : ''}${r.error}`);

  if (args.out) {
    mkdirSync(dirname(args.out), { recursive: true });
    writeFileSync(args.out, `${JSON.stringify({ ...meta, loadavgAfter: loadavg(), results, targets: [...verdicts, ...big], table }, null, 2)}\n`);
    console.error(`[bench:proxy] results written to ${args.out}`);
  }
  const left = execFileSync('ip', ['netns', 'list'], { encoding: 'utf8' }).split('\n').filter((l) => l.startsWith(`nn-bps-${process.pid}-`));
  if (left.length) console.error(`[bench:proxy] WARNING: namespaces left behind: ${left.join(', ')}`);
  return interrupted ? 130 : errors.length ? 1 : 0;
}

process.exitCode = await main();
