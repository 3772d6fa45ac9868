/**
 * bench/start: what every bench's main() begins with. Its arguments parsed
 * (a FlagError is printed and gives exit code 2, as the CLI does), and, for
 * the benches that build namespaces, a check that it runs as root.
 */
import { cpus, loadavg, release, totalmem } from 'node:os';
import { FlagError, parseFlags } from '../agent/src/cli/flags.js';

/** The parsed arguments, or the exit code 2 after printing why they are wrong. */
export function benchArgs<T>(parse: (argv: readonly string[]) => T, argv: readonly string[] = process.argv.slice(2)): T | 2 {
  try {
    return parse(argv);
  } catch (e) {
    if (e instanceof FlagError) {
      console.error(e.message);
      return 2;
    }
    throw e;
  }
}

/** Whether this process is root; says why the bench needs it when not. */
export function isRoot(bench: string, why: string): boolean {
  if (process.getuid?.() === 0) return true;
  console.error(`${bench} needs root (${why})`);
  return false;
}

/**
 * A bench's flags: `--quick` and the named string flags; anything else, a
 * positional argument or `-h` is a FlagError (for -h, the usage).
 */
export function benchFlags(argv: readonly string[], stringFlags: readonly string[], usage: string): { readonly flags: ReadonlyMap<string, string>; readonly quick: boolean } {
  const p = parseFlags(argv, { quick: { type: 'boolean' }, ...Object.fromEntries(stringFlags.map((f) => [f, { type: 'string' } as const])) });
  if (p.positional.length || p.rest.length) throw new FlagError(`unexpected argument ${JSON.stringify(p.positional[0] ?? p.rest[0])}`);
  if (p.help) throw new FlagError(usage);
  return { flags: p.flags, quick: p.flags.has('quick') };
}

/** The machine a bench ran on, the fields every bench's results share. */
export interface MachineMeta {
  readonly date: string;
  readonly kernel: string;
  readonly cpus: number;
  readonly cpuModel: string;
  readonly memTotalMiB: number;
  readonly node: string;
  readonly loadavgBefore: readonly number[];
  readonly loadavgAfter: readonly number[];
}

/** This machine, now (the load average after the run; before, as the bench took it). */
export function machineMeta(loadavgBefore: readonly number[]): MachineMeta {
  const cpu = cpus();
  return {
    date: new Date().toISOString(), kernel: release(), cpus: cpu.length, cpuModel: cpu[0]?.model.trim() ?? '?', memTotalMiB: totalmem() / 1048576, node: process.version,
    loadavgBefore, loadavgAfter: loadavg(),
  };
}
