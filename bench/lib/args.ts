/**
 * bench/lib/args: the command-line pieces every bench shares. Pure but for
 * benchArgs, which prints a FlagError's message.
 *
 * What every bench's main() begins with is benchArgs: its arguments parsed (a
 * FlagError is printed and gives exit code 2, as the CLI does). benchFlags is
 * the common shape (`--quick` and named string flags, nothing positional);
 * int, ints and list read one flag's value, and their FlagError names the flag.
 */
import { FlagError, parseFlags } from '../../agent/src/cli/flags.js';

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

/** A whole number flag value in min..max. @throws FlagError naming the flag */
export function int(flag: string, v: string, min: number, max: number): number {
  if (!/^\d+$/.test(v)) throw new FlagError(`--${flag}: ${JSON.stringify(v)} is not a whole number`);
  const n = Number(v);
  if (n < min || n > max) throw new FlagError(`--${flag}: ${n} is outside ${min}..${max}`);
  return n;
}

/** A comma-separated list of distinct values. @throws FlagError naming the flag */
export function list(flag: string, v: string): string[] {
  const items = v.split(',').map((s) => s.trim()).filter(Boolean);
  if (items.length === 0) throw new FlagError(`--${flag} needs at least one value`);
  if (new Set(items).size !== items.length) throw new FlagError(`--${flag}: ${v} repeats a value`);
  return items;
}

/** A comma-separated list of distinct whole numbers, each in min..max. @throws FlagError naming the flag */
export function ints(flag: string, v: string, min: number, max: number): number[] {
  return list(flag, v).map((s) => int(flag, s, min, max));
}
