/**
 * cli/flags: strict command-line parsing for every nodenet command, on
 * node:util parseArgs. Pure.
 *
 * Each command declares its flags; anything else is an error (an unknown
 * flag, a value given to a boolean: `--json=false` is refused rather than
 * read as "on", a string flag without its value). `-h`/`--help` is accepted
 * by every command. Words after `--` are the rest (a command to run).
 * Errors are FlagErrors: the command prints them with its usage and exits 2.
 */
import { parseArgs } from 'node:util';

export class FlagError extends Error {
  override name = 'FlagError';
}

export interface FlagSpec {
  readonly type: 'string' | 'boolean';
  readonly short?: string;
  /** A string flag that may be given several times (k3s's `--disable a --disable b`): its values joined by commas. */
  readonly multiple?: boolean;
}

export type FlagSpecs = Readonly<Record<string, FlagSpec>>;

export interface ParsedFlags {
  /** String flags by name; a boolean flag that was given has the value 'true'. */
  readonly flags: ReadonlyMap<string, string>;
  readonly positional: readonly string[];
  /** Words after `--`. */
  readonly rest: readonly string[];
  /** -h or --help was given. */
  readonly help: boolean;
}

const HELP: FlagSpecs = { help: { type: 'boolean', short: 'h' } };

/** Parses argv against `specs` (plus -h/--help). @throws FlagError naming the flag. */
export function parseFlags(argv: readonly string[], specs: FlagSpecs): ParsedFlags {
  const options: Record<string, { type: 'string' | 'boolean'; short?: string; multiple?: boolean }> = {};
  for (const [name, s] of Object.entries({ ...specs, ...HELP })) options[name] = { type: s.type, ...(s.short ? { short: s.short } : {}), ...(s.multiple ? { multiple: true } : {}) };
  let parsed: ReturnType<typeof parseArgs<{ args: string[]; options: typeof options; strict: true; allowPositionals: true; tokens: true }>>;
  try {
    parsed = parseArgs({ args: [...argv], options, strict: true, allowPositionals: true, tokens: true });
  } catch (e) {
    throw new FlagError(flagMessage(e, specs));
  }
  const flags = new Map<string, string>();
  for (const [k, v] of Object.entries(parsed.values)) {
    if (k === 'help' || v === undefined) continue;
    flags.set(k, v === true ? 'true' : String(Array.isArray(v) ? (specs[k]?.multiple ? v.join(',') : v[v.length - 1]) : v));
  }
  const positional: string[] = [];
  const rest: string[] = [];
  let afterTerminator = false;
  for (const tok of parsed.tokens ?? []) {
    if (tok.kind === 'option-terminator') afterTerminator = true;
    else if (tok.kind === 'positional') (afterTerminator ? rest : positional).push(tok.value);
  }
  return { flags, positional, rest, help: parsed.values['help'] === true };
}

/** parseArgs' errors, said the way the rest of the CLI says things. */
function flagMessage(e: unknown, specs: FlagSpecs): string {
  const err = e as { code?: string; message?: string };
  const msg = err.message ?? String(e);
  const name = /'(-{1,2}[^' ]+)/.exec(msg)?.[1] ?? '';
  switch (err.code) {
    case 'ERR_PARSE_ARGS_UNKNOWN_OPTION': {
      const known = Object.keys(specs).map((k) => `--${k}`);
      return `unknown flag ${name}${known.length ? ` (this command takes ${known.join(', ')}, -h)` : ' (this command takes no flags but -h)'}`;
    }
    case 'ERR_PARSE_ARGS_INVALID_OPTION_VALUE':
      return /does not take an argument/.test(msg) ? `flag ${name} takes no value (it is on when given)` : `flag ${name} needs a value`;
    default:
      return msg;
  }
}

/** The `-o`/`--output` flag of a listing command: one of `allowed` (kubectl's convention). `--json` stays an alias of `-o json`. */
export function outputFormat<T extends string>(p: ParsedFlags, allowed: readonly T[], dflt: T): T {
  const o = p.flags.get('output');
  if (p.flags.has('json')) {
    if (o !== undefined && o !== 'json') throw new FlagError(`--json and -o ${o} disagree`);
    return 'json' as T;
  }
  if (o === undefined) return dflt;
  if (!(allowed as readonly string[]).includes(o)) throw new FlagError(`-o ${JSON.stringify(o)}: expected ${allowed.join(', ')}`);
  return o as T;
}

/** The flags every listing command takes. */
export const OUTPUT_FLAGS: FlagSpecs = { output: { type: 'string', short: 'o' }, json: { type: 'boolean' } };
