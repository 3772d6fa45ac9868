/**
 * A small flag parser for the CLI: --name value, --name=value, --bool, and
 * everything after `--` as the rest (a command to run). Pure.
 */
export interface ParsedFlags {
  readonly flags: ReadonlyMap<string, string>;
  readonly positional: readonly string[];
  /** Words after `--`. */
  readonly rest: readonly string[];
}

export class FlagError extends Error {
  override name = 'FlagError';
}

/** `booleans` names flags that take no value. */
export function parseFlags(argv: readonly string[], booleans: readonly string[] = []): ParsedFlags {
  const flags = new Map<string, string>();
  const positional: string[] = [];
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]!;
    if (a === '--') return { flags, positional, rest: argv.slice(i + 1) };
    if (a.startsWith('--')) {
      const eq = a.indexOf('=');
      const name = eq > 0 ? a.slice(2, eq) : a.slice(2);
      if (!name) throw new FlagError(`bad flag ${a}`);
      if (eq > 0) flags.set(name, a.slice(eq + 1));
      else if (booleans.includes(name)) flags.set(name, 'true');
      else {
        const v = argv[i + 1];
        if (v === undefined || v.startsWith('--')) throw new FlagError(`flag --${name} needs a value`);
        flags.set(name, v);
        i++;
      }
    } else positional.push(a);
  }
  return { flags, positional, rest: [] };
}

export function only(p: ParsedFlags, allowed: readonly string[]): void {
  for (const k of p.flags.keys()) if (!allowed.includes(k)) throw new FlagError(`unknown flag --${k}`);
}
