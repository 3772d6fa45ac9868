/**
 * bench/lookup/measure: the cases of one machine, in order (per mode, the
 * sizes ascending), each on a fresh lab: what the host runs for its modes and
 * what the VM suite (test-vm/suites/lookup.ts) runs for IPVS. Also the
 * machine's description for the results.
 */
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, symlinkSync } from 'node:fs';
import { cpus, release } from 'node:os';
import type { Runner } from '../../agent/src/exec/runner.js';
import { runCase, type CaseResult, type ClientLimits } from './case.js';
import type { LookupMode } from './modes.js';
import type { Machine } from './report.js';

export interface MeasureOptions extends ClientLimits {
  readonly modes: readonly LookupMode[];
  readonly sizes: readonly number[];
  readonly changes: number;
  readonly runner: Runner;
  /** Called before each step of each case: the case's index (0-based) and the step. */
  readonly progress: (caseIndex: number, cases: number, what: string) => void;
  /** Stop before the next case when it returns true (SIGINT). */
  readonly interrupted?: () => boolean;
}

function firstLine(argv: string[]): string {
  try {
    return execFileSync(argv[0]!, argv.slice(1), { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] }).split('\n')[0]!.trim();
  } catch {
    return 'unavailable';
  }
}

/** This machine, for the results. */
export function describeMachine(where: 'host' | 'vm', accel: string | null): Machine {
  const iptables = firstLine(['iptables', '-V']);
  return {
    where, kernel: release(), cpus: cpus().length, cpuModel: cpus()[0]?.model.trim() ?? '?', accel,
    versions: { node: process.version, nft: firstLine(['nft', '--version']), iptables, ipvsadm: firstLine(['ipvsadm', '--version']) },
    iptablesBackend: /nf_tables/.test(iptables) ? 'nft' : /legacy/.test(iptables) ? 'legacy' : null,
  };
}

export async function measure(o: MeasureOptions): Promise<CaseResult[]> {
  const work = mkdtempSync('/tmp/nn-bench-lookup-');
  try {
    // iptables-legacy mode: the agent's `iptables` is iptables-legacy (a PATH directory with that one link).
    mkdirSync(`${work}/bin`);
    symlinkSync('/usr/sbin/iptables-legacy', `${work}/bin/iptables`);
    const cases = o.modes.flatMap((mode) => o.sizes.map((services) => ({ mode, services })));
    const out: CaseResult[] = [];
    for (const [i, c] of cases.entries()) {
      if (o.interrupted?.()) break;
      out.push(await runCase(c.mode, c.services, { ...o, legacyBin: `${work}/bin`, progress: (what) => o.progress(i, cases.length, `${c.mode}, ${c.services.toLocaleString('en-US')} Services: ${what}`) }));
    }
    return out;
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
}
