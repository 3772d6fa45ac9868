/**
 * The flags every command that looks into a node's rules shares: which
 * network namespace (`--netns NAME|PATH`) and which chain prefix
 * (`--prefix KUBE`). Errors are FlagErrors naming the flag.
 */
import { NetnsNotFoundError } from '../../../lib/errors/errors.js';
import { validatePrefix } from '../proxy/iptables/chains.js';
import { FlagError, type ParsedFlags } from './flags.js';

/** `--prefix` (default KUBE), validated as the proxy's chain prefix. */
export function prefixFlag(p: ParsedFlags): string {
  const prefix = p.flags.get('prefix') ?? 'KUBE';
  try {
    return validatePrefix(prefix);
  } catch (e) {
    throw new FlagError(`--prefix: ${e instanceof Error ? e.message : String(e)}`);
  }
}

/**
 * `--netns NAME|PATH` as a namespace path (a bare name is /run/netns/NAME),
 * checked with `checkNetns`; undefined when the flag is absent (the
 * process's own namespace).
 */
export function netnsFlag(p: ParsedFlags, checkNetns: (path: string) => void): { path: string; name: string } | undefined {
  const name = p.flags.get('netns');
  if (name === undefined) return undefined;
  if (name === '') throw new FlagError('--netns needs a name or a path');
  const path = name.includes('/') ? name : `/run/netns/${name}`;
  if (!path.startsWith('/')) throw new FlagError(`--netns ${JSON.stringify(name)}: a path must be absolute`);
  try {
    checkNetns(path);
  } catch (e) {
    throw new FlagError(`--netns ${JSON.stringify(name)}: no network namespace at ${path}${e instanceof NetnsNotFoundError ? '' : ` (${e instanceof Error ? e.message : String(e)})`}`);
  }
  return { path, name };
}
