/**
 * `nodenet bench lookup`: the rule-lookup benchmark (bench/lookup/). Parses
 * the flags and runs it; the benchmark itself (labs, the client, the VM for
 * IPVS, the chart) is loaded only here, by a dynamic import.
 */
import type { Runner } from '../exec/runner.js';
import { FlagError } from './flags.js';

export const BENCH_USAGE = `usage: nodenet bench lookup [options]     (nodenet bench lookup -h for them)
  lookup   how the cost of finding a Service grows with the number of Services, per proxy mode
           (iptables, nftables, IPVS), with real packets: a table, JSON and a chart`;

export interface BenchCmdDeps {
  readonly runner: Runner;
  readonly stdout: (s: string) => void;
  readonly stderr: (s: string) => void;
}

export async function benchCommand(argv: readonly string[], deps: BenchCmdDeps): Promise<number> {
  const [sub, ...rest] = argv;
  if (sub === undefined || sub === '-h' || sub === '--help') {
    deps.stdout(`${BENCH_USAGE}\n`);
    return sub === undefined ? 2 : 0;
  }
  if (sub !== 'lookup') throw new FlagError(`unknown benchmark ${JSON.stringify(sub)} (lookup)`);
  const { parseLookupArgs, LOOKUP_USAGE } = await import('../../../bench/lookup/args.js');
  if (rest.includes('-h') || rest.includes('--help')) {
    deps.stdout(`${LOOKUP_USAGE}\n`);
    return 0;
  }
  const args = parseLookupArgs(rest);
  const { runLookup } = await import('../../../bench/lookup/run.js');
  return runLookup(args, { runner: deps.runner, stdout: deps.stdout, stderr: deps.stderr, tty: process.stderr.isTTY === true, argv: ['lookup', ...rest] });
}
